"""The keyed walk (warehouse/provenance_walk.py) gives exactly the rows of the ``provenance`` macro, in the CLI's
order: on lineage written by hand to reach the corners (a cycle, a chain deeper than the macro's limit, thousands of
sources at one depth, sources with no entity row) and on a warehouse built by real materializations (a pool and
CritiqueCanvas through the heuristic models), for items of every kind; and every lookup it makes is an index scan."""

import pytest

from tests.support.critique_harness import built
from warehouse.db import Warehouse
from warehouse.lineage import Agent, Entity, finish_activity, start_activity
from warehouse.provenance_walk import COLUMNS, LOOKUPS, MAX_DEPTH, provenance_rows

MACRO_IN_WALK_ORDER = ("SELECT * FROM provenance(?)"
                       " ORDER BY depth DESC, started_at, entity_id, link, run_id, asset_key")
WIDE = 2500  # sources of one entity: more than a keyed lookup takes at once


def macro_rows(con, item: str) -> list[dict]:
    cursor = con.execute(MACRO_IN_WALK_ORDER, [item])
    names = [d[0] for d in cursor.description]
    assert tuple(names) == COLUMNS
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def assert_walk_is_macro(wh: Warehouse, items: list[str]) -> dict[str, list[dict]]:
    out = {}
    with wh.transaction() as con:
        for item in items:
            walked = provenance_rows(con, item)
            assert walked == macro_rows(con, item), item
            out[item] = walked
    return out


@pytest.fixture(scope="module")
def by_hand(tmp_path_factory) -> Warehouse:
    """Lineage the pipelines do not write but the walk must survive: two activities, one of them with two agents;
    a cycle (a <-> b, with c hanging off b); a chain of MAX_DEPTH + 3 links; an entity derived from WIDE source
    records (every other one in the source_record table); an entity derived from one source by two relations; and a
    derivation from an id with no entity row."""
    wh = Warehouse(tmp_path_factory.mktemp("walk") / "w.duckdb")
    software = Agent("software:aesforge@test", "software", "aesforge", "test")
    model = Agent("model:loop/one@1", "model", "one", "1")
    with wh.transaction() as con:
        first = start_activity(con, asset_key="collect", partition_key=None, run_id="run-1", code_version="v1",
                               parameters={"k": 1}, agents=[(software, "software")])
        second = start_activity(con, asset_key="annotate", partition_key="p", run_id="run-2", code_version="v2",
                                parameters={}, agents=[(software, "software"), (model, "model")])
        chain = [f"step:{i:02d}" for i in range(MAX_DEPTH + 4)]
        sources = [f"source_record:{i:04d}" for i in range(WIDE)]
        first.entities([Entity(e, e.split(":")[0]) for e in ["cycle:a", "cycle:b", "cycle:c", *chain, *sources]])
        second.entities([Entity(e, e.split(":")[0]) for e in ("wide:w", "lone:x", "tie:t", "tie:s")])
        first.generated(["cycle:a", "cycle:b", *chain, *sources[1:]])  # cycle:c and the first source: external
        second.generated(["wide:w"])
        first.used(["cycle:b", sources[0]], "input")
        second.used(sources[:3], "record")
        first.derived([("cycle:a", "cycle:b", "copied_from"), ("cycle:b", "cycle:a", "copied_from"),
                       ("cycle:b", "cycle:c", "cut_from"), ("cycle:c", "ghost:none", "named_after")])
        first.derived([(child, parent, "next_of") for child, parent in zip(chain, chain[1:])])
        second.derived([("wide:w", s, "drawn_from") for s in sources] + [("tie:t", "tie:s", "echo_of"),
                                                                        ("tie:t", "tie:s", "drawn_from")])
        con.executemany(
            "INSERT INTO source_record VALUES (?, 'manifest', 'm.csv', ?, 'T', 'unknown', 'P', ?, 'CC0-1.0', 'allowed',"
            " 'painting', NULL, ?, now())",
            [[s, f"/{i}.png", f"https://example.invalid/{i}", first.activity_id] for i, s in enumerate(sources) if i % 2 == 0])
        finish_activity(con, first.activity_id, "success", {})
    return wh


def test_the_walk_is_the_macro_on_the_corners(by_hand):
    rows = assert_walk_is_macro(by_hand, ["cycle:a", "cycle:c", "step:00", "wide:w", "lone:x", "ghost:none",
                                          "source_record:0000", "nothing:here"])
    assert {(r["entity_id"], r["depth"], r["derived_as"]) for r in rows["cycle:a"]} == {  # the way back names cycle:a
        ("cycle:a", 0, "copied_from"), ("cycle:b", 1, "copied_from"), ("cycle:c", 2, "cut_from")}
    assert {(r["entity_id"], r["derived_as"]) for r in rows["cycle:c"]} == {("cycle:c", None)}
    assert max(r["depth"] for r in rows["step:00"]) == MAX_DEPTH  # the macro's limit, not the chain's end
    wide = rows["wide:w"]
    assert len({r["entity_id"] for r in wide}) == WIDE + 1
    assert [r["link"] for r in wide if r["entity_id"] == "source_record:0000"] == [
        "used as input", "used as record", "external input"]  # no activity, no start: last, as DuckDB sorts NULL
    assert all(r["agents"] == ["model:loop/one@1", "software:aesforge@test"] for r in wide if r["run_id"] == "run-2")
    assert [(r["link"], r["agents"]) for r in rows["lone:x"]] == [("external input", None)]
    assert rows["ghost:none"] == rows["nothing:here"] == []


@pytest.fixture(scope="module")
def critique_warehouse(tmp_path_factory) -> Warehouse:
    _, wh = built(tmp_path_factory.mktemp("critique"))
    return wh


def test_the_walk_is_the_macro_on_a_built_warehouse(critique_warehouse):
    wh = critique_warehouse
    items = [wh.scalar(f"SELECT min(entity_id) FROM entity WHERE kind = '{kind}'")
             for kind in ("critique_pair", "critique_group", "pool_item", "image", "file", "source_record", "model_call")]
    assert None not in items
    rows = assert_walk_is_macro(wh, [*items, "critique_pair:" + "0" * 64])
    pair, group, pool_item, image, file, record, call = items
    assert {r["entity_kind"] for r in rows[pair]} >= {"critique_pair", "critique_group", "pool_item", "model_call",
                                                      "image", "source_record"}
    assert len(rows[pair]) > len(rows[pool_item]) > 1 and rows[image]
    assert any(r["source_url"] or r["locator"] for r in rows[record])
    assert any(r["agents"] and any(a.startswith("model:") for a in r["agents"]) for r in rows[call])


def test_every_lookup_of_the_walk_is_an_index_scan(critique_warehouse):
    """Migration 0028's indexes (and the single-column primary keys) are what the walk reads through: the plan
    DuckDB runs for each lookup scans an index, not the table."""
    with critique_warehouse.transaction() as con:
        for name, (select, key) in LOOKUPS.items():
            keys = con.execute(f"SELECT min({key}), max({key}) FROM ({select})").fetchone()  # ids in the table:
            [(_, plan)] = con.execute(f"EXPLAIN ANALYZE {select} WHERE {key} IN (?, ?)", keys).fetchall()  # no pruning
            assert "Type: Index Scan" in plan, (name, plan)


def test_a_tie_between_relations_is_broken_by_name(by_hand):
    """The macro's ``arg_min`` names either relation of an ancestor reached at one distance by two; the walk the
    first by name, every time."""
    with by_hand.transaction() as con:
        walked = provenance_rows(con, "tie:t")
        by_macro = macro_rows(con, "tie:t")
    assert [(r["entity_id"], r["derived_as"]) for r in walked] == [("tie:s", "drawn_from"), ("tie:t", None)]
    assert by_macro[0]["derived_as"] in ("drawn_from", "echo_of")
    assert [{**r, "derived_as": None} for r in walked] == [{**r, "derived_as": None} for r in by_macro]
