"""Uncertainty and significance figures shared by every benchmark's leaderboard and model comparison.

After AesCanvas S2.3.3 and S3.2.4 (Table S10): a percentile bootstrap over items for a model's mean score, a
paired bootstrap over the same items for the change between two models, the exact two-sided McNemar test on
paired right/wrong outcomes, and Bonferroni's correction across the comparisons reported together; a paired
t-test is kept for appendix-style comparisons of continuous scores.

Bootstraps resample items with replacement from one seeded stream drawn in chunks, so memory stays bounded for
any item count and the numbers depend only on the inputs and the seed, never on the chunk size. Nothing is
rounded here; callers round (and scale to percentage points) for display.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
from scipy.stats import binomtest, ttest_rel

RESAMPLES = 10_000
LEVEL = 0.95
MAX_CELLS = 4_000_000  # resamples x items drawn at a time (32 MB of int64 indexes)


@dataclass(frozen=True)
class BootstrapCI:
    mean: float      # the observed mean over items
    low: float       # percentile bounds of the resampled means at ``level``
    high: float
    n: int           # items
    resamples: int
    seed: int
    level: float

    def as_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n, "resamples": self.resamples,
                "seed": self.seed, "level": self.level}


@dataclass(frozen=True)
class PairedBootstrap:
    """The bootstrap of mean(a - b) over shared items, with ``share_at_most_zero``: the share of resamples in which
    a does not beat b (difference <= 0). That share is a one-sided bootstrap p-like figure for "a is better than b",
    not a test with a guaranteed error rate; report the interval, and McNemar for right/wrong outcomes."""

    difference: BootstrapCI
    share_at_most_zero: float

    def as_dict(self) -> dict[str, Any]:
        return {**self.difference.as_dict(), "share_at_most_zero": self.share_at_most_zero}


def _as_vector(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float64)
    if vector.ndim != 1 or vector.size == 0:
        raise ValueError(f"{name} must be a non-empty one-dimensional sequence of numbers")
    if not np.isfinite(vector).all():
        raise ValueError(f"{name} must hold finite numbers only")
    return vector


def _paired(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    left, right = _as_vector(a, "a"), _as_vector(b, "b")
    if left.size != right.size:
        raise ValueError(f"paired values need the same items: a has {left.size}, b has {right.size}")
    return left, right


def _resampled_means(values: np.ndarray, resamples: int, seed: int, max_cells: int) -> np.ndarray:
    """The mean of each bootstrap resample; rows of indexes are drawn ``max_cells // n`` at a time from one stream."""
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, not {resamples!r}")
    n = values.size
    rng = np.random.default_rng(seed)
    rows = max(1, max_cells // n)
    means = np.empty(resamples)
    for start in range(0, resamples, rows):
        size = min(rows, resamples - start)
        means[start:start + size] = values[rng.integers(0, n, size=(size, n))].mean(axis=1)
    return means


def _interval(values: np.ndarray, means: np.ndarray, resamples: int, seed: int, level: float) -> BootstrapCI:
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    # A resample's mean lies within the values' range; clipping only removes float noise (a constant stays exact).
    floor, ceiling = float(values.min()), float(values.max())
    mean = float(np.clip(values.mean(), floor, ceiling))
    return BootstrapCI(mean, float(np.clip(low, floor, ceiling)), float(np.clip(high, floor, ceiling)), int(values.size),
                       resamples, seed, level)


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, not {level!r}")


def bootstrap_ci(values: Sequence[float] | np.ndarray, resamples: int = RESAMPLES, seed: int = 0, level: float = LEVEL,
                 *, max_cells: int = MAX_CELLS) -> BootstrapCI:
    """Percentile interval of the mean over items (per-item scores, or 0/1 for accuracy)."""
    _check_level(level)
    vector = _as_vector(values, "values")
    return _interval(vector, _resampled_means(vector, resamples, seed, max_cells), resamples, seed, level)


def bootstrap_statistic(n: int, statistic: Callable[[np.ndarray], np.ndarray], resamples: int = RESAMPLES, seed: int = 0,
                        level: float = LEVEL, *, max_cells: int = MAX_CELLS) -> BootstrapCI:
    """Percentile interval of a statistic that is not a mean over items (macro-F1, a mean of per-group means):
    ``statistic`` maps a (resamples x n) matrix of item indexes to one value per row (nan where a resample leaves it
    undefined: such resamples are left out of the quantiles); row 0 of the first call is the identity, the point
    estimate. The index stream is the same as ``bootstrap_ci``'s for the same seed and n."""
    _check_level(level)
    if n < 1:
        raise ValueError("a bootstrap needs at least one item")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, not {resamples!r}")
    point = float(statistic(np.arange(n)[None, :])[0])
    rng = np.random.default_rng(seed)
    rows = max(1, max_cells // n)
    values = np.empty(resamples)
    for start in range(0, resamples, rows):
        size = min(rows, resamples - start)
        values[start:start + size] = statistic(rng.integers(0, n, size=(size, n)))
    tail = (1.0 - level) / 2.0
    defined = values[~np.isnan(values)]
    low, high = (np.quantile(defined, [tail, 1.0 - tail]) if defined.size else (float("nan"), float("nan")))
    return BootstrapCI(point, float(low), float(high), n, resamples, seed, level)


def paired_bootstrap(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, resamples: int = RESAMPLES,
                     seed: int = 0, level: float = LEVEL, *, max_cells: int = MAX_CELLS) -> PairedBootstrap:
    """Interval of mean(a - b) with both models resampled on the same items (position i is the same item in a and b),
    so item difficulty, shared by both, does not widen it (Table S10's interval of the accuracy change)."""
    _check_level(level)
    left, right = _paired(a, b)
    differences = left - right
    means = _resampled_means(differences, resamples, seed, max_cells)
    return PairedBootstrap(_interval(differences, means, resamples, seed, level),
                           float(np.count_nonzero(means <= 0.0)) / resamples)


# --- McNemar and Bonferroni ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class McNemar:
    b: int          # items a got right and b got wrong
    c: int          # items a got wrong and b got right
    n: int          # items compared
    p_value: float  # exact two-sided binomial p of b among b + c discordant items; 1.0 when there are none

    def as_dict(self) -> dict[str, Any]:
        return {"b": self.b, "c": self.c, "n": self.n, "p_value": self.p_value}


def _outcomes(values: Sequence[bool] | np.ndarray, name: str) -> np.ndarray:
    vector = np.asarray(values)
    if vector.ndim != 1 or vector.size == 0:
        raise ValueError(f"{name} must be a non-empty one-dimensional sequence of right/wrong outcomes")
    if not np.isin(vector, (0, 1)).all():
        raise ValueError(f"{name} must hold booleans or 0/1 only")
    return vector.astype(bool)


def mcnemar_exact(a_correct: Sequence[bool] | np.ndarray, b_correct: Sequence[bool] | np.ndarray) -> McNemar:
    """Exact McNemar test: only the discordant items carry evidence, and under "no difference" each is equally
    likely to favour either model, so b ~ Binomial(b + c, 1/2)."""
    left, right = _outcomes(a_correct, "a_correct"), _outcomes(b_correct, "b_correct")
    if left.size != right.size:
        raise ValueError(f"paired outcomes need the same items: a has {left.size}, b has {right.size}")
    b = int(np.count_nonzero(left & ~right))
    c = int(np.count_nonzero(~left & right))
    p_value = 1.0 if b + c == 0 else float(binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)
    return McNemar(b, c, int(left.size), p_value)


def bonferroni(p_values: Sequence[float]) -> tuple[float, ...]:
    """Each p times the number of comparisons reported together, capped at 1."""
    for p in p_values:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-values must lie in [0, 1], not {p!r}")
    m = len(p_values)
    return tuple(min(1.0, p * m) for p in p_values)


@dataclass(frozen=True)
class PairComparison:
    model_a: str
    model_b: str
    test: McNemar
    p_adjusted: float  # Bonferroni across every pair of the family

    def as_dict(self) -> dict[str, Any]:
        return {"model_a": self.model_a, "model_b": self.model_b, **self.test.as_dict(), "p_adjusted": self.p_adjusted}


def pairwise_mcnemar(correct: Mapping[str, Sequence[bool] | np.ndarray]) -> tuple[PairComparison, ...]:
    """Exact McNemar for every pair of models, Bonferroni-adjusted across all pairs.

    ``correct`` maps model -> right/wrong per item, position i being the same item for every model. Models are taken
    in name order, so a pair is (earlier name, later name) and b counts items only the earlier one got right.
    """
    models = sorted(correct)
    tests = [(a, b, mcnemar_exact(correct[a], correct[b])) for a, b in combinations(models, 2)]
    adjusted = bonferroni([test.p_value for _, _, test in tests])
    return tuple(PairComparison(a, b, test, p) for (a, b, test), p in zip(tests, adjusted))


# --- paired t-test ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedTTest:
    mean_difference: float  # mean(a - b)
    statistic: float        # t; nan when every difference is the same (no variance to scale by)
    p_value: float          # two-sided; nan in that case too
    df: int
    n: int

    def as_dict(self) -> dict[str, Any]:
        return {"mean_difference": self.mean_difference, "statistic": self.statistic, "p_value": self.p_value,
                "df": self.df, "n": self.n}


def paired_t_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> PairedTTest:
    """Two-sided paired t-test of mean(a - b) = 0 over shared items, for continuous per-item scores."""
    left, right = _paired(a, b)
    if left.size < 2:
        raise ValueError("a paired t-test needs at least two items")
    differences = left - right
    if np.all(differences == differences[0]):
        statistic = p_value = float("nan")
    else:
        result = ttest_rel(left, right)
        statistic, p_value = float(result.statistic), float(result.pvalue)
    return PairedTTest(float(differences.mean()), statistic, p_value, int(left.size - 1), int(left.size))
