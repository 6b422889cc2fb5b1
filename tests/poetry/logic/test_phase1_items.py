import io

import pytest

from assets.poetry.logic.phase1_items import Phase1ItemsError, parse_phase1_items

HEADER = "item_id,option_A,option_B,option_C,option_D,true_poem\n"
ILLUSTRATED = {"p1@g": "p1", "p2@g": "p2", "p3@g": "p3"}
POEMS = ("p1", "p2", "p3", "p4", "p5")


def parse(text: str):
    return parse_phase1_items(io.StringIO(HEADER + text), "items.csv", ILLUSTRATED, POEMS)


def test_the_options_are_kept_in_the_studys_order_with_the_true_poems_letter():
    items = parse("p1@g,p4,p2,p1,p3,p1\np2@g,p2,p1,p3,p5,p2\n")
    assert items["p1@g"].options == ("p4", "p2", "p1", "p3") and items["p1@g"].correct_letter == "C"
    assert items["p2@g"].correct_letter == "A" and set(items) == {"p1@g", "p2@g"}


def test_every_bad_row_is_named():
    rows = [
        "p9@g,p1,p2,p3,p4,p1",      # row 2: no such item
        "p1@g,p1,p2,p3,p3,p1",      # row 3: a repeated option
        "p2@g,p1,p2,p3,p9,p2",      # row 4: not a poem of the corpus
        "p3@g,p1,p2,p4,p5,p1",      # row 5: the true poem is not the illustrated one
        "p3@g,p1,p2,p3,p4,p5",      # row 6: repeats the item, and the true poem is not an option
        "p1@g,p1,p2,,p4,p1",        # row 7: an empty option (and the item again)
    ]
    with pytest.raises(Phase1ItemsError) as caught:
        parse("\n".join(rows) + "\n")
    problems = dict(caught.value.problems)
    assert sorted(problems) == [2, 3, 4, 5, 6, 7]
    assert "unknown item 'p9@g'" in problems[2]
    assert "repeat a poem" in problems[3]
    assert "'p9' not poems of the corpus" in problems[4]
    assert "not the illustrated poem 'p3'" in problems[5]
    assert "already has options on row 5" in problems[6] and "not one of the options" in problems[6]
    assert "option_C empty" in problems[7]
    assert caught.value.reason_code == "malformed_phase1_items" and str(caught.value).startswith("phase-1 items file items.csv")


def test_a_missing_column_is_refused_at_once():
    with pytest.raises(Phase1ItemsError, match="missing column"):
        parse_phase1_items(io.StringIO("item_id,option_A\n"), "items.csv", ILLUSTRATED, POEMS)
