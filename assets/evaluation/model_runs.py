"""Asking a model for its predictions on a benchmark: each (item, sample) not yet answered becomes one request
through the shared call layer (cached by request, logged in ``model_call``, concurrent, resumable: a finished call
is never repeated), and each answer a prediction entity derived from its benchmark item and its model call.

A baseline answers without a model, so a leaderboard has a floor computed from the input: ``baseline:title`` (the
post's title as the critique), ``baseline:instruction`` (the instruction repeated), ``baseline:always_no`` (option B,
the canonical No class, on every ContextCanvas case and pair side), ``baseline:first_option`` (AesEval: the first
option, and the full canvas as the box to localise) and ``baseline:calibration_mean`` (the poem benchmark: each
dimension's mean human score over the calibration poems, the same for every held-out image).
"""

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from assets.context_canvas.logic.case_records import CaseOption
from assets.context_canvas.logic.contact_sheet import contact_sheet
from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, StopItems, run_items
from assets.core.logic.iteration import batched
from assets.core.model_call_store import role_caller
from assets.core.model_calls import BudgetExhausted, CallBudget, schema_repair_request
from assets.core.step import Step
from assets.evaluation.logic.aeseval_answers import OfflineAnswerError
from assets.evaluation.logic.aeseval_answers import offline_answer as offline_design_answer
from assets.evaluation.logic.benchmark_items import BenchmarkItem, BenchmarkLayout, Release
from assets.evaluation.logic.choice_requests import (AESEVAL_SCHEMA, CONDITIONS, CONTEXT_ANSWER_SHAPE, CONTEXT_SCHEMA,
                                                     choice_call, choice_request, condition_problem)
from assets.evaluation.logic.critique_requests import (
    CRITIQUE_CANVAS_CONDITION,
    CRITIQUE_SCHEMA,
    CRITIQUES_SCHEMA,
    MULTI_CRITIQUES_SHAPE,
    CandidateCall,
    candidate_call,
    critique_request,
    parse_critique,
    parse_critiques,
)
from assets.evaluation.logic.grounding import CORRECT_IMAGE, SHUFFLE_METHOD, SHUFFLED_IMAGE, TEXT_ONLY, shuffled_images
from assets.evaluation.logic.offline_context import OFFLINE_CONTEXT_VERSION, offline_context_answer
from assets.evaluation.logic.offline_critic import CRITIC_VERSION, critique_of_image
from assets.evaluation.logic.photocritique_conditions import CRITIQUES_PER_POST
from assets.evaluation.logic.poem_judging import calibration_mean
from assets.evaluation.logic.run_identity import item_entity_id, prediction_entity_id, run_key, run_row
from assets.evaluation.logic.text_stats import word_count
from assets.evaluation.settings import ModelRun
from assets.evaluation.store import answered, record_run, write_predictions
from assets.poetry.logic.offline_answers import poem_offline_answers
from assets.poetry.logic.rubric_judge import JUDGE_SCHEMA_NAME, parse_judgement
from assets.poetry.logic.rubric_judge import repair_request as poem_repair_request
from resources.image_formats import DecodeFailure, recognised_format
from resources.model_providers import ModelProvidersResource
from resources.models.heuristic import OfflineAnswer, Refusal
from resources.models.types import ModelRequest
from warehouse.ids import digest_of, entity_id
from warehouse.lineage import ActivityLog, Entity

IMAGE_UNAVAILABLE = "image_unavailable"
PRIMARY_CONDITION = {"photocritique": "capped_plain", "critique_canvas": CRITIQUE_CANVAS_CONDITION,
                     **{benchmark: conditions[0] for benchmark, conditions in CONDITIONS.items()}}
Baseline = Callable[[BenchmarkItem, int], str]
"""A baseline's answer to call ``k`` of an item."""


def _first_option(item: BenchmarkItem, k: int) -> str:
    if item.fields["format"] == "precise_localisation":
        width, height = item.fields["canvas"]
        return "[0, 0, 1, 1]" if item.fields["box_units"] == "normalised" else f"[0, 0, {width}, {height}]"
    return item.fields["options"][0]["id"]


def _calibration_mean(calibration: Mapping[str, BenchmarkItem]) -> Baseline:
    means = calibration_mean({item.id: item.fields["human"] for item in calibration.values()}, list(calibration))
    answer = json.dumps({"scores": means}, sort_keys=True)
    return lambda item, k: answer


BASELINES: dict[str, dict[str, Callable[[Mapping[str, BenchmarkItem]], Baseline]]] = {
    "photocritique": {"baseline:title": lambda calibration: lambda item, k: item.fields["title"]},
    "critique_canvas": {"baseline:instruction": lambda calibration: lambda item, k: item.fields["instruction"]},
    "context_canvas": {"baseline:always_no": lambda calibration: lambda item, k: "B"},
    "counterfactual": {"baseline:always_no": lambda calibration: lambda item, k: "B"},
    "aeseval": {"baseline:first_option": lambda calibration: _first_option},
    "poem_benchmark": {"baseline:calibration_mean": _calibration_mean},
}
"""Per benchmark, its baselines: each built from the calibration items (the poem benchmark's, empty elsewhere)."""
CHOICE_BENCHMARKS = frozenset(CONDITIONS)


def evaluation_offline_answers() -> dict[str, OfflineAnswer]:
    """The offline critic for the heuristic provider: critiques computed from the request's image (it refuses a
    text-only request: it has nothing to look at)."""
    def image_of(request: ModelRequest) -> bytes:
        if request.image is None:
            raise Refusal("the offline critic needs the image")
        return request.image

    def critique(request: ModelRequest) -> dict[str, Any]:
        return {"critique": critique_of_image(image_of(request), int(request.context.get("sample", 0)))}

    def critiques(request: ModelRequest) -> dict[str, Any]:
        image = image_of(request)
        return {"critiques": [critique_of_image(image, k) for k in range(CRITIQUES_PER_POST)]}

    def context_choice(request: ModelRequest) -> dict[str, Any]:
        c = request.context
        return dict(offline_context_answer(c["scenario"], c["question"], [CaseOption(i, t) for i, t in c["options"]],
                                           request.image, c.get("description")))

    def design_answer(request: ModelRequest) -> dict[str, Any]:
        c = request.context
        try:
            return {"answer": offline_design_answer(c["format"], request.image, c["metadata"], c["indicator"],
                                                    c["options"], c["box_units"])}
        except OfflineAnswerError as exc:  # metadata or image the judge cannot read: this request's refusal
            raise Refusal(f"{exc.reason_code}: {exc.detail}") from exc

    return {CRITIQUE_SCHEMA: critique, CRITIQUES_SCHEMA: critiques, CONTEXT_SCHEMA: context_choice,
            AESEVAL_SCHEMA: design_answer, **poem_offline_answers()}


def _mime(image: bytes) -> str:
    """The image's media type from its header (JPEG when no decoder recognises it: the provider re-encodes)."""
    try:
        return f"image/{recognised_format(image)}"
    except DecodeFailure:
        return "image/jpeg"


def _repair(original: ModelRequest, invalid_answer: str, problem: str) -> ModelRequest:
    """An answer that did not read is asked again once, with the shared repair prompt."""
    if original.schema_name == JUDGE_SCHEMA_NAME:
        return poem_repair_request(original, invalid_answer, problem)
    shape = {CRITIQUES_SCHEMA: MULTI_CRITIQUES_SHAPE, CONTEXT_SCHEMA: CONTEXT_ANSWER_SHAPE}.get(original.schema_name,
                                                                                             {"type": "string"})
    return schema_repair_request(original, invalid_answer, problem, shape)


def _as_given(text: str) -> tuple[str]:
    """A closed answer is kept as it came (the scorer reads it; an unreadable one counts as wrong, never re-asked);
    only an empty answer is invalid."""
    if not text.strip():
        raise ValueError("the answer is empty")
    return (text.strip(),)


def _judged(text: str) -> tuple[str]:
    """A poem judge's answer, kept as it came once it passes the rubric schema (else the call layer repairs it)."""
    parse_judgement(text)
    return (text.strip(),)


def shown_image(benchmark: str, item: BenchmarkItem, k: int, image_of: Callable[[BenchmarkItem, int], bytes | None]) -> bytes | None:
    """The image call ``k`` of ``item`` shows: a counterfactual pair's original (0) or edit (1); a ContextCanvas
    case's images as one labelled contact sheet when it has several; else the item's image. None: not found."""
    if benchmark == "counterfactual":
        return image_of(item, k)
    if benchmark == "context_canvas" and len(item.images) > 1:
        images = [image_of(item, i) for i in range(len(item.images))]
        return None if any(image is None for image in images) else contact_sheet(images)
    return image_of(item, 0)


def ask_model(step: Step, layout: BenchmarkLayout, release: Release, items: Mapping[str, BenchmarkItem],
              run: ModelRun, providers: ModelProvidersResource, image_of: Callable[[BenchmarkItem, int], bytes | None],
              calibration: Mapping[str, BenchmarkItem] | None = None) -> str:
    """Answer every (item, sample) of ``run`` not yet answered; returns the run's key. ``calibration``: the items a
    baseline may learn from (the poem benchmark's calibration poems), never asked."""
    benchmark = layout.name
    condition = run.condition or PRIMARY_CONDITION[benchmark]
    closed = benchmark in CHOICE_BENCHMARKS
    call = choice_call(benchmark, condition) if closed else candidate_call(benchmark, condition)
    factory = BASELINES[benchmark].get(run.model)
    if factory is None and run.model.startswith("baseline:"):
        raise KeyError(f"{benchmark} has no {run.model!r}; baselines: {', '.join(BASELINES[benchmark])}")
    baseline = factory(calibration or {}) if factory is not None else None
    if baseline is not None:
        if call.control != CORRECT_IMAGE:
            raise KeyError(f"{run.model} reads no image, so it has no {call.control} control")
        model, decoding, source = run.model, {"baseline": run.model, "samples": call.samples}, "baseline"
        if calibration:
            decoding["calibration_items"] = digest_of(sorted(calibration))
    else:
        config = providers.role(run.model)
        model, decoding, source = f"{config.provider}/{config.model}", call.decoding(), "model"
        if config.provider == "heuristic":
            decoding = {**decoding, "offline": {"context_canvas": OFFLINE_CONTEXT_VERSION, "counterfactual": OFFLINE_CONTEXT_VERSION,
                                                "aeseval": "designs.logic.judge", "poem_benchmark": "poetry.heuristic_judgement"
                                                }.get(benchmark, CRITIC_VERSION)}
    shown = _shown_images(call, items, call.seed or 0)
    if call.control == SHUFFLED_IMAGE:
        decoding = {**decoding, "shuffle": {"method": SHUFFLE_METHOD, "seed": call.seed or 0}}
    key = run_key(benchmark, release, source, model, condition, decoding, call.seed or 0, None)
    with step.batch() as log:
        record_run(log.con, run_row(layout, release, key, source, model, condition, decoding, call.seed or 0, None, None,
                                    log.activity_id))
        done_before = answered(log.con, key)
    samples = range(call.samples)
    askable = [item for item in items.values() if not closed or condition_problem(benchmark, condition, item) is None]
    todo = [(item, k) for item in askable for k in range(call.calls_per_item)
            if any((item.id, s) not in done_before for s in (samples if call.multi_pass else (k,)))]

    caller = None
    if baseline is None:
        caller, _ = role_caller(step.warehouse, step.activity_id, providers, run.model, _repair,
                                offline=evaluation_offline_answers,
                                budget=CallBudget(run.max_calls, run.max_tokens))
    if closed:
        parse = _judged if benchmark == "poem_benchmark" else _as_given
    else:
        parse = parse_critiques(call.samples) if call.multi_pass else lambda text: (parse_critique(text),)

    def request_for(benchmark_item: BenchmarkItem, k: int) -> ModelRequest | None:
        """Call ``k`` of the item, showing the image its control gives it; None when that image is nowhere."""
        donor = shown[benchmark_item.id]
        image = None if donor is None else shown_image(benchmark, donor, k, image_of)
        if donor is not None and image is None:
            return None
        mime = None if image is None else _mime(image)
        if not closed:
            return critique_request(call, benchmark_item, k, image, mime, donor.images[0].sha256 if donor else None,
                                    model.split("/", 1)[1])
        sha = None if donor is None else (donor.images[k].sha256 if benchmark == "counterfactual"
                                          else "+".join(i.sha256 for i in donor.images))
        return choice_request(call, benchmark, condition, benchmark_item, k, image, mime, sha, model.split("/", 1)[1])

    def pending() -> Iterator[Item]:
        """The calls to make, claimed ahead a group at a time (as the item loop reads them, ahead of its workers)."""
        for group in batched(todo, run.max_concurrency):
            requests = {(item.id, k): _built(request_for, item, k) if caller else None for item, k in group}
            if caller is not None:
                caller.claim_ahead([r for r in requests.values() if isinstance(r, ModelRequest)])
            for item, k in group:
                digest = digest_of([key, item.id, k])
                yield Item(entity_id("prediction_request", digest), f"{layout.dataset}/{item.id}#call={k}", digest,
                           (item, k, requests[(item.id, k)]))

    def answer(item: Item) -> Outcome:
        benchmark_item, k, request = item.payload
        if isinstance(request, Exception):  # building it failed: this item's fault, isolated by the loop
            raise request
        if baseline is not None:
            return Kept(((baseline(benchmark_item, k),) * (call.samples if call.multi_pass else 1), None, None), count="answered")
        if request is None:
            donor = shown[benchmark_item.id]
            return Rejected(IMAGE_UNAVAILABLE, f"{item.locator}: an image of {donor.id} ({donor.images[0].sha256[:12]}...)"
                            " is in neither the release nor the blob store")
        try:
            outcome = caller.call(request, parse, item_id=item.key)
        except BudgetExhausted as spent:  # a clean stop: what is answered is saved, the next run goes on
            raise StopItems(f"evaluation.runs {run.model}: {spent}") from spent
        if not outcome.ok:
            return Rejected(outcome.reason_code or outcome.status, f"{item.locator}: {outcome.detail}", value=outcome)
        step.counts["requests_sent"] += outcome.requests_sent
        return Kept((outcome.value, outcome.call_ids[-1] if outcome.call_ids else None,
                     digest_of([request.system, request.user])), count="answered")

    def write(log: ActivityLog, done: list[Done]) -> None:
        rows, entities, edges = [], [], []
        for d in done:
            if not d.kept:
                continue
            benchmark_item, k, _ = d.item.payload
            texts, call_id, prompt_sha = d.outcome.value
            donor = shown[benchmark_item.id]
            for offset, text in enumerate(texts):
                sample = offset if call.multi_pass else k
                prediction_id = prediction_entity_id(key, benchmark_item.id, sample, text)
                entities.append(Entity(prediction_id, "evaluation_prediction", digest_of(text),
                                       {"run": key, "item": benchmark_item.id, "sample": sample}))
                edges.append((prediction_id, item_entity_id(layout, benchmark_item.id), "answers"))
                if donor is not None and donor.id != benchmark_item.id:
                    edges.append((prediction_id, item_entity_id(layout, donor.id), "shown_image_of"))
                if call_id:
                    edges.append((prediction_id, call_id, "answered_by"))
                rows.append({"run_key": key, "item_id": benchmark_item.id, "sample": sample, "entity_id": prediction_id,
                             "prediction": text, "prompt_sha256": prompt_sha,
                             "template": None if baseline else f"{call.template.id}@{call.template.version}",
                             "call_id": call_id, "n_words": word_count(text), "activity_id": log.activity_id})
        log.entities(entities)
        log.generated(e.entity_id for e in entities)
        log.derived(edges)
        log.used((r["call_id"] for r in rows if r["call_id"]), "model_call")
        write_predictions(log.con, rows)
        log.unrejected(stage, [d.item.key for d in done if d.kept])  # an earlier run's failure that now answered

    stage = f"{layout.name}_predictions"
    try:
        run_items(step, stage, pending(), answer, write, batch_size=64, workers=run.max_concurrency,
                  before_write=caller.store.flush if caller else None)
    finally:
        if caller is not None:
            caller.store.close()
    return key


def _built(build: Callable[[BenchmarkItem, int], ModelRequest | None], item: BenchmarkItem,
           k: int) -> ModelRequest | Exception | None:
    """The request, or the exception building it raised, handed to the item's own processing to be isolated there."""
    try:
        return build(item, k)
    except Exception as exc:  # noqa: BLE001 - re-raised in the item loop, where one item's fault stays its own
        return exc


def _shown_images(call: CandidateCall, items: Mapping[str, BenchmarkItem], seed: int) -> dict[str, BenchmarkItem | None]:
    """Whose image each item is shown under the call's control: its own, another item's (a seeded derangement), or
    none (text only)."""
    if call.control == TEXT_ONLY:
        return {item_id: None for item_id in items}
    if call.control == SHUFFLED_IMAGE:
        donors = shuffled_images(items, seed).donor_of
        return {item_id: items[donors[item_id]] for item_id in items}
    return dict(items)
