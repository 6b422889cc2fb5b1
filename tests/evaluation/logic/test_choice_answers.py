"""Closed answers read in every form models give them, and the classification scores of the choice benchmarks,
on hand-computed examples (issue 16 builds on these)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assets.evaluation.logic.choice_answers import AMBIGUOUS, UNPARSED, classification_report, parse_choice

YES_NO = {"yes": "Yes", "no": "No"}
LETTERS = {"A": "It suits the setting", "B": "It does not suit the setting", "C": "It cannot be judged from the image"}


@pytest.mark.parametrize(("answer", "options", "expected"), [
    ('{"answer": "B", "reason": "the palette clashes"}', LETTERS, "B"),
    ('```json\n{"answer": "yes"}\n```', YES_NO, "yes"),
    ("C", LETTERS, "C"),
    ("(a)", LETTERS, "A"),
    ("Final answer: B.", LETTERS, "B"),
    ("After looking at the room, the answer is (C) because the light is hidden.", LETTERS, "C"),
    ("No.", YES_NO, "no"),
    ("It does not suit the setting", LETTERS, "B"),
    ("I would pick B here: the colours fight the wall.", LETTERS, "B"),
    ("Honestly it cannot be judged from the image at this size.", LETTERS, "C"),
])
def test_an_answer_in_any_usual_form_names_its_option(answer, options, expected):
    assert parse_choice(answer, options).option == expected


@pytest.mark.parametrize(("answer", "options", "problem"), [
    ("", LETTERS, UNPARSED),
    ("a lovely picture of a quiet room", LETTERS, UNPARSED),
    ("Either A or B could be right.", LETTERS, AMBIGUOUS),
    ("Yes and no: the frame fits, the colour does not.", YES_NO, AMBIGUOUS),
    ('{"answer": "D"}', LETTERS, UNPARSED),
])
def test_an_answer_naming_no_option_or_two_is_read_as_none_with_why(answer, options, problem):
    parsed = parse_choice(answer, options)
    assert parsed.option is None and parsed.problem == problem and parsed.detail


def test_accuracy_macro_f1_and_the_yes_rate_on_a_hand_computed_example():
    gold = ["yes", "yes", "yes", "no", "no", "no"]
    predicted = ["yes", "yes", "no", "no", "yes", None]  # one unreadable answer: wrong, and no class
    report = classification_report(gold, predicted, ["yes", "no"])
    # yes: tp 2, fp 1, fn 1 -> F1 4/6; no: tp 1, fp 1, fn 2 -> F1 2/5
    assert report.per_class_f1 == pytest.approx({"yes": 2 / 3, "no": 0.4})
    assert report.macro_f1 == pytest.approx((2 / 3 + 0.4) / 2)
    assert report.accuracy == pytest.approx(3 / 6)
    assert report.predicted_share == pytest.approx({"yes": 3 / 6, "no": 2 / 6}) and report.unreadable == 1


def test_a_class_nobody_gave_or_answered_is_left_out_of_the_macro_mean():
    report = classification_report(["A", "B"], ["A", "B"], ["A", "B", "C"])
    assert report.per_class_f1 == {"A": 1.0, "B": 1.0} and report.macro_f1 == 1.0
    with pytest.raises(ValueError, match="2 gold labels but 1 answers"):
        classification_report(["A", "B"], ["A"], ["A", "B"])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_gets_one_option_or_a_reason_never_an_exception(answer):
    for options in (YES_NO, LETTERS):
        parsed = parse_choice(answer, options)
        assert (parsed.option in options and parsed.problem is None) or (parsed.option is None and parsed.problem in (UNPARSED, AMBIGUOUS))
