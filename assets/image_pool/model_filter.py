"""Model-based pool filters: score every eligible record's image with each configured head over its CLIP embedding
(an aesthetic predictor, a content-safety classifier) and reject those outside the filter's band, with the score.

With no filter configured, or no CLIP weights to say which embeddings to read, the stage reports that it did not run
and why; the pool is then built from the rule-based filters alone (or, with ``required``, the step fails).
"""

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.core.item_loop import Done, Item, Kept, Rejected, StepError, release_quarantine, run_items
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from assets.image_pool.clip_dedup import clip_duplicates
from assets.image_pool.logic.model_filters import score_verdict
from assets.image_pool.settings import ModelFilterConfig, PoolSettings
from assets.image_pool.store import drop_model_filter_verdicts, write_model_filter_verdicts
from resources.clip_embedder import ClipEmbedderResource
from resources.warehouse import WarehouseResource
from warehouse.db import Warehouse
from warehouse.ids import digest_of
from warehouse.lineage import ActivityLog, Agent

if TYPE_CHECKING:
    from resources.score_heads import ScoreHead

STAGE = "model_filter"
PAGE = 4096  # records (and embeddings) read and scored at a time


def filter_stage(name: str) -> str:
    """Each filter is its own stage, so a record can carry one verdict per filter."""
    return f"{STAGE}:{name}"


def _pending(wh: Warehouse, config: ModelFilterConfig, model_key: str, rule_digest: str) -> Iterator[list[tuple]]:
    """Eligible records of the filter's domains with no verdict under this rule, or judged unscored whose image has
    an embedding now, with that embedding (None when the image has none for this CLIP model), a page at a time."""
    select = (
        "SELECT c.record_id, c.image_id, r.locator, e.embedding FROM pool_candidate c"
        " JOIN source_record r USING (record_id)"
        " LEFT JOIN clip_embedding e ON e.image_id = c.image_id AND e.model_key = ?"
        " LEFT JOIN model_filter_verdict v ON v.record_id = c.record_id AND v.filter_name = ?"
        " WHERE c.eligible AND list_contains(?, r.domain)"
        "  AND (v.record_id IS NULL OR v.rule_digest <> ? OR (v.score IS NULL AND e.embedding IS NOT NULL))"
    )
    yield from wh.pages(select, [model_key, config.name, config.domains, rule_digest], key="c.record_id", block=PAGE)


def scored_items(pages: Iterator[list[tuple]], head: "ScoreHead") -> Iterator[Item]:
    """One item per record; payload (image id, score or None, or the exception that scoring its page raised, which
    makes each of its records ``internal_error`` rather than failing the step)."""
    for page in pages:
        with_embedding = [row for row in page if row[3] is not None]
        try:
            scores = dict(zip((row[0] for row in with_embedding),
                              head.scores(np.array([row[3] for row in with_embedding], dtype=np.float32)
                                          .reshape(len(with_embedding), head.dim)).tolist()))
        except Exception as exc:  # noqa: BLE001 - the page's records are this fault's items
            scores = {row[0]: exc for row in with_embedding}
        for record_id, image_id, locator, _ in page:
            yield Item(record_id, locator, digest_of([image_id, head.weights_sha256]), (image_id, scores.get(record_id)))


def _remove_stale(log: ActivityLog, name: str, rule_digest: str | None) -> None:
    """Drop a filter's verdicts made under another rule or for records no longer eligible, with the rejections and
    quarantine rows they carried; ``rule_digest`` None: the filter is gone from the config, so all of them."""
    stale = [record_id for (record_id,) in log.con.execute(
        "SELECT record_id FROM model_filter_verdict WHERE filter_name = ? AND (rule_digest IS DISTINCT FROM ?"
        " OR record_id NOT IN (SELECT record_id FROM pool_candidate WHERE eligible))", [name, rule_digest]).fetchall()]
    drop_model_filter_verdicts(log.con, name, stale)
    log.unrejected(filter_stage(name), stale)
    still_judged = "SELECT record_id FROM pool_candidate WHERE eligible" + ("" if rule_digest else " AND false")
    log.unrejected_all(filter_stage(name), except_in=still_judged)
    release_quarantine(log, filter_stage(name), except_in=still_judged)


def _run_filter(step: Step, wh: Warehouse, config: ModelFilterConfig, head: "ScoreHead", model_key: str,
                batch_size: int) -> None:
    band = config.band()
    agent = Agent(agent_id=f"model:score_head/{config.name}@{head.version}", kind="model",
                  name=f"{config.name} score head", version=head.version,
                  attributes={"format": head.format, "file": step.name_of(config.weights), "embeddings": model_key})
    rule_digest = digest_of([band.__dict__, config.domains, head.weights_sha256, head.format, model_key])
    with step.batch() as log:
        log.associate(agent, f"{config.name} filter model")
        _remove_stale(log, config.name, rule_digest)
    detail_suffix = f" (head {head.version}, embeddings {model_key})"

    def judge(item: Item) -> Kept | Rejected:
        image_id, score = item.payload
        if isinstance(score, Exception):
            raise score
        verdict = score_verdict(score, band)
        value = {"image_id": image_id, "score": score}
        if verdict is None:
            return Kept(value, count=f"{config.name}:passed" if score is not None else f"{config.name}:unscored")
        return Rejected(verdict[0], verdict[1] + detail_suffix, value=value)

    def write(log: ActivityLog, done: list[Done]) -> None:
        log.used((d.item.key for d in done), "record")
        write_model_filter_verdicts(log.con, [
            {"record_id": d.item.key, "filter_name": config.name, "image_id": d.outcome.value["image_id"],
             "score": d.outcome.value["score"], "passed": d.kept, "rule_digest": rule_digest,
             "activity_id": log.activity_id}
            for d in done
        ])
        log.unrejected(filter_stage(config.name), [d.item.key for d in done if d.kept])

    run_items(step, filter_stage(config.name), scored_items(_pending(wh, config, model_key, rule_digest), head), judge,
              write, batch_size=batch_size)


def _head(config: ModelFilterConfig, index: int, dim: int) -> "ScoreHead":
    from resources.score_heads import HeadUnavailable, load_head  # torch is imported only when a filter runs

    try:
        return load_head(Path(config.weights), config.format, dim)
    except HeadUnavailable as exc:
        raise StepError(f"pool.model_filters[{index}] ({config.name}): {exc}") from exc


@asset(
    metadata=writes("model_filter_verdict"),
    code_version="1",
    deps=[clip_duplicates],
    kinds={"pytorch"},
    description="Model-based filters (aesthetic score, content safety) over each eligible image's CLIP embedding; a"
                " rejection carries the score and the bound. Reports 'not run' when no filter or no CLIP weights are configured.",
)
def model_filter_verdicts(context: AssetExecutionContext, warehouse: WarehouseResource, clip: ClipEmbedderResource,
                          pool: PoolSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    filters = pool.model_filters
    parameters = {"model_filters": [f.model_dump(exclude={"weights"}) for f in filters]}
    with recorded_step(context, wh, parameters) as step:
        with step.batch() as log:
            configured = {f.name for f in filters}
            for (name,) in log.con.execute("SELECT DISTINCT filter_name FROM model_filter_verdict").fetchall():
                if name not in configured:
                    _remove_stale(log, name, None)
        if not filters:
            step.notes.update({"model_filters": "not run", "reason": "no model filter is configured (pool.model_filters)"})
            return step.result()
        reason = clip.unavailable()
        if reason is None:
            from resources.clip_embedding import ClipUnavailable  # torch is imported only by this path

            try:
                model_key, dim = clip.embedding_space()
            except ClipUnavailable as exc:
                reason = str(exc)
        if reason is not None:
            required = [f.name for f in filters if f.required]
            if required:
                raise StepError(f"model filter {required[0]!r} is required but cannot run: {reason}")
            step.notes.update({"model_filters": "not run", "reason": f"the filters read CLIP embeddings: {reason}"})
            context.log.warning(f"Model filters did not run: {reason}")
            return step.result()
        heads = [(config, _head(config, index, dim)) for index, config in enumerate(filters)]
        step.notes.update({"model_filters": "ran", "embeddings": model_key,
                           "heads": {config.name: head.version for config, head in heads}})
        for config, head in heads:
            _run_filter(step, wh, config, head, model_key, pool.batch_size)
    return step.result()
