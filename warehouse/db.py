"""The DuckDB warehouse: one file, versioned migrations, and serialized short-lived connections.

DuckDB lets only one process hold a database file open for writing. Dagster's default
multiprocess executor runs each step in its own process, so every access here goes through an
inter-process file lock (``<db>.lock``) and a connection that lives only for one transaction.
Steps do their slow work (fetching, decoding, hashing, embedding) outside the lock and take it
only to read their inputs and to write a batch of results, so steps interleave at batch
granularity instead of failing on DuckDB's own lock.

Every connection first checks that the file is a sound DuckDB file (``soundness_problem``): a damaged one is
refused with ``WarehouseDamaged`` and left untouched, because DuckDB would otherwise answer from what is left
of it or write over it. Before migrations change an existing warehouse, it is copied to
``<db>.pre-migration-<version>.duckdb``. A warehouse that cannot be used as a whole (damaged, locked, disk
full) surfaces as one line (``storage_failure``) instead of a traceback.

A loop that writes many small transactions from worker threads (model calls, the item loop's batches) holds
the connection open between them (``lingering``): opening one costs some 30 ms, a transaction on an open one
under 1 ms. While it lingers the file lock stays taken, so it is given up as soon as another process waits for
it (waiters touch ``<db>.lock.waiting``; checked at every commit and every 20 ms while idle), after ``idle_s``
without a transaction (for programs that do not say they wait, such as the duckdb shell), and at the block's end.

Local files are recorded by their names relative to the warehouse's ``root`` (``warehouse.ids.file_name``; the
config file's folder when the warehouse comes from a config), and blobs by store-relative references, so nothing
in the file says where the project or the blobs sit and a moved or copied project reads the same rows.
"""

from __future__ import annotations

import datetime
import errno
import glob
import importlib.resources
import os
import re
import shutil
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional

import duckdb
import numpy as np
from filelock import FileLock, Timeout

from warehouse.ids import file_name, file_path

if TYPE_CHECKING:  # pandas is imported where a frame is made: commands that only read (provenance) go without it
    import pandas as pd

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")

# DuckDB's single-file layout (src/storage/single_file_block_manager.cpp): a 4096-byte main header (checksum,
# "DUCK" at offset 8), two 4096-byte database headers (checksum, iteration, meta block, free list, block
# count, block allocation size, ...), then block_count blocks of the allocation size. Each header starts with
# a checksum of its other 4088 bytes.
_HEADER_SIZE = 4096
_MAGIC = b"DUCK"
_DEFAULT_BLOCK_ALLOC_SIZE = 262144
_CHECKSUM_MULTIPLIER = np.uint64(0xBF58476D1CE4E5B9)
_HEADER_NAMES = ("main header", "first database header", "second database header")
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
# DuckDB's words for a file it cannot read as a database (a lock held by another program is not among them).
_DUCKDB_WRITTEN_FILE = re.compile(r'Could not write file \\?"([^"\\]+)\\?"')
_DAMAGE_MARKERS = ("Corrupt database file", "Could not read enough bytes", "not a valid DuckDB database file")


class WarehouseUnavailable(RuntimeError):
    """The warehouse as a whole cannot be used: the step or run stops, and says so in one line."""


class WarehouseDamaged(WarehouseUnavailable):
    """The file is not a sound DuckDB file; it is left as it is for the user to restore or move aside."""


class WarehouseLocked(WarehouseUnavailable):
    """Another process holds the warehouse longer than this one may wait."""

Conflict = Literal["ignore", "replace", "error"]


class Warehouse:
    """Handle on one DuckDB warehouse file; cheap to create, safe to share between processes.

    ``root`` is the folder local files are named relative to (default: the warehouse file's folder).
    ``blob_root``, the folder of a local blob store, lets the views show a blob reference as the path of its file
    (DuckDB variable ``aesforge_blob_root``, read by the ``local_path`` macro); without it they show the reference.
    """

    def __init__(self, path: str | Path, lock_timeout_s: float = 900.0, root: str | Path | None = None,
                 blob_root: Optional[str | Path] = None) -> None:
        self.path = Path(path).expanduser().resolve()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.root = Path(os.path.abspath(root)) if root is not None else self.path.parent
        self.blob_root = None if blob_root is None else Path(os.path.abspath(blob_root))
        self.lock_timeout_s = lock_timeout_s
        self._waiting = Path(str(self.path) + ".lock.waiting")
        self._migrated = False
        self._checked = False
        self._start_runtime()

    # -- in-process state: rebuilt after a fork or unpickling, never shared with another process ------------------
    def _start_runtime(self) -> None:
        # Not thread-local: the thread that gives a lingering connection up may not be the one that opened it.
        # Threads of this process are kept apart by ``_mutex`` instead.
        self._lock = FileLock(str(self.path) + ".lock", timeout=self.lock_timeout_s, thread_local=False)
        self._mutex = threading.Lock()
        self._owner: int | None = None  # the thread inside a transaction of this handle
        self._open: duckdb.DuckDBPyConnection | None = None  # the lingering connection (holds the file lock)
        self._held_since_ns = 0
        self._last_used = 0.0
        self._lingering = 0
        self._closer: threading.Thread | None = None
        self._closer_stop = threading.Event()
        self._yield_until = 0.0
        _HANDLES.add(self)

    def __getstate__(self) -> dict[str, Any]:
        keep = ("path", "root", "blob_root", "lock_timeout_s", "_waiting", "_migrated", "_checked")
        return {k: self.__dict__[k] for k in keep}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._start_runtime()

    def name_of(self, path: str | os.PathLike[str]) -> str:
        """How the warehouse names a local file: relative to ``root`` (``warehouse.ids.file_name``)."""
        return file_name(path, self.root)

    def path_of(self, name: str) -> Path:
        """The file a name recorded here stands for, to open it."""
        return file_path(name, self.root)

    def check(self) -> None:
        """Raise ``WarehouseDamaged`` (one line: the file, the problem, how to restore) unless the file is sound
        or does not exist yet. Reads only: the file, its mtime included, stays as it is."""
        with self._locked():  # not while another process is half-way through writing it
            problem = soundness_problem(self.path)
        if problem is not None:
            raise WarehouseDamaged(
                f"warehouse {self.path} is damaged: {problem}; it was left untouched. {restore_hint(self.path)}"
            )

    def _connect(self) -> duckdb.DuckDBPyConnection:
        if not self._checked:  # once per handle: after its first open this handle's own commits keep the file sound,
            self.check()       # and the deep check (DuckDB's block lists) costs seconds on a large warehouse
            self._checked = True
        try:
            con = duckdb.connect(str(self.path))
        except duckdb.IOException as exc:
            if "Could not set lock" not in str(exc):
                raise
            holder = str(exc).partition("Conflicting lock is held in ")[2].partition(". See also")[0]
            raise WarehouseLocked(
                f"warehouse {self.path} is open in another program ({holder or 'unknown'}); close it and run again"
            ) from exc
        if self.blob_root is not None:
            con.execute("SET VARIABLE aesforge_blob_root = ?", [str(self.blob_root)])
        return con

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self._acquire_file_lock()
        try:
            yield
        finally:
            self._lock.release()

    def _acquire_file_lock(self) -> None:
        """Take the inter-process lock, saying so in ``<db>.lock.waiting`` while waiting, so a process that holds
        a lingering connection hands it over at its next commit."""
        if self._lock.is_locked:  # this handle holds it already (a nested transaction): count it once more
            self._lock.acquire()
            return
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                self._lock.acquire(timeout=0)
                return
            except Timeout:
                pass
            if time.monotonic() >= deadline:
                raise WarehouseLocked(f"warehouse locked by another process ({self._lock.lock_file}) for"
                                      f" {self.lock_timeout_s:g} s")
            try:
                self._waiting.touch()
            except OSError:  # a read-only folder: the holder still lets go when idle
                pass
            time.sleep(_POLL_S)

    def _handover_wanted(self) -> bool:
        try:
            return self._waiting.stat().st_mtime_ns > self._held_since_ns
        except OSError:
            return False

    @contextmanager
    def lingering(self, idle_s: float = 1.0) -> Iterator[None]:
        """Within the block, keep this handle's connection (and so the file lock) open between transactions of
        any of this process's threads, for as long as transactions follow each other within ``idle_s`` and no
        other process waits; given up at the block's end. For loops of many small transactions."""
        with self._mutex:
            self._lingering += 1
            if self._closer is None:
                self._closer_stop.clear()
                self._closer = threading.Thread(target=self._close_when_idle, args=(idle_s,), daemon=True,
                                                name=f"warehouse-linger-{self.path.name}")
                self._closer.start()
        try:
            yield
        finally:
            with self._mutex:
                self._lingering -= 1
                closer = self._closer if self._lingering == 0 else None
                if closer is not None:
                    self._closer = None
                    self._closer_stop.set()
                    self._let_go()
            if closer is not None:
                closer.join()

    def _close_when_idle(self, idle_s: float) -> None:
        while not self._closer_stop.wait(min(idle_s, _HANDOVER_CHECK_S)):
            with self._mutex:
                if self._open is not None and (time.monotonic() - self._last_used >= idle_s or self._handover_wanted()):
                    self._let_go()

    def _let_go(self) -> None:
        """Close the lingering connection and release the file lock (under ``_mutex``)."""
        con, self._open = self._open, None
        if con is not None:
            try:
                con.close()
            finally:
                self._lock.release()

    def _migrate(self, con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
        """Apply pending migrations, first copying a warehouse that already has a schema; returns the connection
        to go on with (a new one when the file was closed for the copy)."""
        done = applied_versions(con)
        pending = [v for v, _, _ in migrations() if v not in done]
        if pending and done:
            con.close()  # flushes DuckDB's WAL into the file, so the copy is complete
            copy_before_migration(self.path, pending[0])
            con = self._connect()
        apply_migrations(con)
        self._migrated = True
        return con

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Hold the warehouse for one all-or-nothing unit of work."""
        me = threading.get_ident()
        if self._owner == me:  # nested in this thread's own transaction: a connection of its own, as it always had
            with self._locked():
                con = self._connect()
                try:
                    yield from _committed(con)
                finally:
                    con.close()
            return
        with self._mutex:
            self._owner = me
            try:
                con = self._connection()
                try:
                    if not self._migrated:
                        con = self._open = self._migrate(con)
                    yield from _committed(con)
                except BaseException:
                    self._let_go()  # never keep a connection in an unknown state
                    raise
                if self._lingering and not self._handover_wanted():
                    self._last_used = time.monotonic()
                else:
                    if self._lingering:  # another process waits: let it in before taking the lock again
                        self._yield_until = time.monotonic() + 4 * _POLL_S
                    self._let_go()
            finally:
                self._owner = None

    def _connection(self) -> duckdb.DuckDBPyConnection:
        """The lingering connection, or a new one under the file lock (kept in ``_open`` until let go)."""
        if self._open is not None:
            return self._open
        pause = self._yield_until - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        self._acquire_file_lock()
        try:
            self._open = self._connect()
        except BaseException:
            self._lock.release()
            raise
        self._held_since_ns = time.time_ns()
        return self._open

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


_POLL_S = 0.005  # how often a process waiting for the file lock tries again
_HANDOVER_CHECK_S = 0.02  # how often an idle lingering connection looks for a waiting process
_HANDLES: "weakref.WeakSet[Warehouse]" = weakref.WeakSet()


def _committed(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """BEGIN, hand out the connection, COMMIT; ROLLBACK if the body raised."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _forget_connections_in_child() -> None:
    """A forked child starts with no connection and no lock of its parent's (both stay the parent's)."""
    for handle in list(_HANDLES):
        handle._start_runtime()


os.register_at_fork(after_in_child=_forget_connections_in_child)


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


def applied_versions(con: duckdb.DuckDBPyConnection) -> set[int]:
    """The migrations already in the warehouse (none for a new file)."""
    if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migration'").fetchone()[0]:
        return set()
    return {row[0] for row in con.execute("SELECT version FROM schema_migration").fetchall()}


def pre_migration_copy(path: Path, version: int) -> Path:
    return path.with_name(f"{path.name}.pre-migration-{version:04d}.duckdb")


def copy_before_migration(path: Path, version: int) -> Path:
    """Copy the warehouse to ``<db>.pre-migration-<version>.duckdb`` before migration ``version`` changes it.

    An existing copy is kept (it is the state before the first attempt); the copy is written under a temporary
    name and renamed, so a copy cut short (a full disk) is never taken for a complete one."""
    copy = pre_migration_copy(path, version)
    if not copy.exists():
        partial = copy.with_name(copy.name + ".partial")
        shutil.copyfile(path, partial)
        os.replace(partial, copy)
    return copy


def restore_hint(path: Path) -> str:
    copies = sorted(path.parent.glob(f"{glob.escape(path.name)}.pre-migration-*.duckdb"))
    restore = f"restore the copy taken before the last migration (cp {copies[-1]} {path})" if copies else "restore it from a backup"
    return f"To go on, {restore}, or move it aside (mv {path} {path}.damaged) and run again to rebuild it from the inputs."


def _checksum(block: bytes) -> int:
    """DuckDB's checksum of a header (``Checksum`` in src/common/checksum.cpp): 5381 xor-ed with every 8-byte
    little-endian word times a constant, modulo 2**64."""
    words = np.frombuffer(block, dtype="<u8")
    return int(np.bitwise_xor.reduce(words * _CHECKSUM_MULTIPLIER)) ^ 5381


def soundness_problem(path: Path) -> str | None:
    """Why ``path`` is not a sound DuckDB database file, or None (also when there is no file yet).

    Checks what can be checked without DuckDB and without writing: not empty, the magic bytes, the three
    header checksums, and a file at least as long as its active header's block count promises (a file cut
    short still opens in DuckDB and answers from what is left)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size == 0:
        return "the file is empty (0 bytes)"
    with path.open("rb") as handle:
        head = handle.read(3 * _HEADER_SIZE)
    if head[8:12] != _MAGIC:
        return f"it is not a DuckDB database file (no {_MAGIC.decode()} magic bytes at offset 8)"
    if len(head) < 3 * _HEADER_SIZE:
        return f"the file is truncated: {size} bytes, shorter than DuckDB's three {_HEADER_SIZE}-byte headers"
    for index, name in enumerate(_HEADER_NAMES):
        block = head[index * _HEADER_SIZE : (index + 1) * _HEADER_SIZE]
        if int.from_bytes(block[:8], "little") != _checksum(block[8:]):
            return f"the checksum of its {name} (bytes {index * _HEADER_SIZE}-{(index + 1) * _HEADER_SIZE - 1}) does not match"
    headers = [np.frombuffer(head[i * _HEADER_SIZE + 8 : i * _HEADER_SIZE + 48], dtype="<u8") for i in (1, 2)]
    _, _, _, block_count, alloc_size = (int(v) for v in max(headers, key=lambda h: int(h[0])))
    alloc_size = alloc_size or _DEFAULT_BLOCK_ALLOC_SIZE
    present, partial = divmod(size - 3 * _HEADER_SIZE, alloc_size)
    if partial:
        return f"the file is truncated: {size} bytes end inside a {alloc_size}-byte block (block {present})"
    if present < block_count:
        return _missing_blocks_problem(path, present, block_count)
    return None


def _missing_blocks_problem(path: Path, present: int, block_count: int) -> str | None:
    """The file holds fewer blocks than its header lists. DuckDB does that itself (it trims free blocks off the
    end after writing the header), so ask DuckDB, read-only, whether a block it uses or more blocks than are
    free are missing. Index blocks are not listed by DuckDB; a cut through those alone shows when read."""
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        return _unreadable(exc)
    try:
        free = con.execute("SELECT free_blocks FROM pragma_database_size()").fetchone()[0]
        used = {row[0] for row in con.execute("SELECT block_id FROM pragma_metadata_info()").fetchall()}
        for (table,) in con.execute("SELECT schema_name || '.' || table_name FROM duckdb_tables()").fetchall():
            used.update(row[0] for row in con.execute(
                "SELECT block_id FROM pragma_storage_info(?) WHERE block_id >= 0 UNION SELECT unnest(additional_block_ids)"
                " FROM pragma_storage_info(?)", [table, table]).fetchall() if row[0] is not None)
    except duckdb.Error as exc:
        return _unreadable(exc)
    finally:
        con.close()
    beyond = sorted(b for b in used if b >= present)
    if beyond or block_count - present > free:
        missing = f"block {beyond[0]} is in use" if beyond else f"only {free} of the missing blocks are free"
        return f"the file is truncated: it holds {present} of the {block_count} blocks its header lists, and {missing}"
    return None


def _unreadable(exc: duckdb.Error) -> str | None:
    """A damage message for DuckDB's read errors; None for others (another program holding it: not damage)."""
    text = str(exc).strip().splitlines()[0]
    return f"DuckDB cannot read it ({text})" if any(marker in text for marker in _DAMAGE_MARKERS) else None


def storage_failure(exc: BaseException) -> str | None:
    """One line for an error that concerns the warehouse or the disk as a whole (damaged, locked, disk full),
    looked for along the exception's causes; None for any other error, which is a bug to show in full."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, WarehouseUnavailable):
            return str(seen)
        if isinstance(seen, Timeout):
            return f"warehouse locked by another process ({seen.lock_file})"
        if isinstance(seen, OSError) and seen.errno in _DISK_FULL:
            return f"disk full writing {seen.filename}: {seen.strerror}" if seen.filename else f"disk full: {seen.strerror}"
        text = str(seen).strip().splitlines()[0] if str(seen).strip() else ""
        if isinstance(seen, duckdb.Error) and "No space left on device" in text:
            written = _DUCKDB_WRITTEN_FILE.search(text)
            return f"disk full writing {written.group(1)}: No space left on device" if written else f"disk full: {text}"
        if isinstance(seen, duckdb.Error) and any(marker in text for marker in _DAMAGE_MARKERS):
            return f"warehouse damaged: {text}"
        if "database or disk is full" in text:  # SQLite (the Dagster instance's run and event storage)
            return f"disk full: {text}"
        seen = seen.__cause__ or seen.__context__
    return None


def apply_migrations(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Bring the schema up to date; each migration runs in its own transaction, exactly once."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migration ("
        " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
    )
    done = applied_versions(con)
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


_FEW_ROWS = 16
_PLAIN_VALUES = (str, int, float, bytes, datetime.datetime, datetime.date, type(None))


def _few_plain_rows(rows: list[Mapping[str, Any]]) -> bool:
    """A handful of rows with the same columns and only plain Python values, which DuckDB binds as they are (a
    DataFrame would cost milliseconds to build and register for them)."""
    if not rows or len(rows) > _FEW_ROWS:
        return False
    keys = list(rows[0])
    return all(list(row) == keys and all(isinstance(v, _PLAIN_VALUES) for v in row.values()) for row in rows)


def _bound(value: Any) -> Any:
    """A value as the frame path would store it: a float NaN is NULL there (DuckDB reads pandas' NaN as missing)."""
    return None if isinstance(value, float) and value != value else value


def insert_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    rows: pd.DataFrame | Iterable[Mapping[str, Any]],
    conflict: Conflict = "ignore",
) -> int:
    """Insert many rows in one statement; on a primary-key conflict keep the old row, replace it, or (``error``:
    rows known to be new, which DuckDB inserts several times faster) raise.

    Going through a registered DataFrame keeps large batches fast (no per-row round trips).
    Returns the number of rows offered.
    """
    import pandas as pd

    verb = {"ignore": "INSERT OR IGNORE", "replace": "INSERT OR REPLACE", "error": "INSERT"}[conflict]
    if not isinstance(rows, pd.DataFrame):
        rows = list(rows)
        if _few_plain_rows(rows):  # one or a few rows (a model call, a lease): bound parameters, no DataFrame
            columns = ", ".join(f'"{c}"' for c in rows[0])
            values = ", ".join(["(" + ", ".join("?" * len(rows[0])) + ")"] * len(rows))
            con.execute(f"{verb} INTO {table} ({columns}) VALUES {values}", [_bound(v) for row in rows for v in row.values()])
            return len(rows)
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    if frame.empty:
        return 0
    columns = ", ".join(f'"{c}"' for c in frame.columns)
    with registered(con, "_aesforge_batch", frame):
        con.execute(f"{verb} INTO {table} ({columns}) SELECT {columns} FROM _aesforge_batch")
    return len(frame)
