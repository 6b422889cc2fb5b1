"""Figures of one run of the hostile-input tests: cases per kind of input, expected outcomes per reason, and time.

The cases come from the generators in ``tests/support/hostile/`` (written into a scratch folder here, exactly as the
tests write them); the time is one serial run of ``tests/hostile`` (``pytest -n 0``), whose pass/fail line is
printed too. Run from the repository root:

    .venv/bin/python bench/hostile_inputs.py [--no-run]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.hostile import context, designs, http, images, manifests, poetry, reddit  # noqa: E402


def cases_by_kind(scratch: Path) -> dict[str, list[str]]:
    """Every generated case's expected outcome (``kept`` or its reason code), per kind of input."""
    def folder(name: str) -> Path:
        path = scratch / name
        path.mkdir(parents=True)
        return path

    corpus = poetry.write_corpus_cases(folder("poems"))
    survey = poetry.write_survey_cases(folder("survey"), ["item-1", "item-2", "item-3"])
    reddit_cases, _, _ = reddit.write_reddit_cases(folder("reddit"), "kept01")
    return {
        "manifests and folders": [c.expected for c in manifests.write_manifest_cases(folder("manifests"))]
        + [c.expected for c in manifests.write_folder_cases(folder("folders"))],
        "images": [c.expected for c in images.write_image_cases(folder("images"))]
        + [c.expected for c in images.write_folder_cases(folder("image_folder"))],
        "http": [c.expected for c in http.CASES],
        "reddit dumps and id lists": [c.expected or "kept" for c in reddit_cases],
        "designs": [c.expected for c in designs.write_design_cases(folder("designs"))[1]],
        "poems": [c.expected for c in corpus.cases],
        "survey rows": [c.expected for c in survey.cases],
        "cases": [c.expected for c in context.write_case_cases(folder("cases")).cases],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-run", action="store_true", help="count the cases only; do not run the tests")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        kinds = cases_by_kind(Path(scratch))
    outcomes: Counter[str] = Counter()
    print(f"{'kind of input':<28} {'cases':>5}  outcomes")
    for kind, expected in kinds.items():
        counts = Counter(expected)
        outcomes.update(counts)
        print(f"{kind:<28} {len(expected):>5}  " + ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items())))
    print(f"{'all':<28} {sum(outcomes.values()):>5}  {len(outcomes)} distinct outcomes")
    print("\noutcomes over all kinds: " + ", ".join(f"{reason} {n}" for reason, n in outcomes.most_common()))
    if args.no_run:
        return 0
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "tests/hostile"],
                         cwd=ROOT, capture_output=True, text=True)
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    print(f"\ntests/hostile (serial): {lines[-1] if lines else run.returncode} — {time.monotonic() - started:.0f} s wall")
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main())
