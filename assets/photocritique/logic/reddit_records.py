"""The normalizer that turns raw Reddit JSON into storable posts and comments, and the stored record types.

Every source (zstd dumps, an archive HTTP API, the live API) yields ``resources.reddit_sources.RawItem``s or
``SourceProblem``s, so the rest of the pipeline never cares where a record came from.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Self, TypeVar

from assets.core.logic.keyed_hash import KeyedHash
from assets.core.logic.textfiles import read_lines
from resources.reddit_sources import Origin, RawItem, SourceProblem
from warehouse.ids import digest_of

# Reason codes for problems in a dump file or a record (stable strings, stored in the warehouse); those of
# reading any source are in ``resources.reddit_sources``.
TRUNCATED_FILE = "truncated_file"
MISSING_FIELD = "missing_field"
UNREADABLE_FILE = "unreadable_file"
UNSUPPORTED_FILE = "unsupported_file"
BAD_FIELD_TYPE = "bad_field_type"
MALFORMED_ID = "malformed_id"


# --- usernames -------------------------------------------------------------------------------------------------

_NO_AUTHOR = frozenset({"", "[deleted]", "[removed]"})
class UsernameHasher(KeyedHash):
    """Salted HMAC-SHA256 of Reddit usernames, so authors can be compared but never read back."""

    __slots__ = ()

    def __init__(self, salt: str) -> None:
        super().__init__(salt, what="username salt", fingerprint_label=b"aesforge/reddit-username-salt/fingerprint/v1")

    def hash(self, name: str | None) -> str | None:
        """Hash of the case-folded name (Reddit names are case-insensitive); None when there is no author."""
        if name is None or name in _NO_AUTHOR:
            return None
        return self.digest(name.casefold())


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


_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")


class _BadField(Exception):
    """A field whose value has the wrong type: the record becomes a ``bad_field_type`` problem naming it."""

    def __init__(self, field: str, value: Any, expected: str) -> None:
        super().__init__(field)
        self.field, self.value, self.expected = field, value, expected

    def __str__(self) -> str:
        shown = repr(self.value)
        shown = shown if len(shown) <= 60 else shown[:60] + "…"
        return f"field {self.field} is {type(self.value).__name__}, expected {self.expected} (got {shown})"


class _Missing(Exception):
    """A required field is absent: the record becomes a ``missing_field`` problem."""


def where(origin: Origin) -> str:
    """How a problem detail names its place: ``RS_2019-05.zst line 17`` in a file, else the endpoint."""
    if origin.line_no is None:
        return origin.locator
    return f"{Path(origin.locator).name} line {origin.line_no}"


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


def _number(data: Mapping[str, Any], field: str, limit: int = _INT32_MAX) -> int | None:
    """An integer field: absent or null is None; a finite float or a numeric string is coerced; the value must
    fit the warehouse column."""
    value = data.get(field)
    if value is None:
        return None
    number = _as_int(value)
    if number is None:
        raise _BadField(field, value, "int")
    if abs(number) > limit:
        raise _BadField(field, value, f"int within ±{limit}")
    return number


def _clean(text: str) -> str:
    """Lone UTF-16 surrogates (``\\ud83d`` without its pair, seen in old dumps) cannot be stored: U+FFFD."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _string(data: Mapping[str, Any], field: str) -> str | None:
    """A text field as stored (still escaped): absent or null is None, anything but a string is bad."""
    value = data.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _BadField(field, value, "str")
    return _clean(value)


def _text(data: Mapping[str, Any], field: str) -> str:
    return html.unescape(_string(data, field) or "")


def _optional_text(data: Mapping[str, Any], field: str) -> str | None:
    return _text(data, field) or None


def _flag(data: Mapping[str, Any], field: str) -> bool:
    """A boolean field: absent or null is False; 0 and 1 are coerced; anything else is bad."""
    value = data.get(field)
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise _BadField(field, value, "bool")


def _container(data: Mapping[str, Any], field: str, kind: type) -> Any:
    """An object or list field: null, or an empty value of another kind (``preview: []``), is absent."""
    value = data.get(field)
    if value is None or isinstance(value, kind):
        return value
    if isinstance(value, (dict, list, str)) and not value:
        return None
    raise _BadField(field, value, kind.__name__)


def _unescape_deep(value: Any) -> Any:
    """Nested media values with their text unescaped and made storable (lone surrogates; NaN and ±inf → null)."""
    if isinstance(value, str):
        return html.unescape(_clean(value))
    if isinstance(value, dict):
        return {_clean(key): _unescape_deep(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unescape_deep(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
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


_MEDIA_CONTAINERS = {"gallery_data": dict, "media_metadata": dict, "preview": dict, "crosspost_parent_list": list}
_MEDIA_FLAGS = frozenset({"is_self", "is_gallery"})


def _media_field(data: Mapping[str, Any], key: str) -> Any:
    if key in _MEDIA_FLAGS:
        return None if data.get(key) is None else _flag(data, key)
    if key in _MEDIA_CONTAINERS:
        return _container(data, key, _MEDIA_CONTAINERS[key])
    return _string(data, key)


def _media(data: Mapping[str, Any], *, with_parents: bool) -> dict[str, Any]:
    """The image fields, type-checked at their top level (the resolver copes with odd values deeper down)."""
    try:
        media = {key: _unescape_deep(_media_field(data, key)) for key in MEDIA_FIELDS}
    except RecursionError:
        raise _BadField("media", "…", "objects nested less deeply") from None
    parents = media["crosspost_parent_list"]
    media["crosspost_parent_list"] = None
    if with_parents and parents:
        media["crosspost_parent_list"] = [_parent_media(parent, index) for index, parent in enumerate(parents)
                                          if isinstance(parent, dict)]
    return media


def _parent_media(parent: dict, index: int) -> dict[str, Any]:
    """Only the parent's image fields: its text and author are another post's business (and no username leaks)."""
    try:
        return {"id": _bare_id(parent.get("id"), "t3_"), **_media(parent, with_parents=False)}
    except _BadField as bad:
        raise _BadField(f"crosspost_parent_list[{index}].{bad.field}", bad.value, bad.expected) from None


def _required_time(data: Mapping[str, Any]) -> int:
    if data.get("created_utc") is None:
        raise _Missing("created_utc")
    return _number(data, "created_utc", _INT64_MAX)


def _problem(item: RawItem, reason_code: str, detail: str, item_id: str | None = None) -> SourceProblem:
    return SourceProblem(origin=item.origin, reason_code=reason_code, detail=f"{where(item.origin)}: {detail}",
                         item_id=item_id)


def normalize_submission(item: RawItem, hasher: UsernameHasher) -> Post | SourceProblem:
    """Raw submission JSON → Post, or a problem: ``missing_field`` without a usable id or creation time,
    ``bad_field_type`` naming a field whose value has the wrong type (README: which values are coerced)."""
    if item.kind != "submission":
        raise ValueError(f"normalize_submission got a {item.kind!r} item")
    data = item.data
    post_id = _bare_id(data.get("id"), "t3_")
    if post_id is None:
        return _problem(item, MISSING_FIELD, f"submission has no usable id (id={data.get('id')!r:.60})")
    try:
        return _submission(item, data, post_id, hasher)
    except _BadField as bad:
        return _problem(item, BAD_FIELD_TYPE, f"submission {post_id}: {bad}", post_id)
    except _Missing as missing:
        return _problem(item, MISSING_FIELD, f"submission {post_id} has no {missing}", post_id)


def _submission(item: RawItem, data: dict, post_id: str, hasher: UsernameHasher) -> Post:
    created_utc = _required_time(data)
    subreddit = _string(data, "subreddit") or None
    selftext = _text(data, "selftext")
    category = _string(data, "removed_by_category")
    if selftext == "[deleted]" or category in _DELETED_CATEGORIES:
        removed_state = "deleted"
    elif selftext == "[removed]" or category:
        removed_state = "removed"
    else:
        removed_state = None
    permalink = _text(data, "permalink")
    if not permalink:
        permalink = f"/r/{subreddit}/comments/{post_id}/" if subreddit else f"/comments/{post_id}/"
    if not permalink.startswith(("http://", "https://")):
        permalink = REDDIT_BASE_URL + ("" if permalink.startswith("/") else "/") + permalink
    media = _media(data, with_parents=True)
    crosspost_parent = _bare_id(_string(data, "crosspost_parent"), "t3_")
    if crosspost_parent is None and media["crosspost_parent_list"]:
        crosspost_parent = media["crosspost_parent_list"][0]["id"]
    retrieved_at, origin = _retrieved_at(data, item.origin)
    return Post(
        post_id=post_id,
        name=f"t3_{post_id}",
        subreddit=subreddit,
        author_hash=hasher.hash(_string(data, "author")),
        title=_text(data, "title"),
        body=selftext,
        created_utc=created_utc,
        score=_number(data, "score"),
        num_comments=_number(data, "num_comments"),
        permalink=permalink,
        url=_optional_text(data, "url"),
        removed_state=removed_state,
        distinguished=_optional_text(data, "distinguished"),
        stickied=_flag(data, "stickied"),
        over_18=_flag(data, "over_18"),
        crosspost_parent=crosspost_parent,
        media=media,
        retrieved_at=retrieved_at,
        origin=origin,
    )


def normalize_comment(
    item: RawItem, hasher: UsernameHasher, bot_accounts: Collection[str] = DEFAULT_BOT_ACCOUNTS
) -> Comment | SourceProblem:
    """Raw comment JSON → Comment, or a problem: ``missing_field`` (no id, link_id, parent_id or creation time),
    ``bad_field_type`` naming a field whose value has the wrong type."""
    if item.kind != "comment":
        raise ValueError(f"normalize_comment got a {item.kind!r} item")
    data = item.data
    comment_id = _bare_id(data.get("id"), "t1_")
    if comment_id is None:
        return _problem(item, MISSING_FIELD, f"comment has no usable id (id={data.get('id')!r:.60})")
    post_id = _bare_id(data.get("link_id"), "t3_")
    if post_id is None:
        return _problem(item, MISSING_FIELD, f"comment has no usable link_id ({data.get('link_id')!r:.60})", comment_id)
    parent_id = data.get("parent_id")
    if not isinstance(parent_id, str) or not parent_id.strip():
        return _problem(item, MISSING_FIELD, "comment has no parent_id, so its depth is unknown", comment_id)
    try:
        return _comment(item, data, comment_id, post_id, _clean(parent_id.strip()), hasher, bot_accounts)
    except _BadField as bad:
        return _problem(item, BAD_FIELD_TYPE, f"comment {comment_id}: {bad}", comment_id)
    except _Missing as missing:
        return _problem(item, MISSING_FIELD, f"comment {comment_id} has no {missing}", comment_id)


def _comment(item: RawItem, data: dict, comment_id: str, post_id: str, parent_id: str, hasher: UsernameHasher,
             bot_accounts: Collection[str]) -> Comment:
    created_utc = _required_time(data)
    author = _string(data, "author")
    bots = {name.casefold() for name in bot_accounts}
    body = _text(data, "body")
    removed_state = {"[deleted]": "deleted", "[removed]": "removed"}.get(body.strip())
    retrieved_at, origin = _retrieved_at(data, item.origin)
    return Comment(
        comment_id=comment_id,
        post_id=post_id,
        parent_id=parent_id,
        author_hash=hasher.hash(author),
        author_is_bot=author is not None and author.casefold() in bots,
        body=body,
        score=_number(data, "score"),
        created_utc=created_utc,
        distinguished=_optional_text(data, "distinguished"),
        stickied=_flag(data, "stickied"),
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


def parse_id_list(path: str | Path) -> Iterator[tuple[int, str | None, str, str]]:
    """Stream an RPCD-style split file (one bare base36 submission id per line, LF or CRLF, no header).

    Yields ``(line_no, id, "", "")`` for each id (lower-cased, a ``t3_`` prefix dropped) and ``(line_no, None,
    reason_code, detail)`` for a line that is not one: ``bad_encoding`` (not UTF-8, binary) or ``malformed_id``.
    A BOM and blank lines are accepted. An unreadable file raises ``OSError``.
    """
    for line in read_lines(Path(path)):
        if line.problem:
            yield line.number, None, *line.problem
            continue
        text = line.text.strip().removeprefix("\ufeff").strip()
        if not text:
            continue
        match = _ID_LINE.fullmatch(text.lower())
        if match:
            yield line.number, match.group(1), "", ""
        else:
            shown = text if len(text) <= 40 else text[:40] + "…"
            yield line.number, None, MALFORMED_ID, f"line {line.number} is not a base36 submission id: {shown!r}"
