"""TangPoetryBench-style poem illustrations: their assets and checks and their job."""

from dagster import AssetSelection, define_asset_job

import assets.poetry as package
from assets.core.pipeline_package import package_definitions

GROUP = "poetry_benchmark"

poetry_benchmark_job = define_asset_job(
    name="poetry_benchmark_job",
    selection=AssetSelection.groups(GROUP),
    description="TangPoetryBench-style poem illustrations: corpus, one image per poem and text-to-image model (or stand-ins),"
    " phase-1 items, survey QC, OCR text integrity, rubric scores, agreement, per-model table, bootstrap, rubric judge, export.",
)

defs = package_definitions(package, GROUP, kinds=("openai", "gemini"), jobs=[poetry_benchmark_job])
