"""The aesforge code location: `dagster dev` (via workspace.yaml) and the `aesforge` CLI load this.

Every package under ``assets/`` with a ``definitions.py`` is a pipeline (the core has none); they are found, not
listed (``pipeline_modules``), and merged with the resources the config builds, the executor its ``executor`` section
chooses (``pipelines.executor``) for every job, and the one job that spans them all.
"""

from __future__ import annotations

from dagster import AssetSelection, Definitions, define_asset_job

from assets.image_pool.shards import WHOLE_POOL
from pipelines.config import build_resources, config_path, load_config, pipeline_modules
from pipelines.console_log import console_logger
from pipelines.executor import executor_definition

full_rebuild_job = define_asset_job(
    name="full_rebuild_job",
    selection=AssetSelection.all(),
    description="Every asset of the code location, in dependency order; unchanged inputs are skipped.",
    tags=WHOLE_POOL,  # every shard of the pool's partitioned assets (assets/image_pool/shards.py)
)


def pipeline_definitions() -> dict[str, Definitions]:
    """Each pipeline package's own definitions (assets, checks, jobs, schedules, sensors), by package name."""
    return {module.__name__.split(".")[1]: module.defs for module in pipeline_modules("definitions")}


def build_definitions(config: dict) -> Definitions:
    resources = build_resources(config)
    return Definitions.merge(*pipeline_definitions().values(),
                             Definitions(jobs=[full_rebuild_job], resources=resources,
                                         executor=executor_definition(resources["executor"]),
                                         loggers={"console": console_logger}))


defs = build_definitions(load_config(config_path()))
