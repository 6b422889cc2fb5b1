"""Result shards: how a per-item worker hands its rows to the warehouse without opening it.

A worker writes one shard per unit of work: a Parquet file per target table, holding the rows exactly as they
would be inserted (the step's own tables and its lineage rows: ``activity``, ``entity``, ``was_generated_by``,
``used``, ``was_derived_from``, ``rejection``, ...), then, last, a small manifest naming each file with its row
count and sha256. The manifest is what makes a shard finished: every object is put atomically (a local file is
written under a temporary name, fsynced and renamed; an S3 PUT is atomic), and a shard without one, or whose files
do not match it, is never committed. Shards are keyed objects beside the blobs (``resources.blob_store``), so they
work in a local folder and in a bucket alike:

    objects/result_shards/<asset>/<shard id>/<table>.parquet
    objects/result_shards/<asset>/<shard id>/manifest.json

The shard id is derived from the asset, a version and the sorted keys of the inputs the shard covers, so a rerun
of the same inputs writes the same shard (and the committer's ledger lets it add nothing). ``ShardFolder`` is the
committer's view of one asset's shards (``warehouse.shard_commit.ShardSource``).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from resources.blob_store import KeyedObjects
from warehouse.ids import digest_of

SHARDS_FOLDER = "result_shards"
MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 1
REPLACING_TABLES = frozenset({"rejection"})
"""Tables whose rows replace the ones already there (the latest decision per entity and stage wins, as in
``ActivityLog.rejected``); every other table keeps a row it already has (insert-or-ignore)."""

_TABLE_NAME = re.compile(r"[a-z][a-z0-9_]*")
_CONFLICTS = ("ignore", "replace")

Rows = pa.Table | Sequence[Mapping[str, Any]]


def shard_id_for(asset: str, input_keys: Iterable[str], version: str = "") -> str:
    """The id of the shard that covers these inputs of ``asset`` (``version``: what else decides its rows, such as
    the code version): the same inputs give the same id, whatever their order."""
    return "shard-" + digest_of([asset, version, sorted(set(input_keys))])


def asset_folder(asset: str) -> str:
    """The shards folder of an asset (``a/b`` keys become ``a__b``: one folder level per asset)."""
    return f"{SHARDS_FOLDER}/{asset.replace('/', '__')}"


@dataclass(frozen=True)
class TableFile:
    table: str
    key: str
    rows: int
    sha256: str
    conflict: str  # ignore | replace


@dataclass(frozen=True)
class Manifest:
    shard_id: str
    asset: str
    activity_id: str | None
    input_keys: int
    tables: tuple[TableFile, ...]

    def to_bytes(self) -> bytes:
        body = {"format": MANIFEST_FORMAT, "shard_id": self.shard_id, "asset": self.asset,
                "activity_id": self.activity_id, "input_keys": self.input_keys,
                "tables": [vars(t) for t in self.tables]}
        return json.dumps(body, sort_keys=True, indent=1).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> Manifest:
        body = json.loads(data)
        if body.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"manifest format {body.get('format')!r}, expected {MANIFEST_FORMAT}")
        tables = tuple(TableFile(**t) for t in body["tables"])
        for t in tables:
            if not _TABLE_NAME.fullmatch(t.table) or t.conflict not in _CONFLICTS:
                raise ValueError(f"table entry {vars(t)} names no table or conflict rule this committer knows")
        return cls(body["shard_id"], body["asset"], body["activity_id"], int(body["input_keys"]), tables)


def parquet_bytes(rows: Rows) -> tuple[bytes, int]:
    """The rows as one Parquet file (zstd), and how many there are."""
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(list(rows))
    out = io.BytesIO()
    pq.write_table(table, out, compression="zstd")
    return out.getvalue(), table.num_rows


def write_shard(objects: KeyedObjects, *, asset: str, activity_id: str | None, input_keys: Sequence[str],
                tables: Mapping[str, Rows], version: str = "") -> Manifest:
    """Write one finished shard: the tables (empty ones left out), then the manifest. A shard of the same inputs
    written before is unfinished (its manifest removed first) until the new manifest takes its place."""
    shard_id = shard_id_for(asset, input_keys, version)
    folder = f"{asset_folder(asset)}/{shard_id}"
    objects.delete_object(f"{folder}/{MANIFEST_NAME}")
    files = []
    for table in sorted(tables):
        if not _TABLE_NAME.fullmatch(table):
            raise ValueError(f"not a table name: {table!r}")
        data, n_rows = parquet_bytes(tables[table])
        if n_rows == 0:
            continue
        key = f"{folder}/{table}.parquet"
        objects.put_object(key, data)
        files.append(TableFile(table, key, n_rows, hashlib.sha256(data).hexdigest(),
                               "replace" if table in REPLACING_TABLES else "ignore"))
    manifest = Manifest(shard_id, asset, activity_id, len(set(input_keys)), tuple(files))
    objects.put_object(f"{folder}/{MANIFEST_NAME}", manifest.to_bytes())
    return manifest


@dataclass(frozen=True)
class LoadedShard:
    """A finished shard whose files all match its manifest, with their rows (``warehouse.shard_commit.LoadedShard``)."""

    shard_id: str
    asset: str
    activity_id: str | None
    manifest_sha256: str
    tables: tuple[tuple[str, pa.Table, str], ...]  # (table, rows, conflict)


class ShardFolder:
    """One asset's shards in a keyed-object store, as the committer reads them."""

    def __init__(self, objects: KeyedObjects, asset: str) -> None:
        self.objects = objects
        self.asset = asset
        self.folder = asset_folder(asset)

    def pending(self) -> list[str]:
        """Every shard with an object in the folder, finished or not, in id order."""
        start = len(self.folder) + 1
        return sorted({key[start:].split("/", 1)[0] for key in self.objects.list_objects(self.folder)})

    def load(self, shard_id: str) -> LoadedShard | str:
        """The shard's rows, checked against its manifest; or, for a shard that must not be committed, why."""
        folder = f"{self.folder}/{shard_id}"
        try:
            data = self.objects.get_object(f"{folder}/{MANIFEST_NAME}")
        except KeyError:
            return "unfinished: no manifest (its worker is still writing it, or stopped before finishing it)"
        try:
            manifest = Manifest.from_bytes(data)
        except (ValueError, KeyError, TypeError) as exc:
            return f"manifest unreadable: {exc}"
        if manifest.shard_id != shard_id or manifest.asset != self.asset:
            return f"manifest names shard {manifest.shard_id} of {manifest.asset}, not {shard_id} of {self.asset}"
        tables = []
        for file in manifest.tables:
            if file.key != f"{folder}/{file.table}.parquet":
                return f"manifest lists {file.key} for table {file.table}, outside the shard's own files"
            try:
                body = self.objects.get_object(file.key)
            except KeyError:
                return f"{file.key} is listed in the manifest but missing"
            digest = hashlib.sha256(body).hexdigest()
            if digest != file.sha256:
                return f"{file.key}: sha256 {digest} does not match the manifest's {file.sha256}"
            rows = pq.read_table(io.BytesIO(body))
            if rows.num_rows != file.rows:
                return f"{file.key}: {rows.num_rows} rows, the manifest says {file.rows}"
            tables.append((file.table, rows, file.conflict))
        return LoadedShard(shard_id, manifest.asset, manifest.activity_id, hashlib.sha256(data).hexdigest(),
                           tuple(tables))

    def remove(self, shard_id: str) -> None:
        """Delete a committed shard, its manifest last (a removal cut short leaves a shard the ledger knows)."""
        folder = f"{self.folder}/{shard_id}"
        keys = self.objects.list_objects(folder)
        manifest = f"{folder}/{MANIFEST_NAME}"
        for key in sorted(keys, key=lambda k: k == manifest):
            self.objects.delete_object(key)
