"""What the record-file generators (poems, surveys, cases) share: a case and its expected outcome, and the
property that a reader of random bytes yields only its record types or raises only its file error."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

KEPT = "kept"


@dataclass(frozen=True)
class RecordCase:
    """One hostile input: a record of a file (``locator`` set: ``file#line=N``, ``file#row=N``, ``file#record=N``)
    or a whole file (``locator`` None); ``expected`` is ``kept`` or the reason code of its rejection."""

    name: str
    source: Path
    expected: str
    locator: str | None = None


def read_all_or_file_error(read: Callable[[Path], Iterable], path: Path, kinds: tuple[type, ...],
                           file_error: type[Exception], data: bytes | None = None) -> list:
    """Every record ``read(path)`` yields (each must be one of ``kinds``), or [] when it raises ``file_error``;
    any other exception propagates and fails the property. ``data``, when given, is written to ``path`` first."""
    if data is not None:
        path.write_bytes(data)
    try:
        records = list(read(path))
    except file_error:
        return []
    assert all(isinstance(r, kinds) for r in records), records
    return records
