"""Indicator-grounded reasoning paths for the training set (AesEval section 4): for each labelled training item,
a path of claims that cite element boxes and end in the known verdict, written through the provider layer
(the offline heuristic provider by default) and validated so every cited box is an element of the design.
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
from assets.designs.logic.labelling import build_reasoning_request, element_box, reasoning_parser
from assets.designs.logic.design_model import Design
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.blob_store import BlobStoreResource
from resources.model_providers import ModelProvidersResource
from resources.warehouse import WarehouseResource
from warehouse.ids import digest_of
from warehouse.lineage import ActivityLog

REASONING_STAGE = "design_reasoning"
TASK = "judgment"
# The offline provider refuses (invalid_response) when asked to argue against its own measurement: not retried.
RETRYABLE = ("http_error", "timeout", "connection_error", "budget_exhausted")


@asset(
    metadata=writes("design_reasoning"),
    code_version="1",
    deps=[design_questions],
    description="Reasoning paths for every labelled training item: claims citing element boxes that lead to the"
    " label, each cited box checked against the design; invalid paths are rejected with their reason.",
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
    with recorded_step(context, wh, {"task": TASK}) as step:
        caller, settings, model = annotator_caller(step, model_providers)
        select = (
            "SELECT l.design_id || '|' || l.indicator, l.design_id, l.indicator, l.flawed, l.answer_element_id, d.record,"
            " r.png_sha256 FROM design_label l JOIN design d USING (design_id) JOIN design_render r USING (design_id)"
            " JOIN design_split s ON s.base_design_id = d.base_design_id"
            f" WHERE s.split = '{TRAIN}' AND NOT EXISTS (SELECT 1 FROM design_reasoning x WHERE x.design_id = l.design_id"
            " AND x.indicator = l.indicator AND x.verdict = CASE WHEN l.flawed THEN 'flawed' ELSE 'good' END)"
            " AND (l.design_id || '|' || l.indicator) NOT IN (SELECT entity_id FROM rejection WHERE stage = ?"
            " AND NOT retryable AND reason_code <> ?)"
        )
        pages = wh.pages(select, [REASONING_STAGE, INTERNAL_ERROR], key="(l.design_id || '|' || l.indicator)",
                         block=designs.batch_size)
        items = (Item(row[0], row[0], digest_of([str(v) for v in row[1:]]), row) for page in pages for row in page)

        def path_for(item: Item) -> Kept | Rejected:
            """One item's reasoning path, asked through the cached caller (thread-safe) and validated."""
            _, design_id, name, flawed, element_id, record, sha = item.payload
            design = Design.from_dict(json.loads(record))
            verdict = "flawed" if flawed else "good"
            request = build_reasoning_request(design, store.get_bytes(sha), "image/png", name, indicator(name).definition,
                                              TASK, verdict, [element_box(design, element_id)], settings)
            outcome = caller.call(request, reasoning_parser(design, verdict), item_id=design_id)
            if not outcome.ok:  # a network failure is asked again; a refusal or an invalid answer is final
                return Rejected(outcome.reason_code or outcome.status, outcome.detail, retryable=outcome.status in RETRYABLE,
                                value=outcome.requests_sent)
            path = outcome.value
            return Kept(({"design_id": design_id, "indicator": name, "task": TASK, "verdict": verdict,
                          "steps": json.dumps(path.as_dict()["steps"]), "cited": list(path.cited_element_ids), "model": model,
                          "calls": json.dumps(list(outcome.call_ids))}, outcome.requests_sent), count="paths")

        def write(log: ActivityLog, done: list[Done]) -> None:
            rows = [d.outcome.value[0] for d in done if d.kept]
            write_reasoning_paths(log.con, [{**r, "activity_id": log.activity_id} for r in rows])
            log.used({d.item.payload[1] for d in done}, "design")
            log.unrejected(REASONING_STAGE, [d.item.key for d in done if d.kept])
            step.counts["requests_sent"] += sum(d.outcome.value[1] if d.kept else d.outcome.value for d in done)

        run_items(step, REASONING_STAGE, items, path_for, write, batch_size=designs.batch_size, workers=designs.max_concurrency)
    return step.result()
