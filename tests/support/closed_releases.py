"""Small release folders of the closed-answer benchmarks, written as `aesforge release` writes them (Parquet shards
with embedded PNG bytes, a release.json naming the data files), with the images also in the project's blob store:
ContextCanvas (cases, gold, counterfactual pairs), AesEval (one question per format) and the poem benchmark (images,
poems, annotations). Pixels are chosen so the offline judges have something to read."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw

from assets.poetry.logic.rubric import DIMENSION_KEYS
from resources.blob_store import LocalBlobStore

IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
OPTION = pa.struct([("id", pa.string()), ("text", pa.string())])
YES_NO = [{"id": "A", "text": "Yes"}, {"id": "B", "text": "No"}]
SCENARIO = "A hospice family room wants calm, cool colour and nothing dramatic."


def png(colour: tuple[int, int, int], size: tuple[int, int] = (96, 64), box: tuple[int, int, int, int] | None = None,
        box_colour: tuple[int, int, int] = (255, 255, 255)) -> bytes:
    image = Image.new("RGB", size, colour)
    if box:
        ImageDraw.Draw(image).rectangle(box, fill=box_colour)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _image(root: Path, data: bytes) -> tuple[dict, str]:
    sha = LocalBlobStore(root / "blobs").put_bytes(data).sha256
    return {"bytes": data, "path": f"images/{sha[:2]}/{sha}.png"}, sha


def _write(root: Path, dataset: str, tables: dict[tuple[str, str], pa.Table]) -> Path:
    folder = root / "releases" / dataset
    files = {}
    for (config, split), table in tables.items():
        name = f"data/{config}/{split}-00000-of-00001.parquet"
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, folder / name)
        files[name] = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    (folder / "release.json").write_text(json.dumps({"dataset": dataset, "version": "0.1.0", "files": files}))
    return folder


CASES = {  # id: (colour of its image, options, gold, neutral description, evidence description)
    "ctx-warm": ((220, 50, 30), YES_NO, "B", "A red shape on an orange ground.", "A vivid red and orange, dramatic burst."),
    "ctx-cool": ((110, 130, 170), YES_NO, "A", "Soft blue-grey shapes.", "Muted cool blue, calm and quiet."),
    "ctx-dark": ((20, 20, 30), YES_NO, "B", "A dark frame.", "A very dark, dim frame with a bright lit spot."),
    "ctx-pick": ((120, 140, 160), [{"id": "A", "text": "Image 1"}, {"id": "B", "text": "Image 2"},
                                   {"id": "C", "text": "Neither"}], "C", "", ""),
}
PAIRS = {"cf-warm": ("ctx-warm", (110, 130, 170)), "cf-dark": ("ctx-dark", (120, 140, 170))}  # pair: (case, edit colour)


def context_release(root: Path) -> dict[str, str]:
    """ContextCanvas with its gold and two counterfactual No-to-Yes pairs; returns each case's gold option id."""
    cases, gold, pairs = [], [], []
    images = {}
    for case_id, (colour, options, answer, neutral, evidence) in CASES.items():
        image, sha = _image(root, png(colour))
        images[case_id] = (image, sha)
        cases.append({"id": case_id, "images": [image], "image_sha256": [sha], "scenario": SCENARIO,
                      "proposed_assessment": None, "question": "Is this image suitable for the room?", "options": options,
                      "neutral_description": neutral or None, "evidence_description": evidence or None})
        gold.append({"id": case_id, "case_id": case_id, "gold": answer, "rationale": f"Decided by its {colour} palette."})
    for pair_id, (case_id, colour) in PAIRS.items():
        edited, edited_sha = _image(root, png(colour))
        original, original_sha = images[case_id]
        pairs.append({"id": pair_id, "case_id": case_id, "scenario": SCENARIO, "proposed_assessment": None,
                      "question": "Is this image suitable for the room?", "options": YES_NO, "original_image": original,
                      "edited_image": edited, "original_image_sha256": original_sha, "edited_image_sha256": edited_sha,
                      "original_gold": "B", "edited_gold": "A", "decisive_cue": "the palette",
                      "instruction": "recolour it cool and muted", "edit_provider": "supplied", "edit_model": "file"})
    case_schema = pa.schema([("id", pa.string()), ("images", pa.list_(IMAGE)), ("image_sha256", pa.list_(pa.string())),
                             ("scenario", pa.string()), ("proposed_assessment", pa.string()), ("question", pa.string()),
                             ("options", pa.list_(OPTION)), ("neutral_description", pa.string()),
                             ("evidence_description", pa.string())])
    pair_schema = pa.schema([("id", pa.string()), ("case_id", pa.string()), ("scenario", pa.string()),
                             ("proposed_assessment", pa.string()), ("question", pa.string()), ("options", pa.list_(OPTION)),
                             ("original_image", IMAGE), ("edited_image", IMAGE), ("original_image_sha256", pa.string()),
                             ("edited_image_sha256", pa.string()), ("original_gold", pa.string()),
                             ("edited_gold", pa.string()), ("decisive_cue", pa.string()), ("instruction", pa.string()),
                             ("edit_provider", pa.string()), ("edit_model", pa.string())])
    _write(root, "context_canvas", {("cases", "eval"): pa.Table.from_pylist(cases, schema=case_schema),
                                    ("gold", "eval"): pa.Table.from_pylist(gold),
                                    ("counterfactual_pairs", "eval"): pa.Table.from_pylist(pairs, schema=pair_schema)})
    return {case_id: answer for case_id, (_, _, answer, _, _) in CASES.items()}


METADATA = json.dumps({"canvas": {"width": 200, "height": 100}, "elements": [
    {"element_id": "e0", "type": "background", "left": 0, "top": 0, "width": 200, "height": 100, "color": [240, 240, 240]},
    {"element_id": "e1", "type": "text", "left": 20, "top": 20, "width": 80, "height": 20, "text": "Sale", "color": [20, 20, 20],
     "font": "Roboto", "font_size": 16},
    {"element_id": "e2", "type": "svg", "left": 120, "top": 50, "width": 60, "height": 40, "color": [200, 30, 30]}]})
QUESTIONS = {  # id: (format, indicator, options, answer, answer box)
    "q-judge": ("aesthetic_judgment", "layout_balance", ["yes", "no"], "no", None),
    "q-region": ("region_selection", "color_contrast", ["[20, 20, 100, 40]", "None", "[120, 50, 180, 90]", "[0, 0, 10, 10]"],
                 "B", None),
    "q-locate": ("precise_localisation", "layout_balance", [], "[120, 50, 180, 90]", [120, 50, 180, 90]),
}


ASK = {"aesthetic_judgment": "Does the design show this problem? Reply yes or no.",
       "region_selection": "Which region shows the problem? Reply with the letter.",
       "precise_localisation": "Reply with the box of the element that shows the problem, or None."}


def aeseval_release(root: Path) -> None:
    image, sha = _image(root, png((240, 240, 240), (200, 100), (120, 50, 180, 90), (200, 30, 30)))
    rows = [{"question_id": qid, "design_id": f"design:{qid}", "base_design_id": "design:base", "image": image,
             "image_sha256": sha, "indicator": indicator, "format": fmt,
             "question": f"Indicator under review: {indicator.replace('_', ' ')}. What it means: how it should look.\n"
                         f"Boxes are written [left, top, right, bottom] in pixels of the 200x100 canvas.\n{ASK[fmt]}",
             "options": options, "answer": answer, "answer_box": box, "box_units": "pixels", "metadata": METADATA,
             "label_source": "human", "perturbations": []}
            for qid, (fmt, indicator, options, answer, box) in QUESTIONS.items()]
    schema = pa.schema([("question_id", pa.string()), ("design_id", pa.string()), ("base_design_id", pa.string()),
                        ("image", IMAGE), ("image_sha256", pa.string()), ("indicator", pa.string()), ("format", pa.string()),
                        ("question", pa.string()), ("options", pa.list_(pa.string())), ("answer", pa.string()),
                        ("answer_box", pa.list_(pa.float64())), ("box_units", pa.string()), ("metadata", pa.string()),
                        ("label_source", pa.string()), ("perturbations", pa.list_(pa.string()))])
    _write(root, "aeseval", {("questions", "benchmark"): pa.Table.from_pylist(rows, schema=schema)})


POEM_SCORES = {  # image: (poem, human score on every dimension, colour)
    "p1@a": ("p1", 0.9, (200, 200, 190)), "p1@b": ("p1", 0.4, (40, 40, 40)), "p1@c": ("p1", 0.1, (250, 0, 250)),
    "p2@a": ("p2", 0.8, (210, 205, 195)), "p2@b": ("p2", 0.3, (0, 0, 0)),
    "p3@a": ("p3", 0.7, (190, 190, 180)), "p3@b": ("p3", 0.2, (255, 0, 0)),
    "p4@a": ("p4", 0.6, (180, 180, 170)), "p4@b": ("p4", 0.5, (30, 30, 60)),
}


def poem_release(root: Path) -> None:
    images = []
    for item_id, (poem, score, colour) in POEM_SCORES.items():
        image, sha = _image(root, png(colour, (128, 128)))
        images.append({"id": item_id, "image": image, "image_sha256": sha, "poem_id": poem, "generator": item_id[-1],
                       "dimensions": {k: score for k in DIMENSION_KEYS}, "quality": score, "recognizability": 1.0})
    poems = [{"poem_id": p, "title": f"Poem {p}", "author": "Anon", "text": "床前明月光", "translation": "Moonlight by my bed."}
             for p in sorted({v[0] for v in POEM_SCORES.values()})]
    annotations = [{"id": f"{g}{i}", "rater_id": f"{g}{i}", "rater_group": g, "item_id": "p1@a", "poem_id": "p1",
                    "phase": "recognizability", "item": "poem_choice", "answer": "A", "correct": ok, "passed_qc": True}
                   for g, results in (("expert", (True, True, True, False)), ("crowd", (True, False, False, False)))
                   for i, ok in enumerate(results)]
    annotations.append({**annotations[0], "id": "x", "passed_qc": False, "correct": False})
    _write(root, "poem_benchmark", {("images", "test"): pa.Table.from_pylist(images),
                                    ("poems", "test"): pa.Table.from_pylist(poems),
                                    ("annotations", "test"): pa.Table.from_pylist(annotations)})
