"""Figures from quality-controlled poem-illustration ratings: per-image scores, agreement, model means, rank
stability and agreement of a rubric-conditioned judge with people.

After TangPoetryBench (section 3, appendices C-E): an image's score on a dimension is the mean over its raters of
the applicable answers (not-applicable answers are left out, never counted as zero); its quality is the
unweighted mean over the dimensions that have a value (equal weights, so a dimension near ceiling for today's
models still counts for tomorrow's); its recognizability is the share of raters who picked the true poem. Text
integrity is near-objective, so a final per-image label (OCR or adjudication) replaces the survey's vote when
one exists. Rater agreement is "within one level" on each dimension's ordinal scale, pairwise on multi-rated
images, among raters who found the dimension applicable. Model rankings are checked with a paired bootstrap
over poems, and a judge is compared with people by absolute error and per-poem Kendall tau.

Nothing is rounded here; callers round for display.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
from scipy.stats import kendalltau

from assets.poetry.logic.rubric import DIMENSION_KEYS, TEXT_INTEGRITY, dimension
from assets.poetry.logic.survey_rows import SurveyResponse

QUALITY = "quality"
RECOGNIZABILITY = "recognizability"
METRICS: tuple[str, ...] = (*DIMENSION_KEYS, QUALITY, RECOGNIZABILITY)
JUDGE_TOLERANCE = 0.05      # "within 0.05" of the human score
_EPS = 1e-9                 # float slack on that boundary (1.0 - 0.95 is 0.050000000000000044)
BOOTSTRAP_CHUNK = 1000      # resamples drawn at a time; also bounded by BOOTSTRAP_MAX_CELLS
BOOTSTRAP_MAX_CELLS = 4_000_000  # resamples x poems x models held in memory at once


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


# --- per-image scores -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImageScore:
    item_id: str
    n_raters: int                          # kept responses for the image
    dims: dict[str, float | None]          # per dimension: mean of applicable scores; None if nobody found it applicable
    n_applicable: dict[str, int]           # per dimension: how many raters found it applicable (survey count)
    quality: float | None                  # unweighted mean of the dimensions with a value (all ten, overall included)
    recognizability: float                 # share of kept responses whose phase-1 pick was the true poem
    text_integrity_survey: float | None    # the survey's own text-integrity mean, kept beside the final label
    text_integrity_labelled: bool          # True when dims[text_integrity] is the final OCR/adjudicated label

    def as_dict(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "n_raters": self.n_raters, "dims": dict(self.dims),
                "n_applicable": dict(self.n_applicable), "quality": self.quality, "recognizability": self.recognizability,
                "text_integrity_survey": self.text_integrity_survey, "text_integrity_labelled": self.text_integrity_labelled}


def image_scores(kept: Iterable[SurveyResponse], text_integrity: Mapping[str, float] | None = None) -> dict[str, ImageScore]:
    """Per image (item id), the rubric scores of its kept responses; one pass, memory per image not per response.

    ``text_integrity`` maps item ids to the final label (1.0 no text issue, 0.0 a text issue); for those items it
    replaces the survey's text-integrity mean in ``dims`` and in ``quality``. Items with a label but no kept
    response get no score (there is nothing else to score them on).
    """
    labels = dict(text_integrity or {})
    for item, label in labels.items():
        if not (isinstance(label, (int, float)) and 0.0 <= float(label) <= 1.0):
            raise ValueError(f"text_integrity label for {item!r} must be a number in [0, 1] (1.0 or 0.0), not {label!r}")
    sums: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(DIMENSION_KEYS, 0.0))
    counts: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(DIMENSION_KEYS, 0))
    raters: dict[str, int] = defaultdict(int)
    correct: dict[str, int] = defaultdict(int)
    for response in kept:
        item = response.item_id
        raters[item] += 1
        correct[item] += response.phase1_correct
        for key, score in response.scores().items():
            if score is not None:
                sums[item][key] += score
                counts[item][key] += 1
    out: dict[str, ImageScore] = {}
    for item in sorted(raters):
        dims = {k: (sums[item][k] / counts[item][k] if counts[item][k] else None) for k in DIMENSION_KEYS}
        survey_text = dims[TEXT_INTEGRITY]
        labelled = item in labels
        if labelled:
            dims[TEXT_INTEGRITY] = float(labels[item])
        quality = _mean([v for v in dims.values() if v is not None])
        out[item] = ImageScore(item, raters[item], dims, dict(counts[item]), quality, correct[item] / raters[item],
                               survey_text, labelled)
    return out


# --- rater agreement ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    pairs: int
    agreeing: int
    rate: float | None  # None when no pair of raters found the dimension applicable on the same image

    def as_dict(self) -> dict[str, Any]:
        return {"pairs": self.pairs, "agreeing": self.agreeing, "rate": self.rate}


def within_one_agreement(kept: Iterable[SurveyResponse]) -> dict[str, Agreement]:
    """Per dimension, the share of rater pairs on the same image whose answers are at most one level apart.

    Pairs are all pairs of raters of an image with at least two raters, counted only where both judged the
    dimension applicable (as the scoring leaves N/A out; a dimension the export does not ask, such as an
    absent text-integrity column, has no pairs). Levels are the dimension's ordinal scale
    (``Dimension.level``: options with equal scores share a level). On a binary dimension (text integrity) one
    level apart is the whole scale, so "within one" would always hold; there agreement means the same answer.
    """
    levels: dict[str, list[tuple[int | None, ...]]] = defaultdict(list)
    for response in kept:
        levels[response.item_id].append(tuple(dimension(k).level(response.answers[k]) if k in response.answers else None
                                              for k in DIMENSION_KEYS))
    pairs = dict.fromkeys(DIMENSION_KEYS, 0)
    agreeing = dict.fromkeys(DIMENSION_KEYS, 0)
    tolerance = {k: (0 if dimension(k).binary else 1) for k in DIMENSION_KEYS}
    for rows in levels.values():
        if len(rows) < 2:
            continue
        for a, b in combinations(rows, 2):
            for i, key in enumerate(DIMENSION_KEYS):
                if a[i] is None or b[i] is None:
                    continue
                pairs[key] += 1
                agreeing[key] += abs(a[i] - b[i]) <= tolerance[key]
    return {k: Agreement(pairs[k], agreeing[k], agreeing[k] / pairs[k] if pairs[k] else None) for k in DIMENSION_KEYS}


# --- per-model means ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MeanCell:
    mean: float | None  # None when none of the model's images has a value
    n: int              # images the mean is over

    def as_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "n": self.n}


def model_means(scores: Mapping[str, ImageScore], model_of: Mapping[str, str]) -> dict[str, dict[str, MeanCell]]:
    """Per model (generator), per metric (ten dimensions, quality, recognizability): the mean over its images
    where the value exists. Every scored image must have a model; a missing one is an error, not a silent drop."""
    missing = sorted(item for item in scores if item not in model_of)
    if missing:
        shown = ", ".join(missing[:10]) + (f" (and {len(missing) - 10} more)" if len(missing) > 10 else "")
        raise ValueError(f"no model given for scored item(s) {shown}")
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: {m: [] for m in METRICS})
    for item, score in scores.items():
        cells = values[model_of[item]]
        for key in DIMENSION_KEYS:
            if score.dims[key] is not None:
                cells[key].append(score.dims[key])
        if score.quality is not None:
            cells[QUALITY].append(score.quality)
        cells[RECOGNIZABILITY].append(score.recognizability)
    return {model: {m: MeanCell(_mean(v[m]), len(v[m])) for m in METRICS} for model, v in sorted(values.items())}


# --- bootstrap of the model ranking ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RankFrequencies:
    models: tuple[str, ...]                    # by name
    n_poems: int                               # poems every model has a quality for (the resampled units)
    n_resamples: int
    seed: int
    observed_means: dict[str, float]           # each model's mean quality over those poems
    observed_ranking: tuple[str, ...]          # best first
    frequencies: dict[str, dict[int, float]]   # model -> rank (1 = best) -> share of resamples

    def as_dict(self) -> dict[str, Any]:
        return {"models": list(self.models), "n_poems": self.n_poems, "n_resamples": self.n_resamples, "seed": self.seed,
                "observed_means": dict(self.observed_means), "observed_ranking": list(self.observed_ranking),
                "frequencies": {m: {str(r): f for r, f in ranks.items()} for m, ranks in self.frequencies.items()}}


def _rank_order(means: np.ndarray) -> np.ndarray:
    """Model indexes best first along the last axis; models are in name order, so a stable sort breaks ties by name."""
    return np.argsort(-means, axis=-1, kind="stable")


def bootstrap_ranks(
    quality: Mapping[str, Mapping[str, float | None]], n_resamples: int = 10000, seed: int = 0
) -> RankFrequencies:
    """How often each model holds each rank when the poems are resampled with replacement.

    ``quality`` maps model -> poem id -> that model's image quality for the poem. The bootstrap is paired: only
    poems every model has a quality for are used (None values count as absent), and one draw of poems serves every
    model, so poem difficulty (shared by all models) does not blur the comparison. Models are ranked by mean
    quality, 1 = best; exact ties go to the model whose name sorts first. Resamples are drawn in chunks so memory
    stays bounded; the draws are one stream, so the result depends only on the input and the seed (not the chunk size).
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, not {n_resamples!r}")
    models = tuple(sorted(quality))
    if not models:
        raise ValueError("bootstrap_ranks needs at least one model")
    available = [{p for p, q in quality[m].items() if q is not None} for m in models]
    poems = sorted(set.intersection(*available))
    if not poems:
        raise ValueError(f"no poem has a quality for every model ({', '.join(models)}); nothing to resample")
    table = np.array([[float(quality[m][p]) for m in models] for p in poems])  # poems x models
    if not np.isfinite(table).all():
        raise ValueError("quality values must be finite numbers")
    n_poems, n_models = table.shape
    observed = table.mean(axis=0)
    observed_order = _rank_order(observed)
    rng = np.random.default_rng(seed)
    counts = np.zeros((n_models, n_models), dtype=np.int64)  # model x rank-1
    chunk = max(1, min(BOOTSTRAP_CHUNK, BOOTSTRAP_MAX_CELLS // (n_poems * n_models)))
    done = 0
    while done < n_resamples:
        size = min(chunk, n_resamples - done)
        draws = rng.integers(0, n_poems, size=(size, n_poems))
        means = table[draws].mean(axis=1)              # size x models
        order = _rank_order(means)                     # size x rank -> model index
        for rank in range(n_models):
            counts[:, rank] += np.bincount(order[:, rank], minlength=n_models)
        done += size
    frequencies = {m: {rank + 1: float(counts[i, rank]) / n_resamples for rank in range(n_models)}
                   for i, m in enumerate(models)}
    return RankFrequencies(models, n_poems, n_resamples, seed, {m: float(observed[i]) for i, m in enumerate(models)},
                           tuple(models[i] for i in observed_order), frequencies)


# --- judge versus people --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorCell:
    n: int                      # (item, dimension) pairs where both sides have a value
    mae: float | None
    share_within: float | None  # share with |judged - human| <= 0.05

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "mae": self.mae, "share_within": self.share_within}


@dataclass(frozen=True)
class JudgeAgreement:
    overall: ErrorCell
    per_dimension: dict[str, ErrorCell]
    mean_tau: float | None      # mean per-poem Kendall tau-b of the image ordering, over poems where it is defined
    n_poems: int                # poems the mean is over
    taus: dict[str, float]      # poem id -> its tau

    def as_dict(self) -> dict[str, Any]:
        return {"overall": self.overall.as_dict(), "per_dimension": {k: c.as_dict() for k, c in self.per_dimension.items()},
                "mean_tau": self.mean_tau, "n_poems": self.n_poems, "taus": dict(self.taus)}


def error_cell(diffs: list[float]) -> ErrorCell:
    """The mean absolute error and the share within ``JUDGE_TOLERANCE`` (with ``_EPS`` slack) of absolute differences."""
    if not diffs:
        return ErrorCell(0, None, None)
    within = sum(d <= JUDGE_TOLERANCE + _EPS for d in diffs)
    return ErrorCell(len(diffs), sum(diffs) / len(diffs), within / len(diffs))


def paired_differences(human: Mapping[str, float | None], judged: Mapping[str, float | None]) -> dict[str, float]:
    """Per dimension where both sides have a value, |judged - human|, in the human mapping's order."""
    return {key: abs(float(judged[key]) - float(value)) for key, value in human.items()
            if value is not None and judged.get(key) is not None}


def poem_kendall_taus(by_poem: Mapping[str, Iterable[tuple[str, float, float]]]) -> dict[str, float]:
    """Per poem, Kendall tau-b between (item, human quality, judged quality) rows ordered by item id; poems with
    fewer than two rows, or where one side is constant (tau-b undefined), are left out."""
    taus: dict[str, float] = {}
    for poem in sorted(by_poem):
        rows = sorted(by_poem[poem])
        if len(rows) < 2:
            continue
        hs, js = [r[1] for r in rows], [r[2] for r in rows]
        if len(set(hs)) < 2 or len(set(js)) < 2:
            continue  # tau-b is undefined when one side is constant
        tau = float(kendalltau(hs, js).statistic)
        if not math.isnan(tau):
            taus[poem] = tau
    return taus


def judge_agreement(human: Mapping[str, Mapping[str, float | None]], judged: Mapping[str, Mapping[str, float | None]],
                    poem_of: Mapping[str, str]) -> JudgeAgreement:
    """How closely a judge's per-dimension scores follow people's, per image and as a ranking within each poem.

    Error: over (item, dimension) pairs where both sides have a value, the mean absolute difference and the share
    within 0.05. Ranking: each side's quality of an item is the mean of its own available dimensions; per poem,
    Kendall tau-b between the two sides over the poem's items that both scored; averaged over poems with at least
    two such items and a defined tau (undefined when one side gives all the poem's images the same quality).
    """
    common = [item for item in human if item in judged]
    missing = sorted(item for item in common if item not in poem_of)
    if missing:
        raise ValueError(f"no poem given for item(s) {', '.join(missing[:10])}")
    order = {k: i for i, k in enumerate(DIMENSION_KEYS)}
    diffs: dict[str, list[float]] = defaultdict(list)
    by_poem: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    for item in common:
        h, j = human[item], judged[item]
        for key, diff in paired_differences(h, j).items():
            diffs[key].append(diff)
        hq = _mean([float(v) for v in h.values() if v is not None])
        jq = _mean([float(v) for v in j.values() if v is not None])
        if hq is not None and jq is not None:
            by_poem[poem_of[item]].append((item, hq, jq))
    taus = poem_kendall_taus(by_poem)
    per_dimension = {k: error_cell(diffs[k]) for k in sorted(diffs, key=lambda k: (order.get(k, len(order)), k))}
    overall = error_cell([d for values in diffs.values() for d in values])
    return JudgeAgreement(overall, per_dimension, _mean(list(taus.values())), len(taus), taus)
