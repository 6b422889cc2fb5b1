"""A damaged warehouse file is refused with one line and left exactly as it was; a sound one opens; a migration
of a warehouse that has data first takes a copy."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.support.pool_harness import write_config
from warehouse.db import Warehouse, WarehouseDamaged, pre_migration_copy, soundness_problem
from warehouse.lineage import Entity, start_activity

AESFORGE = str(Path(sys.executable).parent / "aesforge")
BLOCK = 262144


def _fingerprint(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), stat.st_size, stat.st_mtime_ns


def _real_warehouse(path: Path, n_entities: int = 60000) -> Path:
    """A warehouse with its schema and enough provenance rows to span several blocks."""
    wh = Warehouse(path)
    with wh.transaction() as con:
        log = start_activity(con, asset_key="soundness", partition_key=None, run_id="r1", code_version="t",
                             parameters={}, agents=())
        log.entities(Entity(f"thing:{i:064x}", "thing", f"{i:064x}", {"n": i}) for i in range(n_entities))
    return path


def _refused(path: Path) -> str:
    before = _fingerprint(path)
    with pytest.raises(WarehouseDamaged) as refused:
        Warehouse(path).query("SELECT count(*) FROM entity")
    assert _fingerprint(path) == before  # not a byte, not the mtime
    message = str(refused.value)
    assert "\n" not in message and str(path) in message and "left untouched" in message
    assert f"mv {path} {path}.damaged" in message  # says how to go on
    return message


def test_empty_file_is_refused(tmp_path):
    path = tmp_path / "w.duckdb"
    path.write_bytes(b"")
    assert "empty (0 bytes)" in _refused(path)


def test_garbage_file_is_refused(tmp_path):
    path = tmp_path / "w.duckdb"
    path.write_bytes(os.urandom(3 * 4096 + BLOCK))
    assert "not a DuckDB database file" in _refused(path)


def test_warehouse_cut_in_half_is_refused_by_the_cli_too(tmp_path):
    config = write_config(tmp_path / "cfg", {})
    path = _real_warehouse(tmp_path / "cfg" / "warehouse.duckdb")
    data = path.read_bytes()
    assert len(data) > 3 * 4096 + 2 * BLOCK
    path.write_bytes(data[: len(data) // 2])
    assert "truncated" in _refused(path)

    before = _fingerprint(path)
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    env.pop("AESFORGE_CONFIG", None)
    for args in (["sql", "SELECT count(*) FROM entity"], ["provenance", "thing:0"]):
        cli = subprocess.run([AESFORGE, args[0], "--config", str(config), *args[1:]], capture_output=True, text=True,
                             timeout=300, env=env)
        assert cli.returncode == 2, cli.stdout + cli.stderr
        lines = cli.stderr.strip().splitlines()
        assert len(lines) == 1 and "is damaged: the file is truncated" in lines[0] and str(path) in lines[0]
        assert "Traceback" not in cli.stderr and cli.stdout == ""
    assert _fingerprint(path) == before


def test_cut_at_a_block_boundary_is_refused(tmp_path):
    path = _real_warehouse(tmp_path / "w.duckdb")
    data = path.read_bytes()
    blocks = (len(data) - 3 * 4096) // BLOCK
    path.write_bytes(data[: 3 * 4096 + (blocks // 2) * BLOCK])  # whole blocks only, so the size alone says nothing
    refused = _refused(path)  # found by the block count, or by DuckDB failing to read the cut catalog: refused either way
    assert "is damaged" in refused and ("truncated: it holds" in refused or "DuckDB cannot" in refused)


def test_flipped_header_byte_is_refused(tmp_path):
    path = _real_warehouse(tmp_path / "w.duckdb", n_entities=10)
    data = bytearray(path.read_bytes())
    data[4096 + 40] ^= 0x01  # inside the first database header
    path.write_bytes(bytes(data))
    assert "checksum of its first database header" in _refused(path)


def test_sound_warehouses_open(tmp_path):
    assert soundness_problem(tmp_path / "absent.duckdb") is None  # created on first use
    path = _real_warehouse(tmp_path / "w.duckdb")
    assert soundness_problem(path) is None
    assert Warehouse(path).scalar("SELECT count(*) FROM entity WHERE kind = 'thing'") == 60000
    # DuckDB itself leaves a file shorter than its header's block count when it trims free blocks off the end
    trimmed = tmp_path / "trimmed.duckdb"
    con = duckdb.connect(str(trimmed))
    con.execute("CREATE TABLE keep AS SELECT range AS i FROM range(1000)")
    con.execute("CHECKPOINT")
    con.execute("CREATE TABLE big AS SELECT range AS i, md5(range::VARCHAR) AS s FROM range(300000)")
    con.execute("CHECKPOINT")
    con.execute("DROP TABLE big")
    con.execute("CHECKPOINT")
    con.close()
    assert soundness_problem(trimmed) is None


def test_migrating_a_warehouse_with_data_takes_a_copy_first(tmp_path):
    path = _real_warehouse(tmp_path / "w.duckdb", n_entities=10)
    assert not list(tmp_path.glob("*.pre-migration-*"))  # a new warehouse has nothing to keep
    with duckdb.connect(str(path)) as con:  # as the warehouse was before migration 0013
        for column in ("pid", "hostname", "process_start"):
            con.execute(f"ALTER TABLE activity DROP COLUMN {column}")
        con.execute("DELETE FROM schema_migration WHERE version = 13")
    before = _fingerprint(path)

    assert Warehouse(path).scalar("SELECT count(*) FROM entity WHERE kind = 'thing'") == 10
    copy = pre_migration_copy(path, 13)
    assert copy.name == "w.duckdb.pre-migration-0013.duckdb"
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == before[0]
    with duckdb.connect(str(copy), read_only=True) as old:
        assert 13 not in {v for (v,) in old.execute("SELECT version FROM schema_migration").fetchall()}
    assert Warehouse(path).scalar("SELECT max(version) FROM schema_migration") >= 13
    assert "cp " + str(copy) in _refused_after_truncation(path)


def _refused_after_truncation(path: Path) -> str:
    path.write_bytes(path.read_bytes()[:5000])
    return _refused(path)
