"""ContextCanvas-style cases: their assets and checks and their job."""

from dagster import AssetSelection, define_asset_job

import assets.context_canvas as package
from assets.core.pipeline_package import package_definitions
from assets.image_pool.shards import WHOLE_POOL

GROUP = "context_canvas"

context_canvas_job = define_asset_job(
    name="context_canvas_job",
    selection=AssetSelection.groups(GROUP).upstream(),
    tags=WHOLE_POOL,  # its upstream holds the pool's partitioned assets: every shard of them
    description="ContextCanvas-style cases: expert-authored records over pool images, the seven-criterion review, the"
    " anti-shortcut report, and the export (model input apart from gold labels and provenance).",
)

defs = package_definitions(package, GROUP, kinds=("openai", "gemini"), jobs=[context_canvas_job])
