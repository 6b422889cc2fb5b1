"""The committer: ingests finished result shards into the warehouse, one transaction per shard, exactly once.

Workers write their rows as shards (``assets.core.result_shards``) and never open the warehouse; one committer per
asset brings them in. A shard's rows go in with DuckDB straight from its Arrow tables (no row-by-row inserts),
with the conflict rule its manifest gives each table, and its ledger row (``committed_shard``) goes in the same
transaction: a committer killed half-way leaves nothing of the shard, and a shard already in the ledger adds
nothing, however often it is offered and however many committers race for it (the warehouse's file lock
serialises them; the ledger is checked inside the transaction). A shard that cannot be committed (no manifest, a
file missing or not matching its checksum) is reported with the reason and left where it is.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import duckdb
import pyarrow as pa

from warehouse.db import Warehouse, registered
from warehouse.lineage import utcnow

logger = logging.getLogger(__name__)

_VERBS = {"ignore": "INSERT OR IGNORE", "replace": "INSERT OR REPLACE"}


class LoadedShard(Protocol):
    """A shard whose files match its manifest: its rows per table, each with its conflict rule."""

    shard_id: str
    asset: str
    activity_id: str | None
    manifest_sha256: str
    tables: tuple[tuple[str, pa.Table, str], ...]


class ShardSource(Protocol):
    """Where one asset's shards are (``assets.core.result_shards.ShardFolder``)."""

    def pending(self) -> list[str]:
        """Ids of every shard present, finished or not."""

    def load(self, shard_id: str) -> LoadedShard | str:
        """The shard's rows, or the reason it must not be committed."""

    def remove(self, shard_id: str) -> None:
        """Delete a shard the ledger holds."""


@dataclass
class CommitReport:
    committed: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)  # in the ledger before (another committer, or a rerun)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (shard id, why)
    rows_offered: int = 0
    rows_inserted: int = 0


def ingest_shard(con: duckdb.DuckDBPyConnection, shard: LoadedShard) -> int | None:
    """Insert the shard's rows and its ledger row through ``con`` (inside the caller's transaction); None, and
    nothing written, when the ledger has the shard already. Returns the rows that were new."""
    if con.execute("SELECT 1 FROM committed_shard WHERE shard_id = ?", [shard.shard_id]).fetchone():
        return None
    known = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    inserted = offered = 0
    for table, rows, conflict in shard.tables:
        if table not in known or conflict not in _VERBS:
            raise ValueError(f"shard {shard.shard_id}: no table {table!r} or conflict rule {conflict!r} here")
        columns = ", ".join(f'"{name}"' for name in rows.column_names)
        with registered(con, "_aesforge_shard_rows", rows):
            result = con.execute(f"{_VERBS[conflict]} INTO {table} ({columns}) SELECT {columns} FROM _aesforge_shard_rows")
            inserted += result.fetchone()[0]
        offered += rows.num_rows
    con.execute(
        "INSERT INTO committed_shard VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [shard.shard_id, shard.asset, shard.activity_id, shard.manifest_sha256, offered, inserted,
         json.dumps({table: rows.num_rows for table, rows, _ in shard.tables}, sort_keys=True), utcnow()],
    )
    return inserted


def committed_among(wh: Warehouse, shard_ids: Sequence[str]) -> set[str]:
    """Which of these shards the ledger holds."""
    if not shard_ids:
        return set()
    with wh.transaction() as con:
        rows = con.execute("SELECT shard_id FROM committed_shard WHERE list_contains(?, shard_id)",
                           [list(shard_ids)]).fetchall()
    return {row[0] for row in rows}


def commit_shards(wh: Warehouse, source: ShardSource) -> CommitReport:
    """Ingest every finished shard of ``source`` not yet in the ledger, one transaction each, removing each shard
    once the ledger holds it; refused shards are logged and reported, and stay for a later pass."""
    report = CommitReport()
    pending = source.pending()
    done = committed_among(wh, pending)
    for shard_id in pending:
        if shard_id in done:
            report.already.append(shard_id)
            source.remove(shard_id)
            continue
        loaded = source.load(shard_id)
        if isinstance(loaded, str):
            logger.warning("result shard %s not committed: %s", shard_id, loaded)
            report.refused.append((shard_id, loaded))
            continue
        with wh.transaction() as con:
            inserted = ingest_shard(con, loaded)
        if inserted is None:
            report.already.append(shard_id)
        else:
            report.committed.append(shard_id)
            report.rows_offered += sum(rows.num_rows for _, rows, _ in loaded.tables)
            report.rows_inserted += inserted
        source.remove(shard_id)
    return report
