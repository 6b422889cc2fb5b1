"""Model calls that are cached, bounded, budgeted, validated and logged, whichever provider answers.

A logical call is: look the request up in the call store (same provider, model, parameters, prompt and
image → the stored answer, no request); otherwise claim it, wait for the rate limiter, charge the budget,
send it, log it; then validate the answer and, if it is invalid, ask once for a repair. Transport failures
are logged but never cached, so the next run asks again; answers that arrived are cached whether or not they
validated, so an unchanged re-run makes no request at all and reaches the same decision.

A request is claimed before it is sent, so that it is paid for once however many ask it at the same time:
threads of one process asking the same cache key queue behind the first (a per-key lock), and processes
sharing a call store hold a lease on the key in it (``CallLeases``); a waiter gets the first one's answer, or
sends the request itself when the first failed, gave up or died.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from assets.core.templates import render, repair_template
from resources.models.types import (
    DEFAULT_MAX_BACKOFF_S,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    OK,
    ModelProvider,
    ModelRequest,
    ModelResponse,
)
from warehouse.ids import digest_of, sha256_hex
from warehouse.redaction import redact_text

T = TypeVar("T")

# Outcome statuses of a logical call (beyond the providers' transport statuses).
VALID = "valid"
REJECTED = "rejected"  # the answer (and its repair) did not validate
BUDGET_EXHAUSTED = "budget_exhausted"


@dataclass(frozen=True)
class CallSettings:
    """Model and sampling for one kind of labelling call (a stage's labelling, judging or probe configuration)."""

    model: str
    temperature: float = 0.0
    max_output_tokens: int = 1024


class BudgetExhausted(RuntimeError):
    """The configured maximum of calls or tokens is reached; the run stops with what it finished saved."""


@dataclass(frozen=True)
class StoredCall:
    call_id: str
    response: ModelResponse


class CallStore(Protocol):
    """Where calls are logged and looked up (the warehouse's ``model_call`` table in production)."""

    def cached(self, cache_key: str) -> StoredCall | None: ...

    def record(self, row: Mapping[str, Any]) -> str: ...


@dataclass(frozen=True)
class Claim:
    """What claiming a cache key found: ``held`` (this caller sends the request, and ends the claim with
    ``CallLeases.release``), or ``answer`` (one another caller stored meanwhile), or neither (another live
    caller is asking it now: wait, then claim again)."""

    held: bool = False
    answer: StoredCall | None = None


class CallLeases(Protocol):
    """Claims on cache keys shared by every process that uses the same call store (``model_call_lease`` in the
    warehouse), so that one request is sent per key whoever asks for it."""

    def claim(self, cache_key: str, ttl_s: float) -> Claim: ...

    def claim_many(self, cache_keys: Sequence[str], ttl_s: float) -> None: ...

    def holds(self, cache_key: str) -> bool: ...

    def release(self, cache_key: str) -> None: ...


def lease_seconds(timeout_s: float, max_retries: int, max_backoff_s: float, margin_s: float = 30.0) -> float:
    """How long a claim holds: the longest one logical request may take (every attempt timing out, every
    backoff at its cap) plus a margin; a waiter takes over a lease older than this."""
    return timeout_s * (max_retries + 1) + max_backoff_s * max_retries + margin_s


DEFAULT_LEASE_S = lease_seconds(DEFAULT_TIMEOUT_S, DEFAULT_MAX_RETRIES, DEFAULT_MAX_BACKOFF_S)


class _KeyedLocks:
    """One lock per key, made on demand and dropped once no thread holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[threading.Lock, list[int]]] = {}
        self._guard = threading.Lock()

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        with self._guard:
            lock, users = self._locks.setdefault(key, (threading.Lock(), [0]))
            users[0] += 1
        try:
            with lock:
                yield
        finally:
            with self._guard:
                users[0] -= 1
                if not users[0]:
                    del self._locks[key]


# Process-wide: any two threads asking one cache key, through whichever caller, send it once.
_IN_FLIGHT = _KeyedLocks()


def cache_key(provider: str, request: ModelRequest) -> str:
    """Identity of a request's answer: provider, model, parameters, prompt and image (not the role or context)."""
    return digest_of(
        [
            provider,
            request.model,
            call_parameters(request),
            sha256_hex(request.system.encode("utf-8")),
            sha256_hex(request.user.encode("utf-8")),
            sha256_hex(request.image) if request.image is not None else None,
        ]
    )


def call_parameters(request: ModelRequest) -> dict[str, Any]:
    """The sampling and output parameters that shape an answer; ``top_p`` and ``seed`` only when set, so the
    cache keys of requests that never set them stay what they were."""
    parameters = {
        "temperature": request.temperature,
        "max_output_tokens": request.max_output_tokens,
        "schema_name": request.schema_name,
        "json_schema": request.json_schema,
    }
    parameters.update({name: value for name, value in (("top_p", request.top_p), ("seed", request.seed)) if value is not None})
    return parameters


class CallBudget:
    """Upper bounds on requests and tokens for one run; shared by every worker thread."""

    def __init__(self, max_calls: int | None = None, max_tokens: int | None = None) -> None:
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.calls = 0
        self.tokens = 0
        self._lock = threading.Lock()

    def charge_call(self) -> None:
        with self._lock:
            if self.max_calls is not None and self.calls >= self.max_calls:
                raise BudgetExhausted(f"call budget of {self.max_calls} requests is spent")
            if self.max_tokens is not None and self.tokens >= self.max_tokens:
                raise BudgetExhausted(f"token budget of {self.max_tokens} tokens is spent")
            self.calls += 1

    def charge_tokens(self, response: ModelResponse) -> None:
        with self._lock:
            self.tokens += (response.input_tokens or 0) + (response.output_tokens or 0)


class RateLimiter:
    """At most ``per_minute`` request starts in any 60-second window, spaced evenly (no bursts)."""

    def __init__(self, per_minute: float | None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self._next = 0.0
        self._lock = threading.Lock()
        self._clock = clock
        self._sleep = sleep

    def acquire(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            self._sleep(start - now)

    def backlog_s(self) -> float:
        """How long a request start asked for now would wait (a claim's lease covers it)."""
        with self._lock:
            return max(0.0, self._next - self._clock()) if self.interval else 0.0


@dataclass(frozen=True)
class CallOutcome:
    status: str                  # valid | rejected | a transport status | budget_exhausted
    value: Any = None            # the parsed answer when valid
    reason_code: str | None = None
    detail: str | None = None
    call_ids: tuple[str, ...] = ()
    requests_sent: int = 0       # 0 when everything came from the cache

    @property
    def ok(self) -> bool:
        return self.status == VALID


class ModelCaller:
    """One provider for one role, with the shared store, budget and rate limiter.

    ``leases`` claims each request in the store before it is sent (None: the store lives in this process
    alone, and the per-key lock is claim enough); a claim lasts ``lease_s``, and a waiter polls every
    ``poll_s``, doubling up to ``max_poll_s``.
    """

    def __init__(
        self,
        provider_name: str,
        provider: ModelProvider,
        store: CallStore,
        budget: CallBudget,
        limiter: RateLimiter,
        repair: Callable[[ModelRequest, str, str], ModelRequest],
        *,
        leases: CallLeases | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        poll_s: float = 0.2,
        max_poll_s: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.provider_name = redact_text(provider_name)  # part of the cache key and the log: no key from an endpoint URL
        self.provider = provider
        self.store = store
        self.budget = budget
        self.limiter = limiter
        self.repair = repair
        self.leases = leases
        self.lease_s = lease_s
        self.poll_s = poll_s
        self.max_poll_s = max_poll_s
        self._sleep = sleep

    def call(self, request: ModelRequest, parse: Callable[[str], T], item_id: str | None = None) -> CallOutcome:
        """Answer ``request`` and validate it with ``parse``, one repair at most.

        ``parse`` raises ValueError for an invalid answer; its ``reason_code`` attribute (default
        ``invalid_answer``) is what a rejection records.
        """
        first = self._answer(request, item_id, repair_of=None)
        if first.status != OK:
            return first
        try:
            return replace(first, status=VALID, value=parse(first.value))
        except ValueError as invalid:
            repair_request = self.repair(request, first.value, _describe(invalid))
        fixed = self._answer(repair_request, item_id, repair_of=first.call_ids[0])
        calls = first.call_ids + fixed.call_ids
        sent = first.requests_sent + fixed.requests_sent
        if fixed.status != OK:
            return replace(fixed, call_ids=calls, requests_sent=sent)
        try:
            return CallOutcome(VALID, parse(fixed.value), call_ids=calls, requests_sent=sent)
        except ValueError as still:
            code = getattr(still, "reason_code", "invalid_answer")
            return CallOutcome(REJECTED, None, code, f"{_describe(still)} (after one repair attempt)", calls, sent)

    def _answer(self, request: ModelRequest, item_id: str | None, repair_of: str | None) -> CallOutcome:
        """The raw answer text (cached or fresh) as an outcome whose status is the transport status."""
        key = cache_key(self.provider_name, request)
        stored = self.store.cached(key)
        if stored is None:
            with _IN_FLIGHT.hold(key):
                stored = self.store.cached(key) or self._claim(key)  # answered while this thread waited?
                if stored is None:
                    try:
                        return self._send(request, key, item_id, repair_of)
                    finally:
                        if self.leases is not None:
                            self.leases.release(key)
        return CallOutcome(OK, stored.response.text, call_ids=(stored.call_id,))

    def claim_ahead(self, requests: Sequence[ModelRequest]) -> None:
        """Claim the requests about to be asked, all in one group, so that the threads asking them find them held
        (or answered) instead of each queueing to claim its own: the claim leaves the requests' critical path.
        Without leases there is nothing to claim."""
        if self.leases is None:
            return
        keys = [key for key in dict.fromkeys(cache_key(self.provider_name, r) for r in requests) if not self.leases.holds(key)]
        if keys:
            self.leases.claim_many(keys, self.lease_s + self.limiter.backlog_s())

    def _claim(self, key: str) -> StoredCall | None:
        """None once this caller holds ``key``'s lease, or the answer another process stored while this one
        waited. Bounded: a lease lapses ``lease_s`` after it was taken (or when its process dies) and is then
        taken over."""
        if self.leases is None or self.leases.holds(key):
            return None
        wait = self.poll_s
        while True:
            claim = self.leases.claim(key, self.lease_s + self.limiter.backlog_s())
            if claim.held or claim.answer is not None:
                return claim.answer
            self._sleep(wait)
            wait = min(wait * 2, self.max_poll_s)

    def _send(self, request: ModelRequest, key: str, item_id: str | None, repair_of: str | None) -> CallOutcome:
        self.budget.charge_call()
        self.limiter.acquire()
        response = self.provider.complete(request)
        self.budget.charge_tokens(response)
        call_id = self.store.record(
            {
                "cache_key": key,
                "provider": self.provider_name,
                "model": request.model,
                "provider_model": response.provider_model,
                "role": request.role,
                "template_id": request.template_id,
                "template_version": request.template_version,
                "prompt_sha256": sha256_hex((request.system + "\x00" + request.user).encode("utf-8")),
                "image_sha256": sha256_hex(request.image) if request.image is not None else None,
                "params": call_parameters(request),
                "status": response.status,
                "error": response.error,
                "response_text": response.text,
                "input_tokens": response.input_tokens,
                "output_tokens": response.output_tokens,
                "latency_ms": response.latency_ms,
                "attempts": response.attempts,
                "repair_of": repair_of,
                "item_id": item_id,
            }
        )
        if response.status != OK:
            return CallOutcome(response.status, None, response.status, response.error, (call_id,), 1)
        return CallOutcome(OK, response.text, call_ids=(call_id,), requests_sent=1)


def _describe(invalid: ValueError) -> str:
    code, text = getattr(invalid, "reason_code", "invalid_answer"), str(invalid)
    return (text if text.startswith(code) else f"{code}: {text}")[:1000]


def schema_repair_request(original: ModelRequest, invalid_answer: str, problem: str, schema: Mapping[str, Any]) -> ModelRequest:
    """The shared repair prompt (``critique/repair``) for an answer that failed ``schema``: the same model, image,
    schema and context, asked to return a valid object. Each stage's ``repair_request`` names its schema here."""
    template = repair_template()
    system, user = render(template, schema_name=original.schema_name or "", schema_json=json.dumps(schema, indent=2),
                          invalid_answer=invalid_answer, error=problem)
    return ModelRequest(
        role="repair", model=original.model, system=system, user=user, image=original.image,
        image_mime=original.image_mime, json_schema=original.json_schema, schema_name=original.schema_name,
        temperature=original.temperature, max_output_tokens=original.max_output_tokens, template_id=template.id,
        template_version=template.version, context={**original.context, "repairs": original.template_id},
    )
