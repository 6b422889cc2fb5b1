"""Scoring a post's model critiques against its human references, one post at a time.

A post has k candidate critiques (the model's) and m references (its top human critiques) with no canonical
pairing, so a metric gives a k×m matrix, rows candidates and columns references: ``matrix[i, j]`` is
``similarity(candidate_i, reference_j)``. The primary aggregation is max-mapping: each candidate keeps its best
reference, and the post's score is the mean of those maxima; it is charitable on purpose, since competent critiques
of one photo disagree and a candidate should not be held to one arbitrary reference.

The human agreement baseline is scored the same way, leave-one-out: each reference in turn is the candidate and
the others its references. It needs at least two references, and it is a scale, not a ceiling.

Max-mapping lets several candidates claim the same reference, and a leave-one-out candidate faces one reference
fewer than a model does, so stricter readings are offered as named options: the mean over all pairs, each
reference's best candidate, a one-to-one assignment (the Hungarian method), and a model score re-taken against
every subset of m − 1 references so that it faces as many references as a leave-one-out candidate.

Everything is per post (a k×m matrix, never n×n over the benchmark); means over posts are the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

PairSimilarity = Callable[[str, str], float]  # (candidate, reference) -> score; need not be symmetric

MAX_MAPPING = "max_mapping"        # mean over candidates of the best reference (the primary score)
REFERENCE_MAX = "reference_max"    # mean over references of the best candidate (recall-like)
MEAN_ALL = "mean_all"              # mean over all k×m pairs (no credit for choosing)
ONE_TO_ONE = "one_to_one"          # mean over the min(k, m) pairs of a best one-to-one assignment
AGGREGATIONS = (MAX_MAPPING, REFERENCE_MAX, MEAN_ALL, ONE_TO_ONE)


@dataclass(frozen=True)
class PostScore:
    score: float
    aggregation: str
    pairs: tuple[tuple[int, int], ...]  # the (candidate, reference) cells averaged; a tie goes to the lower index


@dataclass(frozen=True)
class LeaveOneOut:
    score: float                      # mean over the references of their per_reference scores
    aggregation: str
    per_reference: tuple[float, ...]  # reference i scored as the candidate against all the others


def similarity_matrix(candidates: Sequence[str], references: Sequence[str], similarity: PairSimilarity) -> np.ndarray:
    """The k×m matrix of one post (k·m calls of ``similarity``)."""
    _require_texts(candidates, "candidate")
    _require_texts(references, "reference")
    return np.array([[float(similarity(c, r)) for r in references] for c in candidates], dtype=float)


def aggregate(matrix: np.ndarray | Sequence[Sequence[float]], aggregation: str = MAX_MAPPING) -> PostScore:
    """One post's score from its k×m similarity matrix under the named aggregation (k, m ≥ 1).

    ``one_to_one`` matches min(k, m) pairs; it is never above max-mapping when k ≤ m (the benchmark's 3×3), but
    with more candidates than references the unmatched candidates simply do not count.
    """
    values = _checked_matrix(matrix)
    k, m = values.shape
    if aggregation == MAX_MAPPING:
        pairs = tuple((i, int(values[i].argmax())) for i in range(k))
    elif aggregation == REFERENCE_MAX:
        pairs = tuple((int(values[:, j].argmax()), j) for j in range(m))
    elif aggregation == MEAN_ALL:
        pairs = tuple((i, j) for i in range(k) for j in range(m))
    elif aggregation == ONE_TO_ONE:
        rows, cols = linear_sum_assignment(values, maximize=True)
        pairs = tuple((int(i), int(j)) for i, j in zip(rows, cols))
    else:
        raise ValueError(f"unknown aggregation {aggregation!r}; expected one of {', '.join(AGGREGATIONS)}")
    return PostScore(float(np.mean([values[i, j] for i, j in pairs])), aggregation, pairs)


def score_post(candidates: Sequence[str], references: Sequence[str], similarity: PairSimilarity,
               aggregation: str = MAX_MAPPING) -> PostScore:
    return aggregate(similarity_matrix(candidates, references, similarity), aggregation)


def leave_one_out_from_matrix(matrix: np.ndarray | Sequence[Sequence[float]],
                              aggregation: str = MAX_MAPPING) -> LeaveOneOut:
    """The human baseline from the m×m reference-against-reference matrix (row i: reference i as candidate).

    The diagonal (a reference against itself) is never read, so it may hold anything, NaN included.
    """
    values = np.asarray(matrix, dtype=float)
    if values.ndim != 2 or values.shape[0] != values.shape[1]:
        raise ValueError(f"the leave-one-out matrix must be square (m×m), not of shape {values.shape}")
    m = values.shape[0]
    if m < 2:
        raise ValueError(f"the leave-one-out baseline needs at least 2 references, this post has {m}")
    per_reference = tuple(aggregate(np.delete(values[i], i)[np.newaxis, :], aggregation).score for i in range(m))
    return LeaveOneOut(float(np.mean(per_reference)), aggregation, per_reference)


def leave_one_out(references: Sequence[str], similarity: PairSimilarity, aggregation: str = MAX_MAPPING) -> LeaveOneOut:
    """The human baseline of one post: each reference as the candidate against the others (m·(m − 1) calls;
    a reference is never compared with itself)."""
    _require_texts(references, "reference")
    if len(references) < 2:
        raise ValueError(f"the leave-one-out baseline needs at least 2 references, this post has {len(references)}")
    m = len(references)
    values = np.full((m, m), np.nan)
    for i in range(m):
        for j in range(m):
            if i != j:
                values[i, j] = float(similarity(references[i], references[j]))
    return leave_one_out_from_matrix(values, aggregation)


def reference_matched(matrix: np.ndarray | Sequence[Sequence[float]], aggregation: str = MAX_MAPPING) -> float:
    """A model score that faces m − 1 references, as a leave-one-out candidate does: the mean, over the m ways
    of leaving one reference out, of the aggregation on the remaining columns. Needs m ≥ 2."""
    values = _checked_matrix(matrix)
    m = values.shape[1]
    if m < 2:
        raise ValueError(f"matching the leave-one-out reference count needs at least 2 references, not {m}")
    return float(np.mean([aggregate(np.delete(values, j, axis=1), aggregation).score for j in range(m)]))


def _checked_matrix(matrix: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    values = np.asarray(matrix, dtype=float)
    if values.ndim != 2 or values.shape[0] < 1 or values.shape[1] < 1:
        raise ValueError(f"a similarity matrix needs k ≥ 1 candidates and m ≥ 1 references, not {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError("a similarity matrix must hold finite numbers only (a failed metric call is not a score)")
    return values


def _require_texts(texts: Sequence[str], what: str) -> None:
    if isinstance(texts, str):
        raise TypeError(f"{what}s must be a sequence of texts, not one text")
    if not texts:
        raise ValueError(f"a post needs at least one {what}")
