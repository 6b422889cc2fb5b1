"""Indicator-grounded reasoning paths for the training set (AesEval section 4): for each labelled training item,
a path of claims that cite element boxes and end in the known verdict, written through the provider layer
(the offline heuristic provider by default) and validated so every cited box is an element of the design.
"""

import json
from concurrent.futures import ThreadPoolExecutor

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.design_questions import TRAIN, design_questions
from assets.design_review import annotator_caller
from assets.design_settings import DesignSettings
from assets.lib.design_indicators import indicator
from assets.lib.design_labelling import build_reasoning_request, element_box, reasoning_parser
from assets.lib.design_model import Design
from assets.step import recorded_step
from resources.blob_store import BlobStoreResource
from resources.model_providers import ModelProvidersResource
from resources.warehouse import WarehouseResource
from warehouse.db import insert_rows

REASONING_STAGE = "design_reasoning"
TASK = "judgment"
# The offline provider refuses (invalid_response) when asked to argue against its own measurement: not retried.
RETRYABLE = ("http_error", "timeout", "connection_error", "budget_exhausted")


@asset(
    group_name="design_aesthetics",
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
            " AND (l.design_id || '|' || l.indicator) NOT IN (SELECT entity_id FROM rejection WHERE stage = 'design_reasoning'"
            " AND NOT retryable)"
        )

        def path_for(item: tuple):
            """One item's reasoning request, answered through the cached caller (thread-safe)."""
            _, design_id, name, flawed, element_id, record, sha = item
            design = Design.from_dict(json.loads(record))
            verdict = "flawed" if flawed else "good"
            request = build_reasoning_request(design, store.get_bytes(sha), "image/png", name, indicator(name).definition,
                                              TASK, verdict, [element_box(design, element_id)], settings)
            return verdict, caller.call(request, reasoning_parser(design, verdict), item_id=design_id)

        for page in wh.pages(select, [], key="(l.design_id || '|' || l.indicator)", block=designs.batch_size):
            with ThreadPoolExecutor(max_workers=designs.max_concurrency, thread_name_prefix="design-reasoning") as pool:
                outcomes = list(pool.map(path_for, page))
            rows, rejected = [], []
            for (key, design_id, name, *_), (verdict, outcome) in zip(page, outcomes):
                step.counts["requests_sent"] += outcome.requests_sent
                if not outcome.ok:  # a network failure is asked again; a refusal or an invalid answer is final
                    rejected.append((key, outcome.reason_code or outcome.status, outcome.detail, outcome.status in RETRYABLE))
                    continue
                path = outcome.value
                rows.append({"design_id": design_id, "indicator": name, "task": TASK, "verdict": verdict,
                             "steps": json.dumps(path.as_dict()["steps"]), "cited": list(path.cited_element_ids), "model": model,
                             "calls": json.dumps(list(outcome.call_ids))})
            with step.batch() as log:
                insert_rows(log.con, "design_reasoning", [{**r, "activity_id": log.activity_id} for r in rows], conflict="replace")
                log.used({p[1] for p in page}, "design")
                for retryable in (False, True):
                    log.rejected(REASONING_STAGE, (r[:3] for r in rejected if r[3] == retryable), retryable=retryable)
            step.counts["paths"] += len(rows)
            step.counts["rejected"] += len(rejected)
    return MaterializeResult(metadata=step.summary())
