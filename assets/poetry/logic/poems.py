"""Poem corpus for the poem-illustration benchmark: records, a streaming reader, and the illustration prompt.

Why: every illustration, recognizability item and rating refers back to a poem, so the corpus is read once into
immutable ``Poem`` records that carry where they came from (``locator``: ``poems.csv#line=4``,
``poems.json#record=3``) and a content digest (``content_sha256`` over title, author, text and translation), which
names the poem in the warehouse independently of the corpus's own ``poem_id``.

``read_poems`` streams: a JSON list (or ``{"poems": [...]}``) is decoded one record at a time, a CSV one line at a
time (``assets/core/logic/textfiles.py``), so a large corpus never sits in memory whole and one bad line costs only its
row. A record that is wrong is yielded as a ``PoemRejection`` (locator, reason code, detail) and reading goes on:
a CSV line that is not UTF-8 is ``bad_encoding``, a row with more or fewer cells than the header ``ragged_row``.
JSON cannot be resynchronised after a syntax error, so a JSON file that breaks part-way keeps the records before
the break and the rest is one ``invalid_json`` (or ``bad_encoding``) rejection at the record where it broke.
Only a file that cannot be read at all (missing, empty, no usable header or row, not JSON, broken before its
first record) raises ``PoemCorpusError``. ``poem_records`` and ``parse_poem`` are the two halves, for a caller
that runs each record through its own item loop.

Field rules (shared corpus format): ``poem_id`` ([A-Za-z0-9._-]+), ``title``, ``author`` and ``text`` are
required and non-empty; ``translation``, ``form`` and ``source`` are optional text; ``themes`` is a JSON list of
strings (or, in CSV, ``;``-separated, or a JSON list in the cell). A later record repeating a ``poem_id`` is
rejected, naming where the first one was. Unknown fields are ignored.

The illustration prompt is a versioned text template (``assets/poetry/prompts/illustration_v<N>.txt``: a header
with ``id`` and ``version``, a ``---`` line, then the prompt with ``$title``, ``$author`` and ``$content``); its
sha256 covers the whole file, so an edit changes provenance even when nobody bumps the version.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from assets.core.logic.textfiles import BAD_ENCODING, Utf8Text, read_csv_table
from warehouse.ids import digest_of, entity_id, sha256_hex

POEM_ID_PATTERN = re.compile(r"[A-Za-z0-9._-]+")
REQUIRED_FIELDS = ("poem_id", "title", "author", "text")
OPTIONAL_TEXT_FIELDS = ("translation", "form", "source")
ENTITY_KIND = "poem"

# Reason codes (stable: stored with rejected records and counted in reports).
MISSING_FIELD = "missing_field"        # a required field is absent
EMPTY_FIELD = "empty_field"            # ... or present but blank
WRONG_TYPE = "wrong_type"              # a JSON value of the wrong type (a number for a title, ...)
BAD_POEM_ID = "bad_poem_id"            # characters outside [A-Za-z0-9._-]
DUPLICATE_POEM_ID = "duplicate_poem_id"
BAD_THEMES = "bad_themes"              # themes not a list of non-empty strings
NOT_AN_OBJECT = "not_an_object"        # a JSON record that is not an object
# The reader's own codes (assets/core/logic/textfiles.py): bad_encoding (a line that is not UTF-8), ragged_row (a CSV row
# with more or fewer cells than the header), invalid_json (the JSON breaks after some records: the rest is not read).
REASON_CODES = (MISSING_FIELD, EMPTY_FIELD, WRONG_TYPE, BAD_POEM_ID, DUPLICATE_POEM_ID, BAD_THEMES, NOT_AN_OBJECT)

_CHUNK_CHARS = 1 << 16


class PoemCorpusError(ValueError):
    """A corpus file that cannot be read at all (missing, undecodable, not JSON or CSV, no usable header)."""

    def __init__(self, file: str, detail: str, reason_code: str = "unreadable_corpus") -> None:
        super().__init__(f"poem corpus {file}: {detail}")
        self.file = file
        self.detail = detail
        self.reason_code = reason_code


@dataclass(frozen=True)
class Poem:
    poem_id: str
    title: str
    author: str
    text: str                      # the original, line breaks kept
    translation: str | None
    themes: tuple[str, ...]
    form: str | None
    source: str | None             # provenance note
    locator: str                   # where the record was read: "poems.csv#line=4", "poems.json#record=3"

    @property
    def content_sha256(self) -> str:
        """Names the poem by what it says (title, author, text, translation), not by the corpus's id."""
        return digest_of({"title": self.title, "author": self.author, "text": self.text,
                          "translation": self.translation})

    @property
    def entity_id(self) -> str:
        return entity_id(ENTITY_KIND, self.content_sha256)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types, in the shared corpus format plus ``locator``."""
        return {"poem_id": self.poem_id, "title": self.title, "author": self.author, "text": self.text,
                "translation": self.translation, "themes": list(self.themes), "form": self.form,
                "source": self.source, "locator": self.locator}


@dataclass(frozen=True)
class PoemRejection:
    locator: str
    reason_code: str
    detail: str


# --- reading -------------------------------------------------------------------------------------------------


def read_poems(path: Path) -> Iterator[Poem | PoemRejection]:
    """Every record of a ``.json`` or ``.csv`` corpus in file order, as a Poem or a PoemRejection."""
    seen: dict[str, str] = {}
    for locator, raw in poem_records(path):
        yield raw if isinstance(raw, PoemRejection) else parse_poem(raw, locator, seen, path.suffix.lower() == ".csv")


def poem_records(path: Path) -> Iterator[tuple[str, Any]]:
    """The raw records of a corpus file as ``(locator, record)``, read one at a time; a record the reader itself
    cannot use (a line that is not UTF-8, a ragged CSV row, the broken tail of a JSON file) comes as a
    ``PoemRejection`` in the record's place. Raises ``PoemCorpusError`` only before the first record, for a file
    that cannot be read at all."""
    name = path.name
    suffix = path.suffix.lower()
    if suffix not in (".json", ".csv"):
        raise PoemCorpusError(name, f"unsupported file type {suffix or '(none)'!r}; expected .json or .csv",
                              "unsupported_format")
    if not path.is_file():
        raise PoemCorpusError(name, "cannot be opened (not a file)")
    if suffix == ".csv":
        yield from _csv_records(path, name)
        return
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise PoemCorpusError(name, f"cannot be opened ({exc.strerror or type(exc).__name__})") from None
    with handle:
        yield from _json_records_or_tail(Utf8Text(handle), name)


def parse_poem(raw: Any, locator: str, seen: dict[str, str], from_csv: bool) -> Poem | PoemRejection:
    """One record as a Poem, or its rejection; ``seen`` (poem id -> first locator) is updated with a new poem."""
    if not isinstance(raw, Mapping):
        return PoemRejection(locator, NOT_AN_OBJECT, f"the record is a {_json_type(raw)}, not an object")
    values: dict[str, str] = {}
    for key in REQUIRED_FIELDS:
        if key not in raw or raw[key] is None:
            return PoemRejection(locator, MISSING_FIELD, f"{key} is missing")
        value = raw[key]
        if not isinstance(value, str):
            return PoemRejection(locator, WRONG_TYPE, f"{key} is a {_json_type(value)}, not text")
        value = _clean(value)
        if not value:
            return PoemRejection(locator, EMPTY_FIELD, f"{key} is empty")
        values[key] = value
    poem_id = values["poem_id"]
    if not POEM_ID_PATTERN.fullmatch(poem_id):
        return PoemRejection(locator, BAD_POEM_ID, f"poem_id {poem_id!r} has characters outside [A-Za-z0-9._-]")
    optional: dict[str, str | None] = {}
    for key in OPTIONAL_TEXT_FIELDS:
        value = raw.get(key)
        if value is not None and not isinstance(value, str):
            return PoemRejection(locator, WRONG_TYPE, f"{key} is a {_json_type(value)}, not text")
        optional[key] = (_clean(value) or None) if value is not None else None
    themes = _themes(raw.get("themes"), from_csv)
    if isinstance(themes, str):
        return PoemRejection(locator, BAD_THEMES, themes)
    first = seen.get(poem_id)
    if first is not None:
        return PoemRejection(locator, DUPLICATE_POEM_ID, f"poem_id {poem_id!r} was already read at {first}")
    seen[poem_id] = locator
    return Poem(poem_id=poem_id, title=values["title"], author=values["author"], text=values["text"],
                translation=optional["translation"], themes=themes, form=optional["form"], source=optional["source"],
                locator=locator)


def _clean(value: str) -> str:
    """Line endings normalised, trailing spaces of lines and blank lines at the ends dropped: the same poem
    typed in two editors gets the same digest."""
    lines = value.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip()


def _themes(value: Any, from_csv: bool) -> tuple[str, ...] | str:
    """The themes, or a string saying what is wrong with them."""
    if value is None or (from_csv and value == ""):
        return ()
    if from_csv and isinstance(value, str):  # a CSV cell: a JSON list or "a; b; c"
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                return f"themes cell starts like a JSON list but does not parse ({exc.msg})"
        else:
            return tuple(part.strip() for part in text.split(";") if part.strip())
    if not isinstance(value, list):
        return f"themes is a {_json_type(value)}, not a list of strings"
    themes = []
    for index, theme in enumerate(value):
        if not isinstance(theme, str):
            return f"themes[{index}] is a {_json_type(theme)}, not text"
        if not theme.strip():
            return f"themes[{index}] is empty"
        themes.append(theme.strip())
    return tuple(themes)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _csv_records(path: Path, name: str) -> Iterator[tuple[str, Any]]:
    """Rows keyed by header, each decoded on its own (``assets/core/logic/textfiles.py``), located by the physical line
    the row starts on (``#line=N``; the header is line 1; a quoted cell spanning lines is one row)."""
    for record in read_csv_table(path, REQUIRED_FIELDS):
        if record.file_level:
            raise PoemCorpusError(name, record.problem[1], record.problem[0])
        locator = f"{name}#line={record.line}"
        yield locator, PoemRejection(locator, *record.problem) if record.problem else record.fields


def _json_records_or_tail(stream: TextIO, name: str) -> Iterator[tuple[str, Any]]:
    """The JSON records; when the file breaks after some records were read (bad syntax, a byte that is not
    UTF-8), those stay read and the rest is one rejection at the record where reading stopped. A break before
    the first record is the whole file's problem."""
    index = 0
    try:
        for locator, raw in _json_records(stream, name):
            yield locator, raw
            index += 1
    except (PoemCorpusError, UnicodeDecodeError, RecursionError) as exc:
        if isinstance(exc, RecursionError):
            exc = PoemCorpusError(name, f"record {index} is nested too deeply to read", "invalid_json")
        elif isinstance(exc, UnicodeDecodeError):
            exc = PoemCorpusError(name, f"byte {exc.object[exc.start:exc.start + 1].hex()} is not UTF-8"
                                        f" ({exc.reason}); save the file as UTF-8", BAD_ENCODING)
        if not index:
            raise exc from None
        locator = f"{name}#record={index}"
        yield locator, PoemRejection(locator, exc.reason_code, f"{exc.detail}; record {index} and everything after it"
                                                               " is not read")


def _json_records(stream: TextIO, name: str) -> Iterator[tuple[str, Any]]:
    """The elements of a top-level JSON list, or of the list under a top-level ``"poems"`` key, decoded one at a
    time from a sliding text buffer."""
    scanner = _JsonScanner(stream, name)
    first = scanner.peek()
    if first == "{":
        scanner.expect("{")
        while True:
            if scanner.peek() == "}":
                raise PoemCorpusError(name, 'the top-level object has no "poems" list', "no_poems")
            key = scanner.value("a key of the top-level object")
            if not isinstance(key, str):
                raise PoemCorpusError(name, f"character {scanner.position}: expected a key of the top-level object")
            scanner.expect(":")
            if key == "poems":
                break
            scanner.value(f"the value of top-level key {key!r}")
            if scanner.peek() == "}":
                raise PoemCorpusError(name, 'the top-level object has no "poems" list', "no_poems")
            scanner.expect(",", "between keys of the top-level object")
    if scanner.peek() != "[":
        raise PoemCorpusError(name, 'expected a JSON list of poems or an object with a "poems" list', "not_a_list")
    scanner.expect("[")
    index = 0
    if scanner.peek() == "]":
        return
    while True:
        yield f"{name}#record={index}", scanner.value(f"record {index}")
        index += 1
        following = scanner.peek()
        if following == "]":
            return
        scanner.expect(",", f"after record {index - 1}")


class _JsonScanner:
    """Just enough of an incremental JSON reader to walk one list: whitespace, punctuation and whole values, with
    more text read in whenever a value runs past the buffer."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self.stream = stream
        self.name = name
        self.buffer = ""
        self.offset = 0        # characters of the file before ``buffer``
        self.at = 0            # position in ``buffer``
        self.eof = False
        self.decoder = json.JSONDecoder()

    @property
    def position(self) -> int:
        return self.offset + self.at

    def _more(self) -> bool:
        if self.eof:
            return False
        chunk = self.stream.read(_CHUNK_CHARS)
        if not chunk:
            self.eof = True
            return False
        self.offset += self.at
        self.buffer = self.buffer[self.at:] + chunk
        self.at = 0
        return True

    def peek(self) -> str:
        """The next non-whitespace character ('' at the end of the file)."""
        while True:
            while self.at < len(self.buffer) and self.buffer[self.at] in " \t\r\n":
                self.at += 1
            if self.at < len(self.buffer):
                return self.buffer[self.at]
            if not self._more():
                return ""

    def expect(self, char: str, where: str = "") -> None:
        found = self.peek()
        if found != char:
            shown = repr(found) if found else "the end of the file"
            place = f" {where}" if where else ""
            raise PoemCorpusError(self.name, f"character {self.position}: expected {char!r}{place}, found {shown}",
                                  "invalid_json")
        self.at += 1

    def value(self, what: str) -> Any:
        if not self.peek():
            raise PoemCorpusError(self.name, f"the file ends before {what}", "invalid_json")
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buffer, self.at)
            except json.JSONDecodeError as exc:
                if self._more():
                    continue
                raise PoemCorpusError(self.name, f"{what} is not valid JSON ({exc.msg} at character "
                                                 f"{self.offset + exc.pos})", "invalid_json") from None
            # A number (or literal) that ends exactly at the buffer's end may continue in the next chunk.
            if end == len(self.buffer) and self._more():
                continue
            self.at = end
            return value


# --- the illustration prompt ------------------------------------------------------------------------------------

TEMPLATE_PACKAGE = "assets.poetry.prompts"
TEMPLATE_FOLDER = "poetry"
ILLUSTRATION_TEMPLATE_VERSION = "1"
ILLUSTRATION_PLACEHOLDERS = frozenset({"title", "author", "content"})


@dataclass(frozen=True)
class IllustrationTemplate:
    id: str          # "poetry/illustration_v1"
    version: str
    text: str        # the prompt with $title, $author and $content
    sha256: str      # of the whole file


@lru_cache(maxsize=None)
def illustration_template(version: str = ILLUSTRATION_TEMPLATE_VERSION) -> IllustrationTemplate:
    """The packaged template ``poetry/illustration_v<version>.txt``; its header must name it."""
    source = f"{TEMPLATE_FOLDER}/illustration_v{version}.txt"
    entry = resources.files(TEMPLATE_PACKAGE).joinpath(f"illustration_v{version}.txt")
    if not entry.is_file():
        raise ValueError(f"no illustration prompt template version {version!r} ({source} is not packaged)")
    content = entry.read_bytes()
    head, sep, body = content.decode("utf-8").partition("\n---\n")
    if not sep:
        raise ValueError(f"{source}: no '---' line after the header")
    header = {}
    for line in head.splitlines():
        key, colon, value = line.partition(":")
        if not colon or key.strip() not in ("id", "version"):
            raise ValueError(f"{source}: header line {line!r} is not id or version")
        header[key.strip()] = value.strip()
    expected_id = f"{TEMPLATE_FOLDER}/illustration_v{version}"
    if header.get("id") != expected_id or header.get("version") != version:
        raise ValueError(f"{source}: header says id {header.get('id')!r} version {header.get('version')!r}; "
                         f"expected {expected_id!r} version {version!r}")
    text = body.strip()
    template = string.Template(text)
    if not template.is_valid() or set(template.get_identifiers()) != ILLUSTRATION_PLACEHOLDERS:
        raise ValueError(f"{source}: the prompt must use exactly the placeholders "
                         f"{', '.join('$' + p for p in sorted(ILLUSTRATION_PLACEHOLDERS))}")
    return IllustrationTemplate(id=expected_id, version=version, text=text, sha256=sha256_hex(content))


def illustration_prompt(poem: Poem, version: str = ILLUSTRATION_TEMPLATE_VERSION) -> str:
    """The text-to-image prompt for ``poem``: the same wording for every poem and model; only the title, author
    and original text change (the translation is not shown, as in the paper)."""
    template = illustration_template(version)
    return string.Template(template.text).substitute(title=poem.title, author=poem.author, content=poem.text)

