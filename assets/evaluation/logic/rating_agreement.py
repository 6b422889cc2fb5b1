"""Agreement on ordinal 1–5 ratings (the substantive-similarity study): among people, and of a judge with people.

Ratings come as one sequence per rater, aligned by item, with None where a rater did not rate the item; every
figure is taken over the items both (or all) raters in question rated. Exact and within-one agreement are shares
of co-rated items; Krippendorff's α uses the ordinal metric over the whole scale (``krippendorff``'s
``value_domain``), so an unused category still counts as a step. A judge is compared with each person in turn and
the figures averaged, the way two people are compared with each other, so the two read on one scale.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from numbers import Integral

import krippendorff
import numpy as np
from scipy.stats import ConstantInputWarning, spearmanr

Ratings = Sequence[int | None]
SCALE = (1, 5)


@dataclass(frozen=True)
class PairAgreement:
    n_items: int                   # items both raters rated; the figures below are over these
    exact: float | None            # None when n_items is 0
    within_one: float | None
    spearman_rho: float | None     # None when fewer than 2 items or either side is constant
    mean_difference: float | None  # mean of first − second: negative means the first rates lower (stricter)


@dataclass(frozen=True)
class RaterAgreement:
    raters: tuple[str, ...]
    pairs: dict[tuple[str, str], PairAgreement]  # every pair of raters, in the order given
    exact: float | None                          # pooled over all pairs' co-rated items
    within_one: float | None
    alpha: float | None                          # Krippendorff's ordinal α over all raters; None where undefined


@dataclass(frozen=True)
class JudgeAgreement:
    judge: str
    per_human: dict[str, PairAgreement]  # judge first, so mean_difference < 0: the judge is stricter
    exact: float | None                  # each figure: the mean over the humans that have one
    within_one: float | None
    spearman_rho: float | None
    mean_difference: float | None


def _checked(ratings: Ratings, scale: tuple[int, int], who: str) -> list[int | None]:
    low, high = scale
    out: list[int | None] = []
    for i, value in enumerate(ratings):
        if value is None:
            out.append(None)
        elif isinstance(value, bool) or not isinstance(value, Integral) or not low <= value <= high:
            raise ValueError(f"{who}'s rating {i} is {value!r}: ratings are whole numbers in {low}..{high} or None")
        else:
            out.append(int(value))
    return out


def _co_rated(first: Ratings, second: Ratings, scale: tuple[int, int]) -> list[tuple[int, int]]:
    if len(first) != len(second):
        raise ValueError(f"rating sequences are aligned by item: lengths {len(first)} and {len(second)} differ")
    a, b = _checked(first, scale, "the first rater"), _checked(second, scale, "the second rater")
    return [(x, y) for x, y in zip(a, b) if x is not None and y is not None]


def exact_agreement(first: Ratings, second: Ratings, scale: tuple[int, int] = SCALE) -> float | None:
    pairs = _co_rated(first, second, scale)
    return sum(x == y for x, y in pairs) / len(pairs) if pairs else None


def within_one_agreement(first: Ratings, second: Ratings, scale: tuple[int, int] = SCALE) -> float | None:
    pairs = _co_rated(first, second, scale)
    return sum(abs(x - y) <= 1 for x, y in pairs) / len(pairs) if pairs else None


def mean_difference(first: Ratings, second: Ratings, scale: tuple[int, int] = SCALE) -> float | None:
    pairs = _co_rated(first, second, scale)
    return statistics.fmean(x - y for x, y in pairs) if pairs else None


def spearman_rho(first: Ratings, second: Ratings, scale: tuple[int, int] = SCALE) -> float | None:
    """Spearman's ρ over co-rated items (ties get average ranks); None where it is undefined."""
    pairs = _co_rated(first, second, scale)
    if len(pairs) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantInputWarning)
        rho = spearmanr([x for x, _ in pairs], [y for _, y in pairs]).statistic
    return None if math.isnan(rho) else float(rho)


def krippendorff_ordinal_alpha(ratings: Sequence[Ratings], scale: tuple[int, int] = SCALE) -> float | None:
    """Krippendorff's α, ordinal metric, for raters × items (None = missing). None where α is undefined: no item
    rated twice, or no variation at all to disagree about."""
    if len({len(r) for r in ratings}) > 1:
        raise ValueError("rating sequences are aligned by item: every rater needs the same number of entries")
    rows = [_checked(r, scale, f"rater {i}") for i, r in enumerate(ratings)]
    if len(rows) < 2:
        raise ValueError("agreement needs at least two raters")
    data = np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    values = data[:, pairable]
    if not values.size or len(np.unique(values[~np.isnan(values)])) < 2:
        return None
    return float(krippendorff.alpha(reliability_data=values, level_of_measurement="ordinal",
                                    value_domain=list(range(scale[0], scale[1] + 1))))


def pair_agreement(first: Ratings, second: Ratings, scale: tuple[int, int] = SCALE) -> PairAgreement:
    return PairAgreement(len(_co_rated(first, second, scale)), exact_agreement(first, second, scale),
                         within_one_agreement(first, second, scale), spearman_rho(first, second, scale),
                         mean_difference(first, second, scale))


def rater_agreement(ratings: Mapping[str, Ratings], scale: tuple[int, int] = SCALE) -> RaterAgreement:
    """Agreement among two or more raters (name -> item-aligned ratings)."""
    names = tuple(ratings)
    if len(names) < 2:
        raise ValueError("agreement needs at least two raters")
    pairs = {(a, b): pair_agreement(ratings[a], ratings[b], scale) for a, b in combinations(names, 2)}
    n = sum(p.n_items for p in pairs.values())
    exact = sum(p.n_items * p.exact for p in pairs.values() if p.exact is not None) / n if n else None
    within = sum(p.n_items * p.within_one for p in pairs.values() if p.within_one is not None) / n if n else None
    return RaterAgreement(names, pairs, exact, within, krippendorff_ordinal_alpha([ratings[r] for r in names], scale))


def judge_agreement(judge: str, judge_ratings: Ratings, humans: Mapping[str, Ratings],
                    scale: tuple[int, int] = SCALE) -> JudgeAgreement:
    """A judge against each human rater in turn, and the mean over them."""
    if not humans:
        raise ValueError("a judge is compared with at least one human rater")
    per_human = {name: pair_agreement(judge_ratings, ratings, scale) for name, ratings in humans.items()}
    figures = ("exact", "within_one", "spearman_rho", "mean_difference")
    means = [_mean_over(per_human.values(), name) for name in figures]
    return JudgeAgreement(judge, per_human, *means)


def _mean_over(agreements: Iterable[PairAgreement], field: str) -> float | None:
    values = [getattr(p, field) for p in agreements if getattr(p, field) is not None]
    return statistics.fmean(values) if values else None
