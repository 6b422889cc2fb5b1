import csv
import io

import pytest

from assets.designs.logic.review_votes import (
    SHEET_COLUMNS,
    IndicatorAgreement,
    Label,
    ReviewSheetError,
    Vote,
    indicator_agreement,
    majority_label,
    majority_labels,
    next_round,
    parse_review_votes,
    review_item,
    review_sheet_rows,
)

BALANCE = "Visual weight is spread evenly across the design."
CONTRAST = "Text and key shapes stand out clearly from what is behind them."
ITEMS = [
    review_item("design:a", "renders/a.png", "layout_balance", BALANCE),
    review_item("design:a", "renders/a.png", "color_contrast", CONTRAST),
    review_item("design:b", "renders/b.png", "layout_balance", BALANCE),
]
KNOWN = {item.item_id: item for item in ITEMS}
A_BAL, A_CON, B_BAL = (item.item_id for item in ITEMS)


# --- export -----------------------------------------------------------------------------------------------


def test_review_item_ids_follow_design_and_indicator_only():
    again = review_item("design:a", "elsewhere/a.png", "layout_balance", BALANCE)
    assert again.item_id == A_BAL and A_BAL.startswith("dr-") and len(A_BAL) == 23
    assert len({A_BAL, A_CON, B_BAL}) == 3
    with pytest.raises(ValueError, match="definition"):
        review_item("design:a", "a.png", "layout_balance", "")


def test_review_sheet_rows_one_per_item_or_per_item_and_annotator():
    rows = list(review_sheet_rows(ITEMS, "r1"))
    assert len(rows) == 3 and all(tuple(r) == SHEET_COLUMNS for r in rows)
    assert rows[1] == {
        "review_round": "r1", "item_id": A_CON, "design_id": "design:a", "image": "renders/a.png",
        "indicator": "color_contrast", "definition": CONTRAST, "annotator": "", "vote": "", "comment": "",
    }
    shared = list(review_sheet_rows(ITEMS[:2], "r1", annotators=["ana", "bo"]))
    assert [(r["item_id"], r["annotator"]) for r in shared] == [(A_BAL, "ana"), (A_BAL, "bo"), (A_CON, "ana"), (A_CON, "bo")]


def test_exported_sheet_reads_back_blank():
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SHEET_COLUMNS)
    writer.writeheader()
    writer.writerows(review_sheet_rows(ITEMS, "r1", annotators=["ana"]))
    buffer.seek(0)
    assert parse_review_votes(buffer, "r1.csv", KNOWN) == ([], 3)


# --- parsing ----------------------------------------------------------------------------------------------


def _sheet(*lines: str) -> io.StringIO:
    return io.StringIO("\n".join(lines) + "\n")


HEADER = "review_round,item_id,design_id,indicator,annotator,vote,comment"


def test_parse_reads_votes_blanks_bom_and_vote_spellings():
    sheet = _sheet(
        "\ufeff" + HEADER,
        f"r1,{A_BAL},design:a,layout_balance,ana,Flawed,title pushed to the edge",   # row 2
        f"r1,{A_BAL},design:a,layout_balance,bo,good,",                              # row 3
        "",                                                                          # row 4: blank line
        f"r1,{A_CON},,,ana,YES,",                                                    # row 5: yes = flawed
        f"r1,{A_CON},design:a,color_contrast,bo, no ,",                              # row 6: no = good
        f"r1,{B_BAL},design:b,layout_balance,ana,,",                                 # row 7: not voted yet
        f"r1,{B_BAL},design:b,layout_balance,,,,,",                                  # row 8: empty trailing cells
    )
    votes, blank = parse_review_votes(sheet, "r1-ana.csv", KNOWN)
    assert blank == 3
    assert [(v.item_id, v.annotator, v.flawed, v.row) for v in votes] == [
        (A_BAL, "ana", True, 2), (A_BAL, "bo", False, 3), (A_CON, "ana", True, 5), (A_CON, "bo", False, 6),
    ]
    assert votes[0] == Vote("r1", A_BAL, "design:a", "layout_balance", "ana", True, "title pushed to the edge", "r1-ana.csv", 2)
    assert votes[2].indicator == "color_contrast" and votes[2].design_id == "design:a"   # taken from the item


def test_parse_lists_every_bad_row_with_spreadsheet_row_numbers():
    sheet = _sheet(
        HEADER,
        f"r1,{A_BAL},design:a,layout_balance,ana,flawed,",      # 2 ok
        "r1,dr-unknown,design:a,layout_balance,ana,flawed,",    # 3 unknown item
        "r1,,design:a,layout_balance,ana,good,",                # 4 empty item
        "",                                                     # 5 blank line (still counted)
        f"r1,{A_BAL},design:a,layout_balance,,good,",           # 6 empty annotator
        f"r1,{A_BAL},design:a,layout_balance,bo,maybe,",        # 7 bad vote
        f"r1,{A_BAL},design:a,layout_balance, ANA ,good,",      # 8 duplicate of row 2 (case and spaces ignored)
        f"r1,{A_BAL},design:a,layout_balance,cy,good,ok,but",   # 9 too many cells (unquoted comma)
        f"r1,{A_BAL},design:b,color_contrast,dee,good,",        # 10 row does not match the item
    )
    with pytest.raises(ReviewSheetError) as caught:
        parse_review_votes(sheet, "r1-mixed.csv", KNOWN)
    error = caught.value
    assert error.reason_code == "malformed_review_sheet" and error.sheet == "r1-mixed.csv"
    assert [row for row, _ in error.problems] == [3, 4, 6, 7, 8, 9, 10]
    text = dict(error.problems)
    assert "'dr-unknown' is not an item" in text[3]
    assert text[4] == "item_id is empty"
    assert text[6] == "annotator is empty"
    assert "vote 'maybe' is not flawed or good" in text[7]
    assert f"already voted on item {A_BAL} on row 2" in text[8]
    assert "1 more cell(s) than the header's 7 columns" in text[9]
    assert "design_id 'design:b' does not match" in text[10] and "indicator 'color_contrast' does not match" in text[10]
    assert str(error).startswith("review sheet r1-mixed.csv: row 3:")


def test_parse_missing_columns_names_them():
    with pytest.raises(ReviewSheetError) as caught:
        parse_review_votes(_sheet("review_round,item_id,verdict", f"r1,{A_BAL},flawed"), "s.csv", KNOWN)
    assert caught.value.problems == [
        (1, "missing column(s) annotator, vote; a returned sheet needs review_round, item_id, annotator, vote")
    ]
    with pytest.raises(ReviewSheetError, match="missing column"):
        parse_review_votes(io.StringIO(""), "empty.csv", KNOWN)


# --- majority ---------------------------------------------------------------------------------------------


def _votes(item_id: str, pattern: str, indicator: str = "layout_balance", sheet: str = "s.csv") -> list[Vote]:
    """One vote per letter: F flawed, G good; annotators a0, a1, ..."""
    return [
        Vote("r1", item_id, "design:x", indicator, f"a{i}", letter == "F", "", sheet, i + 2)
        for i, letter in enumerate(pattern)
    ]


def test_majority_label_and_tie_rules():
    assert majority_label(_votes("i", "FFG")) == Label(True, 3, 2, False, "majority")
    assert majority_label(_votes("i", "FGG")) == Label(False, 3, 1, False, "majority")
    assert majority_label(_votes("i", "F")) == Label(True, 1, 1, False, "majority")
    assert majority_label(_votes("i", "FG")) == Label(None, 2, 1, True, "tie_unresolved")
    assert majority_label(_votes("i", "FFGG"), tie_breaker="flawed") == Label(True, 4, 2, True, "tie_breaker_flawed")
    assert majority_label(_votes("i", "FFGG"), tie_breaker="good") == Label(False, 4, 2, True, "tie_breaker_good")
    # the tie breaker only touches ties
    assert majority_label(_votes("i", "GGF"), tie_breaker="flawed") == Label(False, 3, 1, False, "majority")
    assert majority_label([]) == Label(None, 0, 0, False, "too_few_votes")
    assert majority_label(_votes("i", "FF"), min_votes=3) == Label(None, 2, 2, False, "too_few_votes")
    with pytest.raises(ValueError, match="tie_breaker"):
        majority_label(_votes("i", "FG"), tie_breaker="coin")
    with pytest.raises(ValueError, match="one item"):
        majority_label(_votes("i", "F") + _votes("j", "G"))


def test_majority_labels_over_sheets_refuses_a_double_vote():
    labels = majority_labels(_votes("i", "FFG") + _votes("j", "GF"))
    assert labels == {"i": Label(True, 3, 2, False, "majority"), "j": Label(None, 2, 1, True, "tie_unresolved")}
    twice = _votes("i", "F", sheet="one.csv") + _votes("i", "G", sheet="two.csv")   # both by annotator a0
    with pytest.raises(ValueError, match="'a0' voted twice on item i: one.csv row 2 and two.csv row 2"):
        majority_labels(twice)


# --- agreement --------------------------------------------------------------------------------------------


def test_agreement_and_fleiss_kappa_hand_computed():
    # layout_balance: four items, three raters each, flawed counts 3, 3, 2, 0.
    # per-item pair agreement: 1, 1, 1/3, 1 -> mean 5/6; pooled pairs 10 of 12.
    # p_flawed = 8/12 = 2/3 -> Pe = 4/9 + 1/9 = 5/9; kappa = (5/6 - 5/9) / (4/9) = 5/8.
    votes = _votes("b1", "FFF") + _votes("b2", "FFF") + _votes("b3", "FFG") + _votes("b4", "GGG")
    # color_contrast: items with 2 and 4 votes (agree; 2-2 split) -> shares 1 and 2/6 -> mean 2/3, pooled 3 of 7;
    # raters differ, so no kappa. A single-vote item does not count.
    votes += _votes("c1", "FF", "color_contrast") + _votes("c2", "FFGG", "color_contrast") + _votes("c3", "F", "color_contrast")
    # font_legibility: everyone always says good -> agreement 1, chance agreement 1, kappa undefined
    votes += _votes("f1", "GG", "font_legibility") + _votes("f2", "GG", "font_legibility")
    got = {a.indicator: a for a in indicator_agreement(votes)}
    assert list(got) == ["color_contrast", "font_legibility", "layout_balance"]
    balance = got["layout_balance"]
    assert (balance.n_items, balance.n_pairs, balance.n_agreeing_pairs, balance.raters_per_item) == (4, 12, 10, 3)
    assert balance.mean_pairwise_agreement == pytest.approx(5 / 6) and balance.fleiss_kappa == pytest.approx(5 / 8)
    contrast = got["color_contrast"]
    assert contrast == IndicatorAgreement("color_contrast", 2, 7, 3, pytest.approx(2 / 3), None, None)
    assert got["font_legibility"] == IndicatorAgreement("font_legibility", 2, 2, 2, 1.0, None, 2)


def test_fleiss_kappa_second_table():
    # flawed counts 3, 2, 0, 1 of 3: shares 1, 1/3, 1, 1/3 -> P = 2/3; p_flawed = 6/12 -> Pe = 1/2; kappa = 1/3
    votes = _votes("a", "FFF") + _votes("b", "FFG") + _votes("c", "GGG") + _votes("d", "FGG")
    (result,) = indicator_agreement(votes)
    assert result.mean_pairwise_agreement == pytest.approx(2 / 3) and result.fleiss_kappa == pytest.approx(1 / 3)
    assert indicator_agreement(_votes("solo", "F")) == []


@pytest.mark.parametrize(("now", "following"), [("1", "2"), ("9", "10"), ("demo", "demo-next"), ("2024-spring", "2024-spring-next")])
def test_the_round_after_a_numbered_round_is_the_next_number_else_the_name_marked_next(now, following):
    assert next_round(now) == following
