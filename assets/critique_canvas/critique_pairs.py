"""CritiqueCanvas pairs: every admitted kept pool image through planner → annotator → verifier, concurrently.

The annotator writes the six-pair dialogue and ``critique.paragraphs`` single-turn paragraph instructions beside it
(turns 7 onwards of the group); the verifier judges each pair in its own call (``critique.verifier: per_pair``) and
its decision, reason per criterion and issues are kept with the pair (its entity's ``verifier`` attribute).

Only images whose kept record comes from a source type in ``critique.source_types`` are critiqued (by default
manifests and folders: r/photocritique photos and generated poem illustrations are benchmark images); each one left
out keeps a ``source_type_not_admitted`` rejection (stage ``critique_admission``) until it is admitted or leaves the
pool.

Images run through the item loop on ``max_concurrency`` threads (so at most that many requests in flight);
each model call is claimed, cached and logged as it returns, and finished images are committed a small
batch at a time, so a crash or a budget stop loses nothing that arrived and a re-run (or a second run at the
same time) makes no request that was made before.
"""

import io
import json

import pandas as pd
from dagster import AssetExecutionContext, AssetKey, MaterializeResult, asset
from PIL import Image

from assets.core.logic.normalized_pixels import normalized_pixels
from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, StopItems, run_items
from assets.critique_canvas.logic.chain import (
    COMPLETE,
    ROLES,
    ChainOptions,
    ChainResult,
    RoleSettings,
    chain_digest,
    repair_request,
    run_chain,
)
from assets.critique_canvas.logic.admission import NOT_ADMITTED, not_admitted_detail
from assets.critique_canvas.logic.answers import Verdict, conversation_group_id, group_pairs
from assets.critique_canvas.logic.offline_answers import critique_offline_answers
from assets.critique_canvas.settings import CritiqueSettings
from assets.critique_canvas.store import write_attempt, write_group, write_pairs
from assets.core.model_calls import BudgetExhausted, CallBudget, RateLimiter
from assets.core.model_call_store import WarehouseCallStore, call_summary, leased_caller
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.model_providers import ModelProvidersResource
from resources.warehouse import WarehouseResource
from warehouse.db import registered
from warehouse.ids import canonical_json, digest_of
from warehouse.lineage import ActivityLog, Agent, Entity, utcnow

CRITIQUE_STAGE = "critique"
VERIFIER_STAGE = "critique_verifier"
ADMISSION_STAGE = "critique_admission"


def encode_for_model(store: BlobStore, file_sha256: str, max_side: int) -> bytes:
    """The normalised pixels of the image's original file, downscaled to ``max_side`` and JPEG-encoded
    deterministically."""
    image = normalized_pixels(store.get_bytes(file_sha256))
    image.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90, optimize=False, progressive=False)
    return buffer.getvalue()


def _pending(step: Step, digest: str, settings: CritiqueSettings) -> list[Item[tuple]]:
    """Admitted pool images without a final attempt under this chain configuration (a transport failure is retried)."""
    with step.batch() as log:
        rows = log.con.execute(
            "SELECT p.pool_item_id, p.image_id, p.domain, p.file_sha256, p.locator FROM pool_images p"
            " JOIN source_record r ON r.record_id = p.record_id"
            " LEFT JOIN critique_attempt a ON a.pool_item_id = p.pool_item_id AND a.chain_digest = ?"
            " WHERE (a.pool_item_id IS NULL OR a.retryable) AND list_contains(?, p.domain)"
            " AND list_contains(?, r.source_type)"
            " ORDER BY p.pool_item_id" + (" LIMIT ?" if settings.limit else ""),
            [digest, settings.domains, settings.source_types, *([settings.limit] if settings.limit else [])],
        ).fetchall()
    return [Item(row[0], row[4] or row[0], digest_of([row[3], row[2], digest]), row[:4]) for row in rows]


def _leave_out_not_admitted(step: Step, settings: CritiqueSettings) -> None:
    """Reject every kept pool image of a critiqued domain whose source type is not admitted, and withdraw the
    rejections of images since admitted or gone from the pool; counted per source type."""
    with step.batch() as log:
        left_out = log.con.execute(
            "SELECT p.pool_item_id, p.record_id, r.source_type, r.source_name FROM pool_images p"
            " JOIN source_record r ON r.record_id = p.record_id"
            " WHERE list_contains(?, p.domain) AND NOT list_contains(?, r.source_type) ORDER BY p.pool_item_id",
            [settings.domains, settings.source_types],
        ).fetchall()
        with registered(log.con, "_not_admitted", pd.DataFrame({"pool_item_id": [row[0] for row in left_out]},
                                                                dtype="string")) as ids:
            log.unrejected_all(ADMISSION_STAGE, except_in=f"SELECT pool_item_id FROM {ids}")
        known = {row[0] for row in log.con.execute("SELECT entity_id FROM rejection WHERE stage = ?", [ADMISSION_STAGE]).fetchall()}
        log.rejected(ADMISSION_STAGE, [(row[0], NOT_ADMITTED, not_admitted_detail(*row)) for row in left_out
                                       if row[0] not in known])
    for _, _, source_type, _ in left_out:
        step.counts[f"images_not_admitted:{source_type}"] += 1


def chain_outcome(result: ChainResult) -> Outcome:
    """A finished chain as the image's outcome: kept when complete, else rejected (retryable after a transport
    failure) with the role that stopped it."""
    if result.status == COMPLETE:
        return Kept(result, count=f"images:{COMPLETE}")
    detail = f"{result.failed_role}: {result.detail or result.reason_code}"
    return Rejected(result.reason_code or result.status, detail, retryable=result.retryable, value=result)


def _write_results(log: ActivityLog, digest: str, done: list[Done[tuple]]) -> None:
    """Groups, pairs and attempts of a batch of images (the loop adds the rejection rows of the others)."""
    for one in done:
        _write_result(log, one.item.payload, digest, one.outcome.value)
    log.unrejected(CRITIQUE_STAGE, [one.item.key for one in done if one.kept])


def _write_result(log: ActivityLog, item: tuple, digest: str, result: ChainResult) -> None:
    pool_item_id, image_id, domain, _ = item
    now = utcnow()
    call_ids = [c for ids in result.calls.values() for c in ids]
    log.used([pool_item_id], "pool_item")
    group_id = None
    if result.dialogue is not None:
        group_id = conversation_group_id(pool_item_id, result.dialogue, result.paragraphs)
        log.entities([Entity(group_id, "critique_group", attributes={"pool_item_id": pool_item_id, "domain": domain})])
        log.generated([group_id])
        log.derived([(group_id, pool_item_id, "critiques"), *((group_id, c, "answered_by") for c in call_ids)])
        write_group(
            log.con,
            {
                "group_id": group_id,
                "pool_item_id": pool_item_id,
                "image_id": image_id,
                "domain": domain,
                "chain_digest": digest,
                "status": result.status,
                "reason_code": result.reason_code,
                "detail": result.detail,
                "plan": canonical_json(result.plan.as_dict()["dimensions"]) if result.plan else None,
                "planner_calls": canonical_json(list(result.calls.get("planner", ()))),
                "annotator_calls": canonical_json(list(result.calls.get("annotator", ()))),
                "verifier_calls": canonical_json(list(result.calls.get("verifier", ()))),
                "n_accepted": sum(v.accepted for v in result.verdicts) if result.verdicts else None,
                "activity_id": log.activity_id,
                "decided_at": now,
            },
        )
    if result.status == COMPLETE:
        _write_pairs(log, group_id, pool_item_id, domain, result)
    write_attempt(
        log.con,
        {"pool_item_id": pool_item_id, "chain_digest": digest, "group_id": group_id, "status": result.status,
         "retryable": result.retryable, "activity_id": log.activity_id},
    )


def _write_pairs(log, group_id: str, pool_item_id: str, domain: str, result: ChainResult) -> None:
    verdicts = {v.pair: v for v in result.verdicts}
    records = group_pairs(pool_item_id, result.dialogue, result.paragraphs)
    entities = [
        Entity(r.pair_id, "critique_pair", attributes={
            "group_id": group_id, "index": r.index, "accepted": verdicts[r.index].accepted,
            "kind": "dialogue" if r.index <= len(result.dialogue.pairs) else "paragraph",
            **({"verifier": {"decision": "accept" if verdicts[r.index].accepted else "reject",
                             "reason": verdicts[r.index].reason, "criteria": dict(verdicts[r.index].reasons)}}
               if verdicts[r.index].reason else {})})
        for r in records
    ]
    rows = [
        {
            "pair_id": r.pair_id,
            "group_id": group_id,
            "pool_item_id": pool_item_id,
            "domain": domain,
            "pair_index": r.index,
            "dimension": r.dimension,
            "improvement": r.improvement,
            "question": r.question,
            "answer": r.answer,
            "instruction_consistency": verdicts[r.index].instruction_consistency,
            "visual_grounding": verdicts[r.index].visual_grounding,
            "response_quality": verdicts[r.index].response_quality,
            "blocking_issues": json.dumps(list(verdicts[r.index].blocking_issues)),
            "non_blocking_issues": json.dumps(list(verdicts[r.index].non_blocking_issues)),
            "accepted": verdicts[r.index].accepted,
            "activity_id": log.activity_id,
        }
        for r in records
    ]
    log.entities(entities)
    log.generated(e.entity_id for e in entities)
    log.derived((e.entity_id, group_id, "pair_of") for e in entities)
    write_pairs(log.con, rows)
    log.rejected(VERIFIER_STAGE, ((r.pair_id, "verifier_rejected", _rejection_detail(verdicts[r.index])) for r in records
                                  if not verdicts[r.index].accepted))


def _rejection_detail(verdict: Verdict) -> str:
    """The verifier's reason (per-pair verdicts state one), the failed checks and the blocking issues."""
    failed = [name for name in ("instruction_consistency", "visual_grounding", "response_quality") if not getattr(verdict, name)]
    parts = [*([verdict.reason] if verdict.reason else []), *(f"failed {name}" for name in failed), *verdict.blocking_issues]
    return "; ".join(parts) or "rejected"


@asset(
    metadata=writes("critique_pair", "critique_group", images="(SELECT min(f.file_sha256) FROM critique_group g JOIN image_file f USING (image_id) WHERE g.group_id = critique_pair.group_id)"),
    code_version="2",
    deps=[AssetKey("image_pool")],
    description="Verified instruction–response pairs per admitted kept pool image (source types in"
    " critique.source_types): planner → domain-conditioned annotator (a six-pair dialogue and critique.paragraphs"
    " single-turn paragraph instructions) → verifier (each pair on its own, or all at once), each role its own"
    " provider and model; cached, concurrent, budgeted and resumable.",
)
def critique_pairs(
    context: AssetExecutionContext,
    warehouse: WarehouseResource,
    blob_store: BlobStoreResource,
    model_providers: ModelProvidersResource,
    critique: CritiqueSettings,
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    roles = {role: _role_settings(model_providers, role) for role in ROLES}
    options = ChainOptions(critique.paragraphs, critique.verifier)
    digest = chain_digest(roles, options)
    agents = tuple(
        (Agent(f"model:{s.provider}/{s.model}", "model", s.model, None, {"provider": s.provider}), role) for role, s in roles.items()
    )
    params = {"roles": {r: s.__dict__ for r, s in roles.items()}, "chain_digest": digest, "settings": critique.model_dump()}
    with recorded_step(context, wh, params, extra_agents=agents) as step:
        calls = WarehouseCallStore(wh, step.activity_id)  # answers durable in a shard, committed in groups
        budget = CallBudget(critique.max_calls, critique.max_tokens)
        limiter = RateLimiter(critique.requests_per_minute)
        callers = {
            role: leased_caller(s.endpoint, model_providers.provider_for(role, offline=critique_offline_answers), calls,
                                budget, limiter, repair_request, model_providers)
            for role, s in roles.items()
        }
        _leave_out_not_admitted(step, critique)
        pending = _pending(step, digest, critique)
        step.counts["images_pending"] = len(pending)

        def chain(item: Item[tuple]) -> Outcome:
            _, _, domain, sha = item.payload
            image = encode_for_model(store, sha, critique.image_max_side)
            try:
                return chain_outcome(run_chain(image, "image/jpeg", domain, callers, roles, item.key, options))
            except BudgetExhausted as exhausted:
                raise StopItems(str(exhausted)) from exhausted

        decided: set[str] = set()

        def write(log: ActivityLog, done: list[Done[tuple]]) -> None:
            _write_results(log, digest, done)
            step.counts["requests_sent"] += sum(one.outcome.value.requests_sent for one in done)
            decided.update(one.item.key for one in done)

        try:
            loop = run_items(step, CRITIQUE_STAGE, pending, chain, write, workers=critique.max_concurrency,
                             batch_size=4 * critique.max_concurrency, before_write=calls.flush)
        finally:
            calls.close()
        if loop.stopped:
            step.counts["images_not_started_budget"] = len(pending) - len(decided) - step.counts["quarantined"]
        step.notes.update(call_summary(wh, step.activity_id))
    return step.result(store)


def _role_settings(providers: ModelProvidersResource, role: str) -> RoleSettings:
    config = providers.role(role)
    return RoleSettings(config.provider, config.model, config.base_url, config.temperature, config.max_output_tokens)
