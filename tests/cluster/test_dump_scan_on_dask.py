"""The photocritique dump scan on a Dask cluster of three worker processes, with the Dagster instance on a real
PostgreSQL server and the blobs on the loopback S3 server.

Every dump file is a shard of the scan (keyed by its fingerprint and the targets). On Dask, the ingest step runs on
one worker and sends one task per pending file to the same cluster; the tasks read their file and return its
candidate lines as data, and the step alone commits them to the warehouse, file by file. Here a worker scanning a
file is killed (SIGKILL) with that file open, mid-run: the scheduler runs its task again on another worker, the step
never notices, and the warehouse ends with the same rows as a run in one process. A file that changes afterwards is the only one
scanned again.
"""

from __future__ import annotations

import importlib.util
import io
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import dask
import pytest
import yaml
import zstandard
from dagster import AssetKey, DagsterInstance, execute_job
from distributed import Client, LocalCluster

from assets.photocritique.reddit_ingest import DUMP_SCAN_TASK
from pipelines.config import load_config
from pipelines.definitions import build_definitions
from tests.cluster.code_location import reconstructable_job
from tests.cluster.open_gate import GATE_ENV, OpenGate
from tests.cluster.test_distributed_run import (  # noqa: F401 - the instance and worker fixtures
    PER_RUN_COLUMNS, _query, instance, preloaded_workers, stable_rows)
from tests.support.pool_harness import step_summaries, warehouse_for, write_config
from tests.support.postgres_server import PostgresServer

WORKERS = 3
INGEST = ("reddit_posts", "reddit_comments")
GENERATED_SEED = 0  # bench/reddit_dump.py's generator: four monthly files (RS/RC, two months)
GENERATED_BYTES = 12 * 2**20  # uncompressed, all four
TARGET_FRACTION = 0.02
BATCH = 200
SLOW_DUMP = "RS_2024-03.ndjson"  # behind the gate (tests/cluster/open_gate.py): its first reader is held, then killed
# What the ingest steps write: the rows of a run on the cluster must equal those of a run in one process
TABLES = ("reddit_candidate", "reddit_dump_scan", "reddit_source_problem", "reddit_post_observation",
          "reddit_comment_observation", "reddit_post", "reddit_comment", "entity", "used", "was_generated_by",
          "was_derived_from")
PER_RUN = PER_RUN_COLUMNS | {"updated_at"}  # and when a dump scan's checkpoint last moved
BENCH_GENERATOR = Path(__file__).resolve().parents[2] / "bench" / "reddit_dump.py"


def _generator() -> Any:
    """bench/reddit_dump.py, whose ``generate`` writes synthetic monthly dumps (no real Reddit content)."""
    spec = importlib.util.spec_from_file_location("reddit_dump_bench", BENCH_GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def dumps(tmp_path_factory, archive: Path) -> dict[str, Any]:
    """The fixture archive's dumps and id list, generated monthly dumps and their targets, and the slow dump (a
    copy of the generated January submissions: every target in it is observed twice) behind a gate that holds
    the worker opening it while the test kills that worker."""
    root = tmp_path_factory.mktemp("generated_dumps")
    manifest = _generator().generate(root / "generated", GENERATED_BYTES, GENERATED_SEED, TARGET_FRACTION, 3, 22)
    id_list = root / "generated_ids.txt"
    id_list.write_text("".join(f"{post_id}\n" for post_id in manifest["targets"]), encoding="utf-8")
    with (root / "generated" / "RS_2024-01.zst").open("rb") as fh:
        content = zstandard.ZstdDecompressor().stream_reader(fh).read()
    (root / "slow").mkdir()
    slow = root / "slow" / SLOW_DUMP
    slow.write_bytes(content)
    return {
        "dumps": [archive / "dumps" / "monthly", archive / "dumps" / "subreddit", root / "generated", slow],
        "id_lists": [archive / "ids" / "test_ids.txt", id_list],
        "gate": OpenGate(root / "gate", slow),
    }


def _config(folder: Path, dumps: dict[str, Any], expected: dict, s3_server, name: str) -> Path:
    """``folder/aesforge.yaml``: the dump scan over ``dumps``, blobs in a new bucket of the loopback S3 server. Paths
    are relative to the folder, and every folder sits at the same depth, so the files' names (part of the ids) agree."""
    bucket = f"dumps-{name}"
    boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name=s3_server.region_name).create_bucket(Bucket=bucket)
    section = {key: [os.path.relpath(p, folder) for p in dumps[key]] for key in ("dumps", "id_lists")}
    section.update(username_salt=expected["salt"], batch_size=BATCH)
    blobs = {"s3_bucket": bucket, "s3": {"endpoint_url": s3_server.endpoint_url, "region_name": s3_server.region_name}}
    return write_config(folder, {}, photocritique=section, blob_store=blobs)


def _rows(config: Path) -> dict[str, list[tuple]]:
    return stable_rows(config, TABLES, PER_RUN)


def _in_process(config: Path):
    job = build_definitions(load_config(config)).resolve_job_def("photocritique_job")
    return job.execute_in_process(instance=DagsterInstance.ephemeral(), raise_on_error=False,
                                  asset_selection=[AssetKey(name) for name in INGEST])


@pytest.fixture(scope="module")
def in_process_rows(tmp_path_factory, dumps, expected, s3_server) -> dict[str, list[tuple]]:
    config = _config(tmp_path_factory.mktemp("in_process"), dumps, expected, s3_server, "in-process")
    result = _in_process(config)
    assert result.success
    rows = _rows(config)
    assert len(rows["reddit_post"]) > 50 and len(rows["reddit_comment"]) > 200 and rows["reddit_source_problem"]
    return rows


def _ingest_step_pids(postgres: PostgresServer, since: int) -> set[int]:
    return {pid for (pid,) in _query(postgres, "SELECT (event::json -> 'dagster_event' ->> 'pid')::int FROM event_logs"
                                     " WHERE id > %s AND dagster_event_type = 'STEP_START'", since)}


def _kill_the_slow_scan(cluster: LocalCluster, client: Client, postgres: PostgresServer, gate: OpenGate, since: int,
                        run_over: threading.Event) -> dict:
    """Once a worker is held at the slow dump's gate (it has opened the file), SIGKILL it; what was killed.
    Waits on the gate and the scheduler, never on a clock; fails the test if the run ends first."""
    while (pid := gate.held()) is None:
        if run_over.wait(0.05):
            raise AssertionError("the run ended before the slow dump was opened")
    try:
        addresses = {nanny.pid: nanny.worker_address for nanny in cluster.workers.values()}
        keys = [str(key) for key in client.processing()[addresses[pid]]
                if str(key).startswith(DUMP_SCAN_TASK) and SLOW_DUMP in str(key)]
        assert len(keys) == 1, keys  # the held worker is the one scanning the slow dump
        os.kill(pid, signal.SIGKILL)
        return {"pid": pid, "key": keys[0], "step_pids": _ingest_step_pids(postgres, since)}
    finally:
        gate.release()


def _last_event_id(postgres: PostgresServer) -> int:
    return _query(postgres, "SELECT coalesce(max(id), 0) FROM event_logs")[0][0]


def _append_copy_of_first_line(path: Path) -> None:
    """A zstd frame appended (a dump may hold several), holding a copy of the file's first line."""
    with path.open("rb") as fh, zstandard.ZstdDecompressor().stream_reader(fh) as reader:
        first = io.BufferedReader(reader).readline()
    with path.open("ab") as fh:
        fh.write(zstandard.ZstdCompressor().compress(first))


def _run_on(cluster: LocalCluster, config: Path, instance: DagsterInstance):
    settings = yaml.safe_load(config.read_text())
    settings["executor"] = {"kind": "dask", "dask": {"scheduler": cluster.scheduler_address}}
    config.write_text(yaml.safe_dump(settings))
    return execute_job(reconstructable_job("photocritique_job"), instance,
                       asset_selection=[AssetKey(name) for name in INGEST])


def test_a_worker_killed_mid_scan_loses_and_duplicates_no_rows_and_a_changed_file_alone_is_rescanned(
        tmp_path_factory, dumps, expected, s3_server, postgres, instance, in_process_rows, preloaded_workers,
        monkeypatch):
    config = _config(tmp_path_factory.mktemp("killed"), dumps, expected, s3_server, "killed")
    monkeypatch.setenv("AESFORGE_CONFIG", str(config))  # before the workers start: they inherit it
    gate: OpenGate = dumps["gate"]
    monkeypatch.setenv(GATE_ENV, str(gate.folder))
    with dask.config.set({"distributed.worker.preload": [*dask.config.get("distributed.worker.preload"),
                                                        "tests.cluster.open_gate"]}), \
            LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        run_over = threading.Event()
        opens = gate.opens
        gate.arm()
        with ThreadPoolExecutor(1) as watcher:
            killing = watcher.submit(_kill_the_slow_scan, cluster, client, postgres, gate, _last_event_id(postgres),
                                     run_over)
            try:
                result = _run_on(cluster, config, instance)
            finally:
                run_over.set()
            killed = killing.result()
        story = client.story(killed["key"])  # the scheduler's own record of the task

        assert result.success
        counts = {(step, kind): n for step, kind, n in _query(
            postgres, "SELECT step_key, dagster_event_type, count(*) FROM event_logs WHERE run_id = %s"
            " AND dagster_event_type LIKE 'STEP_%%' GROUP BY step_key, dagster_event_type", result.run_id)}
        assert not any(kind == "STEP_FAILURE" for _, kind in counts)
        assert all(counts[(step, "STEP_SUCCESS")] == 1 for step in INGEST)
        # The scan task died with its worker and the scheduler ran it again, from the start of the file. Had that
        # worker also run the ingest step itself (a step's own worker scans too while it waits), the step was run
        # again as well, resumed from its checkpoints and asked for the file anew.
        processing = sum(1 for entry in story if entry[0] == "scheduler" and entry[3] == "processing")
        assert gate.opens - opens >= 2  # the killed reader, then at least one from the start
        if killed["pid"] in killed["step_pids"]:
            assert counts[("reddit_posts", "STEP_START")] == 2 and processing >= 2
        else:
            assert counts[("reddit_posts", "STEP_START")] == 1 and processing == 2, story
        assert counts[("reddit_comments", "STEP_START")] == 1
        assert _rows(config) == in_process_rows

        summary = step_summaries(warehouse_for(config), result.run_id)
        rs_files = 3 + 2 + 1  # the fixture's two monthly and one subreddit file, two generated, the slow one
        assert summary["reddit_posts"]["dump_files_scanned_on_the_cluster:submissions"] == rs_files

        # One changed file (a copy of its first line appended) is the only shard scanned again
        changed = Path(dumps["dumps"][2]) / "RS_2024-02.zst"
        _append_copy_of_first_line(changed)
        opens = gate.opens
        again = _run_on(cluster, config, instance)
        assert again.success
        wh = warehouse_for(config)
        summary = step_summaries(wh, again.run_id)
        added = wh.query("SELECT DISTINCT o.source_locator FROM reddit_post_observation o JOIN activity a"
                         " USING (activity_id) WHERE a.run_id = ?", [again.run_id])["source_locator"]
        assert set(added) <= {wh.name_of(changed)}  # the new line's copy, if it is a target's
        assert _rows(config)["reddit_comment_observation"] == in_process_rows["reddit_comment_observation"]
        assert summary["reddit_posts"]["dump_files_scanned:submissions"] == 1
        assert summary["reddit_posts"]["dump_files_already_scanned:submissions"] == rs_files - 1
        assert summary["reddit_comments"]["dump_files_already_scanned:comments"] == 4 + 2  # the fixture's four, two generated
        assert gate.opens == opens
