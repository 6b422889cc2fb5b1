"""CritiqueCanvas: its assets and checks and its job (not scheduled: it spends API budget)."""

from dagster import (
    AssetSelection,
    Definitions,
    define_asset_job,
    load_asset_checks_from_package_module,
    load_assets_from_package_module,
)

import assets.critique_canvas as package

GROUP = "critique_canvas"

critique_canvas_job = define_asset_job(
    name="critique_canvas_job",
    selection=AssetSelection.groups(GROUP).upstream(),
    description="Build CritiqueCanvas: the pool, the planner → annotator → verifier chain (cached: only new images"
    " cost model calls), the split, the audit sample and report, and the export. Not scheduled: it spends API budget.",
)

defs = Definitions(
    assets=load_assets_from_package_module(package, group_name=GROUP),
    asset_checks=load_asset_checks_from_package_module(package),
    jobs=[critique_canvas_job],
)
