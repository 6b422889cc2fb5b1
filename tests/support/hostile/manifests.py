"""Hostile manifests and folder entries for ``source_records``, written byte by byte at test time.

Each :class:`SourceCase` is one input with the one outcome collection must give it: ``kept`` (a valid
source record), or the reason code of its rejection. A case is a manifest line (``line`` set), a whole manifest
(``line`` None, ``entry`` None: the manifest is rejected as a file), or a folder entry (``entry`` set). Good rows
sit around every bad one, so a test also sees that the bad line costs nothing else. :func:`write_manifest_cases`
writes the manifests, :func:`write_folder_cases` a folder; both return their cases.
"""

from __future__ import annotations

import codecs
import json
import os
from dataclasses import dataclass
from pathlib import Path

KEPT = "kept"
HEADER = "locator,title,creator,provider,source_url,license,redistribution,domain"


@dataclass(frozen=True)
class SourceCase:
    name: str
    source: Path  # the manifest file, or the folder
    expected: str  # KEPT or a reason code
    line: int | None = None  # the manifest line the case is; None for a whole-file case
    locator: str | None = None  # a manifest row's record's locator (the resolved path or URL, or file#line=N)
    entry: Path | None = None  # a folder case's entry (its record's source_url is the entry's file URI)


class _Manifest:
    """Builds one manifest line by line and records the case of every line it writes."""

    def __init__(self, path: Path, header: bytes | None = HEADER.encode(), newline: bytes = b"\n") -> None:
        self.path, self.newline = path.resolve(), newline
        self.lines: list[bytes] = [] if header is None else [header]
        self.cases: list[SourceCase] = []

    def raw(self, data: bytes, name: str | None = None, expected: str = KEPT, locator: str | None = None) -> None:
        self.lines.append(data)
        if name:
            line = len(self.lines)
            where = locator if locator is not None else f"{self.path}#line={line}"
            self.cases.append(SourceCase(name, self.path, expected, line, where))

    def row(self, name: str, expected: str = KEPT, *, title: str = "", license: str = "CC0-1.0", domain: str = "virtual",
            redistribution: str = "allowed", locator: str | None = None, encoding: str = "utf-8") -> None:
        relative = f"img/{name}.png" if locator is None else locator
        text = f"{relative},{title},,hostile,,{license},{redistribution},{domain}"
        resolved = str((self.path.parent / relative).resolve()) if relative and encoding == "utf-8" else None
        self.raw(text.encode(encoding), name, expected, resolved)

    def blank(self) -> None:
        self.lines.append(b"")

    def write(self, prefix: bytes = b"") -> list[SourceCase]:
        self.path.write_bytes(prefix + self.newline.join(self.lines) + self.newline)
        return self.cases


def _whole(path: Path, data: bytes, name: str, expected: str) -> SourceCase:
    path.write_bytes(data)
    return SourceCase(name, path.resolve(), expected)


def write_manifest_cases(folder: Path) -> list[SourceCase]:
    """Every manifest case: odd encodings and line ends, bad rows among good ones, header variants, files that
    cannot be manifests at all. Returns the cases; the manifests are the ``*.csv`` / ``*.jsonl`` files written."""
    folder.mkdir(parents=True, exist_ok=True)
    cases: list[SourceCase] = []

    latin = _Manifest(folder / "latin1.csv")
    latin.row("latin_before")
    latin.row("latin_row", "bad_encoding", title="Étude en gris", encoding="latin-1")
    latin.row("latin_after", title="Étude saved right")  # the same é in UTF-8 is fine
    cases += latin.write()

    bom = _Manifest(folder / "bom_crlf.csv", newline=b"\r\n")
    bom.blank()
    bom.row("bom_first")
    bom.blank()
    bom.row("bom_second")
    cases += bom.write(prefix=codecs.BOM_UTF8)

    ragged = _Manifest(folder / "ragged.csv")
    ragged.row("ragged_ok")
    ragged.raw(b"img/ragged_long.png,T,,hostile,,CC0-1.0,allowed,virtual,surplus", "ragged_long", "ragged_row")
    ragged.raw(b"img/ragged_short.png,T", "ragged_short", "ragged_row")
    ragged.raw(b'"img/ragged_quoted.png,T,,hostile,,CC0-1.0,allowed,virtual', "ragged_unclosed_quote", "ragged_row")
    cases += ragged.write()

    dup = _Manifest(folder / "duplicates.csv", header=b"id,locator,license,domain")
    dup.raw(b"a1,img/dup_first.png,CC0-1.0,virtual", "dup_first", KEPT, str((folder / "img/dup_first.png").resolve()))
    dup.raw(b"a2,img/dup_other.png,CC0-1.0,virtual", "dup_other", KEPT, str((folder / "img/dup_other.png").resolve()))
    dup.raw(b" a1 ,img/dup_again.png,CC0-1.0,virtual", "dup_same_id", "duplicate_id", str((folder / "img/dup_again.png").resolve()))
    dup.raw(b",img/dup_row.png,CC0-1.0,painting", "dup_row_first", KEPT, str((folder / "img/dup_row.png").resolve()))
    dup.raw(b",img/dup_row.png,CC0-1.0,painting", "dup_row_again", "duplicate_row", str((folder / "img/dup_row.png").resolve()))
    cases += dup.write()

    missing = _Manifest(folder / "missing.csv")
    missing.row("missing_ok")
    missing.row("missing_locator", "missing_field", locator="")
    missing.row("missing_domain", "missing_field", domain="")
    missing.row("missing_license", "missing_field", license="")
    missing.row("invalid_domain", "invalid_domain", domain="sculpture")
    missing.row("invalid_redistribution", "invalid_redistribution", redistribution="maybe")
    cases += missing.write()

    for name, header in {"header_url": "URL", "header_path": " path ", "header_mixed_case": "LoCaToR"}.items():
        variant = _Manifest(folder / f"{name}.csv", header=f"{header} , Title,LICENSE ,Domain".encode())
        variant.raw(f"img/{name}.png,T,CC0-1.0,painting".encode(), name, KEPT, str((folder / f"img/{name}.png").resolve()))
        cases += variant.write()

    jsonl = _Manifest(folder / "rows.jsonl", header=None)
    good = {"license": "CC0-1.0", "domain": "photography"}
    jsonl.raw(json.dumps({"locator": "img/jsonl_ok.png", **good}).encode(), "jsonl_ok", KEPT,
              str((folder / "img/jsonl_ok.png").resolve()))
    jsonl.raw(b'{"locator": "img/jsonl_broken.png", "license": ', "jsonl_invalid", "invalid_json")
    jsonl.blank()
    jsonl.raw(b'["img/jsonl_list.png"]', "jsonl_not_object", "malformed_row")
    jsonl.raw('{"locator": "img/caf\u00e9.png", "license": "CC0-1.0"}'.encode("latin-1"), "jsonl_latin1", "bad_encoding")
    jsonl.raw(json.dumps({"Path ": "img/jsonl_path.png", **good}).encode(), "jsonl_path_key", KEPT,
              str((folder / "img/jsonl_path.png").resolve()))
    jsonl.raw(json.dumps({"locator": "img/nul\u0000.png", **good}).encode(), "jsonl_nul_locator", "invalid_locator",
              "img/nul\u0000.png")
    jsonl.raw(json.dumps({"url": "https://images.invalid/jsonl_url.jpg", **good}).encode(), "jsonl_url", KEPT,
              "https://images.invalid/jsonl_url.jpg")
    cases += jsonl.write()

    cases += [
        _whole(folder / "empty.csv", b"", "empty_file", "empty_file"),
        _whole(folder / "header_only.csv", (HEADER + "\n").encode(), "header_only", "empty_file"),
        _whole(folder / "no_locator_column.csv", b"title,license,domain\nT,CC0-1.0,virtual\n", "no_locator_column", "bad_header"),
        _whole(folder / "garbage.csv", bytes(range(256)) * 8, "binary_garbage", "bad_encoding"),
        _whole(folder / "blank_lines.jsonl", b"\n\n  \n", "jsonl_only_blank_lines", "empty_file"),
    ]
    return cases


def write_folder_cases(folder: Path) -> list[SourceCase]:
    """Folder entries that must each be one record: a directory named like an image (walked, not taken for one),
    a name with spaces and non-Latin letters, a link to nowhere, a link to itself, a FIFO."""
    root = folder.resolve()
    (root / "painting" / "album.jpg").mkdir(parents=True, exist_ok=True)
    (root / "painting" / "album.jpg" / "inside.png").write_bytes(b"a file inside a directory named album.jpg")
    (root / "Ölgemälde 東京 no 1.png").write_bytes(b"spaces and non-Latin letters")
    (root / "dangling.png").symlink_to(root / "nowhere.png")
    (root / "self_loop.jpg").symlink_to(root / "self_loop.jpg")
    os.mkfifo(root / "pipe.jpg")

    def case(name: str, relative: str, expected: str) -> SourceCase:
        return SourceCase(name, root, expected, entry=root / relative)

    return [
        case("inside_directory_named_jpg", "painting/album.jpg/inside.png", KEPT),
        case("spaces_and_non_latin", "Ölgemälde 東京 no 1.png", KEPT),
        case("dangling_symlink", "dangling.png", "unreadable_file"),
        case("symlink_loop", "self_loop.jpg", "unreadable_file"),
        case("fifo", "pipe.jpg", "unreadable_file"),
    ]
