"""Reading provenance records from manifests (CSV or JSONL) and local image folders.

Parsing streams row by row, so a manifest of millions of rows never sits in memory. Every row
becomes a ``SourceRow``; a row that cannot be used still becomes one, carrying the reason in
``problem`` so the collection stage can keep it in the warehouse instead of dropping it.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from warehouse.ids import digest_of, entity_id

DOMAINS = ("photography", "painting", "virtual")
PROVENANCE_FIELDS = ("title", "creator", "provider", "source_url", "license", "redistribution", "domain")
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff"})
REDISTRIBUTION_VALUES = ("allowed", "restricted", "unknown")

# Reason codes for rows rejected before anything is fetched.
MISSING_LOCATOR = "missing_locator"
INVALID_DOMAIN = "invalid_domain"
MISSING_LICENSE = "missing_license"
INVALID_REDISTRIBUTION = "invalid_redistribution"
MALFORMED_ROW = "malformed_row"


@dataclass(frozen=True)
class SourceRow:
    source_type: str  # manifest | folder
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
        """Content-derived: the same provenance for the same bytes (or bytes location) is the same record."""
        payload = [
            self.source_type,
            self.locator,
            *(getattr(self, f) for f in PROVENANCE_FIELDS),
            dict(self.extra),
            self.content_sha256,
        ]
        return entity_id("source_record", digest_of(payload))


def is_url(locator: str) -> bool:
    return urlparse(locator).scheme in {"http", "https"}


def resolve_locator(raw: str, base_dir: Path) -> str:
    """URLs stay as they are; file:// URLs and relative paths become absolute paths."""
    raw = raw.strip()
    if is_url(raw):
        return raw
    if raw.startswith("file://"):
        raw = urlparse(raw).path
    path = Path(raw).expanduser()
    return str((base_dir / path).resolve() if not path.is_absolute() else path.resolve())


def _clean(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def row_from_fields(fields: Mapping[str, Any], *, source_type: str, source_name: str, base_dir: Path) -> SourceRow:
    """Validate one manifest row (already split into named fields) into a SourceRow."""
    raw_locator = _clean(fields.get("locator") or fields.get("url") or fields.get("path"))
    locator = resolve_locator(raw_locator, base_dir) if raw_locator else ""
    domain = (_clean(fields.get("domain")) or "").lower() or None
    redistribution = (_clean(fields.get("redistribution")) or "unknown").lower()
    known = {"locator", "url", "path", *PROVENANCE_FIELDS}
    extra = {k: v for k, v in fields.items() if k not in known and _clean(v) is not None}
    title = _clean(fields.get("title")) or (Path(urlparse(locator).path).name if locator else None)
    source_url = _clean(fields.get("source_url")) or (
        locator if is_url(locator) else Path(locator).as_uri() if locator else None
    )
    problem = None
    if not locator:
        problem = (MISSING_LOCATOR, "row has no locator/url/path")
    elif domain not in DOMAINS:
        problem = (INVALID_DOMAIN, f"domain {domain!r} is not one of {', '.join(DOMAINS)}")
    elif not _clean(fields.get("license")):
        problem = (MISSING_LICENSE, "row has no license; its reuse terms cannot be checked")
    elif redistribution not in REDISTRIBUTION_VALUES:
        problem = (INVALID_REDISTRIBUTION, f"redistribution {redistribution!r} is not one of {', '.join(REDISTRIBUTION_VALUES)}")
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


def _malformed(source_name: str, line: int, detail: str, raw: str) -> SourceRow:
    return SourceRow(
        source_type="manifest",
        source_name=source_name,
        locator="",
        title=None,
        creator="unknown",
        provider=None,
        source_url=None,
        license=None,
        redistribution="unknown",
        domain=None,
        extra={"line": line, "raw": raw[:2000]},
        problem=(MALFORMED_ROW, f"line {line}: {detail}"),
    )


def read_manifest(path: Path) -> Iterator[SourceRow]:
    """Stream a CSV (header row required) or JSONL manifest; relative locators resolve against its folder."""
    path = path.resolve()
    base_dir, name = path.parent, str(path)
    if path.suffix.lower() in {".jsonl", ".ndjson"}:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    fields = json.loads(line)
                except json.JSONDecodeError as exc:
                    yield _malformed(name, number, f"invalid JSON ({exc.msg})", line)
                    continue
                if not isinstance(fields, dict):
                    yield _malformed(name, number, "a JSONL row must be an object", line)
                    continue
                row = row_from_fields(fields, source_type="manifest", source_name=name, base_dir=base_dir)
                yield _with_line(row, number)
        return
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None or "locator" not in reader.fieldnames and "url" not in reader.fieldnames:
            raise ValueError(f"{path}: a CSV manifest needs a header with a 'locator' (or 'url') column")
        for fields in reader:
            number = reader.line_num
            if None in fields:  # more cells than header columns
                yield _malformed(name, number, "more cells than header columns", ",".join(map(str, fields[None])))
                continue
            row = row_from_fields(fields, source_type="manifest", source_name=name, base_dir=base_dir)
            yield _with_line(row, number)


def _with_line(row: SourceRow, line: int) -> SourceRow:
    """Rejected rows remember their line so a user can find them; valid rows stay line-independent."""
    if row.problem is None:
        return row
    return SourceRow(**{**row.__dict__, "extra": {**row.extra, "line": line}})


@dataclass(frozen=True)
class FolderDefaults:
    """Provenance that a local folder's config gives to every image in it."""

    provider: str
    license: str | None
    creator: str = "unknown"
    redistribution: str = "unknown"
    domain: str | None = None
    source_url_prefix: str | None = None


def scan_folder(root: Path, defaults: FolderDefaults) -> Iterator[tuple[Path, SourceRow]]:
    """Yield every image-like file under ``root`` (sorted, recursive) with its provenance row.

    The caller fills in ``content_sha256`` (it knows which files are unchanged and need no hashing).

    An immediate subfolder named after a domain (``photography/``, ``painting/``, ``virtual/``)
    sets the domain of the images below it; otherwise the folder's configured domain applies.
    """
    root = root.resolve()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES):
        relative = path.relative_to(root)
        first = relative.parts[0].lower() if len(relative.parts) > 1 else None
        domain = first if first in DOMAINS else defaults.domain
        fields = {
            "locator": str(path),
            "title": path.stem,
            "creator": defaults.creator,
            "provider": defaults.provider,
            "source_url": f"{defaults.source_url_prefix.rstrip('/')}/{relative.as_posix()}"
            if defaults.source_url_prefix
            else path.as_uri(),
            "license": defaults.license,
            "redistribution": defaults.redistribution,
            "domain": domain,
        }
        yield path, row_from_fields(fields, source_type="folder", source_name=str(root), base_dir=root)
