"""Eight invented contextual-suitability cases over the sample corpus, a filled review sheet, two checked edits.

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
    counterfactual/specs.csv    counterfactual edit specs (``assets/counterfactual/logic/edit_pairs.py``) for the two
                                retained No cases, each naming its supplied edit (``edited_image``)
    counterfactual/edits/*.jpg  the edited renders
    counterfactual/checks.csv   the manual check approving both edits (reviewer ana)

Every case has a neutral description (what the render shows, no identity or verdict) and an evidence description
(the same with the decisive visible cue named), written from the renders themselves.

The counterfactual edits are synthetic too: no edit model made them. Each is a fixed, deterministic Pillow/numpy
operation on the source render that plainly changes the decisive cue in the scenario's direction, and the spec's
instruction says so: on ctx-s01 (dark-sky poster) the lit towers are erased, each of their rows refilled by
interpolating between the colours beside them, so the night sky stands over open hills; on ctx-s03 (a hospice
print that should be warm) every hue is turned half-way round the colour wheel, so the cool blue painting becomes
orange and red with its brushwork and figure kept. Both pairs go from No to Yes with the scenario unchanged.

What the sheet decides (``expected_status`` in the returned dict): six cases retained (ctx-s07 only after a
panel ``final`` row settles a split on answerability), ctx-s06 rejected because both reviewers fail visual
necessity (its question is answerable from the rights record alone), ctx-s08 left split on scenario
naturalness (needs adjudication). ctx-s04 has two images and Image 1 / Image 2 options, ctx-s05 three options,
ctx-s03 a designer's proposed assessment, and ctx-s01 a development-probe entry (an illustrative answer written
for this sample, not a recorded model output). ctx-s01 and ctx-s03 are the retained cases whose gold is No on a
Yes/No question, the ones the counterfactual edits start from.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageFilter

from assets.context_canvas.logic.retention import CRITERION_KEYS
from assets.counterfactual.logic.edit_pairs import (
    CHECK_COLUMNS,
    EDITED_IMAGE,
    SPEC_COLUMNS,
    SUPPLIED_MODEL,
    counterfactual_id,
    planned_edit,
)

SCHEMA_VERSION = 1
CASES_FILE, REVIEWS_FILE = "cases.json", "reviews.csv"
COUNTERFACTUAL_DIR = "counterfactual"
SPECS_FILE, CHECKS_FILE = f"{COUNTERFACTUAL_DIR}/specs.csv", f"{COUNTERFACTUAL_DIR}/checks.csv"
CHECK_REVIEWER = "ana"
EDIT_QUALITY = 88  # JPEG quality of the edited renders: small files, no visible loss at this size
REVIEWERS = ("ana", "ben")
PANEL = "panel"
YES_NO = [{"option_id": "A", "text": "Yes"}, {"option_id": "B", "text": "No"}]

_SYNTHETIC = ("Synthetic sample: {images} {verb} an abstract render made by sample/make_corpus.py (no real artwork "
              "or photograph); the scenario was invented for testing and the rationale rests only on what the "
              "render visibly shows.")

# case id -> (corpus locators, scenario, question, descriptions, options, gold, rationale, proposed assessment)
_CASES: tuple[dict[str, Any], ...] = (
    {
        "case_id": "ctx-s01",
        "images": ["images/photography/photo_08.jpg"],
        "scenario": "A dark-sky society is printing a poster that celebrates unspoiled night skies far from towns, "
                    "for a campaign against light pollution.",
        "question": "Is this image suitable as the poster's main picture?",
        "neutral_description": "A night landscape: a pale full moon high on the left of a dark blue sky crossed by "
                               "soft vertical bands of light, layered dark hills, a cluster of rectangular towers "
                               "in the centre and dark ground in front.",
        "evidence_description": "A night landscape: a pale full moon high on the left of a dark blue sky crossed "
                                "by soft vertical bands of light, layered dark hills and dark ground in front. The "
                                "centre shows a cluster of towers with many lit yellow windows: town lights under "
                                "the night sky.",
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
        "neutral_description": "A pale, hazy sky over low sandy hills, the hills mirrored in still water, and a "
                               "broad brown foreground with one small dark tree.",
        "evidence_description": "A pale, hazy sky over low sandy hills, the hills mirrored in still water, and a "
                                "broad brown foreground with one small dark tree. Nothing built is visible "
                                "anywhere: no houses, towers or roads, only hills, water and open ground.",
        "options": YES_NO,
        "gold": "A",
        "rationale": "The render shows pale sky, low sandy hills mirrored in still water and an open brown "
                     "foreground with a single small tree; nothing built is visible, which is what the brief asks.",
    },
    {
        "case_id": "ctx-s03",
        "images": ["images/painting/painting_00.png"],
        "scenario": "A hospice is choosing a print for its family room; the brief asks for warm colour (orange, "
                    "red and golden tones) and nothing dramatic or busy.",
        "question": "Do you agree with the designer's assessment?",
        "proposed_assessment": "The designer thinks this painting fits the room because its soft edges and single "
                               "quiet figure keep the space calm.",
        "neutral_description": "A painting in short, soft brushstrokes: one rounded figure, a darker head above a "
                               "broad body, against a slightly lighter ground.",
        "evidence_description": "A painting in short, soft brushstrokes: one rounded figure, a darker head above a "
                                "broad body, against a slightly lighter ground. Every part of it is muted blue "
                                "and blue-green: a cool palette with no orange, red or golden tone.",
        "options": YES_NO,
        "gold": "B",
        "rationale": "The soft brushwork and single figure are calm enough, but the painting is a muted blue figure "
                     "on a slightly lighter blue ground with no orange, red or golden tone: a cool palette, not the "
                     "warm colour the brief asks for.",
    },
    {
        "case_id": "ctx-s04",
        "images": ["images/photography/photo_07.jpg", "images/photography/photo_01.jpg"],
        "scenario": "A town's winter festival needs a cover for its printed programme showing the town in snow.",
        "question": "Which image should the designer use for the programme cover?",
        "neutral_description": "Image 1: a small cluster of dark towers with lit windows beyond a green meadow "
                               "with dark rounded trees, under a pale sky. Image 2: a small cluster of dark towers "
                               "with lit windows by a lake and blue mountains, under a pink sky, with a pale "
                               "mottled foreground and grey rounded trees.",
        "evidence_description": "Image 1: a small cluster of dark towers with lit windows beyond a green meadow "
                                "with dark rounded trees, under a pale sky. Image 2: a small cluster of dark "
                                "towers with lit windows by a lake and blue mountains, under a pink sky, with grey "
                                "rounded trees. Image 1's foreground is green grass; Image 2's is white and icy "
                                "blue, like snow.",
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
        "neutral_description": "A painting in dense, short brushstrokes: a dark purple disc in the upper left of a "
                               "pale yellow-green sky, above a broad dark violet band across the lower half.",
        "evidence_description": "A painting in dense, short brushstrokes: a dark purple disc in the upper left of "
                                "a pale yellow-green sky, above a broad dark violet band across the lower half. "
                                "The disc is dim and the dark band fills half the picture, so the light reads as "
                                "going down over darkening land.",
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
        "neutral_description": "A painting in short brushstrokes: an ochre oval and a lilac oval standing side by "
                               "side on a dark purple ground, above a green field.",
        "evidence_description": "A painting in short brushstrokes: an ochre oval and a lilac oval standing side by "
                                "side on a dark purple ground, above a green field. No signature, inscription or "
                                "other mark of who painted it is visible.",
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
        "neutral_description": "A dim scene: dark blue-grey hills and a few dark trees under a dark sky, with a "
                               "soft pale glow in the sky above the hills.",
        "evidence_description": "A dim scene: dark blue-grey hills and a few dark trees under a dark sky. A soft "
                                "pale glow opens in the sky above the hills, so some light stays in view.",
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
        "neutral_description": "A hazy pale blue sky over soft tan hills, a red plain across the lower third, and "
                               "one dark rounded tree standing on it.",
        "evidence_description": "A hazy pale blue sky over soft tan hills, and one dark rounded tree on the plain "
                                "below. The plain is rust red and bare, with no green growth on it: it can read as "
                                "scorched ground.",
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
        "neutral_description": spec["neutral_description"],
        "evidence_description": spec["evidence_description"],
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


def _towers_erased(image: Image.Image) -> Image.Image:
    """ctx-s01's edit: the lit towers gone. Their pixels (near black, or lit window yellow, in the band round the
    windows, within the columns the towers fill) are refilled row by row by interpolating between the colours on
    either side, with the render's own kind of grain from a fixed seed; the sky, moon and trees stay."""
    pixels = np.asarray(image.convert("RGB")).astype(np.float32)
    lit = (pixels[..., 0] > 120) & (pixels[..., 0] - pixels[..., 2] > 50)
    rows = np.flatnonzero(lit.any(axis=1))
    top, bottom = int(rows[0]) - 24, int(rows[-1]) + 12  # the towers rise above their top windows
    band = pixels[top:bottom]
    dark = band.mean(axis=2) < 19
    tower = dark | (band[..., 0] - band[..., 2] > 20)
    tower = np.asarray(Image.fromarray(tower.astype(np.uint8) * 255).filter(ImageFilter.MaxFilter(5))) > 0
    columns = np.flatnonzero(dark.sum(axis=0) >= 12)  # a tree's top dips into the band; a tower fills it
    tower[:, :columns[0] - 3] = False
    tower[:, columns[-1] + 4:] = False
    xs = np.arange(band.shape[1])
    grain = np.random.default_rng(8).standard_normal(band.shape).astype(np.float32) * 3.0
    for y in np.flatnonzero(tower.any(axis=1)):
        hole = tower[y]
        for channel in range(3):
            band[y, hole, channel] = np.interp(xs[hole], xs[~hole], band[y, ~hole, channel]) + grain[y, hole, channel]
    pixels[top:bottom] = band
    return Image.fromarray(np.clip(pixels + 0.5, 0, 255).astype(np.uint8))


def _warm_palette(image: Image.Image) -> Image.Image:
    """ctx-s03's edit: every hue turned half-way round the colour wheel (Pillow's 256 hue steps), so the muted
    blues become oranges and reds at the same saturation and brightness; brushwork and figure stay."""
    hue, saturation, value = image.convert("RGB").convert("HSV").split()
    return Image.merge("HSV", (hue.point([(h + 128) % 256 for h in range(256)]), saturation, value)).convert("RGB")


# The counterfactual pairs: (case id, decisive cue, instruction, the operation that makes the edit).
_EDITS: tuple[tuple[str, str, str, Callable[[Image.Image], Image.Image]], ...] = (
    ("ctx-s01", "the lit towers in the centre",
     "Remove the towers and their lit windows, continuing the dark hills behind them, so the night sky stands over "
     "open country. Synthetic sample: made by a fixed pixel operation (the towers' pixels refilled row by row from "
     "the colours beside them), not by an edit model.", _towers_erased),
    ("ctx-s03", "the cool blue palette",
     "Recolour the painting in warm orange and red tones, keeping the brushwork, the figure and the composition. "
     "Synthetic sample: made by a fixed pixel operation (every hue turned half-way round the colour wheel), not by "
     "an edit model.", _warm_palette),
)


def _csv_text(columns: tuple[str, ...], rows: list[dict[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def _write_counterfactual(out_dir: Path, corpus_dir: Path) -> dict[str, str]:
    """The edited renders, the spec sheet naming them and the check sheet approving them; returns case id -> the
    edit's record id (as ``counterfactual_edits`` derives it: a supplied edit's model is ``file``)."""
    folder = out_dir / COUNTERFACTUAL_DIR
    (folder / "edits").mkdir(parents=True, exist_ok=True)
    cases = {spec["case_id"]: spec for spec in _CASES}
    specs, record_ids = [], {}
    for case_id, cue, instruction, edit in _EDITS:
        source = (corpus_dir / cases[case_id]["images"][0]).read_bytes()
        buffer = io.BytesIO()
        with Image.open(io.BytesIO(source)) as image:
            edit(image).save(buffer, "JPEG", quality=EDIT_QUALITY)
        name = f"edits/{case_id}.jpg"
        (folder / name).write_bytes(buffer.getvalue())
        row = {"source_id": case_id, "decisive_cue": cue, "instruction": instruction, "original_label": "No",
               "intended_label": "Yes", EDITED_IMAGE: name}
        specs.append(row)
        record_ids[case_id] = counterfactual_id(hashlib.sha256(source).hexdigest(), planned_edit(row).spec,
                                                SUPPLIED_MODEL, hashlib.sha256(buffer.getvalue()).hexdigest())
    (out_dir / SPECS_FILE).write_text(_csv_text((*SPEC_COLUMNS, EDITED_IMAGE), specs), encoding="utf-8", newline="")
    checks = [{"record_id": record_ids[case_id], "decision": "approved", "reviewer": CHECK_REVIEWER,
               "note": "only the named cue changed"} for case_id, *_ in _EDITS]
    (out_dir / CHECKS_FILE).write_text(_csv_text(CHECK_COLUMNS, checks), encoding="utf-8", newline="")
    return record_ids


def write_context_sample(out_dir: Path, corpus_dir: Path) -> dict[str, Any]:
    """Write cases.json, reviews.csv and the counterfactual sheets and edits under ``out_dir`` for the corpus at
    ``corpus_dir``; return what they hold.

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
    record_ids = _write_counterfactual(out_dir, corpus_dir)
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
        "counterfactual": {"specs_file": SPECS_FILE, "checks_file": CHECKS_FILE, "record_ids": record_ids},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True,
                        help="folder to write cases.json, reviews.csv and the counterfactual sheets into")
    parser.add_argument("--corpus", type=Path, required=True, help="the sample corpus folder (has manifest.csv)")
    args = parser.parse_args(argv)
    summary = write_context_sample(args.out, args.corpus)
    print(f"wrote {len(summary['case_ids'])} cases, their review sheet and"
          f" {len(summary['counterfactual']['record_ids'])} counterfactual edits to {args.out}")


if __name__ == "__main__":
    main()
