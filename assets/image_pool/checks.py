"""The image pool's contract, as Great Expectations suites run by Dagster asset checks.

Checks on ``image_pool`` are blocking: a pool that breaks its contract must not feed the
critique, context or benchmark stages. Each outcome is also stored in the warehouse's
``check_result`` table.
"""

from collections.abc import Iterator

import pandas as pd
from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, multi_asset_check

from assets.image_pool.collection import source_records
from assets.image_pool.logic.sources import DOMAINS, PROVENANCE_FIELDS, REDISTRIBUTION_VALUES
from assets.image_pool.pool import image_pool
from assets.image_pool.settings import FilterConfig, PoolSettings
from quality.gx_suite import Expectation, validate
from quality.results import CONFIGURED, check_specs, store_and_report
from resources.warehouse import WarehouseResource


def kept_pool_expectations(min_side: int, max_side: int) -> list[Expectation]:
    unique, not_null, in_set, between = (
        "ExpectColumnValuesToBeUnique", "ExpectColumnValuesToNotBeNull", "ExpectColumnValuesToBeInSet",
        "ExpectColumnValuesToBeBetween",
    )
    return [
        Expectation("kept_record_ids_unique", "each kept record appears once", unique, {"column": "record_id"}),
        Expectation("kept_image_ids_unique", "no image is kept twice", unique, {"column": "image_id"}),
        Expectation("one_kept_per_duplicate_cluster", "no two kept images share a duplicate cluster", unique, {"column": "cluster_id"}),
        *(
            Expectation(f"{name}_not_null", f"kept images carry {name}", not_null, {"column": name})
            for name in PROVENANCE_FIELDS
        ),
        Expectation("domain_allowed", f"domain is one of {', '.join(DOMAINS)}", in_set, {"column": "domain", "value_set": list(DOMAINS)}),
        Expectation(
            "redistribution_allowed_values",
            f"redistribution is one of {', '.join(REDISTRIBUTION_VALUES)}",
            in_set,
            {"column": "redistribution", "value_set": list(REDISTRIBUTION_VALUES)},
        ),
        Expectation("width_within_bounds", f"width between {min_side} and {max_side} px", between, {"column": "width", "min_value": min_side, "max_value": max_side}),
        Expectation("height_within_bounds", f"height between {min_side} and {max_side} px", between, {"column": "height", "min_value": min_side, "max_value": max_side}),
    ]


SOURCE_RECORD_EXPECTATIONS = [
    Expectation("record_ids_unique", "one row per content-derived record id", "ExpectColumnValuesToBeUnique", {"column": "record_id"}),
    Expectation(
        "records_have_creator",
        "creator is recorded ('unknown' when the source does not say)",
        "ExpectColumnValuesToNotBeNull",
        {"column": "creator"},
    ),
]



_FILTERS = FilterConfig.model_fields


@multi_asset_check(
    specs=check_specs(kept_pool_expectations(_FILTERS["min_side"].default, _FILTERS["max_side"].default), image_pool,
                      note=CONFIGURED),
    description="Great Expectations suite on the kept pool: ids, provenance fields, domains, sizes, one kept per cluster.",
)
def image_pool_contract(
    context: AssetCheckExecutionContext, warehouse: WarehouseResource, pool: PoolSettings
) -> Iterator[AssetCheckResult]:
    wh = warehouse.get_warehouse()
    frame = wh.query("SELECT * FROM pool_images")
    expectations = kept_pool_expectations(pool.filters.min_side, pool.filters.max_side)
    outcomes = validate(frame, "image_pool", expectations)
    yield from store_and_report(wh, context.run.run_id, "image_pool", outcomes, AssetCheckSeverity.ERROR)


@multi_asset_check(
    specs=check_specs(SOURCE_RECORD_EXPECTATIONS, source_records, blocking=False),
    description="Great Expectations suite on source records: unique ids, creator recorded.",
)
def source_records_contract(
    context: AssetCheckExecutionContext, warehouse: WarehouseResource
) -> Iterator[AssetCheckResult]:
    wh = warehouse.get_warehouse()
    frame: pd.DataFrame = wh.query("SELECT record_id, creator FROM source_record")
    outcomes = validate(frame, "source_records", SOURCE_RECORD_EXPECTATIONS)
    yield from store_and_report(wh, context.run.run_id, "source_records", outcomes, AssetCheckSeverity.WARN)
