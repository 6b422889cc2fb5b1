"""The config's ``executor`` section: checked as strictly as every other section, and turned into the executor of the
code location's jobs, whose configured mode and settings are the defaults a run's own execution config may override."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from dagster import Definitions, asset
from dagster._core.system_config.objects import ResolvedRunConfig

from pipelines.config import ConfigError, load_config
from pipelines.definitions import build_definitions
from pipelines.executor import executor_definition
from resources.executor_settings import ExecutorSettings


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    return str(raised.value).removeprefix(f"{path}:")


@pytest.mark.parametrize(("text", "line"), [
    ("executor:\n  knd: dask\n", "2:3: executor: unknown key 'knd'; did you mean 'kind'?"),
    ("executor:\n  kind: dask\n  dask: {schedular: 'tcp://h:8786'}\n",
     "3:10: executor.dask: unknown key 'schedular'; did you mean 'scheduler'?"),
    ("executor:\n  kind: celery\n",
     "2:9: executor.kind: Input should be 'multiprocess', 'in_process' or 'dask' (got 'celery')"),
    ("executor:\n  kind: dask\n  max_concurrent: 4\n", "2:3: executor: max_concurrent applies to kind multiprocess"
     " only, not dask (a Dask cluster runs as many steps at once as its workers have threads)"),
    ("executor:\n  dask: {n_workers: 2}\n", "2:3: executor: the dask block applies to kind dask only, not multiprocess"),
    ("executor:\n  kind: dask\n  dask: {scheduler: 'tcp://h:8786', n_workers: 2}\n",
     "3:9: executor.dask: n_workers applies to the local cluster only; an existing scheduler has its own workers"),
    ("executor:\n  max_concurrent: 0\n", "2:19: executor.max_concurrent: Input should be greater than or equal to 1 (got 0)"),
])
def test_a_wrong_executor_section_is_one_line(tmp_path, text, line):
    assert _error(tmp_path, text) == line


@asset
def _an_asset() -> int:
    return 1


def _resolved(settings: dict[str, Any], run_config: dict[str, Any] | None = None) -> dict[str, Any]:
    """The executor config a run of a job gets under ``settings`` (the section) and the run's own ``run_config``."""
    defs = Definitions(assets=[_an_asset], executor=executor_definition(ExecutorSettings(**settings)))
    job = defs.resolve_implicit_global_asset_job_def()
    resolved = ResolvedRunConfig.build(job, run_config or {}).execution.execution_engine_config
    ((mode, config),) = resolved.items()
    return {mode: {key: config[key] for key in ("max_concurrent", "cluster") if key in config}}


@pytest.mark.parametrize(("settings", "run_config", "expected"), [
    ({}, None, {"multiprocess": {"max_concurrent": None}}),  # as Dagster's default executor: one process per CPU
    ({"max_concurrent": 2}, None, {"multiprocess": {"max_concurrent": 2}}),
    # the CLI's --executor multiprocess still gets the configured limit
    ({"max_concurrent": 2}, {"multiprocess": {}}, {"multiprocess": {"max_concurrent": 2}}),
    ({"kind": "in_process"}, None, {"in_process": {}}),
    ({"kind": "dask", "dask": {"scheduler": "tcp://scheduler:8786"}}, None,
     {"dask": {"cluster": {"existing": {"address": "tcp://scheduler:8786"}}}}),
    ({"kind": "dask", "dask": {"n_workers": 2}}, None, {"dask": {"cluster": {"local": {"n_workers": 2}}}}),
    ({"kind": "dask"}, {"in_process": {}}, {"in_process": {}}),  # a run may still ask for one process
])
def test_the_configured_mode_is_the_default_a_run_may_override(settings, run_config, expected):
    execution = {"execution": {"config": run_config}} if run_config else None
    assert _resolved(settings, execution) == expected


def test_dask_is_offered_only_when_configured():
    from dagster import DagsterInvalidConfigError

    with pytest.raises(DagsterInvalidConfigError):
        _resolved({}, {"execution": {"config": {"dask": {}}}})


def test_every_job_of_the_code_location_gets_the_configured_executor(tmp_path):
    path = tmp_path / "aesforge.yaml"
    path.write_text(yaml.safe_dump({"executor": {"kind": "dask", "dask": {"scheduler": "tcp://scheduler:8786"}}}))
    defs = build_definitions(load_config(path))
    jobs = [job for job in defs.resolve_all_job_defs() if not job.name.startswith("__")]
    assert len(jobs) >= 7
    for job in jobs:
        resolved = ResolvedRunConfig.build(job, {}).execution.execution_engine_config
        assert resolved == {"dask": {"cluster": {"existing": {"address": "tcp://scheduler:8786"}}}}, job.name
