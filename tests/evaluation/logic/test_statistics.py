"""Leaderboard statistics: hand-computed McNemar and Bonferroni (and AesCanvas Table S10's figures), bootstraps that
are exact on degenerate inputs, reproducible for a seed and independent of the chunk size."""

import math

import numpy as np
import pytest

from assets.evaluation.logic.statistics import (
    bonferroni,
    bootstrap_ci,
    mcnemar_exact,
    paired_bootstrap,
    paired_t_test,
    pairwise_mcnemar,
)


def _outcomes(b: int, c: int, both: int = 0, neither: int = 0) -> tuple[list[bool], list[bool]]:
    a = [True] * b + [False] * c + [True] * both + [False] * neither
    other = [False] * b + [True] * c + [True] * both + [False] * neither
    return a, other


def test_mcnemar_one_against_nine_by_hand():
    # Under H0, b ~ Binomial(10, 1/2): P(b <= 1) = (1 + 10) / 2**10, doubled for two sides.
    result = mcnemar_exact(*_outcomes(1, 9, both=5, neither=3))
    assert (result.b, result.c, result.n) == (1, 9, 18)
    assert result.p_value == pytest.approx(22 / 1024, abs=1e-12)


def test_mcnemar_without_discordant_items_is_one():
    result = mcnemar_exact([True, False, True], [True, False, True])
    assert (result.b, result.c, result.p_value) == (0, 0, 1.0)


def test_mcnemar_and_bonferroni_reproduce_table_s10():
    pairs = ((29, 57), (27, 16), (10, 27), (12, 11))
    raw = [mcnemar_exact(*_outcomes(b, c, both=50, neither=100)).p_value for b, c in pairs]
    assert [round(p, 4) for p in raw] == [0.0034, 0.1263, 0.0076, 1.0]
    assert [round(p, 4) for p in bonferroni(raw)] == [0.0134, 0.5052, 0.0305, 1.0]


def test_mcnemar_rejects_unpaired_or_non_binary_outcomes():
    with pytest.raises(ValueError):
        mcnemar_exact([True, False], [True])
    with pytest.raises(ValueError):
        mcnemar_exact([0, 2], [1, 1])


def test_bonferroni_multiplies_by_the_family_size_and_caps_at_one():
    assert bonferroni([0.01, 0.2, 0.5]) == pytest.approx((0.03, 0.6, 1.0))
    assert bonferroni([]) == ()
    with pytest.raises(ValueError):
        bonferroni([1.5])


def test_pairwise_mcnemar_adjusts_across_all_pairs():
    a, b = _outcomes(1, 9, both=5)
    correct = {"b_model": b, "a_model": a, "c_model": a}
    pairs = pairwise_mcnemar(correct)
    assert [(p.model_a, p.model_b) for p in pairs] == [("a_model", "b_model"), ("a_model", "c_model"),
                                                        ("b_model", "c_model")]
    first, identical, last = pairs
    assert (first.test.b, first.test.c) == (1, 9) and (last.test.b, last.test.c) == (9, 1)
    assert first.p_adjusted == pytest.approx(3 * 22 / 1024)
    assert identical.test.p_value == identical.p_adjusted == 1.0


def test_bootstrap_of_a_constant_is_that_constant():
    for constant in (0.1, 2.5, -7.0):
        ci = bootstrap_ci([constant] * 37, resamples=500, seed=3)
        assert (ci.mean, ci.low, ci.high) == (constant, constant, constant)


def test_bootstrap_contains_the_mean_and_is_reproducible():
    values = np.random.default_rng(11).normal(0.6, 0.2, size=300)
    ci = bootstrap_ci(values, resamples=2000, seed=5)
    assert ci.low < values.mean() < ci.high
    assert ci.mean == pytest.approx(values.mean())
    assert (ci.n, ci.resamples, ci.seed, ci.level) == (300, 2000, 5, 0.95)
    assert bootstrap_ci(values, resamples=2000, seed=5) == ci
    assert bootstrap_ci(values, resamples=2000, seed=6) != ci
    # The percentile interval of a mean is close to +-1.96 standard errors.
    half_width = (ci.high - ci.low) / 2
    assert half_width == pytest.approx(1.96 * values.std() / math.sqrt(values.size), rel=0.1)


def test_bootstrap_does_not_depend_on_the_chunk_size():
    values = np.arange(13, dtype=float) ** 1.5
    whole = bootstrap_ci(values, resamples=101, seed=2)
    for max_cells in (1, 13, 50, 13 * 7):
        assert bootstrap_ci(values, resamples=101, seed=2, max_cells=max_cells) == whole
    left, right = values, values[::-1]
    assert (paired_bootstrap(left, right, resamples=101, seed=2, max_cells=26)
            == paired_bootstrap(left, right, resamples=101, seed=2))


def test_bootstrap_narrows_with_the_level():
    values = np.random.default_rng(1).random(200)
    wide, narrow = bootstrap_ci(values, 1000, 0, 0.99), bootstrap_ci(values, 1000, 0, 0.5)
    assert wide.low < narrow.low < narrow.high < wide.high


def test_bootstrap_rejects_bad_input():
    for bad in ([], [1.0, float("nan")], [[1.0, 2.0]]):
        with pytest.raises(ValueError):
            bootstrap_ci(bad)
    with pytest.raises(ValueError):
        bootstrap_ci([1.0], resamples=0)
    with pytest.raises(ValueError):
        bootstrap_ci([1.0], level=1.0)


def test_paired_bootstrap_of_identical_vectors_is_zero():
    values = np.random.default_rng(4).random(50)
    paired = paired_bootstrap(values, values.copy(), resamples=500, seed=1)
    assert (paired.difference.mean, paired.difference.low, paired.difference.high) == (0.0, 0.0, 0.0)
    assert paired.share_at_most_zero == 1.0


def test_paired_bootstrap_of_a_clear_gain():
    base = np.zeros(100)
    better = np.concatenate([np.ones(30), np.zeros(70)])
    paired = paired_bootstrap(better, base, resamples=2000, seed=0)
    assert paired.difference.mean == pytest.approx(0.3)
    assert 0.0 < paired.difference.low < 0.3 < paired.difference.high
    assert paired.share_at_most_zero == 0.0
    assert paired_bootstrap(base, better, resamples=2000, seed=0).share_at_most_zero == 1.0
    with pytest.raises(ValueError):
        paired_bootstrap([1.0, 2.0], [1.0])


def test_paired_t_test():
    a = np.array([5.0, 6.0, 7.0, 8.0, 9.5])
    b = np.array([4.0, 6.5, 6.0, 7.0, 8.0])
    result = paired_t_test(a, b)
    d = a - b
    t = d.mean() / (d.std(ddof=1) / math.sqrt(d.size))
    assert (result.mean_difference, result.df, result.n) == (pytest.approx(d.mean()), 4, 5)
    assert result.statistic == pytest.approx(t)
    assert 0.0 < result.p_value < 1.0
    flat = paired_t_test([1.0, 2.0], [0.0, 1.0])
    assert flat.mean_difference == 1.0 and math.isnan(flat.statistic) and math.isnan(flat.p_value)
    with pytest.raises(ValueError):
        paired_t_test([1.0], [2.0])
