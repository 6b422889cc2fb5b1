"""Hostile poem corpora and survey exports for the poem benchmark, written byte by byte at test time.

Each :class:`~tests.support.hostile.records.RecordCase` is one input with the one outcome its stage must give it: ``kept``, or the reason code of
its rejection. A case is a record of a file (``locator`` set: ``file#line=N`` or ``file#record=N``) or a whole
file (``locator`` None: the file is rejected as a whole, or, for ``kept``, read with no record in it). Good
records sit around every bad one, so a test also sees that the bad one costs nothing else.

:func:`write_corpus_cases` writes the corpus files (at least four good poems, the distractors need them) and a
folder of stand-in paintings; :func:`write_survey_cases` writes survey exports for the items those poems get.
"""

from __future__ import annotations

import codecs
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from assets.poetry.logic.rubric import DIMENSION_KEYS, dimension
from tests.support.hostile.records import KEPT, RecordCase

STAND_IN_MODELS = 1  # one stand-in generator keeps the item count (and the run) small
CSV_HEADER = "poem_id,title,author,text,translation,themes,form,source"
SURVEY_HEADER = ",".join(("annotator_id", "item_id", "phase1_choice", *DIMENSION_KEYS, "seconds", "annotator_group"))


@dataclass
class Corpus:
    files: list[Path]
    paintings: Path
    cases: list[RecordCase]
    good_poems: list[str] = field(default_factory=list)  # poem ids that must be stored


def _poem_row(poem_id: str, title: str = "Title", author: str = "Author", text: str = "Line one\nline two") -> str:
    return f'{poem_id},{title},{author},"{text}",,night; moon,quatrain,hostile'


def write_corpus_cases(folder: Path) -> Corpus:
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    cases: list[RecordCase] = []
    good: list[str] = []

    # A CSV with a byte-order mark and CRLF line ends; each poem's text spans two lines (a quoted cell).
    mixed = folder / "poems_mixed.csv"
    lines: list[bytes] = [CSV_HEADER.encode()]

    def add(data: bytes, name: str, expected: str, poem_id: str | None = None) -> None:
        line = 1 + sum(chunk.count(b"\n") + 1 for chunk in lines)
        lines.append(data)
        cases.append(RecordCase(name, mixed, expected, f"{mixed}#line={line}"))
        if expected == KEPT and poem_id:
            good.append(poem_id)

    add(_poem_row("h-001", "Moon").encode().replace(b"\n", b"\r\n"), "csv good 1", KEPT, "h-001")
    add(_poem_row("h-002", "Caf\xe9").encode("latin-1"), "csv latin-1 row", "bad_encoding")
    add(b"h-003,Too,Many,cells,,,,,extra", "csv ragged row", "ragged_row")
    add(_poem_row("h-001", "Again").encode(), "csv duplicate poem id", "duplicate_poem_id")
    add(b"h-005,,Author,Some text,,,,", "csv empty title", "empty_field")
    add(b"bad id!,T,A,X,,,,", "csv bad poem id", "bad_poem_id")
    add(_poem_row("h-006", "River").encode(), "csv good 2", KEPT, "h-006")
    mixed.write_bytes(codecs.BOM_UTF8 + b"\r\n".join(lines) + b"\r\n")

    # JSON with a byte-order mark: good records, odd ones, then a break that loses only the tail.
    streamed = folder / "poems.json"
    records = [
        {"poem_id": "h-101", "title": "Snow", "author": "A", "text": "White\nfields"},
        ["not", "an", "object"],
        {"poem_id": "h-102", "title": 7, "author": "A", "text": "x"},
        {"poem_id": "h-103", "title": "Dawn", "author": "B", "text": "Spring\nsleep"},
        {"poem_id": "h-104", "title": "Pines", "author": "C", "text": "Wind\nin pines"},
    ]
    text = "[" + ", ".join(json.dumps(r, ensure_ascii=False) for r in records) + ', {"poem_id": "h-105", "title": }]'
    streamed.write_bytes(codecs.BOM_UTF8 + text.encode())
    for index, (name, expected) in enumerate([("json good 1", KEPT), ("json list record", "not_an_object"),
                                              ("json wrong type", "wrong_type"), ("json good 2", KEPT),
                                              ("json good 3", KEPT), ("json broken tail", "invalid_json")]):
        cases.append(RecordCase(name, streamed, expected, f"{streamed}#record={index}"))
    good += ["h-101", "h-103", "h-104"]

    latin = folder / "poems_latin.json"
    latin.write_bytes(b'[{"poem_id": "h-201", "title": "Frost", "author": "D", "text": "Cold"}, {"poem_id": "h-202",'
                      b' "title": "Caf\xe9", "author": "D", "text": "x"}]')
    cases += [RecordCase("json good before a latin-1 byte", latin, KEPT, f"{latin}#record=0"),
              RecordCase("json latin-1 byte", latin, "bad_encoding", f"{latin}#record=1")]
    good.append("h-201")

    whole = {
        "blank.csv": (b"", "empty_file"),
        "header_only.csv": (CSV_HEADER.encode() + b"\r\n", KEPT),
        "garbage.csv": (bytes(random.Random(7).randrange(256) for _ in range(600)) + b"\x00", "bad_encoding"),
        "no_text_column.csv": (b"poem_id,title\nh-301,T\n", "bad_header"),
        "not_json.json": (b"hello, world", "not_a_list"),
        "empty.json": (b" \n", "not_a_list"),  # not byte-identical to blank.csv: a rejected file is named by its content
        "no_poems.json": (b'{"about": "x"}', "no_poems"),
        "broken_first.json": (b'[{"poem_id": ', "invalid_json"),
    }
    for name, (data, expected) in whole.items():
        path = folder / name
        path.write_bytes(data)
        cases.append(RecordCase(f"file {name}", path, expected))

    paintings = folder / "paintings"
    paintings.mkdir(exist_ok=True)
    for n, colour in enumerate([(200, 40, 40), (40, 160, 60), (30, 60, 200)]):
        image = Image.new("RGB", (64, 48), colour)
        image.paste((250, 250, 250), (8 + n * 10, 8, 30 + n * 10, 30))  # not blank: a stand-in must show something
        image.save(paintings / f"painting_{n}.png")
    files = [mixed, streamed, latin, *(folder / name for name in whole)]
    return Corpus(files, paintings, cases, good)


@dataclass
class Survey:
    files: list[Path]
    cases: list[RecordCase]  # row cases located ``file#row=N`` (the survey's spreadsheet row), or whole files
    kept: list[tuple[str, str]]  # (annotator, item) pairs that must be stored as responses


def _answers() -> str:
    return ",".join(dimension(key).options[0].letter for key in DIMENSION_KEYS)


def write_survey_cases(folder: Path, items: list[str]) -> Survey:
    """Survey exports over ``items`` (item ids of the corpus above). Row cases: their outcome is a response in
    ``poem_survey_response`` (kept) or a ``poem_survey_bad_row`` row with the reason."""
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    export = folder / "survey.csv"
    rows: list[bytes] = [SURVEY_HEADER.encode()]
    cases: list[RecordCase] = []
    kept: list[tuple[str, str]] = []

    def add(data: bytes, name: str, expected: str, pair: tuple[str, str] | None = None) -> None:
        rows.append(data)
        cases.append(RecordCase(name, export, expected, f"{export}#row={len(rows)}"))
        if expected == KEPT and pair:
            kept.append(pair)

    def row(annotator: str, item: str, *, seconds: str = "40", group: str = "crowd", encoding: str = "utf-8") -> bytes:
        return f"{annotator},{item},A,{_answers()},{seconds},{group}".encode(encoding)

    add(row("a01", items[0]), "survey good 1", KEPT, ("a01", items[0]))
    add(row("a\xe902", items[1], encoding="latin-1"), "survey latin-1 row", "bad_encoding")
    add(row("a03", items[1]) + b",surplus", "survey ragged row", "extra_cells")
    add(row("a01", items[0]), "survey duplicate (annotator, item)", "duplicate_response")
    add(row("a04", "no-such-item"), "survey unknown item", "unknown_item")
    add(row("a05", items[2], seconds="soon"), "survey bad seconds", "invalid_seconds")
    add(row("a06", items[2]), "survey good 2", KEPT, ("a06", items[2]))
    export.write_bytes(codecs.BOM_UTF8 + b"\r\n".join(rows) + b"\r\n")

    whole = {
        "survey_blank.csv": b"",
        "survey_header_only.csv": SURVEY_HEADER.encode() + b"\n",
        "survey_garbage.csv": bytes(random.Random(11).randrange(256) for _ in range(400)),
    }
    expected = {"survey_blank.csv": "malformed_survey", "survey_header_only.csv": KEPT,
                "survey_garbage.csv": "malformed_survey"}
    for name, data in whole.items():
        path = folder / name
        path.write_bytes(data)
        cases.append(RecordCase(f"file {name}", path, expected[name]))
    return Survey([export, *(folder / name for name in whole)], cases, kept)
