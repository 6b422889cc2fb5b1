"""The code location's executor, from the config's ``executor`` section (``resources/executor_settings.py``).

Why one executor with three modes rather than the chosen executor alone: a run may still pick its mode in its own
``execution`` config, as it can with Dagster's default executor (the CLI's ``--executor multiprocess|in_process``,
the launchpad), while a run that names none gets the configured mode with the configured settings as its defaults.
With the default section (``kind: multiprocess``, no limit) it behaves exactly as Dagster's default executor. The
``dask`` mode is offered only when it is the configured kind: importing dagster-dask costs every process that loads
the code location about a second.
"""

from __future__ import annotations

from typing import Any

from dagster import (
    Executor,
    ExecutorDefinition,
    Field,
    InitExecutorContext,
    Selector,
    multi_or_in_process_executor,
    multiple_process_executor_requirements,
)
from dagster._core.definitions.executor_definition import IN_PROC_CONFIG, MULTI_PROC_CONFIG

from resources.executor_settings import ExecutorSettings


def executor_definition(settings: ExecutorSettings) -> ExecutorDefinition:
    """Modes ``multiprocess``, ``in_process`` and, if configured, ``dask`` (dagster-dask's config); the configured
    one is the default."""
    modes = {
        "multiprocess": _with_default(MULTI_PROC_CONFIG, "max_concurrent", settings.max_concurrent),
        "in_process": IN_PROC_CONFIG,
    }
    if settings.kind == "dask":
        from dagster_dask import dask_executor

        modes["dask"] = _with_default(dask_executor.config_schema.as_field(), "cluster", settings.dask.cluster())
    return ExecutorDefinition(
        name="aesforge_executor",
        config_schema=Field(Selector(modes), default_value={settings.kind: {}}),
        executor_creation_fn=_create_executor,
        requirements=lambda config: [] if "in_process" in config else multiple_process_executor_requirements(),
        description=f"Steps run {settings.kind} unless the run's execution config names another mode"
                    f" ({', '.join(modes)}).",
    )


def _with_default(field: Field, key: str, value: Any) -> Field:
    """``field`` (a block of keys) whose ``key`` defaults to ``value``."""
    fields = dict(field.config_type.fields)
    fields[key] = Field(fields[key].config_type, default_value=value, description=fields[key].description)
    return Field(fields, description=field.description)


def _create_executor(context: InitExecutorContext) -> Executor:
    ((mode, config),) = context.executor_config.items()
    if mode != "dask":
        return multi_or_in_process_executor.executor_creation_fn(context)
    from dagster_dask.executor import DaskExecutor

    ((cluster_type, cluster_config),) = config["cluster"].items()
    return DaskExecutor(cluster_type, cluster_config)
