import copy
import io
import json

import pytest

from assets.context_canvas.logic import case_records as context_cases
from assets.context_canvas.logic.case_records import (
    REASON_CODES,
    CaseError,
    CaseFileError,
    CaseRejection,
    ContextCase,
    ImageRights,
    Probe,
    cases_csv_text,
    iter_cases,
    read_cases,
    resolve_image,
)

RIGHTS = {"title": "Harbour at dusk", "creator": "", "provider": "City Museum", "url": "https://example.org/1",
          "license_note": "CC0-1.0", "redistribution": "Allowed"}
CASE = {
    "case_id": "ctx-001",
    "images": ["../images/a.png"],
    "scenario": "A ferry company wants a calm poster for night crossings.",
    "question": "Is this image suitable for the poster?",
    "options": [{"option_id": "A", "text": "Yes"}, {"option_id": "B", "text": "No"}],
    "gold": "b",
    "rationale": "The harbour is stormy.",
    "source_basis": "Museum catalogue entry.",
    "rights": [RIGHTS],
    "probe": {"model": "probe-model", "answer": "a", "note": "fooled by the colours"},
}
CSV_HEADER = ("case_id,images,scenario,question,options,gold,rationale,source_basis,"
              "title,creator,provider,url,license_note,redistribution,probe_model,probe_answer")


def _json(records, name="cases.json", wrap=False):
    text = json.dumps({"cases": records} if wrap else records)
    return list(iter_cases(io.StringIO(text), name))


def _one(record):
    [result] = _json([record])
    return result


def test_json_case_parses_with_canonical_ids_and_defaults():
    case = _one(CASE)
    assert isinstance(case, ContextCase)
    assert case.case_id == "ctx-001" and case.images == ("../images/a.png",)
    assert case.gold == "B" and case.gold_text == "No"  # gold matched case-insensitively, text taken from the option
    assert case.option_ids == ("A", "B") and case.is_binary and case.yes_option_id == "A"
    # creator left empty stays "unknown" (never inferred); redistribution normalised to lower case
    assert case.rights == (ImageRights("Harbour at dusk", "unknown", "City Museum", "https://example.org/1",
                                       "CC0-1.0", "allowed"),)
    assert case.probe == Probe("probe-model", "A", "fooled by the colours")
    assert case.proposed_assessment is None
    assert case.locator == "cases.json#record=0"


def test_options_as_mapping_and_single_image_string():
    record = dict(CASE, images="pool:item-7", options={"A": "Suitable", "B": "Not suitable", "C": "Only cropped"},
                  gold="C", gold_text="only  CROPPED", probe=None, proposed_assessment="The curator says yes.")
    case = _one(record)
    assert isinstance(case, ContextCase), case
    assert case.images == ("pool:item-7",) and not case.is_binary and case.yes_option_id is None
    assert case.gold_text == "Only cropped"  # a matching gold_text (space/case aside) is replaced by the option's own
    assert case.proposed_assessment == "The curator says yes."


def test_wrapped_object_skips_other_keys_before_and_after():
    text = ('{"about": {"nested": [1, {"cases": []}]}, "version": 3,\n "cases": '
            + json.dumps([CASE, dict(CASE, case_id="ctx-002")]) + ', "count": 12345}')
    results = list(iter_cases(io.StringIO(text), "w.json"))
    assert [r.case_id for r in results] == ["ctx-001", "ctx-002"]
    assert all(isinstance(r, ContextCase) for r in results)
    assert _json([], wrap=True) == [] and _json([]) == []


def test_streaming_across_tiny_chunks(monkeypatch):
    # 7-character chunks cut every record, string, number and key somewhere; the result must not change
    records = [dict(CASE, case_id=f"ctx-{i:03d}", rationale="r" * (i * 13 + 1)) for i in range(30)]
    text = json.dumps({"n": 123456789, "cases": records, "tail": [1.5, -2e3, True, None]}, indent=1)
    whole = list(iter_cases(io.StringIO(text), "c.json"))
    monkeypatch.setattr(context_cases, "_CHUNK", 7)
    cut = list(iter_cases(io.StringIO(text), "c.json"))
    assert [r.content() for r in cut] == [r.content() for r in whole]
    assert len(cut) == 30 and all(isinstance(r, ContextCase) for r in cut)


def _mutated(**changes):
    record = copy.deepcopy(CASE)
    for key, value in changes.items():
        if value is ...:
            record.pop(key)
        else:
            record[key] = value
    return record


@pytest.mark.parametrize(
    ("record", "code", "fragment"),
    [
        (_mutated(scenario=...), "missing_field", "scenario is missing or empty"),
        (_mutated(rationale="  "), "missing_field", "rationale is missing or empty"),
        (_mutated(question=7), "bad_field", "question must be text, not int"),
        (_mutated(case_id="ctx 1"), "bad_case_id", "case_id 'ctx 1'"),
        (_mutated(images=["/abs/a.png"]), "bad_image_ref", "absolute"),
        (_mutated(images=["..\\a.png"], rights=[RIGHTS]), "bad_image_ref", "backslashes"),
        (_mutated(images=["pool:"]), "bad_image_ref", "pool:<item id>"),
        (_mutated(images=["a.png", "a.png"], rights=[RIGHTS, RIGHTS]), "duplicate_image", "'a.png'"),
        (_mutated(options=[{"option_id": "A", "text": "Yes"}]), "option_count", "1 option(s)"),
        (_mutated(options=[{"option_id": x, "text": x} for x in "ABCD"]), "option_count", "4 option(s)"),
        (_mutated(options=[{"option_id": "A", "text": "Yes"}, {"option_id": "a", "text": "No"}]),
         "duplicate_option_id", "'a' appears twice"),
        (_mutated(options=[{"option_id": "A", "text": "Yes"}, {"option_id": "B", "text": "yes "}]),
         "duplicate_option_text", "options A and B have the same text"),
        (_mutated(options=[{"option_id": "A", "text": "Yes"}, {"option_id": "B"}]), "bad_option", "option B has no text"),
        (_mutated(gold="C"), "gold_not_option", "gold 'C' is not an option (A, B)"),
        (_mutated(gold_text="Yes"), "gold_text_mismatch", "not the text of option B ('No')"),
        (_mutated(images=["a.png", "b.png"]), "rights_count", "1 rights entry for 2 image(s)"),
        (_mutated(rights=[dict(RIGHTS, url="")]), "missing_rights_field", "rights entry 1: url is missing"),
        (_mutated(rights=[dict(RIGHTS, redistribution="public")]), "bad_redistribution", "'public' is not one of"),
        (_mutated(probe={"model": "m"}), "bad_probe", "probe answer is missing"),
        (_mutated(probe={"model": "m", "answer": "Maybe"}), "probe_not_option", "probe answer 'Maybe' is not an option"),
    ],
)
def test_each_problem_rejects_with_its_reason_and_locator(record, code, fragment):
    result = _one(record)
    assert isinstance(result, CaseRejection)
    assert result.reason_code == code and code in REASON_CODES
    assert result.locator == "cases.json#record=0"
    assert fragment in result.message, result.message


def test_rejection_lists_every_problem_and_the_rest_still_read():
    bad = _mutated(gold="Z", rights=[dict(RIGHTS, redistribution="?")], scenario="")
    results = _json([CASE, bad, 5, dict(CASE, case_id="ctx-003")])
    assert [type(r).__name__ for r in results] == ["ContextCase", "CaseRejection", "CaseRejection", "ContextCase"]
    rejection = results[1]
    assert rejection.case_id == "ctx-001" and rejection.reason_code == "missing_field"
    assert [code for code, _ in rejection.problems] == ["missing_field", "gold_not_option", "bad_redistribution"]
    assert rejection.message == f"cases.json#record=1 (case ctx-001): {rejection.detail}"
    assert rejection.detail.startswith("scenario is missing or empty; gold 'Z' is not an option (A, B); ")
    assert results[2].reason_code == "not_an_object" and results[2].locator == "cases.json#record=2"


def test_duplicate_case_id_keeps_the_first_and_names_it():
    results = _json([CASE, dict(CASE, question="Another question?")])
    assert isinstance(results[0], ContextCase)
    assert results[1].reason_code == "duplicate_case_id"
    assert "already read at cases.json#record=0" in results[1].message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "the file is empty"),
        ('"cases"', "expected a list of cases"),
        ('{"items": []}', "no 'cases' list"),
        ('{"cases": {"a": 1}}', "'cases' must be a list"),
        ('[] trailing', "unexpected text after the cases"),
    ],
)
def test_broken_files_raise_naming_the_file(text, fragment):
    with pytest.raises(CaseFileError, match=fragment) as info:
        list(iter_cases(io.StringIO(text), "bad.json"))
    assert str(info.value).startswith("case file bad.json: ")
    assert info.value.reason_code == "malformed_case_file" and isinstance(info.value, CaseError)


def test_syntax_error_mid_file_keeps_the_earlier_records_and_rejects_the_rest_at_the_break():
    text = "[\n" + json.dumps(CASE) + ",\n" + '{"case_id": "ctx-2", "scenario": oops}\n]'
    first, rest = list(iter_cases(io.StringIO(text), "cases.json"))
    assert first.case_id == "ctx-001"
    assert (rest.locator, rest.reason_code) == ("cases.json#record=1", "invalid_json")
    assert "record 1 does not parse: Expecting value at line 3" in rest.message
    assert "everything after it is not read" in rest.message
    _, missing_comma = list(iter_cases(io.StringIO('[{"case_id": "x"} {"case_id": "y"}]'), "c.json"))
    assert "',' or ']' after record 0" in missing_comma.message


def test_a_byte_that_is_not_utf8_mid_file_rejects_the_rest(tmp_path):
    path = tmp_path / "cases.json"
    path.write_bytes(("[" + json.dumps(CASE) + ', {"case_id": "').encode() + b"\xe9" + b'"}]')
    first, rest = list(read_cases(path))
    assert first.case_id == "ctx-001" and rest.reason_code == "bad_encoding"


def test_csv_cases_split_per_image_and_name_rows(tmp_path):
    rows = [
        CSV_HEADER,
        'ctx-1,a.png;pool:p-9,"Scenario, with comma",Which one?,A=Image 1|B=Image 2,B,because,notes,'
        "T1;T2,,P1;P2,u1;u2,CC0;CC-BY,allowed;restricted,,",
        "",  # an empty line still counts as a line
        "ctx-2,b.png,s,q,A=Yes|BNo,A,r,sb,T,,P,u,L,allowed,,",
        "ctx-3,b.png;c.png,s,q,A=Yes|B=No,A,r,sb,T,,P,u,L,allowed,,",
        "ctx-4,b.png,s,q,A=Yes|B=No,A,r,sb,T,Jo,P,u,L,allowed,m,C",
        "ctx-5,b.png,s,q,A=Yes|B=No,A,r,sb,T,Jo,P,u,L,allowed,,,surplus",
        "ctx-1,d.png,s,q,A=Yes|B=No,A,r,sb,T,,P,u,L,unknown,,",
    ]
    path = tmp_path / "cases.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    results = list(read_cases(path))
    by_row = {r.locator: r for r in results}
    first = by_row["cases.csv#line=2"]
    assert isinstance(first, ContextCase)
    assert first.images == ("a.png", "pool:p-9") and first.scenario == "Scenario, with comma"
    assert [(o.option_id, o.text) for o in first.options] == [("A", "Image 1"), ("B", "Image 2")]
    assert [r.creator for r in first.rights] == ["unknown", "unknown"]  # an empty creator cell: all unknown
    assert [(r.title, r.redistribution) for r in first.rights] == [("T1", "allowed"), ("T2", "restricted")]
    assert by_row["cases.csv#line=4"].reason_code == "bad_option"
    assert "'BNo' is not written as id=text" in by_row["cases.csv#line=4"].message
    assert by_row["cases.csv#line=5"].reason_code == "rights_count"
    assert "2 image(s) but title has 1 part(s)" in by_row["cases.csv#line=5"].message
    assert by_row["cases.csv#line=6"].reason_code == "probe_not_option"
    assert by_row["cases.csv#line=7"].reason_code == "ragged_row"
    assert by_row["cases.csv#line=8"].reason_code == "duplicate_case_id"
    assert "cases.csv#line=2" in by_row["cases.csv#line=8"].message


def test_csv_missing_column_and_unknown_suffix(tmp_path):
    path = tmp_path / "cases.csv"
    path.write_text("case_id,images\nx,a.png\n", encoding="utf-8")
    with pytest.raises(CaseFileError, match=r"line 1: missing column\(s\) scenario, question"):
        list(read_cases(path))
    other = tmp_path / "cases.txt"
    other.write_text("", encoding="utf-8")
    with pytest.raises(CaseFileError, match="use .json or .csv"):
        list(read_cases(other))


def test_csv_round_trip_through_cases_csv_text(tmp_path):
    original = [_one(CASE), _one(_mutated(case_id="ctx-9", images=["x.png", "pool:y"], rights=[RIGHTS, RIGHTS],
                                          probe=None, proposed_assessment="Curator: fine."))]
    path = tmp_path / "cases.csv"
    path.write_text(cases_csv_text(original), encoding="utf-8")
    again = list(read_cases(path))
    assert [c.content() for c in again] == [c.content() for c in original]
    assert [c.evaluation_id for c in again] == [c.evaluation_id for c in original]
    with pytest.raises(ValueError, match="needs the JSON form"):
        cases_csv_text([_one(_mutated(rights=[dict(RIGHTS, title="A; B")]))])


def test_neutral_and_evidence_descriptions_are_optional_trimmed_text(tmp_path):
    described = _one(_mutated(neutral_description="  A harbour at dusk, boats moored.  ",
                              evidence_description="A harbour at dusk; the sea is whipped into white crests."))
    assert isinstance(described, ContextCase), described
    assert described.neutral_description == "A harbour at dusk, boats moored."
    assert described.evidence_description == "A harbour at dusk; the sea is whipped into white crests."
    # stored with the case, but never part of what the evaluation id hashes (the default model input)
    assert described.content()["neutral_description"] == "A harbour at dusk, boats moored."
    assert described.evaluation_id == _one(CASE).evaluation_id and described.case_key != _one(CASE).case_key
    # a case without them is valid and keeps the content (so the key) it had before descriptions existed
    plain = _one(_mutated(neutral_description="   ", evidence_description=None))
    assert plain.neutral_description is None and plain.evidence_description is None
    assert "neutral_description" not in plain.content() and plain.case_key == _one(CASE).case_key
    # the CSV form carries them as plain cells (a ';' or '|' is fine there: the cells are not split)
    with_marks = _one(_mutated(case_id="ctx-002", neutral_description="Boats; a pier | a lamp."))
    plain = _one(_mutated(case_id="ctx-003"))
    path = tmp_path / "cases.csv"
    path.write_text(cases_csv_text([described, with_marks, plain]), encoding="utf-8")
    assert [c.content() for c in read_cases(path)] == [c.content() for c in (described, with_marks, plain)]


@pytest.mark.parametrize("changes, code, text", [
    ({"neutral_description": 7}, "bad_field", "neutral_description must be text, not int"),
    ({"evidence_description": "x" * 4001}, "field_too_long", "evidence_description has 4001 characters; at most 4000"),
])
def test_bad_descriptions_are_the_records_rejection(changes, code, text):
    result = _one(_mutated(**changes))
    assert isinstance(result, CaseRejection) and result.reason_code == code and code in REASON_CODES
    assert text in result.detail
    assert isinstance(_one(_mutated(evidence_description="x" * 4000)), ContextCase)


def test_ids_model_input_and_answer_key():
    case = _one(CASE)
    assert case.evaluation_id.startswith("ctx-") and len(case.evaluation_id) == 24
    assert case.case_key == _one(CASE).case_key and len(case.case_key) == 64
    # an answer-key edit (rationale, gold) changes the content digest but not the evaluation id
    edited = _one(_mutated(rationale="A clearer rationale.", gold="A"))
    assert edited.case_key != case.case_key and edited.evaluation_id == case.evaluation_id
    # what the model sees changes the evaluation id; where the record was read does not
    assert _one(_mutated(question="Is it right for the poster?")).evaluation_id != case.evaluation_id
    assert _json([_mutated(case_id="ctx-000"), CASE])[1].evaluation_id == case.evaluation_id
    model_input = case.model_input()
    assert set(model_input) == {"evaluation_id", "images", "scenario", "question", "proposed_assessment", "options"}
    assert "probe" not in json.dumps(model_input) and "stormy" not in json.dumps(model_input)
    key = case.answer_key()
    assert key["gold"] == "B" and key["probe"]["answer"] == "A" and key["evaluation_id"] == case.evaluation_id


def test_resolve_image_and_answers():
    assert resolve_image("pool:item-3", "/data/cases") == ("pool", "item-3")
    assert resolve_image("../images/a.png", "/data/cases") == ("file", "/data/cases/../images/a.png")
    case = _one(CASE)
    assert case.resolve_answer(" b ") == "B" and case.resolve_answer("Maybe") is None and case.resolve_answer(None) is None
    assert case.option_text("A") == "Yes"
    with pytest.raises(KeyError, match="no option 'C'"):
        case.option_text("C")
