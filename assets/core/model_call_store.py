"""The warehouse side of model calls: the call log, the cache lookup, the claims, and each call as an entity.

Each call is committed on its own as soon as it returns, so a crash loses no answer that arrived and a
resumed run finds it in the cache. Calls are entities (``model_call:<digest>``) so ``provenance()`` can
show which model, template and prompt produced a record. Before a request is sent its cache key is leased
in ``model_call_lease``, so a second run or step process asking the same key waits for the answer instead of
paying for it again (the warehouse lock makes the claim one atomic transaction across processes).
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import duckdb

from assets.core.model_calls import CallBudget, Claim, ModelCaller, RateLimiter, StoredCall, lease_seconds
from resources.model_providers import ModelProvidersResource, RoleConfig
from resources.models.heuristic import OfflineAnswers
from resources.models.types import ModelProvider, ModelRequest, ModelResponse
from warehouse.db import Warehouse, insert_rows
from warehouse.ids import canonical_json, digest_of, entity_id
from warehouse.lineage import ActivityLog, Entity, process_alive, this_process, utcnow

logger = logging.getLogger(__name__)

_RESPONSE_COLUMNS = "call_id, response_text, input_tokens, output_tokens, latency_ms, attempts, status, error, provider_model"


class WarehouseCallStore:
    """``CallStore`` over the ``model_call`` table and ``CallLeases`` over ``model_call_lease``; safe to share
    between worker threads (the warehouse lock serializes)."""

    def __init__(self, warehouse: Warehouse, activity_id: str) -> None:
        self.warehouse = warehouse
        self.activity_id = activity_id
        self._answered: set[bytes] | None = None  # loaded on the first lookup, so a run with nothing pending skips it
        self._held: dict[str, str] = {}  # cache key -> owner of the lease this store holds on it
        self._process = this_process()
        self._lock = threading.Lock()

    def _answered_keys(self) -> set[bytes]:
        """Which cache keys have a stored answer, as 16-byte prefixes (about 50 bytes each in memory), so a
        miss costs no warehouse round trip; a hit still reads the full key's row."""
        keys: set[bytes] = set()
        for page in self.warehouse.pages(
            "SELECT DISTINCT cache_key FROM model_call WHERE status = 'ok'", [], key="cache_key", block=100_000
        ):
            keys.update(bytes.fromhex(row[0][:32]) for row in page)
        return keys

    def cached(self, cache_key: str) -> StoredCall | None:
        with self._lock:
            if self._answered is None:
                self._answered = self._answered_keys()
            if bytes.fromhex(cache_key[:32]) not in self._answered:
                return None
        with self.warehouse.transaction() as con:
            return _stored(con, cache_key)

    def claim(self, cache_key: str, ttl_s: float) -> Claim:
        """In one transaction: the stored answer if another process got it meanwhile; else this store's lease
        on ``cache_key`` (a fresh one, or one taken over because it expired or its process is gone); else
        neither (a live claimant is asking it)."""
        now = utcnow()
        owner = f"{self._process.hostname}:{self._process.pid}:{uuid.uuid4().hex[:12]}"
        with self.warehouse.transaction() as con:
            found = _stored(con, cache_key)
            if found is not None:
                self._remember_answered(cache_key)
                return Claim(answer=found)
            lease = {"cache_key": cache_key, "owner": owner, "activity_id": self.activity_id,
                     "hostname": self._process.hostname, "pid": self._process.pid, "process_start": self._process.start,
                     "acquired_at": now, "expires_at": now + timedelta(seconds=ttl_s)}
            insert_rows(con, "model_call_lease", [lease])
            holder, host, pid, start, expired = con.execute(
                "SELECT owner, hostname, pid, process_start, expires_at <= ? FROM model_call_lease WHERE cache_key = ?",
                [now, cache_key]).fetchone()
            if holder != owner:
                lapsed = "expired" if expired else self._gone(host, pid, start)
                if lapsed is None:
                    return Claim()
                con.execute("UPDATE model_call_lease SET owner = ?, activity_id = ?, hostname = ?, pid = ?, process_start = ?,"
                            " acquired_at = ?, expires_at = ? WHERE cache_key = ?",
                            [*(lease[k] for k in ("owner", "activity_id", "hostname", "pid", "process_start", "acquired_at",
                                                  "expires_at")), cache_key])
                logger.warning("model call %s: took over the lease of process %s on %s (%s)", cache_key[:16], pid, host, lapsed)
        with self._lock:
            self._held[cache_key] = owner
        return Claim(held=True)

    def _gone(self, host: str, pid: int, start: str | None) -> str | None:
        """Why a live-looking lease of another claim no longer holds, or None while it does. Only processes of this
        host can be checked; this very process asks a key from one thread at a time, so its own lease is stale."""
        if host != self._process.hostname:
            return None
        if (pid, start) == (self._process.pid, self._process.start):
            return "left by this process"
        return None if process_alive(pid, start) else "its process is gone"

    def release(self, cache_key: str) -> None:
        """Give up this store's lease on ``cache_key`` when no call was logged for it (``record`` ends it otherwise)."""
        with self._lock:
            owner = self._held.pop(cache_key, None)
        if owner is not None:
            with self.warehouse.transaction() as con:
                con.execute("DELETE FROM model_call_lease WHERE cache_key = ? AND owner = ?", [cache_key, owner])

    def _remember_answered(self, cache_key: str) -> None:
        with self._lock:
            if self._answered is not None:  # not yet loaded: the load will read this row too
                self._answered.add(bytes.fromhex(cache_key[:32]))

    def record(self, row: Mapping[str, Any]) -> str:
        """Log a call; its lease ends in the same transaction, so a waiter sees either the lease or the call."""
        now = utcnow()
        with self._lock:
            owner = self._held.get(row["cache_key"])
        with self.warehouse.transaction() as con:
            call_id = call_entity_id(con, row["cache_key"])
            insert_rows(
                con,
                "model_call",
                [{**row, "params": canonical_json(row["params"]), "call_id": call_id, "activity_id": self.activity_id, "called_at": now}],
            )
            log = ActivityLog(con, self.activity_id)
            attributes = {k: row[k] for k in ("provider", "model", "role", "template_id", "template_version", "status")}
            log.entities([Entity(call_id, "model_call", row["prompt_sha256"], attributes)])
            log.generated([call_id])
            if owner is not None:
                con.execute("DELETE FROM model_call_lease WHERE cache_key = ? AND owner = ?", [row["cache_key"], owner])
        with self._lock:
            self._held.pop(row["cache_key"], None)
        if row["status"] == "ok":
            self._remember_answered(row["cache_key"])
        return call_id


def call_entity_id(con: duckdb.DuckDBPyConnection, cache_key: str) -> str:
    """The id of the next call logged for ``cache_key``: derived from the request (its cache key) and how many calls
    of it are logged already, never from the activity or the clock, so the same requests met in the same order
    (a failed attempt, then its retry) give the same ids in any warehouse. Read in the logging transaction, which
    holds the warehouse lock, so two calls never count the same."""
    ((earlier,),) = con.execute("SELECT count(*) FROM model_call WHERE cache_key = ?", [cache_key]).fetchall()
    return entity_id("model_call", digest_of([cache_key, earlier]))


def _stored(con: duckdb.DuckDBPyConnection, cache_key: str) -> StoredCall | None:
    """The first successful answer logged for ``cache_key``."""
    found = con.execute(
        f"SELECT {_RESPONSE_COLUMNS} FROM model_call WHERE cache_key = ? AND status = 'ok' ORDER BY called_at, call_id LIMIT 1",
        [cache_key],
    ).fetchone()
    if found is None:
        return None
    call_id, text, tokens_in, tokens_out, latency, attempts, status, error, provider_model = found
    return StoredCall(call_id, ModelResponse(text or "", tokens_in, tokens_out, None, latency, attempts, status, error, provider_model))


def call_summary(warehouse: Warehouse, activity_id: str) -> dict[str, Any]:
    """Requests, statuses, tokens and latency of one activity's calls, for step metadata."""
    frame = warehouse.query(
        "SELECT role, status, count(*) AS n, sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)) AS tokens,"
        " round(avg(latency_ms), 1) AS mean_latency_ms FROM model_call WHERE activity_id = ? GROUP BY ALL ORDER BY ALL",
        [activity_id],
    )
    return {"calls": json.loads(frame.to_json(orient="records"))}


def role_caller(warehouse: Warehouse, activity_id: str, providers: ModelProvidersResource, role: str,
                repair: Callable[[ModelRequest, str, str], ModelRequest], *,
                offline: OfflineAnswers) -> tuple[ModelCaller, RoleConfig]:
    """The provider layer's ``role`` for one step's calls: cached and logged in ``model_call`` under the step's
    activity, answers validated with one ``repair`` request (``offline``: the pipeline's answers, should the role
    be the heuristic provider); and the role's settings for provenance."""
    config = providers.role(role)
    endpoint = config.provider + (f"@{config.base_url}" if config.base_url else "")
    caller = leased_caller(endpoint, providers.provider_for(role, offline=offline), WarehouseCallStore(warehouse, activity_id),
                           CallBudget(None, None), RateLimiter(None), repair, providers)
    return caller, config


def leased_caller(endpoint: str, provider: ModelProvider, store: WarehouseCallStore, budget: CallBudget, limiter: RateLimiter,
                  repair: Callable[[ModelRequest, str, str], ModelRequest], providers: ModelProvidersResource) -> ModelCaller:
    """A caller that claims each request in the warehouse before sending it, for as long as the providers'
    timeouts and retries can make it take."""
    transport = providers.transport()
    lease_s = lease_seconds(transport["timeout_s"], transport["max_retries"], transport["max_backoff_s"])
    return ModelCaller(endpoint, provider, store, budget, limiter, repair, leases=store, lease_s=lease_s)
