import math

import pytest

from assets.context_canvas.logic.case_records import CaseOption, ContextCase, ImageRights
from assets.context_canvas.logic.shortcuts import binomial_tail, shortcut_report, text_only_answers, text_only_guess

YES_NO = (CaseOption("A", "Yes"), CaseOption("B", "No"))
COLOURS = (CaseOption("A", "Red"), CaseOption("B", "Green"), CaseOption("C", "Blue"))


def _case(case_id, gold, options=YES_NO, scenario="A poster for a spring fair.", question="Is it suitable?"):
    gold_text = next(o.text for o in options if o.option_id == gold)
    return ContextCase(case_id, ("a.png",), scenario, question, options, gold, gold_text, "why", "basis",
                       (ImageRights("t", "unknown", "p", "u", "l", "allowed"),), None, None, f"cases.json#{case_id}")


CASES = [_case("c1", "B"), _case("c2", "B"), _case("c3", "A"), _case("c4", "C", COLOURS)]


def test_report_figures_by_hand():
    report = shortcut_report(CASES, {"c1": "b", "c2": "A", "c3": None, "c4": "Z"})
    assert report["n_cases"] == 4 and report["n_binary"] == 3
    assert report["gold_counts"] == {"A": 1, "B": 2, "C": 1}
    assert report["gold_yes_rate"] == pytest.approx(1 / 3)  # only c3 of the three binary cases has gold A
    # lengths x = 3,2 | 3,2 | 3,2 | 3,5,4 and gold y = 0,1 | 0,1 | 1,0 | 0,0,1: mean x = 3, mean y = 4/9,
    # Sxx = 8, Syy = 4 - 16/9 = 20/9, Sxy = 11 - 9*3*4/9 = -1, so r = -1 / sqrt(8 * 20/9) = -3 / sqrt(160)
    assert report["length_gold_correlation"] == pytest.approx(-3 / math.sqrt(160))
    # the longest option is unique everywhere (Yes, Yes, Yes, Green) and is gold only in c3;
    # chance = (1/2 + 1/2 + 1/2 + 1/3) / 4
    assert report["n_unique_longest"] == 4 and report["longest_is_gold_rate"] == pytest.approx(0.25)
    assert report["longest_chance_rate"] == pytest.approx((1.5 + 1 / 3) / 4)
    assert report["majority_option"] == "B" and report["majority_baseline_accuracy"] == pytest.approx(0.5)
    # c1 right ("b" matches B), c2 wrong, c3 no answer, c4 not an option: 1 of 4
    assert report["text_only_accuracy"] == pytest.approx(0.25)
    assert report["n_text_only_answered"] == 2 and report["n_text_only_invalid"] == 1
    assert report["text_only_minus_baseline"] == pytest.approx(-25.0)
    assert report["text_only_p_value"] == pytest.approx(15 / 16)  # P(X >= 1), X ~ Bin(4, 0.5)
    assert report["verdict"] == ("text-only answers score 25.0% against a 50.0% majority baseline (4 cases): "
                                 "no better than always giving the most common answer")


def test_missing_cases_count_as_wrong():
    report = shortcut_report(CASES, {"c1": "B"})
    assert report["text_only_accuracy"] == pytest.approx(0.25) and report["n_text_only_answered"] == 1


def test_verdicts_for_clear_and_unclear_gains():
    balanced = [_case(f"c{i:02d}", "AB"[i % 2]) for i in range(20)]
    # majority tie (10 A, 10 B) goes to the smaller id A: baseline 0.5; text-only all right: p = 0.5 ** 20
    clear = shortcut_report(balanced, {c.case_id: c.gold for c in balanced})
    assert clear["majority_option"] == "A" and clear["majority_baseline_accuracy"] == 0.5
    assert clear["text_only_p_value"] == pytest.approx(0.5 ** 20)
    assert clear["verdict"].startswith("shortcut risk: text-only answers score 100.0% against a 50.0% majority")
    small = balanced[:4]
    answers = {"c00": "A", "c01": "B", "c02": "A", "c03": "A"}  # 3 of 4 right
    unclear = shortcut_report(small, answers)
    assert unclear["text_only_p_value"] == pytest.approx(5 / 16)  # P(X >= 3), X ~ Bin(4, 0.5)
    assert "above it, but not clearly (p=0.312)" in unclear["verdict"]


def test_undefined_figures_are_none():
    same_length = [_case("c1", "A", (CaseOption("A", "Keep"), CaseOption("B", "Drop")))]
    report = shortcut_report(same_length, {})
    assert report["length_gold_correlation"] is None  # no variation in length
    assert report["n_unique_longest"] == 0 and report["longest_is_gold_rate"] is None
    assert report["text_only_accuracy"] is None and report["verdict"].startswith("no text-only answers given")
    three_way = shortcut_report([_case("c4", "C", COLOURS)], {})
    assert three_way["gold_yes_rate"] is None and three_way["n_binary"] == 0
    empty = shortcut_report([], {"x": "A"})
    assert empty["n_cases"] == 0 and empty["majority_baseline_accuracy"] is None and empty["verdict"].startswith("no cases")


def test_binomial_tail():
    assert binomial_tail(0, 5, 0.3) == 1.0
    assert binomial_tail(3, 4, 0.5) == pytest.approx(5 / 16)
    assert binomial_tail(2, 2, 0.25) == pytest.approx(1 / 16)
    assert binomial_tail(1, 3, 1.0) == 1.0 and binomial_tail(1, 3, 0.0) == 0.0


def test_text_only_guess_rules():
    options = (CaseOption("A", "Keep it for the festival"), CaseOption("B", "Use it for the funeral notice"))
    # "funeral" and "notice" overlap with the scenario; stopwords ("the", "for", "it") do not count
    assert text_only_guess("A funeral notice for the parish", "Which use fits?", options) == "B"
    # no overlap: the longer option wins
    assert text_only_guess("A poster", "Suitable?", YES_NO) == "A"
    assert text_only_guess("A poster", "Suitable?", (CaseOption("A", "No"), CaseOption("B", "Yes"))) == "B"
    # same overlap and length: the first listed
    assert text_only_guess("x", "y", (CaseOption("A", "Left"), CaseOption("B", "Ride"))) == "A"
    # overlap beats length
    assert text_only_guess("red poster", "?", (CaseOption("A", "A very long blue"), CaseOption("B", "Red"))) == "B"
    with pytest.raises(ValueError):
        text_only_guess("s", "q", ())


def test_text_only_answers_over_cases():
    cases = [_case("c1", "B"), _case("c4", "C", COLOURS, scenario="A blue banner for a harbour fair")]
    assert text_only_answers(cases) == {"c1": "A", "c4": "C"}
