"""Reading provenance records from manifests (CSV or JSONL) and local image folders.

A manifest is read line by line (``assets.core.logic.textfiles``), so a manifest of millions of rows never sits in
memory and one bad line (a latin-1 byte, a ragged row, broken JSON) is that line's problem while every other
line is read. Each line becomes a :class:`ManifestRow`, and :func:`source_row` turns one into a ``SourceRow``; a
row that cannot be used still becomes one, carrying the reason in ``problem`` so the collection stage keeps it in
the warehouse instead of dropping it. Problems of the whole file (empty, no usable header, not text) come first,
as one row with ``file_level`` set, so the caller rejects that manifest and reads the next.

One header vocabulary everywhere: a row's bytes are at ``locator``, ``url`` or ``path``; column names (and JSONL
keys) are matched without regard to case or surrounding spaces.

Local files are named relative to the project's root (``warehouse.ids.file_name``): a manifest row's relative
locator means a file beside the manifest and is named ``<manifest's folder>/<locator>`` from the root, a folder's
file ``<folder>/<its path in the folder>``, and manifests and folders themselves by their names. Record ids, rows
and problem details carry those names, never this machine's absolute paths, so a copy of the project elsewhere
derives the same records; URLs stay URLs.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

from assets.core.logic.textfiles import BAD_HEADER, EMPTY_FILE, line_locator, read_csv_records, read_jsonl_records
from warehouse.ids import digest_of, entity_id, file_name, file_path, sha256_file

DOMAINS = ("photography", "painting", "virtual")
LOCATOR_FIELDS = ("locator", "url", "path")
PROVENANCE_FIELDS = ("title", "creator", "provider", "source_url", "license", "redistribution", "domain")
REDISTRIBUTION_VALUES = ("allowed", "restricted", "unknown")
JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})

# Reason codes for rows rejected before anything is fetched (besides the reader's: bad_encoding, line_too_long,
# ragged_row, invalid_json, bad_csv; and for a whole manifest: empty_file, bad_header, bad_encoding).
MISSING_FIELD = "missing_field"
INVALID_DOMAIN = "invalid_domain"
INVALID_REDISTRIBUTION = "invalid_redistribution"
INVALID_LOCATOR = "invalid_locator"
MALFORMED_ROW = "malformed_row"
DUPLICATE_ID = "duplicate_id"
DUPLICATE_ROW = "duplicate_row"
UNREADABLE_FILE = "unreadable_file"


@dataclass(frozen=True)
class SourceRow:
    source_type: str  # manifest | folder | reddit | generated
    source_name: str
    locator: str
    title: str | None
    creator: str
    provider: str
    source_url: str | None
    license: str | None
    redistribution: str
    domain: str | None
    extra: Mapping[str, Any] = field(default_factory=dict)
    problem: tuple[str, str] | None = None  # (reason code, detail)
    content_sha256: str | None = None  # known up front for folder files, whose bytes define the record

    @property
    def record_id(self) -> str:
        """Content-derived: the same provenance for the same bytes (or bytes location) is the same record. A
        rejected row is also identified by where it is (its source and line), as it may not describe a record."""
        payload = [
            self.source_type,
            self.locator,
            *(getattr(self, f) for f in PROVENANCE_FIELDS),
            dict(self.extra),
            self.content_sha256,
        ]
        if self.problem:
            payload.append(self.source_name)
        return entity_id("source_record", digest_of(payload))


def is_url(locator: str) -> bool:
    return urlparse(locator).scheme in {"http", "https"}


def resolve_locator(raw: str, base_dir: Path, root: Path) -> str:
    """URLs stay as they are; a file:// URL, an absolute path or a path relative to ``base_dir`` becomes the
    file's name relative to ``root`` (``file_name``)."""
    raw = raw.strip()
    if is_url(raw):
        return raw
    if raw.startswith("file://"):
        raw = urlparse(raw).path
    path = Path(raw).expanduser()
    return file_name((base_dir / path).resolve() if not path.is_absolute() else path.resolve(), root)


def file_reference(name: str) -> str:
    """A local file's name as a URI reference, the record's ``source_url`` when its source gives none: relative
    (percent-encoded) for a name under the root, a ``file://`` URI for one that stays absolute."""
    return Path(name).as_uri() if Path(name).is_absolute() else quote(name)


def _clean(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def normalized_names(fields: Mapping[Any, Any]) -> dict[str, Any]:
    """Column names as the vocabulary spells them: ``" Locator "`` is ``locator``."""
    return {str(name).strip().lower(): value for name, value in fields.items()}


def row_from_fields(
    fields: Mapping[str, Any], *, source_type: str, source_name: str, base_dir: Path, root: Path, where: str
) -> SourceRow:
    """Validate one row (already split into named fields, names normalised) into a SourceRow.

    ``where`` names the row for a problem's detail (``manifest.csv: line 5``, a folder file's name); a relative
    locator is a file in ``base_dir``, named relative to ``root``.
    """
    raw_locator = next((_clean(fields.get(name)) for name in LOCATOR_FIELDS if _clean(fields.get(name))), None)
    locator, bad_locator = "", None
    if raw_locator:
        try:
            locator = resolve_locator(raw_locator, base_dir, root)
        except (OSError, RuntimeError, ValueError) as exc:  # NUL byte, symlink loop, unusable path
            locator, bad_locator = raw_locator, f"{raw_locator[:200]!r} is not a usable path ({exc})"
    domain = (_clean(fields.get("domain")) or "").lower() or None
    redistribution = (_clean(fields.get("redistribution")) or "unknown").lower()
    known = {*LOCATOR_FIELDS, *PROVENANCE_FIELDS}
    extra = {k: v for k, v in fields.items() if k not in known and _clean(v) is not None}
    usable = bool(locator) and bad_locator is None
    title = _clean(fields.get("title")) or (Path(urlparse(locator).path).name if usable else None)
    source_url = _clean(fields.get("source_url")) or (
        (locator if is_url(locator) else file_reference(locator)) if usable else None
    )
    problem = None
    if not locator:
        problem = (MISSING_FIELD, f"{where}: missing field 'locator' (or 'url', 'path'): the row says where no bytes are")
    elif bad_locator:
        problem = (INVALID_LOCATOR, f"{where}: {bad_locator}")
    elif domain is None:
        problem = (MISSING_FIELD, f"{where}: missing field 'domain' (one of {', '.join(DOMAINS)})")
    elif domain not in DOMAINS:
        problem = (INVALID_DOMAIN, f"{where}: domain {domain!r} is not one of {', '.join(DOMAINS)}")
    elif not _clean(fields.get("license")):
        problem = (MISSING_FIELD, f"{where}: missing field 'license': its reuse terms cannot be checked")
    elif redistribution not in REDISTRIBUTION_VALUES:
        problem = (INVALID_REDISTRIBUTION,
                   f"{where}: redistribution {redistribution!r} is not one of {', '.join(REDISTRIBUTION_VALUES)}")
    return SourceRow(
        source_type=source_type,
        source_name=source_name,
        locator=locator,
        title=title,
        creator=_clean(fields.get("creator")) or "unknown",
        provider=_clean(fields.get("provider")) or "unknown",
        source_url=source_url,
        license=_clean(fields.get("license")),
        redistribution=redistribution,
        domain=domain,
        extra=extra,
        problem=problem,
    )


# -- manifests -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ManifestRow:
    """One line of a manifest as read, before it is validated.

    ``fields`` are the row's values by normalised column name (a JSONL line's value, whatever its type);
    ``problem`` is what the reading found (bad encoding, ragged row, broken JSON, repeated id); ``digest``
    fingerprints what :func:`source_row` reads, so a changed line is a changed item.
    """

    manifest: str  # its name (relative to the root)
    line: int
    fields: Any = None
    problem: tuple[str, str] | None = None
    file_level: bool = False
    digest: str = ""

    @property
    def locator(self) -> str:
        return line_locator(self.manifest, self.line)


def read_manifest(path: Path, root: Path) -> Iterator[ManifestRow]:
    """Stream a CSV (header row required) or JSONL manifest, one :class:`ManifestRow` per line, named (and its
    problems' details naming it) relative to ``root``.

    A problem of the whole file is one ``file_level`` row, yielded before any other: the file is empty or has
    a header but no rows, its header line is unreadable, or no column says where the bytes are. Within one
    manifest a repeated ``id`` (or a row repeating an earlier one exactly) is ``duplicate_id`` /
    ``duplicate_row``: the first row wins, the later ones name its line (only the ids and row digests seen are
    kept in memory, not the rows).
    """
    path = path.resolve()
    name = file_name(path, root)
    jsonl = path.suffix.lower() in JSONL_SUFFIXES
    records = read_jsonl_records(path) if jsonl else read_csv_records(path)
    held: list[ManifestRow] = []  # CSV problem lines read before a row shows the header is usable
    header_checked, any_record = jsonl, False
    first_line: dict[Any, int] = {}
    for record in records:
        any_record = True
        if record.file_level:
            yield ManifestRow(name, record.line, problem=record.problem, file_level=True)
            return
        if record.problem:
            code, detail = record.problem
            if not header_checked and record.line == 1:
                yield ManifestRow(name, 1, problem=(code, f"the header line is unreadable ({detail})"), file_level=True)
                return
            row = ManifestRow(name, record.line, problem=(code, f"{name}: {detail}"), digest=digest_of(record.problem))
            if header_checked:
                yield row
            else:
                held.append(row)
            continue
        fields = normalized_names(record.fields) if isinstance(record.fields, Mapping) else record.fields
        if not header_checked:
            trouble = _header_problem(list(record.fields), fields)
            if trouble:
                yield ManifestRow(name, 1, problem=(BAD_HEADER, trouble), file_level=True)
                return
            header_checked = True
            yield from held
            held.clear()
        yield _with_duplicates(name, record.line, fields, first_line)
    if not any_record:
        yield ManifestRow(name, 0, problem=(EMPTY_FILE, "the manifest has a header but no rows"), file_level=True)
    yield from held


def _header_problem(names: list[str], normalized: Mapping[str, Any]) -> str | None:
    if len(normalized) < len(names):
        return f"the header names a column twice when case and spaces are ignored ({', '.join(names)})"
    if not any(name in normalized for name in LOCATOR_FIELDS):
        return f"the header has no locator, url or path column (it has: {', '.join(names)[:500]})"
    return None


def _with_duplicates(manifest: str, line: int, fields: Any, first_line: dict[Any, int]) -> ManifestRow:
    """The row, marked as a duplicate when its id (or, without one, its whole content) came earlier."""
    digest = digest_of(fields)
    if not isinstance(fields, Mapping):
        return ManifestRow(manifest, line, fields, digest=digest)
    ident = _clean(fields.get("id"))
    first = first_line.setdefault(("id", ident) if ident else ("row", digest), line)
    problem = None
    if first != line and ident:
        problem = (DUPLICATE_ID, f"{manifest}: line {line}: id {ident[:200]!r} is already line {first}'s; the first row wins")
    elif first != line:
        problem = (DUPLICATE_ROW, f"{manifest}: line {line}: repeats line {first} exactly; the first row wins")
    return ManifestRow(manifest, line, fields, problem, digest=digest_of([digest, problem]))


def source_row(row: ManifestRow, root: Path) -> SourceRow:
    """The provenance record one manifest line describes, valid or carrying its problem (whose detail names the
    manifest and line); ``root`` is the one ``read_manifest`` named the manifest against. Resolves paths but reads
    no file."""
    where = f"{row.manifest}: line {row.line}"
    if not isinstance(row.fields, Mapping):
        problem = row.problem or (MALFORMED_ROW, f"{where}: a JSONL line must be an object, not {type(row.fields).__name__}")
        return SourceRow("manifest", row.manifest, row.locator, None, "unknown", "unknown", None, None, "unknown",
                         None, {"line": row.line}, problem)
    parsed = row_from_fields(row.fields, source_type="manifest", source_name=row.manifest,
                             base_dir=file_path(row.manifest, root).parent, root=root, where=where)
    problem = row.problem or parsed.problem
    if problem is None:
        return parsed
    return replace(parsed, locator=parsed.locator or row.locator, extra={**parsed.extra, "line": row.line}, problem=problem)


# -- folders ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FolderDefaults:
    """Provenance that a local folder's config gives to every image in it."""

    provider: str
    license: str | None
    creator: str = "unknown"
    redistribution: str = "unknown"
    domain: str | None = None
    source_url_prefix: str | None = None


@dataclass(frozen=True)
class FolderEntry:
    """One entry of a folder whose name says image, as listed: its size and mtime (of the link itself when it
    points nowhere), whether it is a regular file, and why it cannot be looked at when it cannot."""

    path: Path
    size: int | None = None
    mtime_ns: int | None = None
    regular: bool = False
    error: str | None = None

    @property
    def fingerprint(self) -> tuple[int, int] | None:
        return None if self.size is None or self.mtime_ns is None else (self.size, self.mtime_ns)


def scan_folder(root: Path) -> Iterator[FolderEntry]:
    """Every entry under ``root`` (recursive, sorted), file or not — a broken link or a FIFO is listed so it gets
    its own rejection — and every sub-folder that cannot be listed. Whether a file is an image is the decoder's
    call, not its suffix's: a ``.ppm`` is kept and a ``notes.txt`` is rejected as ``not_an_image``, each with its
    outcome. Hidden entries (a name starting with ``.``: ``.DS_Store``, ``.git/``) are a system's, not the
    user's, and are left out. A directory is walked, never taken for an image, whatever its name."""
    root = root.resolve()
    errors: list[OSError] = []
    for folder, subfolders, files in os.walk(root, onerror=errors.append):
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        while errors:
            error = errors.pop(0)
            yield FolderEntry(Path(error.filename or folder), error=f"the folder cannot be listed ({error.strerror or error})")
        for name in sorted(files):
            if not name.startswith("."):
                yield _entry(Path(folder) / name)
    for error in errors:
        yield FolderEntry(Path(error.filename or root), error=f"the folder cannot be listed ({error.strerror or error})")


def _entry(path: Path) -> FolderEntry:
    try:
        info = os.stat(path)
    except OSError as exc:
        try:
            info = os.lstat(path)
        except OSError:
            return FolderEntry(path, error=f"cannot be looked at ({exc.strerror or exc})")
        return FolderEntry(path, info.st_size, info.st_mtime_ns, error=f"cannot be opened ({exc.strerror or exc})")
    return FolderEntry(path, info.st_size, info.st_mtime_ns, regular=stat.S_ISREG(info.st_mode))


def folder_row(folder: Path, entry: FolderEntry, defaults: FolderDefaults, root: Path) -> SourceRow:
    """The provenance record of one folder entry: the folder's defaults, the domain of a sub-folder named after
    one, and the file's sha256 (the file is read here); an entry that cannot be read is ``unreadable_file``. The
    folder and the entry are named relative to ``root``."""
    folder = folder.resolve()
    relative = entry.path.relative_to(folder)
    first = relative.parts[0].lower() if len(relative.parts) > 1 else None
    domain = first if first in DOMAINS else defaults.domain
    name = file_name(entry.path, root)
    fields = {
        "locator": name,
        "title": entry.path.stem,
        "creator": defaults.creator,
        "provider": defaults.provider,
        "source_url": f"{defaults.source_url_prefix.rstrip('/')}/{relative.as_posix()}"
        if defaults.source_url_prefix
        else file_reference(name),
        "license": defaults.license,
        "redistribution": defaults.redistribution,
        "domain": domain,
    }
    row = row_from_fields(fields, source_type="folder", source_name=file_name(folder, root), base_dir=root, root=root,
                          where=f"{name} (provenance from the folder's config)")
    trouble = entry.error or (None if entry.regular else "is not a regular file")
    if trouble is None and row.problem is None:
        try:
            return replace(row, content_sha256=sha256_file(entry.path))
        except OSError as exc:
            trouble = f"cannot be read ({exc.strerror or exc})"
    if trouble is None:
        return row
    return replace(row, locator=row.locator or name, problem=(UNREADABLE_FILE, f"{name}: {trouble}"))
