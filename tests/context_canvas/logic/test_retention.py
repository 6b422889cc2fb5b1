import csv
import io

import pytest

from assets.context_canvas.logic.case_records import CaseOption, ContextCase, ImageRights
from assets.context_canvas.logic.retention import (
    CRITERIA,
    CRITERION_KEYS,
    SHEET_COLUMNS,
    CaseReview,
    ReviewSheetError,
    parse_reviews,
    retention,
    retentions,
    review_sheet_rows,
)

HEADER = "case_id,reviewer," + ",".join(CRITERION_KEYS) + ",final,note"
KNOWN = {"c1", "c2", "c3"}
ALL_PASS = ",".join(["pass"] * 7)


def _row(case_id, reviewer, verdicts=ALL_PASS, final="", note=""):
    return f"{case_id},{reviewer},{verdicts},{final},{note}"


def _parse(*rows, header=HEADER):
    return parse_reviews(io.StringIO("\n".join([header, *rows]) + "\n"), "reviews.csv", KNOWN)


def _review(case_id="c1", reviewer="ana", failed=(), final=False, row=2):
    passed = tuple(key not in failed for key in CRITERION_KEYS)
    return CaseReview(case_id, reviewer, passed, final, "", "reviews.csv", row)


def test_criteria_table_order_and_wording():
    assert CRITERION_KEYS == ("aesthetic_centrality", "context_dependence", "visual_necessity", "decisive_evidence",
                              "scenario_naturalness", "answerability", "anti_shortcut_validity")
    assert all(c.definition.strip() and c.name for c in CRITERIA)
    assert len({c.definition for c in CRITERIA}) == 7


def test_parse_accepts_every_spelling_and_counts_blank_rows():
    reviews, blank = _parse(
        _row("c1", "ana", "PASS,yes,Y,1,true,pass,pass"),
        _row("c1", "ben", "fail,no,N,0,false,FAIL,pass", note="weak"),
        _row("c2", "ana", ",,,,,,"),   # prefilled but not reviewed yet
        "",                            # an empty line
        _row("c1", "panel", final="Yes"),
    )
    assert blank == 2
    assert [(r.case_id, r.reviewer, r.final, r.row) for r in reviews] == [
        ("c1", "ana", False, 2), ("c1", "ben", False, 3), ("c1", "panel", True, 6)]
    assert reviews[0].passed_all and reviews[1].failed == CRITERION_KEYS[:6] and reviews[1].note == "weak"
    assert reviews[1].verdicts()["anti_shortcut_validity"] is True


def test_final_and_note_columns_are_optional():
    header = "case_id,reviewer," + ",".join(CRITERION_KEYS)
    reviews, blank = _parse(f"c1,ana,{ALL_PASS}", header=header)
    assert blank == 0 and reviews[0].final is False and reviews[0].note == ""


def test_sheet_is_all_or_nothing_and_lists_every_bad_row():
    with pytest.raises(ReviewSheetError) as info:
        _parse(
            _row("c1", "ana"),
            _row("c9", "ana"),
            _row("c1", ""),
            _row("c2", "ana", "pass,pass,maybe,pass,pass,pass,"),
            _row("c1", " ANA "),
            _row("c2", "ben", final="perhaps"),
            _row("c1", "panel", final="yes"),
            _row("c1", "board", final="y"),
        )
    error = info.value
    assert error.reason_code == "malformed_case_review_sheet"
    assert str(error).startswith("case review sheet reviews.csv: row 3: case_id 'c9' is not a case under review")
    assert [row for row, _ in error.problems] == [3, 4, 5, 6, 7, 9]
    texts = dict(error.problems)
    assert texts[4] == "reviewer is empty"
    assert "visual_necessity is 'maybe'" in texts[5] and "anti_shortcut_validity is empty" in texts[5]
    assert texts[6] == "reviewer 'ANA' already reviewed case c1 on row 2"
    assert "final is 'perhaps'" in texts[7]
    assert texts[9] == "case c1 already has a final (adjudication) row on row 8"


def test_missing_column_is_reported_on_row_one():
    with pytest.raises(ReviewSheetError, match=r"row 1: missing column\(s\) answerability"):
        _parse(header=HEADER.replace("answerability", "answerable"))


def test_retained_when_every_reviewer_passes_all_seven():
    result = retention([_review(reviewer="ana"), _review(reviewer="ben", row=3)])
    assert result.status == "retained" and result.retained and result.failed_criteria == ()
    assert result.reviewers == ("ana", "ben")
    assert result.reasons == ["all seven criteria passed by 2 reviewers (ana, ben)"]


def test_rejected_when_every_reviewer_fails_a_criterion():
    result = retention([
        _review(reviewer="ana", failed=("visual_necessity", "answerability")),
        _review(reviewer="ben", failed=("visual_necessity",)),
    ])
    assert result.status == "rejected" and result.failed_criteria == ("visual_necessity",)
    assert result.reasons == ["visual_necessity failed by every reviewer (ana, ben)",
                              "also split on answerability: failed by ana"]


def test_split_needs_adjudication_naming_who_failed_what():
    result = retention([
        _review(reviewer="ana", failed=("scenario_naturalness",)),
        _review(reviewer="ben"),
        _review(reviewer="cy", failed=("scenario_naturalness", "decisive_evidence")),
    ])
    assert result.status == "needs_adjudication"
    assert result.failed_criteria == ("decisive_evidence", "scenario_naturalness")  # CRITERIA order
    assert result.reasons == ["decisive_evidence: failed by cy, passed by ana, ben",
                              "scenario_naturalness: failed by ana, cy, passed by ben"]


def test_final_row_decides_alone():
    split = [_review(reviewer="ana"), _review(reviewer="ben", failed=("answerability",))]
    kept = retention([*split, _review(reviewer="panel", final=True, row=9)])
    assert kept.status == "retained" and kept.reviewers == ("ana", "ben", "panel")
    assert kept.reasons == ["panel adjudication by panel (row 9): all seven criteria pass"]
    # even against two passing reviewers, a failing final row rejects
    dropped = retention([_review(reviewer="ana"), _review(reviewer="ben"),
                         _review(reviewer="panel", failed=("decisive_evidence",), final=True, row=7)])
    assert dropped.status == "rejected" and dropped.failed_criteria == ("decisive_evidence",)
    assert dropped.reasons == ["panel adjudication by panel (row 7): fails decisive_evidence"]


def test_too_few_reviews_stay_unreviewed():
    assert retention([]).status == "unreviewed" and retention([]).reasons == ["no review yet"]
    one_pass = retention([_review(reviewer="ana")])
    assert one_pass.status == "unreviewed" and one_pass.reasons == ["1 of 2 required reviews"]
    one_fail = retention([_review(reviewer="ana", failed=("visual_necessity",))])
    assert one_fail.status == "unreviewed"
    assert one_fail.reasons == ["1 of 2 required reviews", "visual_necessity failed by ana"]
    assert retention([_review(reviewer="ana")], min_reviewers=1).status == "retained"


def test_retention_guards_and_grouping():
    with pytest.raises(ValueError, match="one case"):
        retention([_review("c1"), _review("c2")])
    with pytest.raises(ValueError, match="2 final rows"):
        retention([_review(final=True), _review(reviewer="x", final=True)])
    with pytest.raises(ValueError, match="min_reviewers"):
        retention([], min_reviewers=0)
    reviews = [_review("c1", "ana"), _review("c1", "ben"), _review("c2", "ana", failed=("answerability",))]
    result = retentions(["c2", "c1", "c3"], reviews)
    assert list(result) == ["c2", "c1", "c3"]
    assert [r.status for r in result.values()] == ["unreviewed", "retained", "unreviewed"]


def _case(case_id):
    return ContextCase(case_id, ("a.png",), "A poster.", "Suitable?", (CaseOption("A", "Yes"), CaseOption("B", "No")),
                       "B", "No", "why", "basis", (ImageRights("t", "unknown", "p", "u", "l", "allowed"),), None, None,
                       "cases.json#record=0")


def test_blank_sheet_rows_round_trip_as_all_blank():
    rows = review_sheet_rows([_case("c1"), _case("c2")], reviewers=["ana", "ben"])
    assert [(r["case_id"], r["reviewer"]) for r in rows] == [("c1", "ana"), ("c1", "ben"), ("c2", "ana"), ("c2", "ben")]
    assert list(rows[0]) == list(SHEET_COLUMNS) and rows[0]["options"] == "A=Yes | B=No"
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(SHEET_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    reviews, blank = parse_reviews(io.StringIO(buffer.getvalue()), "blank.csv", KNOWN)
    assert reviews == [] and blank == 4
    assert len(review_sheet_rows([_case("c1")])) == 1
