"""Judging poem illustrations against people on held-out poems (TangPoetryBench section 5, Table 4; section 4).

An automatic judge of the poem benchmark is scored on poems it was not calibrated on: the split is by poem, never
by image, so no poem's images sit on both sides. Per image, a judge that scores the ten rubric dimensions is
compared with the human mean scores (mean absolute error, share within 0.05); per poem, the poem's images ordered
by the judge's overall quality are compared with the human ordering (Kendall tau-b). A scalar judge (CLIPScore,
BLIPScore, VQAScore) gives one number per image: no per-dimension output, so only the ranking applies.

The arithmetic is the poetry pipeline's (``assets.poetry.logic.stats``: ``error_cell``, ``paired_differences`` and
``poem_kendall_taus``, which ``judge_agreement`` uses too), and the rubric judge's answers are checked by its own
parser (``assets.poetry.logic.rubric_judge.parse_judgement``); this module adds what an evaluation of a release
needs around them: the held-out split, reading any judge's answer text, the trivial calibration baseline, the
bootstrap over poems, and the two section-4 figures (dimension-versus-overall Spearman, phase-1 accuracy per
rater group).

Which MAE is Table 4's: the paper reports "per-image agreement" as "per-dim MAE" without saying how it averages.
``judge_errors`` gives both readings: ``pooled`` over (image, dimension) pairs, as ``stats.judge_agreement``'s
overall figure (and the poetry pipeline's stored ``poem_judge_agreement``) does; this is the one reported as the
Table 4 figure. ``image_mae`` / ``image_within_005`` average each image's own figure, so every image weighs the
same however many of its dimensions were comparable. They coincide when every image has the same number of
compared dimensions (a rubric judge answering all ten, people finding all ten applicable).

Nothing is rounded here; callers round for display.
"""

from __future__ import annotations

import json
import math
import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from statistics import fmean
from types import MappingProxyType
from typing import Any

from scipy.stats import ConstantInputWarning, spearmanr

from assets.core.logic.json_answers import SchemaError, extract_json_object
from assets.evaluation.logic.judge_answers import EMPTY_ANSWER, OUT_OF_RANGE
from assets.evaluation.logic.statistics import LEVEL, RESAMPLES, bootstrap_ci
from assets.poetry.logic.rubric import DIMENSION_KEYS, HOLISTIC
from assets.poetry.logic.rubric_judge import (INVALID_JSON, MISSING_FIELD, UNKNOWN_DIMENSION, WRONG_TYPE,
                                              JudgeAnswerError, parse_judgement)
from assets.poetry.logic.stats import METRICS, ErrorCell, error_cell, paired_differences, poem_kendall_taus
from warehouse.ids import digest_of

PHASE1_CHANCE = 0.25            # phase 1 offers the true poem and three distractors
RECOGNIZABILITY_PHASE = "recognizability"
SPLIT_KEY = "poem-judging-holdout-v1"  # part of every poem's split key: a new rule gets new keys

# Problem codes of ``read_judge_prediction`` beside the rubric judge's own (``rubric_judge.REASON_CODES``, passed
# through for answers in its schema): EMPTY_ANSWER, OUT_OF_RANGE (a number that is not finite, or a dimension
# score outside [0, 1]), NOT_A_PREDICTION (JSON that is neither an object nor a number).
NOT_A_PREDICTION = "not_a_prediction"


# --- the split ------------------------------------------------------------------------------------------------------


def held_out_poems(poem_ids: Iterable[str], fraction: float, seed: int) -> frozenset[str]:
    """The poems to evaluate on: ``ceil(fraction * n)`` of the ``n`` distinct poems, those whose keyed digest
    ``digest_of([SPLIT_KEY, seed, poem_id])`` sorts first; the rest calibrate (train) the judge.

    Ranking by digest rather than thresholding each poem's own digest gives the exact share asked for (a threshold
    gives a binomial count, which on a few hundred poems misses the share by several poems). A poem's key never
    depends on the others, so the split is the same for any input order, and adding poems moves only poems across
    the cut: a new poem whose key sorts before the cut takes the place of the last held-out one. With two or more
    poems at least one is held out and at least one is left to calibrate on; a single poem is held out (there is
    nothing else to evaluate on; the calibration baseline then has no data). ``fraction`` must lie strictly
    between 0 and 1.
    """
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be a number strictly between 0 and 1, not {fraction!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be a whole number, not {seed!r}")
    poems = set()
    for poem in poem_ids:
        if not isinstance(poem, str) or not poem:
            raise ValueError(f"poem ids must be non-empty text, not {poem!r}")
        poems.add(poem)
    n = len(poems)
    if n == 0:
        return frozenset()
    # round first: 0.1 * 30 is 3.0000000000000004, which must give 3 poems, not 4
    wanted = math.ceil(round(fraction * n, 9))
    wanted = min(max(wanted, 1), max(n - 1, 1))
    ranked = sorted(poems, key=lambda poem: (digest_of([SPLIT_KEY, seed, poem]), poem))
    return frozenset(ranked[:wanted])


# --- reading a judge's answer ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgePrediction:
    """One judge's reading of one image. ``scores``: per rubric dimension a score in [0, 1] or None (not judged,
    not applicable, could not tell), all ten keys for a per-dimension judge, empty for a scalar judge and for an
    answer that could not be read. ``overall``: the mean of the available dimension scores (as ``stats`` takes an
    image's quality), or the scalar judge's number. ``problem``: None, or a stable reason code with ``detail``."""

    scores: Mapping[str, float | None] = field(default_factory=lambda: MappingProxyType({}))
    overall: float | None = None
    scalar: bool = False
    problem: str | None = None
    detail: str = ""

    @classmethod
    def of_scores(cls, scores: Mapping[str, float | None]) -> JudgePrediction:
        """A per-dimension prediction: every rubric dimension, None where ``scores`` has none."""
        values = {key: (None if scores.get(key) is None else float(scores[key])) for key in DIMENSION_KEYS}
        present = [v for v in values.values() if v is not None]
        return cls(MappingProxyType(values), fmean(present) if present else None)

    @classmethod
    def of_scalar(cls, value: float) -> JudgePrediction:
        return cls(overall=float(value), scalar=True)

    @classmethod
    def rejected(cls, problem: str, detail: str) -> JudgePrediction:
        return cls(problem=problem, detail=detail)

    def as_dict(self) -> dict[str, Any]:
        return {"scores": dict(self.scores), "overall": self.overall, "scalar": self.scalar, "problem": self.problem,
                "detail": self.detail}


def _number(value: Any) -> float | None:
    """A JSON number as a finite-or-not float; None for anything else (booleans included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float
        return math.inf


def _dimension_numbers(scores: Mapping[str, Any], where: str) -> JudgePrediction:
    unknown = sorted(str(k) for k in scores if k not in DIMENSION_KEYS)
    if unknown:
        return JudgePrediction.rejected(UNKNOWN_DIMENSION, f"{where} has key(s) {', '.join(map(repr, unknown[:10]))} "
                                                           f"that are not dimensions")
    values: dict[str, float | None] = {}
    for key in DIMENSION_KEYS:
        raw = scores.get(key)
        if raw is None:
            values[key] = None
            continue
        number = _number(raw)
        if number is None:
            return JudgePrediction.rejected(WRONG_TYPE, f"{where}.{key} is {type(raw).__name__}, not a number or null")
        if not (math.isfinite(number) and 0.0 <= number <= 1.0):
            return JudgePrediction.rejected(OUT_OF_RANGE, f"{where}.{key} is {number!r}, not in [0, 1]")
        values[key] = number
    return JudgePrediction.of_scores(values)


def _scalar(raw: Any, where: str) -> JudgePrediction:
    number = _number(raw)
    if number is None:
        return JudgePrediction.rejected(WRONG_TYPE, f"{where} is {type(raw).__name__}, not a number")
    if not math.isfinite(number):
        return JudgePrediction.rejected(OUT_OF_RANGE, f"{where} is {number!r}, not a finite number")
    return JudgePrediction.of_scalar(number)


def _rubric(text: str) -> JudgePrediction:
    try:
        judgement = parse_judgement(text)
    except JudgeAnswerError as exc:
        return JudgePrediction.rejected(exc.reason_code, exc.detail)
    return JudgePrediction.of_scores(judgement.scores)


def _from_object(obj: dict[str, Any], text: str) -> JudgePrediction:
    if "scores" in obj:
        scores = obj["scores"]
        if not isinstance(scores, dict):
            return JudgePrediction.rejected(WRONG_TYPE, f"answer.scores is {type(scores).__name__}, not an object")
        if any(isinstance(entry, dict) for entry in scores.values()):
            return _rubric(text)  # the rubric judge's schema: one option and a reason per dimension
        return _dimension_numbers(scores, "answer.scores")
    if "score" in obj:
        return _scalar(obj["score"], "answer.score")
    if any(key in DIMENSION_KEYS for key in obj):
        return _dimension_numbers(obj, "answer")
    return JudgePrediction.rejected(MISSING_FIELD, "answer has no 'scores', no 'score' and no dimension key")


def read_judge_prediction(text: str) -> JudgePrediction:
    """A judge's answer for one image, as a model returned it or a predictions file holds it. Accepted:

    - the rubric judge's ``poem_rubric_scores`` schema, ``{"scores": {dim: {"option": letter | null, "reason":
      ...}}}``, checked by ``rubric_judge.parse_judgement`` (its reason codes pass through);
    - plain numbers per dimension, ``{"scores": {dim: 0.67, ...}}`` or ``{dim: 0.67, ...}``: each in [0, 1] or null;
      a dimension left out scores None, a key that is not a dimension is ``unknown_dimension``;
    - a scalar judge's one number, ``{"score": 0.31}`` or a bare number: an overall quality only, any finite number
      (scalar metrics have scales of their own, and only their order within a poem is used).

    The JSON may sit in code fences or prose (``extract_json_object``); a whole answer that is one JSON value is
    read as it is. Never raises: an unreadable answer gives a prediction with ``problem`` set.
    """
    if not isinstance(text, str):
        return JudgePrediction.rejected(WRONG_TYPE, f"the answer is {type(text).__name__}, not text")
    stripped = text.strip()
    if not stripped:
        return JudgePrediction.rejected(EMPTY_ANSWER, "the answer is empty")
    try:
        value: Any = json.loads(stripped)
    except (ValueError, RecursionError):
        try:
            value = extract_json_object(stripped)
        except SchemaError as exc:
            return JudgePrediction.rejected(INVALID_JSON, exc.detail)
        except (ValueError, RecursionError) as exc:
            return JudgePrediction.rejected(INVALID_JSON, f"the answer does not parse ({type(exc).__name__})")
    try:
        if isinstance(value, dict):
            return _from_object(value, stripped)
        if _number(value) is not None:
            return _scalar(value, "the answer")
    except RecursionError:  # an object nested too deeply for the rubric parser to re-read
        return JudgePrediction.rejected(INVALID_JSON, "the answer is nested too deeply")
    return JudgePrediction.rejected(NOT_A_PREDICTION, f"the answer is a JSON {type(value).__name__}, not an object "
                                                      f"or a number")


# --- per-image agreement ---------------------------------------------------------------------------------------------


def image_agreement(human: Mapping[str, float | None], predicted: JudgePrediction) -> dict[str, float | None]:
    """One image: ``mae`` (mean |predicted - human| over the dimensions both sides have), ``within_005`` (the share
    of those within ``stats.JUDGE_TOLERANCE``, with the same float slack) and ``n`` (how many). ``mae`` and
    ``within_005`` are None for a scalar prediction, an unreadable one, and where no dimension is shared."""
    if predicted.scalar or predicted.problem is not None:
        return {"mae": None, "within_005": None, "n": 0}
    cell = error_cell(list(paired_differences(human, predicted.scores).values()))
    return {"mae": cell.mae, "within_005": cell.share_within, "n": cell.n}


@dataclass(frozen=True)
class JudgeErrors:
    n_images: int                   # images with at least one dimension compared
    pooled: ErrorCell               # over (image, dimension) pairs: the Table 4 figure, as stats.judge_agreement's
    image_mae: float | None         # mean over those images of each image's MAE (every image weighs the same)
    image_within_005: float | None  # mean over those images of each image's share within 0.05

    def as_dict(self) -> dict[str, Any]:
        return {"n_images": self.n_images, "pooled": self.pooled.as_dict(), "image_mae": self.image_mae,
                "image_within_005": self.image_within_005}


def judge_errors(human: Mapping[str, Mapping[str, float | None]],
                 predicted: Mapping[str, JudgePrediction]) -> JudgeErrors:
    """Per-image agreement over a set of images (item id -> human dimension scores, item id -> prediction), both
    averagings (see the module docstring). Items on one side only, scalar and unreadable predictions add nothing."""
    diffs: list[float] = []
    per_image: list[dict[str, float | None]] = []
    for item in sorted(human):
        prediction = predicted.get(item)
        if prediction is None or prediction.scalar or prediction.problem is not None:
            continue
        image = paired_differences(human[item], prediction.scores)
        if image:
            diffs.extend(image.values())
            per_image.append(image_agreement(human[item], prediction))
    if not per_image:
        return JudgeErrors(0, error_cell([]), None, None)
    return JudgeErrors(len(per_image), error_cell(diffs), fmean(r["mae"] for r in per_image),
                       fmean(r["within_005"] for r in per_image))


# --- ranking within a poem -------------------------------------------------------------------------------------------


def per_poem_tau(rows: Iterable[tuple[str, str, float | None, float | None]]) -> dict[str, float]:
    """Per poem, Kendall tau-b between the human and the predicted quality of its images, from rows (poem id, item
    id, human quality, predicted quality); rows missing either value are left out, and so are poems where tau-b is
    undefined (fewer than two images, or one side constant: a constant judge has no tau). The rule is the poetry
    pipeline's (``stats.poem_kendall_taus``). An item twice in one poem is an error."""
    by_poem: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    seen: set[tuple[str, str]] = set()
    for poem, item, human, predicted in rows:
        if (poem, item) in seen:
            raise ValueError(f"item {item!r} of poem {poem!r} appears twice")
        seen.add((poem, item))
        if human is None or predicted is None or math.isnan(human) or math.isnan(predicted):
            continue
        by_poem[poem].append((item, float(human), float(predicted)))
    return poem_kendall_taus(by_poem)


def bootstrap_mean_tau(taus: Mapping[str, float], resamples: int = RESAMPLES, seed: int = 0,
                       level: float = LEVEL) -> tuple[float | None, float | None, float | None]:
    """The mean per-poem tau with a percentile bootstrap interval over poems (``statistics.bootstrap_ci`` on the
    per-poem values, taken in poem-id order so the mapping's order does not matter); (None, None, None) when no
    poem has a tau (the judge ranks nothing, e.g. a constant prediction)."""
    if not taus:
        return None, None, None
    ci = bootstrap_ci([taus[poem] for poem in sorted(taus)], resamples, seed, level)
    return ci.mean, ci.low, ci.high


# --- the trivial baseline --------------------------------------------------------------------------------------------


def calibration_mean(human_by_item: Mapping[str, Mapping[str, float | None]],
                     items: Iterable[str]) -> dict[str, float | None]:
    """The trivial judge: per dimension, the mean human score over ``items`` (the calibration poems' images), None
    where none of them has one. Predicting it for every held-out image (``JudgePrediction.of_scores``) gives a
    floor for the error figures; being constant, it orders nothing, so its tau is undefined for every poem."""
    sums = dict.fromkeys(DIMENSION_KEYS, 0.0)
    counts = dict.fromkeys(DIMENSION_KEYS, 0)
    for item in set(items):
        if item not in human_by_item:
            raise ValueError(f"calibration item {item!r} has no human scores")
        for key in DIMENSION_KEYS:
            value = human_by_item[item].get(key)
            if value is not None and not math.isnan(value):
                sums[key] += float(value)
                counts[key] += 1
    return {key: (sums[key] / counts[key] if counts[key] else None) for key in DIMENSION_KEYS}


# --- section 4: what drives the overall impression, and phase 1 ------------------------------------------------------


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def dimension_spearman(images: Iterable[Mapping[str, float | None]],
                       target: str = HOLISTIC) -> dict[str, tuple[float | None, int]]:
    """Per image, Spearman's rho between each metric and ``target`` (paper section 4: the overall impression is
    driven by core imagery and emotion). Metrics are the ten dimensions, then ``quality`` and ``recognizability``
    where the rows carry them (``stats.METRICS``), in that order, the target left out; each is (rho, n) over the
    images with both values (None or NaN is absent). rho is None with fewer than two images or a constant side."""
    if target not in METRICS:
        raise ValueError(f"target must be one of {', '.join(METRICS)}, not {target!r}")
    columns = [m for m in METRICS if m != target]
    pairs: dict[str, tuple[list[float], list[float]]] = {m: ([], []) for m in columns}
    for row in images:
        y = row.get(target)
        if not _present(y):
            continue
        for m in columns:
            x = row.get(m)
            if _present(x):
                pairs[m][0].append(float(x))
                pairs[m][1].append(float(y))
    out: dict[str, tuple[float | None, int]] = {}
    for m, (xs, ys) in pairs.items():
        rho: float | None = None
        if len(xs) >= 2 and len(set(xs)) > 1 and len(set(ys)) > 1:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConstantInputWarning)
                value = float(spearmanr(xs, ys).statistic)
            rho = None if math.isnan(value) else value
        out[m] = (rho, len(xs))
    return out


def phase1_accuracy(annotations: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, int, float]]:
    """Per rater group ('crowd', 'expert'), (correct, n, accuracy) of the phase-1 answers (phase
    'recognizability') that passed quality control (``passed_qc`` true; a rater's failed QC marks every answer of
    theirs failed). Answers without a true/false ``correct`` are left out. Compare with ``PHASE1_CHANCE``."""
    correct: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for row in annotations:
        if row.get("phase") != RECOGNIZABILITY_PHASE or row.get("passed_qc") is not True:
            continue
        outcome = row.get("correct")
        if not isinstance(outcome, bool):
            continue
        group = str(row.get("rater_group"))
        total[group] += 1
        correct[group] += outcome
    return {g: (correct[g], total[g], correct[g] / total[g]) for g in sorted(total)}
