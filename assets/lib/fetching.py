"""Polite, bounded fetching of image bytes from HTTP(S) URLs and local files.

Why: the collection stage pulls up to 10^6 images from hosts we do not own.
Every download is capped in size and time, identifies itself, backs off when a
server asks it to, never holds more than a few requests open per host, and
records each attempt so that a failed row can be explained later.

Reason codes (``FetchResult.reason_code``; stable, stored in the warehouse):

* ``http_status``      non-2xx response; detail carries the code. Transient
                       when it was 429/5xx and still failing after retries.
* ``timeout``          connect or read timeout (transient).
* ``connection_error`` refused / reset / dropped connection (transient).
* ``too_large``        declared (Content-Length, file size) or streamed size
                       above ``max_bytes``; the download stops at the cap.
* ``bad_content_type`` declared Content-Type is clearly not an image.
* ``not_an_image``     body magic bytes match no supported raster format.
* ``empty_body``       zero bytes received.
* ``missing_file``     local path does not exist or is not a regular file.
* ``unreadable_file``  local file exists but could not be read (permissions, I/O).
* ``invalid_locator``  unsupported scheme, malformed URL, redirect loop.
* ``removed_image``    the host redirected to its "image removed" placeholder
                       (e.g. imgur's ``removed.png``); the original is gone.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import re
import stat
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ReadTimeoutError

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

_SNIFF_BYTES = 32
_BMP_DIB_HEADER_SIZES = frozenset({12, 40, 52, 56, 64, 108, 124})
_ACCEPT = "image/jpeg,image/png,image/webp,image/gif,image/bmp,image/tiff,*/*;q=0.5"
# Declared types that cannot carry a raster image; anything else still faces the magic-byte check.
_NON_IMAGE_TOP_LEVEL = frozenset({"text", "audio", "video", "font", "multipart", "message", "model"})
_NON_IMAGE_APPLICATION = frozenset(
    {"json", "xml", "xhtml+xml", "javascript", "ecmascript", "pdf", "zip", "gzip", "x-tar"}
)
# Each worker thread has its own session and makes one request at a time, so one
# pooled connection per host suffices; keep-alive is kept for this many hosts.
_POOLED_HOSTS_PER_THREAD = 16
# How many pulled-but-not-started locators fetch_many may hold per worker while
# it looks for one whose host has a free slot.
_BACKLOG_PER_WORKER = 4
_QUERY = re.compile(r"\?[^\s'\")]*")
_USERINFO = re.compile(r"//[^/@\s]+@")
_UNFETCHABLE_URL = (
    requests.exceptions.InvalidURL,
    requests.exceptions.InvalidSchema,
    requests.exceptions.MissingSchema,
    requests.TooManyRedirects,
)


def sniff_image_format(head: bytes) -> str | None:
    """Name the raster format from the first bytes, or None; declared types lie too often to trust."""
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "tiff"
    # "BM" alone matches plenty of text, so also require a known DIB header size.
    if head[:2] == b"BM" and int.from_bytes(head[14:18], "little") in _BMP_DIB_HEADER_SIZES:
        return "bmp"
    return None


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
        media_type: str | None = None
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
            if media_type is None and self.n_bytes >= _SNIFF_BYTES:
                media_type = sniff_image_format(b"".join(parts)[:_SNIFF_BYTES])
                if media_type is None:
                    return _Outcome(
                        n_bytes=self.n_bytes,
                        reason_code=NOT_AN_IMAGE,
                        detail="leading bytes match no supported image format; download stopped",
                    )
        if self.n_bytes == 0:
            return _Outcome(reason_code=EMPTY_BODY, detail="zero bytes received")
        data = b"".join(parts)
        sha256 = digest.hexdigest()
        media_type = media_type or sniff_image_format(data)
        if media_type is None:
            return _Outcome(
                n_bytes=self.n_bytes,
                sha256=sha256,
                reason_code=NOT_AN_IMAGE,
                detail=f"{self.n_bytes}-byte body matches no supported image format",
            )
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
    """Host that per-host politeness limits apply to; None for local files."""
    parts = urlsplit(locator)
    if parts.scheme.lower() not in ("http", "https"):
        return None
    return parts.hostname


class HttpFetcher:
    """Fetch image bytes from http(s) URLs, file:// URLs and local paths, politely and within bounds."""

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

    def fetch(self, locator: str) -> FetchResult:
        """Fetch one locator; failures come back as a result with a reason code, never as an exception."""
        parts = urlsplit(locator)
        scheme = parts.scheme.lower()
        if scheme in ("http", "https"):
            return self._with_retries(locator, partial(self._attempt_http, locator))
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
        return self._with_retries(locator, partial(self._attempt_file, path))

    def fetch_many(self, locators: Iterable[str]) -> Iterator[FetchResult]:
        """Fetch concurrently and yield results as they complete.

        At most ``max_workers`` fetches run at once and at most ``per_host_limit``
        per host. The input is pulled lazily: besides the running fetches, only a
        small backlog is held while looking for a locator whose host has a free slot.
        """
        source = iter(locators)
        backlog: deque[tuple[str, str | None]] = deque()
        backlog_limit = self.max_workers * _BACKLOG_PER_WORKER
        in_flight: dict[Future[FetchResult], str | None] = {}
        busy_per_host: Counter[str] = Counter()
        source_exhausted = False
        pool = ThreadPoolExecutor(max_workers=self.max_workers, thread_name_prefix="aesforge-fetch")
        try:
            while True:
                while len(in_flight) < self.max_workers:
                    ready = self._pop_ready(backlog, busy_per_host)
                    if ready is not None:
                        locator, host = ready
                        if host is not None:
                            busy_per_host[host] += 1
                        in_flight[pool.submit(self.fetch, locator)] = host
                    elif source_exhausted or len(backlog) >= backlog_limit:
                        break
                    else:
                        try:
                            locator = next(source)
                        except StopIteration:
                            source_exhausted = True
                        else:
                            backlog.append((locator, _host_key(locator)))
                if not in_flight:
                    return
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    host = in_flight.pop(future)
                    if host is not None:
                        busy_per_host[host] -= 1
                    yield future.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _pop_ready(
        self, backlog: deque[tuple[str, str | None]], busy_per_host: Counter[str]
    ) -> tuple[str, str | None] | None:
        """Remove and return the oldest backlog entry whose host has a free slot."""
        for index, (_, host) in enumerate(backlog):
            if host is None or busy_per_host[host] < self.per_host_limit:
                entry = backlog[index]
                del backlog[index]
                return entry
        return None

    def _with_retries(self, locator: str, attempt_once: Callable[[], _Outcome]) -> FetchResult:
        attempts: list[FetchAttempt] = []
        for attempt_number in range(1, self.max_retries + 2):
            started_at = datetime.now(UTC)
            clock = time.perf_counter()
            outcome = attempt_once()
            attempts.append(
                FetchAttempt(
                    url=locator,
                    attempt=attempt_number,
                    status_code=outcome.status_code,
                    n_bytes=outcome.n_bytes,
                    sha256=outcome.sha256,
                    duration_ms=(time.perf_counter() - clock) * 1000.0,
                    error=(
                        f"{outcome.reason_code}: {outcome.detail}" if outcome.reason_code else None
                    ),
                    started_at=started_at,
                )
            )
            if not outcome.retryable or attempt_number > self.max_retries:
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
            self._local.session = session
        return session

    def _attempt_http(self, url: str) -> _Outcome:
        status_code: int | None = None
        reader = _CappedBodyReader(self.max_bytes)
        try:
            with self._session().get(
                url, stream=True, timeout=(self.timeout_s, self.timeout_s)
            ) as response:
                status_code = response.status_code
                rejection = self._reject_before_body(response)
                if rejection is not None:
                    return replace(rejection, status_code=status_code)
                outcome = reader.read(response.iter_content(chunk_size=CHUNK_BYTES))
                return replace(outcome, status_code=status_code)
        except requests.Timeout:
            return self._timed_out(status_code, reader.n_bytes)
        except requests.ConnectionError as exc:
            # requests reports a read timeout in the middle of the body as a ConnectionError.
            if exc.args and isinstance(exc.args[0], ReadTimeoutError):
                return self._timed_out(status_code, reader.n_bytes)
            return _connection_failure(exc, status_code, reader.n_bytes)
        except _UNFETCHABLE_URL as exc:
            return _Outcome(
                status_code=status_code,
                reason_code=INVALID_LOCATOR,
                detail=_scrub(f"{type(exc).__name__}: {exc}"),
            )
        except requests.RequestException as exc:  # chunked-encoding / decoding errors mid-body
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

    def _timed_out(self, status_code: int | None, n_bytes: int) -> _Outcome:
        return _Outcome(
            status_code=status_code,
            n_bytes=n_bytes,
            reason_code=TIMEOUT,
            detail=f"no progress within timeout_s={self.timeout_s}",
            retryable=True,
        )

    def _attempt_file(self, path: Path) -> _Outcome:
        try:
            with path.open("rb") as handle:
                info = os.fstat(handle.fileno())
                if not stat.S_ISREG(info.st_mode):
                    return _Outcome(reason_code=MISSING_FILE, detail=f"not a regular file: {path}")
                if info.st_size > self.max_bytes:
                    return _Outcome(
                        reason_code=TOO_LARGE,
                        detail=f"file size {info.st_size} exceeds max_bytes={self.max_bytes}; not read",
                    )
                chunks = iter(partial(handle.read, CHUNK_BYTES), b"")
                return _CappedBodyReader(self.max_bytes).read(chunks)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            return _Outcome(reason_code=MISSING_FILE, detail=f"{type(exc).__name__}: {path}")
        except OSError as exc:
            return _Outcome(
                reason_code=UNREADABLE_FILE, detail=f"{type(exc).__name__}: {exc.strerror} ({path})"
            )


def _connection_failure(exc: Exception, status_code: int | None, n_bytes: int) -> _Outcome:
    return _Outcome(
        status_code=status_code,
        n_bytes=n_bytes,
        reason_code=CONNECTION_ERROR,
        detail=_scrub(f"{type(exc).__name__}: {exc}"),
        retryable=True,
    )


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
