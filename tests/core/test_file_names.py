"""Exported files and returned sheets are recorded by their names relative to the warehouse's root, and rows a
warehouse written before names were used holds under absolute paths are renamed, not kept beside new ones."""

import json
from pathlib import Path

from assets.core.exports import Contents, ExportFile, publish, record_export
from assets.core.returned_sheets import ingest_sheets
from assets.core.step import Step
from resources.fetching import MISSING_FILE, HttpFetcher
from warehouse.db import Warehouse, insert_rows
from warehouse.ids import sha256_file
from warehouse.lineage import Entity, start_activity


def _step(wh: Warehouse) -> Step:
    with wh.transaction() as con:
        log = start_activity(con, asset_key="t", partition_key=None, run_id="r", code_version="t v1",
                             parameters={}, agents=())
    return Step(wh, log.activity_id, "t", "t v1")


def _rows(wh: Warehouse, sql: str) -> list[tuple]:
    return [tuple(row) for row in wh.query(sql).itertuples(index=False)]


def test_an_export_is_recorded_by_name_and_found_again(tmp_path):
    wh = Warehouse(tmp_path / "data" / "w.duckdb", root=tmp_path / "config")
    step = _step(wh)
    file = ExportFile(tmp_path / "data" / "out" / "one.csv", "SELECT 1 AS x", "csv")
    assert publish(step, "d", [file], Contents("SELECT 'thing:a'", role="r"))
    assert _rows(wh, "SELECT path, n_rows FROM export_file") == [("../data/out/one.csv", 1)]
    assert json.loads(wh.scalar("SELECT attributes FROM entity WHERE kind = 'export_file'"))["path"] == "../data/out/one.csv"
    assert step.summary()["one.csv"] == "../data/out/one.csv"  # the activity names it; the UI shows step.files as a path
    assert not publish(step, "d", [file], Contents("SELECT 'thing:a'", role="r"))  # unchanged: found by its name


def test_an_export_recorded_by_absolute_path_is_renamed_when_written_again(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb", root=tmp_path)
    path = tmp_path / "out" / "one.csv"
    path.parent.mkdir()
    path.write_text("x\n1\n")
    with wh.transaction() as con:  # as the code before names wrote it
        insert_rows(con, "export_file", [{"path": str(path), "entity_id": "export_file:old", "format": "csv", "n_rows": 1,
                                          "sha256": "old", "dataset": "d", "activity_id": "a"}])
        insert_rows(con, "entity", [{"entity_id": "export_file:old", "kind": "export_file", "content_sha256": "old",
                                     "attributes": json.dumps({"path": str(path)}), "recorded_at": "2020-01-01"}])
    step = _step(wh)
    with step.batch() as log:
        record_export(step, log, "d", path, "csv", 1, [], "contains")
    assert _rows(wh, "SELECT path FROM export_file") == [("out/one.csv",)]
    old = json.loads(wh.scalar("SELECT attributes FROM entity WHERE entity_id = 'export_file:old'"))
    assert old["path"] == "out/one.csv"


def _sheet_stage(step: Step, returned: Path, known: dict) -> tuple[list[str], list[str]]:
    recorded: list[str] = []

    def record(log, name, sha, rows, blank, error):
        recorded.append(name)
        insert_rows(log.con, "step_input_state", [{"asset_key": name, "input_digest": sha, "activity_id": log.activity_id}],
                    conflict="replace")

    problems = ingest_sheets(step, "sheets", "test_sheet", returned, known, lambda path: ([path.name], 0), record, "read")
    return recorded, problems


def test_a_returned_sheet_is_recorded_by_name(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb", root=tmp_path)
    (tmp_path / "returned").mkdir()
    (tmp_path / "returned" / "a.csv").write_text("x\n")
    recorded, problems = _sheet_stage(_step(wh), tmp_path / "returned", {})
    assert recorded == ["returned/a.csv"] and problems == []
    assert json.loads(wh.scalar("SELECT attributes FROM entity WHERE kind = 'test_sheet'")) == {"path": "returned/a.csv"}


def test_a_sheet_known_by_absolute_path_is_renamed_and_not_read_again(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb", root=tmp_path)
    sheet = tmp_path / "returned" / "a.csv"
    sheet.parent.mkdir()
    sheet.write_text("x\n")
    step = _step(wh)
    with step.batch() as log:
        log.entities([Entity("test_sheet:old", "test_sheet", "old", {"path": str(sheet)})])
        insert_rows(log.con, "step_input_state", [{"asset_key": str(sheet), "input_digest": "d", "activity_id": "a"}])
    recorded, _ = _sheet_stage(step, sheet.parent, {str(sheet): (sha256_file(sheet), "read", None)})
    assert recorded == []  # unchanged, found under its name once renamed
    assert _rows(wh, "SELECT asset_key FROM step_input_state") == [("returned/a.csv",)]
    assert json.loads(wh.scalar("SELECT attributes FROM entity WHERE entity_id = 'test_sheet:old'")) == {"path": "returned/a.csv"}


def test_a_missing_local_file_is_named_as_it_was_asked_for(tmp_path):
    fetcher = HttpFetcher(user_agent="test", base_dir=tmp_path)
    result = fetcher.fetch("images/missing.png")
    assert result.reason_code == MISSING_FILE
    assert result.detail == "FileNotFoundError: images/missing.png" and str(tmp_path) not in result.attempts[0].error
