"""AesEval-style design benchmark: its assets and checks and its job."""

from dagster import AssetSelection, define_asset_job

import assets.designs as package
from assets.core.pipeline_package import package_definitions

GROUP = "design_aesthetics"

design_aesthetics_job = define_asset_job(
    name="design_aesthetics_job",
    selection=AssetSelection.groups(GROUP).upstream(),
    description="AesEval-style designs: read Crello records, perturb them (seeded, logged), render every design, review"
    " sheets and labels (human majority, else the heuristic judge), split by base design, questions, export.",
)

defs = package_definitions(package, GROUP, kinds=("openai", "gemini"), jobs=[design_aesthetics_job])
