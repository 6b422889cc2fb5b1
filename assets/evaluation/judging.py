"""The evaluation's model judges, and the human sheet that checks the similarity judge.

Why judges: reference overlap cannot tell a good critique that shares few words with the humans from a poor one
that echoes them, so both papers add a model judge, and the r/photocritique paper then tests the judge itself
(§4, Tables 4, 5, A2, A3). A run's predictions are judged after they exist:

- photocritique ``judge_preference``: which of the model critique and the post's top-ranked human critique is
  more useful to the photographer, the judge seeing the photo, the post and the pair. The paper shows each pair
  once in a random order; here it is asked in both orders, so position bias shows up as ``inconsistent`` instead
  of averaging into the score. ``combine_swapped`` makes one outcome (model 1, tie 0.5, human 0); an inconsistent
  or unreadable judgement is kept with its reason but left out of the item's value (the metric's parameters
  count them). Per item: the share of its critiques preferred.
- photocritique ``judge_similarity``: 1–5 substantive similarity. Pairing: the paper's "identical pairs" the
  preference judges and the annotators saw, each model critique with the matched (top-ranked) human critique,
  not the 3×3 max-mapping grid of the metrics: the annotators' study rated single pairs, and the judge is checked
  against it. One order (model critique as A: similarity is symmetric). Per item: the mean over its critiques.
- critique_canvas ``judge_quality`` (AesCanvas S2.2.3): the holistic 1–5 quality from the image, the instruction
  and the response (never the reference), with each criterion as ``judge_<criterion>`` beside it.

Every request goes through the shared call layer (``role_caller``: cached by request, logged in ``model_call``,
leased), one item of the loop per (prediction, judgement), so a resumed run asks only what is not judged yet by
this judge; a transport failure rejects the item (retryable) and it is asked again next run. Each judgement is an
entity derived from the prediction it judged, the benchmark item (the reference or the instruction and image)
and its model calls, and its rows go to ``evaluation_judgement`` (migration 0019), one per order shown.

The heuristic provider judges offline, computing each verdict from the texts the prompt was rendered from (the
request's context): the critique covering more aspects is preferred (``aspect_coverage``; then the longer one;
else a tie), similarity is the Jaccard overlap of the two word sets bucketed to 1–5, and quality comes from the
lexical statistics of ``response_stats``.

The human sheet: a seeded sample of the same model–human pairs, written as a blank CSV (sides shuffled per row,
so a rater cannot tell which critique is the model's); the returned sheets are read row by row, each row kept
or rejected with its reason, raters stored only as keyed hashes; the agreement among people and of the judge with
them (exact, within one, Krippendorff's ordinal α) is returned as a report section.
"""

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from dagster import Failure

from assets.core.exports import ExportFile, write_file
from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, run_items
from assets.core.logic.keyed_hash import KeyedHash
from assets.core.logic.textfiles import line_locator, read_csv_table
from assets.core.model_call_store import role_caller
from assets.core.model_calls import REJECTED, CallOutcome, schema_repair_request
from assets.core.step import Step
from assets.core.templates import PromptTemplate, render
from assets.evaluation.judge_settings import JudgeSettings, RaterSalt
from assets.evaluation.logic.aspect_coverage import aspects_of
from assets.evaluation.logic.benchmark_items import BenchmarkItem, BenchmarkLayout
from assets.evaluation.logic.critique_requests import EVALUATION_PROMPTS
from assets.evaluation.logic.judge_answers import A, B, INCONSISTENT, TIE, UNPARSED, JudgeAnswer, combine_swapped, parse_preference, parse_similarity
from assets.evaluation.logic.quality_judge import (CRITERIA, JUDGE_SCHEMA, JUDGE_SCHEMA_NAME, OVERALL, JudgeParse, judge_prompt,
                                                   load_judge_template, parse_quality_judgement)
from assets.evaluation.logic.rating_agreement import JudgeAgreement, RaterAgreement, judge_agreement, rater_agreement
from assets.evaluation.logic.response_stats import response_stats
from assets.evaluation.logic.run_identity import item_entity_id
from assets.evaluation.logic.scoring import ItemScore
from assets.evaluation.logic.text_stats import tokens, word_count
from assets.evaluation.model_runs import IMAGE_UNAVAILABLE, _mime
from resources.model_providers import ModelProvidersResource, RoleConfig
from resources.models.heuristic import OfflineAnswer
from resources.models.types import ModelRequest
from assets.evaluation.store import clear_similarity_ratings, record_similarity_pairs, write_judgements, write_similarity_ratings
from warehouse.db import Warehouse, registered
from warehouse.ids import digest_of, entity_id, sha256_file
from warehouse.lineage import ActivityLog, Entity

PREFERENCE, SIMILARITY, QUALITY = "judge_preference", "judge_similarity", "judge_quality"
CRITERION_METRICS = {c: QUALITY if c == OVERALL else f"judge_{c}" for c in CRITERIA}
MODEL_FIRST, REFERENCE_FIRST, BOTH, ALONE = "model_first", "reference_first", "both", "alone"
MODEL, REFERENCE = "model", "reference"
PREFERENCE_SCHEMA, SIMILARITY_SCHEMA = "photocritique_preference", "photocritique_similarity"
NO_REFERENCE = "no_reference"
_VALUE = {MODEL: 1.0, TIE: 0.5, REFERENCE: 0.0}

SHEET_COLUMNS = ("row_id", "critique_a", "critique_b", "rating", "rater")
UNKNOWN_ROW, INVALID_RATING, DUPLICATE_RATING, MISSING_RATER = "unknown_row_id", "invalid_rating", "duplicate_rating", "missing_rater"
SALT_SETTING = "similarity_rater_salt"
_RATING = re.compile(r"[1-5]")

_SCHEMAS: dict[str, dict[str, Any]] = {
    PREFERENCE_SCHEMA: {"type": "object", "properties": {"winner": {"type": "string", "enum": [A, B, TIE]},
                                                         "reason": {"type": "string"}},
                        "required": ["winner", "reason"], "additionalProperties": False},
    SIMILARITY_SCHEMA: {"type": "object", "properties": {"similarity": {"type": "integer", "minimum": 1, "maximum": 5},
                                                         "reason": {"type": "string"}},
                        "required": ["similarity", "reason"], "additionalProperties": False},
    JUDGE_SCHEMA_NAME: JUDGE_SCHEMA,
}


@dataclass(frozen=True)
class MetricStatus:
    """Whether a judge metric ran on a run, and as what: an ``evaluation_metric`` row once keyed by the run."""

    metric: str
    status: str  # ran | unavailable
    reason: str | None
    version: str
    parameters: Mapping[str, Any]

    def as_row(self, run_key: str) -> dict[str, Any]:
        return {"run_key": run_key, "metric": self.metric, "status": self.status, "reason": self.reason,
                "version": self.version, "parameters": json.dumps(self.parameters, sort_keys=True, default=str)}


@dataclass(frozen=True)
class _Judge:
    """One judgement kind: its metric, the flag that turns it on, its template and schema, and where it scores."""

    metric: str
    flag: str
    template: PromptTemplate
    schema: str
    needs_image: bool
    scored: Mapping[str, str]  # metric -> the position whose rows give the item's value
    pairing: str


def _judges(benchmark: str) -> list[_Judge]:
    if benchmark == "photocritique":
        pairing = "each model critique with the top-ranked human critique"
        return [_Judge(PREFERENCE, "pairwise", EVALUATION_PROMPTS.load("photocritique_pairwise_judge_v1"), PREFERENCE_SCHEMA,
                       True, {PREFERENCE: BOTH}, pairing + ", shown in both orders"),
                _Judge(SIMILARITY, "similarity", EVALUATION_PROMPTS.load("photocritique_similarity_judge_v1"),
                       SIMILARITY_SCHEMA, False, {SIMILARITY: MODEL_FIRST}, pairing + ", the model critique as A")]
    if benchmark == "critique_canvas":
        return [_Judge(QUALITY, "quality", load_judge_template(), JUDGE_SCHEMA_NAME, True,
                       {m: ALONE for m in CRITERION_METRICS.values()}, "the response alone, with its instruction and image")]
    raise KeyError(f"no judges for benchmark {benchmark!r}")


class _Unreadable(ValueError):
    """A judge answer the parser could not read; the call layer asks once more, then records ``reason_code``."""

    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(detail)
        self.reason_code = reason_code


def _read_verdict(parse: Callable[[str], JudgeAnswer]) -> Callable[[str], JudgeAnswer]:
    def read(text: str) -> JudgeAnswer:
        answer = parse(text)
        if answer.value is None:
            raise _Unreadable(answer.problem or "invalid_answer", answer.detail)
        return answer
    return read


def _read_quality(text: str) -> JudgeParse:
    parsed = parse_quality_judgement(text)
    if parsed.quality is None:
        raise _Unreadable(parsed.reason_code or "invalid_answer", parsed.detail)
    return parsed


_PARSERS = {PREFERENCE_SCHEMA: _read_verdict(parse_preference), SIMILARITY_SCHEMA: _read_verdict(parse_similarity),
            JUDGE_SCHEMA_NAME: _read_quality}


def _repair(original: ModelRequest, invalid_answer: str, problem: str) -> ModelRequest:
    """An unreadable verdict is asked again once, with the shared repair prompt and the judgement's schema."""
    return schema_repair_request(original, invalid_answer, problem, _SCHEMAS[original.schema_name or ""])


# --- offline judges -------------------------------------------------------------------------------------------

def judge_offline_answers() -> dict[str, OfflineAnswer]:
    """The heuristic provider's judges: each verdict computed from the texts in the request's context."""
    return {PREFERENCE_SCHEMA: _offline_preference, SIMILARITY_SCHEMA: _offline_similarity,
            JUDGE_SCHEMA_NAME: _offline_quality}


def _offline_preference(request: ModelRequest) -> dict[str, Any]:
    """The critique naming more aspects wins, then the longer one; equal on both is a tie. Position plays no part."""
    a, b = (request.context[k] for k in ("critique_a", "critique_b"))
    weight_a, weight_b = ((len(aspects_of(t)), word_count(t)) for t in (a, b))
    winner = A if weight_a > weight_b else B if weight_b > weight_a else TIE
    return {"winner": winner, "reason": f"A covers {weight_a[0]} aspects in {weight_a[1]} words, B {weight_b[0]} in"
                                        f" {weight_b[1]}"}


def _offline_similarity(request: ModelRequest) -> dict[str, Any]:
    """Jaccard overlap of the two word sets (function words included, so unrelated texts still share some),
    bucketed at 0.15, 0.25, 0.4 and 0.6."""
    a, b = (set(tokens(request.context[k])) for k in ("critique_a", "critique_b"))
    overlap = len(a & b) / len(a | b) if a | b else 1.0
    return {"similarity": 1 + sum(overlap >= t for t in (0.15, 0.25, 0.4, 0.6)), "reason": f"word overlap {overlap:.2f}"}


def _offline_quality(request: ModelRequest) -> dict[str, Any]:
    """From the response's lexical statistics: specificity from aesthetic-term density, usefulness from the
    dimensions addressed, appropriateness from whether a focused question's dimensions are all addressed;
    grounding cannot be checked without seeing, so it is the lesser of specificity and usefulness. An empty
    response scores 1 everywhere, as the rubric says."""
    stats = response_stats(request.context["response"], request.context["instruction"])
    if not stats.words:
        return dict.fromkeys(CRITERIA, 1)
    specificity = 1 + sum(100 * stats.term_hits / stats.words >= t for t in (2, 4, 7, 11))
    usefulness = 1 + min(4, len(stats.dimensions))
    appropriateness = {True: 5, False: 2, None: 3 if stats.dimensions else 1}[stats.aligned]
    scores = {"visual_grounding": min(specificity, usefulness), "aesthetic_specificity": specificity,
              "criterion_appropriateness": appropriateness, "analytical_usefulness": usefulness}
    return {**scores, OVERALL: math.floor(sum(scores.values()) / len(scores) + 0.5)}


# --- judging a run --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Pending:
    item: BenchmarkItem
    sample: int
    prediction_id: str
    text: str
    judge: _Judge


def judge_scores(step: Step, layout: BenchmarkLayout, run_key: str, items: Mapping[str, BenchmarkItem],
                 judges: JudgeSettings, providers: ModelProvidersResource,
                 image_of: Callable[[BenchmarkItem], bytes | None]) -> tuple[list[MetricStatus], Iterator[ItemScore]]:
    """Judge every prediction of ``run_key`` not yet judged by the configured judge, then each judge metric's
    status and the per-item values (every item of ``items``; None where nothing could be judged). The
    predictions are read from the warehouse a page at a time. Raises ValueError for an unknown judge role."""
    config = providers.role(judges.role)
    judge = f"{config.provider}/{config.model}"
    kinds = _judges(layout.name)
    active = [k for k in kinds if getattr(judges, k.flag)]
    if active:
        caller, _ = role_caller(step.warehouse, step.activity_id, providers, judges.role, _repair,
                                offline=judge_offline_answers)

        def judged(item: Item[_Pending]) -> Outcome:
            return _judge_one(item, caller.call, config, image_of)

        def write(log: ActivityLog, done: list[Done[_Pending]]) -> None:
            _write_judgements(log, layout, run_key, judge, done)

        try:
            run_items(step, f"{layout.name}_judgements", _pending(step.warehouse, layout, run_key, items, judge, active),
                      judged, write, batch_size=64, workers=judges.max_concurrency, before_write=caller.store.flush)
        finally:
            caller.store.close()
    statuses = [_status(k, judges, config, judge, step.warehouse, run_key) for k in kinds]
    return [s for group in statuses for s in group], _item_scores(step.warehouse, run_key, judge, active, items)


def _pending(wh: Warehouse, layout: BenchmarkLayout, run_key: str, items: Mapping[str, BenchmarkItem], judge: str,
             kinds: Sequence[_Judge]) -> Iterator[Item[_Pending]]:
    for kind in kinds:
        for page in wh.pages(
                "SELECT p.entity_id, p.item_id, p.sample, p.prediction FROM evaluation_prediction p WHERE p.run_key = ?"
                " AND NOT EXISTS (SELECT 1 FROM evaluation_judgement j WHERE j.run_key = p.run_key AND j.item_id = p.item_id"
                " AND j.sample = p.sample AND j.metric = ? AND j.judge = ?)", [run_key, kind.metric, judge],
                key="p.entity_id", block=1000):
            for prediction_id, item_id, sample, text in page:
                if item_id not in items:
                    continue
                digest = digest_of([run_key, item_id, sample, kind.metric, judge])
                yield Item(entity_id("judgement_request", digest), f"{layout.dataset}/{item_id}#sample={sample} ({kind.metric})",
                           digest_of([prediction_id, kind.template.sha256, judge]),
                           _Pending(items[item_id], sample, prediction_id, text, kind))


def _request(kind: _Judge, config: RoleConfig, image: bytes | None, context: dict[str, Any], system: str,
             user: str) -> ModelRequest:
    return ModelRequest(role="judge", model=config.model, system=system, user=user, image=image,
                        image_mime=None if image is None else _mime(image), json_schema=_SCHEMAS[kind.schema],
                        schema_name=kind.schema, temperature=config.temperature, max_output_tokens=config.max_output_tokens,
                        template_id=kind.template.id, template_version=kind.template.version, context=context)


def _requests(p: _Pending, config: RoleConfig, image: bytes | None) -> list[tuple[str, ModelRequest]]:
    """(position, request) of each answer the judgement needs; the context holds the texts the prompt shows, which
    the offline judges read."""
    base = {"item": p.item.id, "sample": p.sample}
    if p.judge.metric == QUALITY:
        instruction = p.item.fields["instruction"]
        prompt = judge_prompt(instruction, p.text)
        context = {**base, "instruction": instruction, "response": p.text}
        return [(ALONE, _request(p.judge, config, image, context, prompt.system, prompt.user))]
    reference = p.item.references[0]
    orders = [(MODEL_FIRST, p.text, reference)] + ([(REFERENCE_FIRST, reference, p.text)] if p.judge.metric == PREFERENCE else [])
    post = {"title": p.item.fields.get("title", ""), "body": p.item.fields.get("body", "")} if p.judge.metric == PREFERENCE else {}
    return [(position, _request(p.judge, config, image, {**base, "position": position, "critique_a": a, "critique_b": b},
                                *render(p.judge.template, critique_a=a, critique_b=b, **post)))
            for position, a, b in orders]


def _judge_one(item: Item[_Pending], call: Callable[..., CallOutcome], config: RoleConfig,
               image_of: Callable[[BenchmarkItem], bytes | None]) -> Outcome:
    """Ask every order of one judgement; a transport failure of any rejects it (retryable), an answer that does
    not read after its repair is kept as an unreadable verdict."""
    p = item.payload
    if p.judge.metric != QUALITY and not p.item.references:
        return Rejected(NO_REFERENCE, f"{item.locator}: the item has no human critique to compare with")
    image = image_of(p.item) if p.judge.needs_image else None
    if p.judge.needs_image and image is None:
        return Rejected(IMAGE_UNAVAILABLE, f"{item.locator}: image {p.item.images[0].sha256[:12]} is in neither the"
                        " release nor the blob store")
    answers = []
    for position, request in _requests(p, config, image):
        outcome = call(request, _PARSERS[p.judge.schema], item_id=item.key)
        if not outcome.ok and outcome.status != REJECTED:
            return Rejected(outcome.reason_code or outcome.status, f"{item.locator}: {outcome.detail}", retryable=True)
        answers.append((position, outcome))
    return Kept((_rows(p.judge.metric, answers), [c for _, o in answers for c in o.call_ids],
                 sum(o.requests_sent for _, o in answers)), count=f"judged:{p.judge.metric}")


def _row(metric: str, position: str, outcome: str | None, value: float | None, reason: str | None, detail: str | None,
         rationale: str | None = None, call_id: str | None = None) -> dict[str, Any]:
    return {"metric": metric, "position": position, "outcome": outcome, "value": value, "reason": reason,
            "detail": detail, "rationale": rationale, "call_id": call_id}


def _rows(metric: str, answers: list[tuple[str, CallOutcome]]) -> list[dict[str, Any]]:
    """The judgement's rows: one per answer read, and for a preference the two orders combined."""
    rows = []
    verdicts: dict[str, str | None] = {}
    for position, outcome in answers:
        call_id = outcome.call_ids[-1] if outcome.call_ids else None
        if not outcome.ok:
            verdicts[position] = None
            rows.append(_row(metric, position, None, None, outcome.reason_code, outcome.detail, call_id=call_id))
            continue
        parsed = outcome.value
        if metric == QUALITY:
            rows += [_row(CRITERION_METRICS[c], position, None, float(v), None, None, call_id=call_id)
                     for c, v in parsed.quality.scores.items()]
        elif metric == SIMILARITY:
            rows.append(_row(metric, position, None, float(parsed.value), None, parsed.detail, parsed.rationale, call_id))
        else:
            verdicts[position] = parsed.value
            side = {A: MODEL, B: REFERENCE} if position == MODEL_FIRST else {A: REFERENCE, B: MODEL}
            shown = side.get(parsed.value, TIE)
            rows.append(_row(metric, position, shown, _VALUE[shown], None, parsed.detail, parsed.rationale, call_id))
    if metric == PREFERENCE:
        combined = combine_swapped(verdicts[MODEL_FIRST], verdicts[REFERENCE_FIRST])
        outcome = {A: MODEL, B: REFERENCE}.get(combined, combined)
        orders = "; ".join(f"{r['position']}: {r['outcome'] or r['reason']}" for r in rows)
        rows.append(_row(metric, BOTH, outcome, _VALUE.get(outcome), outcome if outcome in (INCONSISTENT, UNPARSED) else None,
                         orders))
    return rows


def _write_judgements(log: ActivityLog, layout: BenchmarkLayout, run_key: str, judge: str, done: list[Done[_Pending]]) -> None:
    entities, edges, stored, calls = [], [], [], []
    for d in done:
        if not d.kept:
            continue
        p = d.item.payload
        rows, call_ids, _ = d.outcome.value
        content = digest_of(rows)
        judgement = entity_id("evaluation_judgement", digest_of([run_key, p.item.id, p.sample, p.judge.metric, judge,
                                                                 p.judge.template.sha256, content]))
        entities.append(Entity(judgement, "evaluation_judgement", content,
                               {"run": run_key, "item": p.item.id, "sample": p.sample, "metric": p.judge.metric, "judge": judge}))
        edges += [(judgement, p.prediction_id, "judges"), (judgement, item_entity_id(layout, p.item.id), "judged_against")]
        edges += [(judgement, c, "judged_by") for c in call_ids]
        calls += call_ids
        template = f"{p.judge.template.id}@{p.judge.template.version}"
        stored += [{**r, "run_key": run_key, "item_id": p.item.id, "sample": p.sample, "judge": judge, "template": template,
                    "entity_id": judgement, "activity_id": log.activity_id} for r in rows]
    log.entities(entities)
    log.generated(e.entity_id for e in entities)
    log.derived(edges)
    log.used(calls, "model_call")
    log.used((p.prediction_id for p in (d.item.payload for d in done if d.kept)), "prediction")
    write_judgements(log.con, stored)
    log.unrejected(f"{layout.name}_judgements", [d.item.key for d in done if d.kept])


def _status(kind: _Judge, judges: JudgeSettings, config: RoleConfig, judge: str, wh: Warehouse,
            run_key: str) -> list[MetricStatus]:
    """The status of each metric the judgement kind gives; what it excluded, and why, counted in its parameters."""
    version = f"{kind.template.id}@{kind.template.version}; judge {judge}"
    parameters: dict[str, Any] = {"role": judges.role, "judge": judge, "template_sha256": kind.template.sha256,
                                  "temperature": config.temperature, "max_output_tokens": config.max_output_tokens,
                                  "pairing": kind.pairing}
    if not getattr(judges, kind.flag):
        return [MetricStatus(m, "unavailable", f"turned off (evaluation.judges.{kind.flag} is false)", version, parameters)
                for m in kind.scored]
    counted = wh.query("SELECT metric, count(value) AS judged, count(*) - count(value) AS excluded,"
                       " list(DISTINCT reason) FILTER (WHERE reason IS NOT NULL) AS reasons FROM evaluation_judgement"
                       " WHERE run_key = ? AND judge = ? AND list_contains(?, metric || '/' || position) GROUP BY metric",
                       [run_key, judge, [f"{m}/{p}" for m, p in kind.scored.items()]]).set_index("metric")
    excluded = wh.query("SELECT metric, reason, count(*) AS n FROM evaluation_judgement WHERE run_key = ? AND judge = ?"
                        " AND value IS NULL AND list_contains(?, metric || '/' || position) GROUP BY ALL ORDER BY ALL",
                        [run_key, judge, [f"{m}/{p}" for m, p in kind.scored.items()]])
    out = []
    for metric in kind.scored:
        judged = int(counted.loc[metric, "judged"]) if metric in counted.index else 0
        reasons = {r: int(n) for m, r, n in excluded.itertuples(index=False) if m == metric}
        out.append(MetricStatus(metric, "ran", None, version, {**parameters, "judged": judged, "excluded": reasons}))
    return out


def _item_scores(wh: Warehouse, run_key: str, judge: str, kinds: Sequence[_Judge],
                 items: Mapping[str, BenchmarkItem]) -> Iterator[ItemScore]:
    """Per item and judge metric, the mean of its judged values (excluded judgements left out)."""
    scored = {m: p for k in kinds for m, p in k.scored.items()}
    means = {(item_id, metric): value for item_id, metric, value in wh.query(
        "SELECT item_id, metric, avg(value) AS value FROM evaluation_judgement WHERE run_key = ? AND judge = ?"
        " AND list_contains(?, metric || '/' || position) AND value IS NOT NULL GROUP BY ALL",
        [run_key, judge, [f"{m}/{p}" for m, p in scored.items()]]).itertuples(index=False)}
    for item_id in items:
        for metric in scored:
            value = means.get((item_id, metric))
            yield ItemScore(item_id, metric, None if value is None else float(value))


# --- the human similarity sheet -------------------------------------------------------------------------------

def write_similarity_sheet(step: Step, layout: BenchmarkLayout, items: Mapping[str, BenchmarkItem], run_keys: Sequence[str],
                           judges: JudgeSettings) -> Path | None:
    """The blank sheet ``<sheet_dir>/<benchmark>_similarity_sheet.csv``: ``pairs`` model–human pairs of the model and
    file runs among ``run_keys`` (baselines left out), sampled by a seeded hash order, each with a stable row id;
    the same runs and seed write the same bytes. Its pairs are recorded (``evaluation_similarity_pair``) so a
    returned sheet is read against every pair ever listed. Returns the sheet's path (None: no sheet_dir, or no
    pair to list)."""
    settings = judges.similarity_sheet
    if settings.sheet_dir is None:
        return None
    target = Path(settings.sheet_dir) / f"{layout.name}_similarity_sheet.csv"
    referenced = [item_id for item_id, item in items.items() if item.references]
    with step.batch() as log:
        picked = log.con.execute(
            "SELECT p.run_key, p.item_id, p.sample, p.entity_id, p.prediction FROM evaluation_prediction p"
            " JOIN evaluation_run r USING (run_key) WHERE list_contains(?, p.run_key) AND r.source IN ('model', 'predictions_file')"
            " AND list_contains(?, p.item_id) ORDER BY md5(concat_ws('|', ?, p.run_key, p.item_id, p.sample)), p.entity_id"
            " LIMIT ?", [list(run_keys), referenced, str(settings.seed), settings.pairs]).fetchall()
    if not picked:
        step.notes["similarity_sheet"] = "no model critique to pair with a human one: no sheet written"
        return None
    sheet_rows, pairs = [], []
    for order, (key, item_id, sample, prediction_id, text) in enumerate(picked):
        reference = items[item_id].references[0]
        row_id = "sim-" + digest_of([key, item_id, sample, prediction_id, digest_of(reference)])[:16]
        shown_as = A if int(digest_of([settings.seed, row_id])[0], 16) % 2 == 0 else B
        a, b = (text, reference) if shown_as == A else (reference, text)
        sheet_rows.append({"row_id": row_id, "critique_a": a, "critique_b": b, "rating": None, "rater": None, "ord": order})
        pairs.append({"row_id": row_id, "benchmark": layout.name, "run_key": key, "item_id": item_id, "sample": sample,
                      "prediction_id": prediction_id, "reference_rank": 1, "model_shown_as": shown_as,
                      "sheet": step.name_of(target)})
    write_sheet(step, f"{layout.name}_similarity_sheet", target, SHEET_COLUMNS, sheet_rows, pairs, record_similarity_pairs)
    step.notes["similarity_sheet"] = f"{step.name_of(target)} ({len(pairs)} pairs)"
    return target


def write_sheet(step: Step, name: str, target: Path, columns: Sequence[str], sheet: Sequence[Mapping[str, Any]],
                listed: Sequence[Mapping[str, Any]], record: Callable[[Any, list[Mapping]], None]) -> None:
    """A blank sheet for people: ``sheet``'s ``columns`` in its ``ord`` order written as CSV (an export listing the
    predictions it shows), and its rows recorded (``record``) in the same transaction."""
    query = f"SELECT {', '.join(columns)} FROM _blank_sheet ORDER BY ord"
    with step.batch() as log, registered(log.con, "_blank_sheet", pd.DataFrame(list(sheet))):
        record(log.con, [{**row, "activity_id": log.activity_id} for row in listed])
        write_file(step, log, name, ExportFile(target, query, "csv"), [row["prediction_id"] for row in listed], "lists")


@dataclass(frozen=True)
class _SheetRow:
    sheet: str
    sheet_entity: str
    line: int
    cells: Mapping[str, str] | None
    problem: tuple[str, str] | None


def sheet_rows(step: Step, stage: str, path: Path, kind: str, columns: Sequence[str]) -> Iterator[Item[_SheetRow]]:
    """One item per record of a returned sheet of ``kind`` (its ``columns`` required); a sheet that cannot be read
    at all is rejected as an input."""
    name, sha = step.name_of(path), sha256_file(path)
    for record in read_csv_table(path, tuple(columns)):
        if record.file_level:
            step.reject_input(stage, kind, path, sha, record.problem[0], f"{name}: {record.problem[1]}")
            return
        locator = line_locator(name, record.line)
        cells = None if record.problem else {k: (v or "").strip() for k, v in record.fields.items()}
        yield Item(entity_id(f"{kind}_row", digest_of([name, record.line])), locator, digest_of([sha, record.line]),
                   _SheetRow(name, entity_id(kind, sha), record.line, cells, record.problem))


def read_similarity_sheets(step: Step, layout: BenchmarkLayout, judges: JudgeSettings,
                           providers: ModelProvidersResource) -> tuple[str, str]:
    """Read every returned sheet row by row into ``evaluation_similarity_rating`` (replacing the last reading, so the
    table holds what the configured sheets say now), each bad row rejected (stage ``<benchmark>_similarity_ratings``)
    with its reason and ``sheet#line=N``; returns the agreement section (title, Markdown body) for the report."""
    stage = f"{layout.name}_similarity_ratings"
    settings = judges.similarity_sheet
    config = providers.role(judges.role)
    judge = f"{config.provider}/{config.model}"
    with step.batch() as log:
        clear_similarity_ratings(log.con, layout.name)
        log.unrejected_all(stage)
        known = {row_id: prediction for row_id, prediction in log.con.execute(
            "SELECT row_id, prediction_id FROM evaluation_similarity_pair WHERE benchmark = ?", [layout.name]).fetchall()}
    missing = [step.name_of(p) for p in settings.returned if not Path(p).is_file()]
    present = [Path(p) for p in settings.returned if Path(p).is_file()]
    if present:
        hasher = checked_hasher(step, settings, SALT_SETTING)
        seen: dict[tuple[str, str], str] = {}

        def check(item: Item[_SheetRow]) -> Outcome:
            return _check_row(item, known, hasher, seen)

        def write(log: ActivityLog, done: list[Done[_SheetRow]]) -> None:
            _write_ratings(log, layout.name, known, done)

        for path in present:
            run_items(step, stage, sheet_rows(step, stage, path, "similarity_sheet", ("row_id", "rating", "rater")), check,
                      write, batch_size=500)
    if missing:
        step.notes["similarity_sheets_missing"] = missing
    return _agreement_section(step.warehouse, layout.name, judge, stage, missing)


def checked_hasher(step: Step, settings: RaterSalt, setting: str) -> KeyedHash:
    """The configured hasher; a salt other than the one this warehouse's raters were hashed with stops the run
    (a rater's old and new ratings would no longer meet)."""
    hasher = settings.rater_hasher()
    fingerprint = hasher.salt_fingerprint()
    if step.settings_fingerprint(setting, fingerprint) != fingerprint:
        raise Failure(description=f"the {settings.salt_label} differs from the one this warehouse was built with; rater"
                      " hashes would change. Restore the salt or use a new warehouse.")
    return hasher


def _check_row(item: Item[_SheetRow], known: Mapping[str, str], hasher: KeyedHash, seen: dict[tuple[str, str], str]) -> Outcome:
    """A rated row, kept; an unrated one (empty rating), skipped; anything else rejected with its reason."""
    row = item.payload
    if row.problem:
        return Rejected(row.problem[0], f"{item.locator}: {row.problem[1]}")
    cells = row.cells
    if not cells["rating"]:
        return Kept(None, count="similarity_rows_unrated")
    if cells["row_id"] not in known:
        return Rejected(UNKNOWN_ROW, f"{item.locator}: row_id {cells['row_id']!r} is on no similarity sheet written here")
    if not _RATING.fullmatch(cells["rating"]):
        return Rejected(INVALID_RATING, f"{item.locator}: rating {cells['rating']!r} is not a whole number from 1 to 5")
    rater = sheet_rater(item, hasher, seen)
    if isinstance(rater, Rejected):
        return rater
    return Kept((cells["row_id"], rater, int(cells["rating"])), count="similarity_ratings_read")


def sheet_rater(item: Item[_SheetRow], hasher: KeyedHash, seen: dict[tuple[str, str], str]) -> str | Rejected:
    """The rater of a filled sheet row as a keyed hash, or the row's rejection: no rater named, or one who already
    rated the row (``seen``: (row, rater) -> where first)."""
    cells = item.payload.cells
    if not cells["rater"]:
        return Rejected(MISSING_RATER, f"{item.locator}: the rater column is empty")
    rater = "rater-" + hasher.digest(" ".join(cells["rater"].split()).casefold())
    earlier = seen.setdefault((cells["row_id"], rater), item.locator)
    if earlier != item.locator:
        return Rejected(DUPLICATE_RATING, f"{item.locator}: this rater already rated {cells['row_id']} at {earlier}")
    return rater


def _write_ratings(log: ActivityLog, benchmark: str, known: Mapping[str, str], done: list[Done[_SheetRow]]) -> None:
    write_ratings(log, "similarity", known, done, lambda rating: {"benchmark": benchmark, "rating": rating},
                  write_similarity_ratings)


def write_ratings(log: ActivityLog, kind: str, known: Mapping[str, str], done: list[Done[_SheetRow]],
                  columns: Callable[..., Mapping[str, Any]], write: Callable[[Any, list[Mapping]], None]) -> None:
    """The kept rows of a returned ``kind`` sheet (each outcome ``(row_id, rater, *verdict)``): every rating an entity
    read from its sheet and rating the prediction its row shows, stored with ``columns(*verdict)``."""
    rated = [(d.item.payload, d.outcome.value) for d in done if d.kept and d.outcome.value is not None]
    sheets = {row.sheet_entity: row.sheet for row, _ in rated}
    log.entities(Entity(e, f"{kind}_sheet", e.split(":", 1)[1], {"path": name}) for e, name in sheets.items())
    log.used(sheets, f"{kind}_sheet")
    rows, entities, edges = [], [], []
    for row, (row_id, rater, *verdict) in rated:
        rating_id = entity_id(f"{kind}_rating", digest_of([row_id, rater, *verdict]))
        entities.append(Entity(rating_id, f"{kind}_rating", digest_of(verdict[0] if len(verdict) == 1 else verdict),
                               {"row": row_id, "rater": rater}))
        edges += [(rating_id, row.sheet_entity, "read_from"), (rating_id, known[row_id], "rates")]
        rows.append({"row_id": row_id, "rater": rater, **columns(*verdict), "sheet": row.sheet, "line": row.line,
                     "entity_id": rating_id, "activity_id": log.activity_id})
    log.entities(entities)
    log.generated(e.entity_id for e in entities)
    log.derived(edges)
    write(log.con, rows)


@dataclass(frozen=True)
class SimilarityAgreement:
    """The human similarity study as stored: ratings aligned by sheet row, raters by hash."""

    rows: tuple[str, ...]                       # sheet rows someone rated
    humans: dict[str, list[int | None]]         # rater hash -> ratings aligned with ``rows``
    judge: list[int | None]                     # the judge's similarity rating of each row's pair
    among_humans: RaterAgreement | None         # None with fewer than two raters
    judge_vs_humans: JudgeAgreement | None      # None without raters or without a judge rating


def similarity_agreement(wh: Warehouse, benchmark: str, judge: str) -> SimilarityAgreement:
    ratings = wh.query("SELECT row_id, rater, rating FROM evaluation_similarity_rating WHERE benchmark = ?"
                       " ORDER BY row_id, rater", [benchmark])
    rows = tuple(sorted(set(ratings["row_id"])))
    index = {row_id: i for i, row_id in enumerate(rows)}
    humans: dict[str, list[int | None]] = {}
    for row_id, rater, rating in ratings.itertuples(index=False):
        humans.setdefault(rater, [None] * len(rows))[index[row_id]] = int(rating)
    judged = dict(wh.query(
        "SELECT s.row_id, j.value FROM evaluation_similarity_pair s JOIN evaluation_judgement j ON j.run_key = s.run_key"
        " AND j.item_id = s.item_id AND j.sample = s.sample WHERE s.benchmark = ? AND j.metric = ? AND j.position = ?"
        " AND j.judge = ? AND j.value IS NOT NULL", [benchmark, SIMILARITY, MODEL_FIRST, judge]).itertuples(index=False))
    judge_ratings = [None if judged.get(r) is None else int(judged[r]) for r in rows]
    among = rater_agreement(humans) if len(humans) >= 2 else None
    versus = judge_agreement(judge, judge_ratings, humans) if humans and any(v is not None for v in judge_ratings) else None
    return SimilarityAgreement(rows, humans, judge_ratings, among, versus)


def _share(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _agreement_section(wh: Warehouse, benchmark: str, judge: str, stage: str, missing: Sequence[str]) -> tuple[str, str]:
    title = f"{benchmark}: human similarity ratings and the judge {judge}"
    found = similarity_agreement(wh, benchmark, judge)
    rejected = wh.query("SELECT reason_code, count(*) AS n FROM rejection WHERE stage = ? GROUP BY ALL ORDER BY ALL", [stage])
    lines = [f"{len(found.rows)} sheet rows rated by {len(found.humans)} rater(s), named here by keyed hash only."]
    if len(rejected):
        lines.append("Rows rejected: " + ", ".join(f"{r} {n}" for r, n in rejected.itertuples(index=False))
                     + f" (rejection rows of stage {stage} name each sheet line).")
    if missing:
        lines.append("Returned sheets not found: " + ", ".join(missing) + ".")
    if found.humans:
        lines += ["", "| rater | rows rated | mean rating |", "|---|---|---|"]
        for rater, ratings in found.humans.items():
            given = [r for r in ratings if r is not None]
            lines.append(f"| {rater[:14]} | {len(given)} | {sum(given) / len(given):.2f} |")
        judged = [r for r in found.judge if r is not None]
        if judged:
            lines.append(f"| judge {judge} | {len(judged)} | {sum(judged) / len(judged):.2f} |")
    if found.among_humans or found.judge_vs_humans:
        lines += ["", "| agreement | exact | within one | Krippendorff's α (ordinal) | Spearman ρ | mean difference |",
                  "|---|---|---|---|---|---|"]
    if found.among_humans:
        h = found.among_humans
        lines.append(f"| between humans | {_share(h.exact)} | {_share(h.within_one)} | {_number(h.alpha)} | – | – |")
    if found.judge_vs_humans:
        j = found.judge_vs_humans
        lines.append(f"| judge vs each human, averaged | {_share(j.exact)} | {_share(j.within_one)} | – |"
                     f" {_number(j.spearman_rho)} | {_number(j.mean_difference)} |")
    if not found.humans:
        lines.append("No ratings yet: fill in the blank sheet's rating (1–5) and rater columns and list the copies in"
                     " evaluation.judges.similarity_sheet.returned.")
    return title, "\n".join(lines)
