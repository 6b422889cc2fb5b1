"""Max-mapping, the leave-one-out human baseline and the stricter aggregations, on matrices worked out by hand."""

import numpy as np
import pytest

from assets.evaluation.logic.max_mapping import (MAX_MAPPING, MEAN_ALL, ONE_TO_ONE, REFERENCE_MAX, aggregate,
                                                 leave_one_out, leave_one_out_from_matrix, reference_matched,
                                                 score_post, similarity_matrix)

# Rows are model critiques, columns human references.
#            r0   r1   r2
# c0        0.9  0.2  0.1     row max 0.9 (r0)
# c1        0.8  0.3  0.4     row max 0.8 (r0)
# c2        0.7  0.6  0.5     row max 0.7 (r0)
# max-mapping: (0.9 + 0.8 + 0.7) / 3 = 0.8, every candidate claiming r0.
# reference max: column maxima 0.9, 0.6, 0.5 -> 2.0 / 3.
# mean over all nine cells: 4.5 / 9 = 0.5.
# one-to-one: of the six permutations the best is c0-r0, c1-r2, c2-r1 = 0.9 + 0.4 + 0.6 = 1.9 -> 1.9 / 3
#   (next best c0-r0, c1-r1, c2-r2 = 1.7), below max-mapping because r0 can be used once only.
# reference-matched (m - 1 = 2 references, each left out in turn):
#   without r0: rows [.2 .1] [.3 .4] [.6 .5] -> maxima .2 .4 .6 -> 0.4
#   without r1: rows [.9 .1] [.8 .4] [.7 .5] -> .9 .8 .7 -> 0.8
#   without r2: rows [.9 .2] [.8 .3] [.7 .6] -> .9 .8 .7 -> 0.8      mean (0.4 + 0.8 + 0.8) / 3 = 2/3
M = [[0.9, 0.2, 0.1],
     [0.8, 0.3, 0.4],
     [0.7, 0.6, 0.5]]


def test_max_mapping_on_a_3x3_matrix():
    result = aggregate(M)
    assert result.score == pytest.approx(0.8)
    assert result.aggregation == MAX_MAPPING
    assert result.pairs == ((0, 0), (1, 0), (2, 0))


def test_stricter_aggregations_on_the_same_matrix():
    assert aggregate(M, MEAN_ALL).score == pytest.approx(0.5)
    assert aggregate(M, REFERENCE_MAX).score == pytest.approx(2.0 / 3)
    one_to_one = aggregate(M, ONE_TO_ONE)
    assert one_to_one.score == pytest.approx(1.9 / 3)
    assert sorted(one_to_one.pairs) == [(0, 0), (1, 2), (2, 1)]
    assert one_to_one.score < aggregate(M).score
    assert reference_matched(M) == pytest.approx(2.0 / 3)


def test_a_2x3_case():
    # c0: .2 .5 .4 (max .5 at r1); c1: .6 .1 .3 (max .6 at r0) -> (0.5 + 0.6) / 2 = 0.55.
    # One-to-one picks the same two cells (c0-r1, c1-r0), so it agrees here; mean of six cells 2.1 / 6 = 0.35;
    # column maxima .6 .5 .4 -> 0.5.
    matrix = np.array([[0.2, 0.5, 0.4], [0.6, 0.1, 0.3]])
    assert aggregate(matrix).score == pytest.approx(0.55)
    assert aggregate(matrix, ONE_TO_ONE).score == pytest.approx(0.55)
    assert aggregate(matrix, MEAN_ALL).score == pytest.approx(0.35)
    assert aggregate(matrix, REFERENCE_MAX).score == pytest.approx(0.5)


def test_one_by_one_and_one_candidate_against_many():
    assert aggregate([[0.3]]).score == pytest.approx(0.3)
    for name in (MAX_MAPPING, ONE_TO_ONE):
        assert aggregate([[0.1, 0.7, 0.4]], name).score == pytest.approx(0.7)


# Reference-against-reference matrix for LOO (row i: reference i as the candidate; the diagonal is never read).
#            r0   r1   r2
# r0         -   0.4  0.2     best of the others 0.4, mean of the others 0.3
# r1        0.5   -   0.3     best 0.5, mean 0.4
# r2        0.1  0.6   -      best 0.6, mean 0.35
# LOO max-mapping: (0.4 + 0.5 + 0.6) / 3 = 0.5; LOO mean-all: (0.3 + 0.4 + 0.35) / 3 = 0.35.
H = [[np.nan, 0.4, 0.2],
     [0.5, np.nan, 0.3],
     [0.1, 0.6, np.nan]]


def test_leave_one_out_with_three_references():
    result = leave_one_out_from_matrix(H)
    assert result.per_reference == pytest.approx((0.4, 0.5, 0.6))
    assert result.score == pytest.approx(0.5)
    assert leave_one_out_from_matrix(H, MEAN_ALL).score == pytest.approx(0.35)


def test_leave_one_out_from_texts_never_compares_a_reference_with_itself():
    refs = ["r0", "r1", "r2"]
    calls = []

    def similarity(candidate: str, reference: str) -> float:
        calls.append((candidate, reference))
        return H[refs.index(candidate)][refs.index(reference)]

    result = leave_one_out(refs, similarity)
    assert result.score == pytest.approx(0.5)
    assert len(calls) == 6 and all(a != b for a, b in calls)


def test_leave_one_out_with_two_references_and_its_minimum():
    assert leave_one_out_from_matrix([[0, 0.3], [0.5, 0]]).score == pytest.approx(0.4)
    with pytest.raises(ValueError, match="at least 2 references"):
        leave_one_out(["only one"], lambda a, b: 1.0)
    with pytest.raises(ValueError, match="at least 2 references"):
        leave_one_out_from_matrix([[1.0]])
    with pytest.raises(ValueError, match="at least 2 references"):
        reference_matched([[0.5], [0.2]])


def test_score_post_uses_candidate_rows_and_reference_columns():
    # An asymmetric similarity shows the orientation: similarity(candidate, reference).
    def similarity(candidate: str, reference: str) -> float:
        return float(len(candidate) * 10 + len(reference))

    matrix = similarity_matrix(["a", "bb"], ["x", "yyy", "zz"], similarity)
    assert matrix.tolist() == [[11, 13, 12], [21, 23, 22]]
    assert score_post(["a", "bb"], ["x", "yyy", "zz"], similarity).score == pytest.approx((13 + 23) / 2)


def test_bad_input_is_an_error_not_a_score():
    with pytest.raises(ValueError, match="finite"):
        aggregate([[0.5, np.nan]])
    with pytest.raises(ValueError, match="k ≥ 1"):
        aggregate(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="unknown aggregation"):
        aggregate(M, "median")
    with pytest.raises(ValueError, match="square"):
        leave_one_out_from_matrix(M[:2])
    with pytest.raises(TypeError):
        similarity_matrix("one text", ["r"], lambda a, b: 0.0)
    with pytest.raises(ValueError, match="at least one reference"):
        similarity_matrix(["c"], [], lambda a, b: 0.0)
