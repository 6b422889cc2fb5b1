"""Migration 0015 (blob URIs as references, the scopes to re-key listed) and the re-key's renaming of old values
in every table; the re-key of a whole sample warehouse is in test_location_independence.py."""

import duckdb
import pytest

from warehouse.db import Warehouse, migrations, pre_migration_copy
from warehouse.rekey import located_renames, rename, renamed_path

SHA = "ab" * 32
OTHER = "cd" * 32


def _warehouse_at_0014(path) -> None:
    """A warehouse as the code before migration 0015 left it, with a few rows of its URIs."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_migration (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
                " applied_at TIMESTAMPTZ NOT NULL)")
    for version, name, sql in migrations():
        if version < 15:
            con.execute(sql)
            con.execute("INSERT INTO schema_migration VALUES (?, ?, now())", [version, name])
    con.execute("INSERT INTO file_blob VALUES (?, 1, 'image/png', ?), (?, 1, NULL, ?)",
                [SHA, f"file:///home/u/proj/data/blobs/ab/ab/{SHA}", OTHER, f"s3://bucket/aesforge/blobs/cd/{OTHER}"])
    con.execute("INSERT INTO image VALUES ('image:x', ?, 1, 1, ?, ?, 0.5, 'a')", [SHA, SHA, "file:///elsewhere/not-a-blob.png"])
    con.execute("INSERT INTO source_record (record_id, source_type, source_name, locator, activity_id, recorded_at)"
                " VALUES ('source_record:x', 'folder', '/home/u/proj/data/inbox', '/home/u/proj/data/inbox/a.png', 'a', now())")
    con.close()


def test_migration_0015_turns_blob_uris_into_references_and_lists_the_scopes_to_re_key(tmp_path):
    path = tmp_path / "warehouse.duckdb"
    _warehouse_at_0014(path)
    wh = Warehouse(path)
    assert dict(wh.query("SELECT sha256, blob_uri FROM file_blob").itertuples(index=False)) == {
        SHA: f"blob:{SHA}", OTHER: f"blob:{OTHER}"}
    assert wh.scalar("SELECT pixel_sha256 FROM image") == SHA  # its decoded copy's columns are gone (0024), the image stays
    # only the scope with rows is pending; nothing was renamed in SQL
    assert wh.query("SELECT scope, activity_id FROM location_rekey").values.tolist() == [["image_pool", None]]
    assert wh.scalar("SELECT locator FROM source_record") == "/home/u/proj/data/inbox/a.png"
    assert pre_migration_copy(path, 15).is_file()


def test_a_new_warehouse_has_nothing_to_re_key(tmp_path):
    assert Warehouse(tmp_path / "warehouse.duckdb").scalar("SELECT count(*) FROM location_rekey") == 0


@pytest.mark.parametrize(
    ("value", "renamed"),
    [
        ("/home/u/proj/data/sample/poems.json#record=3", "../data/sample/poems.json#record=3"),
        ("/home/u/proj/data/inbox", "../data/inbox"),
        ("/mnt/photos/a.png", "/mnt/photos/a.png"),  # outside every root: absolute still
        ("https://host.invalid/a.png", "https://host.invalid/a.png"),
        ("blob:" + SHA, "blob:" + SHA),
        ("../data/inbox/a.png", "../data/inbox/a.png"),  # already a name
    ],
)
def test_an_old_absolute_path_is_renamed_as_the_code_now_names_it(value, renamed):
    assert renamed_path(value, "/home/u/proj/config") == renamed


def test_located_renames_give_the_path_the_locator_and_the_record_id():
    renames = located_renames(["/p/data/m.csv#line=2"], "/p/config", lambda locator: f"id({locator})")
    assert renames == {"/p/data/m.csv#line=2": "../data/m.csv#line=2", "/p/data/m.csv": "../data/m.csv",
                       "id(/p/data/m.csv#line=2)": "id(../data/m.csv#line=2)"}


def test_a_locator_another_scope_renamed_already_still_gets_its_id_re_keyed():
    """The pool renames every path under its manifests' folders, in every table: a poem file beside a manifest is
    a name by the time the poem corpus re-keys, and its old id derives from the absolute path the name stands for."""
    renames = located_renames(["../data/poems.json#record=0"], "/p/config", lambda locator: f"id({locator})")
    assert renames["id(/p/data/poems.json#record=0)"] == "id(../data/poems.json#record=0)"
    assert {old: new for old, new in renames.items() if old != new and not old.startswith("id(")} == {
        "/p/data/poems.json#record=0": "../data/poems.json#record=0", "/p/data/poems.json": "../data/poems.json"}


def test_rename_rewrites_whole_values_ids_and_paths_in_every_text_column():
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id VARCHAR PRIMARY KEY, detail VARCHAR, attributes JSON, calls VARCHAR[], n INTEGER)")
    con.execute("CREATE TABLE schema_migration (name VARCHAR)")
    con.execute("INSERT INTO schema_migration VALUES ('/p/data/m.csv')")
    old_id, new_id = "source_record:" + SHA, "source_record:" + OTHER
    con.execute("INSERT INTO t VALUES (?, ?, ?, ?, 1), ('other', ?, NULL, [], 2), ('root', '/p/config/m.csv: line 2', NULL, NULL, 3)", [
        old_id,
        f"/p/data/m.csv: line 3: kept {old_id}; see /p/data/inbox/a b.png and file:///p/data/inbox/x.png",
        f'{{"path": "/p/data/inbox", "sibling": "/p/data/m.csv.bak", "record": "{old_id}"}}',
        [old_id, "model_call:" + OTHER],
        "/p/database/m.csv and /p/data2/m.csv",  # other folders that merely start like a renamed one
    ])
    renames = {old_id: new_id, "/p/data/inbox": "../data/inbox", "/p/data/m.csv": "../data/m.csv",
               "/p/config/m.csv": "m.csv"}
    changed = rename(con, renames, "/p/config")
    rows = dict((r[0], r[1:]) for r in con.execute("SELECT id, detail, CAST(attributes AS VARCHAR), calls FROM t").fetchall())
    assert rows[new_id] == (
        # a path under a renamed one's folder is renamed with it; a file:// URI is left to its whole-value rename
        f"../data/m.csv: line 3: kept {new_id}; see ../data/inbox/a b.png and file:///p/data/inbox/x.png",
        f'{{"path": "../data/inbox", "sibling": "../data/m.csv.bak", "record": "{new_id}"}}',
        [new_id, "model_call:" + OTHER],
    )
    assert rows["other"][0] == "/p/database/m.csv and /p/data2/m.csv"
    assert rows["root"][0] == "m.csv: line 2"  # a file in the root itself is named by its own name
    assert changed == 5  # id, detail, attributes, calls of the first row; the detail of the last
    assert con.execute("SELECT name FROM schema_migration").fetchone() == ("/p/data/m.csv",)  # the schema's own rows stay
