"""The rubric-conditioned judge (TangPoetryBench section 5): the same written rubric people used, given to a model
through the provider layer, scoring each illustration per dimension; and its agreement with people.

Pure logic: assets/poetry/logic/rubric_judge.py (request, schema, answer checks, the offline heuristic answer) and
assets/poetry/logic/stats.py (``judge_agreement``: mean absolute error, share within 0.05, per-poem Kendall tau of the
image ordering). Images run through the item loop, ``judge_max_concurrency`` at a time; calls go through the
shared caller: cached, logged in ``model_call``, one repair, and a rejection row for an answer that stays invalid.
Dimensions the judge leaves null ("cannot tell") are left out of agreement.
"""

import json

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, run_items
from assets.core.model_calls import CallSettings
from assets.core.model_calls import CallOutcome
from assets.poetry.logic.offline_answers import poem_offline_answers
from assets.poetry.logic.rubric_judge import build_judge_request, parse_judgement, repair_request
from assets.poetry.logic.stats import judge_agreement
from assets.core.model_call_store import role_caller
from assets.poetry.illustrations import poem_illustrations
from assets.poetry.scores import poem_scores
from assets.poetry.settings import PoetrySettings
from assets.poetry.store import load_poems, replace_judge_agreement, write_judgements
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.blob_store import BlobStoreResource
from resources.model_providers import ModelProvidersResource
from resources.warehouse import WarehouseResource
from warehouse.ids import digest_of
from warehouse.lineage import ActivityLog

JUDGE_STAGE = "poem_judge"


@asset(
    metadata=writes("poem_judgement", "poem_judge_agreement"),
    code_version="1",
    deps=[poem_illustrations, poem_scores],
    description="Each illustration scored per rubric dimension by the configured model role (cached, logged); mean"
    " absolute error, share within 0.05 and per-poem Kendall tau against the human scores.",
)
def poem_judge_scores(
    context: AssetExecutionContext,
    warehouse: WarehouseResource,
    blob_store: BlobStoreResource,
    model_providers: ModelProvidersResource,
    poetry: PoetrySettings,
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    role = model_providers.role(poetry.judge_role)
    judge = f"{role.provider}/{role.model}"
    with recorded_step(context, wh, {"role": poetry.judge_role, "judge": judge}) as step:
        caller, config = role_caller(wh, step.activity_id, model_providers, poetry.judge_role, repair_request,
                                     offline=poem_offline_answers)
        settings = CallSettings(config.model, config.temperature, config.max_output_tokens)
        with step.batch() as log:
            poems = load_poems(log.con)
            pending = log.con.execute(
                "SELECT i.item_id, i.poem_id, i.image_sha256, i.mime FROM poem_illustration i WHERE NOT EXISTS"
                " (SELECT 1 FROM poem_judgement j WHERE j.item_id = i.item_id AND j.judge = ? AND j.image_sha256 = i.image_sha256)"
                " ORDER BY i.item_id",
                [judge]).fetchall()
        poem_digest = {poem_id: poem.content_sha256 for poem_id, poem in poems.items()}
        items = [Item(f"{item_id}|{judge}", item_id, digest_of([sha, mime, poem_digest.get(poem_id)]), (item_id, poem_id, sha, mime))
                 for item_id, poem_id, sha, mime in pending]

        def rate(item: Item[tuple]) -> Outcome:
            """One illustration asked of the judge (the caller is thread-safe and sends an identical request once)."""
            item_id, poem_id, sha, mime = item.payload
            request = build_judge_request(poems[poem_id], store.get_bytes(sha), mime, item_id, settings)
            outcome = caller.call(request, parse_judgement, item_id=item_id)
            if not outcome.ok:
                return Rejected(outcome.reason_code or outcome.status, outcome.detail, value=outcome)
            return Kept(outcome, count="judged")

        def write(log: ActivityLog, done: list[Done[tuple]]) -> None:
            rows = [_judgement_row(d.item.payload, judge, d.outcome.value) for d in done if d.kept]
            write_judgements(log.con, [{**r, "activity_id": log.activity_id} for r in rows])
            log.used((c for r in rows for c in r["call_ids"]), "model_call")
            log.unrejected(JUDGE_STAGE, [d.item.key for d in done if d.kept])
            step.counts["requests_sent"] += sum(d.outcome.value.requests_sent for d in done)

        try:
            run_items(step, JUDGE_STAGE, items, rate, write, batch_size=poetry.batch_size,
                      workers=poetry.judge_max_concurrency, before_write=caller.store.flush)
        finally:
            caller.store.close()
        _agreement(step, judge)
    return step.result()


def _judgement_row(item: tuple, judge: str, outcome: CallOutcome) -> dict:
    item_id, _, sha, _ = item
    j = outcome.value
    return {"item_id": item_id, "judge": judge, "image_sha256": sha, "scores": json.dumps(j.scores, sort_keys=True),
            "options": json.dumps(j.options, sort_keys=True), "reasons": json.dumps(j.reasons, sort_keys=True, ensure_ascii=False),
            "call_ids": list(outcome.call_ids)}


def _agreement(step, judge: str) -> None:
    with step.batch() as log:
        human = {item: json.loads(dims) for item, dims in
                 log.con.execute("SELECT item_id, dimensions FROM poem_image_score").fetchall()}
        judged = {item: json.loads(scores) for item, scores in
                  log.con.execute("SELECT j.item_id, j.scores FROM poem_judgement j JOIN poem_illustration i USING (item_id)"
                                  " WHERE j.judge = ? AND j.image_sha256 = i.image_sha256", [judge]).fetchall()}
        poem_of = dict(log.con.execute("SELECT item_id, poem_id FROM poem_illustration").fetchall())
    result = judge_agreement(human, judged, poem_of)
    rows = [{"judge": judge, "dimension": "all", "mae": result.overall.mae, "within_005": result.overall.share_within,
             "n": result.overall.n, "kendall_tau": result.mean_tau, "n_poems": result.n_poems}]
    rows += [{"judge": judge, "dimension": key, "mae": cell.mae, "within_005": cell.share_within, "n": cell.n,
              "kendall_tau": None, "n_poems": None} for key, cell in result.per_dimension.items()]
    with step.batch() as log:
        replace_judge_agreement(log.con, judge, [{**r, "activity_id": log.activity_id} for r in rows])
    step.notes["agreement"] = {"mae": result.overall.mae, "within_005": result.overall.share_within, "n": result.overall.n,
                               "mean_tau": result.mean_tau, "n_poems": result.n_poems}
