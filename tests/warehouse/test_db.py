import multiprocessing

import duckdb
import pytest

from warehouse.db import Warehouse, apply_migrations, insert_rows, migrations
from warehouse.lineage import Agent, Entity, finish_activity, start_activity


def test_migrations_run_once_and_in_order(tmp_path):
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    first = apply_migrations(con)
    assert first == [v for v, _, _ in migrations()]
    assert apply_migrations(con) == []
    rows = con.execute("SELECT version FROM schema_migration ORDER BY version").fetchall()
    assert [r[0] for r in rows] == first


def test_failed_transaction_leaves_nothing(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    with pytest.raises(RuntimeError):
        with wh.transaction() as con:
            insert_rows(con, "agent", [{"agent_id": "a", "kind": "software", "name": "x"}])
            raise RuntimeError("crash mid-batch")
    assert wh.scalar("SELECT count(*) FROM agent") == 0


def test_insert_rows_ignores_or_replaces_on_key(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    with wh.transaction() as con:
        insert_rows(con, "agent", [{"agent_id": "a", "kind": "software", "name": "first"}])
        insert_rows(con, "agent", [{"agent_id": "a", "kind": "software", "name": "second"}])
    assert wh.scalar("SELECT name FROM agent") == "first"
    with wh.transaction() as con:
        insert_rows(con, "agent", [{"agent_id": "a", "kind": "software", "name": "third"}], conflict="replace")
    assert wh.query("SELECT name FROM agent")["name"].tolist() == ["third"]


def _writer(path: str, worker: int, n: int) -> None:
    wh = Warehouse(path)
    for i in range(n):
        with wh.transaction() as con:
            insert_rows(con, "agent", [{"agent_id": f"w{worker}-{i}", "kind": "software", "name": "x"}])


def test_concurrent_processes_serialize_on_the_lock(tmp_path):
    """Several processes writing one file (as Dagster's multiprocess executor does) all succeed."""
    path = str(tmp_path / "w.duckdb")
    Warehouse(path).scalar("SELECT 1")  # create the schema once
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_writer, args=(path, w, 15)) for w in range(3)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(120)
    assert [p.exitcode for p in workers] == [0, 0, 0]
    assert Warehouse(path).scalar("SELECT count(*) FROM agent") == 45


def test_provenance_macro_walks_derivations_to_the_source(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    with wh.transaction() as con:
        log = start_activity(
            con, asset_key="collect", partition_key=None, run_id="run-1", code_version="v1",
            parameters={"k": 1}, agents=[(Agent("software:aesforge@test", "software", "aesforge", "test"), "software")],
        )
        log.entities([Entity("source_record:r", "source_record"), Entity("file:f", "file"), Entity("image:i", "image")])
        log.generated(["source_record:r", "file:f", "image:i"])
        log.derived([("file:f", "source_record:r", "retrieved_from"), ("image:i", "file:f", "decoded_from")])
        con.execute(
            "INSERT INTO source_record VALUES ('source_record:r', 'manifest', 'm.csv', '/x.png', 'T', 'unknown',"
            " 'P', 'https://example.invalid/x', 'CC0-1.0', 'allowed', 'painting', NULL, ?, now())",
            [log.activity_id],
        )
        finish_activity(con, log.activity_id, "success", {})
    chain = wh.query("SELECT * FROM provenance('image:i') ORDER BY depth")
    assert chain["entity_id"].tolist() == ["image:i", "file:f", "source_record:r"]
    assert chain["derived_as"].tolist()[1:] == ["decoded_from", "retrieved_from"]
    assert chain["run_id"].tolist() == ["run-1"] * 3
    source = chain[chain.entity_kind == "source_record"].iloc[0]
    assert (source.source_url, source.license) == ("https://example.invalid/x", "CC0-1.0")
    assert list(chain["agents"].iloc[0]) == ["software:aesforge@test"]


def test_pages_stream_in_key_order_and_tolerate_writes_between_pages(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    with wh.transaction() as con:
        insert_rows(con, "agent", [{"agent_id": f"a{i:02d}", "kind": "software", "name": str(i)} for i in range(25)])
    seen = []
    for page in wh.pages("SELECT g.agent_id, g.name FROM agent g WHERE g.kind = ?", ["software"], key="g.agent_id", block=10):
        seen.append([row[0] for row in page])
        if len(seen) == 1:  # another step writes meanwhile; pages after the key still pick it up
            with wh.transaction() as con:
                insert_rows(con, "agent", [{"agent_id": "a99", "kind": "software", "name": "late"}])
    assert [len(p) for p in seen] == [10, 10, 6]
    assert [x for p in seen for x in p] == sorted(f"a{i:02d}" for i in [*range(25), 99])


# --- a lingering connection -----------------------------------------------------------------------------------

_OTHER_PROCESS = """
import sys, time
sys.path.insert(0, {root!r})
from warehouse.db import Warehouse
started = time.monotonic()
Warehouse({path!r}).scalar("SELECT count(*) FROM schema_migration")
print(round(time.monotonic() - started, 3))
"""


def test_a_lingering_connection_is_kept_between_transactions_and_handed_to_a_waiting_process(tmp_path):
    import subprocess
    import sys
    import time
    from pathlib import Path

    from warehouse.db import Warehouse

    wh = Warehouse(tmp_path / "w.duckdb")
    wh.scalar("SELECT 1")
    assert wh._open is None  # outside a lingering block every transaction closes its connection
    root = str(Path(__file__).resolve().parents[2])
    with wh.lingering(idle_s=30):
        wh.scalar("SELECT 1")
        kept = wh._open
        wh.scalar("SELECT 2")
        assert kept is not None and wh._open is kept
        with wh.transaction() as con:  # a transaction nested in this thread's own gets a connection of its own
            con.execute("CREATE TABLE t (x INTEGER)")
            with wh.transaction() as inner:
                assert inner.execute("SELECT count(*) FROM schema_migration").fetchone()[0] > 0
        other = subprocess.run([sys.executable, "-c", _OTHER_PROCESS.format(root=root, path=str(wh.path))],
                               capture_output=True, text=True, timeout=120)
        assert other.returncode == 0, other.stderr
        # the other process said it waited and got the file long before the 30 s idle limit
        assert float(other.stdout.strip()) < 10
        time.sleep(0.1)
        assert wh._open is None  # handed over while idle
        wh.scalar("SELECT 3")  # and taken again
        assert wh._open is not None
    assert wh._open is None


def test_few_rows_bound_as_parameters_store_what_a_frame_stores(tmp_path):
    from datetime import datetime, timezone

    from warehouse.db import Warehouse, insert_rows

    wh = Warehouse(tmp_path / "w.duckdb")
    row = {"entity_id": "e:1", "kind": "k", "content_sha256": None, "attributes": '{"a": 1}',
           "recorded_at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)}
    many = [{**row, "entity_id": f"e:{i}"} for i in range(2, 40)]  # past the few-rows limit: the frame path
    with wh.transaction() as con:
        insert_rows(con, "entity", [row])
        insert_rows(con, "entity", many)
        insert_rows(con, "entity", [{**row, "kind": "changed"}])  # ignored: the id is there
        insert_rows(con, "entity", [{**row, "entity_id": "e:2", "kind": "replaced"}], conflict="replace")
    rows = wh.query("SELECT entity_id, kind, content_sha256, attributes, recorded_at FROM entity ORDER BY entity_id")
    first, second = rows.iloc[0], rows[rows["entity_id"] == "e:2"].iloc[0]
    assert (first["kind"], first["content_sha256"], first["attributes"]) == ("k", None, '{"a": 1}')
    assert first["recorded_at"] == rows.iloc[5]["recorded_at"]  # the same instant whichever path stored it
    assert second["kind"] == "replaced" and len(rows) == 39
    # a float NaN is NULL whichever path stores it (a frame's NaN is read as missing)
    score = {"run_key": "r", "metric": "m", "value": float("nan"), "activity_id": "a"}
    with wh.transaction() as con:
        insert_rows(con, "evaluation_score", [{**score, "item_id": "few"}])
        insert_rows(con, "evaluation_score", [{**score, "item_id": f"many{i}"} for i in range(20)])
    assert wh.scalar("SELECT count(*) FROM evaluation_score WHERE value IS NULL") == 21
    import duckdb
    import pytest
    with pytest.raises(duckdb.ConstraintException), wh.transaction() as con:
        insert_rows(con, "entity", [row], conflict="error")
