"""The aesforge code location: `dagster dev` (via workspace.yaml) and the `aesforge` CLI load this."""

from __future__ import annotations

from dagster import Definitions

from pipelines.assets import ALL_ASSETS, ALL_CHECKS
from pipelines.config import build_resources, config_path, load_config
from pipelines.jobs import (
    context_canvas_job,
    critique_canvas_job,
    design_aesthetics_job,
    full_rebuild_job,
    image_pool_job,
    manifest_change_sensor,
    photocritique_job,
    poetry_benchmark_job,
    weekly_image_pool_rebuild,
    weekly_photocritique_rebuild,
)


def build_definitions(config: dict) -> Definitions:
    return Definitions(
        assets=ALL_ASSETS,
        asset_checks=ALL_CHECKS,
        jobs=[image_pool_job, photocritique_job, critique_canvas_job, design_aesthetics_job, poetry_benchmark_job, context_canvas_job,
              full_rebuild_job],
        schedules=[weekly_image_pool_rebuild, weekly_photocritique_rebuild],
        sensors=[manifest_change_sensor],
        resources=build_resources(config),
    )


defs = build_definitions(load_config(config_path()))
