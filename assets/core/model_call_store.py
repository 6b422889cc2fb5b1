"""The warehouse side of model calls: the call log, the cache lookup, the claims, and each call as an entity.

Every call is kept, so a resumed run finds every answer that was logged in the cache. A store makes each answer
durable the moment it arrives, appended and fsynced to its own shard under ``<warehouse file>.call_log/``
(``call_shards``), and commits the calls of all its threads from one committer thread, a group per transaction,
while the asking thread goes on (its call id is fixed when the request is claimed): the call path waits for an
fsync, never for a warehouse commit. ``flush`` waits until every call recorded so far is committed, and the item
loop calls it before each batch commit, so no stored row names a call that is not logged. A process that
dies leaves its shard: the next store opened on the warehouse commits its complete calls, once each, and drops a
torn last record. Calls are entities (``model_call:<digest>``) so ``provenance()`` can show which model, template
and prompt produced a record. Before a request is sent its cache key is leased in ``model_call_lease``, so a
second run or step process asking the same key waits for the answer instead of paying for it again (the
warehouse lock makes the claim one atomic transaction across processes); the store ends the lease when it commits
the call. A store must be closed: that commits what is queued and stops its committer.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from assets.core.call_shards import ShardWriter, recover_shards
from assets.core.model_calls import CallBudget, Claim, ModelCaller, RateLimiter, StoredCall, lease_seconds
from resources.model_providers import ModelProvidersResource, RoleConfig
from resources.models.heuristic import OfflineAnswers
from resources.models.types import ModelProvider, ModelRequest, ModelResponse
from warehouse.db import Warehouse, insert_rows
from warehouse.ids import canonical_json, digest_of, entity_id
from warehouse.lineage import ActivityLog, Entity, process_alive, this_process, utcnow

logger = logging.getLogger(__name__)

# Owners of the leases this process's open stores hold, or whose call they logged but have not committed yet (the
# commit ends the lease): another store of the process waits for such a lease rather than take it over as stale.
_LIVE_LEASES: set[str] = set()
_LIVE_LEASES_LOCK = threading.Lock()


def _lease_ended(owners: Sequence[str]) -> None:
    with _LIVE_LEASES_LOCK:
        _LIVE_LEASES.difference_update(owners)


_RESPONSE_COLUMNS = "call_id, response_text, input_tokens, output_tokens, latency_ms, attempts, status, error, provider_model"


class WarehouseCallStore:
    """``CallStore`` over the ``model_call`` table and ``CallLeases`` over ``model_call_lease``, written behind
    through its call log; safe to share between worker threads."""

    def __init__(self, warehouse: Warehouse, activity_id: str, *, commit_every: int = 512,
                 commit_after_s: float = 1.0, shard_bytes: int = 64 << 20) -> None:
        self.warehouse = warehouse
        self.activity_id = activity_id
        self._answered: set[bytes] | None = None  # loaded on the first lookup, so a run with nothing pending skips it
        self._unanswered: dict[str, int] | None = None  # key -> calls logged, none answered (for unleased calls)
        self._held: dict[str, str] = {}  # cache key -> owner of the lease this store holds on it
        self._earlier: dict[str, int] = {}  # cache key -> calls logged for it when this store claimed it
        self._process = this_process()
        self._lock = threading.Lock()
        recover_calls(warehouse)  # before any lookup: answers a dead process left are found, not asked again
        self._log = _CallLog(warehouse, self.decide_claims, commit_every=commit_every, commit_after_s=commit_after_s,
                             shard_bytes=shard_bytes)

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
        # answered by this store a moment ago (not committed yet), or read with other lookups in one transaction
        return self._log.answer(cache_key) or self._log.lookup(cache_key)

    def claim(self, cache_key: str, ttl_s: float) -> Claim:
        """The stored answer if another process got it meanwhile; else this store's lease on ``cache_key`` (a fresh
        one, or one taken over because it expired or its process is gone); else neither (a live claimant is asking
        it). Claims asked by several threads at once are decided together, in the committer's next transaction."""
        return self._log.claim((cache_key, ttl_s))

    def claim_many(self, cache_keys: Sequence[str], ttl_s: float) -> None:
        """Claim keys about to be asked, in one group: each ends held by this store, found answered (``cached``
        then finds it), or left to a live claimant (asking it waits as usual)."""
        self._log.claim_group([(key, ttl_s) for key in cache_keys])

    def holds(self, cache_key: str) -> bool:
        with self._lock:
            return cache_key in self._held

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
            "SELECT cache_key, owner, hostname, pid, process_start, expires_at <= ? FROM model_call_lease"
            " WHERE cache_key IN (SELECT unnest(?::VARCHAR[]))", [now, keys]).fetchall()}
        fresh = []
        for cache_key, ttl_s in asked:
            found, earlier = calls.get(cache_key, (None, 0))
            earlier += self._log.queued_calls(cache_key)  # calls of this store's shard not in the warehouse yet count too
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
                held_by, host, pid, start, expired = leases[cache_key]
                lapsed = "expired" if expired else self._gone(held_by, host, pid, start)
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
        with _LIVE_LEASES_LOCK:
            _LIVE_LEASES.update(owner for owner, _ in held.values())
        for (cache_key, _), claim in zip(asked, claims):
            if claim.answer is not None:
                self._remember_answered(cache_key)
        return claims

    def _gone(self, owner: str, host: str, pid: int, start: str | None) -> str | None:
        """Why a live-looking lease of another claim no longer holds, or None while it does. Only processes of this
        host can be checked; this very process asks a key from one thread at a time, so its own lease is stale
        unless an open store holds it or has its call still to commit."""
        if host != self._process.hostname:
            return None
        if (pid, start) == (self._process.pid, self._process.start):
            with _LIVE_LEASES_LOCK:
                return None if owner in _LIVE_LEASES else "left by this process"
        return None if process_alive(pid, start) else "its process is gone"

    def release(self, cache_key: str) -> None:
        """Give up this store's lease on ``cache_key`` when no call was logged for it (``record`` ends it otherwise)."""
        with self._lock:
            owner = self._held.pop(cache_key, None)
            self._earlier.pop(cache_key, None)
        if owner is not None:
            with self.warehouse.transaction() as con:
                con.execute("DELETE FROM model_call_lease WHERE cache_key = ? AND owner = ?", [cache_key, owner])
            _lease_ended([owner])

    def _remember_answered(self, cache_key: str) -> None:
        with self._lock:
            if self._answered is not None:  # not yet loaded: the load will read this row too
                self._answered.add(bytes.fromhex(cache_key[:32]))

    def record(self, row: Mapping[str, Any]) -> str:
        """Log a call: durable in the shard when this returns, committed later with the end of its lease (in one
        transaction, so a waiter sees either the lease or the call)."""
        key = row["cache_key"]
        with self._lock:
            owner = self._held.get(key)
            earlier = self._earlier.pop(key, None)
        logged = {**row, "params": canonical_json(row["params"]), "activity_id": self.activity_id, "called_at": utcnow()}
        if earlier is None:
            earlier = self._count_unleased(key, row["status"])
        call_id = call_entity_id(key, earlier)
        self._log.add({**logged, "call_id": call_id}, owner)
        with self._lock:
            self._held.pop(key, None)
        if row["status"] == "ok":
            self._remember_answered(key)
        return call_id

    def _count_unleased(self, cache_key: str, status: str) -> int:
        """How many calls of ``cache_key`` are logged before this one, for a store used without leases
        (by this process alone, as ``ModelCaller`` says): the keys logged but never answered are read once, then
        this store counts its own calls; a key with an answer is a cache hit and never asked again."""
        with self._lock:
            if self._unanswered is None:
                with self.warehouse.transaction() as con:
                    self._unanswered = dict(con.execute(
                        "SELECT cache_key, count(*) FROM model_call GROUP BY cache_key HAVING NOT bool_or(status = 'ok')"
                    ).fetchall())
            earlier = self._unanswered.pop(cache_key, 0)
            if status != "ok":
                self._unanswered[cache_key] = earlier + 1
            return earlier

    def flush(self) -> None:
        """Return once every call recorded so far is committed; raises what stopped the committer (the warehouse
        failing as a whole)."""
        self._log.flush()

    def close(self) -> None:
        """Commit what is queued, stop the writer thread, and give up the leases claimed ahead but never asked
        (a run stopped early, a budget spent)."""
        self._log.close()
        with self._lock:
            left, self._held = dict(self._held), {}
            self._earlier.clear()
        if left:
            with self.warehouse.transaction() as con:
                _end_leases(con, list(left.items()))
            _lease_ended(list(left.values()))


class _Ticket:
    """One claim (a cache key and lease seconds) or lookup (a cache key) waiting for the committer's next transaction."""

    def __init__(self, asked: Any) -> None:
        self.asked = asked
        self.answer: Any = None
        self.error: BaseException | None = None
        self.done = False

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.answer


class _Queued(NamedTuple):
    record: dict[str, Any]  # as in the shard: the model_call row (called_at as ISO text) and the lease it ends
    shard: ShardWriter


class _CallLog:
    """The shard and the committer of a call store. ``add`` makes a call durable in this store's shard (a
    shared fsync) before it returns; the committer thread commits the queued calls, each with the end of its lease,
    every ``commit_every`` calls or ``commit_after_s`` seconds, at ``flush`` and ``close``; claims and lookups asked
    meanwhile are decided and read together in the committer's next transaction, so the asking threads share
    transactions instead of queueing for the warehouse one by one. A shard is replaced once past ``shard_bytes``, and
    removed once all its calls are committed. Its first failure is kept and raised by every later ``add``, ``claim``
    and ``flush`` (the calls stay in the shard, committed by the next store opened on the warehouse)."""

    def __init__(self, warehouse: Warehouse,
                 decide_claims: Callable[[duckdb.DuckDBPyConnection, list[tuple[str, float]]], list[Claim]], *,
                 commit_every: int, commit_after_s: float, shard_bytes: int) -> None:
        self.warehouse = warehouse
        self._decide_claims = decide_claims
        self._commit_every = commit_every
        self._commit_after_s = commit_after_s
        self._shard_bytes = shard_bytes
        self._prefix = f"{socket.gethostname()}-{os.getpid()}"
        self._shard = ShardWriter(shard_directory(warehouse), self._prefix)
        self._outstanding: dict[ShardWriter, int] = {self._shard: 0}  # shard -> its calls not yet committed
        self._claims: list[_Ticket] = []
        self._lookups: list[_Ticket] = []
        self._queue: list[_Queued] = []
        self._oldest = 0.0   # monotonic time the queue's first call was added
        self._queued_keys: Counter[str] = Counter()  # cache key -> queued calls, not yet in a transaction
        self._answers: dict[str, StoredCall] = {}  # cache key -> its answer, from add until committed
        self._queued = 0     # calls ever added
        self._committed = 0  # calls ever committed (or given up with the error)
        self._flush_to = 0   # commit at once up to this many calls added
        self._error: BaseException | None = None
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._write, daemon=True, name="model-call-log")
        self._thread.start()

    def add(self, row: dict[str, Any], owner: str | None) -> None:
        """Append the call to the shard and return once it is durable; the committer takes it from there."""
        record = {"row": {**row, "called_at": row["called_at"].isoformat()}, "lease_owner": owner}
        with self._cond:
            if self._error is not None:
                raise self._error
            shard = self._shard
            upto = shard.append(record)
            self._outstanding[shard] += 1
            if shard.size >= self._shard_bytes:
                self._shard = ShardWriter(shard.path.parent, self._prefix)
                self._outstanding[self._shard] = 0
            if not self._queue:  # the committer, idle, learns when this call falls due
                self._oldest = time.monotonic()
                self._cond.notify_all()
            self._queue.append(_Queued(record, shard))
            self._queued_keys[row["cache_key"]] += 1
            self._queued += 1
            if row["status"] == "ok":
                self._answers.setdefault(row["cache_key"], _as_stored(row))
            if len(self._queue) >= self._commit_every:
                self._cond.notify_all()
        shard.sync(upto)

    def answer(self, cache_key: str) -> StoredCall | None:
        with self._cond:
            return self._answers.get(cache_key)

    def queued_calls(self, cache_key: str) -> int:
        """Calls of ``cache_key`` added but not yet in a transaction (the warehouse does not count them yet)."""
        with self._cond:
            return self._queued_keys.get(cache_key, 0)

    def claim(self, asked: tuple[str, float]) -> Claim:
        return self.claim_group([asked])[0]

    def claim_group(self, asked: list[tuple[str, float]]) -> list[Claim]:
        """Decided with the next transaction, together with whatever else is queued then."""
        return self._wait_for([_Ticket(a) for a in asked], lookups=False)

    def lookup(self, cache_key: str) -> StoredCall | None:
        """The first answer committed for ``cache_key``, read in the next transaction with every lookup asked
        meanwhile (so a re-run's many cache hits share transactions)."""
        return self._wait_for([_Ticket(cache_key)], lookups=True)[0]

    def _wait_for(self, tickets: list[_Ticket], *, lookups: bool) -> list[Any]:
        with self._cond:  # the committer swaps the lists: pick one under the lock
            if self._error is not None:
                raise self._error
            (self._lookups if lookups else self._claims).extend(tickets)
            self._cond.notify_all()
            while not all(t.done for t in tickets):
                self._cond.wait()
        return [t.result() for t in tickets]

    def flush(self) -> None:
        with self._cond:
            target = self._flush_to = self._queued
            self._cond.notify_all()
            while self._committed < target and self._error is None:
                self._cond.wait()
            if self._error is not None:
                raise self._error

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        for shard, left in self._outstanding.items():  # a shard with calls the warehouse refused stays for recovery
            shard.close(remove=not left)
        if self._error is not None:
            raise self._error

    def _calls_due(self) -> bool:
        """Whether the queued calls are to be committed now (under ``_cond``): the store closes, enough are queued,
        or some are and a flush waits or the oldest has waited ``commit_after_s``. Claims and lookups alone do not
        take them along, so their transactions stay short."""
        if self._closed or len(self._queue) >= self._commit_every:
            return True
        return bool(self._queue) and (self._committed < self._flush_to
                                      or time.monotonic() - self._oldest >= self._commit_after_s)

    def _write(self) -> None:
        while True:
            with self._cond:
                while not (self._claims or self._lookups or self._calls_due()):
                    due_in = self._oldest + self._commit_after_s - time.monotonic()
                    self._cond.wait(max(0.0, due_in) if self._queue else None)
                if not self._queue and not self._claims and not self._lookups:
                    return
                group, self._queue = (self._queue, []) if self._calls_due() else ([], self._queue)
                claims, self._claims = self._claims, []
                lookups, self._lookups = self._lookups, []
                self._queued_keys.subtract(q.record["row"]["cache_key"] for q in group)
                self._queued_keys = +self._queued_keys
            try:
                with self.warehouse.transaction() as con:
                    commit_calls(con, [q.record for q in group])
                    decided = self._decide_claims(con, [t.asked for t in claims]) if claims else []
                    found = _calls_of(con, list({t.asked for t in lookups})) if lookups else {}
                for ticket, claim in zip(claims, decided, strict=True):
                    ticket.answer = claim
                for ticket in lookups:
                    ticket.answer = found.get(ticket.asked, (None, 0))[0]
                _lease_ended([q.record["lease_owner"] for q in group if q.record["lease_owner"]])
                failed = False
            except BaseException as exc:  # noqa: BLE001 - handed to the asking threads by add, claim and flush
                logger.error("model call log: %d call(s) and %d claim(s) could not be committed (the calls stay in"
                             " %s): %s", len(group), len(claims), self._shard.path.parent, exc)
                failed = True
                with self._cond:
                    self._error = exc
                    for ticket in claims + lookups:
                        ticket.error = exc
            with self._cond:
                for ticket in claims + lookups:
                    ticket.done = True
                self._committed += len(group)
                for queued in group:
                    row = queued.record["row"]
                    answer = self._answers.get(row["cache_key"])
                    if answer is not None and answer.call_id == row["call_id"]:
                        del self._answers[row["cache_key"]]  # committed: cached() finds it in the warehouse now
                    if not failed:
                        self._outstanding[queued.shard] -= 1
                for shard in [s for s, left in self._outstanding.items() if not left and s is not self._shard]:
                    del self._outstanding[shard]
                    shard.close(remove=True)
                self._cond.notify_all()


def shard_directory(warehouse: Warehouse) -> Path:
    """Where the warehouse's call stores keep their call shards: ``<warehouse file>.call_log/``."""
    return Path(str(warehouse.path) + ".call_log")


def recover_calls(warehouse: Warehouse) -> None:
    """Commit the calls in shards whose process is gone (it crashed, or its warehouse failed): their complete
    records once each, in transactions of at most ``_RECOVERY_BATCH`` calls; a torn last record is dropped."""

    def commit(records: list[dict[str, Any]]) -> None:
        for start in range(0, len(records), _RECOVERY_BATCH):
            with warehouse.transaction() as con:
                commit_calls(con, records[start:start + _RECOVERY_BATCH])

    shards, calls = recover_shards(shard_directory(warehouse), commit)
    if shards:
        logger.warning("model call log: recovered %d call(s) from %d shard(s) left by processes that are gone", calls,
                       shards)


_RECOVERY_BATCH = 10_000


def commit_calls(con: duckdb.DuckDBPyConnection, records: list[dict[str, Any]]) -> None:
    """Shard records as ``model_call`` rows, entities and generation edges, ending their leases; a call already
    committed (its id is content-derived) adds nothing, so a shard committed twice changes nothing."""
    if not records:
        return
    ids = [r["row"]["call_id"] for r in records]
    known = {cid for (cid,) in con.execute(
        "SELECT call_id FROM model_call WHERE call_id IN (SELECT unnest(?::VARCHAR[]))", [ids]).fetchall()}
    fresh: dict[str, list[dict[str, Any]]] = {}  # activity -> its new rows
    for record in records:
        row = record["row"]
        if row["call_id"] not in known:
            known.add(row["call_id"])
            fresh.setdefault(row["activity_id"], []).append({**row, "called_at": datetime.fromisoformat(row["called_at"])})
    for activity_id, rows in fresh.items():  # ids checked just above: the rows go in without conflict checks
        insert_rows(con, "model_call", rows, conflict="error")
        log = ActivityLog(con, activity_id)
        log.entities([Entity(r["call_id"], "model_call", r["prompt_sha256"],
                             {k: r[k] for k in ("provider", "model", "role", "template_id", "template_version", "status")})
                      for r in rows], new=True)
        log.generated([r["call_id"] for r in rows], new=True)
    _end_leases(con, [(r["row"]["cache_key"], r["lease_owner"]) for r in records if r["lease_owner"]])


def _end_leases(con: duckdb.DuckDBPyConnection, leases: list[tuple[str, str]]) -> None:
    """Delete the (cache key, owner) leases, in one statement."""
    if leases:
        con.execute("DELETE FROM model_call_lease WHERE list_contains(?, cache_key || '|' || owner)",
                    [[f"{key}|{owner}" for key, owner in leases]])


def call_entity_id(cache_key: str, earlier: int) -> str:
    """The id of the call of ``cache_key`` logged after ``earlier`` others: derived from the request (its cache key)
    and that count, never from the activity or the clock, so the same requests met in the same order (a failed
    attempt, then its retry) give the same ids in any warehouse. The count is taken under the key's lease (or by
    the one store that asks it unleased), so two calls never count the same."""
    return entity_id("model_call", digest_of([cache_key, earlier]))


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
                offline: OfflineAnswers, budget: CallBudget | None = None) -> tuple[ModelCaller, RoleConfig]:
    """The provider layer's ``role`` for one step's calls: cached and logged write-behind in ``model_call`` under
    the step's activity, answers validated with one ``repair`` request (``offline``: the pipeline's answers, should
    the role be the heuristic provider); and the role's settings for provenance. The caller's store must be flushed
    before rows naming its calls are committed (the item loop's ``before_write``), and closed when the step ends.
    ``budget`` bounds the requests and tokens it may spend (unbounded by default)."""
    config = providers.role(role)
    endpoint = config.provider + (f"@{config.base_url}" if config.base_url else "")
    caller = leased_caller(endpoint, providers.provider_for(role, offline=offline),
                           WarehouseCallStore(warehouse, activity_id),
                           budget or CallBudget(None, None), RateLimiter(None), repair, providers)
    return caller, config


def leased_caller(endpoint: str, provider: ModelProvider, store: WarehouseCallStore, budget: CallBudget, limiter: RateLimiter,
                  repair: Callable[[ModelRequest, str, str], ModelRequest], providers: ModelProvidersResource) -> ModelCaller:
    """A caller that claims each request in the warehouse before sending it, for as long as the providers'
    timeouts and retries can make it take."""
    transport = providers.transport()
    lease_s = lease_seconds(transport["timeout_s"], transport["max_retries"], transport["max_backoff_s"])
    return ModelCaller(endpoint, provider, store, budget, limiter, repair, leases=store, lease_s=lease_s)
