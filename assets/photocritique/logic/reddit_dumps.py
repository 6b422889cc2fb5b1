"""Reddit NDJSON dumps (monthly ``RS_/RC_YYYY-MM.zst`` or per-subreddit ``<sub>_submissions/comments.zst``) as a source.

Dumps run to tens of GB uncompressed, so they are streamed: zstd output is read in fixed-size chunks and cut
into lines at the byte level (a newline byte never occurs inside a UTF-8 sequence, so no character is ever
split), and only lines that can match get parsed. The cheap test runs on bytes over whole blocks of lines
(a regex for the ``"id"`` / ``"link_id"`` value, or a search for the quoted subreddit name); a candidate is
then confirmed on the parsed object, because nested objects (``crosspost_parent_list``) carry ids too.

The zstd library returns an empty read when the input ends mid-frame instead of raising, so the compressed
bytes are followed frame by frame on their way into the decompressor (``_FrameTracker``); a stream that ends
inside a frame, or runs into bytes that are no frame, becomes a ``truncated_file`` problem and every line
before it stays usable. A block that zstd itself rejects (corrupt data, a wrong checksum) also ends the scan
with ``truncated_file``; there the lines decoded in the same read (up to one chunk) are lost with it.

Decompression and cutting into lines run on a worker thread one to three chunks ahead of the filter, since
zstd lets go of the GIL; that thread does nothing else (lines are numbered by the consumer). The id prefilter
works on whole blocks with numpy, which lets go of the GIL too: a thread that holds the GIL in a Python loop
makes the decoding thread wait up to the interpreter's 5 ms switch interval each time it comes back from zstd
(figures in bench/README.md). Files can also be scanned several at once in worker processes (``pool``).

Blank (whitespace-only) lines carry no record and are skipped. A scan yields the lines that can match as
``DumpLine``s, unparsed, so that parsing each one (``read_line``) is the caller's per-item work and a line that
breaks it breaks only itself; every line that could match but cannot be used becomes a ``SourceProblem``
(``bad_encoding``, ``malformed_json``, or the normalizer's ``missing_field`` / ``bad_field_type``).
"""

from __future__ import annotations

import json
import os
import queue
import re
import threading
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import zstandard

from assets.photocritique.logic.reddit_records import (
    BAD_FIELD_TYPE,
    MISSING_FIELD,
    TRUNCATED_FILE,
    UNREADABLE_FILE,
    UNSUPPORTED_FILE,
    where,
)
from assets.core.logic.textfiles import BAD_ENCODING, EMPTY_FILE
from assets.core.worker_processes import CpuPool
from resources.reddit_sources import MALFORMED_JSON, NOT_FOUND, Origin, RawItem, SourceProblem, SubredditWindow

SUBMISSION = "submission"
COMMENT = "comment"
SOURCE_NAME = "dump"

DEFAULT_CHUNK_BYTES = 4 * 2**20
"""Uncompressed bytes read per step; a scan holds about (READ_AHEAD_BLOCKS + 3) of these plus twice the longest line."""
COMPRESSED_READ_BYTES = 2**20
READ_AHEAD_BLOCKS = 3
MAX_WINDOW_BYTES = 2**31
"""Pushshift-era dumps are compressed with ``--long=31``; the decoder refuses such frames unless allowed, and
then keeps up to min(window, file size) of output in memory: that, not the scan, bounds memory on such files."""

_MONTHLY_NAME = re.compile(r"^(RS|RC)_\d{4}-\d{2}\.(zst|ndjson|jsonl)$")
_PER_SUBREDDIT_NAME = re.compile(r"^[A-Za-z0-9_]+_(submissions|comments)\.(zst|ndjson|jsonl)$")
_KIND_BY_TAG = {"RS": SUBMISSION, "RC": COMMENT, "submissions": SUBMISSION, "comments": COMMENT}

# Prefilters: a key, blanks, what comes before the id, the id. [ \t]* rather than \s* keeps a match inside one line.
_KEYS = {SUBMISSION: (b'"id":', b'"'), COMMENT: (b'"link_id":', b'"t3_')}

NOT_ZSTD = "not_zstd"
_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE_MAGIC_MIN = 0x184D2A50
_SKIPPABLE_MAGIC_MAX = 0x184D2A5F


def classify_dump(path: str | os.PathLike[str]) -> str | None:
    """``"submission"``, ``"comment"`` or None from the file name alone (``.ndjson``/``.jsonl`` are read as plain text)."""
    name = Path(path).name
    match = _MONTHLY_NAME.match(name) or _PER_SUBREDDIT_NAME.match(name)
    return _KIND_BY_TAG[match.group(1)] if match else None


def is_compressed(path: str | os.PathLike[str]) -> bool:
    return Path(path).suffix == ".zst"


@dataclass(frozen=True)
class LineBlock:
    """Whole lines of a dump: ``data[start:end]`` holds ``n_lines`` lines, each ending in b"\\n".

    ``data`` is the decompressed chunk as read (kept whole to avoid copying megabytes per step); ``offset`` is
    where ``data[start]`` sits in the uncompressed stream and ``first_line_no`` the 1-based number of the first
    line; ``line_ends`` are the newlines' places, counted from ``start``. A last line that had no newline in the
    file gets one here, which moves no offset.
    """

    data: bytes
    start: int
    end: int
    offset: int
    first_line_no: int
    line_ends: np.ndarray

    @property
    def n_lines(self) -> int:
        return len(self.line_ends)


@dataclass(frozen=True)
class _Piece:
    """Bytes the decoding thread cut off: whole lines to scan, or (``skipped``) lines before ``start_offset``
    whose newlines are only counted. Lines are numbered by the consumer, so the decoding thread only decodes."""

    data: bytes
    start: int
    end: int
    offset: int
    skipped: bool = False


@dataclass(frozen=True)
class _Break:
    """The stream stopped (``reason_code``, ``detail``) after ``offset`` bytes of whole lines (None: it held none);
    ``partial`` is the length of the incomplete line dropped, where the detail goes on to say how much was read."""

    reason_code: str
    detail: str
    offset: int | None = None
    partial: int | None = None


class _StreamBroken(Exception):
    """The compressed input ended inside a frame or could not be decoded (``truncated_file``), or was never
    zstd at all (``not_zstd``)."""

    def __init__(self, detail: str, reason_code: str = TRUNCATED_FILE) -> None:
        super().__init__(detail)
        self.reason_code = reason_code


class _FrameTracker:
    """Passes compressed bytes through while following the zstd frame layout (headers, block sizes, checksums).

    Only headers are interpreted (a few Python steps per block of up to 128 KiB of output), which is enough to
    tell whether the input stopped between frames or in the middle of one. Bytes that are not a frame or block
    (junk after the last frame, say) are held back: the decoder sees a clean end and hands over everything
    before them, where it would otherwise raise and drop the output of its current read.
    """

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self._state = "magic"
        self._need = 4
        self._head = b""
        self._skip = 0
        self._has_checksum = False
        self.frames = 0
        self.compressed_bytes = 0
        self.passed_bytes = 0
        self.unrecognised = False

    def read(self, size: int = -1) -> bytes:
        if self.unrecognised:
            return b""
        data = self._raw.read(size)
        self.compressed_bytes += len(data)
        trusted = self._follow(data)
        if trusted < len(data):
            data = data[:trusted]
        self.passed_bytes += len(data)
        return data

    @property
    def ended_between_frames(self) -> bool:
        return self.frames > 0 and self._state == "magic" and not self._head and not self._skip

    def _follow(self, data: bytes) -> int:
        """How many leading bytes of ``data`` belong to recognised frames (all of them, normally)."""
        pos, end = 0, len(data)
        unit_start = 0  # where the header being collected began, if in this data
        while pos < end:
            if self._skip:
                step = min(self._skip, end - pos)
                self._skip -= step
                pos += step
                continue
            if not self._head:
                unit_start = pos
            take = min(self._need - len(self._head), end - pos)
            self._head += data[pos : pos + take]
            pos += take
            if len(self._head) == self._need:
                head, self._head = self._head, b""
                self._advance(head)
                if self.unrecognised:
                    return unit_start
        return end

    def _expect(self, state: str, need: int, skip: int = 0) -> None:
        self._state, self._need, self._skip = state, need, skip

    def _advance(self, head: bytes) -> None:
        if self._state == "magic":
            magic = int.from_bytes(head, "little")
            if magic == _ZSTD_MAGIC:
                self._expect("descriptor", 1)
            elif _SKIPPABLE_MAGIC_MIN <= magic <= _SKIPPABLE_MAGIC_MAX:
                self._expect("skippable_size", 4)
            else:
                self.unrecognised = True
        elif self._state == "skippable_size":
            self.frames += 1
            self._expect("magic", 4, skip=int.from_bytes(head, "little"))
        elif self._state == "descriptor":
            descriptor = head[0]
            content_size_flag, single_segment = descriptor >> 6, (descriptor >> 5) & 1
            self._has_checksum = bool(descriptor & 0b100)
            content_size_bytes = (single_segment, 2, 4, 8)[content_size_flag]
            dictionary_id_bytes = (0, 1, 2, 4)[descriptor & 0b11]
            rest = (0 if single_segment else 1) + dictionary_id_bytes + content_size_bytes
            self._expect("block", 3, skip=rest)
        elif self._state == "block":
            header = int.from_bytes(head, "little")
            is_last, block_type, block_size = header & 1, (header >> 1) & 0b11, header >> 3
            if block_type == 3:
                self.unrecognised = True
                return
            content = 1 if block_type == 1 else block_size  # an RLE block stores one byte
            if not is_last:
                self._expect("block", 3, skip=content)
            elif self._has_checksum:
                self._expect("checksum", 4, skip=content)
            else:
                self.frames += 1
                self._expect("magic", 4, skip=content)
        elif self._state == "checksum":
            self.frames += 1
            self._expect("magic", 4)


def _zstd_chunks(fh: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    tracker = _FrameTracker(fh)
    decompressor = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW_BYTES)
    reader = decompressor.stream_reader(tracker, read_size=COMPRESSED_READ_BYTES, read_across_frames=True, closefd=False)
    try:
        while chunk := reader.read(chunk_size):
            yield chunk
    except zstandard.ZstdError as exc:
        raise _StreamBroken(f"zstd could not decode the stream ({exc}) within the first {tracker.compressed_bytes} "
                            "compressed bytes") from exc
    if tracker.unrecognised and tracker.passed_bytes == 0:
        raise _StreamBroken("the file does not start with a zstd frame (it is not zstd-compressed; plain NDJSON"
                            " is read from .ndjson or .jsonl files)", NOT_ZSTD)
    if tracker.unrecognised:
        raise _StreamBroken(f"compressed byte {tracker.passed_bytes} starts neither a zstd frame nor a block")
    if not tracker.ended_between_frames:
        where = "before any complete frame" if tracker.frames == 0 else "inside a frame"
        raise _StreamBroken(f"compressed input ended {where} after {tracker.compressed_bytes} compressed bytes")


def _plain_chunks(fh: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    while chunk := fh.read(chunk_size):
        yield chunk


class _ReadAhead:
    """Produces the next items on a worker thread while the caller works on the current one.

    zstd releases the GIL while it decompresses, so decoding and the regex scan overlap on two cores instead
    of taking turns; at most ``depth`` items wait in between. Errors from the producer reach the caller in order.
    """

    _END = object()

    def __init__(self, items: Iterator[Any], depth: int):
        self._slots: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, args=(items,), name="dump-read-ahead", daemon=True)
        self._thread.start()

    def _offer(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._slots.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self, items: Iterator[Any]) -> None:
        try:
            for item in items:
                if not self._offer(item):
                    return
        except Exception as exc:  # handed to the consumer, which raises it
            self._offer(exc)
            return
        self._offer(self._END)

    def __iter__(self) -> Iterator[Any]:
        while (item := self._slots.get()) is not self._END:
            if isinstance(item, Exception):
                raise item
            yield item

    def close(self) -> None:
        """Stops the worker and waits for it, so the file can be closed safely afterwards."""
        self._stop.set()
        self._thread.join()


def _problem(locator: str, reason_code: str, detail: str, *, line_no: int | None = None, byte_offset: int | None = None,
             item_id: str | None = None) -> SourceProblem:
    origin = Origin(source_kind=SOURCE_NAME, locator=locator, line_no=line_no, byte_offset=byte_offset)
    return SourceProblem(origin=origin, reason_code=reason_code, detail=f"{where(origin)}: {detail}", item_id=item_id)


def iter_line_blocks(
    path: str | os.PathLike[str], *, chunk_size: int = DEFAULT_CHUNK_BYTES, start_offset: int = 0,
    locator: str | None = None,
) -> Iterator[LineBlock | SourceProblem]:
    """Stream a dump as blocks of whole lines; a problem (unreadable, truncated, corrupt) ends the stream.

    ``start_offset`` resumes at a line start from an earlier scan: everything before it is decompressed and
    discarded unparsed (only its newlines are counted, so line numbers stay absolute). Decompression and
    cutting into lines run on a worker thread, ahead of the caller. Problems name the file by ``locator``
    (how the caller names it: relative to a project's root, say), by its path when none is given.
    """
    path = Path(path)
    locator = str(path) if locator is None else locator
    if chunk_size < 1:
        raise ValueError("chunk_size must be positive")
    if start_offset < 0:
        raise ValueError("start_offset must not be negative")
    try:
        fh = open(path, "rb")
    except OSError as exc:
        yield _problem(locator, UNREADABLE_FILE, f"cannot open: {exc.strerror or exc}")
        return
    if is_compressed(path) and os.fstat(fh.fileno()).st_size == 0:
        fh.close()
        yield _problem(locator, EMPTY_FILE, "the file is empty (0 bytes), so it holds no zstd frame")
        return
    chunks = _zstd_chunks(fh, chunk_size) if is_compressed(path) else _plain_chunks(fh, chunk_size)
    pieces = _ReadAhead(_cut_into_lines(chunks, locator, start_offset), READ_AHEAD_BLOCKS)
    try:
        yield from _numbered(pieces, locator)
    finally:
        pieces.close()
        fh.close()


def _line_ends(data: bytes, start: int, end: int) -> np.ndarray:
    """numpy finds newlines more than twice as fast as ``bytes.count`` counts them, and lets go of the GIL."""
    return np.flatnonzero(np.frombuffer(data, np.uint8, end - start, start) == 0x0A)


def _numbered(pieces: Iterable[_Piece | _Break], locator: str) -> Iterator[LineBlock | SourceProblem]:
    line_no = 1
    for piece in pieces:
        if isinstance(piece, _Break):
            if piece.offset is None:
                yield _problem(locator, piece.reason_code, piece.detail)
                return
            detail = piece.detail
            if piece.partial is not None:
                dropped = f"; the incomplete last line ({piece.partial} bytes) is dropped" if piece.partial else ""
                detail += (f": {piece.offset + piece.partial} uncompressed bytes and {line_no - 1} complete lines"
                           f" were read{dropped}")
            yield _problem(locator, piece.reason_code, detail, line_no=line_no, byte_offset=piece.offset)
            return
        line_ends = _line_ends(piece.data, piece.start, piece.end)
        if not piece.skipped:
            yield LineBlock(piece.data, piece.start, piece.end, piece.offset, line_no, line_ends)
        line_no += len(line_ends)


def _cut_into_lines(chunks: Iterator[bytes], locator: str, start_offset: int) -> Iterator[_Piece | _Break]:
    offset = 0
    pending: list[bytes] = []  # pieces of a line that runs over chunk boundaries
    try:
        for chunk in chunks:
            position = 0
            if offset < start_offset:
                position = min(start_offset - offset, len(chunk))
                yield _Piece(chunk, 0, position, offset, skipped=True)
                offset += position
                if offset < start_offset:
                    continue
                if chunk[position - 1] != 0x0A:
                    raise ValueError(f"start_offset {start_offset} is not the start of a line in {locator}")
                if position == len(chunk):
                    continue
            first_newline = chunk.find(b"\n", position)
            if first_newline < 0:
                pending.append(chunk[position:])
                continue
            if pending:
                pending.append(chunk[position : first_newline + 1])
                line = b"".join(pending)
                pending = []
                yield _Piece(line, 0, len(line), offset)
                offset += len(line)
                position = first_newline + 1
            end = chunk.rfind(b"\n") + 1
            if end > position:
                yield _Piece(chunk, position, end, offset)
                offset += end - position
            if end < len(chunk):
                pending.append(chunk[end:])
        if offset < start_offset:
            raise ValueError(f"start_offset {start_offset} is beyond the end of {locator} ({offset} bytes)")
        if pending:
            line = b"".join(pending) + b"\n"
            yield _Piece(line, 0, len(line), offset)
    except _StreamBroken as exc:
        if exc.reason_code == NOT_ZSTD:
            yield _Break(NOT_ZSTD, str(exc))
            return
        yield _Break(exc.reason_code, str(exc), offset, sum(map(len, pending)))
    except OSError as exc:
        yield _Break(UNREADABLE_FILE, f"read failed after {offset} uncompressed bytes: {exc.strerror or exc}", offset)


def iter_lines(
    path: str | os.PathLike[str], *, chunk_size: int = DEFAULT_CHUNK_BYTES, start_offset: int = 0
) -> Iterator[tuple[int, int, bytes] | SourceProblem]:
    """``(line_no, byte_offset, line)`` per line (without its newline), then a problem if the stream broke."""
    for block in iter_line_blocks(path, chunk_size=chunk_size, start_offset=start_offset):
        if isinstance(block, SourceProblem):
            yield block
            continue
        data, start = block.data, block.start
        for line_no in range(block.first_line_no, block.first_line_no + block.n_lines):
            end = data.index(b"\n", start)
            yield line_no, block.offset + start - block.start, data[start:end]
            start = end + 1


def _epoch_seconds(value: Any) -> float | None:
    """Timestamps come as int, float or (in older dumps) numeric strings."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def retrieved_at_of(record: dict) -> float | None:
    """When the archive copied this record (``retrieved_on``, or ``retrieved_utc`` in newer dumps), if it says."""
    for key in ("retrieved_on", "retrieved_utc"):
        seconds = _epoch_seconds(record.get(key))
        if seconds is not None:
            return seconds
    return None


class _Filter:
    """Which lines of a block to parse (``spans``) and what a parsed record means (``judge``)."""

    kind: str

    def spans(self, block: LineBlock) -> list[tuple[int, int, int]]:
        """``(start, end, index)`` of each line worth parsing: its place in ``block.data`` (newline excluded) and
        its 0-based number within the block, in order."""
        raise NotImplementedError

    def judge(self, record: dict) -> tuple[str, str, str | None] | bool:
        """True to keep, False to pass over, or ``(reason_code, detail, item_id)`` for a problem."""
        raise NotImplementedError


def _line_start(data: bytes, block_start: int, position: int) -> int:
    return (data.rfind(b"\n", block_start, position) + 1) or block_start


_IS_ID_CHAR = np.zeros(256, bool)
_IS_ID_CHAR[np.frombuffer(b"0123456789abcdefghijklmnopqrstuvwxyz", np.uint8)] = True
_ID_RUN = re.compile(rb"[0-9a-z]+")
_ID_WINDOW = 16
"""Characters of each value read at once; longer values are followed a window at a time."""
_MAX_ID_CHARS = 256
"""A longer run of id characters (no Reddit id comes close) sends the block to the regex."""
_MAX_BLANKS = 4
"""Blanks between a key's colon and its value that the numpy path follows; more send the block to the regex."""
_HEAD_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(9)], np.uint64)


def _heads(values: Iterable[bytes]) -> np.ndarray:
    """Sorted first eight bytes (as little-endian numbers) of the values the key regex can match (``[0-9a-z]+``;
    others never match): a value whose head is among them is then compared whole."""
    return np.array(sorted({int.from_bytes(value[:8], "little") for value in values if _ID_RUN.fullmatch(value)}),
                    np.uint64)


def _key_spans(block: LineBlock, key: bytes, value_prefix: bytes, wanted: frozenset[bytes],
               wanted_heads: np.ndarray) -> list[tuple[int, int, int]] | None:
    """``_KeyFilter.spans_by_regex`` in whole-array steps: the same lines, or None where it cannot be sure.

    The key regex is a literal (``key``, ending in its colon), blanks, ``value_prefix`` and ``[0-9a-z]+"``: each
    place the literal occurs is tested on its own, which is what the regex does unless two matches overlap
    (the block then goes to the regex). A line is a candidate when one of its values is wanted, or when it has
    no match and is not blank.
    """
    data, start = block.data, block.start
    text = np.frombuffer(data, np.uint8, block.end - start, start)
    last = len(text) - 1  # a newline: every read past a line's end stops there
    colon = len(key) - 1
    keys = np.flatnonzero(text == key[-1])
    keys = keys[keys >= colon] - colon
    for index in sorted(range(colon), key=lambda i: key[i] in b'"_'):  # letters first: they rule out the most
        keys = keys[text[keys + index] == key[index]]
    value = keys + len(key)
    for _ in range(_MAX_BLANKS):
        blank = (text[value] == 0x20) | (text[value] == 0x09)
        if not blank.any():
            break
        value += blank
    else:
        if ((text[value] == 0x20) | (text[value] == 0x09)).any():
            return None
    for index, byte in enumerate(value_prefix):
        found = text[np.minimum(value + index, last)] == byte
        keys, value = keys[found], value[found]
    value += len(value_prefix)
    window = text[np.minimum(value[:, None] + np.arange(_ID_WINDOW), last)]
    is_id = _IS_ID_CHAR[window]
    length = is_id.argmin(axis=1)
    longer = np.flatnonzero(is_id.all(axis=1))  # media ids have 13 characters; none of them is wanted
    for reach in range(_ID_WINDOW, _MAX_ID_CHARS + 1, _ID_WINDOW):
        if not len(longer):
            break
        more = _IS_ID_CHAR[text[np.minimum(value[longer, None] + reach + np.arange(_ID_WINDOW), last)]]
        ended = ~more.all(axis=1)
        length[longer[ended]] = reach + more[ended].argmin(axis=1)
        longer = longer[~ended]
    else:
        if len(longer):
            return None
    matched = (length > 0) & (text[np.minimum(value + length, last)] == 0x22)
    keys, value, length, window = keys[matched], value[matched], length[matched], window[matched]
    if (keys[1:] <= value[:-1] + length[:-1]).any():
        return None  # one match reaches into the next: the regex would skip the second
    heads = np.ascontiguousarray(window[:, :8]).view("<u8")[:, 0] & _HEAD_MASKS[np.minimum(length, 8)]
    place = np.minimum(np.searchsorted(wanted_heads, heads), max(len(wanted_heads) - 1, 0))
    maybe = np.flatnonzero(wanted_heads[place] == heads) if len(wanted_heads) else place[:0]
    hits = [row for row in maybe.tolist()
            if data[start + int(value[row]) : start + int(value[row] + length[row])] in wanted]
    line_ends = block.line_ends
    line_of_key = np.searchsorted(line_ends, keys)
    candidates = np.unique(line_of_key[hits])
    first_of_line = np.flatnonzero(np.diff(line_of_key, prepend=-1))  # keys are in order, so lines are too
    if len(first_of_line) < len(line_ends):
        keyless = np.setdiff1d(np.arange(len(line_ends)), line_of_key[first_of_line], assume_unique=True)
        firsts = np.concatenate(([0], line_ends[:-1] + 1))
        unread = [i for i in keyless.tolist() if data[start + firsts[i] : start + line_ends[i]].strip()]
        candidates = np.union1d(candidates, np.array(unread, np.int64))
    spans = []
    for index in candidates.tolist():
        first = start + (int(line_ends[index - 1]) + 1 if index else 0)
        spans.append((first, start + int(line_ends[index]), index))
    return spans


class _KeyFilter(_Filter):
    """Submissions by ``id`` or comments by ``link_id``; lines the regex cannot read are parsed and judged."""

    def __init__(self, kind: str, wanted: Collection[str]):
        self.kind = kind
        self.key, self.value_prefix = _KEYS[kind]
        self.pattern = re.compile(re.escape(self.key) + rb"[ \t]*" + re.escape(self.value_prefix) + rb'([0-9a-z]+)"')
        self.wanted = frozenset(wanted)
        self.wanted_bytes = frozenset(value.encode() for value in self.wanted)
        self.wanted_heads = _heads(self.wanted_bytes)

    def spans(self, block: LineBlock) -> list[tuple[int, int, int]]:
        """Found with numpy (which lets go of the GIL, so the decoding thread is not held up); a block the numpy
        path cannot settle exactly (a long id or run of blanks, overlapping matches) goes through the regex."""
        spans = _key_spans(block, self.key, self.value_prefix, self.wanted_bytes, self.wanted_heads)
        return self.spans_by_regex(block) if spans is None else spans

    def spans_by_regex(self, block: LineBlock) -> list[tuple[int, int, int]]:
        """One pass over the key matches; when every line has one, the count of lines hit so far is the line's index."""
        data, wanted = block.data, self.wanted_bytes
        spans: list[tuple[int, int, int]] = []
        line_end = -1
        lines_hit = 0
        for match in self.pattern.finditer(data, block.start, block.end):
            position = match.start()
            if position > line_end:
                line_end = data.find(b"\n", position)
                lines_hit += 1
                if match.group(1) in wanted:
                    spans.append((_line_start(data, block.start, position), line_end, lines_hit - 1))
            elif match.group(1) in wanted and (not spans or spans[-1][1] != line_end):
                spans.append((_line_start(data, block.start, position), line_end, lines_hit - 1))
        return spans if lines_hit == block.n_lines else self._spans_line_by_line(block)

    def _spans_line_by_line(self, block: LineBlock) -> list[tuple[int, int, int]]:
        """For the rare block where some line has no readable key: those lines are parsed too."""
        data, spans = block.data, []
        start = block.start
        for index in range(block.n_lines):
            end = data.index(b"\n", start)
            keys = self.pattern.findall(data, start, end)
            if (keys and not self.wanted_bytes.isdisjoint(keys)) or (not keys and data[start:end].strip()):
                spans.append((start, end, index))
            start = end + 1
        return spans

    def judge(self, record: dict) -> tuple[str, str, str | None] | bool:
        record_id = _record_id(record)
        if self.kind == SUBMISSION:
            return record_id in self.wanted if record_id else _no_id(record, "submission")
        link_id = record.get("link_id")
        if not isinstance(link_id, str) or not link_id.startswith("t3_"):
            return MISSING_FIELD, "comment has no link_id of the form t3_<id>", record_id
        if link_id[3:] not in self.wanted:
            return False
        return True if record_id else _no_id(record, f"comment on post {link_id[3:]}")


class _WindowFilter(_Filter):
    """Submissions of one subreddit created in [start_utc, end_utc); only lines naming the subreddit can match."""

    kind = SUBMISSION

    def __init__(self, window: SubredditWindow):
        self.window = window
        self.subreddit = window.subreddit.casefold()
        self.needle = b'"' + window.subreddit.lower().encode() + b'"'

    def spans(self, block: LineBlock) -> list[tuple[int, int, int]]:
        lowered = block.data.lower()  # ASCII-only and length-preserving, so positions carry over
        spans = []
        counted_to, index = block.start, 0
        position = lowered.find(self.needle, block.start, block.end)
        while position >= 0:
            start, end = _line_start(lowered, block.start, position), lowered.find(b"\n", position)
            index += lowered.count(b"\n", counted_to, start)
            counted_to = start
            spans.append((start, end, index))
            position = lowered.find(self.needle, end, block.end)
        return spans

    def judge(self, record: dict) -> tuple[str, str, str | None] | bool:
        subreddit = record.get("subreddit")
        if not isinstance(subreddit, str) or subreddit.casefold() != self.subreddit:
            return False
        record_id = _record_id(record)
        raw_created = record.get("created_utc")
        created = _epoch_seconds(raw_created)
        if raw_created is None:
            return MISSING_FIELD, "submission has no created_utc to place it in the window", record_id
        if created is None:
            return (BAD_FIELD_TYPE, f"field created_utc is {type(raw_created).__name__}, expected a number of seconds"
                                    f" (got {raw_created!r:.60})", record_id)
        if not self.window.start_utc <= created < self.window.end_utc:
            return False
        return True if record_id else _no_id(record, "submission")


def _record_id(record: dict) -> str | None:
    record_id = record.get("id")
    return record_id if isinstance(record_id, str) and record_id else None


def _no_id(record: dict, what: str) -> tuple[str, str, None]:
    """``missing_field`` for a record without an id, ``bad_field_type`` for one whose id is not a string."""
    value = record.get("id")
    if value is None or value == "":
        return MISSING_FIELD, f"{what} has no id", None
    return BAD_FIELD_TYPE, f"{what}: field id is {type(value).__name__}, expected str (got {value!r:.60})", None


@dataclass(frozen=True, slots=True)
class DumpLine:
    """One line of a dump that can match the selection, not parsed yet (``read_line`` does that)."""

    locator: str
    line_no: int
    byte_offset: int
    data: bytes
    selection: _Filter


def selector(
    kind: str,
    *,
    ids: Collection[str] | None = None,
    window: SubredditWindow | None = None,
    post_ids: Collection[str] | None = None,
) -> _Filter:
    """What a scan selects: submissions by ``ids`` or ``window``, comments by ``post_ids``."""
    if kind == SUBMISSION:
        if (ids is None) == (window is None) or post_ids is not None:
            raise ValueError("submissions are selected by exactly one of ids or window")
        return _KeyFilter(SUBMISSION, ids) if ids is not None else _WindowFilter(window)
    if kind == COMMENT:
        if post_ids is None or ids is not None or window is not None:
            raise ValueError("comments are selected by post_ids")
        return _KeyFilter(COMMENT, post_ids)
    raise ValueError(f"kind must be {SUBMISSION!r} or {COMMENT!r}, not {kind!r}")


def read_line(line: DumpLine) -> RawItem | SourceProblem | None:
    """The record of a candidate line, a problem naming the file and line, or None when the parsed record is
    not selected after all (another post's id in a nested object, a date outside the window). Never raises for
    the line's content: bytes that are not UTF-8 are ``bad_encoding``, anything that is not one JSON object
    (also JSON nested too deeply to parse) is ``malformed_json``."""

    def problem(reason_code: str, detail: str, item_id: str | None = None) -> SourceProblem:
        return _problem(line.locator, reason_code, detail, line_no=line.line_no, byte_offset=line.byte_offset,
                        item_id=item_id)

    try:
        text = line.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return problem(BAD_ENCODING, f"byte {line.data[exc.start:exc.start + 1].hex()} at column {exc.start + 1}"
                                     " is not valid UTF-8")
    try:
        record = json.loads(text)
    except ValueError as exc:
        return problem(MALFORMED_JSON, f"line is not valid JSON: {exc}")
    except RecursionError:
        return problem(MALFORMED_JSON, "line is JSON nested too deeply to parse")
    if not isinstance(record, dict):
        return problem(MALFORMED_JSON, f"line holds a JSON {type(record).__name__}, not an object")
    verdict = line.selection.judge(record)
    if verdict is True:
        return RawItem(kind=line.selection.kind, data=record, origin=Origin(
            SOURCE_NAME, line.locator, line.line_no, line.byte_offset, retrieved_at_of(record)))
    if verdict is False:
        return None
    return problem(*verdict)


def read_all(lines: Iterable[DumpLine | SourceProblem]) -> Iterator[RawItem | SourceProblem]:
    """Every line read: the records and problems of a scan, for callers that do not isolate lines."""
    for line in lines:
        result = read_line(line) if isinstance(line, DumpLine) else line
        if result is not None:
            yield result


def scan_dump_file(path: str | os.PathLike[str], selection: _Filter, locator: str, *, chunk_size: int = DEFAULT_CHUNK_BYTES,
                   start_offset: int = 0) -> Iterator[DumpLine | SourceProblem]:
    """The lines of one dump file that can match ``selection`` (see ``selector``), unparsed, named by ``locator``;
    then a problem if the file is unreadable or ends mid-frame. A plain function of the file and the selection,
    so a file can be scanned anywhere (a worker process, a partition of its own)."""
    path = Path(path)
    file_kind = classify_dump(path)
    if file_kind is None:
        yield _problem(locator, UNSUPPORTED_FILE,
                       "name matches neither RS_/RC_YYYY-MM nor <sub>_submissions/comments with .zst, .ndjson or .jsonl")
        return
    if file_kind != selection.kind:
        raise ValueError(f"{path.name} holds {file_kind}s, not {selection.kind}s")
    for block in iter_line_blocks(path, chunk_size=chunk_size, start_offset=start_offset, locator=locator):
        if isinstance(block, SourceProblem):
            yield block
            continue
        data = block.data
        for start, end, index in selection.spans(block):
            yield DumpLine(locator, block.first_line_no + index, block.offset + start - block.start, data[start:end],
                           selection)


def read_dump_file(path: str | os.PathLike[str], selection: _Filter, locator: str,
                   chunk_size: int = DEFAULT_CHUNK_BYTES) -> list[RawItem | SourceProblem]:
    """Every record and problem of one file's scan (for a worker process: module-level, picklable arguments)."""
    return list(read_all(scan_dump_file(path, selection, locator, chunk_size=chunk_size)))


def dump_file_lines(path: str | os.PathLike[str], kind: str, selection: dict[str, Any], locator: str,
                    chunk_size: int = DEFAULT_CHUNK_BYTES, start_offset: int = 0) -> list[DumpLine | SourceProblem]:
    """Every line of one file's scan (``DumpSource.scan_lines``) as one list: a task for a cluster worker
    (module-level, picklable arguments), which reads the file and hands back data, never the warehouse."""
    return list(scan_dump_file(path, selector(kind, **selection), locator, chunk_size=chunk_size,
                               start_offset=start_offset))


def _expand(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """A directory stands for the dump files directly inside it; other paths are taken as given.

    A file named twice (directly and through its folder, say) is kept once, so it is not scanned twice.
    """
    expanded: dict[Path, Path] = {}
    for raw in paths:
        path = Path(raw)
        found = [child for child in path.iterdir() if child.is_file() and classify_dump(child)] if path.is_dir() else [path]
        for file in found:
            expanded.setdefault(file.resolve(), file)
    return list(expanded.values())


def _dump_order(path: Path) -> tuple[str, str]:
    """By file name first, so monthly files come in calendar order whatever folder they sit in."""
    return path.name, str(path)


class DumpSource:
    """``RedditSource`` over local dump files.

    ``submissions`` scans every submission file, ``comments`` every comment file (a post's comments may sit in
    later monthly files than the post). The same record seen in several files is yielded once per file;
    merging observations is the normalizer's job. Files whose names match no dump pattern are reported once,
    by ``submissions``. Records and problems name a file by ``name_of(path)`` (its path unless told otherwise),
    so a pipeline can name dumps relative to its project and derive the same ids wherever the project sits.
    With a ``pool`` (whose lifetime the caller owns), ``submissions`` and ``comments`` scan several files at once
    in its worker processes, with the same results in the same order.
    """

    name = SOURCE_NAME

    def __init__(self, paths: Iterable[str | os.PathLike[str]], chunk_size: int = DEFAULT_CHUNK_BYTES,
                 name_of: Callable[[Path], str] = str, pool: CpuPool | None = None):
        self.paths = _expand(paths)
        self.chunk_size = chunk_size
        self.name_of = name_of
        self.pool = pool

    def files(self, kind: str) -> list[Path]:
        if kind not in (SUBMISSION, COMMENT):
            raise ValueError(f"kind must be {SUBMISSION!r} or {COMMENT!r}, not {kind!r}")
        return sorted((path for path in self.paths if classify_dump(path) == kind), key=_dump_order)

    def unsupported_files(self) -> list[Path]:
        return sorted((path for path in self.paths if classify_dump(path) is None), key=_dump_order)

    def scan_file(self, path: str | os.PathLike[str], kind: str, **selection: Any) -> Iterator[RawItem | SourceProblem]:
        """Matching records of one file, parsed (``scan_lines`` takes the same arguments)."""
        return read_all(self.scan_lines(path, kind, **selection))

    def scan_lines(
        self,
        path: str | os.PathLike[str],
        kind: str,
        *,
        start_offset: int = 0,
        **selection: Any,
    ) -> Iterator[DumpLine | SourceProblem]:
        """The lines of one file that can match ``selection`` (see ``selector``), unparsed; then a problem if the
        file is unreadable or ends mid-frame."""
        record_filter = selector(kind, **selection)
        return self._scan_file(Path(path), record_filter, start_offset)

    def _scan_file(self, path: Path, record_filter: _Filter, start_offset: int = 0) -> Iterator[DumpLine | SourceProblem]:
        return scan_dump_file(path, record_filter, self.name_of(path), chunk_size=self.chunk_size, start_offset=start_offset)

    def _read_files(self, paths: list[Path], record_filter: _Filter) -> Iterator[RawItem | SourceProblem]:
        """Records and problems file after file; with a pool, ``pool.workers`` files are scanned at once in its
        worker processes (each holds its own decoder window) and their results still come in file order."""
        if self.pool is None or len(paths) < 2:
            for path in paths:
                yield from read_all(self._scan_file(path, record_filter))
            return
        threads = ThreadPoolExecutor(self.pool.workers, thread_name_prefix="dump-scan")
        try:
            scans = [threads.submit(self.pool.call, read_dump_file, path, record_filter, self.name_of(path),
                                    self.chunk_size) for path in paths]
            for scan in scans:
                yield from scan.result()
        finally:
            threads.shutdown(wait=True, cancel_futures=True)

    def submissions(
        self, ids: Collection[str] | None, window: SubredditWindow | None
    ) -> Iterator[RawItem | SourceProblem]:
        """Every copy of the asked-for submissions, then ``not_found`` for ids that no file held."""
        if (ids is None) == (window is None):
            raise ValueError("submissions are selected by exactly one of ids or window")
        return self._submissions(frozenset(ids) if ids is not None else None, window)

    def _submissions(self, wanted: frozenset[str] | None, window: SubredditWindow | None) -> Iterator[RawItem | SourceProblem]:
        record_filter = _KeyFilter(SUBMISSION, wanted) if wanted is not None else _WindowFilter(window)
        yield from self._read_files(self.unsupported_files(), record_filter)
        if wanted is not None and not wanted:
            return
        files = self.files(SUBMISSION)
        seen: set[str] = set()
        for result in self._read_files(files, record_filter):
            if isinstance(result, RawItem):
                seen.add(result.data["id"])
            yield result
        if wanted is None:
            return
        folder = files[0] if len(files) == 1 else Path(os.path.commonpath([p.absolute() for p in files])) if files else None
        locator = self.name_of(folder) if folder is not None else ""
        for missing in sorted(wanted - seen):
            yield SourceProblem(
                origin=Origin(source_kind=SOURCE_NAME, locator=locator),
                reason_code=NOT_FOUND,
                detail=f"not in any of {len(files)} submission dump files",
                item_id=missing,
            )

    def comments(self, post_ids: Collection[str]) -> Iterator[RawItem | SourceProblem]:
        """Every comment, at any depth, on the given posts, from every comment file."""
        record_filter = _KeyFilter(COMMENT, post_ids)
        if not record_filter.wanted:
            return
        yield from self._read_files(self.files(COMMENT), record_filter)
