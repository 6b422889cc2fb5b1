"""TangPoetryBench-style poem illustrations: their assets and checks and their job."""

from dagster import (
    AssetSelection,
    Definitions,
    define_asset_job,
    load_asset_checks_from_package_module,
    load_assets_from_package_module,
)

import assets.poetry as package

GROUP = "poetry_benchmark"

poetry_benchmark_job = define_asset_job(
    name="poetry_benchmark_job",
    selection=AssetSelection.groups(GROUP),
    description="TangPoetryBench-style poem illustrations: corpus, one image per poem and text-to-image model (or stand-ins),"
    " phase-1 items, survey QC, OCR text integrity, rubric scores, agreement, per-model table, bootstrap, rubric judge, export.",
)

defs = Definitions(
    assets=load_assets_from_package_module(package, group_name=GROUP),
    asset_checks=load_asset_checks_from_package_module(package),
    jobs=[poetry_benchmark_job],
)
