"""Shared Reddit record types and the normalizer that turns raw Reddit JSON into storable posts and comments.

Every source (zstd dumps, an archive HTTP API, the live API) yields ``RawItem``s or ``SourceProblem``s, so the
rest of the pipeline never cares where a record came from; ``Origin`` keeps that answer for provenance.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Protocol, Self, TypeVar

from warehouse.ids import digest_of

# Reason codes for problems met while reading a source (stable strings, stored in the warehouse).
MALFORMED_JSON = "malformed_json"
TRUNCATED_FILE = "truncated_file"
MISSING_FIELD = "missing_field"
HTTP_ERROR = "http_error"
CONNECTION_ERROR = "connection_error"
NOT_FOUND = "not_found"
UNREADABLE_FILE = "unreadable_file"
UNSUPPORTED_FILE = "unsupported_file"

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


# --- usernames -------------------------------------------------------------------------------------------------

_NO_AUTHOR = frozenset({"", "[deleted]", "[removed]"})
_FINGERPRINT_LABEL = b"aesforge/reddit-username-salt/fingerprint/v1"


class UsernameHasher:
    """Salted HMAC-SHA256 of Reddit usernames, so authors can be compared but never read back.

    The salt is kept only inside this object and never appears in its repr, in exceptions or in the hashes'
    neighbourhood; ``salt_fingerprint`` lets a later run notice that the salt changed without storing it.
    """

    __slots__ = ("_key",)

    def __init__(self, salt: str) -> None:
        if not salt:
            raise ValueError("the username salt is empty; configure one (it is never stored)")
        self._key = salt.encode("utf-8")

    def __repr__(self) -> str:
        return "UsernameHasher(salt=<hidden>)"

    def __reduce__(self):
        raise TypeError("UsernameHasher holds a secret and is not picklable")

    def hash(self, name: str | None) -> str | None:
        """Hash of the case-folded name (Reddit names are case-insensitive); None when there is no author."""
        if name is None or name in _NO_AUTHOR:
            return None
        return hmac.new(self._key, name.casefold().encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    def salt_fingerprint(self) -> str:
        """Keyed hash of a fixed label: safe to store, differs whenever the salt differs."""
        return hmac.new(self._key, _FINGERPRINT_LABEL, hashlib.sha256).hexdigest()[:32]


# --- normalized records ----------------------------------------------------------------------------------------

REDDIT_BASE_URL = "https://www.reddit.com"
DEFAULT_BOT_ACCOUNTS = ("automoderator",)
# Raw submission fields the image resolver needs; kept (unescaped) in Post.media.
MEDIA_FIELDS = (
    "url",
    "domain",
    "is_self",
    "is_gallery",
    "gallery_data",
    "media_metadata",
    "preview",
    "crosspost_parent_list",
    "post_hint",
)
_BASE36_ID = re.compile(r"[0-9a-z]{1,13}")
_DELETED_CATEGORIES = frozenset({"deleted", "author"})


class _StoredRecord:
    """What posts and comments share: a content digest for entity ids, and a flat row for the warehouse."""

    def content_digest(self) -> str:
        return digest_of(_content(self))

    def to_row(self) -> dict[str, Any]:
        return _row(self)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Self:
        """Inverse of ``to_row``: rebuild the record from a stored warehouse row."""
        return _from_row(cls, row)


@dataclass(frozen=True)
class Post(_StoredRecord):
    """A submission after normalization: unescaped text, integer times, hashed author, provenance."""

    post_id: str
    name: str
    subreddit: str | None
    author_hash: str | None
    title: str
    body: str
    created_utc: int
    score: int | None
    num_comments: int | None
    permalink: str
    url: str | None
    removed_state: str | None  # "deleted" | "removed" | None
    distinguished: str | None
    stickied: bool
    over_18: bool
    crosspost_parent: str | None  # bare id
    media: dict[str, Any]
    retrieved_at: float | None
    origin: Origin



@dataclass(frozen=True)
class Comment(_StoredRecord):
    """A comment after normalization; ``author_is_bot`` is decided on the raw name, which is then dropped."""

    comment_id: str
    post_id: str  # bare id of the submission
    parent_id: str  # full, e.g. "t3_abc" (top level) or "t1_xyz" (reply)
    author_hash: str | None
    author_is_bot: bool
    body: str
    score: int | None
    created_utc: int
    distinguished: str | None
    stickied: bool
    removed_state: str | None  # "deleted" | "removed" | None
    retrieved_at: float | None
    origin: Origin



def _content(record: Post | Comment) -> dict[str, Any]:
    """The normalized fields that describe the record itself, not where or when this copy was read."""
    return {f.name: getattr(record, f.name) for f in fields(record) if f.name not in ("origin", "retrieved_at")}


def _row(record: Post | Comment) -> dict[str, Any]:
    row = _content(record)
    row["retrieved_at"] = record.retrieved_at
    row["source_kind"] = record.origin.source_kind
    row["source_locator"] = record.origin.locator
    row["line_no"] = record.origin.line_no
    row["byte_offset"] = record.origin.byte_offset
    return row


def _from_row(cls: type, row: Mapping[str, Any]) -> Any:
    origin = Origin(
        source_kind=row["source_kind"],
        locator=row["source_locator"],
        line_no=row["line_no"],
        byte_offset=row["byte_offset"],
        retrieved_at=row["retrieved_at"],
    )
    values = {f.name: row[f.name] for f in fields(cls) if f.name != "origin"}
    return cls(**values, origin=origin)


def _as_int(value: Any) -> int | None:
    """Reddit numbers arrive as int, float or (in old dumps) numeric strings; anything else is unknown."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        value = value.strip()
        try:
            return int(value)
        except ValueError:
            pass
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return None


def _as_float(value: Any) -> float | None:
    number = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    return number if number is not None and math.isfinite(number) else None


def _text(value: Any) -> str:
    return html.unescape(value) if isinstance(value, str) else ""


def _optional_text(value: Any) -> str | None:
    return html.unescape(value) if isinstance(value, str) and value else None


def _unescape_deep(value: Any) -> Any:
    if isinstance(value, str):
        return html.unescape(value)
    if isinstance(value, dict):
        return {key: _unescape_deep(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unescape_deep(item) for item in value]
    return value


def _bare_id(value: Any, prefix: str) -> str | None:
    """``t3_abc`` or ``abc`` → ``abc``; None unless what remains is a base36 id."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    text = text.removeprefix(prefix)
    return text if _BASE36_ID.fullmatch(text) else None


def _retrieved_at(data: dict, origin: Origin) -> tuple[float | None, Origin]:
    """The origin's time, else the record's own retrieved_on/retrieved_utc (kept in the origin too)."""
    if origin.retrieved_at is not None:
        return origin.retrieved_at, origin
    for key in ("retrieved_on", "retrieved_utc"):
        when = _as_float(data.get(key))
        if when is not None:
            return when, replace(origin, retrieved_at=when)
    return None, origin


def _media(data: dict, *, with_parents: bool) -> dict[str, Any]:
    media = {key: _unescape_deep(data.get(key)) for key in MEDIA_FIELDS if key != "crosspost_parent_list"}
    if with_parents:
        parents = data.get("crosspost_parent_list")
        media["crosspost_parent_list"] = (
            [_parent_media(parent) for parent in parents if isinstance(parent, dict)] if isinstance(parents, list) else None
        )
    else:
        media["crosspost_parent_list"] = None
    return media


def _parent_media(parent: dict) -> dict[str, Any]:
    """Only the parent's image fields: its text and author are another post's business (and no username leaks)."""
    return {"id": _bare_id(parent.get("id"), "t3_"), **_media(parent, with_parents=False)}


def _problem(item: RawItem, detail: str, item_id: str | None = None) -> SourceProblem:
    return SourceProblem(origin=item.origin, reason_code=MISSING_FIELD, detail=detail, item_id=item_id)


def normalize_submission(item: RawItem, hasher: UsernameHasher) -> Post | SourceProblem:
    """Raw submission JSON → Post, or a ``missing_field`` problem when it has no usable id or creation time."""
    if item.kind != "submission":
        raise ValueError(f"normalize_submission got a {item.kind!r} item")
    data = item.data
    post_id = _bare_id(data.get("id"), "t3_")
    if post_id is None:
        return _problem(item, f"submission has no usable id (id={data.get('id')!r})")
    created_utc = _as_int(data.get("created_utc"))
    if created_utc is None:
        return _problem(item, f"submission has no usable created_utc ({data.get('created_utc')!r})", post_id)
    subreddit = data.get("subreddit") if isinstance(data.get("subreddit"), str) and data.get("subreddit") else None
    selftext = _text(data.get("selftext"))
    category = data.get("removed_by_category")
    if selftext == "[deleted]" or category in _DELETED_CATEGORIES:
        removed_state = "deleted"
    elif selftext == "[removed]" or (isinstance(category, str) and category):
        removed_state = "removed"
    else:
        removed_state = None
    permalink = _text(data.get("permalink"))
    if not permalink:
        permalink = f"/r/{subreddit}/comments/{post_id}/" if subreddit else f"/comments/{post_id}/"
    if not permalink.startswith(("http://", "https://")):
        permalink = REDDIT_BASE_URL + ("" if permalink.startswith("/") else "/") + permalink
    media = _media(data, with_parents=True)
    crosspost_parent = _bare_id(data.get("crosspost_parent"), "t3_")
    if crosspost_parent is None and media["crosspost_parent_list"]:
        crosspost_parent = media["crosspost_parent_list"][0]["id"]
    retrieved_at, origin = _retrieved_at(data, item.origin)
    return Post(
        post_id=post_id,
        name=f"t3_{post_id}",
        subreddit=subreddit,
        author_hash=hasher.hash(data.get("author") if isinstance(data.get("author"), str) else None),
        title=_text(data.get("title")),
        body=selftext,
        created_utc=created_utc,
        score=_as_int(data.get("score")),
        num_comments=_as_int(data.get("num_comments")),
        permalink=permalink,
        url=_optional_text(data.get("url")),
        removed_state=removed_state,
        distinguished=_optional_text(data.get("distinguished")),
        stickied=bool(data.get("stickied")),
        over_18=bool(data.get("over_18")),
        crosspost_parent=crosspost_parent,
        media=media,
        retrieved_at=retrieved_at,
        origin=origin,
    )


def normalize_comment(
    item: RawItem, hasher: UsernameHasher, bot_accounts: Collection[str] = DEFAULT_BOT_ACCOUNTS
) -> Comment | SourceProblem:
    """Raw comment JSON → Comment, or a ``missing_field`` problem (no id, link_id, parent_id or creation time)."""
    if item.kind != "comment":
        raise ValueError(f"normalize_comment got a {item.kind!r} item")
    data = item.data
    comment_id = _bare_id(data.get("id"), "t1_")
    if comment_id is None:
        return _problem(item, f"comment has no usable id (id={data.get('id')!r})")
    post_id = _bare_id(data.get("link_id"), "t3_")
    if post_id is None:
        return _problem(item, f"comment has no usable link_id ({data.get('link_id')!r})", comment_id)
    parent_id = data.get("parent_id")
    if not isinstance(parent_id, str) or not parent_id.strip():
        return _problem(item, "comment has no parent_id, so its depth is unknown", comment_id)
    created_utc = _as_int(data.get("created_utc"))
    if created_utc is None:
        return _problem(item, f"comment has no usable created_utc ({data.get('created_utc')!r})", comment_id)
    author = data.get("author") if isinstance(data.get("author"), str) else None
    bots = {name.casefold() for name in bot_accounts}
    body = _text(data.get("body"))
    removed_state = {"[deleted]": "deleted", "[removed]": "removed"}.get(body.strip())
    retrieved_at, origin = _retrieved_at(data, item.origin)
    return Comment(
        comment_id=comment_id,
        post_id=post_id,
        parent_id=parent_id.strip(),
        author_hash=hasher.hash(author),
        author_is_bot=author is not None and author.casefold() in bots,
        body=body,
        score=_as_int(data.get("score")),
        created_utc=created_utc,
        distinguished=_optional_text(data.get("distinguished")),
        stickied=bool(data.get("stickied")),
        removed_state=removed_state,
        retrieved_at=retrieved_at,
        origin=origin,
    )


# --- merging rescans -------------------------------------------------------------------------------------------

_SOURCE_PRECEDENCE = {"dump": 0, "archive_api": 1, "reddit_api": 2}

RecordT = TypeVar("RecordT", Post, Comment)


def _record_id(record: Post | Comment) -> str:
    return record.post_id if isinstance(record, Post) else record.comment_id


def _recency_key(record: Post | Comment) -> tuple:
    origin = record.origin
    return (
        record.retrieved_at is not None,
        record.retrieved_at or 0.0,
        _SOURCE_PRECEDENCE.get(origin.source_kind, -1),
        origin.locator,
        origin.byte_offset if origin.byte_offset is not None else -1,
        origin.line_no if origin.line_no is not None else -1,
    )


def merge_observations(observations: Iterable[RecordT]) -> RecordT:
    """The copy to trust among several observations of one post or comment: the latest retrieval.

    Ties go to the more authoritative source (reddit_api > archive_api > dump), then the larger locator, then
    the later byte offset / line; a remaining tie (same place, same time) goes to the larger content digest, so
    the answer never depends on input order.
    """
    best: list[RecordT] = []
    best_key: tuple | None = None
    record_id = None
    kind = None
    for record in observations:
        if kind is None:
            kind, record_id = type(record), _record_id(record)
        elif type(record) is not kind or _record_id(record) != record_id:
            raise ValueError(f"cannot merge {_record_id(record)!r} into observations of {record_id!r}")
        key = _recency_key(record)
        if best_key is None or key > best_key:
            best, best_key = [record], key
        elif key == best_key:
            best.append(record)
    if not best:
        raise ValueError("merge_observations needs at least one observation")
    return max(best, key=lambda record: record.content_digest()) if len(best) > 1 else best[0]


# --- candidate id lists ----------------------------------------------------------------------------------------

_ID_LINE = re.compile(r"(?:t3_)?([0-9a-z]{1,13})")


def parse_id_list(path: str | Path) -> Iterator[tuple[int, str | None, str]]:
    """Stream an RPCD-style split file (one bare base36 submission id per line, LF or CRLF, no header).

    Yields ``(line_no, id, "")`` for each id (lower-cased, a ``t3_`` prefix dropped) and ``(line_no, None,
    detail)`` for a line that is not an id; blank lines are skipped. An unreadable file raises ``OSError``.
    """
    with open(path, "rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            text = raw.decode("utf-8", errors="replace").strip().removeprefix("\ufeff").strip()
            if not text:
                continue
            match = _ID_LINE.fullmatch(text.lower())
            if match:
                yield line_no, match.group(1), ""
            else:
                shown = text if len(text) <= 40 else text[:40] + "…"
                yield line_no, None, f"line {line_no} is not a base36 submission id: {shown!r}"
