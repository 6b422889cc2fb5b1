"""Reading text inputs (CSV and JSONL manifests, id lists, returned sheets, case files) record by record.

A user's file is decoded one physical line at a time, so a single bad line (a latin-1 byte in a UTF-8 file,
binary garbage, a line too long to be text) becomes that line's own problem and every other line is still read.
A UTF-8 byte-order mark, CRLF line ends and blank lines are accepted everywhere. Problems that concern the whole
file (it is empty, its header is unusable, it is not text at all) are reported as one record with ``file_level``
set, so the caller can reject that file with a reason and go on to its next input.

Nothing here raises for bad content; only an unreadable path (``OSError``) escapes, for the caller's item loop.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_LINE_BYTES = 16 << 20
_UTF8_BOM = codecs.BOM_UTF8
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)

# Reason codes of problems found while reading (the README's reason-code table lists them).
BAD_ENCODING = "bad_encoding"
LINE_TOO_LONG = "line_too_long"
EMPTY_FILE = "empty_file"
BAD_HEADER = "bad_header"
RAGGED_ROW = "ragged_row"
INVALID_JSON = "invalid_json"
BAD_CSV = "bad_csv"


@dataclass(frozen=True)
class Line:
    """One physical line (1-based ``number``), without its line end; ``text`` is None when it has a problem."""

    number: int
    text: str | None
    problem: tuple[str, str] | None = None


@dataclass(frozen=True)
class Record:
    """One record of a file: CSV fields by header name, or a JSONL line's value.

    ``line`` is the physical line the record starts on (a spreadsheet's row number for CSV); ``problem`` is
    ``(reason_code, detail)`` when the record cannot be used, ``file_level`` when the problem is the whole file's.
    """

    line: int
    fields: Any = None
    problem: tuple[str, str] | None = None
    file_level: bool = False


def line_locator(path: Path | str, line: int) -> str:
    return f"{path}#line={line}"


def read_lines(path: Path, encoding: str = "utf-8") -> Iterator[Line]:
    """Every line of ``path`` decoded on its own; blank lines are yielded too (as empty text)."""
    with path.open("rb") as handle:
        head = handle.read(4)
        handle.seek(0)
        if head.startswith(_UTF16_BOMS):
            yield from _utf16_lines(handle)
            return
        number = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                yield Line(number, None, (LINE_TOO_LONG, f"line {number}: longer than {MAX_LINE_BYTES} bytes"))
                while (rest := handle.readline(MAX_LINE_BYTES + 1)) and not rest.endswith(b"\n"):
                    pass
                continue
            if number == 1 and raw.startswith(_UTF8_BOM):
                raw = raw[len(_UTF8_BOM):]
            raw = raw.rstrip(b"\n").rstrip(b"\r")
            yield _decoded(number, raw, encoding)


def _decoded(number: int, raw: bytes, encoding: str) -> Line:
    if b"\x00" in raw:
        return Line(number, None, (BAD_ENCODING, f"line {number}: contains NUL bytes (binary data, not {encoding} text)"))
    try:
        return Line(number, raw.decode(encoding))
    except UnicodeDecodeError as exc:
        bad = raw[exc.start:exc.start + 4]
        return Line(number, None, (BAD_ENCODING, f"line {number}: byte {bad[:1].hex()} at column {exc.start + 1} is not"
                                                 f" valid {encoding.upper()} (the line reads {raw[:60]!r}); save the file as {encoding.upper()}"))


def _utf16_lines(handle: io.BufferedReader) -> Iterator[Line]:
    """UTF-16 files (spreadsheet "Unicode text" exports): decoded as a stream; a broken sequence ends the file."""
    reader = io.TextIOWrapper(handle, encoding="utf-16", newline="")
    number = 0
    try:
        for text in reader:
            number += 1
            yield Line(number, text.rstrip("\n").rstrip("\r").lstrip("\ufeff"))
    except UnicodeDecodeError as exc:
        yield Line(number + 1, None, (BAD_ENCODING, f"line {number + 1}: not valid UTF-16 ({exc.reason}); the rest of the file is unreadable"))


def read_csv_records(path: Path, encoding: str = "utf-8", delimiter: str = ",") -> Iterator[Record]:
    """Data records of a CSV file with a header row, each as ``{header: value}``.

    A line that cannot be decoded is its own ``bad_encoding`` record; a row with more or fewer fields than the
    header is ``ragged_row``; blank lines are skipped. An empty file, or a header with blank or repeated names,
    is one ``file_level`` record. Quoted fields may span lines; the record's ``line`` is its first line.
    """
    problems: list[Line] = []
    consumed: list[int] = []

    def text_lines() -> Iterator[str]:
        for line in read_lines(path, encoding):
            if line.problem:
                problems.append(line)
            else:
                consumed.append(line.number)
                yield line.text + "\n"

    reader = csv.reader(text_lines(), delimiter=delimiter)
    header: list[str] | None = None
    while True:
        start = len(consumed)
        try:
            row = next(reader, None)
        except csv.Error as exc:
            first = consumed[start] if start < len(consumed) else (consumed[-1] if consumed else 1)
            yield from _drain(problems)
            yield Record(first, None, (BAD_CSV, f"line {first}: {exc}"), file_level=header is None)
            if header is None:
                return
            continue
        yield from _drain(problems)
        if row is None:
            break
        first = consumed[start] if start < len(consumed) else 0
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip() for cell in row]
            trouble = _header_problem(header)
            if trouble:
                yield Record(first, None, (BAD_HEADER, f"line {first}: {trouble}"), file_level=True)
                return
            continue
        if len(row) != len(header):
            yield Record(first, None, (RAGGED_ROW, f"line {first}: {len(row)} fields, the header has {len(header)}"))
            continue
        yield Record(first, dict(zip(header, row)))
    if header is None and not problems:
        yield Record(0, None, (EMPTY_FILE, "the file is empty (no header row)"), file_level=True)


def _drain(problems: list[Line]) -> Iterator[Record]:
    while problems:
        line = problems.pop(0)
        yield Record(line.number, None, line.problem)


def _header_problem(header: list[str]) -> str | None:
    if any(not name for name in header):
        return f"the header has a blank column name ({','.join(header)!r})"
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        return f"the header repeats column(s) {', '.join(repeated)}"
    return None


def read_jsonl_records(path: Path, encoding: str = "utf-8") -> Iterator[Record]:
    """One record per non-blank line: its JSON value, or ``invalid_json`` / ``bad_encoding`` for that line."""
    seen_any = False
    for line in read_lines(path, encoding):
        if line.problem:
            seen_any = True
            yield Record(line.number, None, line.problem)
            continue
        if not line.text.strip():
            continue
        seen_any = True
        try:
            yield Record(line.number, json.loads(line.text))
        except (json.JSONDecodeError, RecursionError) as exc:
            yield Record(line.number, None, (INVALID_JSON, f"line {line.number}: {getattr(exc, 'msg', str(exc))}"
                                                           f" at column {getattr(exc, 'colno', '?')}"))
    if not seen_any:
        yield Record(0, None, (EMPTY_FILE, "the file has no records"), file_level=True)


class Utf8Text(io.TextIOBase):
    """A file's UTF-8 text for a streaming parser (a JSON record reader): ``read`` returns the text up to the
    first byte that is not UTF-8 and raises ``UnicodeDecodeError`` only on the read after it, so everything
    before the bad byte is parsed first. A leading byte-order mark is dropped."""

    def __init__(self, handle: io.BufferedIOBase) -> None:
        self._handle = handle
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self._error: UnicodeDecodeError | None = None

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        if self._error is not None:
            raise self._error
        raw = self._handle.read(size if size and size > 0 else -1)
        pending, _ = self._decoder.getstate()
        try:
            return self._decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            self._error = exc
            good = (pending + raw)[:exc.start]
            return good.decode("utf-8-sig")


def read_csv_table(path: Path, required: tuple[str, ...] | list[str], encoding: str = "utf-8") -> Iterator[Record]:
    """``read_csv_records`` for a file that must have ``required`` columns: a header without them is one
    ``bad_header`` file-level record, and line problems met before the first usable row are held back, so a
    file with no usable row at all (binary garbage) is one file-level record naming the first problem instead
    of a rejection per line. Problem records after a usable row come in file order, as usual."""
    held: list[Record] = []
    usable = False
    for record in read_csv_records(path, encoding):
        if record.file_level and held:
            break  # only unreadable lines so far: the summary below says so
        if record.file_level:
            yield record
            return
        if record.problem and not usable:
            held.append(record)
            continue
        if not usable and not record.problem:
            missing = [column for column in required if column not in record.fields]
            if missing:
                yield Record(1, None, (BAD_HEADER, f"line 1: missing column(s) {', '.join(missing)}; the file needs"
                                                   f" {', '.join(required)}"), file_level=True)
                return
            usable = True
            yield from held
        yield record
    if held and not usable:
        code, detail = held[0].problem
        yield Record(held[0].line, None, (code, f"no usable row: {len(held)} unreadable line(s), the first {detail}"),
                     file_level=True)
