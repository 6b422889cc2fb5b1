"""Reddit posts and comments from the live Reddit API through PRAW, as ``RawItem``s shaped like the archives.

Why: posts newer than the latest dump, or users with API credentials but no dumps, still need the full thread.
PRAW turns JSON into lazy model objects; ``praw_to_raw`` turns them back into the plain ``data`` dict the
dumps and the archive API carry, so one normalizer serves all three sources. Failures (HTTP status, network,
refused credentials) become ``SourceProblem``s for their batch or post and the run goes on.

The client secret and password are handed to PRAW only; they never appear in reprs, logs, locators or problem
details.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, Optional, TypeVar

import praw
import prawcore
from dagster import ConfigurableResource
from praw.exceptions import PRAWException
from praw.models import Comment, MoreComments, Redditor, Submission, Subreddit
from praw.models.base import PRAWBase
from pydantic import Field

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
from resources.reddit_archive_api import id_batches, record_created_utc, record_retrieved_at

logger = logging.getLogger(__name__)

SOURCE_KIND = "reddit_api"
INFO_BATCH = 100
"""Fullnames per /api/info request (Reddit's cap)."""
DEFAULT_USER_AGENT = "python:aesforge:0.1 (photocritique reference set)"
DEFAULT_TIMEOUT_S = 16.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_BACKOFF_S = 2.0
DEFAULT_MAX_BACKOFF_S = 60.0
DELETED_AUTHOR = "[deleted]"
"""What the archives hold where PRAW reports a deleted author as None."""

# Attributes PRAW sets on its models for its own use; the wire data never had them.
_PRAW_BOOKKEEPING = frozenset({"comment_limit", "comment_sort"})
_T = TypeVar("_T")


class _Unconvertible:
    """Marker for attribute values with no JSON form (helper objects PRAW caches on a model)."""


_UNCONVERTIBLE = _Unconvertible()


def praw_to_raw(obj: PRAWBase) -> dict[str, Any]:
    """The plain ``data`` dict behind a PRAW model, in the dump/archive shape.

    Public attributes only (read from ``vars`` so nothing triggers a lazy fetch); ``author`` becomes the
    username (``"[deleted]"`` where PRAW has None), ``subreddit`` its display name, nested PRAW objects plain
    dicts; ``replies`` and PRAW's bookkeeping are dropped.
    """
    raw: dict[str, Any] = {}
    for key, value in vars(obj).items():
        if key.startswith("_") or key in _PRAW_BOOKKEEPING:
            continue
        converted = _plain(value)
        if converted is not _UNCONVERTIBLE:
            raw[key] = converted
    if isinstance(obj, (Submission, Comment)) and "author" in vars(obj) and raw.get("author") is None:
        raw["author"] = DELETED_AUTHOR
    return raw


def _plain(value: object) -> object:
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Redditor):
        return vars(value).get("name")
    if isinstance(value, Subreddit):
        return vars(value).get("display_name")
    if isinstance(value, PRAWBase):
        return praw_to_raw(value)
    if isinstance(value, Mapping):
        pairs = ((str(key), _plain(item)) for key, item in value.items())
        return {key: item for key, item in pairs if item is not _UNCONVERTIBLE}
    if isinstance(value, (list, tuple)):
        return [item for item in map(_plain, value) if item is not _UNCONVERTIBLE]
    return _UNCONVERTIBLE


class _Failed(Exception):
    """A PRAW call that failed for good, already described as a problem."""

    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(detail)
        self.reason_code = reason_code
        self.detail = detail


class PrawSource(IdOrWindowSource):
    """``RedditSource`` over the live Reddit API (``name`` = ``"reddit_api"``).

    Posts by id come from ``/api/info`` in batches of 100; a window walks ``/r/<sub>/new`` newest first and
    stops at the first post older than the window. Reddit's listings reach back only about 1000 posts, so a
    window older than that cannot be served from the live API; when the listing runs out before the window's
    start a ``not_found`` problem says so. Comments come from each post's thread with every "more" stub
    expanded (``replace_more(limit=None)``); a post whose thread fails yields one problem and no partial thread.

    Locators are API URLs without credentials (``{oauth_url}/comments/<id>`` for comments,
    ``{oauth_url}/api/info?id=t3_<id>`` for posts); ``retrieved_at`` is the record's ``retrieved_on`` /
    ``retrieved_utc`` if present, else the local clock when the response arrived.
    """

    name = SOURCE_KIND

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str,
        user_agent: str = DEFAULT_USER_AGENT,
        username: str | None = None,
        password: str | None = None,
        reddit_url: str | None = None,
        oauth_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_s: float = DEFAULT_BACKOFF_S,
        max_backoff_s: float = DEFAULT_MAX_BACKOFF_S,
    ) -> None:
        if not client_id or not client_secret:
            raise ValueError("client_id and client_secret are both required")
        if timeout_s <= 0 or max_retries < 0 or backoff_s < 0 or max_backoff_s < 0:
            raise ValueError("timeout_s must be > 0; max_retries, backoff_s, max_backoff_s >= 0")
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._hidden = tuple(secret for secret in (client_secret, password) if secret)
        endpoints = {
            key: url.rstrip("/") for key, url in (("reddit_url", reddit_url), ("oauth_url", oauth_url)) if url
        }
        # username, password and refresh_token are always passed so praw.ini or praw_* variables cannot
        # silently switch the kind of login.
        self._reddit = praw.Reddit(
            client_id=client_id,
            client_secret=client_secret,
            user_agent=user_agent,
            username=username if username and password else None,
            password=password if username and password else None,
            refresh_token=None,
            check_for_updates=False,
            check_for_async=False,
            timeout=max(1, math.ceil(timeout_s)),
            **endpoints,
        )
        self.oauth_url = str(self._reddit.config.oauth_url).rstrip("/")

    def __repr__(self) -> str:
        return f"PrawSource(oauth_url={self.oauth_url!r})"


    def comments(self, post_ids: Collection[str]) -> Iterator[RawItem | SourceProblem]:
        """Every comment, at any depth, of each post, with "more" stubs expanded."""
        for post_id in dict.fromkeys(post_ids):
            locator = f"{self.oauth_url}/comments/{post_id}"
            try:
                found = self._call(lambda post_id=post_id: self._thread(post_id))
            except _Failed as failure:
                yield self._problem(locator, failure, post_id)
                continue
            received_at = time.time()
            for comment in found:
                data = praw_to_raw(comment)
                yield RawItem("comment", data, self._origin(locator, data, received_at))

    # --- internals -----------------------------------------------------------------------------

    def _thread(self, post_id: str) -> list[Comment]:
        forest = self._reddit.submission(id=post_id).comments
        forest.replace_more(limit=None)
        return [comment for comment in forest.list() if not isinstance(comment, MoreComments)]

    def _posts_by_ids(self, ids: Iterable[str]) -> Iterator[RawItem | SourceProblem]:
        for batch in id_batches(dict.fromkeys(ids), INFO_BATCH):
            fullnames = [f"t3_{item_id}" for item_id in batch]
            try:
                found = self._call(lambda fullnames=fullnames: list(self._reddit.info(fullnames=fullnames)))
            except _Failed as failure:
                locator = f"{self.oauth_url}/api/info?id={','.join(fullnames)}"
                yield self._problem(locator, failure, batch[0] if len(batch) == 1 else None)
                continue
            received_at = time.time()
            returned: set[str] = set()
            for thing in found:
                if not isinstance(thing, Submission):
                    continue
                data = praw_to_raw(thing)
                returned.add(str(data.get("id")))
                yield RawItem("submission", data, self._origin(self._info_url(data.get("id")), data, received_at))
            for missing in (item_id for item_id in batch if item_id not in returned):
                yield SourceProblem(
                    origin=Origin(SOURCE_KIND, self._info_url(missing), retrieved_at=received_at),
                    reason_code=NOT_FOUND,
                    detail="post id asked for but not returned by /api/info",
                    item_id=missing,
                )

    def _posts_in_window(self, window: SubredditWindow) -> Iterator[RawItem | SourceProblem]:
        locator = f"{self.oauth_url}/r/{window.subreddit}/new"
        last_fullname: str | None = None
        seen = 0
        oldest: float | None = None
        attempt = 0
        while True:
            params = {"after": last_fullname} if last_fullname else None
            listing = self._reddit.subreddit(window.subreddit).new(limit=None, params=params)
            try:
                for submission in listing:
                    data = praw_to_raw(submission)
                    seen += 1
                    last_fullname = f"t3_{data.get('id')}"
                    created = record_created_utc(data)
                    if created is None:
                        continue
                    oldest = created if oldest is None else min(oldest, created)
                    if created < window.start_utc:
                        return
                    if created < window.end_utc:
                        yield RawItem("submission", data, self._origin(locator, data, time.time()))
                break
            except prawcore.TooManyRequests as exc:
                attempt += 1
                if attempt > self.max_retries:
                    yield self._problem(locator, _failure(exc, self._hidden), None)
                    return
                self._pause(attempt, exc)
            except (prawcore.PrawcoreException, PRAWException) as exc:
                yield self._problem(locator, _failure(exc, self._hidden), None)
                return
        yield SourceProblem(
            origin=Origin(SOURCE_KIND, locator, retrieved_at=time.time()),
            reason_code=NOT_FOUND,
            detail=(
                f"the listing ended after {seen} posts (oldest created_utc {oldest}) before reaching the window start "
                f"{window.start_utc}; Reddit listings hold only about the newest 1000 posts, so older posts may be missing"
            ),
        )

    def _call(self, request: Callable[[], _T]) -> _T:
        """Run one PRAW call, retrying on 429 (prawcore already retries 5xx and dropped connections)."""
        attempt = 0
        while True:
            try:
                return request()
            except prawcore.TooManyRequests as exc:
                attempt += 1
                if attempt > self.max_retries:
                    raise _failure(exc, self._hidden) from None
                self._pause(attempt, exc)
            except (prawcore.PrawcoreException, PRAWException) as exc:
                raise _failure(exc, self._hidden) from None

    def _pause(self, attempt: int, exc: prawcore.TooManyRequests) -> None:
        retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
        delay = retry_delay_s(attempt, backoff_s=self.backoff_s, max_backoff_s=self.max_backoff_s, retry_after_s=retry_after)
        logger.debug("Reddit answered 429; retrying in %.2fs", delay)
        time.sleep(delay)

    def _info_url(self, post_id: object) -> str:
        return f"{self.oauth_url}/api/info?id=t3_{post_id}"

    @staticmethod
    def _origin(locator: str, data: Mapping[str, Any], received_at: float) -> Origin:
        retrieved_at = record_retrieved_at(data)
        return Origin(SOURCE_KIND, locator, retrieved_at=received_at if retrieved_at is None else retrieved_at)

    @staticmethod
    def _problem(locator: str, failure: _Failed, item_id: str | None) -> SourceProblem:
        logger.warning("Reddit API request failed (%s): %s", failure.detail, locator)
        return SourceProblem(
            origin=Origin(SOURCE_KIND, locator, retrieved_at=time.time()),
            reason_code=failure.reason_code,
            detail=failure.detail,
            item_id=item_id,
        )


def _failure(exc: Exception, hidden: tuple[str, ...]) -> _Failed:
    """Reason code and a secret-free detail for an exception raised by PRAW or prawcore."""
    if isinstance(exc, prawcore.BadJSON):
        reason, detail = MALFORMED_JSON, f"HTTP {exc.response.status_code} body is not JSON"
    elif isinstance(exc, prawcore.NotFound):
        reason, detail = NOT_FOUND, "HTTP 404 (NotFound)"
    elif isinstance(exc, prawcore.ResponseException):
        reason, detail = HTTP_ERROR, f"HTTP {exc.response.status_code} ({type(exc).__name__})"
    elif isinstance(exc, prawcore.OAuthException):
        reason, detail = HTTP_ERROR, f"login refused ({exc.error}: {exc.description or 'no description'})"
    elif isinstance(exc, prawcore.RequestException):
        original = exc.original_exception
        reason, detail = CONNECTION_ERROR, f"{type(original).__name__}: {original}"
    else:
        reason, detail = HTTP_ERROR, f"{type(exc).__name__}: {exc}"
    for secret in hidden:
        detail = detail.replace(secret, "<redacted>")
    return _Failed(reason, detail)


class RedditApiResource(ConfigurableResource):
    """Live Reddit API credentials, by the NAMES of the environment variables that hold them.

    The secret itself never sits in the config (or in Dagster's run records); without a client id and secret
    in the environment the source is simply not used.
    """

    client_id_env: str = Field(default="REDDIT_CLIENT_ID", description="Variable holding the OAuth client id")
    client_secret_env: str = Field(default="REDDIT_CLIENT_SECRET", description="Variable holding the client secret")
    user_agent: str = Field(
        default=DEFAULT_USER_AGENT, description="Reddit asks for '<platform>:<app id>:<version> (by /u/<name>)'"
    )
    username_env: str = Field(default="REDDIT_USERNAME", description="Variable holding a username (script apps)")
    password_env: str = Field(default="REDDIT_PASSWORD", description="Variable holding that user's password")
    reddit_url: Optional[str] = Field(default=None, description="Token endpoint host; None for https://www.reddit.com")
    oauth_url: Optional[str] = Field(default=None, description="API host; None for https://oauth.reddit.com")
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, description="Timeout per request, seconds")
    max_retries: int = Field(default=DEFAULT_MAX_RETRIES, ge=0, description="Retries after a 429 answer")
    backoff_s: float = Field(default=DEFAULT_BACKOFF_S, ge=0, description="Base of the backoff after a 429 without Retry-After")

    def configured(self) -> bool:
        """Whether the environment holds a client id and secret."""
        return bool(os.environ.get(self.client_id_env)) and bool(os.environ.get(self.client_secret_env))

    def get_source(self) -> PrawSource | None:
        """A source logged in with the environment's credentials, or None when they are missing."""
        if not self.configured():
            return None
        return PrawSource(
            client_id=os.environ[self.client_id_env],
            client_secret=os.environ[self.client_secret_env],
            user_agent=self.user_agent,
            username=os.environ.get(self.username_env) or None,
            password=os.environ.get(self.password_env) or None,
            reddit_url=self.reddit_url,
            oauth_url=self.oauth_url,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
        )
