"""The image-pool job on a Dask cluster of three worker processes, with the Dagster instance on a real PostgreSQL
server and the blobs on the loopback S3 server: it writes the same warehouse rows as the job run in one process,
and it still does when one worker is killed (SIGKILL) in the middle of a step that has committed part of its work.

Why the kill is survivable: the scheduler sees the worker's connection drop, its nanny starts a new one, and every
task that was running there (or whose result only lived there) runs again elsewhere; the steps record only items
without an outcome, so the second attempt finishes what the first began and adds nothing twice.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import dask
import psycopg2
import pytest
import yaml
from dagster import DagsterInstance, execute_job
from distributed import LocalCluster

from sample import synth
from tests.cluster.code_location import reconstructable_job
from tests.cluster.conftest import DAGSTER_DB
from tests.support.pool_harness import DATA_TABLES, run_pool, warehouse_for, write_config
from tests.support.postgres_server import PostgresServer

IMAGES = 24  # and one resized copy of the first, which the pool keeps out as a duplicate
BATCH = 3
KILLED_STEP = "normalized_images"  # decodes every image, BATCH at a time, each batch committed on its own
WORKERS = 3
# Columns that name a run or a moment: they differ between any two runs, whatever the executor
PER_RUN_COLUMNS = {"activity_id", "recorded_at", "generated_at", "seen_at", "started_at", "duration_ms"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("corpus") / "images"
    folder.mkdir()
    for i in range(IMAGES):
        synth.render_painting(300 + i, (320, 256)).save(folder / f"p{i:02d}.png")
    synth.resized(synth.render_painting(300, (320, 256)), 0.8).save(folder / "p00_small.png")
    return folder


def _config(folder: Path, corpus: Path, s3_server, name: str, executor: dict[str, Any] | None = None) -> Path:
    """``folder/aesforge.yaml``: a pool over ``corpus`` whose warehouse is ``<name>.duckdb`` and whose blobs go to a new
    bucket ``pool-<name>`` of the loopback S3 server. Every config folder sits at the same depth beside the corpus,
    so the files' names relative to it (part of the records' ids) are the same."""
    bucket = f"pool-{name}"
    boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name=s3_server.region_name).create_bucket(Bucket=bucket)
    pool = {"folders": [{"path": os.path.relpath(corpus, folder), "provider": "t", "license": "CC0-1.0",
                         "domain": "painting"}], "batch_size": BATCH}
    blobs = {"s3_bucket": bucket, "s3": {"endpoint_url": s3_server.endpoint_url, "region_name": s3_server.region_name}}
    return write_config(folder, pool, warehouse={"path": f"{name}.duckdb"}, blob_store=blobs,
                        **({"executor": executor} if executor else {}))


def stable_rows(config: Path, tables: tuple[str, ...] = DATA_TABLES,
                per_run: frozenset[str] | set[str] = PER_RUN_COLUMNS) -> dict[str, list[tuple]]:
    """Every data table's rows without the columns that name a run or a moment, sorted: the ids and outcomes."""
    wh = warehouse_for(config)
    out = {}
    with wh.transaction() as con:
        for table in tables:
            columns = [name for name, *_ in con.execute(f"DESCRIBE {table}").fetchall() if name not in per_run]
            rows = con.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
            out[table] = sorted(rows, key=repr)
    return out


@pytest.fixture(scope="module")
def in_process_rows(tmp_path_factory, corpus, s3_server) -> dict[str, list[tuple]]:
    config = _config(tmp_path_factory.mktemp("in_process"), corpus, s3_server, "in-process")
    assert run_pool(config).success
    rows = stable_rows(config)
    assert len(rows["pool_member"]) == IMAGES + 1 and len(rows["rejection"]) == 1  # the duplicate's
    return rows


@pytest.fixture(scope="module")
def instance(tmp_path_factory, postgres: PostgresServer) -> Iterator[DagsterInstance]:
    """A Dagster instance whose run, event-log and schedule storage is the Postgres server (dagster-postgres)."""
    home = tmp_path_factory.mktemp("dagster_home")
    # dagster-postgres needs psycopg2 (it binds NOTIFY's payload client-side); SQLAlchemy 2.1 would pick psycopg 3
    database = {"hostname": postgres.host, "port": postgres.port, "username": postgres.user, "db_name": DAGSTER_DB,
                "scheme": "postgresql+psycopg2"}
    (home / "dagster.yaml").write_text(yaml.safe_dump({"storage": {"postgres": {"postgres_db": database}}}))
    with DagsterInstance.from_config(str(home)) as dagster_instance:
        storages = (dagster_instance.run_storage, dagster_instance.event_log_storage, dagster_instance.schedule_storage)
        assert [type(storage).__name__ for storage in storages] == [
            "PostgresRunStorage", "PostgresEventLogStorage", "PostgresScheduleStorage"]
        yield dagster_instance


@pytest.fixture
def preloaded_workers() -> Iterator[None]:
    """Dask workers started meanwhile import the code location as they start (``dask worker --preload`` in
    production), all at once, rather than each at its first step, one after another on the run's critical path."""
    with dask.config.set({"distributed.worker.preload": ["pipelines.definitions"]}):
        yield


def _worker_pids(cluster: LocalCluster) -> set[int]:
    """The cluster's worker processes, asked of their nannies (in this process), not of the workers."""
    return {nanny.pid for nanny in cluster.workers.values()} - {None}


def _steps_recorded(postgres: PostgresServer, run_id: str) -> tuple[str, dict[tuple[str, str], int], set[int]]:
    """From Postgres itself: the run's status, its step events by (step, event type), and the pids that ran steps."""
    ((status,),) = _query(postgres, "SELECT status FROM runs WHERE run_id = %s", run_id)
    counts = {(step, kind): n for step, kind, n in _query(
        postgres, "SELECT step_key, dagster_event_type, count(*) FROM event_logs WHERE run_id = %s"
        " AND dagster_event_type LIKE 'STEP_%%' GROUP BY step_key, dagster_event_type", run_id)}
    pids = {pid for (pid,) in _query(postgres, "SELECT DISTINCT (event::json -> 'dagster_event' ->> 'pid')::int"
                                     " FROM event_logs WHERE run_id = %s AND dagster_event_type = 'STEP_START'", run_id)}
    return status, counts, pids


def _query(postgres: PostgresServer, sql: str, *params: Any) -> list[tuple]:
    with closing(psycopg2.connect(postgres.url(DAGSTER_DB))) as connection, connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _blob_keys(config: Path, s3_server) -> tuple[set[str], set[str]]:
    """(the blobs the warehouse's rows name, the blobs in the config's bucket), by sha256."""
    bucket = yaml.safe_load(config.read_text())["blob_store"]["s3_bucket"]
    uris = warehouse_for(config).query("SELECT blob_uri FROM file_blob")["blob_uri"]
    s3 = boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name=s3_server.region_name)
    listed = {item["Key"].rsplit("/", 1)[-1] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
              for item in page.get("Contents", [])}
    return {uri.removeprefix("blob:") for uri in uris}, listed


def test_pool_job_on_a_dask_cluster_with_postgres_storage_and_s3_blobs(
        tmp_path_factory, corpus, s3_server, postgres, instance, in_process_rows, preloaded_workers, monkeypatch):
    # the config's executor section alone sends the run to Dask: here a cluster of three worker processes that the
    # run starts on this host (a config for production names a running scheduler instead: the next test)
    config = _config(tmp_path_factory.mktemp("dask"), corpus, s3_server, "undisturbed",
                     executor={"kind": "dask", "dask": {"n_workers": WORKERS}})
    monkeypatch.setenv("AESFORGE_CONFIG", str(config))  # the run's workers load the code location from it
    job = reconstructable_job("image_pool_job")
    assert job.get_definition().executor_def.name == "aesforge_executor"

    result = execute_job(job, instance)

    assert result.success
    status, counts, pids = _steps_recorded(postgres, result.run_id)
    assert status == "SUCCESS"
    steps = {step for step, kind in counts if kind == "STEP_START"}
    assert KILLED_STEP in steps and len(steps) >= 8
    assert all(counts[(step, "STEP_SUCCESS")] == 1 for step in steps)
    assert pids and os.getpid() not in pids  # every step ran in a worker process, none in the run's
    assert stable_rows(config) == in_process_rows
    named, stored = _blob_keys(config, s3_server)
    assert named == stored and len(stored) == IMAGES + 1


def _kill_worker_mid_step(postgres: PostgresServer, config: Path, since: int, run_over: threading.Event) -> dict:
    """Once ``KILLED_STEP`` has started and committed a batch, SIGKILL the process running it; what was seen.

    Waits on what the run records (the step's start in Postgres, which names its process; its rows in the
    warehouse), never on a clock, and asks the cluster nothing (a worker busy with a step answers late); gives up,
    failing the test, if the run ends first."""
    def wait_for(condition) -> Any:
        while not run_over.is_set():
            value = condition()
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"the run ended before {KILLED_STEP} was caught mid-step")

    def step_process() -> int | None:
        started = _query(postgres, "SELECT (event::json -> 'dagster_event' ->> 'pid')::int FROM event_logs"
                         " WHERE id > %s AND step_key = %s AND dagster_event_type = 'STEP_START'", since, KILLED_STEP)
        return started[0][0] if started else None

    pid = wait_for(step_process)
    warehouse = warehouse_for(config)
    decoded = wait_for(lambda: warehouse.scalar("SELECT count(*) FROM file_decode"))
    os.kill(pid, signal.SIGKILL)
    return {"pid": pid, "decoded_before_kill": decoded}


def _last_event_id(postgres: PostgresServer) -> int:
    return _query(postgres, "SELECT coalesce(max(id), 0) FROM event_logs")[0][0]


def test_a_worker_killed_mid_step_loses_and_duplicates_no_rows(
        tmp_path_factory, corpus, s3_server, postgres, instance, in_process_rows, preloaded_workers, monkeypatch):
    config = _config(tmp_path_factory.mktemp("killed"), corpus, s3_server, "killed")
    monkeypatch.setenv("AESFORGE_CONFIG", str(config))  # before the workers start: they inherit it
    # Each worker process runs under a nanny, which starts a new one when it dies
    with LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        settings = yaml.safe_load(config.read_text())  # a running cluster, as in production: its scheduler's address
        settings["executor"] = {"kind": "dask", "dask": {"scheduler": cluster.scheduler_address}}
        config.write_text(yaml.safe_dump(settings))
        workers = _worker_pids(cluster)
        run_over = threading.Event()
        with ThreadPoolExecutor(1) as watcher:
            killing = watcher.submit(_kill_worker_mid_step, postgres, config, _last_event_id(postgres), run_over)
            try:
                result = execute_job(reconstructable_job("image_pool_job"), instance)
            finally:
                run_over.set()
            killed = killing.result()
        assert killed["pid"] in workers  # a Dask worker process

    assert result.success
    status, counts, _ = _steps_recorded(postgres, result.run_id)
    assert status == "SUCCESS"
    assert counts[(KILLED_STEP, "STEP_START")] == 2 and counts[(KILLED_STEP, "STEP_SUCCESS")] == 1
    again = {pid for (pid,) in _query(postgres, "SELECT (event::json -> 'dagster_event' ->> 'pid')::int FROM event_logs"
                                      " WHERE run_id = %s AND step_key = %s AND dagster_event_type = 'STEP_SUCCESS'",
                                      result.run_id, KILLED_STEP)}
    assert again and killed["pid"] not in again  # finished by the worker the scheduler gave it to next
    assert not any(kind == "STEP_FAILURE" for _, kind in counts)
    assert 0 < killed["decoded_before_kill"] < IMAGES + 1  # the first attempt died with part of its work committed
    assert stable_rows(config) == in_process_rows
    named, stored = _blob_keys(config, s3_server)
    assert named == stored and len(stored) == IMAGES + 1
