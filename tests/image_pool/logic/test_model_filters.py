"""A model filter's verdict from a score: the band's bounds, unscored images and invalid scores."""

import math

import pytest

from assets.image_pool.logic.model_filters import INVALID_SCORE, NOT_SCORED, ScoreBand, score_verdict

AESTHETIC = ScoreBand("aesthetic", "low_aesthetic_score", reject_below=4.5)
SAFETY = ScoreBand("safety", "unsafe_content", reject_above=0.5, reject_unscored=True)


def test_scores_outside_the_band_are_rejected_under_the_filters_reason_with_score_and_bound():
    assert score_verdict(3.91234, AESTHETIC) == ("low_aesthetic_score", "aesthetic score 3.9123 below 4.5")
    assert score_verdict(4.5, AESTHETIC) is None  # the bound itself passes
    assert score_verdict(0.93, SAFETY) == ("unsafe_content", "safety score 0.9300 above 0.5")
    assert score_verdict(0.5, SAFETY) is None


def test_a_band_with_both_bounds_rejects_either_side():
    band = ScoreBand("exposure_model", "odd_exposure", reject_below=-1.0, reject_above=1.0)
    assert score_verdict(-1.5, band)[0] == "odd_exposure"
    assert score_verdict(1.5, band)[0] == "odd_exposure"
    assert score_verdict(0.0, band) is None


def test_an_unscored_image_is_kept_unless_the_filter_fails_closed():
    assert score_verdict(None, AESTHETIC) is None
    reason, detail = score_verdict(None, SAFETY)
    assert reason == NOT_SCORED and "no embedding" in detail


@pytest.mark.parametrize("score", [math.nan, math.inf, -math.inf])
def test_a_non_finite_score_is_never_passed(score):
    assert score_verdict(score, AESTHETIC)[0] == INVALID_SCORE
    assert score_verdict(score, SAFETY)[0] == INVALID_SCORE
