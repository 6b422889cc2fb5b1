"""Scoring a run of a closed-answer benchmark: every answer read (the option, box or scores it gives, or why none
could be read; an unreadable or missing answer is wrong), per-item scores for the leaderboard's bootstrap means, and
the run's figures that are not means over items.

- ContextCanvas (``000_*`` S2.3.3): ``accuracy`` over every case; on two-option cases ``binary_accuracy`` and
  ``yes_rate`` (answer A, the canonical Yes class), and macro-F1 with the per-class F1 of A and B.
- Counterfactual pairs (S2.3.3 eq. S22, Table S7): per pair the accuracy on the original and on the edit, ``pair``
  (both right), the directional update (``counterfactual.logic.edit_pairs.directional_update``: correct, reverse,
  unchanged) and its counts split by whether the unchanged answer was right on the original; ``ncu`` is +1 / -1 / 0
  per pair, so its mean is NCU / 100 and its bootstrap interval the paper's.
- AesEval (``003_*`` §3.3): per format, accuracy (judgment, region selection), None-accuracy and IoU
  (localisation), each also per indicator, and the overall score as the mean over indicators.
- The poem benchmark (``001_*`` §5, Table 4): per image the judge's mean absolute error over the rubric dimensions
  and the share within 0.05; per poem Kendall's tau of the image ordering, averaged over poems (bootstrap over
  poems). A scalar judge has no per-dimension output: only its tau is defined.

A condition that does not apply to an item (no description to show) leaves the item out, with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from assets.context_canvas.logic.case_records import YES_OPTION_ID
from assets.counterfactual.logic.edit_pairs import CORRECT, REVERSE, CounterfactualSpec, directional_update
from assets.evaluation.logic.aeseval_answers import score_item as score_design_answer
from assets.evaluation.logic.benchmark_items import BenchmarkItem
from assets.evaluation.logic.choice_answers import parse_choice
from assets.evaluation.logic.choice_requests import condition_problem
from assets.evaluation.logic.poem_judging import bootstrap_mean_tau, image_agreement, per_poem_tau, read_judge_prediction
from assets.evaluation.logic.run_aggregates import Aggregate, class_f1, mean_of_group_means
from assets.evaluation.logic.scoring import ItemScore

MISSING = "missing"
NO_GOLD = "no_gold"
UNSCORABLE = "unscorable_item"
BINARY_CLASSES = (YES_OPTION_ID, "B")  # the paper's A/B class mapping on two-option cases
FORMAT_PREFIX = {"aesthetic_judgment": "judgment", "region_selection": "region", "precise_localisation": "localisation"}

CONTEXT_METRICS = ("accuracy", "binary_accuracy", "yes_rate", "unreadable")
CONTEXT_AGGREGATES = ("macro_f1", *(f"f1:{c}" for c in BINARY_CLASSES))
COUNTERFACTUAL_METRICS = ("original_accuracy", "edit_accuracy", "pair_accuracy", "ncu", "correct_update", "reverse_update",
                          "unchanged_correct", "unchanged_wrong", "yes_rate", "unreadable")
POEM_METRICS = ("mae", "within_005")
POEM_AGGREGATES = ("kendall_tau",)
COMPARED = {
    "context_canvas": ("accuracy", "binary_accuracy"),
    "counterfactual": ("original_accuracy", "edit_accuracy", "pair_accuracy", "ncu"),
    "aeseval": ("judgment_accuracy", "region_accuracy", "localisation_none_accuracy", "localisation_iou"),
    "poem_benchmark": POEM_METRICS,
}
"""The per-item metrics runs are tested against each other on (right/wrong: McNemar; continuous: paired t); answer
shares such as the Yes rate describe a run, they are not better or worse."""


@dataclass(frozen=True)
class AnswerRow:
    """One answer as read (the ``evaluation_answer`` row)."""

    item_id: str
    sample: int
    answer: str | None
    gold: str | None
    correct: bool | None
    problem: str | None
    detail: str


@dataclass
class ScoredRun:
    scores: list[ItemScore] = field(default_factory=list)
    answers: list[AnswerRow] = field(default_factory=list)
    aggregates: list[Aggregate] = field(default_factory=list)
    skipped: dict[str, tuple[str, str]] = field(default_factory=dict)  # item -> (reason, detail)


def score_run(benchmark: str, condition: str, items: Mapping[str, BenchmarkItem], answers: Mapping[str, Mapping[int, str]],
              resamples: int, seed: int) -> ScoredRun:
    """Every item of ``items`` scored from the run's ``answers`` (item -> sample -> text)."""
    run = ScoredRun()
    applicable = []
    for item in items.values():
        problem = condition_problem(benchmark, condition, item)
        if problem is not None:
            run.skipped[item.id] = problem
        else:
            applicable.append(item)
    if benchmark == "context_canvas":
        _context(run, applicable, answers, resamples, seed)
    elif benchmark == "counterfactual":
        _counterfactual(run, applicable, answers)
    elif benchmark == "aeseval":
        _aeseval(run, applicable, answers, resamples, seed)
    elif benchmark == "poem_benchmark":
        _poem(run, applicable, answers, resamples, seed)
    else:
        raise KeyError(f"{benchmark!r} is not a closed-answer benchmark")
    return run


def _read(item: BenchmarkItem, sample: int, answers: Mapping[str, Mapping[int, str]], gold: str | None) -> AnswerRow:
    text = (answers.get(item.id) or {}).get(sample)
    if text is None:
        return AnswerRow(item.id, sample, None, gold, False, MISSING, "no answer stored for this item")
    options = {o["id"]: o["text"] for o in item.fields.get("options") or []}
    parsed = parse_choice(text, options)
    return AnswerRow(item.id, sample, parsed.option, gold, parsed.option is not None and parsed.option == gold,
                     parsed.problem, parsed.detail)


def _context(run: ScoredRun, items: Sequence[BenchmarkItem], answers: Mapping[str, Mapping[int, str]], resamples: int,
             seed: int) -> None:
    gold_binary, predicted_binary = [], []
    for item in items:
        gold = item.fields["golds"][0]
        if gold is None:
            run.skipped[item.id] = (NO_GOLD, "the release has no gold answer for this case")
            continue
        row = _read(item, 0, answers, gold)
        run.answers.append(row)
        values = {"accuracy": float(row.correct), "unreadable": float(row.answer is None)}
        if len(item.fields["options"]) == 2:
            values["binary_accuracy"] = float(row.correct)
            values["yes_rate"] = float(row.answer == YES_OPTION_ID)
            gold_binary.append(gold)
            predicted_binary.append(row.answer)
        run.scores += [ItemScore(item.id, name, value) for name, value in values.items()]
    run.aggregates += class_f1(gold_binary, predicted_binary, BINARY_CLASSES, resamples, seed)


def _counterfactual(run: ScoredRun, items: Sequence[BenchmarkItem], answers: Mapping[str, Mapping[int, str]]) -> None:
    for item in items:
        original_gold, edited_gold = item.fields["golds"]
        on_original, on_edit = _read(item, 0, answers, original_gold), _read(item, 1, answers, edited_gold)
        run.answers += [on_original, on_edit]
        spec = CounterfactualSpec(item.id, item.fields.get("decisive_cue") or "", "", original_gold, edited_gold)
        update = directional_update(spec, on_original.answer or "", on_edit.answer or "")
        unchanged = update not in (CORRECT, REVERSE)
        values = {"original_accuracy": float(on_original.correct), "edit_accuracy": float(on_edit.correct),
                  "pair_accuracy": float(on_original.correct and on_edit.correct),
                  "ncu": 1.0 if update == CORRECT else -1.0 if update == REVERSE else 0.0,
                  "correct_update": float(update == CORRECT), "reverse_update": float(update == REVERSE),
                  "unchanged_correct": float(unchanged and on_original.correct),
                  "unchanged_wrong": float(unchanged and not on_original.correct),
                  "yes_rate": (float(on_original.answer == YES_OPTION_ID) + float(on_edit.answer == YES_OPTION_ID)) / 2,
                  "unreadable": (float(on_original.answer is None) + float(on_edit.answer is None)) / 2}
        run.scores += [ItemScore(item.id, name, value) for name, value in values.items()]


def _aeseval(run: ScoredRun, items: Sequence[BenchmarkItem], answers: Mapping[str, Mapping[int, str]], resamples: int,
             seed: int) -> None:
    by_metric: dict[str, tuple[list[float], list[str]]] = {}
    for item in items:
        f = item.fields
        text = (answers.get(item.id) or {}).get(0)
        gold = item.references[0]
        try:
            result = score_design_answer(f["format"], gold, f["gold_box"], [o["text"] for o in f["options"]],
                                         "" if text is None else text, f["box_units"], tuple(f["canvas"]))
        except ValueError as exc:  # a gold outside the options, a canvas the metadata does not give: not scorable
            run.skipped[item.id] = (UNSCORABLE, str(exc))
            continue
        problem = MISSING if text is None else result.problem
        detail = "no answer stored for this item" if text is None else result.detail
        run.answers.append(AnswerRow(item.id, 0, result.answer, gold, result.correct, problem, detail))
        prefix = FORMAT_PREFIX[f["format"]]
        for name, value in result.metrics.items():
            metric = f"{prefix}_{name}"
            run.scores += [ItemScore(item.id, metric, value), ItemScore(item.id, f"{metric}:{f['indicator']}", value)]
            values, groups = by_metric.setdefault(metric, ([], []))
            values.append(value)
            groups.append(f["indicator"])
        run.scores.append(ItemScore(item.id, "unreadable", float(problem is not None)))
    for metric, (values, groups) in sorted(by_metric.items()):
        run.aggregates.append(mean_of_group_means(f"{metric}_overall", values, groups, resamples, seed))


def _poem(run: ScoredRun, items: Sequence[BenchmarkItem], answers: Mapping[str, Mapping[int, str]], resamples: int,
          seed: int) -> None:
    ranked = []
    for item in items:
        text = (answers.get(item.id) or {}).get(0)
        human = item.fields["human"]
        if text is None:
            run.answers.append(AnswerRow(item.id, 0, None, None, None, MISSING, "no answer stored for this image"))
            continue
        prediction = read_judge_prediction(text)
        run.answers.append(AnswerRow(item.id, 0, None if prediction.problem else _scores_text(prediction), None, None,
                                     prediction.problem, prediction.detail))
        if prediction.problem:
            continue
        if not prediction.scalar:
            agreement = image_agreement(human, prediction)
            run.scores += [ItemScore(item.id, name, agreement[name]) for name in POEM_METRICS]
        present = [v for v in human.values() if v is not None]
        if present and prediction.overall is not None:
            ranked.append((item.fields["poem_id"], item.id, sum(present) / len(present), prediction.overall))
    taus = per_poem_tau(ranked)
    mean, low, high = bootstrap_mean_tau(taus, resamples, seed)
    run.aggregates.append(Aggregate("kendall_tau", mean, low, high, len(taus), resamples, seed))


def _scores_text(prediction) -> str:
    if prediction.scalar:
        return f"{prediction.overall:.4f}"
    return ", ".join(f"{k}={'-' if v is None else f'{v:.2f}'}" for k, v in sorted(prediction.scores.items()))


def is_breakdown(metric: str) -> bool:
    """A per-indicator figure (``judgment_accuracy:layout_balance``): shown in the benchmark's own tables, not ranked
    as a metric of its own."""
    return ":" in metric and not metric.startswith(("f1:", "aspect:"))


def metric_names(benchmark: str, scored: Iterable[ItemScore], aggregates: Iterable[Aggregate]) -> list[str]:
    """The metrics a run reports (its status rows): the benchmark's fixed ones and those its items produced."""
    fixed = {"context_canvas": (*CONTEXT_METRICS, *CONTEXT_AGGREGATES), "counterfactual": COUNTERFACTUAL_METRICS,
             "poem_benchmark": (*POEM_METRICS, *POEM_AGGREGATES)}.get(benchmark, ())
    return sorted({*fixed, *(s.metric for s in scored), *(a.metric for a in aggregates)})
