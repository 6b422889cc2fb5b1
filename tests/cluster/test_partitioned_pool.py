"""The pool built shard by shard on a Dask cluster of three worker processes (Dagster instance on PostgreSQL, blobs on
the loopback S3 server), one worker killed (SIGKILL) in the middle of a partitioned step: the runs recover, and once
the cross-shard steps have run the warehouse holds the rows of the unpartitioned in-process run, none lost or twice;
a rerun of one shard changes nothing.

The shards run as two single-run ranges (``0..b`` then ``c..f``) rather than one run per shard: a range is how a
backfill of many shards runs with ``BackfillPolicy.single_run`` (one step per asset for the whole range), and sixteen
runs of one shard each would spend the test's minutes on Dagster's per-run start-up, not on the pool. The first range
holds about three quarters of the records, so the killed step has committed part of its work, not all of it.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import yaml
from dagster import AssetKey, execute_job
from distributed import LocalCluster

from assets.image_pool.logic.shards import shard_keys, shard_of
from assets.image_pool.shards import shard_range_tags
from tests.cluster.code_location import reconstructable_job
from tests.cluster.test_distributed_run import (  # noqa: F401 (corpus, instance, in_process_rows, preloaded_workers: fixtures)
    IMAGES, KILLED_STEP, WORKERS, _blob_keys, _config, _kill_worker_mid_step, _last_event_id, _steps_recorded,
    _worker_pids, corpus, in_process_rows, instance, preloaded_workers, stable_rows,
)
from tests.support.pool_harness import snapshot, step_summaries, warehouse_for

PER_SHARD = [AssetKey(name) for name in ("fetched_files", "normalized_images", "pool_candidates")]
CROSS_SHARD = [AssetKey(name) for name in ("perceptual_duplicates", "clip_duplicates", "model_filter_verdicts", "image_pool")]
FIRST, SECOND = "0..b", "c..f"


def test_the_pool_shard_by_shard_on_dask_survives_a_killed_worker(
        tmp_path_factory, corpus, s3_server, postgres, instance, in_process_rows, preloaded_workers, monkeypatch):
    config = _config(tmp_path_factory.mktemp("sharded"), corpus, s3_server, "sharded")
    monkeypatch.setenv("AESFORGE_CONFIG", str(config))  # before the workers start: they inherit it
    with LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        settings = yaml.safe_load(config.read_text())
        settings["executor"] = {"kind": "dask", "dask": {"scheduler": cluster.scheduler_address}}
        config.write_text(yaml.safe_dump(settings))
        workers = _worker_pids(cluster)
        job = reconstructable_job("image_pool_job")
        assert execute_job(job, instance, asset_selection=[AssetKey("source_records")]).success
        wh = warehouse_for(config)
        records = set(wh.query("SELECT record_id FROM source_record")["record_id"])
        in_first = {record for record in records if shard_of(record) in shard_keys(FIRST)}
        assert len(records) == IMAGES + 1 and 3 < len(in_first) < len(records)

        run_over = threading.Event()
        with ThreadPoolExecutor(1) as watcher:
            killing = watcher.submit(_kill_worker_mid_step, postgres, config, _last_event_id(postgres), run_over)
            try:
                first = execute_job(job, instance, tags=shard_range_tags(shard_keys(FIRST)), asset_selection=PER_SHARD)
            finally:
                run_over.set()
            killed = killing.result()
        assert killed["pid"] in workers
        assert first.success
        assert set(wh.query("SELECT record_id FROM pool_candidate")["record_id"]) == in_first  # its shards alone

        second = execute_job(job, instance, tags=shard_range_tags(shard_keys(SECOND)), asset_selection=PER_SHARD)
        assert second.success
        assert set(wh.query("SELECT record_id FROM pool_candidate")["record_id"]) == records

        before = snapshot(wh)
        shard = shard_of(min(records))
        again = execute_job(job, instance, tags=shard_range_tags((shard,)), asset_selection=PER_SHARD)
        assert again.success and snapshot(wh) == before  # a shard rebuilt: nothing of it was left to do
        summaries = step_summaries(wh, again.run_id)
        assert summaries["normalized_images"]["shards"] == shard and summaries["normalized_images"]["files_pending"] == 0

        cross = execute_job(job, instance, asset_selection=CROSS_SHARD)  # unpartitioned: reads every shard
        assert cross.success

    status, counts, _ = _steps_recorded(postgres, first.run_id)
    assert status == "SUCCESS"
    assert counts[(KILLED_STEP, "STEP_START")] == 2 and counts[(KILLED_STEP, "STEP_SUCCESS")] == 1
    assert 0 < killed["decoded_before_kill"] < len(in_first)  # the first attempt died with part of its work committed
    notes = {key: json.loads(summary)["shards"] for key, summary in wh.query(
        "SELECT run_id, summary FROM activity WHERE asset_key = 'normalized_images' AND status = 'success'"
        " AND run_id IN (?, ?)", [first.run_id, second.run_id]).itertuples(index=False)}
    assert notes == {first.run_id: FIRST, second.run_id: SECOND}
    assert stable_rows(config) == in_process_rows
    named, stored = _blob_keys(config, s3_server)
    assert named == stored and len(stored) == IMAGES + 1
