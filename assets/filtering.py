"""Filtering: decide, per record, whether its image may enter the pool, and keep the reason when not."""

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.lib.images import filter_reason
from assets.lib.iteration import batched
from assets.normalization import normalized_images
from assets.settings import PoolSettings
from assets.step import recorded_step
from resources.warehouse import WarehouseResource
from warehouse.db import insert_rows
from warehouse.ids import digest_of

FILTER_STAGE = "filter"


@asset(
    group_name="image_pool",
    code_version="1",
    deps=[normalized_images],
    description="Every decoded record judged against the filters (license allow-list, size, aspect, blank); rejections keep their reason.",
)
def pool_candidates(
    context: AssetExecutionContext, warehouse: WarehouseResource, pool: PoolSettings
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    rules = pool.filters.rules()
    parameters = pool.filters.model_dump()
    rule_digest = digest_of(parameters)
    with recorded_step(context, wh, parameters) as step:
        pending = wh.query(
            "SELECT r.record_id, r.license, d.image_id, i.width, i.height, i.pixel_std"
            " FROM source_record r"
            " JOIN record_file f ON f.record_id = r.record_id"
            " JOIN file_decode d ON d.file_sha256 = f.file_sha256"
            " JOIN image i ON i.image_id = d.image_id"
            " LEFT JOIN pool_candidate c ON c.record_id = r.record_id"
            " WHERE c.record_id IS NULL OR c.rule_digest <> ?"
            " ORDER BY r.record_id",
            [rule_digest],
        )
        step.counts["records_pending"] = len(pending)
        for chunk in batched(pending.itertuples(index=False), pool.batch_size):
            decisions = [
                (row, filter_reason(width=row.width, height=row.height, pixel_std=row.pixel_std, license=row.license, rules=rules))
                for row in chunk
            ]
            with step.batch() as log:
                log.used((row.record_id for row, _ in decisions), "record")
                log.used((row.image_id for row, _ in decisions), "image")
                insert_rows(
                    log.con,
                    "pool_candidate",
                    [
                        {
                            "record_id": row.record_id,
                            "image_id": row.image_id,
                            "eligible": reason is None,
                            "reason_code": reason[0] if reason else None,
                            "rule_digest": rule_digest,
                            "activity_id": log.activity_id,
                        }
                        for row, reason in decisions
                    ],
                    conflict="replace",
                )
                log.rejected(FILTER_STAGE, [(row.record_id, *reason) for row, reason in decisions if reason])
                log.unrejected(FILTER_STAGE, [row.record_id for row, reason in decisions if reason is None])
            for _, reason in decisions:
                step.counts["eligible" if reason is None else f"rejected:{reason[0]}"] += 1
    return MaterializeResult(metadata=step.summary())
