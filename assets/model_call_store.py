"""The warehouse side of model calls: the call log, the cache lookup, and each call as an entity.

Each call is committed on its own as soon as it returns, so a crash loses no answer that arrived and a
resumed run finds it in the cache. Calls are entities (``model_call:<digest>``) so ``provenance()`` can
show which model, template and prompt produced a record.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from assets.lib.model_calls import CallBudget, ModelCaller, RateLimiter, StoredCall
from resources.model_providers import ModelProvidersResource, ModelRequest, ModelResponse, RoleConfig
from warehouse.db import Warehouse, insert_rows
from warehouse.ids import canonical_json, digest_of, entity_id
from warehouse.lineage import ActivityLog, Entity, utcnow

_RESPONSE_COLUMNS = "call_id, response_text, input_tokens, output_tokens, latency_ms, attempts, status, error, provider_model"


class WarehouseCallStore:
    """``CallStore`` over the ``model_call`` table; safe to share between worker threads (the warehouse lock serializes)."""

    def __init__(self, warehouse: Warehouse, activity_id: str) -> None:
        self.warehouse = warehouse
        self.activity_id = activity_id
        self._answered: set[bytes] | None = None  # loaded on the first lookup, so a run with nothing pending skips it
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
            found = con.execute(
                f"SELECT {_RESPONSE_COLUMNS} FROM model_call WHERE cache_key = ? AND status = 'ok'"
                " ORDER BY called_at, call_id LIMIT 1",
                [cache_key],
            ).fetchone()
        if found is None:
            return None
        call_id, text, tokens_in, tokens_out, latency, attempts, status, error, provider_model = found
        return StoredCall(call_id, ModelResponse(text or "", tokens_in, tokens_out, None, latency, attempts, status, error, provider_model))

    def record(self, row: Mapping[str, Any]) -> str:
        now = utcnow()
        call_id = entity_id("model_call", digest_of([row["cache_key"], self.activity_id, now.isoformat(), row["status"]]))
        with self.warehouse.transaction() as con:
            insert_rows(
                con,
                "model_call",
                [{**row, "params": canonical_json(row["params"]), "call_id": call_id, "activity_id": self.activity_id, "called_at": now}],
            )
            log = ActivityLog(con, self.activity_id)
            attributes = {k: row[k] for k in ("provider", "model", "role", "template_id", "template_version", "status")}
            log.entities([Entity(call_id, "model_call", row["prompt_sha256"], attributes)])
            log.generated([call_id])
        if row["status"] == "ok":
            with self._lock:
                if self._answered is not None:  # not yet loaded: the load will read this row too
                    self._answered.add(bytes.fromhex(row["cache_key"][:32]))
        return call_id


def call_summary(warehouse: Warehouse, activity_id: str) -> dict[str, Any]:
    """Requests, statuses, tokens and latency of one activity's calls, for step metadata."""
    frame = warehouse.query(
        "SELECT role, status, count(*) AS n, sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)) AS tokens,"
        " round(avg(latency_ms), 1) AS mean_latency_ms FROM model_call WHERE activity_id = ? GROUP BY ALL ORDER BY ALL",
        [activity_id],
    )
    return {"calls": json.loads(frame.to_json(orient="records"))}


def role_caller(warehouse: Warehouse, activity_id: str, providers: ModelProvidersResource, role: str,
                repair: Callable[[ModelRequest, str, str], ModelRequest]) -> tuple[ModelCaller, RoleConfig]:
    """The provider layer's ``role`` for one step's calls: cached and logged in ``model_call`` under the step's
    activity, answers validated with one ``repair`` request; and the role's settings for provenance."""
    config = providers.role(role)
    endpoint = config.provider + (f"@{config.base_url}" if config.base_url else "")
    caller = ModelCaller(endpoint, providers.provider_for(role), WarehouseCallStore(warehouse, activity_id),
                         CallBudget(None, None), RateLimiter(None), repair)
    return caller, config
