"""Content-addressed blob store: bytes are named by their sha256, so storing is idempotent.

A local directory by default; S3 (through dagster-aws's ``S3Resource``) when a bucket is
configured. Both backends validate every sha256 before building a path or key, so a
caller-supplied name can never escape the store.

What the warehouse records of a blob is its *reference*, ``blob:<sha256>``: relative to the store, whichever
backend and wherever its root, so a warehouse stays valid when the blob folder moves (or the blobs move to a
bucket). Where a reference lives is the store's business: ``root/ab/cd/<sha256>`` in a local folder,
``<prefix>/ab/<sha256>`` in a bucket; readers go through the store (``ref_sha256`` and ``open``). The warehouse
views that show people a file (``local_path`` in ``warehouse/views/040_critique_canvas.sql``) repeat the local
layout to turn a reference into a path under the configured folder.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable, Optional, cast

import dagster as dg
from botocore.exceptions import ClientError
from dagster_aws.s3 import S3Resource
from pydantic import Field

from resources.config_paths import ConfigPath
from warehouse.ids import sha256_stream

CHUNK_SIZE = 1 << 20
"""Bytes read per step when hashing or copying a file; bounds memory whatever the file size."""

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
REF_PREFIX = "blob:"
_S3_MISSING_CODES = frozenset({"404", "NoSuchKey", "NotFound"})


class InvalidSha256(ValueError):
    """A blob name that is not 64 lowercase hex characters (and so could not have come from us)."""

    def __init__(self, sha256: object) -> None:
        super().__init__(sha256)
        self.sha256 = sha256

    def __str__(self) -> str:
        return f"not a sha256 (64 lowercase hex characters): {self.sha256!r}"


class BlobNotFound(LookupError):
    """No blob with this sha256 is in the store."""

    def __init__(self, sha256: str) -> None:
        super().__init__(sha256)
        self.sha256 = sha256

    def __str__(self) -> str:
        return f"blob not found: {self.sha256}"


class BlobSourceChanged(RuntimeError):
    """The file given to ``put_file`` changed while it was being stored; nothing was kept."""

    def __init__(self, path: str, sha256: str) -> None:
        super().__init__(path, sha256)
        self.path = path
        self.sha256 = sha256

    def __str__(self) -> str:
        return f"{self.path} changed while being stored (hashed as {self.sha256}); nothing stored"


@dataclass(frozen=True)
class BlobRef:
    """Where a stored blob lives and what it is."""

    sha256: str
    size: int
    uri: str  # the store-relative reference, ``blob:<sha256>``


def validate_sha256(sha256: str) -> str:
    """Return ``sha256`` unchanged, or raise ``InvalidSha256``; guards every path and key."""
    if not isinstance(sha256, str) or not _SHA256_HEX.fullmatch(sha256):
        raise InvalidSha256(sha256)
    return sha256


def blob_ref(sha256: str) -> str:
    """The reference the warehouse records for the blob with this sha256 (``blob:<sha256>``)."""
    return REF_PREFIX + validate_sha256(sha256)


def ref_sha256(ref: str) -> str:
    """The sha256 a ``blob:`` reference names; ``InvalidSha256`` for anything else."""
    if not isinstance(ref, str) or not ref.startswith(REF_PREFIX):
        raise InvalidSha256(ref)
    return validate_sha256(ref[len(REF_PREFIX):])


def _fingerprint(stream: BinaryIO) -> tuple[int, int]:
    """Size and mtime of an open file: cheap evidence of whether someone wrote to it."""
    stat = os.fstat(stream.fileno())
    return stat.st_size, stat.st_mtime_ns


class BlobStore(ABC):
    """Stores bytes under their sha256; putting the same content twice writes it once."""

    @abstractmethod
    def put_bytes(self, data: bytes) -> BlobRef:
        """Store ``data`` unless a blob with its sha256 already exists."""

    @abstractmethod
    def put_file(self, path: Path) -> BlobRef:
        """Store the file at ``path`` without ever holding it whole in memory."""

    @abstractmethod
    def exists(self, sha256: str) -> bool:
        """Whether a blob with this sha256 is stored."""

    @abstractmethod
    def open(self, sha256: str) -> BinaryIO:
        """A streaming reader of the blob; raises ``BlobNotFound`` if it is absent."""

    def uri(self, sha256: str) -> str:
        """The store-relative reference of the blob with this sha256 (``blob_ref``), the same for every backend."""
        return blob_ref(sha256)

    def get_bytes(self, sha256: str) -> bytes:
        """The whole blob in memory; use ``open`` to stream large ones."""
        with self.open(sha256) as stream:
            return stream.read()

    def _ref(self, sha256: str, size: int) -> BlobRef:
        return BlobRef(sha256=sha256, size=size, uri=self.uri(sha256))


class LocalBlobStore(BlobStore):
    """Blobs as files ``root/ab/cd/<sha256>``, published by atomic rename.

    Every write goes to a temp file in the blob's own directory, is fsynced, then
    ``os.replace``d into place, so readers never see a partial blob and several processes
    writing the same blob at once all end with the same complete file.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()

    def path(self, sha256: str) -> Path:
        """File that holds (or would hold) the blob."""
        validate_sha256(sha256)
        return self.root / sha256[:2] / sha256[2:4] / sha256

    def exists(self, sha256: str) -> bool:
        return self.path(sha256).is_file()

    def open(self, sha256: str) -> BinaryIO:
        try:
            return self.path(sha256).open("rb")
        except FileNotFoundError as exc:
            raise BlobNotFound(sha256) from exc

    def put_bytes(self, data: bytes) -> BlobRef:
        sha256 = hashlib.sha256(data).hexdigest()
        if not self.exists(sha256):
            self._write_atomically(self.path(sha256), lambda out: out.write(data))
        return self._ref(sha256, len(data))

    def put_file(self, path: Path) -> BlobRef:
        with Path(path).open("rb") as source:
            sha256, size = sha256_stream(source)
            if not self.exists(sha256):
                source.seek(0)
                self._write_atomically(
                    self.path(sha256), lambda out: _copy_verified(source, out, sha256, str(path))
                )
        return self._ref(sha256, size)

    @staticmethod
    def _write_atomically(target: Path, fill: Callable[[BinaryIO], object]) -> None:
        # fsync before rename: after a crash a blob is either absent or complete, never a
        # file whose name claims a hash its (empty) content does not have.
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                fill(out)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temp_name, 0o644)
            os.replace(temp_name, target)
        except BaseException:
            Path(temp_name).unlink(missing_ok=True)
            raise


def _copy_verified(source: BinaryIO, out: BinaryIO, sha256: str, name: str) -> None:
    """Copy ``source`` to ``out`` and check it still hashes to ``sha256``; the name must not lie."""
    digest = hashlib.sha256()
    while chunk := source.read(CHUNK_SIZE):
        digest.update(chunk)
        out.write(chunk)
    if digest.hexdigest() != sha256:
        raise BlobSourceChanged(name, sha256)


class S3BlobStore(BlobStore):
    """Blobs as objects ``<prefix>/ab/<sha256>`` in one bucket; uploads only what is absent."""

    def __init__(self, client: Any, bucket: str, prefix: str) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/")

    def key(self, sha256: str) -> str:
        """Object key that holds (or would hold) the blob."""
        validate_sha256(sha256)
        name = f"{sha256[:2]}/{sha256}"
        return f"{self.prefix}/{name}" if self.prefix else name

    def exists(self, sha256: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self.key(sha256))
        except ClientError as exc:
            if _error_code(exc) in _S3_MISSING_CODES:
                return False
            raise
        return True

    def open(self, sha256: str) -> BinaryIO:
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self.key(sha256))
        except ClientError as exc:
            if _error_code(exc) in _S3_MISSING_CODES:
                raise BlobNotFound(sha256) from exc
            raise
        return cast(BinaryIO, response["Body"])

    def put_bytes(self, data: bytes) -> BlobRef:
        sha256 = hashlib.sha256(data).hexdigest()
        if not self.exists(sha256):
            self.client.put_object(Bucket=self.bucket, Key=self.key(sha256), Body=data)
        return self._ref(sha256, len(data))

    def put_file(self, path: Path) -> BlobRef:
        with Path(path).open("rb") as source:
            before = _fingerprint(source)
            sha256, size = sha256_stream(source)
            if not self.exists(sha256):
                source.seek(0)
                key = self.key(sha256)
                # s3transfer closes the file it is given; hand it a view so ``source`` stays open.
                with open(source.fileno(), "rb", closefd=False) as upload_view:
                    self.client.upload_fileobj(upload_view, self.bucket, key)
                # s3transfer may re-read parts on retry, so the upload cannot be hashed as it
                # streams; a size/mtime change since hashing means the object may not match its key.
                if _fingerprint(source) != before:
                    self.client.delete_object(Bucket=self.bucket, Key=key)
                    raise BlobSourceChanged(str(path), sha256)
        return self._ref(sha256, size)


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class BlobStoreResource(dg.ConfigurableResource):
    """Dagster handle on the blob store: S3 when ``s3_bucket`` is set, else the ``root`` directory.

    Connection settings (endpoint_url, region_name, ...) belong to the nested ``s3`` resource;
    credentials come from the environment / boto credential chain and are never stored here.
    """

    root: ConfigPath = Field(
        default="data/blobs", description="Local blob directory, used when s3_bucket is unset."
    )
    s3_bucket: Optional[str] = Field(
        default=None, description="Bucket to store blobs in; unset means the local directory."
    )
    s3_prefix: str = Field(
        default="aesforge/blobs", description="Key prefix of the blobs in s3_bucket."
    )
    s3: S3Resource

    def __init__(self, **config: Any) -> None:
        # Dagster drops class-level defaults of nested resources, so the default lives here.
        config.setdefault("s3", S3Resource())
        super().__init__(**config)

    def get_store(self) -> BlobStore:
        if self.s3_bucket:
            return S3BlobStore(self.s3.get_client(), self.s3_bucket, self.s3_prefix)
        return LocalBlobStore(Path(self.root))


# --- keyed objects: files named by the writer (result shards), beside the blobs -------------------------------

OBJECTS_NAMESPACE = "objects"
"""Where keyed objects live in the store: ``root/objects/<key>`` in a local folder, ``<prefix>/objects/<key>`` in
a bucket. Blob folders and keys are two hex characters, so the namespace never meets a blob."""

_OBJECT_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.=-]*(/[A-Za-z0-9_][A-Za-z0-9_.=-]*)*")


class InvalidObjectKey(ValueError):
    """An object key that could climb out of the namespace or does not name one object."""

    def __init__(self, key: object) -> None:
        super().__init__(key)
        self.key = key

    def __str__(self) -> str:
        return (f"not an object key (segments of letters, digits, '_', '.', '=', '-', separated by '/', none starting"
                f" with '.' or '-'): {self.key!r}")


def validate_object_key(key: str) -> str:
    """Return ``key`` unchanged, or raise ``InvalidObjectKey``; guards every keyed path and object name."""
    if not isinstance(key, str) or not _OBJECT_KEY.fullmatch(key):
        raise InvalidObjectKey(key)
    return key


def sync_directory(directory: Path) -> None:
    """fsync a folder, so that the names created or replaced in it survive a crash (a file's own fsync does not
    cover its name)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class KeyedObjects(ABC):
    """Whole objects under keys the writer chooses (unlike blobs, whose name is their hash): a ``put`` replaces an
    object atomically, so a reader sees the old bytes or the new ones, never part of them."""

    @abstractmethod
    def put_object(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``, durably, replacing what was there."""

    @abstractmethod
    def get_object(self, key: str) -> bytes:
        """The object's bytes; ``KeyError`` when there is none."""

    @abstractmethod
    def list_objects(self, prefix: str) -> list[str]:
        """The keys under the folder ``prefix`` (every depth), sorted."""

    @abstractmethod
    def delete_object(self, key: str) -> None:
        """Remove the object; nothing happens when there is none."""


class LocalObjects(KeyedObjects):
    """Keyed objects as files ``<blob root>/objects/<key>``, published as blobs are (temp file, fsync, rename)."""

    def __init__(self, store: LocalBlobStore) -> None:
        self.root = store.root / OBJECTS_NAMESPACE

    def path(self, key: str) -> Path:
        return self.root / validate_object_key(key)

    def put_object(self, key: str, data: bytes) -> None:
        target = self.path(key)
        LocalBlobStore._write_atomically(target, lambda out: out.write(data))
        sync_directory(target.parent)  # the new name is durable before what the caller writes next

    def get_object(self, key: str) -> bytes:
        try:
            return self.path(key).read_bytes()
        except FileNotFoundError as exc:
            raise KeyError(key) from exc

    def list_objects(self, prefix: str) -> list[str]:
        folder = self.path(prefix)
        if not folder.is_dir():
            return []
        return sorted(p.relative_to(self.root).as_posix() for p in folder.rglob("*")
                      if p.is_file() and not p.name.startswith(".tmp-"))

    def delete_object(self, key: str) -> None:
        self.path(key).unlink(missing_ok=True)


class S3Objects(KeyedObjects):
    """Keyed objects as ``<prefix>/objects/<key>`` in the store's bucket (an S3 PUT is atomic per object)."""

    def __init__(self, store: S3BlobStore) -> None:
        self.client = store.client
        self.bucket = store.bucket
        self.prefix = f"{store.prefix}/{OBJECTS_NAMESPACE}" if store.prefix else OBJECTS_NAMESPACE

    def object_name(self, key: str) -> str:
        return f"{self.prefix}/{validate_object_key(key)}"

    def put_object(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self.object_name(key), Body=data)

    def get_object(self, key: str) -> bytes:
        try:
            return cast(bytes, self.client.get_object(Bucket=self.bucket, Key=self.object_name(key))["Body"].read())
        except self.client.exceptions.NoSuchKey as exc:
            raise KeyError(key) from exc

    def list_objects(self, prefix: str) -> list[str]:
        start = self.object_name(prefix) + "/"
        keys = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=start):
            keys.extend(item["Key"][len(self.prefix) + 1:] for item in page.get("Contents", ()))
        return sorted(keys)

    def delete_object(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self.object_name(key))


def keyed_objects(store: BlobStore) -> KeyedObjects:
    """The keyed objects beside ``store``'s blobs (same folder or bucket and prefix)."""
    if isinstance(store, LocalBlobStore):
        return LocalObjects(store)
    if isinstance(store, S3BlobStore):
        return S3Objects(store)
    raise TypeError(f"no keyed objects for a {type(store).__name__}")

