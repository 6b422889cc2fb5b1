"""Lineage API: the one way every stage records entities, activities, agents and PROV edges.

Ids are content-derived so that recording the same thing twice is a no-op: an entity id is
``<kind>:<sha256>``, an activity id hashes (asset, partition, run). All writers use
insert-or-ignore, so a re-run adds no duplicate rows; decisions that may change between runs
(rejections) are replaced in place. Every string about to be stored here passes through
``redact_value``, so a credential in an endpoint URL never reaches the warehouse or what is exported from it.
An activity records the process that runs it, so an activity a killed process left ``running`` is told
apart from one of a live concurrent run and marked ``abandoned`` (``abandon_dead_activities``).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from warehouse.db import insert_rows, registered
from warehouse.ids import canonical_json, digest_of, entity_id
from warehouse.redaction import redact_text, redact_value


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Entity:
    entity_id: str
    kind: str
    content_sha256: str | None = None
    attributes: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Agent:
    agent_id: str
    kind: str
    name: str
    version: str | None = None
    attributes: Mapping[str, Any] | None = None


def activity_id_for(asset_key: str, partition_key: str | None, run_id: str) -> str:
    return entity_id("activity", digest_of([asset_key, partition_key, run_id]))


class ActivityLog:
    """Writes the provenance of one activity (one step execution) through an open connection."""

    def __init__(self, con: duckdb.DuckDBPyConnection, activity_id: str) -> None:
        self.con = con
        self.activity_id = activity_id

    def associate(self, agent: Agent, role: str) -> None:
        record_agent(self.con, agent)
        insert_rows(
            self.con,
            "was_associated_with",
            [{"activity_id": self.activity_id, "agent_id": agent.agent_id, "role": role}],
        )

    def entities(self, entities: Iterable[Entity], *, new: bool = False) -> None:
        """Record entities (one already recorded keeps its row). ``new``: the caller knows none is recorded yet
        (ids just derived under a lease, such as model calls), and a conflict is an error: DuckDB inserts rows
        without a conflict check several times faster."""
        now = utcnow()
        rows = {
            e.entity_id: {
                "entity_id": e.entity_id,
                "kind": e.kind,
                "content_sha256": e.content_sha256,
                "attributes": _stored_json(e.attributes),
                "recorded_at": now,
            }
            for e in entities
        }
        insert_rows(self.con, "entity", list(rows.values()), conflict="error" if new else "ignore")

    def generated(self, entity_ids: Iterable[str], *, new: bool = False) -> None:
        """This activity generated the entities (``new`` as for ``entities``)."""
        now = utcnow()
        ids = dict.fromkeys(entity_ids)
        insert_rows(
            self.con,
            "was_generated_by",
            [{"entity_id": e, "activity_id": self.activity_id, "generated_at": now} for e in ids],
            conflict="error" if new else "ignore",
        )

    def used(self, entity_ids: Iterable[str], role: str) -> None:
        ids = dict.fromkeys(entity_ids)
        insert_rows(
            self.con,
            "used",
            [{"activity_id": self.activity_id, "entity_id": e, "role": role} for e in ids],
        )

    def derived(self, edges: Iterable[tuple[str, str, str]]) -> None:
        """Record (entity, source entity, relation) edges."""
        unique = dict.fromkeys(edges)
        insert_rows(
            self.con,
            "was_derived_from",
            [
                {"entity_id": e, "source_entity_id": s, "relation": r, "activity_id": self.activity_id}
                for e, s, r in unique
            ],
        )

    def rejected(
        self, stage: str, rejections: Iterable[tuple[str, str, str | None]], retryable: bool = False
    ) -> None:
        """Record (entity, reason code, detail) exclusions; the latest decision per stage wins."""
        now = utcnow()
        rows = {
            entity: {
                "entity_id": entity,
                "stage": stage,
                "reason_code": reason,
                "detail": None if detail is None else redact_text(detail),
                "retryable": retryable,
                "activity_id": self.activity_id,
                "recorded_at": now,
            }
            for entity, reason, detail in rejections
        }
        insert_rows(self.con, "rejection", list(rows.values()), conflict="replace")

    def unrejected(self, stage: str, entity_ids: Iterable[str]) -> None:
        """Withdraw earlier exclusions that no longer hold (a transient failure that now succeeded)."""
        ids = list(dict.fromkeys(entity_ids))
        if ids:
            with registered(self.con, "_aesforge_ids", pd.DataFrame({"entity_id": ids})):
                self.con.execute(
                    "DELETE FROM rejection WHERE stage = ? AND entity_id IN (SELECT entity_id FROM _aesforge_ids)",
                    [stage],
                )

    def unrejected_all(self, stage: str, reason_code: str | None = None, except_in: str | None = None) -> None:
        """Withdraw a stage's exclusions: all of them, those of one reason, or (``except_in``, a SELECT of entity
        ids) those of entities the stage no longer has; the stage decides afresh."""
        clear_rejections(self.con, stage, reason_code, except_in)


def clear_rejections(con: duckdb.DuckDBPyConnection, stage: str, reason_code: str | None = None,
                     except_in: str | None = None) -> None:
    """``ActivityLog.unrejected_all`` for a maintenance transaction that belongs to no activity (``aesforge retry``)."""
    sql, params = "DELETE FROM rejection WHERE stage = ?", [stage]
    if reason_code is not None:
        sql, params = sql + " AND reason_code = ?", [*params, reason_code]
    if except_in is not None:
        sql += f" AND entity_id NOT IN ({except_in})"
    con.execute(sql, params)


def record_agent(con: duckdb.DuckDBPyConnection, agent: Agent) -> None:
    insert_rows(
        con,
        "agent",
        [
            {
                "agent_id": agent.agent_id,
                "kind": agent.kind,
                "name": agent.name,
                "version": agent.version,
                "attributes": _stored_json(agent.attributes),
            }
        ],
    )


def _stored_json(attributes: Mapping[str, Any] | None) -> str | None:
    return None if attributes is None else canonical_json(redact_value(attributes))


@dataclass(frozen=True)
class Process:
    """A process as the warehouse records it: pid, host, and its start time where the OS tells it (Linux), so
    that a later process reusing the pid is not taken for it."""

    pid: int
    hostname: str
    start: str | None


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None where there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()


def this_process() -> Process:
    stat = _proc_stat(os.getpid())
    return Process(os.getpid(), socket.gethostname(), stat[19] if stat and len(stat) > 19 else None)


def process_alive(pid: int, start: str | None) -> bool:
    """Whether the process ``pid`` started at ``start`` still runs on this host (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        pass
    stat = _proc_stat(pid)
    if stat is None:
        return True  # no /proc: the signal said it exists, and that is all we can know
    return stat[0] != "Z" and (start is None or len(stat) <= 19 or stat[19] == start)


def abandoned_note(pid: int, hostname: str) -> str:
    return f"abandoned: process {pid} on host {hostname} is gone"


def abandon_dead_activities(con: duckdb.DuckDBPyConnection, found_by: str) -> list[str]:
    """Mark ``abandoned`` the activities left ``running`` by a process of this host that no longer runs, with
    the reason in their summary; activities of live processes, and of other hosts (whose processes cannot be
    checked from here), are left as they are. Returns the activity ids marked."""
    host = socket.gethostname()
    rows = con.execute(
        "SELECT activity_id, pid, process_start FROM activity WHERE status = 'running' AND hostname = ? AND pid IS NOT NULL",
        [host],
    ).fetchall()
    marked = []
    for activity, pid, start in rows:
        if not process_alive(pid, start):
            summary = {"note": abandoned_note(pid, host), "found_by": found_by, "found_at": utcnow().isoformat()}
            con.execute(
                "UPDATE activity SET status = 'abandoned', summary = ? WHERE activity_id = ? AND status = 'running'",
                [canonical_json(summary), activity],
            )
            marked.append(activity)
    return marked


def start_activity(
    con: duckdb.DuckDBPyConnection,
    *,
    asset_key: str,
    partition_key: str | None,
    run_id: str,
    code_version: str,
    parameters: Mapping[str, Any],
    agents: Iterable[tuple[Agent, str]],
) -> ActivityLog:
    """Open (or, on a step retry within the same run, reopen) an activity run by this process and link its agents."""
    activity = activity_id_for(asset_key, partition_key, run_id)
    process = this_process()
    con.execute(
        "INSERT OR REPLACE INTO activity (activity_id, asset_key, partition_key, run_id, code_version, parameters,"
        " started_at, ended_at, status, summary, pid, hostname, process_start)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, NULL, 'running', NULL, ?, ?, ?)",
        [activity, asset_key, partition_key, run_id, code_version, canonical_json(redact_value(parameters)), utcnow(),
         process.pid, process.hostname, process.start],
    )
    log = ActivityLog(con, activity)
    for agent, role in agents:
        log.associate(agent, role)
    return log


def finish_activity(
    con: duckdb.DuckDBPyConnection, activity_id: str, status: str, summary: Mapping[str, Any]
) -> None:
    con.execute(
        "UPDATE activity SET ended_at = ?, status = ?, summary = ? WHERE activity_id = ?",
        [utcnow(), status, canonical_json(redact_value(summary)), activity_id],
    )
