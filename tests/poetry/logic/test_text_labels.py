import io
from dataclasses import dataclass

import pytest

from assets.poetry.logic.text_labels import (
    Adjudication,
    FinalTextLabel,
    TextAdjudicationSheetError,
    TextFinding,
    classify,
    final_label,
    parse_adjudications,
)

# Li Bai's "Quiet Night Thought": title, author, original, our translation.
POEM = (
    "Quiet Night Thought",
    "Li Bai",
    "床前明月光，疑是地上霜。\n举头望明月，低头思故乡。",
    "Moonlight before my bed; I took it for frost on the ground.",
)


@dataclass
class Line:  # an OcrLine-like object: classify reads only .text and .score
    text: str
    score: float = 0.9


# --- classify ---------------------------------------------------------------------------------------------


def test_nothing_read_is_no_issue():
    finding = classify([], POEM)
    assert (finding.label, finding.issue, finding.recognised) == (1.0, "none", "")


def test_cjk_run_of_two_from_the_poem_is_leakage():
    finding = classify([Line("明月")], POEM)
    assert (finding.label, finding.issue, finding.matched) == (0.0, "leaked_poem_text", ("明月",))


def test_cjk_run_across_ocr_lines_and_with_stray_characters():
    # "低" then "头" as two OCR lines still form the run 低头; 猫 around it does not hide it.
    finding = classify([Line("猫低"), Line("头")], POEM)
    assert finding.issue == "leaked_poem_text" and finding.matched == ("低头",)


def test_cjk_pair_split_by_punctuation_in_the_poem_is_not_a_run():
    # 光 ends line one and 疑 starts line two ("光，疑"): the pair 光疑 is not in the poem, so two unrelated
    # recognisable characters.
    finding = classify([Line("光疑")], POEM)
    assert (finding.label, finding.issue) == (0.0, "recognisable_characters")


def test_latin_word_bigram_case_folded_across_lines_is_leakage():
    finding = classify([Line("MOONLIGHT"), Line("Before"), Line("xyz")], POEM)
    assert finding.issue == "leaked_poem_text" and finding.matched == ("moonlight before",)
    assert "'MOONLIGHT | Before | xyz'" in finding.detail


def test_author_and_title_bigrams_leak():
    assert classify([Line("li bai")], POEM).matched == ("li bai",)
    assert classify([Line("Night Thought 1")], POEM).matched == ("night thought",)


def test_one_word_field_read_whole_leaks():
    poem = ("Autumn", "Anonymous", "風", "")
    assert classify([Line("AUTUMN")], poem).issue == "leaked_poem_text"
    # the same word inside the poem's text (a longer field) is not a leak by itself
    assert classify([Line("Moonlight")], POEM).issue == "recognisable_characters"


def test_single_common_word_is_garbled_text_not_leakage():
    finding = classify([Line("bed")], POEM)
    assert (finding.label, finding.issue) == (0.0, "recognisable_characters")
    assert "3 letter(s)" in finding.detail


def test_garbled_unrelated_text_is_recognisable_characters():
    finding = classify([Line("XQ ZRT"), Line("猫狗")], POEM)
    assert (finding.label, finding.issue, finding.matched) == (0.0, "recognisable_characters", ())
    assert finding.recognised == "XQ ZRT\n猫狗"
    assert "7 letter(s)" in finding.detail  # X Q Z R T + 猫 狗


def test_min_chars_threshold_counts_letters_only():
    # one CJK character or one letter: below the default 2
    assert classify([Line("月")], POEM).issue == "none"
    assert classify([Line("Q")], POEM).label == 1.0
    # digits and punctuation are not letters
    assert classify([Line("1999 !!")], POEM).issue == "none"
    # letters counted over all lines together
    assert classify([Line("Q"), Line("Z")], POEM).issue == "recognisable_characters"
    assert classify([Line("QZR")], POEM, min_chars=4).issue == "none"
    assert classify([Line("QZRW")], POEM, min_chars=4).issue == "recognisable_characters"
    with pytest.raises(ValueError, match="min_chars"):
        classify([], POEM, min_chars=0)


def test_min_score_ignores_unsure_lines_and_tuples_work():
    lines = [("明月", 0.3), ("Q", 0.95)]
    assert classify(lines, POEM).issue == "leaked_poem_text"
    finding = classify(lines, POEM, min_score=0.5)
    assert (finding.issue, finding.recognised) == ("none", "Q")


def test_fullwidth_latin_is_normalised():
    assert classify([Line("ＬＩ ＢＡＩ")], POEM).matched == ("li bai",)


# --- adjudication sheet -------------------------------------------------------------------------------------

HEADER = "item_id,text_issue,issue,reviewer,note\n"
KNOWN = {"tang-001@gpt", "tang-001@nano", "tang-002@gpt"}


def _parse(body: str, known=KNOWN, header: str = HEADER):
    return parse_adjudications(io.StringIO(header + body), "adj.csv", known)


def test_sheet_parses_rows_and_normalises_issue():
    verdicts = _parse(
        "tang-001@gpt,Yes,leaked_poem_text,ann,title in the corner\n"
        "tang-001@gpt,no,,bo,\n"
        "\n"
        "tang-001@nano,YES,,ann,\n"
        "tang-002@gpt,n,none,ann,\n"
    )
    assert verdicts == [
        Adjudication(2, "tang-001@gpt", True, "leaked_poem_text", "ann", "title in the corner"),
        Adjudication(3, "tang-001@gpt", False, "none", "bo", ""),
        Adjudication(5, "tang-001@nano", True, "unspecified", "ann", ""),
        Adjudication(6, "tang-002@gpt", False, "none", "ann", ""),
    ]


def test_sheet_without_issue_or_note_columns_and_without_known_items():
    verdicts = parse_adjudications(io.StringIO("item_id,text_issue,reviewer\nanything,no,ann\n"), "a.csv")
    assert verdicts == [Adjudication(2, "anything", False, "none", "ann", "")]


def test_sheet_missing_column_is_row_1():
    with pytest.raises(TextAdjudicationSheetError) as caught:
        _parse("tang-001@gpt,yes\n", header="item_id,text_issue\n")
    assert str(caught.value).startswith("text adjudication sheet adj.csv: row 1: missing column(s) reviewer")
    assert caught.value.reason_code == "malformed_text_adjudication_sheet"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("tang-009@gpt,yes,,ann,", "row 2: unknown item 'tang-009@gpt'"),
        (",yes,,ann,", "row 2: item_id is empty"),
        ("tang-001@gpt,maybe,,ann,", "row 2: text_issue 'maybe' is not yes or no"),
        ("tang-001@gpt,yes,blurry,ann,", "row 2: issue 'blurry' is not one of leaked_poem_text, fake_characters, none"),
        ("tang-001@gpt,yes,none,ann,", "row 2: text_issue is yes but issue is none"),
        ("tang-001@gpt,no,fake_characters,ann,", "row 2: text_issue is no but issue is fake_characters"),
        ("tang-001@gpt,yes,,,", "row 2: reviewer is empty"),
        ("tang-001@gpt,yes,,ann,,surplus", "row 2: 1 more cell(s) than the header's 5 columns"),
    ],
)
def test_sheet_errors_name_their_row(row, message):
    with pytest.raises(TextAdjudicationSheetError) as caught:
        _parse(row + "\n")
    assert message in str(caught.value)


def test_sheet_duplicate_reviewer_and_all_problems_at_once():
    body = (
        "tang-001@gpt,yes,,ann,\n"      # row 2
        "tang-001@gpt,no,,ANN,\n"       # row 3: same reviewer, other case
        "tang-002@gpt,perhaps,,bo,\n"   # row 4
        "tang-001@nano,no,,bo,\n"       # row 5: fine, but the sheet is all-or-nothing
    )
    with pytest.raises(TextAdjudicationSheetError) as caught:
        _parse(body)
    assert caught.value.problems == [
        (3, "'ANN' already judged 'tang-001@gpt' on row 2"),
        (4, "text_issue 'perhaps' is not yes or no"),
    ]


# --- final label ---------------------------------------------------------------------------------------------

OCR_CLEAN = TextFinding(1.0, "none", "OCR read no text", "")
OCR_SEAL = TextFinding(0.0, "recognisable_characters", "OCR read 2 letter(s)", "白石")


def _verdict(reviewer: str, issue: str, item: str = "tang-001@gpt") -> Adjudication:
    return Adjudication(2, item, issue != "none", issue, reviewer)


def test_no_ocr_and_no_verdicts_is_none():
    assert final_label(None, []) is None


def test_ocr_only():
    assert final_label(OCR_SEAL, []) == FinalTextLabel(0.0, "recognisable_characters", "ocr", "OCR read 2 letter(s)")


def test_one_reviewer_overrides_ocr():
    # the seal OCR read is cleared by a reviewer
    label = final_label(OCR_SEAL, [_verdict("ann", "none")])
    assert (label.label, label.issue, label.source) == (1.0, "none", "adjudicated")
    assert "1 of 1 reviewer(s) found no text issue (ann: no); OCR said recognisable_characters" == label.detail
    # and a text OCR missed is added
    label = final_label(OCR_CLEAN, [_verdict("ann", "fake_characters")])
    assert (label.label, label.issue, label.source) == (0.0, "fake_characters", "adjudicated")


def test_majority_decides_and_picks_the_most_named_issue():
    verdicts = [_verdict("a", "fake_characters"), _verdict("b", "none"), _verdict("c", "fake_characters")]
    label = final_label(OCR_CLEAN, verdicts)
    assert (label.label, label.issue, label.source) == (0.0, "fake_characters", "adjudicated")
    assert label.detail.startswith("2 of 3 reviewer(s) found a text issue (a: yes, b: no, c: yes)")
    # yes-voters split on the kind: leaked_poem_text wins the tie, unspecified loses to a named kind
    verdicts = [_verdict("a", "fake_characters"), _verdict("b", "leaked_poem_text"), _verdict("c", "unspecified")]
    assert final_label(None, verdicts).issue == "leaked_poem_text"
    verdicts = [_verdict("a", "unspecified"), _verdict("b", "unspecified"), _verdict("c", "fake_characters")]
    assert final_label(None, verdicts).issue == "unspecified"


def test_tie_keeps_ocr_label_and_says_so():
    verdicts = [_verdict("a", "leaked_poem_text"), _verdict("b", "none")]
    label = final_label(OCR_SEAL, verdicts)
    assert (label.label, label.issue, label.source) == (0.0, "recognisable_characters", "ocr")
    assert label.detail == "reviewers split 1-1 (a: yes, b: no); OCR label kept: OCR read 2 letter(s)"
    assert final_label(None, verdicts) is None  # undecided until a third reviewer breaks the tie


def test_verdicts_of_several_items_are_refused():
    with pytest.raises(ValueError, match="one item"):
        final_label(None, [_verdict("a", "none"), _verdict("b", "none", item="tang-002@gpt")])
