"""Result shards as a worker writes them and the committer reads them: in a local blob folder and in a bucket on
the loopback S3 server; a shard whose manifest is missing or whose files do not match it is never loaded."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import boto3
import pytest
from dagster_aws.s3 import S3Resource

from assets.core.result_shards import MANIFEST_NAME, LoadedShard, ShardFolder, asset_folder, shard_id_for, write_shard
from resources.blob_store import BlobStoreResource, InvalidObjectKey, KeyedObjects, LocalBlobStore, keyed_objects
from tests.support.shard_rows import ASSET, decode_tables, item_keys


def _s3_objects(s3_server) -> KeyedObjects:
    bucket = f"shards-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name=s3_server.region_name).create_bucket(Bucket=bucket)
    resource = BlobStoreResource(s3_bucket=bucket, s3=S3Resource(endpoint_url=s3_server.endpoint_url,
                                                                 region_name=s3_server.region_name))
    return keyed_objects(resource.get_store())


@pytest.fixture(params=["local", "s3"])
def objects(request: pytest.FixtureRequest, tmp_path: Path) -> KeyedObjects:
    if request.param == "local":
        return keyed_objects(LocalBlobStore(tmp_path / "blobs"))
    return _s3_objects(request.getfixturevalue("s3_server"))


def _write(objects: KeyedObjects, keys: list[str]):
    activity, tables = decode_tables(keys)
    return write_shard(objects, asset=ASSET, activity_id=activity, input_keys=keys, tables=tables), tables


def test_shard_id_depends_on_the_inputs_not_their_order():
    keys = item_keys(3)
    assert shard_id_for(ASSET, keys) == shard_id_for(ASSET, list(reversed(keys)) + keys[:1])
    assert shard_id_for(ASSET, keys) != shard_id_for(ASSET, keys[:2])
    assert shard_id_for(ASSET, keys) != shard_id_for(ASSET, keys, version="2")
    assert shard_id_for(ASSET, keys) != shard_id_for("image_pool/other", keys)


def test_a_written_shard_loads_back_row_for_row(objects):
    manifest, tables = _write(objects, item_keys(4))
    folder = ShardFolder(objects, ASSET)

    assert folder.pending() == [manifest.shard_id]
    loaded = folder.load(manifest.shard_id)
    assert isinstance(loaded, LoadedShard)
    assert loaded.activity_id == tables["activity"][0]["activity_id"]
    assert {name for name, _, _ in loaded.tables} == {name for name, rows in tables.items() if rows}
    for name, rows, conflict in loaded.tables:
        assert rows.to_pylist() == tables[name], name
        assert conflict == ("replace" if name == "rejection" else "ignore")
    assert {t.table: t.rows for t in manifest.tables}["entity"] == 4 * 2 + 3  # record and file each, 3 images


def test_the_same_inputs_write_the_same_bytes(tmp_path):
    first, second = (keyed_objects(LocalBlobStore(tmp_path / name)) for name in ("a", "b"))
    manifest, _ = _write(first, item_keys(3))
    _write(second, item_keys(3))
    keys = first.list_objects(asset_folder(ASSET))
    assert keys == second.list_objects(asset_folder(ASSET)) and len(keys) == len(manifest.tables) + 1
    assert all(first.get_object(key) == second.get_object(key) for key in keys)


def test_a_shard_without_its_manifest_is_unfinished(objects):
    manifest, _ = _write(objects, item_keys(2))
    objects.delete_object(f"{asset_folder(ASSET)}/{manifest.shard_id}/{MANIFEST_NAME}")
    folder = ShardFolder(objects, ASSET)
    assert folder.pending() == [manifest.shard_id]  # seen, not ignored
    assert folder.load(manifest.shard_id).startswith("unfinished: no manifest")


def test_a_file_that_does_not_match_its_checksum_is_refused(objects):
    manifest, _ = _write(objects, item_keys(2))
    image = next(t for t in manifest.tables if t.table == "image")
    objects.put_object(image.key, objects.get_object(image.key)[:-1] + b"\0")
    reason = ShardFolder(objects, ASSET).load(manifest.shard_id)
    assert reason == f"{image.key}: sha256 {_sha(objects.get_object(image.key))} does not match the manifest's {image.sha256}"


def test_a_file_listed_but_missing_is_refused(objects):
    manifest, _ = _write(objects, item_keys(2))
    entity = next(t for t in manifest.tables if t.table == "entity")
    objects.delete_object(entity.key)
    assert ShardFolder(objects, ASSET).load(manifest.shard_id) == f"{entity.key} is listed in the manifest but missing"


def test_a_damaged_manifest_is_refused(objects):
    manifest, _ = _write(objects, item_keys(2))
    objects.put_object(f"{asset_folder(ASSET)}/{manifest.shard_id}/{MANIFEST_NAME}", b'{"format": 1, "tables": [')
    assert ShardFolder(objects, ASSET).load(manifest.shard_id).startswith("manifest unreadable: ")


def test_remove_deletes_every_object_of_the_shard(objects):
    kept, _ = _write(objects, item_keys(2))
    gone, _ = _write(objects, item_keys(2, offset=2))
    folder = ShardFolder(objects, ASSET)
    folder.remove(gone.shard_id)
    assert folder.pending() == [kept.shard_id]


@pytest.mark.parametrize("key", ["../escape", "a/../../b", "/abs", "a//b", ".hidden/x", "a/-x", "", "a b"])
def test_keys_that_could_leave_the_namespace_are_refused(objects, key):
    with pytest.raises(InvalidObjectKey):
        objects.put_object(key, b"x")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
