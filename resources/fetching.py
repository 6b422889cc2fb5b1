"""Polite, bounded fetching of image bytes from HTTP(S) URLs and local files.

Why: the collection stage pulls up to 10^6 images from hosts we do not own.
Every download is capped in size and time, identifies itself, backs off when a
server asks it to, never holds more than a few requests open per host, and
records each attempt so that a failed row can be explained later.

Reason codes (``FetchResult.reason_code``; stable, stored in the warehouse):

* ``http_status``      non-2xx response; detail carries the code. Transient
                       when it was 429/5xx and still failing after retries.
* ``timeout``          connect or read timeout, or the URL's time budget
                       spent (transient).
* ``connection_error`` refused / reset / dropped connection (transient).
* ``truncated_body``   the connection closed before the bytes its
                       Content-Length declared arrived (transient).
* ``redirect_loop``    more than ``MAX_REDIRECTS`` redirects (a loop, or a
                       chain no image host needs).
* ``too_large``        declared (Content-Length, file size) or streamed size
                       above ``max_bytes``; refused before the download when
                       declared, else the download stops at the cap.
* ``bad_content_type`` declared Content-Type is clearly not an image.
* ``not_an_image``     no image decoder recognises the body (a web page, text,
                       random bytes): every registered Pillow plugin is asked.
* ``unsupported_format`` the body is a recognised format that is not
                       decoded (SVG, PDF, HEIC without its plugin). A body a
                       decoder recognises but finds damaged is kept: the
                       decode stage records it as ``truncated`` or ``undecodable``.
* ``empty_body``       zero bytes received.
* ``missing_file``     local path does not exist or is not a regular file.
* ``unreadable_file``  local file exists but could not be read (permissions, I/O).
* ``invalid_locator``  unsupported scheme, malformed URL.
* ``removed_image``    the host redirected to its "image removed" placeholder
                       (e.g. imgur's ``removed.png``); the original is gone.
* ``gave_up``          decided across runs, not here (``give_up_detail``): the
                       locator failed transiently in ``max_attempt_runs`` runs.

Time per URL is bounded: all attempts at one URL share one ``timeout_s`` of
waiting on the server (each attempt's connect and read timeouts are what is
left of it, and a body still streaming when it runs out is stopped), and the
backoff sleeps between retries come on top. A stalled server therefore costs
one ``timeout_s`` per run, not one per retry, while a refused connection or a
quick 5xx, which spend almost none of it, are still retried with backoff.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import random
import re
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import partial
from itertools import zip_longest
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ReadTimeoutError

from resources.image_formats import DecodeFailure, recognised_format

logger = logging.getLogger(__name__)

HTTP_STATUS = "http_status"
TIMEOUT = "timeout"
CONNECTION_ERROR = "connection_error"
TOO_LARGE = "too_large"
BAD_CONTENT_TYPE = "bad_content_type"
NOT_AN_IMAGE = "not_an_image"
EMPTY_BODY = "empty_body"
MISSING_FILE = "missing_file"
UNREADABLE_FILE = "unreadable_file"
INVALID_LOCATOR = "invalid_locator"
REMOVED_IMAGE = "removed_image"
TRUNCATED_BODY = "truncated_body"
REDIRECT_LOOP = "redirect_loop"
GAVE_UP = "gave_up"

DEFAULT_USER_AGENT = "aesforge/0.1 (+https://github.com/aesforge/aesforge; dataset construction)"
DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_BACKOFF_S = 0.5
DEFAULT_MAX_BACKOFF_S = 30.0
DEFAULT_MAX_BYTES = 50 * 2**20
DEFAULT_PER_HOST_LIMIT = 2
DEFAULT_MAX_WORKERS = 8
DEFAULT_REMOVED_IMAGE_URLS = (r"/removed\.png$",)
"""Patterns (searched in the final URL after redirects) of hosts' placeholders for deleted images."""

CHUNK_BYTES = 64 * 1024
"""Read size while streaming; a capped download overshoots max_bytes by at most this."""
MAX_REDIRECTS = 10
"""Longer redirect chains are reported as ``redirect_loop``: no image host needs more, and each costs a request."""
MIN_RETRY_BUDGET = 0.1
"""A retry is sent only while at least this share of the URL's ``timeout_s`` budget is left; less could only
end in a timeout that hides the real reason."""

_ACCEPT = "image/jpeg,image/png,image/webp,image/gif,image/bmp,image/tiff,*/*;q=0.5"
# Declared types that cannot carry a raster image; anything else still faces the magic-byte check.
_NON_IMAGE_TOP_LEVEL = frozenset({"text", "audio", "video", "font", "multipart", "message", "model"})
_NON_IMAGE_APPLICATION = frozenset(
    {"json", "xml", "xhtml+xml", "javascript", "ecmascript", "pdf", "zip", "gzip", "x-tar"}
)
# Each worker thread has its own session and makes one request at a time, so one
# pooled connection per host suffices; keep-alive is kept for this many hosts.
_POOLED_HOSTS_PER_THREAD = 16
_QUERY = re.compile(r"\?[^\s'\")]*")
_USERINFO = re.compile(r"//[^/@\s]+@")
_UNFETCHABLE_URL = (
    requests.exceptions.InvalidURL,
    requests.exceptions.InvalidSchema,
    requests.exceptions.MissingSchema,
)


@dataclass(frozen=True)
class FetchAttempt:
    """One request (or one file read), kept for provenance whatever its outcome."""

    url: str
    attempt: int
    status_code: int | None
    n_bytes: int
    sha256: str | None
    duration_ms: float
    error: str | None
    started_at: datetime


@dataclass(frozen=True)
class FetchResult:
    """Outcome of fetching one locator; ``data`` is set only when ``ok``."""

    locator: str
    ok: bool
    data: bytes | None
    sha256: str | None
    media_type: str | None
    reason_code: str | None
    detail: str | None
    attempts: tuple[FetchAttempt, ...]
    transient: bool


@dataclass(frozen=True)
class _Outcome:
    """What one attempt produced; ``retryable`` marks failures worth another try."""

    n_bytes: int = 0
    data: bytes | None = None
    sha256: str | None = None
    media_type: str | None = None
    status_code: int | None = None
    reason_code: str | None = None
    detail: str | None = None
    retryable: bool = False
    retry_after_s: float | None = None


class _CappedBodyReader:
    """Hash and collect chunks, stopping at the first sign the body is unusable.

    ``n_bytes`` stays readable when the chunk source raises, so a dropped
    connection still reports how much arrived.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.n_bytes = 0

    def read(self, chunks: Iterable[bytes]) -> _Outcome:
        digest = hashlib.sha256()
        parts: list[bytes] = []
        for chunk in chunks:
            self.n_bytes += len(chunk)
            if self.n_bytes > self.max_bytes:
                return _Outcome(
                    n_bytes=self.n_bytes,
                    reason_code=TOO_LARGE,
                    detail=f"body exceeded max_bytes={self.max_bytes}; download stopped",
                )
            digest.update(chunk)
            parts.append(chunk)
        if self.n_bytes == 0:
            return _Outcome(reason_code=EMPTY_BODY, detail="zero bytes received")
        data = b"".join(parts)
        sha256 = digest.hexdigest()
        try:  # the decoder's own plugins say whether this is an image; a damaged one is still kept for decoding
            media_type = recognised_format(data)
        except DecodeFailure as failure:
            return _Outcome(n_bytes=self.n_bytes, sha256=sha256, reason_code=failure.reason_code, detail=failure.detail)
        return _Outcome(n_bytes=self.n_bytes, data=data, sha256=sha256, media_type=media_type)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait per a Retry-After header (delta-seconds or HTTP-date); None if unusable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def retry_delay_s(
    retry_number: int, *, backoff_s: float, max_backoff_s: float, retry_after_s: float | None = None
) -> float:
    """Delay before retry ``retry_number`` (1-based): the server's Retry-After if given,
    else exponential backoff plus up to one ``backoff_s`` of jitter; never above ``max_backoff_s``."""
    if retry_after_s is not None:
        return min(retry_after_s, max_backoff_s)
    exponential = backoff_s * 2.0 ** min(retry_number - 1, 32)
    return min(max_backoff_s, exponential + random.uniform(0.0, backoff_s))


def _declared_media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _is_clearly_not_image(media_type: str) -> bool:
    top, _, sub = media_type.partition("/")
    if top in _NON_IMAGE_TOP_LEVEL:
        return True
    return top == "application" and (
        sub in _NON_IMAGE_APPLICATION or sub.endswith(("+json", "+xml"))
    )


def _scrub(text: str) -> str:
    """Drop credentials and query strings (signed URLs carry tokens there) from stored or logged text."""
    return _QUERY.sub("?<redacted>", _USERINFO.sub("//<redacted>@", text))


def _host_key(locator: str) -> str | None:
    """Host that per-host politeness limits apply to; None for local files (and for a URL too malformed to
    have one, which ``fetch`` reports as ``invalid_locator``)."""
    try:
        parts = urlsplit(locator)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https"):
        return None
    return parts.hostname


def interleave_by_host(locators: Iterable[str]) -> list[str]:
    """``locators`` round-robin across hosts (each host's own order kept), so that workers taking them in order
    keep many hosts busy instead of queueing behind one host's ``per_host_limit``."""
    by_host: dict[str | None, list[str]] = {}
    for locator in locators:
        by_host.setdefault(_host_key(locator), []).append(locator)
    return [locator for turn in zip_longest(*by_host.values()) for locator in turn if locator is not None]


@dataclass(frozen=True)
class FailedRun:
    """One run in which a locator failed transiently; ``max_attempt_runs`` of them and it is given up."""

    started_at: datetime
    reason_code: str
    detail: str | None
    n_attempts: int
    duration_ms: float

    @classmethod
    def of(cls, result: FetchResult) -> FailedRun:
        return cls(
            started_at=result.attempts[0].started_at if result.attempts else datetime.now(UTC),
            reason_code=result.reason_code or "unknown",
            detail=result.detail,
            n_attempts=len(result.attempts),
            duration_ms=sum(a.duration_ms for a in result.attempts),
        )


def give_up_detail(runs: Sequence[FailedRun], max_attempt_runs: int) -> str | None:
    """The ``gave_up`` detail once ``runs`` (this run last) number ``max_attempt_runs``, listing each run's
    reason; None while another run may still try."""
    if len(runs) < max_attempt_runs:
        return None
    history = "; ".join(
        f"{run.started_at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ} {run.reason_code}: {run.detail}"
        f" ({run.n_attempts} request(s), {run.duration_ms / 1000:.2f} s)"
        for run in runs
    )
    return (
        f"failed transiently in {len(runs)} runs (fetch.max_attempt_runs={max_attempt_runs}): {history};"
        " `aesforge retry --reason gave_up` makes it pending again"
    )


class _HostSlots:
    """At most ``limit`` requests in flight to any one host, whichever threads send them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._busy: Counter[str] = Counter()
        self._changed = threading.Condition()

    @contextmanager
    def hold(self, host: str | None) -> Iterator[None]:
        if host is None:  # a local file: no host to be polite to
            yield
            return
        with self._changed:
            self._changed.wait_for(lambda: self._busy[host] < self.limit)
            self._busy[host] += 1
        try:
            yield
        finally:
            with self._changed:
                self._busy[host] -= 1
                self._changed.notify_all()


class _OutOfTime(Exception):
    """The URL's time budget ran out while its body was still arriving."""


def _arriving(body: urllib3.HTTPResponse, deadline: float) -> Iterator[bytes]:
    """The (decoded) body as it arrives, one network read at a time, stopped by :class:`_OutOfTime` once
    ``deadline`` (``time.perf_counter``) has passed: a server trickling bytes, each within the read timeout,
    cannot hold a URL past its budget (a whole-chunk read would wait for 64 KiB)."""
    while chunk := body.read1(CHUNK_BYTES, decode_content=True):
        if time.perf_counter() > deadline:
            raise _OutOfTime
        yield chunk


class HttpFetcher:
    """Fetch image bytes from http(s) URLs, file:// URLs and local paths, politely and within bounds.

    ``fetch`` is safe to call from many threads at once (the item loop's workers): each thread has its own
    session, and at most ``per_host_limit`` requests are in flight to any one host across all of them.
    ``max_workers`` is how many threads callers should use.
    """

    def __init__(
        self,
        *,
        user_agent: str,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_s: float = DEFAULT_BACKOFF_S,
        max_backoff_s: float = DEFAULT_MAX_BACKOFF_S,
        max_bytes: int = DEFAULT_MAX_BYTES,
        per_host_limit: int = DEFAULT_PER_HOST_LIMIT,
        max_workers: int = DEFAULT_MAX_WORKERS,
        base_dir: Path | None = None,
        removed_image_urls: Iterable[str] = DEFAULT_REMOVED_IMAGE_URLS,
    ) -> None:
        if not user_agent.strip():
            raise ValueError("user_agent must be non-empty: hosts deserve to know who is fetching")
        if timeout_s <= 0 or backoff_s < 0 or max_backoff_s < 0:
            raise ValueError("timeout_s must be > 0 and backoff_s, max_backoff_s >= 0")
        if max_retries < 0 or max_bytes < 1 or per_host_limit < 1 or max_workers < 1:
            raise ValueError(
                "max_retries must be >= 0 and max_bytes, per_host_limit, max_workers >= 1"
            )
        self.user_agent = user_agent
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_bytes = max_bytes
        self.per_host_limit = per_host_limit
        self.max_workers = max_workers
        self.base_dir = base_dir
        self.removed_image_urls = tuple(re.compile(pattern) for pattern in removed_image_urls)
        self._local = threading.local()
        self._slots = _HostSlots(per_host_limit)

    def fetch(self, locator: str) -> FetchResult:
        """Fetch one locator; failures come back as a result with a reason code, never as an exception."""
        try:
            parts = urlsplit(locator)
        except ValueError as exc:  # e.g. an unbalanced '[' in the host
            return _invalid(locator, _scrub(f"malformed URL: {exc}"))
        scheme = parts.scheme.lower()
        if scheme in ("http", "https"):
            return self._with_retries(locator, partial(self._attempt_http, locator), _host_key(locator))
        if scheme == "file":
            if parts.netloc not in ("", "localhost"):
                return _invalid(locator, f"file URL names a remote host {parts.netloc!r}")
            path = Path(url2pathname(parts.path))
        elif "://" in locator:
            return _invalid(locator, f"unsupported scheme {scheme!r}")
        else:
            path = Path(locator)
            if not path.is_absolute() and self.base_dir is not None:
                path = self.base_dir / path
        return self._with_retries(locator, lambda _budget_s: self._attempt_file(path, locator), None)

    def _with_retries(
        self, locator: str, attempt_once: Callable[[float], _Outcome], host: str | None
    ) -> FetchResult:
        """Attempt until done, out of retries, or out of the URL's budget of ``timeout_s`` seconds of waiting
        on the server (all attempts together; a backoff sleep is not counted and holds no host slot)."""
        attempts: list[FetchAttempt] = []
        waited_s = 0.0
        for attempt_number in range(1, self.max_retries + 2):
            with self._slots.hold(host):
                started_at = datetime.now(UTC)
                clock = time.perf_counter()
                outcome = attempt_once(self.timeout_s - waited_s)
                elapsed_s = time.perf_counter() - clock
            waited_s += elapsed_s
            attempts.append(
                FetchAttempt(
                    url=locator,
                    attempt=attempt_number,
                    status_code=outcome.status_code,
                    n_bytes=outcome.n_bytes,
                    sha256=outcome.sha256,
                    duration_ms=elapsed_s * 1000.0,
                    error=(
                        f"{outcome.reason_code}: {outcome.detail}" if outcome.reason_code else None
                    ),
                    started_at=started_at,
                )
            )
            if not outcome.retryable or attempt_number > self.max_retries:
                break
            if self.timeout_s - waited_s < self.timeout_s * MIN_RETRY_BUDGET:
                logger.debug("not retrying %s: its timeout_s budget is spent", _scrub(locator))
                break
            delay = retry_delay_s(
                attempt_number,
                backoff_s=self.backoff_s,
                max_backoff_s=self.max_backoff_s,
                retry_after_s=outcome.retry_after_s,
            )
            logger.debug(
                "retrying %s in %.2fs after %s", _scrub(locator), delay, outcome.reason_code
            )
            time.sleep(delay)
        return FetchResult(
            locator=locator,
            ok=outcome.reason_code is None,
            data=outcome.data,
            sha256=outcome.sha256,
            media_type=outcome.media_type,
            reason_code=outcome.reason_code,
            detail=outcome.detail,
            attempts=tuple(attempts),
            transient=outcome.retryable,
        )

    def _session(self) -> requests.Session:
        """This thread's session: Sessions are not thread-safe, but keep-alive per thread is cheap."""
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            adapter = HTTPAdapter(
                pool_connections=_POOLED_HOSTS_PER_THREAD, pool_maxsize=1, max_retries=0
            )
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            session.headers.update({"User-Agent": self.user_agent, "Accept": _ACCEPT})
            session.max_redirects = MAX_REDIRECTS
            self._local.session = session
        return session

    def _attempt_http(self, url: str, budget_s: float) -> _Outcome:
        """One request, waiting at most ``budget_s`` for the connection, for each read and for the whole body."""
        status_code: int | None = None
        reader = _CappedBodyReader(self.max_bytes)
        deadline = time.perf_counter() + budget_s
        try:
            with self._session().get(url, stream=True, timeout=(budget_s, budget_s)) as response:
                status_code = response.status_code
                rejection = self._reject_before_body(response)
                if rejection is not None:
                    return replace(rejection, status_code=status_code)
                outcome = reader.read(_arriving(response.raw, deadline))
                return replace(outcome, status_code=status_code)
        except (requests.Timeout, ReadTimeoutError, _OutOfTime):
            return self._timed_out(status_code, reader.n_bytes, budget_s)
        except requests.TooManyRedirects as exc:
            last = exc.response.url if exc.response is not None else url
            return _Outcome(
                status_code=status_code,
                reason_code=REDIRECT_LOOP,
                detail=_scrub(f"more than {MAX_REDIRECTS} redirects, the last to {last}"),
            )
        except _UNFETCHABLE_URL as exc:
            return _Outcome(
                status_code=status_code,
                reason_code=INVALID_LOCATOR,
                detail=_scrub(f"{type(exc).__name__}: {exc}"),
            )
        except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:  # the body broke off or is garbled
            short = _incomplete_read(exc)
            if short is not None:
                received = short.partial if isinstance(short.partial, int) else len(short.partial)
                return _Outcome(
                    status_code=status_code,
                    n_bytes=reader.n_bytes,
                    reason_code=TRUNCATED_BODY,
                    detail=f"connection closed after {received} bytes, {short.expected} more declared by Content-Length",
                    retryable=True,
                )
            return _connection_failure(exc, status_code, reader.n_bytes)

    def _reject_before_body(self, response: requests.Response) -> _Outcome | None:
        status = response.status_code
        if response.history and any(p.search(response.url) for p in self.removed_image_urls):
            return _Outcome(reason_code=REMOVED_IMAGE, detail=f"redirected to the placeholder {_scrub(response.url)}")
        if not 200 <= status < 300:
            retryable = status == 429 or status >= 500
            return _Outcome(
                reason_code=HTTP_STATUS,
                detail=f"HTTP {status} {response.reason or ''}".rstrip(),
                retryable=retryable,
                retry_after_s=(
                    parse_retry_after(response.headers.get("Retry-After")) if retryable else None
                ),
            )
        declared = _declared_media_type(response.headers.get("Content-Type"))
        if _is_clearly_not_image(declared):
            return _Outcome(reason_code=BAD_CONTENT_TYPE, detail=f"declared Content-Type {declared!r}")
        length = response.headers.get("Content-Length", "").strip()
        if length.isdigit() and int(length) > self.max_bytes:
            return _Outcome(
                reason_code=TOO_LARGE,
                detail=f"Content-Length {length} exceeds max_bytes={self.max_bytes}; not downloaded",
            )
        return None

    def _timed_out(self, status_code: int | None, n_bytes: int, budget_s: float) -> _Outcome:
        spent = "" if budget_s >= self.timeout_s else " (what was left of this URL's timeout_s after earlier attempts)"
        return _Outcome(
            status_code=status_code,
            n_bytes=n_bytes,
            reason_code=TIMEOUT,
            detail=f"no progress within {budget_s:.3g} s{spent}; timeout_s={self.timeout_s}",
            retryable=True,
        )

    def _attempt_file(self, path: Path, locator: str) -> _Outcome:
        """Read a local file; a failure names it by ``locator``, as it was asked for (a name relative to ``base_dir``
        stays relative), so the detail does not change when the folder holding the files moves."""
        try:
            with path.open("rb") as handle:
                info = os.fstat(handle.fileno())
                if not stat.S_ISREG(info.st_mode):
                    return _Outcome(reason_code=MISSING_FILE, detail=f"not a regular file: {locator}")
                if info.st_size > self.max_bytes:
                    return _Outcome(
                        reason_code=TOO_LARGE,
                        detail=f"file size {info.st_size} exceeds max_bytes={self.max_bytes}; not read",
                    )
                chunks = iter(partial(handle.read, CHUNK_BYTES), b"")
                return _CappedBodyReader(self.max_bytes).read(chunks)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            return _Outcome(reason_code=MISSING_FILE, detail=f"{type(exc).__name__}: {locator}")
        except OSError as exc:
            return _Outcome(
                reason_code=UNREADABLE_FILE, detail=f"{type(exc).__name__}: {exc.strerror} ({locator})"
            )


def _connection_failure(exc: Exception, status_code: int | None, n_bytes: int) -> _Outcome:
    return _Outcome(
        status_code=status_code,
        n_bytes=n_bytes,
        reason_code=CONNECTION_ERROR,
        detail=_scrub(f"{type(exc).__name__}: {exc}"),
        retryable=True,
    )


def _incomplete_read(exc: BaseException) -> http.client.IncompleteRead | None:
    """The IncompleteRead (Content-Length said more than arrived) behind a requests error, if that is its cause."""
    for cause in (exc, *exc.args):
        if isinstance(cause, http.client.IncompleteRead):
            return cause
        if isinstance(cause, BaseException) and cause is not exc:
            found = _incomplete_read(cause)
            if found is not None:
                return found
    return None


def _invalid(locator: str, detail: str) -> FetchResult:
    return FetchResult(
        locator=locator,
        ok=False,
        data=None,
        sha256=None,
        media_type=None,
        reason_code=INVALID_LOCATOR,
        detail=detail,
        attempts=(),
        transient=False,
    )
