"""Filtering: decide, per record, whether its image may enter the pool, and keep the reason when not."""

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.core.item_loop import Done, Item, Kept, Rejected, run_items
from assets.image_pool.logic.clarity import ClarityRules, clarity_reason
from assets.image_pool.logic.images import FilterRules, filter_reason
from assets.image_pool.normalization import normalized_images
from assets.image_pool.settings import PoolSettings
from assets.image_pool.shards import PER_SHARD, covered_items, covered_shards
from assets.image_pool.store import write_pool_candidates
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.warehouse import WarehouseResource
from warehouse.ids import digest_of

FILTER_STAGE = "filter"


def judge(item: Item, rules: FilterRules, clarity: ClarityRules) -> Kept | Rejected:
    """One record's filter decision (``item.payload`` is its row of record, license and image measures): the
    admission rules first, then the low-quality ones for the domains they judge."""
    row = item.payload
    reason = filter_reason(width=row.width, height=row.height, pixel_std=row.pixel_std, license=row.license, rules=rules)
    if reason is None and row.domain in clarity.domains:
        reason = clarity_reason(sharpness=_measured(row.sharpness), noise_sigma=_measured(row.noise_sigma),
                                highlights_clipped=_measured(row.highlights_clipped),
                                shadows_crushed=_measured(row.shadows_crushed), rules=clarity)
    return Kept(row, count="eligible") if reason is None else Rejected(*reason, value=row)


def _measured(value: float | None) -> float | None:
    """A measure as read from the warehouse: NULL (not measured) arrives as NaN in a numeric column."""
    return None if value is None or value != value else float(value)


@asset(
    metadata=writes("pool_candidate"),
    code_version="3",
    deps=[normalized_images],
    description="Every decoded record judged against the filters (license allow-list, size, aspect, blank, blurred, noisy, badly exposed); rejections keep their reason and measured value.",
    **PER_SHARD,
)
def pool_candidates(
    context: AssetExecutionContext, warehouse: WarehouseResource, pool: PoolSettings
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    rules, clarity = pool.filters.rules(), pool.filters.clarity.rules()
    parameters = pool.filters.model_dump()
    rule_digest = digest_of(parameters)
    with recorded_step(context, wh, parameters) as step:
        pending = wh.query(
            "SELECT r.record_id, r.locator, r.license, r.domain, d.image_id, i.width, i.height, i.pixel_std,"
            " d.sharpness, d.noise_sigma, d.highlights_clipped, d.shadows_crushed"
            " FROM source_record r"
            " JOIN record_file f ON f.record_id = r.record_id"
            " JOIN file_decode d ON d.file_sha256 = f.file_sha256"
            " JOIN image i ON i.image_id = d.image_id"
            " LEFT JOIN pool_candidate c ON c.record_id = r.record_id"
            " WHERE c.record_id IS NULL OR c.rule_digest <> ?"
            " ORDER BY r.record_id",
            [rule_digest],
        )
        shards = covered_shards(context, step)
        pending = pending.loc[covered_items(step, shards, pending["record_id"])]
        step.counts["records_pending"] = len(pending)
        items = (
            Item(row.record_id, row.locator, digest_of([row.image_id, row.license, rule_digest]), row)
            for row in pending.itertuples(index=False)
        )

        def write(log, done: list[Done]) -> None:
            rows = [d.outcome.value for d in done]
            log.used((row.record_id for row in rows), "record")
            log.used((row.image_id for row in rows), "image")
            write_pool_candidates(
                log.con,
                [
                    {
                        "record_id": d.item.key,
                        "image_id": d.outcome.value.image_id,
                        "eligible": d.kept,
                        "reason_code": None if d.kept else d.outcome.reason_code,
                        "rule_digest": rule_digest,
                        "activity_id": log.activity_id,
                    }
                    for d in done
                ],
            )
            log.unrejected(FILTER_STAGE, [d.item.key for d in done if d.kept])

        run_items(step, FILTER_STAGE, items, lambda item: judge(item, rules, clarity), write, batch_size=pool.batch_size,
                  total=len(pending))
    return step.result()
