"""The committer ingests finished result shards into a real warehouse file: once each (a rerun, a second committer
or a committer killed mid-transaction adds nothing twice and loses nothing), never a torn one (it is reported with
why), from a local folder or a bucket on the loopback S3 server, with every provenance edge the worker wrote."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import boto3
import pytest
from dagster_aws.s3 import S3Resource

from assets.core.result_shards import MANIFEST_NAME, LoadedShard, ShardFolder, asset_folder, write_shard
from resources.blob_store import BlobStoreResource, LocalBlobStore, keyed_objects
from tests.support.shard_rows import ASSET, decode_tables, item_keys
from warehouse.db import Warehouse
from warehouse.shard_commit import commit_shards, ingest_shard

REPO = Path(__file__).resolve().parents[2]
TABLES = ("source_record", "file_blob", "record_file", "file_decode", "image", "entity", "was_generated_by", "used",
          "was_derived_from", "rejection", "activity", "agent", "was_associated_with")


def _counts(wh: Warehouse) -> dict[str, int]:
    return {table: wh.scalar(f"SELECT count(*) FROM {table}") for table in (*TABLES, "committed_shard")}


def _write_shards(objects, n_shards: int, per_shard: int = 3) -> list[str]:
    ids = []
    for shard in range(n_shards):
        keys = item_keys(per_shard, offset=shard * per_shard)
        activity, tables = decode_tables(keys, run_id=f"run-{shard}")
        ids.append(write_shard(objects, asset=ASSET, activity_id=activity, input_keys=keys, tables=tables).shard_id)
    return ids


def _expected(n_shards: int, per_shard: int = 3) -> dict[str, int]:
    items, images = n_shards * per_shard, n_shards * (per_shard - 1)
    return {"source_record": items, "file_blob": items, "record_file": items, "file_decode": items, "image": images,
            "entity": 2 * items + images, "was_generated_by": 2 * items + images, "used": items,
            "was_derived_from": items + images, "rejection": n_shards, "activity": n_shards, "agent": 1,
            "was_associated_with": n_shards, "committed_shard": n_shards}


@pytest.fixture
def local(tmp_path):
    return Warehouse(tmp_path / "warehouse.duckdb"), keyed_objects(LocalBlobStore(tmp_path / "blobs"))


def test_commit_ingests_every_row_and_records_the_shard(local):
    wh, objects = local
    ids = _write_shards(objects, 2)

    report = commit_shards(wh, ShardFolder(objects, ASSET))

    assert sorted(report.committed) == sorted(ids) and not report.refused and not report.already
    assert _counts(wh) == _expected(2)
    rows = sum(v for k, v in _expected(2).items() if k != "committed_shard")
    assert (report.rows_offered, report.rows_inserted) == (rows + 1, rows)  # both shards name the agent; one row new
    ledger = wh.query("SELECT shard_id, asset_key, n_rows, n_inserted, tables FROM committed_shard ORDER BY shard_id")
    assert list(ledger.shard_id) == sorted(ids) and set(ledger.asset_key) == {ASSET}
    assert ShardFolder(objects, ASSET).pending() == []  # committed shards are removed from the store


def test_committing_again_adds_nothing(local):
    wh, objects = local
    _write_shards(objects, 2)
    commit_shards(wh, ShardFolder(objects, ASSET))
    before = _counts(wh)

    ids = _write_shards(objects, 2)  # a rerun of the same inputs writes the same shards again
    report = commit_shards(wh, ShardFolder(objects, ASSET))

    assert sorted(report.already) == sorted(ids) and report.committed == [] and report.rows_offered == 0
    assert _counts(wh) == before
    assert ShardFolder(objects, ASSET).pending() == []


def test_a_torn_shard_is_refused_with_its_reason_and_committed_once_finished(local):
    wh, objects = local
    [shard] = _write_shards(objects, 1)
    manifest_key = f"{asset_folder(ASSET)}/{shard}/{MANIFEST_NAME}"
    manifest = objects.get_object(manifest_key)
    objects.delete_object(manifest_key)  # the worker died before its last write

    report = commit_shards(wh, ShardFolder(objects, ASSET))

    assert report.committed == [] and [s for s, _ in report.refused] == [shard]
    assert report.refused[0][1].startswith("unfinished: no manifest")
    assert _counts(wh)["source_record"] == 0 and _counts(wh)["committed_shard"] == 0
    assert ShardFolder(objects, ASSET).pending() == [shard]  # left for a later pass, not deleted

    objects.put_object(manifest_key, manifest)
    assert commit_shards(wh, ShardFolder(objects, ASSET)).committed == [shard]
    assert _counts(wh) == _expected(1)


def test_a_shard_with_a_file_missing_adds_none_of_its_rows(local):
    wh, objects = local
    good, torn = _write_shards(objects, 2)
    missing = f"{asset_folder(ASSET)}/{torn}/image.parquet"
    objects.delete_object(missing)

    report = commit_shards(wh, ShardFolder(objects, ASSET))

    assert report.committed == [good]
    assert report.refused == [(torn, f"{missing} is listed in the manifest but missing")]
    assert _counts(wh) == _expected(1)  # the torn shard's other tables, present and sound, are not half-committed


def test_a_committer_killed_inside_its_transaction_leaves_nothing_and_the_next_commits_once(local, tmp_path):
    wh, objects = local
    [shard] = _write_shards(objects, 1)
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        from assets.core.result_shards import ShardFolder
        from resources.blob_store import LocalBlobStore, keyed_objects
        from warehouse.db import Warehouse
        from warehouse.shard_commit import ingest_shard
        loaded = ShardFolder(keyed_objects(LocalBlobStore({str(tmp_path / 'blobs')!r})), {ASSET!r}).load({shard!r})
        with Warehouse({str(wh.path)!r}).transaction() as con:
            print(ingest_shard(con, loaded), flush=True)  # every row and the ledger row, not yet committed
            os._exit(9)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 9 and int(done.stdout) > 0, done.stderr

    assert _counts(wh) == {table: 0 for table in (*TABLES, "committed_shard")}
    assert commit_shards(wh, ShardFolder(objects, ASSET)).committed == [shard]
    assert _counts(wh) == _expected(1)


def test_ingest_of_a_shard_in_the_ledger_writes_nothing(local):
    wh, objects = local
    [shard] = _write_shards(objects, 1)
    loaded = ShardFolder(objects, ASSET).load(shard)
    assert isinstance(loaded, LoadedShard)
    with wh.transaction() as con:
        assert ingest_shard(con, loaded) > 0
    with wh.transaction() as con:
        assert ingest_shard(con, loaded) is None
    assert _counts(wh) == _expected(1)


def test_two_committers_racing_on_one_folder_ingest_each_shard_once(local, tmp_path):
    wh, objects = local
    ids = _write_shards(objects, 8)
    with wh.transaction():  # migrated before the race, so both committers only commit
        pass
    go = tmp_path / "go"
    script = textwrap.dedent(f"""
        import json, os, sys, time
        sys.path.insert(0, {str(REPO)!r})
        from assets.core.result_shards import ShardFolder
        from resources.blob_store import LocalBlobStore, keyed_objects
        from warehouse.db import Warehouse
        from warehouse.shard_commit import commit_shards
        folder = ShardFolder(keyed_objects(LocalBlobStore({str(tmp_path / 'blobs')!r})), {ASSET!r})
        wh = Warehouse({str(wh.path)!r})
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
        report = commit_shards(wh, folder)
        print(json.dumps({{"committed": report.committed, "already": report.already, "refused": report.refused}}))
    """)
    racers = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for _ in range(2)]
    go.touch()
    reports = []
    for racer in racers:
        out, err = racer.communicate(timeout=300)
        assert racer.returncode == 0, err
        reports.append(__import__("json").loads(out))

    committed = [shard for report in reports for shard in report["committed"]]
    assert sorted(committed) == sorted(ids)  # each shard by exactly one of them
    for report in reports:  # the other saw it in the ledger, or saw it removed under it and said so
        assert set(report["committed"]) | set(report["already"]) | {s for s, _ in report["refused"]} <= set(ids)
        assert all("missing" in why or "no manifest" in why for _, why in report["refused"])
    assert _counts(wh) == _expected(8)


def test_shards_in_a_bucket_commit_like_local_ones(tmp_path, s3_server):
    bucket = f"shards-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name=s3_server.region_name).create_bucket(Bucket=bucket)
    store = BlobStoreResource(s3_bucket=bucket, s3=S3Resource(endpoint_url=s3_server.endpoint_url,
                                                              region_name=s3_server.region_name)).get_store()
    objects = keyed_objects(store)
    ids = _write_shards(objects, 3)
    wh = Warehouse(tmp_path / "warehouse.duckdb")

    report = commit_shards(wh, ShardFolder(objects, ASSET))
    again = commit_shards(wh, ShardFolder(objects, ASSET))

    assert sorted(report.committed) == sorted(ids) and again.committed == again.already == []
    assert _counts(wh) == _expected(3)
    listed = boto3.client("s3", endpoint_url=s3_server.endpoint_url,
                          region_name=s3_server.region_name).list_objects_v2(Bucket=bucket)
    assert listed.get("KeyCount", 0) == 0


def test_provenance_of_a_committed_image_reaches_its_source_record(local):
    wh, objects = local
    keys = item_keys(3)
    activity, tables = decode_tables(keys)
    write_shard(objects, asset=ASSET, activity_id=activity, input_keys=keys, tables=tables)
    commit_shards(wh, ShardFolder(objects, ASSET))
    image = tables["image"][0]["image_id"]
    record = tables["source_record"][0]

    with wh.transaction() as con:  # what ``aesforge provenance <item>`` runs
        rows = con.execute("SELECT depth, entity_id, entity_kind, derived_as, link, asset_key, agents, source_url,"
                           " license FROM provenance(?) ORDER BY depth DESC, started_at, entity_id, link", [image]).fetchall()

    assert [(r[0], r[2], r[3], r[4]) for r in rows] == [
        (2, "source_record", "retrieved_from", "generated"),
        (2, "source_record", "retrieved_from", "used as record"),
        (1, "file", "decoded_from", "generated"),
        (0, "image", None, "generated"),
    ]
    assert rows[0][1] == record["record_id"] and rows[0][7] == record["source_url"] and rows[0][8] == "CC-BY-4.0"
    assert {r[5] for r in rows} == {ASSET} and all(r[6] == ["software:aesforge@test"] for r in rows)
    assert os.path.exists(wh.path)
