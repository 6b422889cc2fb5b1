"""Where the code location's runs execute: section ``executor`` of the config file (``pipelines/executor.py`` turns
it into the jobs' Dagster executor; ``docs/deploy.md`` says when to choose which).

A resource as well, so a step that parallelises its own work can later reach the same Dask cluster its run uses.
"""

from __future__ import annotations

from typing import Literal, Optional

from dagster import Config, ConfigurableResource
from pydantic import Field, model_validator


class DaskClusterConfig(Config):
    """The Dask cluster of ``kind: dask``: an existing scheduler, or one started on this host for each run."""

    scheduler: Optional[str] = Field(default=None, description="Address of a running Dask scheduler"
                                     " (tcp://host:8786); empty: each run starts a local cluster of n_workers processes")
    n_workers: int = Field(default=3, ge=1, description="Worker processes of the local cluster a run starts when no"
                           " scheduler is given (one thread each: a step is not thread-safe)")

    @model_validator(mode="after")
    def _n_workers_without_scheduler_only(self) -> "DaskClusterConfig":
        if self.scheduler and "n_workers" in self.model_fields_set:
            raise ValueError("n_workers applies to the local cluster only; an existing scheduler has its own workers")
        return self

    def cluster(self) -> dict[str, dict]:
        """The ``cluster`` selector of ``dagster_dask``'s executor config."""
        if self.scheduler:
            return {"existing": {"address": self.scheduler}}
        return {"local": {"n_workers": self.n_workers}}


class ExecutorSettings(ConfigurableResource):
    """How a run's steps are executed; a run's own ``execution`` config (the CLI's ``--executor``) still overrides."""

    kind: Literal["multiprocess", "in_process", "dask"] = Field(
        default="multiprocess", description="multiprocess: a process per step on this host (the default); in_process:"
        " every step in the run's process; dask: each step a task on a Dask cluster (dagster-dask)")
    max_concurrent: Optional[int] = Field(default=None, ge=1, description="kind multiprocess: at most this many step"
                                          " processes at once (empty: one per CPU)")
    dask: DaskClusterConfig = Field(default_factory=DaskClusterConfig, description="kind dask: the cluster")

    @model_validator(mode="after")
    def _settings_of_the_kind_only(self) -> "ExecutorSettings":
        if "dask" in self.model_fields_set and self.kind != "dask":
            raise ValueError(f"the dask block applies to kind dask only, not {self.kind}")
        if self.max_concurrent is not None and self.kind != "multiprocess":
            raise ValueError(f"max_concurrent applies to kind multiprocess only, not {self.kind}"
                             + (" (a Dask cluster runs as many steps at once as its workers have threads)"
                                if self.kind == "dask" else ""))
        return self
