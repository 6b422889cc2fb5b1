"""Blob store: one contract run against the local directory and against S3 (moto server)."""

from __future__ import annotations

import hashlib
import os
import threading
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO

import boto3
import dagster as dg
import pytest
from botocore.exceptions import ClientError
from dagster_aws.s3 import S3Resource

from resources import blob_store
from resources.blob_store import (
    BlobNotFound,
    BlobRef,
    BlobSourceChanged,
    BlobStore,
    BlobStoreResource,
    InvalidSha256,
    LocalBlobStore,
    S3BlobStore,
    ref_sha256,
)
from tests.conftest import S3Server

MIB = 1 << 20


@dataclass
class Backend:
    """A store plus an out-of-band view of where it keeps things, to check the store against."""

    store: BlobStore
    location: Callable[[str], str]  # file path under root / object key, per the documented layout
    listing: Callable[[], set[str]]  # every file / object the store holds right now
    overwrite: Callable[[str, bytes], None]  # replace a stored blob's bytes, bypassing the store


def _local_backend(root: Path) -> Backend:
    store = BlobStoreResource(root=str(root)).get_store()

    def location(sha: str) -> str:
        return f"{sha[:2]}/{sha[2:4]}/{sha}"

    def listing() -> set[str]:
        files = root.rglob("*") if root.exists() else []
        return {p.relative_to(root).as_posix() for p in files if p.is_file()}

    return Backend(
        store=store,
        location=location,
        listing=listing,
        overwrite=lambda sha, data: (root / location(sha)).write_bytes(data),
    )


def _s3_backend(server: S3Server) -> Backend:
    bucket = f"blobs-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=server.endpoint_url, region_name=server.region_name)
    client.create_bucket(Bucket=bucket)
    store = BlobStoreResource(
        s3_bucket=bucket,
        s3=S3Resource(endpoint_url=server.endpoint_url, region_name=server.region_name),
    ).get_store()

    def location(sha: str) -> str:
        return f"aesforge/blobs/{sha[:2]}/{sha}"

    def listing() -> set[str]:
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return {obj["Key"] for page in pages for obj in page.get("Contents", [])}

    return Backend(
        store=store,
        location=location,
        listing=listing,
        overwrite=lambda sha, data: client.put_object(Bucket=bucket, Key=location(sha), Body=data),
    )


@pytest.fixture(params=["local", "s3"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "local":
        return _local_backend(tmp_path / "blobs")
    return _s3_backend(request.getfixturevalue("s3_server"))


def _put(store: BlobStore, data: bytes, via: str, tmp_path: Path) -> BlobRef:
    if via == "bytes":
        return store.put_bytes(data)
    source = tmp_path / f"source-{uuid.uuid4().hex}"
    source.write_bytes(data)
    return store.put_file(source)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- contract: both backends -------------------------------------------------------------------


@pytest.mark.parametrize("via", ["bytes", "file"])
@pytest.mark.parametrize("data", [b"", b"one small blob"], ids=["empty", "small"])
def test_put_then_read_back(backend: Backend, tmp_path: Path, via: str, data: bytes) -> None:
    sha = _sha(data)
    assert not backend.store.exists(sha)

    ref = _put(backend.store, data, via, tmp_path)

    assert ref == BlobRef(sha256=sha, size=len(data), uri=f"blob:{sha}")  # relative to the store, not its place
    assert backend.store.uri(sha) == ref.uri and ref_sha256(ref.uri) == sha
    assert backend.store.exists(sha)
    assert backend.store.get_bytes(sha) == data
    assert backend.listing() == {backend.location(sha)}


def test_put_file_of_several_mib(backend: Backend, tmp_path: Path) -> None:
    # 9 MiB is above boto's 8 MiB multipart threshold, so S3 takes the multipart path.
    data = os.urandom(9 * MIB)
    source = tmp_path / "big.bin"
    source.write_bytes(data)

    ref = backend.store.put_file(source)

    assert (ref.sha256, ref.size) == (_sha(data), len(data))
    assert backend.store.get_bytes(ref.sha256) == data
    assert backend.listing() == {backend.location(ref.sha256)}


def test_open_streams_the_blob(backend: Backend) -> None:
    data = os.urandom(3 * MIB + 17)
    sha = backend.store.put_bytes(data).sha256

    with backend.store.open(sha) as stream:
        head = stream.read(1000)
        rest = stream.read()

    assert len(head) == 1000
    assert head + rest == data


@pytest.mark.parametrize("via", ["bytes", "file"])
def test_second_put_does_not_rewrite(backend: Backend, tmp_path: Path, via: str) -> None:
    data = b"stored once"
    first = _put(backend.store, data, via, tmp_path)
    backend.overwrite(first.sha256, b"marker written behind the store's back")

    second = _put(backend.store, data, via, tmp_path)

    assert second == first
    assert backend.store.get_bytes(first.sha256) == b"marker written behind the store's back"
    assert backend.listing() == {backend.location(first.sha256)}


def test_concurrent_puts_of_one_blob_leave_one_complete_blob(backend: Backend) -> None:
    data = os.urandom(MIB)

    with ThreadPoolExecutor(max_workers=8) as pool:
        refs = set(pool.map(lambda _: backend.store.put_bytes(data), range(16)))

    assert len(refs) == 1
    (ref,) = refs
    assert backend.store.get_bytes(ref.sha256) == data
    assert backend.listing() == {backend.location(ref.sha256)}


def test_missing_blob_raises_blob_not_found(backend: Backend) -> None:
    sha = _sha(b"never stored")
    backend.store.put_bytes(b"something else")

    assert not backend.store.exists(sha)
    with pytest.raises(BlobNotFound) as by_get:
        backend.store.get_bytes(sha)
    with pytest.raises(BlobNotFound) as by_open:
        backend.store.open(sha)
    assert by_get.value.sha256 == by_open.value.sha256 == sha
    assert sha in str(by_get.value)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "../" * 21 + "x",
        "a" * 63,
        "a" * 65,
        "A" * 64,
        "g" * 64,
        "a" * 64 + "\n",
        "ab/cd/" + "a" * 58,
        b"a" * 64,
    ],
    ids=["empty", "traversal", "short", "long", "upper", "non-hex", "newline", "slashes", "bytes"],
)
def test_invalid_sha256_is_rejected_before_any_io(backend: Backend, bad: object) -> None:
    store = backend.store
    for method in (store.exists, store.get_bytes, store.open, store.uri):
        with pytest.raises(InvalidSha256) as raised:
            method(bad)
        assert repr(bad) in str(raised.value)
    assert backend.listing() == set()


def test_source_changed_after_hashing_stores_nothing(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer appends to the file between the hash pass and the copy/upload."""
    source = tmp_path / "growing.bin"
    source.write_bytes(b"original content")
    real_hash_stream = blob_store.sha256_stream

    def hash_then_file_grows(stream: BinaryIO) -> tuple[str, int]:
        digest = real_hash_stream(stream)
        with source.open("ab") as writer:
            writer.write(b" plus a late append")
        return digest

    monkeypatch.setattr(blob_store, "sha256_stream", hash_then_file_grows)

    with pytest.raises(BlobSourceChanged) as raised:
        backend.store.put_file(source)

    assert raised.value.sha256 == _sha(b"original content")
    assert not backend.store.exists(_sha(b"original content"))
    assert not backend.store.exists(_sha(b"original content plus a late append"))
    assert backend.listing() == set()


# --- local directory only ----------------------------------------------------------------------


def test_local_put_file_never_holds_the_file_in_memory(tmp_path: Path) -> None:
    source = tmp_path / "big.bin"
    with source.open("wb") as out:
        for _ in range(24):
            out.write(os.urandom(MIB))
    store = LocalBlobStore(tmp_path / "blobs")

    tracemalloc.start()
    try:
        ref = store.put_file(source)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert ref.size == 24 * MIB
    assert peak < 4 * MIB
    assert store.path(ref.sha256).stat().st_size == 24 * MIB


def test_a_relative_root_is_the_working_directory_s_but_the_reference_names_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = BlobStoreResource().get_store()
    ref = store.put_bytes(b"x")

    assert isinstance(store, LocalBlobStore)
    assert store.path(ref.sha256) == tmp_path.resolve() / "data/blobs" / ref.sha256[:2] / ref.sha256[2:4] / ref.sha256
    assert ref.uri == LocalBlobStore(tmp_path / "elsewhere").uri(ref.sha256) == f"blob:{ref.sha256}"


@pytest.mark.parametrize("bad", ["file:///data/blobs/ab/cd/x", "blob:", "blob:../../etc/passwd", "blob:" + "A" * 64,
                                 "s3://b/ab/" + "a" * 64, None])
def test_only_a_blob_reference_names_a_sha256(bad: object) -> None:
    with pytest.raises(InvalidSha256):
        ref_sha256(bad)  # type: ignore[arg-type]


def test_resource_serves_assets_with_default_s3_settings(tmp_path: Path) -> None:
    """The nested S3Resource default must survive Dagster's resource initialisation."""

    @dg.asset
    def stored(blobs: BlobStoreResource) -> str:
        return blobs.get_store().put_bytes(b"from an asset").uri

    result = dg.materialize(
        [stored], resources={"blobs": BlobStoreResource(root=str(tmp_path / "blobs"))}
    )

    sha = _sha(b"from an asset")
    assert result.output_for_node("stored") == LocalBlobStore(tmp_path / "blobs").uri(sha)
    assert LocalBlobStore(tmp_path / "blobs").get_bytes(sha) == b"from an asset"


# --- S3 only -----------------------------------------------------------------------------------


def test_s3_prefix_slashes_are_normalised(s3_server: S3Server) -> None:
    client = S3Resource(
        endpoint_url=s3_server.endpoint_url, region_name=s3_server.region_name
    ).get_client()
    sha = _sha(b"x")

    assert S3BlobStore(client, "b", "/team/blobs/").key(sha) == f"team/blobs/{sha[:2]}/{sha}"
    assert S3BlobStore(client, "b", "").key(sha) == f"{sha[:2]}/{sha}"


class _DenyAll(BaseHTTPRequestHandler):
    def _deny(self) -> None:
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_GET = do_PUT = _deny

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def denying_endpoint(s3_server: S3Server) -> Iterator[str]:
    """An S3 endpoint that refuses everything, as a bucket without read permission does.

    Depends on ``s3_server`` only for its dummy credentials, without which boto never sends.
    """
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DenyAll)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()


def test_s3_access_denied_is_an_error_not_a_missing_blob(denying_endpoint: str) -> None:
    store = BlobStoreResource(
        s3_bucket="locked",
        s3=S3Resource(endpoint_url=denying_endpoint, region_name="us-east-1", max_attempts=1),
    ).get_store()
    sha = _sha(b"x")

    with pytest.raises(ClientError, match="403"):
        store.exists(sha)
    with pytest.raises(ClientError, match="403"):
        store.get_bytes(sha)
