"""ContextCanvas-style cases: their assets and checks and their job."""

from dagster import (
    AssetSelection,
    Definitions,
    define_asset_job,
    load_asset_checks_from_package_module,
    load_assets_from_package_module,
)

import assets.context_canvas as package

GROUP = "context_canvas"

context_canvas_job = define_asset_job(
    name="context_canvas_job",
    selection=AssetSelection.groups(GROUP).upstream(),
    description="ContextCanvas-style cases: expert-authored records over pool images, the seven-criterion review, the"
    " anti-shortcut report, and the export (model input apart from gold labels and provenance).",
)

defs = Definitions(
    assets=load_assets_from_package_module(package, group_name=GROUP),
    asset_checks=load_asset_checks_from_package_module(package),
    jobs=[context_canvas_job],
)
