"""The call layer: cache, budget, rate limit, repair, claims and the warehouse call log.

The provider here is mostly a small deterministic implementation of our own ModelProvider interface (its
answer is computed from the request); the claims are also checked through the real openai SDK against the
loopback server. The SDK providers are exercised further in tests/resources/test_model_providers.py and the
chain tests; two `aesforge run` processes at once in tests/pipelines/test_concurrent_runs.py.
"""

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from assets.core.model_calls import (
    REJECTED,
    VALID,
    BudgetExhausted,
    CallBudget,
    ModelCaller,
    RateLimiter,
    cache_key,
)
from assets.core.model_call_store import WarehouseCallStore, call_entity_id
from resources.model_providers import OpenAIProvider
from resources.models.types import HTTP_ERROR, OK, ModelRequest, ModelResponse
from tests.support.model_servers import ModelApiServer, client_settings
from warehouse.db import Warehouse, insert_rows
from warehouse.lineage import start_activity, this_process, utcnow


@dataclass
class WordCountProvider:
    """Answers {"words": <number of words in the user text>}; can be told to garble or fail the first answers."""

    name: str = "wordcount"
    garble: int = 0
    fail: int = 0
    delay_s: float = 0.0
    requests: list[ModelRequest] = field(default_factory=list)

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        time.sleep(self.delay_s)
        if self.fail:
            self.fail -= 1
            return ModelResponse("", None, None, None, 1.0, 4, HTTP_ERROR, "HTTP 500 after 3 retries", None)
        text = json.dumps({"words": len(request.user.split())})
        if self.garble:
            self.garble -= 1
            text = text[: len(text) // 2]  # truncated mid-object
        return ModelResponse(text, 10, 5, "stop", 1.0, 1, OK, None, "wordcount-1")


class SchemaProblem(ValueError):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.reason_code = code


def parse_words(text: str) -> int:
    try:
        return int(json.loads(text)["words"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SchemaProblem("invalid_json") from exc


def repair(request: ModelRequest, answer: str, problem: str) -> ModelRequest:
    return ModelRequest("repair", request.model, "Return only the corrected JSON.", request.user, request.image,
                        request.image_mime, request.json_schema, request.schema_name, template_id="test/repair", template_version="1")


def _request(user: str = "one two three", image: bytes | None = b"\x89PNG fake bytes") -> ModelRequest:
    return ModelRequest("planner", "wordcount-1", "Count the words.", user, image, "image/png", None, "words",
                        template_id="test/count", template_version="1")


def _store(wh: Warehouse, run_id: str = "r1") -> WarehouseCallStore:
    with wh.transaction() as con:
        log = start_activity(con, asset_key="test", partition_key=None, run_id=run_id, code_version="t", parameters={}, agents=())
    return WarehouseCallStore(wh, log.activity_id)


@pytest.fixture
def store(tmp_path) -> Iterator[WarehouseCallStore]:
    store = _store(Warehouse(tmp_path / "w.duckdb"))
    yield store
    store.close()


def _caller(provider, store, budget=None, limiter=None, leased=False, name=None) -> ModelCaller:
    return ModelCaller(name or provider.name, provider, store, budget or CallBudget(), limiter or RateLimiter(None), repair,
                       leases=store if leased else None, poll_s=0.05, max_poll_s=0.2)


def test_second_identical_call_is_answered_from_the_log_without_a_request(store):
    provider = WordCountProvider()
    caller = _caller(provider, store)
    first = caller.call(_request(), parse_words, item_id="pool_item:x")
    again = caller.call(_request(), parse_words, item_id="pool_item:x")
    assert (first.status, first.value, first.requests_sent) == (VALID, 3, 1)
    assert (again.status, again.value, again.requests_sent) == (VALID, 3, 0)
    assert again.call_ids == first.call_ids and len(provider.requests) == 1
    store.flush()
    logged = store.warehouse.query("SELECT provider, model, role, status, input_tokens, image_sha256, item_id FROM model_call")
    assert logged.to_dict("records") == [
        {"provider": "wordcount", "model": "wordcount-1", "role": "planner", "status": "ok", "input_tokens": 10,
         "image_sha256": logged["image_sha256"][0], "item_id": "pool_item:x"}
    ]
    assert len(logged["image_sha256"][0]) == 64


def test_cache_key_changes_with_every_part_of_the_request():
    base = _request()
    variants = [
        _request(user="one two"),
        _request(image=b"other bytes"),
        ModelRequest(**{**base.__dict__, "model": "other-model"}),
        ModelRequest(**{**base.__dict__, "temperature": 0.9}),
        ModelRequest(**{**base.__dict__, "system": "Count the words, carefully."}),
    ]
    keys = {cache_key("wordcount", r) for r in [base, *variants]}
    assert len(keys) == len(variants) + 1
    assert cache_key("other-provider", base) != cache_key("wordcount", base)
    # The context is what the prompt was rendered from, not part of what is sent: it does not change the key.
    assert cache_key("wordcount", ModelRequest(**{**base.__dict__, "context": {"domain": "painting"}})) == cache_key("wordcount", base)


def test_invalid_answer_gets_one_repair_then_validates(store):
    provider = WordCountProvider(garble=1)
    outcome = _caller(provider, store).call(_request(), parse_words)
    assert (outcome.status, outcome.value, outcome.requests_sent) == (VALID, 3, 2)
    store.flush()
    roles = store.warehouse.query("SELECT role, repair_of IS NOT NULL AS is_repair FROM model_call ORDER BY called_at")
    assert roles.values.tolist() == [["planner", False], ["repair", True]]


def test_answer_still_invalid_after_repair_is_rejected_with_its_reason_and_not_asked_again(store):
    provider = WordCountProvider(garble=2)
    caller = _caller(provider, store)
    outcome = caller.call(_request(), parse_words)
    assert (outcome.status, outcome.reason_code, outcome.requests_sent) == (REJECTED, "invalid_json", 2)
    assert "after one repair attempt" in outcome.detail
    rerun = caller.call(_request(), parse_words)  # both answers are cached: same decision, no request
    assert (rerun.status, rerun.reason_code, rerun.requests_sent) == (REJECTED, "invalid_json", 0)
    assert len(provider.requests) == 2


def test_transport_failure_is_logged_but_not_cached(store):
    provider = WordCountProvider(fail=1)
    caller = _caller(provider, store)
    failed = caller.call(_request(), parse_words)
    assert (failed.status, failed.reason_code) == (HTTP_ERROR, HTTP_ERROR)
    retried = caller.call(_request(), parse_words)
    assert (retried.status, retried.value, retried.requests_sent) == (VALID, 3, 1)
    store.flush()
    statuses = store.warehouse.query("SELECT status, attempts FROM model_call ORDER BY called_at").values.tolist()
    assert statuses == [["http_error", 4], ["ok", 1]]


def test_budget_stops_before_the_request_that_would_exceed_it(store):
    provider = WordCountProvider()
    caller = _caller(provider, store, budget=CallBudget(max_calls=2))
    assert caller.call(_request("a"), parse_words).ok and caller.call(_request("a b"), parse_words).ok
    assert caller.call(_request("a"), parse_words).requests_sent == 0  # cached answers cost nothing
    with pytest.raises(BudgetExhausted, match="2 requests"):
        caller.call(_request("a b c"), parse_words)
    assert len(provider.requests) == 2
    tokens = CallBudget(max_tokens=20)
    token_caller = _caller(WordCountProvider(), store, budget=tokens)
    token_caller.call(_request("x y z w"), parse_words)
    token_caller.call(_request("x y z w v"), parse_words)
    with pytest.raises(BudgetExhausted, match="token budget"):
        token_caller.call(_request("x"), parse_words)


def test_rate_limiter_spaces_request_starts_evenly_across_threads():
    """Six threads asking at the same instant get starts one interval apart. The limiter's clock is held still
    and its waits are recorded, so the spacing it schedules is checked exactly, not the machine's thread timing
    (a loaded CI host delays a thread's wake-up, never the schedule)."""
    waits: list[float] = []
    lock = threading.Lock()

    def record(seconds: float) -> None:
        with lock:
            waits.append(seconds)

    limiter = RateLimiter(per_minute=1200, clock=lambda: 100.0, sleep=record)  # one start every 50 ms
    threads = [threading.Thread(target=limiter.acquire) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(waits) == pytest.approx([0.05 * k for k in range(1, 6)])  # the first starts at once


def _at_once(n: int, call) -> list:
    """``call(i)`` on ``n`` threads released together; the results in thread order."""
    barrier, results = threading.Barrier(n), [None] * n

    def run(i: int) -> None:
        barrier.wait()
        results[i] = call(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


def parse_echo(text: str) -> int:
    return int(json.loads(text)["images"])


def test_identical_requests_from_many_threads_reach_the_server_once(tmp_path):
    """Eight threads (over two step stores on one warehouse) ask the same thing at the same time through the real
    openai SDK: one request reaches the loopback server and every thread gets its logged answer."""
    wh = Warehouse(tmp_path / "w.duckdb")
    stores = [_store(wh, "r1"), _store(wh, "r2")]
    with ModelApiServer(latency_s=0.3) as server:
        provider = OpenAIProvider(server.openai_key, server.openai_base_url, **client_settings())
        callers = [_caller(provider, s, leased=True, name=f"openai@{server.openai_base_url}") for s in stores]
        outcomes = _at_once(8, lambda i: callers[i % 2].call(_request(), parse_echo, item_id=f"pool_item:{i}"))
        assert len(server.requests) == 1
    for s in stores:
        s.close()
    assert [(o.status, o.value) for o in outcomes] == [(VALID, 1)] * 8
    assert sum(o.requests_sent for o in outcomes) == 1 and len({o.call_ids for o in outcomes}) == 1
    assert wh.scalar("SELECT count(*) FROM model_call") == 1
    assert wh.scalar("SELECT count(*) FROM model_call_lease") == 0  # the claim ended with the logged call


def test_a_waiting_thread_takes_over_when_the_first_request_fails(store):
    provider = WordCountProvider(fail=1, delay_s=0.2)
    caller = _caller(provider, store, leased=True)
    outcomes = _at_once(2, lambda i: caller.call(_request(), parse_words))
    assert sorted(o.status for o in outcomes) == [HTTP_ERROR, VALID]  # the failure is not cached: the waiter asks again
    store.flush()
    assert len(provider.requests) == 2 and store.warehouse.scalar("SELECT count(*) FROM model_call_lease") == 0


def _lease(store: WarehouseCallStore, key: str, pid: int, expires_in_s: float) -> None:
    now = utcnow()
    with store.warehouse.transaction() as con:
        insert_rows(con, "model_call_lease", [{
            "cache_key": key, "owner": f"{this_process().hostname}:{pid}:test", "activity_id": "activity:other",
            "hostname": this_process().hostname, "pid": pid, "process_start": None, "acquired_at": now,
            "expires_at": now + timedelta(seconds=expires_in_s)}])


def test_a_lease_whose_process_died_is_taken_over_at_once(store):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=30)
    _lease(store, cache_key("wordcount", _request()), dead.pid, expires_in_s=3600)
    provider = WordCountProvider()
    started = time.monotonic()
    outcome = _caller(provider, store, leased=True).call(_request(), parse_words)
    assert (outcome.status, outcome.requests_sent, len(provider.requests)) == (VALID, 1, 1)
    assert time.monotonic() - started < 5  # not held up until the hour-long expiry
    store.flush()
    assert store.warehouse.scalar("SELECT count(*) FROM model_call_lease") == 0


def test_a_live_claimant_is_waited_for_until_its_lease_expires(store):
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _lease(store, cache_key("wordcount", _request()), alive.pid, expires_in_s=1.0)
        provider = WordCountProvider()
        started = time.monotonic()
        outcome = _caller(provider, store, leased=True).call(_request(), parse_words)
        waited = time.monotonic() - started
    finally:
        alive.kill()
        alive.wait(timeout=30)
    assert outcome.status == VALID and len(provider.requests) == 1
    assert 0.9 <= waited < 5  # waited for the live owner, then took the lapsed lease over


def test_call_ids_derive_from_the_request_so_two_warehouses_name_the_same_calls_alike(tmp_path):
    """Not from the activity or the clock: the same requests, answered alike (a failure, then its retry in a later
    run), get the same ids in another warehouse, under other runs."""
    ids = []
    for name, runs in (("a", ("r1", "r2")), ("b", ("other-1", "other-2"))):
        wh = Warehouse(tmp_path / f"{name}.duckdb")
        provider = WordCountProvider(fail=1)
        first = _store(wh, runs[0])
        failed = _caller(provider, first).call(_request(), parse_words)
        first.close()
        later = _store(wh, runs[1])
        retried = _caller(provider, later).call(_request(), parse_words)
        later.close()
        assert failed.status == HTTP_ERROR and retried.status == VALID and failed.call_ids != retried.call_ids
        ids.append((failed.call_ids, retried.call_ids, wh.query("SELECT call_id FROM model_call ORDER BY call_id")["call_id"].tolist()))
    assert ids[0] == ids[1]


# --- the write-behind call log and claims made ahead ---------------------------------------------------------

def test_threads_get_their_call_ids_at_once_and_every_call_is_logged_by_flush(tmp_path):
    """Many threads ask different things through one store: each gets its call id at once (the first call of its
    key), before the call is committed; after flush every call, its entity and its end of lease are committed."""
    behind = _store(Warehouse(tmp_path / "b.duckdb"))
    requests = [_request(" ".join(["w"] * (i + 1))) for i in range(12)]
    expected = [(call_entity_id(cache_key("wordcount", r), 0),) for r in requests]
    caller = _caller(WordCountProvider(delay_s=0.02), behind, leased=True)
    outcomes = _at_once(12, lambda i: caller.call(requests[i], parse_words))
    behind.flush()
    assert [o.call_ids for o in outcomes] == expected and all(o.status == VALID for o in outcomes)
    wh = behind.warehouse
    assert wh.scalar("SELECT count(*) FROM model_call") == 12 and wh.scalar("SELECT count(*) FROM model_call_lease") == 0
    assert wh.scalar("SELECT count(*) FROM entity WHERE kind = 'model_call'") == 12
    assert wh.scalar("SELECT count(*) FROM was_generated_by WHERE entity_id LIKE 'model_call:%'") == 12
    behind.close()


def test_a_queued_answer_is_a_cache_hit_before_it_is_committed(tmp_path):
    store = _store(Warehouse(tmp_path / "w.duckdb"))
    provider = WordCountProvider()
    caller = _caller(provider, store, leased=True)
    first = caller.call(_request(), parse_words)
    again = caller.call(_request(), parse_words)  # the writer may not have committed the first yet
    assert again.call_ids == first.call_ids and again.requests_sent == 0 and len(provider.requests) == 1
    store.close()
    assert store.warehouse.scalar("SELECT count(*) FROM model_call") == 1


def test_requests_claimed_ahead_are_held_found_answered_or_left_to_their_claimant(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    store, other = _store(wh, "ahead"), _store(wh, "other")
    answered, foreign, fresh = _request("a b"), _request("c d e"), _request("f g h i")
    _caller(WordCountProvider(), other).call(answered, parse_words)  # another step answered this one
    other.flush()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _lease(other, cache_key("wordcount", foreign), alive.pid, expires_in_s=3600)  # a live process asks this one
        provider = WordCountProvider()
        caller = _caller(provider, store, leased=True)
        caller.claim_ahead([answered, foreign, fresh, fresh])
        assert store.holds(cache_key("wordcount", fresh)) and not store.holds(cache_key("wordcount", foreign))
        assert caller.call(answered, parse_words).requests_sent == 0  # found answered by the claim
        assert caller.call(fresh, parse_words).requests_sent == 1 and len(provider.requests) == 1
    finally:
        alive.kill()
    store.close()
    other.close()
    assert wh.scalar("SELECT count(*) FROM model_call_lease") == 1  # only the live process's lease is left


def test_leases_claimed_ahead_but_never_asked_are_given_up_at_close(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    store = _store(wh)
    _caller(WordCountProvider(), store, leased=True).claim_ahead([_request("x y"), _request("z")])
    assert wh.scalar("SELECT count(*) FROM model_call_lease") == 2
    store.close()
    assert wh.scalar("SELECT count(*) FROM model_call_lease") == 0


def test_a_call_log_that_cannot_be_written_fails_every_later_claim_and_flush(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    store = _store(wh)
    caller = _caller(WordCountProvider(), store, leased=True)
    assert caller.call(_request("one"), parse_words).status == VALID
    store.flush()
    with wh.transaction() as con:  # the log's table is gone: the writer's next transaction fails
        con.execute("DROP INDEX model_call_cache_key")
        con.execute("ALTER TABLE model_call RENAME TO model_call_gone")
    with pytest.raises(Exception, match="model_call"):
        caller.call(_request("one two"), parse_words)
    with pytest.raises(Exception, match="model_call"):
        store.flush()
    with pytest.raises(Exception, match="model_call"):
        store.close()
