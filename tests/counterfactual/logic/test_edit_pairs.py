import pytest

from assets.counterfactual.logic.edit_pairs import (
    APPROVED,
    CHECK_COLUMNS,
    CORRECT,
    KIND,
    PENDING,
    PROMPT_VERSION,
    REJECTED,
    REVERSE,
    UNCHANGED,
    CheckDecision,
    CheckRowError,
    CheckTransitionError,
    CounterfactualRecord,
    CounterfactualSpec,
    ExportMixError,
    SourceRef,
    SpecError,
    counterfactual_id,
    directional_update,
    edit_prompt,
    edit_record,
    guard_natural,
    pair_figures,
    planned_edit,
    check_decision,
    check_rows,
    spec_of_row,
    spec_problems,
    source_ref,
    spec_rows,
    transition,
    validate_spec,
)
from warehouse.ids import sha256_hex

HEADER = "source_id,decisive_cue,instruction,original_label,intended_label"
SPEC = CounterfactualSpec(
    source_id="ctx-0018",
    decisive_cue="the distressing letter in the governess's hand",
    instruction="Replace the letter with an open lesson book and have the children look at her",
    original_label="No",
    intended_label="Yes",
)
SOURCE_SHA = sha256_hex(b"source image bytes")
OUTPUT_SHA = sha256_hex(b"edited image bytes")


def _record(**changes):
    fields = {
        "source_sha256": SOURCE_SHA,
        "output_sha256": OUTPUT_SHA,
        "output_mime": "image/png",
        "provider": "openai",
        "model": "image-edit-model",
        "provider_model": None,
        "seed": 5,
    }
    fields.update(changes)
    return edit_record(SPEC, **fields)


# --- spec validation ------------------------------------------------------------------------------------


def test_valid_spec_is_normalised():
    spec = CounterfactualSpec("  ctx-1 ", " the  red\nlantern ", "make it a  paper lamp", "no", "YES")
    assert spec_problems(spec) == []
    assert validate_spec(spec) == CounterfactualSpec("ctx-1", "the red lantern", "make it a paper lamp", "No", "Yes")


def test_invalid_spec_names_every_bad_field():
    spec = CounterfactualSpec("", " ", "", "Maybe", "Yes")
    with pytest.raises(SpecError) as caught:
        validate_spec(spec)
    fields = [name for name, _ in caught.value.problems]
    assert fields == ["source_id", "decisive_cue", "instruction", "original_label"]
    assert caught.value.reason_code == "invalid_counterfactual_spec"
    assert "'Maybe' is not one of No, Yes" in str(caught.value)


def test_labels_must_differ_and_come_from_the_given_set():
    same = CounterfactualSpec("s", "cue", "do it", "Yes", "yes")
    assert spec_problems(same) == [("intended_label", "equals original_label (Yes); a counterfactual edit must change the answer")]
    graded = CounterfactualSpec("s", "cue", "do it", "unsuitable", "suitable")
    assert spec_problems(graded) != []
    assert validate_spec(graded, labels=("suitable", "unsuitable")).intended_label == "suitable"
    with pytest.raises(ValueError, match="at least two distinct"):
        spec_problems(graded, labels=("yes", "YES"))


def test_overlong_cue_is_refused():
    spec = CounterfactualSpec("s", "x" * 301, "do it", "No", "Yes")
    assert spec_problems(spec) == [("decisive_cue", "has 301 characters; at most 300 (name one cue, briefly)")]


# --- the prompt -----------------------------------------------------------------------------------------


def test_prompt_names_the_cue_and_the_change_and_keeps_everything_else():
    prompt = edit_prompt(SPEC)
    lines = prompt.split("\n")
    assert lines[1] == "The element to change: the distressing letter in the governess's hand."
    assert lines[2] == "The change: Replace the letter with an open lesson book and have the children look at her."
    for kept in ("composition", "viewpoint", "rendering style", "colour palette", "identity", "re-frame"):
        assert kept in lines[3]
    # The verdict and the labels are not the edit model's business.
    assert "Yes" not in prompt and "No " not in prompt and "suitable" not in prompt
    assert edit_prompt(validate_spec(CounterfactualSpec("s", "cue", "Do it!", "No", "Yes"))).count("Do it!\n") == 1


def test_prompt_refuses_an_empty_cue():
    with pytest.raises(SpecError, match="decisive_cue"):
        edit_prompt(CounterfactualSpec("s", " ", "do it", "No", "Yes"))


# --- the record -----------------------------------------------------------------------------------------


def test_record_is_synthetic_pending_and_derived_from_its_source():
    record = _record()
    assert record.synthetic is True and record.kind == KIND == "counterfactual_edit"
    assert record.manual_check == PENDING and record.checked_by is None and record.history == ()
    assert record.source_id == "ctx-0018" and record.source_sha256 == SOURCE_SHA
    assert (record.original_label, record.intended_label) == ("No", "Yes")
    assert record.prompt == edit_prompt(SPEC) and record.prompt_version == PROMPT_VERSION
    assert record.spec == SPEC
    row = record.as_row()
    assert row["synthetic"] is True and row["kind"] == KIND and row["history"] == [] and row["seed"] == 5
    with pytest.raises(TypeError):
        CounterfactualRecord(**{**row, "history": ()})  # synthetic and kind cannot be passed in


def test_record_id_is_content_derived():
    record = _record()
    assert record.record_id == counterfactual_id(SOURCE_SHA, SPEC, "image-edit-model", OUTPUT_SHA)
    assert record.record_id.startswith("counterfactual_edit:") and len(record.record_id) == len("counterfactual_edit:") + 64
    assert _record(seed=99, provider_model="reported").record_id == record.record_id  # not part of the content
    regenerated = _record(output_sha256=sha256_hex(b"second try"))
    other_model = _record(model="another-model")
    other_spec = edit_record(
        CounterfactualSpec(SPEC.source_id, SPEC.decisive_cue, "Replace the letter with a toy", "No", "Yes"),
        source_sha256=SOURCE_SHA, output_sha256=OUTPUT_SHA, output_mime="image/png", provider="openai", model="image-edit-model",
    )
    assert len({record.record_id, regenerated.record_id, other_model.record_id, other_spec.record_id}) == 4


def test_record_refuses_bad_hashes_an_unchanged_output_and_bad_specs():
    with pytest.raises(SpecError) as caught:
        _record(source_sha256="ABC", output_mime="text/plain", model=" ")
    assert [name for name, _ in caught.value.problems] == ["source_sha256", "output_mime", "model"]
    with pytest.raises(SpecError, match="returned the source unchanged"):
        _record(output_sha256=SOURCE_SHA)
    with pytest.raises(SpecError, match="intended_label"):
        edit_record(
            CounterfactualSpec("s", "cue", "do it", "No", "No"),
            source_sha256=SOURCE_SHA, output_sha256=OUTPUT_SHA, output_mime="image/png", provider="openai", model="m",
        )


# --- manual check ---------------------------------------------------------------------------------------


def test_pending_to_approved_then_rejected_keeps_history():
    approved = transition(_record(), APPROVED, reviewer=" ana ")
    assert approved.manual_check == APPROVED and approved.checked_by == "ana" and approved.check_note is None
    rejected = transition(approved, REJECTED, reviewer="ben", note="the child's face changed too")
    assert rejected.manual_check == REJECTED and rejected.check_note == "the child's face changed too"
    assert [(e.from_state, e.to_state, e.reviewer) for e in rejected.history] == [(PENDING, APPROVED, "ana"), (APPROVED, REJECTED, "ben")]
    assert rejected.record_id == _record().record_id  # the check never changes what the record is
    assert rejected.as_row()["history"][1] == {"from_state": APPROVED, "to_state": REJECTED, "reviewer": "ben",
                                               "note": "the child's face changed too"}


def test_forbidden_transitions():
    rejected = transition(_record(), REJECTED, reviewer="ana", note="second cue changed")
    with pytest.raises(CheckTransitionError, match="from rejected to approved \\(allowed: none \\(final\\)\\)"):
        transition(rejected, APPROVED, reviewer="ben")
    with pytest.raises(CheckTransitionError, match="from rejected to pending"):
        transition(rejected, PENDING, reviewer="ben")
    approved = transition(_record(), APPROVED, reviewer="ana")
    with pytest.raises(CheckTransitionError, match="from approved to pending \\(allowed: rejected\\)"):
        transition(approved, PENDING, reviewer="ben")
    with pytest.raises(CheckTransitionError, match="unknown manual_check state 'done'"):
        transition(_record(), "done", reviewer="ana")
    with pytest.raises(CheckTransitionError, match="reviewer"):
        transition(_record(), APPROVED, reviewer="  ")
    with pytest.raises(CheckTransitionError, match="rejection needs a note"):
        transition(_record(), REJECTED, reviewer="ana")
    assert CheckTransitionError("x").reason_code == "invalid_manual_check_transition"


def test_same_state_is_a_no_op():
    approved = transition(_record(), APPROVED, reviewer="ana")
    assert transition(approved, APPROVED, reviewer="ben") is approved
    assert transition(_record(), PENDING, reviewer="") == _record()


# --- exports --------------------------------------------------------------------------------------------


def test_guard_natural_passes_natural_rows_and_stops_at_a_synthetic_one():
    natural = [{"id": "img:1", "synthetic": False}, {"id": "img:2"}]
    assert list(guard_natural(natural)) == natural
    mixed = iter([*natural, _record().as_row(), {"id": "img:3"}])
    guarded = guard_natural(mixed)
    assert next(guarded)["id"] == "img:1" and next(guarded)["id"] == "img:2"  # streamed, one row at a time
    with pytest.raises(ExportMixError, match="row 3 .*counterfactual_edit:"):
        next(guarded)
    with pytest.raises(ExportMixError, match="row 1 \\(id='x'\\)"):
        list(guard_natural([{"id": "x", "kind": KIND, "synthetic": False}]))


# --- pair figures ---------------------------------------------------------------------------------------


def test_directional_update():
    assert directional_update(SPEC, "No", "Yes") == CORRECT
    assert directional_update(SPEC, " yes", "no ") == REVERSE
    assert directional_update(SPEC, "No", "No") == UNCHANGED
    assert directional_update(SPEC, "Yes", "Yes") == UNCHANGED
    assert directional_update(SPEC, "", "Yes") == UNCHANGED  # no answer on the source is not a correct update


def test_pair_figures_reproduce_the_papers_gpt_row():
    # AesCanvas Table S7, GPT-5.2 on 36 pairs: Orig. 72.22, Edit 58.33, Pair 36.11, C/R 13/2, NCU 30.56. Those
    # figures fix the mix: 13 both right, 2 reversed, 13 right only on the source (26 - 13), 8 right only on
    # the edit (21 - 13).
    answers = [(SPEC, "No", "Yes")] * 13 + [(SPEC, "Yes", "No")] * 2 + [(SPEC, "No", "No")] * 13 + [(SPEC, "Yes", "Yes")] * 8
    figures = pair_figures(iter(answers))
    assert figures.pairs == 36 and (figures.correct, figures.reverse) == (13, 2)
    assert round(figures.original_accuracy, 2) == 72.22
    assert round(figures.edited_accuracy, 2) == 58.33
    assert round(figures.pair_accuracy, 2) == 36.11
    assert round(figures.net_correct_update, 2) == 30.56
    with pytest.raises(ValueError, match="at least one pair"):
        pair_figures([])


# --- the sheets, row by row ----------------------------------------------------------------------------


def _sheet(tmp_path, text: str | bytes, name="sheet.csv"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def _outcomes(rows, decide):
    """line → the row's cells decided by ``decide``, or (reason, detail) of its problem."""
    out = {}
    for row in rows:
        if row.problem:
            out[row.line] = (row.problem[0], row.problem[1], row.file_level)
            continue
        try:
            out[row.line] = decide(row)
        except (SpecError, CheckRowError) as exc:
            out[row.line] = (exc.reason_code, str(exc), False)
    return out


def test_spec_rows_read_ignores_extra_columns_and_blank_lines(tmp_path):
    path = _sheet(tmp_path,
                  "\ufeffpair,source_id,decisive_cue,instruction,original_label,intended_label\r\n"
                  'CF01,ctx-1,"wafuku and tea props","Swap for hanfu, a Chinese tea set and mooncakes",no,yes\r\n'
                  "\r\n"
                  "CF02,ctx-2,the nettle,give the squirrel a flower,No,Yes\r\n")
    specs = [spec_of_row(row.cells) for row in spec_rows(path)]
    assert specs == [
        CounterfactualSpec("ctx-1", "wafuku and tea props", "Swap for hanfu, a Chinese tea set and mooncakes", "No", "Yes"),
        CounterfactualSpec("ctx-2", "the nettle", "give the squirrel a flower", "No", "Yes"),
    ]


def test_every_bad_spec_row_is_its_own_outcome_and_the_good_rows_are_read(tmp_path):
    path = _sheet(tmp_path, (
        HEADER + "\n"
        "ctx-1,the letter,swap it for a book,No,Yes\n"  # line 2: fine
        ",the letter,swap it,No,Yes\n"  # line 3: no source
        "\n"  # line 4: blank, skipped
        "ctx-3,,swap it,No,Maybe\n"  # line 5: no cue, bad label
        "ctx-4,cue,do it,Yes,Yes\n"  # line 6: same labels
        "ctx-1,The letter,Swap it for a book,No,Yes\n"  # line 7: repeats line 2
        "ctx-5,cue,do it,No,Yes,extra\n"  # line 8: too many cells
    ).encode() + "ctx-6,caf\xe9 sign,swap it,No,Yes\n".encode("latin-1") + b"ctx-7,cue,do it,No,Yes\n")  # 9 latin-1, 10 fine
    got = _outcomes(spec_rows(path), lambda row: spec_of_row(row.cells))
    assert got[2] == CounterfactualSpec("ctx-1", "the letter", "swap it for a book", "No", "Yes")
    assert got[10].source_id == "ctx-7"
    reasons = {line: value[0] for line, value in got.items() if isinstance(value, tuple)}
    assert reasons == {3: "invalid_counterfactual_spec", 5: "invalid_counterfactual_spec", 6: "invalid_counterfactual_spec",
                       7: "duplicate_id", 8: "ragged_row", 9: "bad_encoding"}
    assert "source_id: is empty" in got[3][1]
    assert "decisive_cue: is empty" in got[5][1] and "intended_label: 'Maybe' is not one of No, Yes" in got[5][1]
    assert "equals original_label (Yes)" in got[6][1]
    assert got[7][1] == "line 7: repeats line 2; the first wins"
    assert got[9][1].startswith("line 9: byte e9")


def test_spec_sheet_header_problems_are_the_whole_files(tmp_path):
    [missing] = spec_rows(_sheet(tmp_path, "source_id,decisive_cue,instruction,original_label\nctx,cue,do,No\n"))
    assert missing.file_level and missing.problem[0] == "bad_header" and "missing column(s) intended_label" in missing.problem[1]
    [empty] = spec_rows(_sheet(tmp_path, "", name="empty.csv"))
    assert empty.file_level and empty.problem[0] == "empty_file"
    assert list(spec_rows(_sheet(tmp_path, HEADER + "\n", name="header.csv"))) == []


def test_a_source_is_a_pool_item_or_one_image_of_a_case():
    assert source_ref(" pool_item:9f3a ") == SourceRef(pool_item_id="pool_item:9f3a")
    assert source_ref("ctx-s04#1") == SourceRef(case_id="ctx-s04", position=1)
    assert source_ref("ctx-s01") == source_ref("ctx-s01#0") == source_ref("ctx-s01#00") == SourceRef(case_id="ctx-s01")
    # one spelling each, so the same image is one source in ids and duplicate checks
    assert [source_ref(s).source_id for s in ("ctx-s01#0", "ctx-s04#01", "pool_item:9f3a")] == [
        "ctx-s01", "ctx-s04#1", "pool_item:9f3a"]
    assert validate_spec(CounterfactualSpec("ctx-s01#0", "cue", "do it", "No", "Yes")).source_id == "ctx-s01"
    for bad in ("ctx s01", "ctx-s01#x", "ctx-s01#-1", "#2"):
        with pytest.raises(SpecError, match="neither a pool item id"):
            source_ref(bad)
        assert [name for name, _ in spec_problems(CounterfactualSpec(bad, "cue", "do it", "No", "Yes"))] == ["source_id"]


def test_a_spec_row_may_name_an_edit_made_elsewhere():
    cells = {"source_id": "ctx-s04#1", "decisive_cue": "the meadow", "instruction": "make it snow", "original_label": "no",
             "intended_label": "yes"}
    plan = planned_edit(cells)
    assert plan.spec == CounterfactualSpec("ctx-s04#1", "the meadow", "make it snow", "No", "Yes")
    assert plan.source == SourceRef(case_id="ctx-s04", position=1) and plan.edited_image is None
    assert planned_edit({**cells, "edited_image": ""}).edited_image is None
    assert planned_edit({**cells, "edited_image": "../edits/s04 snow.png"}).edited_image == "../edits/s04 snow.png"
    for bad, text in (("/srv/edits/a.png", "is absolute or a URL"), ("C:/edits/a.png", "is absolute or a URL"),
                      ("https://example.org/a.png", "is absolute or a URL"), ("edits\\a.png", "uses backslashes")):
        with pytest.raises(SpecError) as caught:
            planned_edit({**cells, "edited_image": bad, "intended_label": "No"})
        # every bad field at once: the label and the path
        assert [name for name, _ in caught.value.problems] == ["intended_label", "edited_image"]
        assert text in str(caught.value)


def test_the_record_of_a_case_edit_says_which_case_image_and_which_supplied_file():
    spec = CounterfactualSpec("ctx-s04#1", "the meadow", "make it snow", "No", "Yes")
    record = edit_record(spec, source_sha256=SOURCE_SHA, output_sha256=OUTPUT_SHA, output_mime="image/jpeg",
                         provider="supplied", model="file", supplied_file="data/edits/s04.jpg")
    assert (record.case_id, record.image_position, record.supplied_file) == ("ctx-s04", 1, "data/edits/s04.jpg")
    assert record.record_id == counterfactual_id(SOURCE_SHA, spec, "file", OUTPUT_SHA)
    row = record.as_row()
    assert (row["case_id"], row["image_position"], row["supplied_file"]) == ("ctx-s04", 1, "data/edits/s04.jpg")
    pool = edit_record(CounterfactualSpec("pool_item:9f3a", "cue", "do it", "No", "Yes"), source_sha256=SOURCE_SHA,
                       output_sha256=OUTPUT_SHA, output_mime="image/png", provider="openai", model="m")
    assert (pool.case_id, pool.image_position, pool.supplied_file) == (None, None, None)


def test_one_case_image_spelt_two_ways_is_one_spec(tmp_path):
    path = _sheet(tmp_path, HEADER + "\nctx-1,the letter,swap it,No,Yes\nctx-1#0,The letter,Swap it,No,Yes\n"
                                     "ctx-1#1,the letter,swap it,No,Yes\n")
    got = _outcomes(spec_rows(path), lambda row: spec_of_row(row.cells))
    assert got[3] == ("duplicate_id", "line 3: repeats line 2; the first wins", False)
    assert got[4].source_id == "ctx-1#1"


# --- the check sheet ------------------------------------------------------------------------------------

CHECK_HEADER = ",".join(CHECK_COLUMNS)
ID_A = _record().record_id
ID_B = _record(output_sha256=sha256_hex(b"second try")).record_id
ID_C = _record(model="another-model").record_id


def test_check_rows_read_decisions_spellings_and_skip_unchecked_rows(tmp_path):
    path = _sheet(tmp_path,
                  "\ufeffrecord_id,source,decision,reviewer,note\n"
                  f"{ID_A},ctx-0018,Approved,  ana ,\n"                                   # line 2
                  "\n"                                                                     # line 3: empty line
                  f"{ID_B},ctx-0018,REJECT,ben,\"the child's face\nchanged too\"\n"        # line 4 (two physical lines)
                  f"{ID_C},ctx-0018,,ana,\n"                                               # line 6: not checked yet
                  f"counterfactual_edit:{'d' * 64},ctx-9,approve,cy,looks right\n")        # line 7
    assert [check_decision(row.line, row.cells) for row in check_rows(path)] == [
        CheckDecision(2, ID_A, APPROVED, "ana", ""),
        CheckDecision(4, ID_B, REJECTED, "ben", "the child's face changed too"),   # whitespace collapsed
        CheckDecision(7, f"counterfactual_edit:{'d' * 64}", APPROVED, "cy", "looks right"),
    ]


def test_check_decisions_drive_transition(tmp_path):
    records = {r.record_id: r for r in (_record(), _record(output_sha256=sha256_hex(b"second try")))}
    path = _sheet(tmp_path, f"{CHECK_HEADER}\n{ID_A},rejected,ana,sky edge smeared\n{ID_B},approved,ben,\n")
    for check in (check_decision(row.line, row.cells) for row in check_rows(path)):
        records[check.record_id] = transition(records[check.record_id], check.decision, reviewer=check.reviewer, note=check.note)
    assert records[ID_A].manual_check == REJECTED and records[ID_A].check_note == "sky edge smeared"
    assert records[ID_B].manual_check == APPROVED and records[ID_B].checked_by == "ben"


def test_every_bad_check_row_is_its_own_outcome(tmp_path):
    path = _sheet(tmp_path,
                  CHECK_HEADER + "\n"
                  f"{ID_A},approved,ana,\n"                      # line 2: fine
                  f"{ID_B},maybe,ana,\n"                         # line 3: unknown decision
                  f"{ID_C},approved,,\n"                         # line 4: no reviewer
                  "\n"                                           # line 5: blank, skipped
                  f"{ID_C}x,rejected,ben,\n"                     # line 6: rejection without a note
                  ",approved,ben,\n"                             # line 7: no record id
                  "ctx-0018,pending,,\n"                         # line 8: a source id, not an edit id; pending; no reviewer
                  f"{ID_A},rejected,ben,face changed\n"          # line 9: ID_A again
                  f"{ID_B}y,rejected,ben,face,changed\n"         # line 10: unquoted comma in the note
                  ",,,note without a decision\n")                # line 11: a note is not a blank row
    got = _outcomes(check_rows(path), lambda row: check_decision(row.line, row.cells))
    assert got[2] == CheckDecision(2, ID_A, APPROVED, "ana", "")
    text = {line: value[1] for line, value in got.items() if isinstance(value, tuple)}
    assert {line: value[0] for line, value in got.items() if isinstance(value, tuple)} == {
        3: "invalid_check", 4: "invalid_check", 6: "invalid_check", 7: "invalid_check", 8: "invalid_check",
        9: "duplicate_id", 10: "ragged_row", 11: "invalid_check"}
    assert text[3] == "decision 'maybe' is not approved or rejected (approve/reject also accepted)"
    assert text[4] == "reviewer is empty"
    assert text[6] == "a rejection needs a note saying what is wrong with the edit"
    assert text[7] == "record_id is empty"
    assert text[8] == (
        "record_id 'ctx-0018' is not a counterfactual edit id (counterfactual_edit:...); "
        "decision 'pending' is not approved or rejected (approve/reject also accepted); reviewer is empty"
    )
    assert text[9] == "line 9: repeats line 2; the first wins"
    assert text[11].startswith("record_id is empty; decision '' is not approved or rejected")


def test_check_sheet_header_problems(tmp_path):
    [row] = check_rows(_sheet(tmp_path, f"record_id,decision,reviewer\n{ID_A},approved,ana\n"))
    assert row.file_level and row.problem == (
        "bad_header", "missing column(s) note; the sheet needs record_id, decision, reviewer, note")
    assert list(check_rows(_sheet(tmp_path, CHECK_HEADER + "\n\n,,,\n", name="blank.csv"))) == []
