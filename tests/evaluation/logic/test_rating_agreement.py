"""Agreement on 1–5 ratings: exact and within-one by hand, Krippendorff's ordinal α by hand and by the package."""

import krippendorff
import numpy as np
import pytest
from scipy.stats import spearmanr

from assets.evaluation.logic.rating_agreement import (exact_agreement, judge_agreement, krippendorff_ordinal_alpha,
                                                      mean_difference, pair_agreement, rater_agreement, spearman_rho,
                                                      within_one_agreement)

# Co-rated items are the first four (the fifth has no first rating): pairs (1,1) (2,3) (3,5) (5,5).
FIRST = [1, 2, 3, 5, None]
SECOND = [1, 3, 5, 5, 2]


def test_exact_within_one_and_mean_difference_by_hand():
    assert exact_agreement(FIRST, SECOND) == pytest.approx(2 / 4)       # (1,1) and (5,5)
    assert within_one_agreement(FIRST, SECOND) == pytest.approx(3 / 4)  # all but (3,5)
    assert mean_difference(FIRST, SECOND) == pytest.approx((0 - 1 - 2 + 0) / 4)
    assert spearman_rho(FIRST, SECOND) == pytest.approx(spearmanr([1, 2, 3, 5], [1, 3, 5, 5]).statistic)


def test_undefined_figures_are_none():
    assert exact_agreement([None, 1], [2, None]) is None
    assert spearman_rho([3, 3, 3], [1, 2, 3]) is None  # a constant side has no ranks to correlate
    assert spearman_rho([1], [1]) is None
    assert pair_agreement([None], [None]).n_items == 0


def test_ordinal_alpha_by_hand():
    # Rater 1: 1 2 3, rater 2: 1 2 4. Pairable values n = 6: n1 = 2, n2 = 2, n3 = 1, n4 = 1.
    # Ordinal δ(c, k) = (n_c + ... + n_k − (n_c + n_k) / 2)²: δ12 = 4, δ13 = 12.25, δ14 = 20.25, δ23 = 2.25,
    # δ24 = 6.25, δ34 = 1. Observed: only unit 3 disagrees, o34 = o43 = 1 -> D_o = 2·δ34 / 6 = 1/3.
    # Expected: 2·(2·2·4 + 2·1·12.25 + 2·1·20.25 + 2·1·2.25 + 2·1·6.25 + 1·1·1) / (6·5) = 198 / 30 = 6.6.
    # α = 1 − (1/3) / 6.6 = 0.949494...
    assert krippendorff_ordinal_alpha([[1, 2, 3], [1, 2, 4]]) == pytest.approx(1 - (1 / 3) / 6.6)


def test_ordinal_alpha_matches_the_package_over_the_whole_scale():
    data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5],
            [None, 3, 3, 3, 2, 3, 4, 2, 2, 5],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5]]
    expected = krippendorff.alpha(reliability_data=np.array(data, dtype=float), level_of_measurement="ordinal",
                                  value_domain=[1, 2, 3, 4, 5])
    assert krippendorff_ordinal_alpha(data) == pytest.approx(float(expected))


def test_alpha_is_none_where_undefined():
    assert krippendorff_ordinal_alpha([[2, 2, None], [2, 2, 3]]) is None  # one value only among pairable items
    assert krippendorff_ordinal_alpha([[1, None], [None, 2]]) is None     # no item rated twice


def test_rater_agreement_pools_every_pair():
    ratings = {"ann": [1, 2, 3, 4], "bob": [1, 3, 3, None], "cy": [2, 2, 5, 4]}
    result = rater_agreement(ratings)
    # ann-bob: 3 items, exact 2 (1,1)(3,3), within 3; ann-cy: 4 items, exact 2, within 3; bob-cy: 3 items, exact 0,
    # within 2 ((1,2), (3,2)). Pooled exact 4 / 10, within 8 / 10.
    assert result.raters == ("ann", "bob", "cy")
    assert set(result.pairs) == {("ann", "bob"), ("ann", "cy"), ("bob", "cy")}
    assert result.exact == pytest.approx(0.4)
    assert result.within_one == pytest.approx(0.8)
    assert result.alpha == pytest.approx(krippendorff_ordinal_alpha(list(ratings.values())))


def test_judge_against_each_human_then_averaged():
    humans = {"h1": [1, 2, 3, 4], "h2": [2, 2, 4, 4]}
    judge = [1, 1, 3, 3]
    result = judge_agreement("gpt", judge, humans)
    # vs h1: exact 2/4, within 4/4, diff (0 −1 0 −1)/4 = −0.5;
    # vs h2: exact 0/4, within 4/4, diff (−1 −1 −1 −1)/4 = −1.
    assert result.per_human["h1"].exact == pytest.approx(0.5)
    assert result.exact == pytest.approx(0.25)
    assert result.within_one == pytest.approx(1.0)
    assert result.mean_difference == pytest.approx(-0.75)  # negative: the judge rates lower (stricter)
    expected_rho = (spearmanr(judge, humans["h1"]).statistic + spearmanr(judge, humans["h2"]).statistic) / 2
    assert result.spearman_rho == pytest.approx(expected_rho)


def test_bad_ratings_are_errors():
    with pytest.raises(ValueError, match="whole numbers in 1..5"):
        exact_agreement([0, 1], [1, 1])
    with pytest.raises(ValueError, match="whole numbers"):
        exact_agreement([2.5, 1], [1, 1])
    with pytest.raises(ValueError, match="whole numbers"):
        exact_agreement([True, 1], [1, 1])
    with pytest.raises(ValueError, match="lengths"):
        exact_agreement([1, 2], [1])
    with pytest.raises(ValueError, match="two raters"):
        rater_agreement({"only": [1, 2]})
    with pytest.raises(ValueError):
        judge_agreement("j", [1], {})
