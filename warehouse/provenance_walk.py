"""The rows of the ``provenance(item)`` macro, found by key: what ``aesforge provenance`` reads.

The macro (``warehouse/views/010_provenance.sql``) stays for ad-hoc SQL, but its recursive CTE hash-joins the whole
of ``was_derived_from`` at every depth, and DuckDB uses no index for a join: 5.4 s at 10^7 rows. This walk asks
each table only for the ids it needs, breadth-first, with one ``IN (...)`` query per depth (and one per table for
the rows of the ancestors found), which DuckDB answers from the single-column indexes of migration 0028 in well
under a millisecond each. It returns the macro's rows (same columns, same values), in one total order: the CLI's
``ORDER BY depth DESC, started_at, entity_id`` and then by link, run and asset.

Where the macro leaves a choice open, the walk makes it the same way every time: an ancestor reached at its
shortest distance by two relations takes the first of them by name (the macro's ``arg_min`` takes either).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import duckdb

COLUMNS = ("depth", "entity_id", "entity_kind", "derived_as", "link", "asset_key", "run_id", "code_version",
           "parameters", "status", "started_at", "agents", "source_url", "license", "creator", "title", "provider",
           "redistribution", "locator")
ACTIVITY_COLUMNS = ("asset_key", "run_id", "code_version", "parameters", "status", "started_at")
SOURCE_COLUMNS = ("source_url", "license", "creator", "title", "provider", "redistribution", "locator")
# What the walk reads, each by one key that has a single-column index (a primary key or one of migration 0028's).
LOOKUPS = {
    "derivations": ("SELECT entity_id, source_entity_id, relation FROM was_derived_from", "entity_id"),
    "entities": ("SELECT entity_id, kind FROM entity", "entity_id"),
    "generations": ("SELECT entity_id, activity_id FROM was_generated_by", "entity_id"),
    "uses": ("SELECT entity_id, role, activity_id FROM used", "entity_id"),
    "activities": (f"SELECT activity_id, {', '.join(ACTIVITY_COLUMNS)} FROM activity", "activity_id"),
    "agents": ("SELECT activity_id, agent_id FROM was_associated_with", "activity_id"),
    "sources": (f"SELECT record_id, {', '.join(SOURCE_COLUMNS)} FROM source_record", "record_id"),
}
MAX_DEPTH = 32  # as the macro: ancestors at most 32 derivations away
# Up to DuckDB's index_scan_max_count (2048) ids a lookup is a point query per chunk of placeholders; a wider set
# (a release's or a cluster's thousands of sources) is one hash join against the list, which is what the index
# would give way to anyway.
_CHUNK = 500
_KEYED_UP_TO = 2048


def _rows_by_key(con: duckdb.DuckDBPyConnection, lookup: str, ids: Iterable[str]) -> Iterator[tuple]:
    """The rows of ``LOOKUPS[lookup]`` whose key is one of ``ids``."""
    select, key = LOOKUPS[lookup]
    ids = sorted(set(ids))
    if len(ids) > _KEYED_UP_TO:
        yield from con.execute(f"{select} WHERE {key} IN (SELECT unnest(?::VARCHAR[]))", [ids]).fetchall()
        return
    for at in range(0, len(ids), _CHUNK):
        chunk = ids[at:at + _CHUNK]
        yield from con.execute(f"{select} WHERE {key} IN ({', '.join('?' * len(chunk))})", chunk).fetchall()


def ancestors(con: duckdb.DuckDBPyConnection, item: str) -> dict[str, tuple[int, str | None]]:
    """Every entity ``item`` derives from, itself included: id -> (shortest distance, relation it was derived as).
    Breadth-first, so an entity is met first at its shortest distance; one already met is not walked again, which
    keeps a cycle finite. The item itself is derived as nothing, unless a cycle leads back to it: then, as in the
    macro (whose ``arg_min`` skips the item's NULL), as the last link of the shortest way back."""
    found: dict[str, tuple[int, str | None]] = {item: (0, None)}
    frontier = [item]
    for depth in range(1, MAX_DEPTH + 1):
        reached: dict[str, str] = {}
        back: list[str] = []  # relations by which this depth leads back to the item
        for _, source, relation in _rows_by_key(con, "derivations", frontier):
            if source == item:
                back.append(relation)
            elif source not in found and (source not in reached or relation < reached[source]):
                reached[source] = relation
        if back and found[item][1] is None:
            found[item] = (0, min(back))
        if not reached:
            break
        found.update((source, (depth, relation)) for source, relation in reached.items())
        frontier = list(reached)
    return found


def _row_order(row: dict[str, Any]) -> tuple:
    def last_if_null(value: Any) -> tuple:  # DuckDB sorts NULL last
        return (value is None, "" if value is None else value)
    return (-row["depth"], last_if_null(row["started_at"]), row["entity_id"], row["link"],
            last_if_null(row["run_id"]), last_if_null(row["asset_key"]))


def provenance_rows(con: duckdb.DuckDBPyConnection, item: str) -> list[dict[str, Any]]:
    """The rows ``SELECT * FROM provenance(item)`` gives, as dicts keyed by ``COLUMNS``: per ancestor in the
    ``entity`` table, one row for the activity that generated it (``'generated'``; ``'external input'`` with no
    activity when none did) and one per activity that used it (``'used as <role>'``), with the activity, its agents
    and, for a source record, where it came from."""
    found = ancestors(con, item)
    kinds = dict(_rows_by_key(con, "entities", found))
    steps: list[tuple[str, str, str | None]] = []  # (entity, link, activity)
    generated = dict(_rows_by_key(con, "generations", kinds))
    for entity in kinds:
        activity = generated.get(entity)
        steps.append((entity, "external input" if activity is None else "generated", activity))
    for entity, role, activity in _rows_by_key(con, "uses", kinds):
        steps.append((entity, f"used as {role}", activity))
    activity_ids = {activity for _, _, activity in steps if activity is not None}
    activities = {row[0]: row[1:] for row in _rows_by_key(con, "activities", activity_ids)}
    agents: dict[str, list[str]] = {}
    for activity, agent in _rows_by_key(con, "agents", activity_ids):
        agents.setdefault(activity, []).append(agent)
    sources = {row[0]: row[1:] for row in _rows_by_key(con, "sources", kinds)}
    rows = []
    for entity, link, activity in steps:
        depth, relation = found[entity]
        row = {"depth": depth, "entity_id": entity, "entity_kind": kinds[entity], "derived_as": relation, "link": link}
        row.update(zip(ACTIVITY_COLUMNS, activities.get(activity, (None,) * len(ACTIVITY_COLUMNS))))
        row["agents"] = sorted(agents[activity]) if activity in agents else None
        row.update(zip(SOURCE_COLUMNS, sources.get(entity, (None,) * len(SOURCE_COLUMNS))))
        rows.append({name: row[name] for name in COLUMNS})
    return sorted(rows, key=_row_order)

