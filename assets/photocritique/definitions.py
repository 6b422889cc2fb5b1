"""The r/photocritique reference set: its assets and checks, job and weekly rebuild."""

from dagster import AssetSelection, ScheduleDefinition, define_asset_job

import assets.photocritique as package
from assets.core.pipeline_package import package_definitions
from assets.image_pool.shards import WHOLE_POOL

GROUP = "photocritique"

photocritique_job = define_asset_job(
    name="photocritique_job",
    selection=AssetSelection.groups(GROUP).upstream(),
    tags=WHOLE_POOL,  # its upstream holds the pool's partitioned assets: every shard of them
    description="Rebuild the r/photocritique reference set: posts and comments, their images through the pool,"
    " the benchmark's filters, the ranked references and the export.",
)

weekly_photocritique_rebuild = ScheduleDefinition(
    name="weekly_photocritique_rebuild",
    job=photocritique_job,
    cron_schedule="0 4 * * 1",
    execution_timezone="UTC",
    description="Every Monday 04:00 UTC: asks HTTP sources again only for posts that failed, rescans only changed dumps.",
)

defs = package_definitions(package, GROUP, kinds=("reddit",), jobs=[photocritique_job],
                           schedules=[weekly_photocritique_rebuild])
