"""The DuckDB warehouse: one file, versioned migrations, and serialized short-lived connections.

DuckDB lets only one process hold a database file open for writing. Dagster's default
multiprocess executor runs each step in its own process, so every access here goes through an
inter-process file lock (``<db>.lock``) and a connection that lives only for one transaction.
Steps do their slow work (fetching, decoding, hashing, embedding) outside the lock and take it
only to read their inputs and to write a batch of results, so steps interleave at batch
granularity instead of failing on DuckDB's own lock.
"""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import duckdb
import pandas as pd
from filelock import FileLock

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")

Conflict = Literal["ignore", "replace"]


class Warehouse:
    """Handle on one DuckDB warehouse file; cheap to create, safe to share between processes."""

    def __init__(self, path: str | Path, lock_timeout_s: float = 900.0) -> None:
        self.path = Path(path).expanduser().resolve()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.path) + ".lock", timeout=lock_timeout_s)
        self._migrated = False

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Hold the warehouse for one all-or-nothing unit of work."""
        with self._lock:
            con = duckdb.connect(str(self.path))
            try:
                if not self._migrated:
                    apply_migrations(con)
                    self._migrated = True
                con.execute("BEGIN TRANSACTION")
                try:
                    yield con
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT")
            finally:
                con.close()

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> pd.DataFrame:
        with self.transaction() as con:
            return con.execute(sql, params or []).df()

    def pages(
        self, select: str, params: Sequence[Any], *, key: str, block: int, numpy: bool = False
    ) -> Iterator[Any]:
        """Run ``select`` (a SELECT … WHERE … without ORDER BY or LIMIT, whose first column is the
        string ``key``) in pages ordered by ``key``.

        Keyset pagination: each page is its own short transaction (other steps can write in between)
        and costs the same however deep into the table it is, so million-row tables stream in bounded
        memory. Pages are lists of row tuples, or with ``numpy=True`` DuckDB's dict of column arrays
        (fast for numeric lists; not for BLOBs, whose trailing zero bytes numpy would drop).
        """
        last = ""
        while True:
            with self.transaction() as con:
                result = con.execute(f"{select} AND {key} > ? ORDER BY {key} LIMIT ?", [*params, last, block])
                page = result.fetchnumpy() if numpy else result.fetchall()
            keys = next(iter(page.values())) if numpy else [row[0] for row in page]
            if len(keys) == 0:
                return
            yield page
            last = keys[-1]

    def scalar(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> Any:
        with self.transaction() as con:
            row = con.execute(sql, params or []).fetchone()
            return None if row is None else row[0]


def migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) for every migration shipped with the package, in order."""
    found = []
    folder = importlib.resources.files("warehouse") / "migrations"
    for entry in folder.iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(versions) + 1)):
        raise RuntimeError(f"migration versions must run 1..n without gaps, found {versions}")
    return found


def apply_migrations(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Bring the schema up to date; each migration runs in its own transaction, exactly once."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migration ("
        " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
    )
    done = {row[0] for row in con.execute("SELECT version FROM schema_migration").fetchall()}
    applied = []
    for version, name, sql in migrations():
        if version in done:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(sql)
            con.execute("INSERT INTO schema_migration VALUES (?, ?, now())", [version, name])
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
        applied.append(version)
    _create_views(con)
    return applied


def _create_views(con: duckdb.DuckDBPyConnection) -> None:
    folder = importlib.resources.files("warehouse") / "views"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql"):
            con.execute(entry.read_text(encoding="utf-8"))


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, name: str, frame: pd.DataFrame) -> Iterator[str]:
    """Expose ``frame`` to SQL as view ``name`` for the duration of the block.

    Joining against a registered frame (``… IN (SELECT id FROM name)``) is a hash join, so looking
    up a batch of ids costs the same however large the table is.
    """
    con.register(name, frame)
    try:
        yield name
    finally:
        con.unregister(name)


def insert_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    rows: pd.DataFrame | Iterable[Mapping[str, Any]],
    conflict: Conflict = "ignore",
) -> int:
    """Insert many rows in one statement; on a primary-key conflict keep the old row or replace it.

    Going through a registered DataFrame keeps large batches fast (no per-row round trips).
    Returns the number of rows offered.
    """
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if frame.empty:
        return 0
    verb = "INSERT OR IGNORE" if conflict == "ignore" else "INSERT OR REPLACE"
    columns = ", ".join(f'"{c}"' for c in frame.columns)
    with registered(con, "_aesforge_batch", frame):
        con.execute(f"{verb} INTO {table} ({columns}) SELECT {columns} FROM _aesforge_batch")
    return len(frame)
