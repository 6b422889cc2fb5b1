"""Indicator-grounded reasoning paths for the training set (AesEval section 4): for each training question of the
configured formats (``reasoning_tasks``: all three by default), a path of claims that cite element boxes and end
in the known verdict, written through the provider layer (the offline heuristic provider by default) and
validated so every cited box is an element of the design. Each task discusses its own regions
(``reasoning_regions``): the perturbed one for judgment, every candidate for selection, every perturbed one in
the layout for localisation.
"""

import json

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.designs.logic.splits import TRAIN
from assets.designs.questions import design_questions
from assets.designs.review import annotator_caller
from assets.designs.settings import DesignSettings
from assets.designs.store import write_reasoning_paths
from assets.core.item_loop import INTERNAL_ERROR, Done, Item, Kept, Rejected, run_items
from assets.designs.logic.indicators import indicator
from assets.designs.logic.labelling import (
    TASK_FORMATS,
    DesignLabelError,
    build_reasoning_request,
    reasoning_parser,
    reasoning_regions,
)
from assets.designs.logic.design_model import Design
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.blob_store import BlobStoreResource
from resources.model_providers import ModelProvidersResource
from resources.warehouse import WarehouseResource
from warehouse.ids import digest_of
from warehouse.lineage import ActivityLog

REASONING_STAGE = "design_reasoning"
# The offline provider refuses (invalid_response) when asked to argue against its own measurement: not retried.
RETRYABLE = ("http_error", "timeout", "connection_error", "budget_exhausted")


@asset(
    metadata=writes("design_reasoning"),
    code_version="1",
    deps=[design_questions],
    description="Reasoning paths for every training question of the reasoning_tasks formats (judgment, selection,"
    " localisation): claims citing element boxes that lead to the label, each cited box checked against the design;"
    " invalid paths are rejected with their reason.",
)
def design_reasoning_paths(
    context: AssetExecutionContext,
    warehouse: WarehouseResource,
    blob_store: BlobStoreResource,
    model_providers: ModelProvidersResource,
    designs: DesignSettings,
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    tasks = list(dict.fromkeys(designs.reasoning_tasks))
    params = {"tasks": tasks, "question_seed": designs.question_seed, "box_units": designs.box_units}
    with recorded_step(context, wh, params) as step:
        caller, settings, model = annotator_caller(step, model_providers)
        key = "(l.design_id || '|' || l.indicator || '|' || t.task)"
        select = (
            f"SELECT {key}, l.design_id, l.indicator, l.flawed, l.answer_element_id, d.record, r.png_sha256, t.task,"
            " coalesce((SELECT list(o.element_id ORDER BY o.op_index) FROM design_perturbation_op o"
            "  WHERE o.design_id = l.design_id), []) FROM design_label l JOIN design d USING (design_id)"
            " JOIN design_render r USING (design_id) JOIN design_split s ON s.base_design_id = d.base_design_id"
            " JOIN (SELECT unnest(CAST(? AS VARCHAR[])) AS task, unnest(CAST(? AS VARCHAR[])) AS format) t ON true"
            f" WHERE s.split = '{TRAIN}' AND EXISTS (SELECT 1 FROM design_question q WHERE q.design_id = l.design_id"
            " AND q.indicator = l.indicator AND q.format = t.format) AND NOT EXISTS (SELECT 1 FROM design_reasoning x"
            " WHERE x.design_id = l.design_id AND x.indicator = l.indicator AND x.task = t.task"
            " AND x.verdict = CASE WHEN l.flawed THEN 'flawed' ELSE 'good' END)"
            f" AND {key} NOT IN (SELECT entity_id FROM rejection WHERE stage = ? AND NOT retryable AND reason_code <> ?)"
        )
        pages = wh.pages(select, [tasks, [TASK_FORMATS[t] for t in tasks], REASONING_STAGE, INTERNAL_ERROR], key=key,
                         block=designs.batch_size)
        items = (Item(row[0], row[0], digest_of([str(v) for v in row[1:]]), row) for page in pages for row in page)

        def path_for(item: Item) -> Kept | Rejected:
            """One item's reasoning path, asked through the cached caller (thread-safe) and validated."""
            _, design_id, name, flawed, element_id, record, sha, task, perturbed = item.payload
            design = Design.from_dict(json.loads(record))
            verdict = "flawed" if flawed else "good"
            definition = indicator(name).definition
            try:
                regions, candidates = reasoning_regions(design, name, definition, task, flawed, element_id, list(perturbed),
                                                        designs.question_seed, designs.box_units)
            except DesignLabelError as exc:
                return Rejected(exc.reason_code, f"{item.key}: {exc}", value=0)
            request = build_reasoning_request(design, store.get_bytes(sha), "image/png", name, definition, task, verdict,
                                              regions, settings, candidates)
            outcome = caller.call(request, reasoning_parser(design, verdict), item_id=design_id)
            if not outcome.ok:  # a network failure is asked again; a refusal or an invalid answer is final
                return Rejected(outcome.reason_code or outcome.status, outcome.detail, retryable=outcome.status in RETRYABLE,
                                value=outcome.requests_sent)
            path = outcome.value
            return Kept(({"design_id": design_id, "indicator": name, "task": task, "verdict": verdict,
                          "steps": json.dumps(path.as_dict()["steps"]), "cited": list(path.cited_element_ids), "model": model,
                          "calls": json.dumps(list(outcome.call_ids))}, outcome.requests_sent), count=f"paths:{task}")

        def write(log: ActivityLog, done: list[Done]) -> None:
            rows = [d.outcome.value[0] for d in done if d.kept]
            write_reasoning_paths(log.con, [{**r, "activity_id": log.activity_id} for r in rows])
            log.used({d.item.payload[1] for d in done}, "design")
            log.unrejected(REASONING_STAGE, [d.item.key for d in done if d.kept])
            step.counts["requests_sent"] += sum(d.outcome.value[1] if d.kept else d.outcome.value for d in done)

        try:
            run_items(step, REASONING_STAGE, items, path_for, write, batch_size=designs.batch_size,
                      workers=designs.max_concurrency, before_write=caller.store.flush)
        finally:
            caller.store.close()
    return step.result()
