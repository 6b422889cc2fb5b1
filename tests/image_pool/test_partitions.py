"""The pool's per-item assets partitioned by shard of their source records, through real materializations: a
partition run does only its shard's records, a rerun of it changes nothing, and shards built one run at a time then
clustered give the rows an unpartitioned run gives."""

import json
import os
import subprocess
import sys
from pathlib import Path

from dagster import AssetKey, DagsterInstance, ExecuteInProcessResult

from assets.image_pool.logic.shards import shard_keys, shard_of
from assets.image_pool.shards import WHOLE_POOL, shard_range_tags
from pipelines.config import load_config
from pipelines.definitions import build_definitions
from tests.cluster.test_distributed_run import IMAGES, corpus, stable_rows  # noqa: F401 (corpus: a fixture)
from tests.support.pool_harness import run_pool, snapshot, step_summaries, warehouse_for, write_config

PER_SHARD = ["fetched_files", "normalized_images", "pool_candidates"]
CROSS_SHARD = ["perceptual_duplicates", "image_pool"]  # CLIP and the model filters are not configured here


def _config(folder: Path, corpus: Path) -> Path:
    """A pool over ``corpus``; every config folder sits at the same depth beside it, so the records' ids agree."""
    pool = {"folders": [{"path": os.path.relpath(corpus, folder), "provider": "t", "license": "CC0-1.0",
                         "domain": "painting"}], "batch_size": 3}
    return write_config(folder, pool)


def _run(config: Path, select: list[str], shards: str | None = None) -> ExecuteInProcessResult:
    """``select`` of the pool job, for the shards ``shards`` names (``3``, ``0..7``: one run), or all of them."""
    tags = shard_range_tags(shard_keys(shards)) if shards else None  # a job's tags are the whole pool's range
    job = build_definitions(load_config(config)).resolve_job_def("image_pool_job")
    result = job.execute_in_process(instance=DagsterInstance.ephemeral(), raise_on_error=False, tags=tags,
                                    asset_selection=[AssetKey(name) for name in select])
    assert result.success
    return result


def _ids(config: Path, sql: str) -> set[str]:
    return set(warehouse_for(config).query(sql).iloc[:, 0])


def test_shard_by_shard_then_cross_shard_gives_the_unpartitioned_rows(tmp_path_factory, corpus):
    unpartitioned = _config(tmp_path_factory.mktemp("all"), corpus)
    everything = run_pool(unpartitioned, ["source_records", *PER_SHARD, *CROSS_SHARD])
    assert everything.success
    summaries = step_summaries(warehouse_for(unpartitioned), everything.run_id)
    assert {summaries[name]["shards"] for name in PER_SHARD} == {"all"}  # no key: every record, as before
    expected = stable_rows(unpartitioned)
    assert len(expected["pool_candidate"]) == IMAGES + 1

    config = _config(tmp_path_factory.mktemp("sharded"), corpus)
    _run(config, ["source_records"])
    records = _ids(config, "SELECT record_id FROM source_record")
    shard = shard_of(min(records))
    own = {record for record in records if shard_of(record) == shard}
    assert own != records  # the other records lie in other shards

    first = _run(config, PER_SHARD, shards=shard)
    assert _ids(config, "SELECT record_id FROM record_file") == own
    assert _ids(config, "SELECT record_id FROM pool_candidate") == own
    assert _ids(config, "SELECT d.file_sha256 FROM file_decode d") == _ids(
        config, "SELECT file_sha256 FROM record_file")  # decoded: the files of its records, no other
    summaries = step_summaries(warehouse_for(config), first.run_id)
    assert {summaries[name]["shards"] for name in PER_SHARD} == {shard}
    assert summaries["pool_candidates"]["records_pending"] == len(own)

    before = snapshot(warehouse_for(config))
    again = _run(config, PER_SHARD, shards=shard)  # nothing of its shard is left to do
    assert snapshot(warehouse_for(config)) == before
    summaries = step_summaries(warehouse_for(config), again.run_id)
    assert (summaries["fetched_files"]["locators_pending"], summaries["normalized_images"]["files_pending"],
            summaries["pool_candidates"]["records_pending"]) == (0, 0, 0)

    rest = _run(config, PER_SHARD, shards="0..f")  # the whole key space in one run: the other shards' items
    summaries = step_summaries(warehouse_for(config), rest.run_id)
    assert {summaries[name]["shards"] for name in PER_SHARD} == {"all"}
    assert summaries["pool_candidates"]["records_pending"] == len(records - own)
    _run(config, CROSS_SHARD)
    assert stable_rows(config) == expected


def test_every_job_reaching_the_pool_shards_runs_all_of_them_unless_told_otherwise(tmp_path):
    """A run with no partition at all fails in Dagster 1.13 once a partitioned asset reads another one, so each job
    whose selection holds the pool's per-shard assets carries the whole key range as its tags."""
    defs = build_definitions(load_config(_config(tmp_path / "cfg", tmp_path / "images")))
    graph = defs.resolve_asset_graph()
    sharded = {job.name for job in defs.resolve_all_job_defs() if not job.name.startswith("__")
               and any(graph.get(key).partitions_def is not None for key in job.asset_layer.selected_asset_keys)}
    assert {"image_pool_job", "full_rebuild_job", "photocritique_job"} <= sharded
    assert all(WHOLE_POOL.items() <= defs.resolve_job_def(name).tags.items() for name in sharded)


def _aesforge(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    env.pop("AESFORGE_CONFIG", None)
    return subprocess.run([str(Path(sys.executable).parent / "aesforge"), *args], capture_output=True, text=True,
                          timeout=600, env=env)


def test_aesforge_run_partition_builds_one_shard_and_refuses_unknown_ones(tmp_path_factory, corpus):
    config = _config(tmp_path_factory.mktemp("cli"), corpus)
    home = config.parent / "dagster_home"
    home.mkdir()
    run = ("run", "--config", str(config), "--job", "image_pool_job", "--executor", "in_process")
    assert _aesforge(*run, "--select", "source_records", home=home).returncode == 0
    records = _ids(config, "SELECT record_id FROM source_record")
    shard = shard_of(max(records))

    unknown = _aesforge(*run, "--partition", "g", home=home)
    assert unknown.returncode == 2 and unknown.stderr.strip().splitlines() == [
        "unknown pool shard 'g' in 'g': shards are 0 to f (a range: 0..7)"]
    unpartitioned = _aesforge(*run, "--select", "source_records", "--partition", shard, home=home)
    assert unpartitioned.returncode == 2 and "holds no partitioned asset" in unpartitioned.stderr
    assert not _ids(config, "SELECT record_id FROM record_file")

    done = _aesforge(*run, "--partition", shard, home=home)
    assert done.returncode == 0, done.stderr
    assert f"pool shards {shard}" in done.stdout
    own = {record for record in records if shard_of(record) == shard}
    assert _ids(config, "SELECT record_id FROM pool_candidate") == own
    (summary,) = warehouse_for(config).query("SELECT summary FROM activity WHERE asset_key = 'pool_candidates'")["summary"]
    assert json.loads(summary)["shards"] == shard

    everything = _aesforge(*run, home=home)  # no partition: the job's tags name every shard, as before
    assert everything.returncode == 0, everything.stderr
    assert _ids(config, "SELECT record_id FROM pool_candidate") == records
