"""Hostile poem corpora and survey exports through the real poem-benchmark assets: one outcome per case, every
good record around a bad one kept, a second run that does no work and adds no rows; an exception injected into
the per-record (or per-survey-row) function is that record's ``internal_error``; random records never raise out
of the parsers."""

import hashlib
import json
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import assets.poetry.corpus as poetry_corpus
import assets.poetry.survey as poetry_survey
from assets.poetry.logic.survey_rows import parse_survey
from assets.poetry.logic.poems import Poem, PoemCorpusError, PoemRejection, parse_poem, read_poems
from assets.core.logic.sheets import read_sheet_file
from tests.poetry.test_assets import RATERS, _metadata, _ok, _run, _write_config
from tests.support.hostile.poetry import STAND_IN_MODELS, write_corpus_cases, write_survey_cases
from tests.support.hostile.records import KEPT, read_all_or_file_error
from tests.support.pool_harness import step_summaries
from warehouse.db import Warehouse

ASSETS = ["poem_corpus", "poem_illustrations", "recognizability_items", "poem_survey_responses"]
TABLES = ("entity", "used", "was_generated_by", "was_derived_from", "rejection", "input_file_state", "item_quarantine",
          "poem", "poem_source_read", "poem_illustration", "poem_phase1_item", "poem_survey_response",
          "poem_survey_bad_row", "poem_survey_exclusion", "poem_survey_file", "step_input_state")


def _snapshot(wh: Warehouse) -> dict[str, list]:
    with wh.transaction() as con:
        return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES}


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _corpus_outcomes(wh: Warehouse, case) -> list[str]:
    """The case's outcomes; the warehouse names corpus files relative to its root (the config's folder)."""
    rejections = dict(wh.query("SELECT entity_id, reason_code FROM rejection WHERE stage = 'poem_corpus'").itertuples(index=False))
    reads = wh.query("SELECT locator, reason_code FROM poem_source_read")
    source = wh.name_of(case.source)
    if case.locator is None:
        file_reads = reads[reads.locator.str.startswith(f"{source}#")]
        assert file_reads.empty, case
        rejected = rejections.get(f"poem_source:{_sha(case.source)}")
        assert wh.scalar("SELECT count(*) FROM input_file_state WHERE path = ?", [source]) == 1
        return [rejected] if rejected else [KEPT]
    place = case.locator.partition("#")[2]
    return [code or KEPT for code in reads[reads.locator == f"{source}#{place}"].reason_code]


def _survey_outcomes(wh: Warehouse, case) -> list[str]:
    bad = wh.query("SELECT survey_file, row_number, reason_code FROM poem_survey_bad_row")
    responses = wh.query("SELECT survey_file, row_number FROM poem_survey_response")
    if case.locator is None:
        mine = bad[bad.survey_file == str(case.source)]
        assert (responses.survey_file != str(case.source)).all(), case
        return list(mine.reason_code) or [KEPT]
    row = int(case.locator.rsplit("=", 1)[1])
    found = list(bad[(bad.survey_file == str(case.source)) & (bad.row_number == row)].reason_code)
    found += [KEPT] * int(((responses.survey_file == str(case.source)) & (responses.row_number == row)).sum())
    return found


def test_every_hostile_poem_and_survey_input_gets_one_outcome_and_a_rerun_adds_nothing(tmp_path):
    corpus = write_corpus_cases(tmp_path / "corpus")
    items = [f"{poem_id}@stand-in-1" for poem_id in sorted(corpus.good_poems)[:3]]
    survey = write_survey_cases(tmp_path / "survey", items)
    config = _write_config(tmp_path / "run", {"corpus": [str(p) for p in corpus.files], "stand_in_folder": str(corpus.paintings),
                                              "stand_in_models": STAND_IN_MODELS, "surveys": [str(p) for p in survey.files]})
    first = _run(config, ASSETS)
    _ok(first)
    wh = Warehouse(tmp_path / "run" / "warehouse.duckdb")
    got = {case.name: _corpus_outcomes(wh, case) for case in corpus.cases}
    got |= {case.name: _survey_outcomes(wh, case) for case in survey.cases}
    assert got == {case.name: [case.expected] for case in corpus.cases + survey.cases}
    assert sorted(wh.query("SELECT poem_id FROM poem")["poem_id"]) == sorted(corpus.good_poems)
    assert sorted(wh.query("SELECT annotator_id, item_id FROM poem_survey_response").itertuples(index=False, name=None)) == sorted(
        (RATERS.of(annotator), item) for annotator, item in survey.kept)
    assert wh.scalar("SELECT count(*) FROM item_quarantine") == 0
    latin = wh.scalar("SELECT detail FROM poem_survey_bad_row WHERE reason_code = 'bad_encoding'")
    assert "byte e9" in latin
    assert "malformed row(s)" in _metadata(first, "poem_survey_responses")["malformed_rows"]

    before = _snapshot(wh)
    second = _run(config, ASSETS)
    _ok(second)
    assert _snapshot(wh) == before
    assert step_summaries(wh, second.run_id)["poem_corpus"] == {"files_unchanged": len(corpus.files)}


def test_an_exception_on_one_poem_is_its_internal_error_quarantined_until_the_record_changes(tmp_path, monkeypatch):
    real = poetry_corpus.parse_poem
    calls: list[str] = []

    def exploding(raw, locator, seen, from_csv):
        calls.append(raw.get("poem_id", "?") if isinstance(raw, dict) else "?")
        if isinstance(raw, dict) and raw.get("title") == "Boom":
            raise ZeroDivisionError("injected")
        return real(raw, locator, seen, from_csv)

    monkeypatch.setattr(poetry_corpus, "parse_poem", exploding)
    corpus = tmp_path / "poems.csv"
    rows = ["poem_id,title,author,text", "p-1,One,A,x", "p-2,Boom,A,y", "p-3,Three,A,z"]
    corpus.write_text("\n".join(rows) + "\n", encoding="utf-8")
    config = _write_config(tmp_path / "run", {"corpus": [str(corpus)]})
    first = _run(config, ["poem_corpus"])
    _ok(first)
    wh = Warehouse(tmp_path / "run" / "warehouse.duckdb")
    assert sorted(wh.query("SELECT poem_id FROM poem")["poem_id"]) == ["p-1", "p-3"]
    [(code, detail)] = wh.query("SELECT reason_code, detail FROM rejection WHERE stage = 'poem_corpus'").itertuples(index=False)
    assert code == "internal_error"
    assert "../poems.csv#line=3" in detail and "ZeroDivisionError: injected" in detail and "exploding" in detail
    assert "| rejected: internal error | 1 |" in _metadata(first, "poem_corpus")["counts"]

    # Another record changes (the file is read again): the quarantined record is skipped, not retried.
    calls.clear()
    corpus.write_text("\n".join([*rows, "p-4,Four,A,w"]) + "\n", encoding="utf-8")
    second = _run(config, ["poem_corpus"])
    _ok(second)
    assert "p-2" not in calls and "| quarantined | 1 |" in _metadata(second, "poem_corpus")["counts"]
    assert wh.scalar("SELECT count(*) FROM rejection WHERE reason_code = 'internal_error'") == 1

    # The record itself changes: it is read again, and its internal_error and quarantine go.
    corpus.write_text("\n".join([rows[0], rows[1], "p-2,Two,A,y", rows[3], "p-4,Four,A,w"]) + "\n", encoding="utf-8")
    _ok(_run(config, ["poem_corpus"]))
    assert sorted(wh.query("SELECT poem_id FROM poem")["poem_id"]) == ["p-1", "p-2", "p-3", "p-4"]
    assert wh.scalar("SELECT count(*) FROM rejection WHERE stage = 'poem_corpus'") == 0
    assert wh.scalar("SELECT count(*) FROM item_quarantine") == 0


def test_an_exception_checking_one_survey_row_is_its_internal_error_and_the_other_rows_count(tmp_path, monkeypatch):
    real = poetry_survey.survey_row
    checked: list[int] = []

    def exploding(row, cells, answer_key, has_group, has_image, earlier_row):
        checked.append(row)
        if cells["annotator_id"] == "a06":
            raise ZeroDivisionError("injected")
        return real(row, cells, answer_key, has_group, has_image, earlier_row)

    monkeypatch.setattr(poetry_survey, "survey_row", exploding)
    corpus = write_corpus_cases(tmp_path / "corpus")
    survey = write_survey_cases(tmp_path / "survey", [f"{poem_id}@stand-in-1" for poem_id in sorted(corpus.good_poems)[:3]])
    export = survey.files[0]
    [boom] = [case for case in survey.cases if case.name == "survey good 2"]
    row = int(boom.locator.rsplit("=", 1)[1])
    poetry = {"corpus": [str(p) for p in corpus.files], "stand_in_folder": str(corpus.paintings),
              "stand_in_models": STAND_IN_MODELS, "surveys": [str(export)]}
    config = _write_config(tmp_path / "run", poetry)
    first = _run(config, ASSETS)
    _ok(first)
    wh = Warehouse(tmp_path / "run" / "warehouse.duckdb")
    [(code, detail)] = wh.query("SELECT reason_code, detail FROM rejection WHERE stage = 'poem_survey_row'").itertuples(index=False)
    assert code == "internal_error"
    assert f"{export}#row={row}" in detail and "ZeroDivisionError: injected" in detail and "exploding" in detail
    assert wh.scalar("SELECT locator FROM item_quarantine WHERE stage = 'poem_survey_row'") == f"{export}#row={row}"
    # Every other row has its one outcome: the good one is a response, the bad ones keep their reasons.
    others = [case for case in survey.cases if case.source == export and case is not boom]
    assert {case.name: _survey_outcomes(wh, case) for case in others} == {case.name: [case.expected] for case in others}
    assert _survey_outcomes(wh, boom) == []
    summary = step_summaries(wh, first.run_id)["poem_survey_responses"]
    assert summary["responses"] == 1 and summary["rejected:internal_error"] == 1

    # Unchanged inputs: nothing is read again and nothing is added.
    before = _snapshot(wh)
    checked.clear()
    _ok(_run(config, ["poem_survey_responses"]))
    assert checked == [] and _snapshot(wh) == before

    # Other settings change (the step runs again over the same export): the quarantined row is skipped, not retried.
    config = _write_config(tmp_path / "run", {**poetry, "qc": {"min_seconds": 10.0}})
    second = _run(config, ["poem_survey_responses"])
    _ok(second)
    assert row not in checked and checked and "| quarantined | 1 |" in _metadata(second, "poem_survey_responses")["counts"]
    assert wh.scalar("SELECT count(*) FROM rejection WHERE reason_code = 'internal_error'") == 1

    # The export changes: its rows are new items, the row is checked again, and the old internal_error goes.
    monkeypatch.setattr(poetry_survey, "survey_row", real)
    export.write_bytes(export.read_bytes() + b"\r\n")
    _ok(_run(config, ["poem_survey_responses"]))
    assert _survey_outcomes(wh, boom) == [KEPT]
    assert wh.scalar("SELECT count(*) FROM rejection WHERE reason_code = 'internal_error'") == 0
    assert wh.scalar("SELECT count(*) FROM item_quarantine") == 0


# --- property tests: random mutations of valid records never raise out of the parsers --------------------------

_VALUE = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                      max_leaves=8)
_GOOD = {"poem_id": "p-1", "title": "T", "author": "A", "text": "x", "themes": ["a"], "form": "f", "translation": "t"}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(sorted(_GOOD) + ["extra"]), _VALUE, max_size=4), st.booleans())
def test_random_mutations_of_a_poem_record_never_raise(changes, from_csv):
    result = parse_poem({**_GOOD, **changes}, "f#record=0", {}, from_csv)
    assert isinstance(result, (Poem, PoemRejection))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300), st.sampled_from([".csv", ".json"]))
def test_random_bytes_as_a_corpus_file_never_raise_anything_but_the_file_error(tmp_path, data, suffix):
    read_all_or_file_error(read_poems, tmp_path / f"c{suffix}", (Poem, PoemRejection), PoemCorpusError, data)


_CELL = st.text(alphabet=string.printable + "é字\x00", max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(_CELL, min_size=1, max_size=16), max_size=5), st.binary(max_size=40))
def test_random_survey_rows_never_raise_out_of_the_survey_parser(tmp_path, rows, tail):
    from assets.poetry.logic.survey_rows import SURVEY_COLUMNS, SurveyError

    path = tmp_path / "s.csv"
    text = "\n".join([",".join(SURVEY_COLUMNS), *(",".join(json.dumps(c) for c in row) for row in rows)])
    path.write_bytes(text.encode("utf-8", "replace") + b"\n" + tail)
    try:
        parsed = read_sheet_file(path, lambda stream, name: parse_survey(stream, name, {"i": "A"}), SurveyError,
                                 bad_line=lambda row, detail: None)
        assert all(row >= 1 for row, _, _ in parsed.problems)
    except SurveyError:
        pass
