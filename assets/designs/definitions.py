"""AesEval-style design benchmark: its assets and checks and its job."""

from dagster import (
    AssetSelection,
    Definitions,
    define_asset_job,
    load_asset_checks_from_package_module,
    load_assets_from_package_module,
)

import assets.designs as package

GROUP = "design_aesthetics"

design_aesthetics_job = define_asset_job(
    name="design_aesthetics_job",
    selection=AssetSelection.groups(GROUP).upstream(),
    description="AesEval-style designs: read Crello records, perturb them (seeded, logged), render every design, review"
    " sheets and labels (human majority, else the heuristic judge), split by base design, questions, export.",
)

defs = Definitions(
    assets=load_assets_from_package_module(package, group_name=GROUP),
    asset_checks=load_asset_checks_from_package_module(package),
    jobs=[design_aesthetics_job],
)
