"""The aesforge code location: `dagster dev` (via workspace.yaml) and the `aesforge` CLI load this.

Every package under ``assets/`` but the core is a pipeline with a ``definitions.py``; they are found, not listed,
and merged with the resources the config builds and the one job that spans them all.
"""

from __future__ import annotations

import importlib
import pkgutil

from dagster import AssetSelection, Definitions, define_asset_job

import assets
from pipelines.config import build_resources, config_path, load_config

SHARED_PACKAGES = {"core"}

full_rebuild_job = define_asset_job(
    name="full_rebuild_job",
    selection=AssetSelection.all(),
    description="Every asset of the code location, in dependency order; unchanged inputs are skipped.",
)


def pipeline_packages() -> list[str]:
    """The pipeline packages under ``assets/``, in name order."""
    return sorted(m.name for m in pkgutil.iter_modules(assets.__path__) if m.ispkg and m.name not in SHARED_PACKAGES)


def pipeline_definitions() -> dict[str, Definitions]:
    """Each pipeline package's own definitions (assets, checks, jobs, schedules, sensors), by package name."""
    return {name: importlib.import_module(f"assets.{name}.definitions").defs for name in pipeline_packages()}


def build_definitions(config: dict) -> Definitions:
    return Definitions.merge(*pipeline_definitions().values(),
                             Definitions(jobs=[full_rebuild_job], resources=build_resources(config)))


defs = build_definitions(load_config(config_path()))
