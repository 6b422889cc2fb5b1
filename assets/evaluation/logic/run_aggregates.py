"""A run's figures that are not a mean over items, each with a bootstrap 95 % interval over items: ContextCanvas's
macro-F1 and per-class F1 (``000_*`` S2.3.3, eq. S18-S19, Table S4) and AesEval's overall score, the mean over
indicators of each indicator's mean (``003_*`` Tables 2-5: "the average value of all indicators").

Each is computed for every resample from a matrix of item indexes at once (numpy, no loop over resamples), through
``statistics.bootstrap_statistic``, so 10,000 resamples of 10^5 items stay cheap and bounded in memory.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from assets.evaluation.logic.statistics import bootstrap_statistic


@dataclass(frozen=True)
class Aggregate:
    """One run-level figure as the summary table stores it."""

    metric: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n_items: int
    resamples: int
    seed: int


def _nanmean(values: np.ndarray, axis: int) -> np.ndarray:
    """Mean over the defined values; nan (quietly) where none is."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=axis)


def _none_if_nan(value: float) -> float | None:
    return None if value != value else value


def class_f1(gold: Sequence[str], predicted: Sequence[str | None], classes: Sequence[str], resamples: int,
             seed: int) -> list[Aggregate]:
    """``macro_f1`` (mean over ``classes`` of their F1, a class with no gold, no prediction in a resample left out)
    and ``f1:<class>`` for each class; an unreadable answer (None) is no class, so it is a false negative."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} answers")
    if not gold:
        return []
    index = {label: k for k, label in enumerate(classes)}
    g = np.array([index.get(label, -1) for label in gold])
    p = np.array([index.get(label, -2) if label is not None else -2 for label in predicted])

    def f1_of(k: int) -> Callable[[np.ndarray], np.ndarray]:
        def statistic(rows: np.ndarray) -> np.ndarray:
            gk, pk = g[rows] == k, p[rows] == k
            tp = (gk & pk).sum(axis=1)
            denominator = 2 * tp + (~gk & pk).sum(axis=1) + (gk & ~pk).sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), np.nan)
        return statistic

    def macro(rows: np.ndarray) -> np.ndarray:
        per_class = np.stack([f1_of(k)(rows) for k in range(len(classes))])
        return _nanmean(per_class, axis=0)

    out = []
    for name, statistic in (("macro_f1", macro), *((f"f1:{label}", f1_of(k)) for k, label in enumerate(classes))):
        ci = bootstrap_statistic(len(gold), statistic, resamples, seed)
        out.append(Aggregate(name, _none_if_nan(ci.mean), _none_if_nan(ci.low), _none_if_nan(ci.high), ci.n, resamples, seed))
    return out


def mean_of_group_means(name: str, values: Sequence[float], groups: Sequence[str], resamples: int, seed: int) -> Aggregate:
    """The mean over groups (indicators) of each group's mean value; a group a resample leaves empty is left out
    of that resample's mean."""
    if len(values) != len(groups):
        raise ValueError(f"{len(values)} values but {len(groups)} groups")
    if not values:
        return Aggregate(name, None, None, None, 0, resamples, seed)
    labels = sorted(set(groups))
    g = np.array([labels.index(group) for group in groups])
    v = np.asarray(values, dtype=float)
    k = len(labels)

    def statistic(rows: np.ndarray) -> np.ndarray:
        offsets = (g[rows] + k * np.arange(rows.shape[0])[:, None]).ravel()
        sums = np.bincount(offsets, weights=v[rows].ravel(), minlength=k * rows.shape[0]).reshape(rows.shape[0], k)
        counts = np.bincount(offsets, minlength=k * rows.shape[0]).reshape(rows.shape[0], k)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        return _nanmean(means, axis=1)

    ci = bootstrap_statistic(len(values), statistic, resamples, seed)
    return Aggregate(name, ci.mean, _none_if_nan(ci.low), _none_if_nan(ci.high), ci.n, resamples, seed)
