"""A pipeline package's Dagster definitions, built the same way for every package."""

from collections.abc import Iterable
from types import ModuleType
from typing import Any

from dagster import AssetsDefinition, AssetSpec, Definitions, load_asset_checks_from_package_module, load_assets_from_package_module

from assets.core.code_versions import code_version

BASE_KINDS = ("duckdb", "python")  # every asset is Python writing the DuckDB warehouse
OWNERS = ("team:aesforge",)
PIPELINE_TAG = "aesforge/pipeline"


def package_definitions(package: ModuleType, group: str, kinds: Iterable[str] = (), **jobs_schedules_sensors: Any) -> Definitions:
    """Every asset of ``package``'s modules under ``group`` and every asset check, found rather than listed, with the
    package's own jobs, schedules and sensors. Each asset carries the kinds of what it touches (the warehouse, and
    ``kinds``: the model vendors or file formats of the package; an asset adds its own, such as ``pytorch``), the
    owners and a pipeline tag, so the catalog can be filtered by them, and a code version that follows its source
    (``assets.core.code_versions``), so staleness means something."""
    def labelled(assets_def: AssetsDefinition) -> AssetsDefinition:
        def label(spec: AssetSpec) -> AssetSpec:
            spec = spec.merge_attributes(kinds={*BASE_KINDS, *kinds}, owners=list(OWNERS), tags={PIPELINE_TAG: group})
            return spec.replace_attributes(code_version=code_version(spec.code_version, assets_def))
        return assets_def.map_asset_specs(label)

    assets = [labelled(a) for a in load_assets_from_package_module(package, group_name=group)]
    return Definitions(assets=assets, asset_checks=load_asset_checks_from_package_module(package), **jobs_schedules_sensors)
