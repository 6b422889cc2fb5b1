"""A pipeline package's Dagster definitions, built the same way for every package."""

from types import ModuleType
from typing import Any

from dagster import Definitions, load_asset_checks_from_package_module, load_assets_from_package_module


def package_definitions(package: ModuleType, group: str, **jobs_schedules_sensors: Any) -> Definitions:
    """Every asset of ``package``'s modules under ``group`` and every asset check, found rather than listed, with the
    package's own jobs, schedules and sensors."""
    return Definitions(assets=load_assets_from_package_module(package, group_name=group),
                       asset_checks=load_asset_checks_from_package_module(package), **jobs_schedules_sensors)
