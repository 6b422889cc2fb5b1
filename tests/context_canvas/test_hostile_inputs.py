"""Hostile case files and review sheets through the real ContextCanvas assets: one outcome per case, every good
record around a bad one kept, a second run that does no work and adds no rows; a review sheet with a latin-1 line
is rejected naming that row; random records never raise out of the case parser."""

import hashlib
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assets.context_canvas.logic.case_records import CaseFileError, CaseRejection, ContextCase, case_from_record, read_cases
from tests.support.critique_harness import failures, materialize
from tests.support.pool_harness import step_summaries, warehouse_for, write_config
from tests.support.hostile.context import _record, write_case_cases, write_review_sheets
from tests.support.hostile.records import KEPT, read_all_or_file_error
from warehouse.db import Warehouse

TABLES = ("entity", "used", "was_generated_by", "was_derived_from", "rejection", "input_file_state", "item_quarantine",
          "context_case", "context_case_image", "context_case_read", "context_case_probe", "context_contact_sheet")


def _snapshot(wh: Warehouse) -> dict[str, list]:
    with wh.transaction() as con:
        return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES}


def _outcomes(wh: Warehouse, case) -> list[str]:
    """The case's outcomes; the warehouse names its file relative to the config's folder (``wh.name_of``)."""
    if case.locator is None:
        sha = hashlib.sha256(case.source.read_bytes()).hexdigest()
        assert wh.scalar("SELECT count(*) FROM context_case_read WHERE starts_with(locator, ?)",
                         [f"{wh.name_of(case.source)}#"]) == 0
        return list(wh.query("SELECT reason_code FROM rejection WHERE stage = 'context_cases' AND entity_id = ?",
                             [f"case_source:{sha}"])["reason_code"]) or [KEPT]
    path, _, place = case.locator.partition("#")
    reads = wh.query("SELECT case_id, reason_code FROM context_case_read WHERE locator = ?", [f"{wh.name_of(path)}#{place}"])
    return [code if isinstance(code, str) else KEPT for code in reads["reason_code"]]


def test_every_hostile_case_input_gets_one_outcome_and_a_rerun_adds_nothing(tmp_path):
    files = write_case_cases(tmp_path / "cases")
    returned = tmp_path / "returned"
    sheets = write_review_sheets(returned, "c-08", "c-01")
    config = write_config(tmp_path / "run", {}, context_canvas={"cases": [str(p) for p in files.files],
                                                                "returned_dir": str(returned)})
    first = materialize(config, "context_cases")
    assert first.success, failures(first)
    wh = warehouse_for(config)
    assert {c.name: _outcomes(wh, c) for c in files.cases} == {c.name: [c.expected] for c in files.cases}
    assert sorted(wh.query("SELECT case_id FROM context_case")["case_id"]) == files.kept_ids
    assert wh.scalar("SELECT count(*) FROM context_case_image") == len(files.kept_ids)
    assert wh.scalar("SELECT count(*) FROM item_quarantine") == 0
    latin = wh.scalar("SELECT detail FROM context_case_read WHERE reason_code = 'bad_encoding'")
    assert "line 3" in latin and "byte e9" in latin

    before = _snapshot(wh)
    second = materialize(config, "context_cases")
    assert second.success, failures(second)
    assert _snapshot(wh) == before
    assert step_summaries(wh, second.run_id)["context_cases"] == {"files_unchanged": len(files.files)}

    # A returned review sheet is read whole or not at all: the latin-1 line rejects its sheet, naming the row,
    # and the step says so (a bad sheet is never silently ignored); the good sheet is stored.
    review = materialize(config, "context_case_review")
    assert not review.success and "ana.csv: row 2" in " ".join(failures(review))
    status = {p.rsplit("/", 1)[1]: s for p, s in wh.query("SELECT path, status FROM context_review_sheet").itertuples(index=False)}
    assert status == sheets
    [detail] = wh.query("SELECT detail FROM rejection WHERE stage = 'context_case_review'"
                        " AND reason_code = 'malformed_case_review_sheet'")["detail"]
    assert "row 2" in detail and "byte e9" in detail
    assert list(wh.query("SELECT case_id FROM context_review")["case_id"]) == ["c-08"]
    again = materialize(config, "context_case_review")
    assert not again.success
    assert wh.scalar("SELECT count(*) FROM context_review") == 1
    assert wh.scalar("SELECT count(*) FROM rejection WHERE stage = 'context_case_review'") == 1


# --- property tests -------------------------------------------------------------------------------------------

_VALUE = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                      max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(_record("x")) + ["probe", "gold_text", "proposed_assessment"]), _VALUE,
                       max_size=4))
def test_random_mutations_of_a_case_record_never_raise(changes):
    result = case_from_record("f#record=0", {**_record("x"), **changes}, [], {})
    assert isinstance(result, (ContextCase, CaseRejection))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300), st.sampled_from([".csv", ".json"]))
def test_random_bytes_as_a_case_file_never_raise_anything_but_the_file_error(tmp_path, data, suffix):
    read_all_or_file_error(read_cases, tmp_path / f"c{suffix}", (ContextCase, CaseRejection), CaseFileError, data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.dictionaries(st.sampled_from(sorted(_record("x"))), _VALUE, max_size=3), max_size=4), st.integers(0, 40))
def test_json_case_files_cut_anywhere_keep_what_came_before(tmp_path, mutations, cut):
    text = json.dumps([{**_record(f"c{i}"), **m} for i, m in enumerate(mutations)], default=str)
    path = tmp_path / "c.json"
    path.write_text(text[:len(text) - cut], encoding="utf-8")
    results = read_all_or_file_error(read_cases, path, (ContextCase, CaseRejection), CaseFileError)
    assert [r.locator for r in results] == [f"c.json#record={i}" for i in range(len(results))]
