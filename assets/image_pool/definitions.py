"""The shared image pool: its assets and checks (found in the package's modules), job, weekly rebuild and manifest sensor."""

from dagster import AssetSelection, ScheduleDefinition, define_asset_job

import assets.image_pool as package
from assets.core.pipeline_package import package_definitions
from assets.image_pool.manifest_sensor import manifest_change_sensor
from assets.image_pool.shards import WHOLE_POOL

GROUP = "image_pool"

image_pool_job = define_asset_job(
    name="image_pool_job",
    selection=AssetSelection.groups(GROUP),
    description="Collect, normalise, filter and de-duplicate the shared image pool; unchanged inputs are skipped.",
    tags=WHOLE_POOL,  # every shard unless a run names its own (assets/image_pool/shards.py)
)

weekly_image_pool_rebuild = ScheduleDefinition(
    name="weekly_image_pool_rebuild",
    job=image_pool_job,
    cron_schedule="0 3 * * 1",
    execution_timezone="UTC",
    description="Full rebuild every Monday 03:00 UTC: re-reads every source, does no work for inputs already processed.",
)

defs = package_definitions(package, GROUP, jobs=[image_pool_job], schedules=[weekly_image_pool_rebuild],
                           sensors=[manifest_change_sensor])
