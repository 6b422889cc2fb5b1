"""The shared tables' move into the core migration (0001) changes no warehouse: a new one gets the schema the old
migration files built, and one built with the old files migrates to that same schema."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from warehouse.db import Warehouse, migrations

REPO = Path(__file__).resolve().parents[2]
# The last commit whose 0002_image_pool.sql and 0003_photocritique.sql still created the shared tables.
BEFORE = "8c294abe7eabd80312852e7250173df1477e8bcf"


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def old_migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) of the migration files at ``BEFORE``; skipped without git or that commit (a shallow
    clone)."""
    if shutil.which("git") is None or _git("cat-file", "-e", f"{BEFORE}^{{commit}}").returncode != 0:
        pytest.skip(f"needs git and commit {BEFORE[:7]}")
    names = _git("ls-tree", "--name-only", BEFORE, "warehouse/migrations/").stdout.split()
    found = [(int(Path(name).name[:4]), Path(name).name, _git("show", f"{BEFORE}:{name}").stdout)
             for name in names if name.endswith(".sql")]
    return sorted(found)


def _schema(path: Path) -> dict[str, list[tuple]]:
    """Every table's and view's columns (order, type, nullability, default) and every constraint."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {
            "relations": con.execute("SELECT table_name, table_type FROM information_schema.tables ORDER BY ALL").fetchall(),
            "columns": con.execute(
                "SELECT table_name, ordinal_position, column_name, data_type, is_nullable, column_default"
                " FROM information_schema.columns ORDER BY ALL").fetchall(),
            "constraints": con.execute(
                "SELECT table_name, constraint_type, constraint_column_names, expression FROM duckdb_constraints()"
                " ORDER BY ALL").fetchall(),
            "versions": con.execute("SELECT version, name FROM schema_migration ORDER BY version").fetchall(),
        }
    finally:
        con.close()


def _open(path: Path) -> None:
    """Open the warehouse as every step does: pending migrations, then the views."""
    with Warehouse(path).transaction() as con:
        con.execute("SELECT 1")


def _built_with(path: Path, files: list[tuple[int, str, str]]) -> None:
    """A warehouse on which these migration files ran, recorded as db.apply_migrations records them."""
    con = duckdb.connect(str(path))
    try:
        con.execute("CREATE TABLE schema_migration (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
                    " applied_at TIMESTAMPTZ NOT NULL)")
        for version, name, sql in files:
            con.execute(sql)
            con.execute("INSERT INTO schema_migration VALUES (?, ?, now())", [version, name])
    finally:
        con.close()


def test_only_the_shared_tables_moved(old_migrations):
    # the files of then, then any added since (0015 and later)
    assert [name for _, name, _ in migrations()][: len(old_migrations)] == [name for _, name, _ in old_migrations]
    new = {name: sql for _, name, sql in migrations()}
    for name, sql in ((name, sql) for _, name, sql in old_migrations):
        if name not in ("0001_provenance_core.sql", "0002_image_pool.sql", "0003_photocritique.sql"):
            assert new[name] == sql, name


@pytest.fixture(scope="module")
def fresh_schema(tmp_path_factory) -> dict[str, list[tuple]]:
    path = tmp_path_factory.mktemp("fresh") / "w.duckdb"
    _open(path)
    return _schema(path)


# BEFORE had migrations 1-14; 14 applied is the old files' fresh warehouse. Warehouses made before 0003 existed
# (versions 1 and 2 only) are left out: the new 0003 no longer creates export_file, which 0007 alters.
@pytest.mark.parametrize("applied", range(3, 15))
def test_a_warehouse_built_with_the_old_files_migrates_to_the_new_schema(tmp_path, old_migrations, fresh_schema,
                                                                         applied):
    old = tmp_path / "old.duckdb"
    _built_with(old, old_migrations[:applied])
    _open(old)
    assert _schema(old) == fresh_schema
    assert [version for version, _ in fresh_schema["versions"]] == [version for version, _, _ in migrations()]
