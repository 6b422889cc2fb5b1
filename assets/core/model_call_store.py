"""The warehouse side of model calls: the call log, the cache lookup, the claims, and each call as an entity.

Each call is committed as soon as it returns, so a resumed run finds every answer that was logged in the
cache. A store with ``write_behind`` commits the calls of all its threads from one writer thread, a group per
transaction, while the asking thread goes on (its call id is fixed when the request is claimed); ``flush`` waits
until every call recorded so far is committed, and the item loop calls it before each batch commit, so no stored
row names a call that is not logged. A crash loses only answers not yet committed, as it would a moment earlier
without it: their leases lapse and they are asked again. Calls are entities (``model_call:<digest>``) so ``provenance()`` can
show which model, template and prompt produced a record. Before a request is sent its cache key is leased
in ``model_call_lease``, so a second run or step process asking the same key waits for the answer instead of
paying for it again (the warehouse lock makes the claim one atomic transaction across processes).
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
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

    def __init__(self, warehouse: Warehouse, activity_id: str, *, write_behind: bool = False) -> None:
        self.warehouse = warehouse
        self.activity_id = activity_id
        self._answered: set[bytes] | None = None  # loaded on the first lookup, so a run with nothing pending skips it
        self._held: dict[str, str] = {}  # cache key -> owner of the lease this store holds on it
        self._earlier: dict[str, int] = {}  # cache key -> calls logged for it when this store claimed it
        self._process = this_process()
        self._lock = threading.Lock()
        self._log = _CallLog(warehouse, activity_id, self.decide_claims) if write_behind else None

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
        queued = self._log.answer(cache_key) if self._log is not None else None
        if queued is not None:  # answered by this store a moment ago, not committed yet
            return queued
        with self.warehouse.transaction() as con:
            return _stored(con, cache_key)

    def claim(self, cache_key: str, ttl_s: float) -> Claim:
        """The stored answer if another process got it meanwhile; else this store's lease on ``cache_key`` (a fresh
        one, or one taken over because it expired or its process is gone); else neither (a live claimant is asking
        it). With ``write_behind``, claims asked by several threads at once are decided together, in the writer
        thread's next transaction."""
        if self._log is not None:
            return self._log.claim((cache_key, ttl_s))
        return self._claim_all([(cache_key, ttl_s)])[0]

    def claim_many(self, cache_keys: Sequence[str], ttl_s: float) -> None:
        """Claim keys about to be asked, in one group: each ends held by this store, found answered (``cached``
        then finds it), or left to a live claimant (asking it waits as usual)."""
        asked = [(key, ttl_s) for key in cache_keys]
        if self._log is not None:
            self._log.claim_group(asked)
        else:
            self._claim_all(asked)

    def holds(self, cache_key: str) -> bool:
        with self._lock:
            return cache_key in self._held

    def _claim_all(self, asked: list[tuple[str, float]]) -> list[Claim]:
        with self.warehouse.transaction() as con:
            return self.decide_claims(con, asked)

    def decide_claims(self, con: duckdb.DuckDBPyConnection, asked: list[tuple[str, float]]) -> list[Claim]:
        """Decide a group of claims in the caller's transaction, in a fixed number of statements whatever the
        group's size (the warehouse lock makes look-up and lease one step across processes). A key asked twice in
        the group is held by its first claim; the second waits for it. The store notes its leases at once: the
        transaction commits before any claimant learns it holds one."""
        now = utcnow()
        keys = list(dict.fromkeys(key for key, _ in asked))
        claims: list[Claim] = []
        held: dict[str, tuple[str, int]] = {}
        calls = _calls_of(con, keys)
        leases = {key: rest for key, *rest in con.execute(
            "SELECT cache_key, hostname, pid, process_start, expires_at <= ? FROM model_call_lease"
            " WHERE cache_key IN (SELECT unnest(?::VARCHAR[]))", [now, keys]).fetchall()}
        fresh = []
        for cache_key, ttl_s in asked:
            found, earlier = calls.get(cache_key, (None, 0))
            if cache_key in held:
                claims.append(Claim())
                continue
            if found is not None:
                claims.append(Claim(answer=found))
                continue
            owner = f"{self._process.hostname}:{self._process.pid}:{uuid.uuid4().hex[:12]}"
            lease = {"cache_key": cache_key, "owner": owner, "activity_id": self.activity_id,
                     "hostname": self._process.hostname, "pid": self._process.pid, "process_start": self._process.start,
                     "acquired_at": now, "expires_at": now + timedelta(seconds=ttl_s)}
            if cache_key not in leases:
                fresh.append(lease)
            else:
                host, pid, start, expired = leases[cache_key]
                lapsed = "expired" if expired else self._gone(host, pid, start)
                if lapsed is None:
                    claims.append(Claim())
                    continue
                con.execute("UPDATE model_call_lease SET owner = ?, activity_id = ?, hostname = ?, pid = ?,"
                            " process_start = ?, acquired_at = ?, expires_at = ? WHERE cache_key = ?",
                            [*(lease[k] for k in ("owner", "activity_id", "hostname", "pid", "process_start",
                                                  "acquired_at", "expires_at")), cache_key])
                logger.warning("model call %s: took over the lease of process %s on %s (%s)", cache_key[:16], pid,
                               host, lapsed)
            held[cache_key] = (owner, earlier)  # nobody logs the key while the lease is held: its next call id
            claims.append(Claim(held=True))
        insert_rows(con, "model_call_lease", fresh, conflict="error")
        with self._lock:
            for cache_key, (owner, earlier) in held.items():
                self._held[cache_key] = owner
                self._earlier[cache_key] = earlier
        for (cache_key, _), claim in zip(asked, claims):
            if claim.answer is not None:
                self._remember_answered(cache_key)
        return claims

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
            self._earlier.pop(cache_key, None)
        if owner is not None:
            with self.warehouse.transaction() as con:
                con.execute("DELETE FROM model_call_lease WHERE cache_key = ? AND owner = ?", [cache_key, owner])

    def _remember_answered(self, cache_key: str) -> None:
        with self._lock:
            if self._answered is not None:  # not yet loaded: the load will read this row too
                self._answered.add(bytes.fromhex(cache_key[:32]))

    def record(self, row: Mapping[str, Any]) -> str:
        """Log a call; its lease ends in the same transaction, so a waiter sees either the lease or the call.
        With ``write_behind`` the call is queued for the writer thread and its id returned at once."""
        key = row["cache_key"]
        with self._lock:
            owner = self._held.get(key)
            earlier = self._earlier.pop(key, None)
        logged = {**row, "params": canonical_json(row["params"]), "activity_id": self.activity_id, "called_at": utcnow()}
        if self._log is not None and earlier is not None:
            call_id = entity_id("model_call", digest_of([key, earlier]))
            self._log.add({**logged, "call_id": call_id}, owner)
        else:
            with self.warehouse.transaction() as con:
                call_id = call_entity_id(con, key)
                _log_calls(con, self.activity_id, [{**logged, "call_id": call_id}], [(key, owner)] if owner else [])
        with self._lock:
            self._held.pop(key, None)
        if row["status"] == "ok":
            self._remember_answered(key)
        return call_id

    def flush(self) -> None:
        """Return once every call recorded so far is committed (at once without ``write_behind``); raises what
        stopped the writer (the warehouse failing as a whole)."""
        if self._log is not None:
            self._log.flush()

    def close(self) -> None:
        """Commit what is queued, stop the writer thread, and give up the leases claimed ahead but never asked
        (a run stopped early, a budget spent)."""
        if self._log is not None:
            self._log.close()
        with self._lock:
            left, self._held = dict(self._held), {}
            self._earlier.clear()
        if left:
            with self.warehouse.transaction() as con:
                con.execute("DELETE FROM model_call_lease WHERE list_contains(?, cache_key || '|' || owner)",
                            [[f"{key}|{owner}" for key, owner in left.items()]])


class _Ticket:
    """One claim waiting for the writer thread's next transaction."""

    def __init__(self, asked: tuple[str, float]) -> None:
        self.asked = asked
        self.answer: Claim | None = None
        self.error: BaseException | None = None
        self.done = False

    def result(self) -> Claim:
        if self.error is not None:
            raise self.error
        return self.answer  # type: ignore[return-value]


class _CallLog:
    """The writer thread of a write-behind store: in one transaction at a time, commits the queued calls (each with
    the end of its lease) and decides the claims asked meanwhile, so the asking threads share commits instead of
    queueing for the warehouse one by one. Its first failure is kept and raised by every later ``add``, ``claim``
    and ``flush``."""

    def __init__(self, warehouse: Warehouse, activity_id: str,
                 decide_claims: Callable[[duckdb.DuckDBPyConnection, list[tuple[str, float]]], list[Claim]]) -> None:
        self.warehouse = warehouse
        self.activity_id = activity_id
        self._decide_claims = decide_claims
        self._claims: list[_Ticket] = []
        self._queue: list[tuple[dict[str, Any], str | None]] = []
        self._answers: dict[str, StoredCall] = {}  # cache key -> its answer, from add until committed
        self._queued = 0     # calls ever added
        self._committed = 0  # calls ever committed (or given up with the error)
        self._error: BaseException | None = None
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._write, daemon=True, name="model-call-log")
        self._thread.start()

    def add(self, row: dict[str, Any], owner: str | None) -> None:
        with self._cond:
            if self._error is not None:
                raise self._error
            self._queue.append((row, owner))
            self._queued += 1
            if row["status"] == "ok":
                self._answers.setdefault(row["cache_key"], _as_stored(row))
            self._cond.notify_all()

    def answer(self, cache_key: str) -> StoredCall | None:
        with self._cond:
            return self._answers.get(cache_key)

    def claim(self, asked: tuple[str, float]) -> Claim:
        return self.claim_group([asked])[0]

    def claim_group(self, asked: list[tuple[str, float]]) -> list[Claim]:
        """Decided with the next transaction, together with whatever else is queued then."""
        tickets = [_Ticket(a) for a in asked]
        with self._cond:
            if self._error is not None:
                raise self._error
            self._claims.extend(tickets)
            self._cond.notify_all()
            while not all(t.done for t in tickets):
                self._cond.wait()
        return [t.result() for t in tickets]

    def flush(self) -> None:
        with self._cond:
            target = self._queued
            while self._committed < target and self._error is None:
                self._cond.wait()
            if self._error is not None:
                raise self._error

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        if self._error is not None:
            raise self._error

    def _write(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._claims and not self._closed:
                    self._cond.wait()
                if not self._queue and not self._claims:
                    return
                group, self._queue = self._queue, []
                claims, self._claims = self._claims, []
            try:
                with self.warehouse.transaction() as con:
                    if group:
                        _log_calls(con, self.activity_id, [row for row, _ in group],
                                   [(row["cache_key"], owner) for row, owner in group if owner])
                    decided = self._decide_claims(con, [t.asked for t in claims]) if claims else []
                for ticket, claim in zip(claims, decided, strict=True):
                    ticket.answer = claim
            except BaseException as exc:  # noqa: BLE001 - handed to the asking threads by add, claim and flush
                logger.error("model call log: %d call(s) and %d claim(s) could not be committed: %s", len(group),
                             len(claims), exc)
                with self._cond:
                    self._error = exc
                    for ticket in claims:
                        ticket.error = exc
            with self._cond:
                for ticket in claims:
                    ticket.done = True
                self._committed += len(group)
                for row, _ in group:  # committed: cached() finds it in the warehouse now
                    queued = self._answers.get(row["cache_key"])
                    if queued is not None and queued.call_id == row["call_id"]:
                        del self._answers[row["cache_key"]]
                self._cond.notify_all()


def _log_calls(con: duckdb.DuckDBPyConnection, activity_id: str, rows: list[dict[str, Any]],
               leases: list[tuple[str, str]]) -> None:
    """Calls as ``model_call`` rows and ``model_call`` entities generated by the activity, and the leases they end.
    Call ids are new by construction (the count of the key's logged calls, taken under its lease or in this very
    transaction), so the rows go in without conflict checks."""
    insert_rows(con, "model_call", rows, conflict="error")
    log = ActivityLog(con, activity_id)
    log.entities([Entity(r["call_id"], "model_call", r["prompt_sha256"],
                         {k: r[k] for k in ("provider", "model", "role", "template_id", "template_version", "status")})
                  for r in rows], new=True)
    log.generated([r["call_id"] for r in rows], new=True)
    if leases:
        con.execute("DELETE FROM model_call_lease WHERE list_contains(?, cache_key || '|' || owner)",
                    [[f"{key}|{owner}" for key, owner in leases]])


def logged_calls(con: duckdb.DuckDBPyConnection, cache_key: str) -> int:
    ((n,),) = con.execute("SELECT count(*) FROM model_call WHERE cache_key = ?", [cache_key]).fetchall()
    return n


def call_entity_id(con: duckdb.DuckDBPyConnection, cache_key: str) -> str:
    """The id of the next call logged for ``cache_key``: derived from the request (its cache key) and how many calls
    of it are logged already, never from the activity or the clock, so the same requests met in the same order
    (a failed attempt, then its retry) give the same ids in any warehouse. Read in the logging transaction, which
    holds the warehouse lock, so two calls never count the same."""
    return entity_id("model_call", digest_of([cache_key, logged_calls(con, cache_key)]))


def _calls_of(con: duckdb.DuckDBPyConnection, keys: list[str]) -> dict[str, tuple[StoredCall | None, int]]:
    """Per cache key with logged calls: its first successful answer (None if none succeeded) and how many calls
    are logged for it, in one statement."""
    found: dict[str, tuple[StoredCall | None, int]] = {}
    for key, n, *first in con.execute(
            f"SELECT cache_key, count(*), {', '.join(f'arg_min({c}, (status <> {chr(39)}ok{chr(39)}, called_at, call_id))' for c in _RESPONSE_COLUMNS.split(', '))}"
            " FROM model_call WHERE cache_key IN (SELECT unnest(?::VARCHAR[])) GROUP BY cache_key", [keys]).fetchall():
        row = dict(zip(_RESPONSE_COLUMNS.split(", "), first))
        found[key] = (_as_stored(row) if row["status"] == "ok" else None, n)
    return found


def _as_stored(row: Mapping[str, Any]) -> StoredCall:
    return StoredCall(row["call_id"], ModelResponse(row["response_text"] or "", row["input_tokens"], row["output_tokens"], None,
                                                    row["latency_ms"], row["attempts"], row["status"], row["error"],
                                                    row["provider_model"]))


def _stored(con: duckdb.DuckDBPyConnection, cache_key: str) -> StoredCall | None:
    """The first successful answer logged for ``cache_key``."""
    found = con.execute(
        f"SELECT {_RESPONSE_COLUMNS} FROM model_call WHERE cache_key = ? AND status = 'ok' ORDER BY called_at, call_id LIMIT 1",
        [cache_key],
    ).fetchone()
    if found is None:
        return None
    return _as_stored(dict(zip(_RESPONSE_COLUMNS.split(", "), found)))


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
                offline: OfflineAnswers, write_behind: bool = False,
                budget: CallBudget | None = None) -> tuple[ModelCaller, RoleConfig]:
    """The provider layer's ``role`` for one step's calls: cached and logged in ``model_call`` under the step's
    activity, answers validated with one ``repair`` request (``offline``: the pipeline's answers, should the role
    be the heuristic provider); and the role's settings for provenance. With ``write_behind`` the caller's store
    must be flushed before rows naming its calls are committed (the item loop's ``before_write``), and closed.
    ``budget`` bounds the requests and tokens it may spend (unbounded by default)."""
    config = providers.role(role)
    endpoint = config.provider + (f"@{config.base_url}" if config.base_url else "")
    caller = leased_caller(endpoint, providers.provider_for(role, offline=offline),
                           WarehouseCallStore(warehouse, activity_id, write_behind=write_behind),
                           budget or CallBudget(None, None), RateLimiter(None), repair, providers)
    return caller, config


def leased_caller(endpoint: str, provider: ModelProvider, store: WarehouseCallStore, budget: CallBudget, limiter: RateLimiter,
                  repair: Callable[[ModelRequest, str, str], ModelRequest], providers: ModelProvidersResource) -> ModelCaller:
    """A caller that claims each request in the warehouse before sending it, for as long as the providers'
    timeouts and retries can make it take."""
    transport = providers.transport()
    lease_s = lease_seconds(transport["timeout_s"], transport["max_retries"], transport["max_backoff_s"])
    return ModelCaller(endpoint, provider, store, budget, limiter, repair, leases=store, lease_s=lease_s)
