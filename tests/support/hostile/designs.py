"""Hostile Crello design files for ``design_records`` and ``design_renders``, written at test time.

Each :class:`DesignCase` is one ``<name>.json`` in one folder with the one outcome the design stages must give
it: ``rendered`` (read and drawn), or the reason code of its rejection and the stage that rejects it
(``design_records`` for what the parser refuses, ``design_render`` for a record that parses but cannot be drawn
faithfully). Two good designs sit beside the broken ones. The records are v5 (pixels, degrees) in the layout of
``sample/design_fixture.py``: parallel per-element lists, layers as PNG files under ``layers/`` next to the
folder, referenced by relative path.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

RENDERED = "rendered"
RECORDS, RENDER = "design_records", "design_render"


@dataclass(frozen=True)
class DesignCase:
    name: str        # the file is <name>.json
    expected: str    # RENDERED or a reason code
    stage: str = RECORDS

    @property
    def file(self) -> str:
        return f"{self.name}.json"


def _png(size: tuple[int, int], colour: tuple[int, int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGBA", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def good_record(design_id: str, colour: tuple[int, int, int] = (40, 90, 160), text: str = "Open Day") -> dict[str, Any]:
    """A small valid v5 record (120 x 90): a background layer, a picture layer and a headline."""
    return {
        "id": design_id, "canvas_width": 120, "canvas_height": 90, "length": 3,
        "type": ["ColoredBackground", "ImageElement", "TextElement"],
        "left": [0.0, 10.0, 8.0], "top": [0.0, 10.0, 60.0], "width": [120.0, 50.0, 104.0], "height": [90.0, 40.0, 24.0],
        "angle": [0.0, 0.0, 0.0], "opacity": [1.0, 1.0, 1.0],
        "color": [[f"rgba({colour[0]}, {colour[1]}, {colour[2]}, 1)"], [], []],
        "text_color": [[], [], ["rgba(250, 250, 250, 1)"] * len(text)],
        "text": ["", "", text], "font": ["", "", "DejaVu Sans"], "font_size": [0.0, 0.0, 16.0],
        "text_align": ["", "", "center"], "line_height": [1.0, 1.0, 1.2], "letter_spacing": [0.0, 0.0, 0.0],
        "capitalize": [False, False, False],
        "image": ["../layers/background.png", "../layers/picture.png", None],
    }


def _edited(change: Callable[[dict[str, Any]], None]) -> Callable[[str], bytes]:
    def make(name: str) -> bytes:
        record = good_record(name)
        change(record)
        return json.dumps(record).encode()
    return make


def _set(field: str, index: int, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda record: record[field].__setitem__(index, value)


def _all(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda record: record.__setitem__(field, [value] * len(record["type"]))


def _without(*fields: str) -> Callable[[dict[str, Any]], None]:
    return lambda record: [record.pop(f) for f in fields]


def _empty_lists(record: dict[str, Any]) -> None:
    for name, value in list(record.items()):
        if isinstance(value, list):
            record[name] = []
    record["length"] = 0


# name → (expected, stage, the file's bytes from its name); None bytes: a folder named <name>.json
_CASES: dict[str, tuple[str, str, Callable[[str], bytes] | None]] = {
    "good-poster": (RENDERED, RECORDS, _edited(lambda r: None)),
    "good-flyer": (RENDERED, RECORDS, _edited(lambda r: (r.__setitem__("color", [["#c03020"], [], []]), r["text"].__setitem__(2, "Sale")))),
    "bom": (RENDERED, RECORDS, lambda name: b"\xef\xbb\xbf" + json.dumps(good_record(name)).encode()),
    "transparent": (RENDERED, RECORDS, _edited(_all("opacity", 0.0))),
    "rotated-720": (RENDERED, RECORDS, _edited(_set("angle", 1, 720.0))),
    "sub-pixel-element": (RENDERED, RECORDS, _edited(lambda r: (r["width"].__setitem__(1, 0.4), r["height"].__setitem__(1, 0.3)))),
    "empty-file": ("unreadable_record", RECORDS, lambda name: b""),
    "latin-1": ("bad_encoding", RECORDS, lambda name: json.dumps(good_record(name, text="Caf\u00e9"), ensure_ascii=False).encode("latin-1")),
    "not-json": ("unreadable_record", RECORDS, lambda name: b"{\"id\": \"x\", canvas_width: 12"),
    "truncated": ("unreadable_record", RECORDS, lambda name: json.dumps(good_record(name)).encode()[:200]),
    "deeply-nested": ("unreadable_record", RECORDS, lambda name: b"[" * 100_000 + b"]" * 100_000),
    "a-list": ("unreadable_record", RECORDS, lambda name: json.dumps([good_record(name)]).encode()),
    "a-number": ("unreadable_record", RECORDS, lambda name: b"42"),
    "binary-garbage": ("bad_encoding", RECORDS, lambda name: bytes(range(256)) * 4),
    "no-elements": ("missing_field", RECORDS, _edited(_without("type", "left", "top", "width", "height"))),
    "zero-elements": ("no_elements", RECORDS, _edited(_empty_lists)),
    "left-not-a-list": ("not_a_list", RECORDS, _edited(lambda r: r.__setitem__("left", 5))),
    "left-a-word": ("bad_number", RECORDS, _edited(_set("left", 1, "ten"))),
    "type-a-number": ("unknown_label", RECORDS, _edited(_set("type", 1, 3))),
    "nan-coordinate": ("bad_number", RECORDS, lambda name: json.dumps(good_record(name)).replace("[0.0, 10.0, 8.0]", "[0.0, NaN, 8.0]").encode()),
    "huge-coordinate": ("box_outside_canvas", RECORDS, _edited(_set("top", 1, 1e308))),
    "huge-width": ("bad_size", RECORDS, _edited(lambda r: (r["left"].__setitem__(1, -1e300), r["width"].__setitem__(1, 1e301)))),
    "negative-size": ("bad_size", RECORDS, _edited(_set("height", 1, -10.0))),
    "zero-size": ("bad_size", RECORDS, _edited(_set("width", 1, 0.0))),
    "huge-canvas": ("bad_canvas", RECORDS, _edited(lambda r: r.__setitem__("canvas_width", 10**9))),
    "unknown-type": ("unknown_type", RECORDS, _edited(_set("type", 1, "VideoElement"))),
    "missing-blob": ("layer_missing", RECORDS, _edited(_set("image", 1, "blob:" + "0" * 64))),
    "missing-layer-file": ("layer_missing", RECORDS, _edited(_set("image", 1, "../layers/nowhere.png"))),
    "layer-not-an-image": ("layer_undecodable", RECORDS, _edited(_set("image", 1, "../layers/garbage.png"))),
    "layer-outside-root": ("layer_outside_root", RECORDS, _edited(_set("image", 1, "../../../etc/hostname"))),
    "bad-colour": ("bad_color", RECORDS, _edited(_set("color", 0, ["rgba(300, 0, 0, 1)"]))),
    "opacity-above-one": ("bad_opacity", RECORDS, _edited(_set("opacity", 1, 7.0))),
    "text-without-text": ("text_missing", RECORDS, _edited(_set("text", 2, "   "))),
    "a-folder": ("unreadable_record", RECORDS, None),
    "huge-font": ("font_too_large", RENDER, _edited(_set("font_size", 2, 100_000.0))),
}


def write_design_cases(root: Path) -> tuple[Path, list[DesignCase]]:
    """Write every case into ``root/designs`` (layers in ``root/layers``); returns the folder and the cases."""
    folder, layers = root / "designs", root / "layers"
    folder.mkdir(parents=True, exist_ok=True)
    layers.mkdir(parents=True, exist_ok=True)
    (layers / "background.png").write_bytes(_png((12, 9), (230, 220, 200, 255)))
    (layers / "picture.png").write_bytes(_png((5, 4), (20, 120, 60, 255)))
    (layers / "garbage.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"not a picture at all" * 8)
    cases = []
    for name, (expected, stage, make) in _CASES.items():
        case = DesignCase(name, expected, stage)
        if make is None:
            (folder / case.file).mkdir()
        else:
            (folder / case.file).write_bytes(make(name))
        cases.append(case)
    return folder, cases
