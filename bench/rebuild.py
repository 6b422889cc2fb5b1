"""Benchmark: what a rebuild costs when nothing, or one manifest row, changed.

Not a test. In a scratch project (the bundled sample config and a fresh sample corpus under ``--out``), times
three ``aesforge run`` commands on the same warehouse:

1. cold: every asset built from nothing;
2. no change: an immediate second run (target: at most 5 % of the cold time);
3. one row: after one row of the pool manifest changed (its title), a run that rebuilds what that reaches
   (target: at most 15 % of the cold time).

It also checks that the second run prints the same report figures as the first. See bench/README.md.

    python bench/rebuild.py --out /tmp/aesforge-rebuild
"""

from __future__ import annotations

import argparse
import csv
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS = {"no change": 0.05, "one row": 0.15}
RUN_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def aesforge(*args: str) -> tuple[float, str]:
    """Run ``aesforge`` (this checkout's) and return its wall time and output; a failure ends the benchmark."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pipelines.command", *args], cwd=REPO, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"aesforge {' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return elapsed, done.stdout


def report_of(output: str) -> list[str]:
    """The report part of a run's output (from the pool's selection flow on): what the warehouse holds, without the
    lines that name a run."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("pool selection flow"))
    return [line for line in lines[start:] if not RUN_ID.search(line)]


def change_one_row(manifest: Path) -> None:
    """Give the first row of ``manifest`` a new title, as an editor of the manifest would."""
    with manifest.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    rows[0]["title"] = f"{rows[0]['title']} (retitled)"
    with manifest.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="/tmp/aesforge-rebuild", help="scratch project folder (emptied first)")
    parser.add_argument("--executor", default="auto", choices=["auto", "multiprocess", "in_process"],
                        help="as aesforge run's (default auto: a process per step for big builds, one for small)")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    (out / "config").mkdir(parents=True)
    shutil.copy(REPO / "config" / "sample.yaml", out / "config" / "sample.yaml")
    config = str(out / "config" / "sample.yaml")
    aesforge("sample", "--out", str(out / "data" / "sample"))

    run = ("run", "--config", config, "--executor", args.executor)
    times, outputs = {}, {}
    times["cold"], outputs["cold"] = aesforge(*run)
    times["no change"], outputs["no change"] = aesforge(*run)
    change_one_row(out / "data" / "sample" / "manifest.csv")
    times["one row"], outputs["one row"] = aesforge(*run)
    for name, output in outputs.items():
        (out / f"{name.replace(' ', '_')}.log").write_text(output)

    print(f"{'build':<10} {'seconds':>8} {'of cold':>8} {'target':>8}  result")
    for name, seconds in times.items():
        share = seconds / times["cold"]
        target = TARGETS.get(name)
        verdict = "" if target is None else ("met" if share <= target else "missed")
        print(f"{name:<10} {seconds:>8.1f} {share:>8.1%} {'' if target is None else f'{target:.0%}':>8}  {verdict}")
    for name in ("no change", "one row"):
        lines = outputs[name].splitlines()
        end = next((i for i, line in enumerate(lines) if line.startswith(("run ", "pool selection flow"))), len(lines))
        plan = [line for line in lines[:end] if not RUN_ID.search(line) and line.strip()]
        print(f"\n{name} plan:\n" + "\n".join(plan))
    print(f"\n(each run's output: {out}/<build>.log)")
    same = report_of(outputs["cold"]) == report_of(outputs["no change"])
    print(f"\nsecond run prints the same report figures as the first: {'yes' if same else 'NO'}")
    if not same:
        first, second = report_of(outputs["cold"]), report_of(outputs["no change"])
        for a, b in zip(first, second):
            if a != b:
                print(f"  first:  {a}\n  second: {b}")
                break


if __name__ == "__main__":
    main()
