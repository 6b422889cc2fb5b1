"""Fault isolation in the judge and ContextCanvas stages, for real: an exception injected into the per-item work
of ``poem_judge_scores`` (one illustration), ``context_shortcut_report`` (one case) and ``context_case_review``
(one returned sheet) is that item's ``internal_error``, quarantined; the step succeeds and the other items are
done."""

from pathlib import Path

import numpy as np
from PIL import Image

import assets.context_canvas.review as case_review
import assets.context_canvas.shortcut_report as shortcut_report
import assets.poetry.judge as poetry_judge
from assets.context_canvas.logic.retention import CRITERION_KEYS, SHEET_COLUMNS
from tests.support.critique_harness import failures, materialize
from tests.support.pool_harness import step_summaries, write_config
from tests.context_canvas.test_assets import _csv_row, _picture, _write_cases_csv, _write_sheet
from tests.poetry.test_assets import TINY, _ok, _run, _tiny_corpus, _write_config
from warehouse.db import Warehouse
from warehouse.ids import sha256_file


def _internal_errors(wh: Warehouse, stage: str) -> list[tuple[str, str]]:
    return list(wh.query("SELECT entity_id, detail FROM rejection WHERE stage = ? AND reason_code = 'internal_error'",
                         [stage]).itertuples(index=False, name=None))


def test_an_exception_judging_one_illustration_is_its_internal_error_and_the_others_are_judged(tmp_path, monkeypatch):
    paintings = tmp_path / "paintings"
    paintings.mkdir()
    for name, tint in (("a.png", (1.0, 0.8, 0.6)), ("b.png", (0.5, 0.7, 1.0))):
        ramp = np.linspace(30, 220, 128)[None, :, None] * np.array(tint)[None, None, :]
        Image.fromarray(ramp.repeat(96, axis=0).astype(np.uint8)).save(paintings / name)
    config = _write_config(tmp_path, {"corpus": [str(_tiny_corpus(tmp_path, TINY))], "stand_in_folder": str(paintings),
                                      "stand_in_models": 2})
    real = poetry_judge.build_judge_request

    def exploding(poem, image, mime, item_id, settings):
        if item_id == "p-b@stand-in-1":
            raise KeyError("injected")
        return real(poem, image, mime, item_id, settings)

    monkeypatch.setattr(poetry_judge, "build_judge_request", exploding)
    first = _run(config, ["poem_corpus", "poem_illustrations", "poem_judge_scores"])
    _ok(first)
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    assert sorted(wh.query("SELECT item_id FROM poem_judgement")["item_id"]) == ["p-a@stand-in-1", "p-a@stand-in-2",
                                                                                  "p-b@stand-in-2"]
    [(entity, detail)] = _internal_errors(wh, "poem_judge")
    assert entity.startswith("p-b@stand-in-1|") and "KeyError: 'injected'" in detail and "exploding" in detail
    assert wh.scalar("SELECT item_key FROM item_quarantine WHERE stage = 'poem_judge'") == entity
    summary = step_summaries(wh, first.run_id)["poem_judge_scores"]
    assert summary["judged"] == 3 and summary["rejected:internal_error"] == 1
    assert wh.scalar("SELECT n_poems FROM poem_judge_agreement WHERE dimension = 'all'") is not None

    # Unchanged: the quarantined illustration is not tried again and nothing is added.
    calls = wh.scalar("SELECT count(*) FROM model_call")
    second = _run(config, ["poem_judge_scores"])
    _ok(second)
    assert step_summaries(wh, second.run_id)["poem_judge_scores"]["quarantined"] == 1
    assert wh.scalar("SELECT count(*) FROM model_call") == calls and len(_internal_errors(wh, "poem_judge")) == 1


def _three_cases(folder: Path) -> Path:
    _picture(folder / "images" / "red.png", (200, 40, 40))
    _write_cases_csv(folder / "cases.csv", [_csv_row(f"c-0{n}", "images/red.png") for n in (1, 2, 3)])
    return folder / "cases.csv"


def test_an_exception_asking_one_case_text_only_is_its_internal_error_and_the_others_are_asked(tmp_path, monkeypatch):
    config = write_config(tmp_path, {}, context_canvas={"cases": [str(_three_cases(tmp_path / "cases"))],
                                                        "returned_dir": str(tmp_path / "returned")})
    real = shortcut_report.build_text_only_request

    def exploding(case, settings):
        if case.case_id == "c-02":
            raise RuntimeError("injected")
        return real(case, settings)

    monkeypatch.setattr(shortcut_report, "build_text_only_request", exploding)
    result = materialize(config, "context_cases", "context_shortcut_report")
    assert result.success, failures(result)
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    assert sorted(wh.query("SELECT case_id FROM context_text_only_answer")["case_id"]) == ["c-01", "c-03"]
    [(entity, detail)] = _internal_errors(wh, "context_text_only")
    assert entity.startswith("c-02|") and "cases.csv#line=3" in detail and "RuntimeError: injected" in detail
    summary = step_summaries(wh, result.run_id)["context_shortcut_report"]
    assert summary["answered"] == 2 and summary["rejected:internal_error"] == 1
    assert '"n_cases": 3' in wh.scalar("SELECT figures FROM context_shortcut_report")  # the report covers every case


def test_an_exception_reading_one_review_sheet_is_its_internal_error_and_the_other_sheet_is_stored(tmp_path, monkeypatch):
    returned = tmp_path / "returned"

    def review(case_id: str, reviewer: str) -> list[str]:
        row = dict.fromkeys(SHEET_COLUMNS, "") | {"case_id": case_id, "reviewer": reviewer} | dict.fromkeys(CRITERION_KEYS, "pass")
        return [row[c] for c in SHEET_COLUMNS]

    _write_sheet(returned / "ana.csv", list(SHEET_COLUMNS), [review("c-01", "ana"), review("c-02", "ana")])
    _write_sheet(returned / "ben.csv", list(SHEET_COLUMNS), [review("c-01", "ben")])
    config = write_config(tmp_path, {}, context_canvas={"cases": [str(_three_cases(tmp_path / "cases"))],
                                                        "returned_dir": str(returned)})
    real = case_review.parse_reviews

    def exploding(stream, name, known_cases):
        if name == "ana.csv":
            raise RuntimeError("injected")
        return real(stream, name, known_cases)

    monkeypatch.setattr(case_review, "parse_reviews", exploding)
    result = materialize(config, "context_cases", "context_case_review")
    assert result.success, failures(result)
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    assert wh.query("SELECT path, status FROM context_review_sheet").values.tolist() == [["returned/ben.csv", "read"]]  # by name
    assert wh.query("SELECT case_id, reviewer FROM context_review").values.tolist() == [["c-01", "ben"]]
    [(entity, detail)] = _internal_errors(wh, "context_case_review")
    assert entity == f"case_review_sheet:{sha256_file(returned / 'ana.csv')}" and "RuntimeError: injected" in detail
    summary = step_summaries(wh, result.run_id)["context_case_review"]
    assert summary["sheets_read"] == 1 and summary["rejected:internal_error"] == 1
