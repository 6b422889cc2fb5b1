"""The aesforge code location: `dagster dev` (via workspace.yaml) and the `aesforge` CLI load this."""

from __future__ import annotations

from dagster import Definitions

from pipelines.assets import IMAGE_POOL_ASSETS, IMAGE_POOL_CHECKS
from pipelines.config import build_resources, config_path, load_config
from pipelines.jobs import image_pool_job, manifest_change_sensor, weekly_image_pool_rebuild


def build_definitions(config: dict) -> Definitions:
    return Definitions(
        assets=IMAGE_POOL_ASSETS,
        asset_checks=IMAGE_POOL_CHECKS,
        jobs=[image_pool_job],
        schedules=[weekly_image_pool_rebuild],
        sensors=[manifest_change_sensor],
        resources=build_resources(config),
    )


defs = build_definitions(load_config(config_path()))
