"""The AesEval rows as published: the sample's settings fill both splits, the view ``aeseval_question_rows``
holds one typed row per question with the render's blob and the design's metadata, every export file reads
with one type per column, and a split that loses its designs loses its files."""

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from assets.designs.logic.design_model import Design
from tests.designs.test_assets import _built, _run
from tests.designs.typed_exports import assert_typed_exports
from warehouse.db import Warehouse

SAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "config" / "sample.yaml"
TEXT_FIELDS = ("bold", "capitalize", "font", "font_size", "italic", "letter_spacing", "line_height", "text", "text_align")


def _sample_designs(source: Path) -> dict:
    """The sample config's design settings, on the test's copy of the fixture."""
    settings = yaml.safe_load(SAMPLE_CONFIG.read_text(encoding="utf-8"))["designs"]
    kept = {key: settings[key] for key in ("perturb", "benchmark_fraction", "split_seed")}
    return {**kept, "folders": [str(source / "v5"), str(source / "broken")],
            "review": {"round": settings["review"]["round"], "returned_dir": str(source / "review")}}


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory, fixture_dir) -> dict:
    source, expected = fixture_dir
    folder = tmp_path_factory.mktemp("aeseval_rows")
    config, wh = _built(folder, _sample_designs(source))
    return {"folder": folder, "config": config, "wh": wh, "expected": expected,
            "out": folder / "data" / "exports" / "aeseval"}


def test_the_sample_settings_put_base_designs_on_both_sides(sample_run):
    wh = sample_run["wh"]
    sides = dict(wh.query("SELECT split, count(*) AS n FROM design_split GROUP BY ALL").itertuples(index=False))
    assert len(sample_run["expected"]["designs"]) == 8 and sides == {"benchmark": 2, "train": 6}
    asked = set(wh.query("SELECT DISTINCT split FROM aeseval_question_rows")["split"])
    assert asked == {"benchmark", "train"}


def _records(wh: Warehouse, sql: str, params: list | None = None) -> list[dict]:
    """Rows as plain Python values (NULL is None, lists are lists)."""
    with wh.transaction() as con:
        cursor = con.execute(sql, params or [])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]


def _boxes_text(box: list[float], units: str) -> str:
    return "[" + ", ".join(str(int(v)) if units == "pixels" else f"{v:.3f}" for v in box) + "]"


def test_one_row_per_question_with_its_render_options_and_answer(sample_run):
    wh, folder = sample_run["wh"], sample_run["folder"]
    rows = _records(wh, "SELECT * FROM aeseval_question_rows")
    assert len(rows) == wh.scalar("SELECT count(*) FROM design_question") > 0
    assert len({r["question_id"] for r in rows}) == len(rows)
    assert {r["format"] for r in rows} == {"aesthetic_judgment", "region_selection", "precise_localisation"}
    for r in rows:
        # the render as the blob store holds it: the file named by the sha256 has that sha256
        blob = folder / "blobs" / r["image_sha256"][:2] / r["image_sha256"][2:4] / r["image_sha256"]
        assert hashlib.sha256(blob.read_bytes()).hexdigest() == r["image_sha256"]
        (stored,) = _records(wh, "SELECT choices, answer, judged_flawed FROM design_question WHERE question_id = ?",
                             [r["question_id"]])
        choices, answer = json.loads(stored["choices"]), json.loads(stored["answer"])
        if r["format"] == "aesthetic_judgment":
            assert r["options"] == ["yes", "no"] and r["box_units"] is None
            assert r["answer"] == ("yes" if stored["judged_flawed"] else "no") == r["options"][r["answer_index"]]
            continue
        assert r["box_units"] == "pixels"
        if r["format"] == "region_selection":
            assert len(r["options"]) == 4 and r["answer"] == "ABCD"[r["answer_index"]]
            for letter, option, box, choice in zip("ABCD", r["options"], r["option_boxes"], choices):
                assert f"{letter}. {option}" in r["question"]  # the options are the prompt's own words
                assert (box is None) == (choice is None) == (option == "None")
                assert box is None or box == choice
        else:
            assert r["options"] == [] and r["answer_index"] is None
        assert (r["answer_box"] is None) == (answer is None) == (not stored["judged_flawed"])
        if answer is not None:
            assert r["answer_box"] == answer
        if r["format"] == "precise_localisation":
            assert r["answer"] == ("None" if answer is None else _boxes_text(answer, "pixels"))


def _sorted_everywhere(value) -> bool:
    if isinstance(value, dict):
        return list(value) == sorted(value) and all(_sorted_everywhere(v) for v in value.values())
    if isinstance(value, list):
        return all(_sorted_everywhere(v) for v in value)
    return True


def test_the_metadata_is_the_designs_layout_colour_and_font_as_canonical_json(sample_run):
    wh = sample_run["wh"]
    rows = _records(wh, "SELECT q.design_id, q.metadata, d.record FROM aeseval_question_rows q JOIN design d USING (design_id)")
    assert len(rows) > 0
    for design_id, text, record in (r.values() for r in rows):
        metadata = json.loads(text)
        assert text == json.dumps(metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert _sorted_everywhere(metadata)
        design = Design.from_dict(json.loads(record))
        assert metadata["canvas"] == {"width": design.canvas_width, "height": design.canvas_height}
        assert [e["element_id"] for e in metadata["elements"]] == [e.element_id for e in design.elements]  # paint order
        for shown, element in zip(metadata["elements"], design.elements):
            assert set(shown) == {"angle", "color", "element_id", "height", "left", "opacity", "top", "type", "width",
                                  *TEXT_FIELDS}  # no layer, no effects: nothing that names the edit
            assert (shown["left"], shown["top"], shown["width"], shown["height"], shown["angle"]) == (
                element.left, element.top, element.width, element.height, element.angle)
            assert shown["type"] == element.type and shown["opacity"] == element.opacity
            assert shown["color"] == (list(element.color) if element.color else None)
            if element.type == "text":
                assert (shown["text"], shown["font"], shown["font_size"], shown["bold"], shown["italic"]) == (
                    element.text, element.font, element.font_size, element.bold, element.italic)
            else:
                assert all(shown[f] is None for f in TEXT_FIELDS)
        assert design_id not in text and "blob:" not in text


def test_every_export_file_has_one_type_per_column(sample_run):
    out = sample_run["out"]
    assert_typed_exports(out, ["aeseval_benchmark", "aeseval_train"])
    train = pq.read_table(out / "aeseval_train.parquet").to_pylist()
    assert any(r["reasoning"] for r in train)  # training judgment questions carry their reasoning path
    assert pq.read_table(out / "aeseval_benchmark.parquet").schema.field("reasoning").type == \
        pq.read_table(out / "aeseval_train.parquet").schema.field("reasoning").type
    counts = {Path(p).name: n for p, n in sample_run["wh"].query("SELECT path, n_rows FROM export_file").itertuples(index=False)}
    for split in ("benchmark", "train"):
        n = sample_run["wh"].scalar("SELECT count(*) FROM aeseval_question_rows WHERE split = ?", [split])
        assert counts[f"aeseval_{split}.jsonl"] == counts[f"aeseval_{split}.parquet"] == n > 0


def test_a_split_without_questions_is_not_written_and_its_old_files_go(sample_run):
    """Runs last: it re-deals the module's warehouse."""
    config, out, wh = sample_run["config"], sample_run["out"], sample_run["wh"]
    assert (out / "aeseval_benchmark.jsonl").is_file()
    settings = yaml.safe_load(config.read_text(encoding="utf-8"))
    settings["designs"].update({"benchmark_fraction": 0.0, "split_seed": 9})  # a new seed re-deals: none on the benchmark
    config.write_text(yaml.safe_dump(settings), encoding="utf-8")
    result = _run(config)
    assert result.success, [e.message for e in result.all_events if e.is_failure]
    assert set(wh.query("SELECT split FROM design_split")["split"]) == {"train"}
    assert not (out / "aeseval_benchmark.jsonl").exists() and not (out / "aeseval_benchmark.parquet").exists()
    assert (out / "aeseval_train.jsonl").is_file()
    assert wh.scalar("SELECT count(*) FROM export_file WHERE path LIKE '%aeseval_benchmark%'") == 0
    # Unchanged: the absent files are what the last export left, so nothing is written again.
    again = _run(config, ["aeseval_export"])
    assert again.success
    (materialization,) = again.asset_materializations_for_node("aeseval_export")
    assert "unchanged" in materialization.metadata
