"""Run-level figures that are not means over items, on hand-computed examples: macro-F1 and per-class F1 of
ContextCanvas (unreadable answers are no class), AesEval's mean over indicators of each indicator's mean, and the
generic bootstrap they stand on."""

import numpy as np
import pytest

from assets.evaluation.logic.run_aggregates import class_f1, mean_of_group_means
from assets.evaluation.logic.statistics import bootstrap_ci, bootstrap_statistic


def _by_name(aggregates):
    return {a.metric: a for a in aggregates}


def test_macro_f1_and_class_f1_match_a_hand_count():
    # A: tp 1 (case 0), fp 1 (case 2), fn 1 (case 3, unreadable) -> 2/(2+1+1) = 0.5
    # B: tp 2 (cases 1, 4), fp 0, fn 1 (case 2) -> 4/5 = 0.8; macro = 0.65
    found = _by_name(class_f1(["A", "B", "B", "A", "B"], ["A", "B", "A", None, "B"], ("A", "B"), 500, 0))
    assert found["f1:A"].mean == pytest.approx(0.5)
    assert found["f1:B"].mean == pytest.approx(0.8)
    assert found["macro_f1"].mean == pytest.approx(0.65)
    assert found["macro_f1"].n_items == 5 and found["macro_f1"].resamples == 500
    assert found["macro_f1"].ci_low <= 0.65 <= found["macro_f1"].ci_high


def test_always_no_scores_no_yes_f1_and_its_no_f1_from_the_gold_share():
    gold = ["A", "A", "B", "B", "B"]
    found = _by_name(class_f1(gold, ["B"] * 5, ("A", "B"), 200, 1))
    assert found["f1:A"].mean == 0.0
    assert found["f1:B"].mean == pytest.approx(2 * 3 / (2 * 3 + 2))  # tp 3, fp 2
    assert found["macro_f1"].mean == pytest.approx(0.375)


def test_a_class_absent_from_gold_and_answers_is_left_out_of_the_macro_mean():
    found = _by_name(class_f1(["B", "B"], ["B", "B"], ("A", "B"), 100, 0))
    assert found["macro_f1"].mean == 1.0 and found["f1:A"].mean is None


def test_mean_of_group_means_weighs_each_indicator_the_same():
    # balance: (1 + 0 + 1) / 3, contrast: 0, whitespace: 1 -> (2/3 + 0 + 1) / 3
    found = mean_of_group_means("judgment_accuracy_overall", [1, 0, 1, 0, 1], ["balance", "balance", "balance", "contrast",
                                                                              "whitespace"], 300, 0)
    assert found.mean == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert found.ci_low <= found.mean <= found.ci_high and found.n_items == 5


def test_no_values_give_no_figure():
    assert mean_of_group_means("x", [], [], 10, 0).mean is None
    assert class_f1([], [], ("A", "B"), 10, 0) == []


def test_a_mean_through_the_generic_bootstrap_is_the_mean_bootstrap():
    values = np.array([0.1, 0.9, 0.4, 0.4, 0.7, 0.2])
    generic = bootstrap_statistic(len(values), lambda rows: values[rows].mean(axis=1), 2000, 7)
    plain = bootstrap_ci(values, 2000, 7)
    assert (generic.mean, generic.low, generic.high) == pytest.approx((plain.mean, plain.low, plain.high))


def test_mismatched_lengths_are_an_error():
    with pytest.raises(ValueError):
        class_f1(["A"], [], ("A", "B"), 10, 0)
    with pytest.raises(ValueError):
        mean_of_group_means("x", [1.0], [], 10, 0)
