"""Eight invented contextual-suitability cases over the sample corpus, with a filled review sheet.

Why: case ingestion, review, retention, the anti-shortcut report, contact sheets and the export need a small
case set anyone can regenerate byte-for-byte. The images are the bundled sample corpus's synthetic renders
(``sample/make_corpus.py``): abstract shapes and gradients, not real artworks or photographs. The scenarios are
plausible uses written for this sample, and each rationale rests only on what the render visibly shows; every
source basis says so. Rights are copied from the corpus manifest (creator "unknown" where the manifest says so,
never filled in).

Usage: ``python -m sample.context_fixture --out data/context_sample --corpus data/sample`` (build the corpus
first with ``python -m sample.make_corpus --out data/sample``), or ``write_context_sample(out, corpus)``.

Written under ``out_dir``:

    cases.json    ``{"about": ..., "cases": [...]}`` in the layout of ``assets/context_canvas/logic/case_records.py``; image
                  paths are relative to ``out_dir`` and point into the corpus (``../sample/images/...``)
    reviews.csv   two reviewers (ana, ben) per case in the layout of ``assets/context_canvas/logic/retention.py``

What the sheet decides (``expected_status`` in the returned dict): six cases retained (ctx-s07 only after a
panel ``final`` row settles a split on answerability), ctx-s06 rejected because both reviewers fail visual
necessity (its question is answerable from the rights record alone), ctx-s08 left split on scenario
naturalness (needs adjudication). ctx-s04 has two images and Image 1 / Image 2 options, ctx-s05 three options,
ctx-s03 a designer's proposed assessment, and ctx-s01 a development-probe entry (an illustrative answer written
for this sample, not a recorded model output).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from assets.context_canvas.logic.retention import CRITERION_KEYS

SCHEMA_VERSION = 1
CASES_FILE, REVIEWS_FILE = "cases.json", "reviews.csv"
REVIEWERS = ("ana", "ben")
PANEL = "panel"
YES_NO = [{"option_id": "A", "text": "Yes"}, {"option_id": "B", "text": "No"}]

_SYNTHETIC = ("Synthetic sample: {images} {verb} an abstract render made by sample/make_corpus.py (no real artwork "
              "or photograph); the scenario was invented for testing and the rationale rests only on what the "
              "render visibly shows.")

# case id -> (corpus locators, scenario, question, options, gold, rationale, proposed assessment)
_CASES: tuple[dict[str, Any], ...] = (
    {
        "case_id": "ctx-s01",
        "images": ["images/photography/photo_08.jpg"],
        "scenario": "A dark-sky society is printing a poster that celebrates unspoiled night skies far from towns, "
                    "for a campaign against light pollution.",
        "question": "Is this image suitable as the poster's main picture?",
        "options": YES_NO,
        "gold": "B",
        "rationale": "The night scene is attractive, but its centre is a cluster of towers with lit windows under a "
                     "hazy, glowing sky: it shows the town lighting the campaign argues against, not the untouched "
                     "dark sky it wants to celebrate.",
        "probe": {"model": "dev-probe (illustrative)", "answer": "A",
                  "note": "Illustrative entry written for the synthetic sample, not a recorded model output: a "
                          "probe that praises the moody night palette and misses the lit towers."},
    },
    {
        "case_id": "ctx-s02",
        "images": ["images/photography/photo_09.png"],
        "scenario": "A walking-holiday brochure for a lake district wants a cover picture of open country with "
                    "water and no buildings, to promise quiet trails.",
        "question": "Is this image suitable for the brochure cover?",
        "options": YES_NO,
        "gold": "A",
        "rationale": "The render shows pale sky, low sandy hills mirrored in still water and an open brown "
                     "foreground with a single small tree; nothing built is visible, which is what the brief asks.",
    },
    {
        "case_id": "ctx-s03",
        "images": ["images/painting/painting_00.png"],
        "scenario": "A hospice is choosing a print for its family room; the brief asks for cool, low-contrast "
                    "colour and nothing dramatic or busy.",
        "question": "Do you agree with the designer's assessment?",
        "proposed_assessment": "The designer thinks this painting fits the room because its blue palette and soft "
                               "edges keep the space calm.",
        "options": YES_NO,
        "gold": "A",
        "rationale": "The painting is a single muted blue figure on a slightly lighter blue ground, with soft "
                     "brushwork and no strong accent colour, which matches the calm, low-contrast brief.",
    },
    {
        "case_id": "ctx-s04",
        "images": ["images/photography/photo_07.jpg", "images/photography/photo_01.jpg"],
        "scenario": "A town's winter festival needs a cover for its printed programme showing the town in snow.",
        "question": "Which image should the designer use for the programme cover?",
        "options": [{"option_id": "A", "text": "Image 1"}, {"option_id": "B", "text": "Image 2"}],
        "gold": "B",
        "rationale": "Both renders show a small skyline, but Image 1 sits in a green summer meadow while Image 2 "
                     "has a white, snow-like foreground under a pink winter sky; only Image 2 shows the town in "
                     "snow.",
    },
    {
        "case_id": "ctx-s05",
        "images": ["images/painting/painting_12.png"],
        "scenario": "A poetry anthology has three sections and wants one painting as the divider page of the "
                    "section it suits best.",
        "question": "Which section should this painting introduce?",
        "options": [{"option_id": "A", "text": "Morning and renewal"},
                    {"option_id": "B", "text": "Evening and rest"},
                    {"option_id": "C", "text": "Storm and conflict"}],
        "gold": "B",
        "rationale": "A pale, fading sky over a broad dark violet foreground, a dim disc hanging in the sky and "
                     "calm, even brushwork read as light going down over darkening land: rest at day's end, "
                     "neither a fresh morning nor a turbulent storm.",
    },
    {
        "case_id": "ctx-s06",
        "images": ["images/painting/painting_05.jpg"],
        "scenario": "A museum is writing the wall label for a loaned painting whose record lists no known artist.",
        "question": "May the label credit this painting to a named nineteenth-century painter?",
        "options": YES_NO,
        "gold": "B",
        "rationale": "The provenance record gives no creator, so no name may be put on the label; the answer comes "
                     "from the record, and the picture itself adds nothing to it.",
    },
    {
        "case_id": "ctx-s07",
        "images": ["images/photography/photo_05.jpg"],
        "scenario": "A health charity's leaflet on seasonal low mood wants a picture that admits winter darkness "
                    "without looking hopeless.",
        "question": "Is this image suitable for the leaflet?",
        "options": YES_NO,
        "gold": "A",
        "rationale": "Dark blue hills and trees fill the frame, but a soft glow opens the sky above them; the scene "
                     "is dim yet calm, acknowledging darkness while leaving light in view.",
    },
    {
        "case_id": "ctx-s08",
        "images": ["images/photography/photo_10.jpg"],
        "scenario": "A fund that replants forests after wildfires is sending a thank-you card to its donors.",
        "question": "Is this image suitable for the thank-you card?",
        "options": YES_NO,
        "gold": "B",
        "rationale": "The foreground is a rust-red plain with one dark, bare-looking tree under a hazy sky, which "
                     "can read as scorched ground rather than the regrowth donors paid for.",
    },
)

# case id -> reviewer -> failed criteria; panel rows separately. Everything not listed passes.
_FAILS: dict[str, dict[str, tuple[str, ...]]] = {
    "ctx-s06": {"ana": ("visual_necessity",), "ben": ("visual_necessity",)},
    "ctx-s07": {"ben": ("answerability",)},
    "ctx-s08": {"ben": ("scenario_naturalness",)},
}
_NOTES: dict[tuple[str, str], str] = {
    ("ctx-s06", "ana"): "answerable from the rights record alone",
    ("ctx-s06", "ben"): "the image plays no part in the answer",
    ("ctx-s07", "ben"): "the dark palette could read as hopeless; two answers defensible",
    ("ctx-s07", PANEL): "panel: the glow in the sky settles it; keep",
    ("ctx-s08", "ben"): "would a replanting fund pick any landscape photo for a card?",
}
_PANEL_ROWS = ("ctx-s07",)
EXPECTED_STATUS = {
    "ctx-s01": "retained", "ctx-s02": "retained", "ctx-s03": "retained", "ctx-s04": "retained",
    "ctx-s05": "retained", "ctx-s06": "rejected", "ctx-s07": "retained", "ctx-s08": "needs_adjudication",
}


def _manifest(corpus_dir: Path) -> dict[str, dict[str, str]]:
    path = corpus_dir / "manifest.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; build the sample corpus first (python -m sample.make_corpus "
                                f"--out {corpus_dir})")
    with path.open(encoding="utf-8", newline="") as handle:
        return {row["locator"]: row for row in csv.DictReader(handle)}


def _case_record(spec: dict[str, Any], manifest: dict[str, dict[str, str]], out_dir: Path, corpus_dir: Path) -> dict:
    refs = [Path(os.path.relpath(corpus_dir / locator, out_dir)).as_posix() for locator in spec["images"]]
    rights = []
    for locator in spec["images"]:
        row = manifest[locator]
        rights.append({"title": row["title"], "creator": row["creator"] or "unknown", "provider": row["provider"],
                       "url": row["source_url"], "license_note": row["license"],
                       "redistribution": row["redistribution"]})
    many = len(refs) > 1
    basis = _SYNTHETIC.format(images=" and ".join(spec["images"]), verb="are each" if many else "is")
    gold_text = next(o["text"] for o in spec["options"] if o["option_id"] == spec["gold"])
    return {
        "case_id": spec["case_id"],
        "images": refs,
        "scenario": spec["scenario"],
        "question": spec["question"],
        "proposed_assessment": spec.get("proposed_assessment"),
        "options": spec["options"],
        "gold": spec["gold"],
        "gold_text": gold_text,
        "rationale": spec["rationale"],
        "source_basis": basis,
        "rights": rights,
        "probe": spec.get("probe"),
    }


def _reviews_csv() -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["case_id", "reviewer", *CRITERION_KEYS, "final", "note"])
    for spec in _CASES:
        case_id = spec["case_id"]
        rows = [(reviewer, "") for reviewer in REVIEWERS] + ([(PANEL, "yes")] if case_id in _PANEL_ROWS else [])
        for reviewer, final in rows:
            failed = _FAILS.get(case_id, {}).get(reviewer, ())
            verdicts = ["fail" if key in failed else "pass" for key in CRITERION_KEYS]
            writer.writerow([case_id, reviewer, *verdicts, final, _NOTES.get((case_id, reviewer), "")])
    return buffer.getvalue()


def write_context_sample(out_dir: Path, corpus_dir: Path) -> dict[str, Any]:
    """Write cases.json and reviews.csv under ``out_dir`` for the corpus at ``corpus_dir``; return what they hold.

    The corpus must exist (its manifest gives the rights, and every referenced image must be there). The
    output depends only on the two folders' relative position, so a rerun writes identical bytes.
    """
    out_dir, corpus_dir = Path(out_dir).resolve(), Path(corpus_dir).resolve()
    manifest = _manifest(corpus_dir)
    locators = [locator for spec in _CASES for locator in spec["images"]]
    missing = [loc for loc in locators if loc not in manifest or not (corpus_dir / loc).is_file()]
    if missing:
        raise FileNotFoundError(f"sample corpus at {corpus_dir} lacks {', '.join(missing)}; rebuild it with "
                                f"python -m sample.make_corpus --out {corpus_dir}")
    out_dir.mkdir(parents=True, exist_ok=True)
    records = [_case_record(spec, manifest, out_dir, corpus_dir) for spec in _CASES]
    document = {
        "about": "Synthetic contextual-suitability cases for testing aesforge; the images are abstract renders "
                 "from the sample corpus and the scenarios are invented (sample/context_fixture.py).",
        "cases": records,
    }
    (out_dir / CASES_FILE).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out_dir / REVIEWS_FILE).write_text(_reviews_csv(), encoding="utf-8", newline="")
    statuses = list(EXPECTED_STATUS.values())
    counts = {"cases": len(records), "images": sum(len(r["images"]) for r in records),
              "review_rows": len(REVIEWERS) * len(records) + len(_PANEL_ROWS),
              **{status: statuses.count(status) for status in sorted(set(statuses))}}
    return {
        "schema_version": SCHEMA_VERSION,
        "counts": counts,
        "cases_file": CASES_FILE,
        "reviews_file": REVIEWS_FILE,
        "case_ids": [spec["case_id"] for spec in _CASES],
        "images": {record["case_id"]: record["images"] for record in records},
        "expected_status": dict(EXPECTED_STATUS),
        "multi_image": [spec["case_id"] for spec in _CASES if len(spec["images"]) > 1],
        "three_option": [spec["case_id"] for spec in _CASES if len(spec["options"]) == 3],
        "with_probe": [spec["case_id"] for spec in _CASES if spec.get("probe")],
        "with_proposed_assessment": [spec["case_id"] for spec in _CASES if spec.get("proposed_assessment")],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write cases.json and reviews.csv into")
    parser.add_argument("--corpus", type=Path, required=True, help="the sample corpus folder (has manifest.csv)")
    args = parser.parse_args(argv)
    summary = write_context_sample(args.out, args.corpus)
    print(f"wrote {len(summary['case_ids'])} cases and their review sheet to {args.out}")


if __name__ == "__main__":
    main()
