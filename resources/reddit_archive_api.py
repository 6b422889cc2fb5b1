"""Reddit posts and comment trees from an Arctic-Shift-style archive HTTP API, as ``RawItem``s.

Why: users without dump files can still rebuild the reference set from a public archive service. The service
is someone else's, so requests are spaced, identified, bounded in time and retried politely; every failure
becomes a ``SourceProblem`` for its batch or post and the run goes on.

Endpoints used (``{"data": [...]}`` responses whose entries are plain objects or Reddit ``{"kind", "data"}``
nodes): ``/api/posts/ids?ids=`` and ``/api/comments/ids?ids=`` (at most 500 ids a request),
``/api/comments/tree?link_id=t3_<id>&limit=`` (nested replies with "more" stubs) and
``/api/posts/search?subreddit=&after=&before=&sort=asc&limit=`` (epoch-second bounds).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import urlencode, urlsplit

import requests
from dagster import ConfigurableResource
from pydantic import Field
from requests.adapters import HTTPAdapter

from resources.fetching import parse_retry_after, retry_delay_s
from resources.reddit_sources import (
    CONNECTION_ERROR,
    HTTP_ERROR,
    MALFORMED_JSON,
    NOT_FOUND,
    IdOrWindowSource,
    Origin,
    RawItem,
    SourceProblem,
    SubredditWindow,
)

logger = logging.getLogger(__name__)

SOURCE_KIND = "archive_api"
MAX_IDS_PER_REQUEST = 500
"""The archive's cap on ids in one ``/ids`` request."""
SEARCH_PAGE_SIZE = 100
"""Posts asked for per search page (the archive's maximum)."""
TREE_LIMIT = 10_000
"""Comments asked for in one tree request; whatever the archive holds back arrives as "more" stubs, which are expanded."""
DEFAULT_USER_AGENT = "aesforge/0.1 (+https://github.com/aesforge/aesforge; photocritique reference set)"
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MIN_INTERVAL_S = 1.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_BACKOFF_S = 1.0
DEFAULT_MAX_BACKOFF_S = 60.0


def record_retrieved_at(data: Mapping[str, Any]) -> float | None:
    """The record's own retrieval time (``retrieved_on`` or ``retrieved_utc``, int/float or numeric string), else None."""
    for key in ("retrieved_on", "retrieved_utc"):
        value = data.get(key)
        if isinstance(value, bool) or value is None:
            continue
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(seconds):
            return seconds
    return None


def unwrap_node(entry: object) -> tuple[str | None, dict[str, Any]] | None:
    """``(kind, data)`` for a Reddit ``{"kind", "data"}`` node, ``(None, entry)`` for a plain object, None otherwise."""
    if not isinstance(entry, dict):
        return None
    kind, data = entry.get("kind"), entry.get("data")
    if isinstance(kind, str) and isinstance(data, dict):
        return kind, data
    return None, entry


def record_created_utc(data: Mapping[str, Any]) -> float | None:
    """``created_utc`` as seconds (int, float or numeric string in the archives), else None."""
    try:
        seconds = float(data.get("created_utc"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return seconds if math.isfinite(seconds) else None


def id_batches(ids: Iterable[str], size: int) -> Iterator[list[str]]:
    """Consecutive lists of at most ``size`` ids, pulled lazily from ``ids``."""
    batch: list[str] = []
    for item_id in ids:
        batch.append(item_id)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass(frozen=True)
class _Page:
    """A 2xx response whose body had a ``data`` array."""

    url: str
    entries: list[Any]
    received_at: float


class ArchiveApiSource(IdOrWindowSource):
    """``RedditSource`` over an Arctic-Shift-style archive API (``name`` = ``"archive_api"``).

    Each record's ``Origin.locator`` is a URL of the same endpoint that returns exactly that record (the tree
    URL for comments read from a tree), so provenance stays short even for 500-id batches; problems carry the
    URL actually requested. ``retrieved_at`` is the record's ``retrieved_on``/``retrieved_utc`` when present,
    else the local clock when the response arrived.
    """

    name = SOURCE_KIND

    def __init__(
        self,
        base_url: str,
        *,
        batch_size: int = MAX_IDS_PER_REQUEST,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        min_interval_s: float = DEFAULT_MIN_INTERVAL_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_s: float = DEFAULT_BACKOFF_S,
        max_backoff_s: float = DEFAULT_MAX_BACKOFF_S,
        user_agent: str = DEFAULT_USER_AGENT,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not 1 <= batch_size <= MAX_IDS_PER_REQUEST:
            raise ValueError(f"batch_size must be between 1 and {MAX_IDS_PER_REQUEST}, got {batch_size}")
        if timeout_s <= 0 or min_interval_s < 0 or max_retries < 0 or backoff_s < 0 or max_backoff_s < 0:
            raise ValueError("timeout_s must be > 0; min_interval_s, max_retries, backoff_s, max_backoff_s >= 0")
        if not user_agent.strip():
            raise ValueError("user_agent must be non-empty: the archive deserves to know who is asking")
        self.base_url = base_url.rstrip("/")
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.min_interval_s = min_interval_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._session = requests.Session()
        self._session.mount("http://", HTTPAdapter(max_retries=0))
        self._session.mount("https://", HTTPAdapter(max_retries=0))
        self._session.headers.update({"User-Agent": user_agent, "Accept": "application/json"})
        self._last_request_at: float | None = None

    def __repr__(self) -> str:
        return f"ArchiveApiSource(base_url={self.base_url!r}, batch_size={self.batch_size})"

    def close(self) -> None:
        """Release pooled connections."""
        self._session.close()


    def comments(self, post_ids: Collection[str]) -> Iterator[RawItem | SourceProblem]:
        """Every comment, at any depth, of each post: its tree, then each "more" stub expanded by id."""
        for post_id in dict.fromkeys(post_ids):
            yield from self._comments_of(post_id)

    # --- posts ---------------------------------------------------------------------------------

    def _posts_by_ids(self, ids: Iterable[str]) -> Iterator[RawItem | SourceProblem]:
        for batch in id_batches(dict.fromkeys(ids), self.batch_size):
            page = self._get("/api/posts/ids", {"ids": ",".join(batch)}, item_id=batch[0] if len(batch) == 1 else None)
            if isinstance(page, SourceProblem):
                yield page
                continue
            returned: set[str] = set()
            for item in self._records(page, "t3", "submission", per_item_path="/api/posts/ids"):
                if isinstance(item, RawItem):
                    returned.add(str(item.data.get("id")))
                yield item
            for missing in (item_id for item_id in batch if item_id not in returned):
                yield SourceProblem(
                    origin=Origin(SOURCE_KIND, self._url("/api/posts/ids", {"ids": missing}), retrieved_at=page.received_at),
                    reason_code=NOT_FOUND,
                    detail="post id asked for but not returned by the archive",
                    item_id=missing,
                )

    def _posts_in_window(self, window: SubredditWindow) -> Iterator[RawItem | SourceProblem]:
        """Page through the search in ascending time.

        ``after`` moves to one second before the newest ``created_utc`` seen, so posts sharing that second are
        not lost whether the archive treats ``after`` as exclusive or inclusive; the ids already seen in that
        last stretch are skipped. Paging stops on an empty page or a page with nothing new.
        """
        wanted = window.subreddit.casefold()
        after = window.start_utc - 1
        recent: dict[str, float] = {}  # id -> created_utc of posts seen that the next page may repeat
        while True:
            params = {
                "subreddit": window.subreddit,
                "after": after,
                "before": window.end_utc,
                "sort": "asc",
                "limit": SEARCH_PAGE_SIZE,
            }
            page = self._get("/api/posts/search", params)
            if isinstance(page, SourceProblem):
                yield page
                return
            newest: float | None = None
            new_ids = 0
            for item in self._records(page, "t3", "submission", per_item_path="/api/posts/ids"):
                if isinstance(item, SourceProblem):
                    yield item
                    continue
                item_id = str(item.data.get("id"))
                if item_id in recent:
                    continue
                new_ids += 1
                created = record_created_utc(item.data)
                if created is not None:
                    newest = created if newest is None else max(newest, created)
                    recent[item_id] = created
                    if not window.start_utc <= created < window.end_utc:
                        continue  # the archive's bounds may be inclusive where the window's are not
                if str(item.data.get("subreddit", "")).casefold() == wanted:
                    yield item
            if new_ids == 0 or newest is None:
                if len(page.entries) >= SEARCH_PAGE_SIZE:
                    yield SourceProblem(
                        origin=Origin(SOURCE_KIND, page.url, retrieved_at=page.received_at),
                        reason_code=NOT_FOUND,
                        detail="search paging stalled on a full page without new dated posts; "
                        "later posts of the window may be missing",
                    )
                return
            after = math.floor(newest) - 1
            recent = {item_id: created for item_id, created in recent.items() if created > after}

    # --- comments ------------------------------------------------------------------------------

    def _comments_of(self, post_id: str) -> Iterator[RawItem | SourceProblem]:
        link_id = f"t3_{post_id}"
        page = self._get("/api/comments/tree", {"link_id": link_id, "limit": TREE_LIMIT}, item_id=post_id)
        if isinstance(page, SourceProblem):
            yield page
            return
        seen: set[str] = set()
        hidden: dict[str, None] = {}
        yield from self._walk_tree(page, page.entries, seen, hidden, post_id, per_item_path=None)
        asked: set[str] = set()
        while True:
            batch = [comment_id for comment_id in hidden if comment_id not in seen and comment_id not in asked]
            hidden.clear()
            if not batch:
                return
            for chunk in id_batches(batch, self.batch_size):
                asked.update(chunk)
                more = self._get("/api/comments/ids", {"ids": ",".join(chunk)}, item_id=post_id)
                if isinstance(more, SourceProblem):
                    yield more
                    continue
                yield from self._walk_tree(more, more.entries, seen, hidden, post_id, per_item_path="/api/comments/ids")
                for missing in (comment_id for comment_id in chunk if comment_id not in seen):
                    yield SourceProblem(
                        origin=Origin(
                            SOURCE_KIND, self._url("/api/comments/ids", {"ids": missing}), retrieved_at=more.received_at
                        ),
                        reason_code=NOT_FOUND,
                        detail=f"comment listed in a 'more' stub of {link_id} but not returned by the archive",
                        item_id=missing,
                    )

    def _walk_tree(
        self,
        page: _Page,
        nodes: list[Any],
        seen: set[str],
        hidden: dict[str, None],
        post_id: str,
        per_item_path: str | None,
    ) -> Iterator[RawItem | SourceProblem]:
        """Flatten nested comment nodes (parents before replies), dropping ``replies`` from each record and
        collecting the ids behind "more" stubs into ``hidden``."""
        stack = list(reversed(nodes))
        while stack:
            entry = stack.pop()
            node = unwrap_node(entry)
            if node is None:
                yield self._malformed(page, f"comment entry is a {type(entry).__name__}, not an object", post_id)
                continue
            kind, data = node
            if kind == "Listing":
                stack.extend(reversed(_listing_children(data)))
                continue
            if kind == "more":
                children = data.get("children") if isinstance(data.get("children"), list) else []
                if not children:
                    yield SourceProblem(
                        origin=Origin(SOURCE_KIND, page.url, retrieved_at=page.received_at),
                        reason_code=NOT_FOUND,
                        detail=f"a 'more' stub under {data.get('parent_id')} lists no comment ids to expand",
                        item_id=post_id,
                    )
                hidden.update((str(child), None) for child in children if isinstance(child, str))
                continue
            if kind not in (None, "t1"):
                yield self._malformed(page, f"unexpected node kind {kind!r} in a comment tree", post_id)
                continue
            replies = data.get("replies")
            record = {key: value for key, value in data.items() if key != "replies"}
            if isinstance(replies, dict):
                stack.extend(reversed(_listing_children(replies.get("data", replies))))
            comment_id = record.get("id")
            if isinstance(comment_id, str):
                if comment_id in seen:
                    continue
                seen.add(comment_id)
            locator = (
                self._url(per_item_path, {"ids": comment_id})
                if per_item_path is not None and isinstance(comment_id, str)
                else page.url
            )
            yield RawItem("comment", record, self._origin(locator, record, page.received_at))

    # --- HTTP ----------------------------------------------------------------------------------

    def _records(
        self, page: _Page, expected_kind: str, item_kind: str, per_item_path: str
    ) -> Iterator[RawItem | SourceProblem]:
        for index, entry in enumerate(page.entries):
            node = unwrap_node(entry)
            if node is None or node[0] not in (None, expected_kind):
                what = type(entry).__name__ if node is None else f"node of kind {node[0]!r}"
                yield self._malformed(page, f"data[{index}] is a {what}, expected a {item_kind}", None)
                continue
            data = node[1]
            item_id = data.get("id")
            locator = self._url(per_item_path, {"ids": item_id}) if isinstance(item_id, str) else page.url
            yield RawItem(item_kind, data, self._origin(locator, data, page.received_at))

    @staticmethod
    def _origin(locator: str, data: Mapping[str, Any], received_at: float) -> Origin:
        retrieved_at = record_retrieved_at(data)
        return Origin(SOURCE_KIND, locator, retrieved_at=received_at if retrieved_at is None else retrieved_at)

    @staticmethod
    def _malformed(page: _Page, detail: str, item_id: str | None) -> SourceProblem:
        return SourceProblem(
            origin=Origin(SOURCE_KIND, page.url, retrieved_at=page.received_at),
            reason_code=MALFORMED_JSON,
            detail=detail,
            item_id=item_id,
        )

    def _url(self, path: str, params: Mapping[str, object]) -> str:
        return f"{self.base_url}{path}?{urlencode(params, safe=',')}"

    def _wait_turn(self) -> None:
        """Keep at least ``min_interval_s`` between the starts of consecutive requests."""
        if self._last_request_at is not None:
            pause = self._last_request_at + self.min_interval_s - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        self._last_request_at = time.monotonic()

    def _get(self, path: str, params: Mapping[str, object], item_id: str | None = None) -> _Page | SourceProblem:
        """GET with retries on connection failures, 429 and 5xx (honouring Retry-After); never raises."""
        url = self._url(path, params)
        attempt = 0
        while True:
            attempt += 1
            self._wait_turn()
            retry_after: float | None = None
            try:
                response = self._session.get(url, timeout=self.timeout_s)
            except requests.RequestException as exc:
                reason, detail, retryable = CONNECTION_ERROR, f"{type(exc).__name__}: {exc}", True
            else:
                received_at = time.time()
                status = response.status_code
                if 200 <= status < 300:
                    return self._parse(url, response, received_at, item_id)
                retryable = status == 429 or status >= 500
                reason, detail = HTTP_ERROR, f"HTTP {status} {response.reason or ''}".rstrip()
                if retryable:
                    retry_after = parse_retry_after(response.headers.get("Retry-After"))
            if not retryable or attempt > self.max_retries:
                logger.warning("archive request failed (%s): %s", detail, url)
                return SourceProblem(
                    origin=Origin(SOURCE_KIND, url, retrieved_at=time.time()),
                    reason_code=reason,
                    detail=f"{detail} (after {attempt} attempt{'s' if attempt > 1 else ''})",
                    item_id=item_id,
                )
            delay = retry_delay_s(
                attempt, backoff_s=self.backoff_s, max_backoff_s=self.max_backoff_s, retry_after_s=retry_after
            )
            logger.debug("retrying %s in %.2fs after %s", url, delay, detail)
            time.sleep(delay)

    @staticmethod
    def _parse(url: str, response: requests.Response, received_at: float, item_id: str | None) -> _Page | SourceProblem:
        try:
            payload = response.json()
        except ValueError:
            detail = f"body is not JSON (Content-Type {response.headers.get('Content-Type')!r}, {len(response.content)} bytes)"
        else:
            entries = payload.get("data") if isinstance(payload, dict) else None
            if isinstance(entries, list):
                return _Page(url=url, entries=entries, received_at=received_at)
            detail = f"JSON body is a {type(payload).__name__} without a 'data' array"
        return SourceProblem(
            origin=Origin(SOURCE_KIND, url, retrieved_at=received_at),
            reason_code=MALFORMED_JSON,
            detail=detail,
            item_id=item_id,
        )


def _listing_children(listing: Any) -> list[Any]:
    """Children of a Listing's ``data`` (or of the Listing node itself); empty when absent or malformed."""
    data = listing.get("data", listing) if isinstance(listing, dict) else None
    children = data.get("children") if isinstance(data, dict) else None
    return children if isinstance(children, list) else []


class RedditArchiveApiResource(ConfigurableResource):
    """Where the archive API lives and how politely to use it; no base URL means the source is not used."""

    base_url: Optional[str] = Field(
        default=None, description="Root of the Arctic-Shift-style API (e.g. https://arctic-shift.photon-reddit.com)"
    )
    batch_size: int = Field(
        default=MAX_IDS_PER_REQUEST, ge=1, le=MAX_IDS_PER_REQUEST, description="Ids per /ids request (at most 500)"
    )
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, description="Connect and read timeout per request, seconds")
    min_interval_s: float = Field(
        default=DEFAULT_MIN_INTERVAL_S, ge=0, description="Least time between the starts of two requests, seconds"
    )
    max_retries: int = Field(
        default=DEFAULT_MAX_RETRIES, ge=0, description="Retries after the first attempt on connection errors, 429 and 5xx"
    )
    backoff_s: float = Field(
        default=DEFAULT_BACKOFF_S, ge=0, description="Base of the exponential backoff between retries (jitter is added)"
    )
    max_backoff_s: float = Field(
        default=DEFAULT_MAX_BACKOFF_S, ge=0, description="Upper bound on any wait between retries, Retry-After included"
    )
    user_agent: str = Field(default=DEFAULT_USER_AGENT, description="User-Agent sent with every request")

    def get_source(self) -> ArchiveApiSource | None:
        """The configured source, or None when no base URL is set."""
        if not self.base_url:
            return None
        return ArchiveApiSource(
            self.base_url,
            batch_size=self.batch_size,
            timeout_s=self.timeout_s,
            min_interval_s=self.min_interval_s,
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
            max_backoff_s=self.max_backoff_s,
            user_agent=self.user_agent,
        )
