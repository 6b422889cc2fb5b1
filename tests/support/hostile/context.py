"""Hostile case files and review sheets for the ContextCanvas stages, written byte by byte at test time.

Each :class:`~tests.support.hostile.records.RecordCase` is one input with the one outcome its stage must give it: ``kept``, or the reason code
of its rejection. A case is a record of a case file (``locator`` set: ``file#line=N`` or ``file#record=N``) or a
whole case file (``locator`` None: rejected as a file). Good records sit around every bad one.
:func:`write_case_cases` writes the case files and their images; :func:`write_review_sheets` a returned folder
with a good sheet and one whose row holds a latin-1 byte (a sheet read whole or not at all: rejected, naming it).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from assets.context_canvas.logic.case_records import CSV_REQUIRED
from assets.context_canvas.logic.retention import CRITERION_KEYS, SHEET_COLUMNS
from tests.support.hostile.records import KEPT, RecordCase



@dataclass
class CaseFiles:
    files: list[Path]
    cases: list[RecordCase]
    kept_ids: list[str]  # the case ids that must be stored


def _csv_line(cells: list[str]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow(cells)
    return buffer.getvalue().encode()


def _row(case_id: str, image: str, scenario: str | None = None) -> list[str]:
    return [case_id, image, f"Scenario of {case_id}" if scenario is None else scenario, "Is it suitable?", "A=Yes|B=No", "A",
            "Because it shows so.", "the image itself", "A picture", "", "test provider", "https://example.invalid/p",
            "CC0-1.0", "allowed"]


def _record(case_id) -> dict:
    return {"case_id": case_id, "images": ["images/red.png"], "scenario": "s", "question": "q?",
            "options": [{"option_id": "A", "text": "Yes"}, {"option_id": "B", "text": "No"}], "gold": "A",
            "rationale": "r", "source_basis": "b",
            "rights": [{"title": "t", "provider": "p", "url": "https://example.invalid/x", "license_note": "CC0-1.0",
                        "redistribution": "allowed"}]}


def write_case_cases(folder: Path) -> CaseFiles:
    folder = folder.resolve()
    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    for name, colour in (("red.png", (200, 40, 40)), ("blue.png", (40, 40, 200))):
        picture = Image.new("RGB", (48, 32), colour)
        picture.paste((250, 250, 250), (4, 4, 20, 20))
        picture.save(images / name)
    (images / "notes.png").write_text("<html>a web page saved as .png</html>", encoding="utf-8")
    cases: list[RecordCase] = []
    kept: list[str] = []

    table = folder / "cases.csv"  # a byte-order mark and CRLF line ends
    lines = [_csv_line(list(CSV_REQUIRED))]

    def add(data: bytes, name: str, expected: str, case_id: str | None = None) -> None:
        lines.append(data)
        cases.append(RecordCase(name, table, expected, f"{table}#line={len(lines)}"))
        kept.extend([case_id] if case_id else [])

    add(_csv_line(_row("c-01", "images/red.png")), "csv good 1", KEPT, "c-01")
    add(_csv_line(_row("c-02", "images/red.png", scenario="Caf\xe9")).decode().encode("latin-1"), "csv latin-1 row", "bad_encoding")
    add(_csv_line([*_row("c-03", "images/red.png"), "surplus"]), "csv ragged row", "ragged_row")
    add(_csv_line(_row("c-01", "images/blue.png")), "csv duplicate case id", "duplicate_case_id")
    add(_csv_line(_row("c-05", "images/missing.png")), "csv missing image file", "image_unreadable")
    add(_csv_line(_row("c-06", "images/notes.png")), "csv image that is not an image", "image_unreadable")
    add(_csv_line(_row("c-07", "images/red.png", scenario="")), "csv missing scenario", "missing_field")
    add(_csv_line(_row("c-08", "images/blue.png")), "csv good 2", KEPT, "c-08")
    table.write_bytes(codecs.BOM_UTF8 + b"\r\n".join(lines) + b"\r\n")

    listed = folder / "cases.json"
    records = [_record("j-01"), ["a", "list"], {**_record("j-03"), "case_id": 3}, _record("j-04")]
    listed.write_text(json.dumps({"about": "hostile", "cases": records}), encoding="utf-8")
    for index, (name, expected, case_id) in enumerate([("json good 1", KEPT, "j-01"), ("json list record", "not_an_object", None),
                                                       ("json numeric case id", "bad_field", None),
                                                       ("json good 2", KEPT, "j-04")]):
        cases.append(RecordCase(name, listed, expected, f"{listed}#record={index}"))
        kept.extend([case_id] if case_id else [])

    tail = folder / "cut.json"
    tail.write_text("[" + json.dumps(_record("t-01")) + ', {"case_id": "t-02", ', encoding="utf-8")
    cases += [RecordCase("json before the cut", tail, KEPT, f"{tail}#record=0"),
              RecordCase("json cut off mid-record", tail, "invalid_json", f"{tail}#record=1")]
    kept.append("t-01")

    whole = {"not_json.json": b"hello", "wrong_shape.json": b'{"items": []}', "empty.csv": b"",
             "garbage.csv": bytes(range(256)) * 2}
    for name, data in whole.items():
        (folder / name).write_bytes(data)
        cases.append(RecordCase(f"file {name}", folder / name, "malformed_case_file"))
    return CaseFiles([table, listed, tail, *(folder / name for name in whole)], cases, sorted(kept))


def write_review_sheets(folder: Path, good_case: str, latin_case: str) -> dict[str, str]:
    """``ben.csv`` (one good review: read) and ``ana.csv`` (its note holds a latin-1 byte: the sheet is rejected,
    naming row 2). Returns sheet name -> expected status."""
    folder.mkdir(parents=True, exist_ok=True)

    def sheet(case_id: str, reviewer: str, note: str) -> list[str]:
        row = dict.fromkeys(SHEET_COLUMNS, "")
        row.update({"case_id": case_id, "reviewer": reviewer, "note": note, **dict.fromkeys(CRITERION_KEYS, "pass")})
        return [row[c] for c in SHEET_COLUMNS]

    (folder / "ben.csv").write_bytes(_csv_line(list(SHEET_COLUMNS)) + b"\n" + _csv_line(sheet(good_case, "ben", "fine")) + b"\n")
    latin = _csv_line(sheet(latin_case, "ana", "Caf\xe9")).decode().encode("latin-1")
    (folder / "ana.csv").write_bytes(_csv_line(list(SHEET_COLUMNS)) + b"\n" + latin + b"\n")
    return {"ana.csv": "rejected", "ben.csv": "read"}
