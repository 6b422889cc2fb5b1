"""Append-only, checksummed shard files: where a model call's answer is durable before the warehouse commits it.

A shard holds one process's records, one line each: ``<crc32 of the JSON, 8 hex digits> <JSON>\\n``. A line is
written with one ``write`` on an ``O_APPEND`` descriptor and is durable once ``sync`` covering it returns;
concurrent callers share fsyncs (group commit: whoever finds no fsync running starts one for everything
written so far, the others wait for it). The writing process holds an exclusive ``flock`` on its shard for as long
as it writes it, so another process can tell a live shard (locked) from one left by a dead process (the OS drops
the lock with the process). Reading stops at the first line that is cut short or fails its checksum: a crash can
only tear the last write, and nothing after a damaged line is trusted.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resources.blob_store import sync_directory

logger = logging.getLogger(__name__)

SUFFIX = ".jsonl"


def encode_record(record: dict[str, Any]) -> bytes:
    """One record as its shard line (the JSON is compact and key-sorted, so equal records give equal lines)."""
    body = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return b"%08x " % zlib.crc32(body) + body + b"\n"


@dataclass(frozen=True)
class ShardContents:
    records: list[dict[str, Any]]
    dropped_bytes: int  # the torn or damaged tail left out (0 for a cleanly written shard)


def read_shard(data: bytes) -> ShardContents:
    """The complete records of a shard, in order, up to the first torn or damaged line."""
    records: list[dict[str, Any]] = []
    at = 0
    while at < len(data):
        end = data.find(b"\n", at)
        if end < 0:
            break
        line = data[at:end]
        crc, _, body = line.partition(b" ")
        try:
            if len(crc) != 8 or int(crc, 16) != zlib.crc32(body):
                break
            records.append(json.loads(body))
        except ValueError:
            break
        at = end + 1
    return ShardContents(records, len(data) - at)


class ShardWriter:
    """Appends records to a new shard file under ``directory`` and makes them durable with shared fsyncs; holds the
    shard's lock until ``close``. Thread-safe."""

    def __init__(self, directory: Path, prefix: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{prefix}-{uuid.uuid4().hex}{SUFFIX}"
        unnamed = self.path.with_suffix(".new")  # locked before recovery can see it under its name
        self._fd = os.open(unnamed, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        unnamed.rename(self.path)
        sync_directory(directory)  # the shard's name is durable before any record in it counts as such
        self.size = 0
        self._synced = 0
        self._syncing = False
        self._closed = False
        self._cond = threading.Condition()

    def append(self, record: dict[str, Any]) -> int:
        """Write one record; returns the shard size that ``sync`` must reach for it to be durable."""
        line = encode_record(record)
        with self._cond:
            os.write(self._fd, line)
            self.size += len(line)
            return self.size

    def sync(self, upto: int) -> None:
        """Return once everything up to byte ``upto`` is on disk, starting one fsync for all writers if none runs;
        at once for a shard already closed (removed because the warehouse committed all of it, or kept whole)."""
        with self._cond:
            while self._synced < upto and not self._closed:
                if self._syncing:
                    self._cond.wait()
                    continue
                self._syncing, target = True, self.size
                self._cond.release()
                try:
                    os.fdatasync(self._fd)
                finally:
                    self._cond.acquire()
                    self._syncing = False
                    self._cond.notify_all()
                self._synced = max(self._synced, target)

    def close(self, *, remove: bool) -> None:
        """Give up the shard, once a running fsync is done; ``remove`` once every record in it is committed."""
        with self._cond:
            while self._syncing:
                self._cond.wait()
            if not remove:
                os.fdatasync(self._fd)
            self._closed = True
            self._cond.notify_all()
        if remove:
            self.path.unlink(missing_ok=True)
        os.close(self._fd)


def recover_shards(directory: Path, commit: Callable[[list[dict[str, Any]]], None]) -> tuple[int, int]:
    """Hand the complete records of every shard under ``directory`` whose writer is gone (its lock is free) to
    ``commit``, then remove the shard; a shard another process writes or recovers is left alone. Returns (shards,
    records) recovered; a torn tail is logged and dropped."""
    shards = records = 0
    for path in sorted(directory.glob(f"*{SUFFIX}")) if directory.is_dir() else ():
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:  # recovered by another process meanwhile
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # its writer is alive, or another process is recovering it
            os.close(fd)
            continue
        try:
            with os.fdopen(os.dup(fd), "rb") as file:
                contents = read_shard(file.read())
            if contents.dropped_bytes:
                logger.warning("model call log %s: %d byte(s) of a torn or damaged last record dropped", path.name,
                               contents.dropped_bytes)
            commit(contents.records)
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)
        shards, records = shards + 1, records + len(contents.records)
    return shards, records
