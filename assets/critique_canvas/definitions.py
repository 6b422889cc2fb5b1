"""CritiqueCanvas: its assets and checks and its job (not scheduled: it spends API budget)."""

from dagster import AssetSelection, define_asset_job

import assets.critique_canvas as package
from assets.core.pipeline_package import package_definitions
from assets.image_pool.shards import WHOLE_POOL

GROUP = "critique_canvas"

critique_canvas_job = define_asset_job(
    name="critique_canvas_job",
    selection=AssetSelection.groups(GROUP).upstream(),
    tags=WHOLE_POOL,  # its upstream holds the pool's partitioned assets: every shard of them
    description="Build CritiqueCanvas: the pool, the planner → annotator → verifier chain (cached: only new images"
    " cost model calls), the split, the audit sample and report, and the export. Not scheduled: it spends API budget.",
)

defs = package_definitions(package, GROUP, kinds=("openai", "gemini"), jobs=[critique_canvas_job])
