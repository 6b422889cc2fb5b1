"""What every Reddit source (zstd dumps, the archive HTTP API, the live API) yields, and the reason codes of
reading one.

Why in resources: the API clients yield these and know nothing of how a record is stored, so the normalizer that
turns ``RawItem``s into posts and comments (``assets.photocritique.logic.reddit_records``) can change without
touching a client; ``Origin`` keeps where each copy came from, for provenance.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Protocol

# Reason codes for problems met while reading a source (stable strings, stored in the warehouse).
MALFORMED_JSON = "malformed_json"
HTTP_ERROR = "http_error"
CONNECTION_ERROR = "connection_error"
NOT_FOUND = "not_found"

SOURCE_KINDS = ("dump", "archive_api", "reddit_api")


@dataclass(frozen=True)
class Origin:
    """Where one copy of a record was read: enough to find it again and to order rescans."""

    source_kind: str  # "dump" | "archive_api" | "reddit_api"
    locator: str  # dump file path, or the endpoint URL requested (no secrets in it)
    line_no: int | None = None  # 1-based line in the uncompressed dump
    byte_offset: int | None = None  # offset of the line start in the uncompressed stream
    retrieved_at: float | None = None  # epoch seconds when this copy was retrieved


@dataclass(frozen=True)
class RawItem:
    """A Reddit ``data`` object exactly as the wire or dump had it, before normalization."""

    kind: str  # "submission" | "comment"
    data: dict
    origin: Origin


@dataclass(frozen=True)
class SourceProblem:
    """Input that could not be used; stored with its reason instead of being dropped."""

    origin: Origin
    reason_code: str
    detail: str
    item_id: str | None = None


@dataclass(frozen=True)
class SubredditWindow:
    """Candidate selection without an id list: a subreddit (case-insensitive) and a [start, end) UTC range."""

    subreddit: str
    start_utc: int
    end_utc: int


class RedditSource(Protocol):
    """One interface over dumps, the archive API and the live API.

    ``submissions`` gets exactly one of ``ids`` (bare base36) or ``window``; ``comments`` returns every comment,
    at any depth, whose ``link_id`` is ``t3_<id>`` for an id in ``post_ids``.
    """

    name: str

    def submissions(self, ids: Collection[str] | None, window: SubredditWindow | None) -> Iterator[RawItem | SourceProblem]: ...

    def comments(self, post_ids: Collection[str]) -> Iterator[RawItem | SourceProblem]: ...


class IdOrWindowSource(ABC):
    """Base of the HTTP sources: ``submissions`` enforces "exactly one of ids or window" and dispatches."""

    def submissions(self, ids: Collection[str] | None, window: SubredditWindow | None) -> Iterator[RawItem | SourceProblem]:
        if (ids is None) == (window is None):
            raise ValueError("give exactly one of ids or window")
        return self._posts_by_ids(ids) if ids is not None else self._posts_in_window(window)

    @abstractmethod
    def _posts_by_ids(self, ids: Collection[str]) -> Iterator[RawItem | SourceProblem]: ...

    @abstractmethod
    def _posts_in_window(self, window: SubredditWindow) -> Iterator[RawItem | SourceProblem]: ...
