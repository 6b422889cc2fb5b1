"""Eight small invented graphic designs in Crello format, plus broken records, for the design pipeline.

Why: ingestion, rendering, perturbation and the question builders need designs that anyone can regenerate
byte-for-byte, with no Crello content in the repository. Each design here is built once as a canonical
``Design`` and written in both of Crello's encodings (``assets.designs.logic.crello_records.design_to_record``), so
the v4 and v5 files describe the same design and must ingest alike. All pictures are drawn with numpy and
Pillow from seeds derived from the design id (``digest_of``); nothing depends on the clock or the machine's
fonts except the rough previews' text, which uses Pillow's bundled default font.

Usage: ``python -m sample.design_fixture --out data/design_sample``, or ``build_design_fixture(out)``.

Layout written under ``out``::

    layers/<id>/<n>.png     the pre-rendered layer of element n (RGBA, box-sized): background, image,
                            svg-like shape and mask elements; text elements have none (renderers
                            re-typeset text from its attributes)
    previews/<id>.png       a rough stand-in for the dataset's own preview: the layers composited with
                            Pillow and the text drawn in Pillow's default font (so a real renderer differs
                            from it by a small mean pixel difference, not zero)
    v5/<id>.json            v5 encoding: pixels, degrees, class-label names (``TextElement`` ...),
                            ``rgba()`` colour lists, per-character text_color / text_line / font_bold /
                            font_italic; ``image`` entries are ``../layers/<id>/<n>.png``
    v4/<id>.json            v4 encoding of the same design: coordinates normalised to [0, 1] (float32
                            values), radians, camelCase type names, 0-255 colour triples, canvas sizes and
                            ``capitalize`` as string labels; designs with bold text (the headlines of
                            fx-bakery-opening and fx-travel-story) also carry per-element ``font_bold`` /
                            ``font_italic`` booleans, an extension real v4 lacks (see design_records.py)
                            that keeps v4 and v5 ingesting to the same Design
    broken/<case>.json      one deliberately broken v5 record per kind of problem (+ broken/layers/ with an
                            undecodable "PNG"); the reason each must be rejected with is in expected.json
    review/<annotator>.csv  three simulated annotators' returned review sheets for the sample run's first variant
                            of every base design (perturbation seed 0, two variants, all twelve indicators, as
                            config/sample.yaml builds): a flaw where an operation touched the indicator, and
                            annotator "cy" dissenting on about a quarter of the items (still a 2-1 majority).
                            The second variants get no votes, so their benchmark items show the unlabelled
                            hold-out; the sheets name the run's review items by id, so the perturbation is
                            replayed here with the pipeline's own functions
    designs.parquet         a Hugging-Face-style export (one row per design, written through DuckDB):
                            the first four v5 designs with type / font / text_align / group / format /
                            category as integer class labels whose names sit in the file's
                            ``huggingface`` key-value metadata, layers and preview embedded as
                            ``{bytes, path}`` structs; row 2 is a deliberately broken copy (its layer
                            bytes are truncated) so a reader must reject it and keep streaming
    expected.json           what the files above must ingest to (schema below)

``expected.json``::

    {"schema_version": 1,
     "designs": {id: {"canvas": [w, h], "types": [canonical type per element], "texts": [str],
                      "fonts": [str], "rotated": [element index], "translucent": [element index],
                      "bold": [element index]}},
     "broken": {file name: reason_code},
     "parquet": {"path": "designs.parquet", "rows": {row: id or reason_code}, "broken_rows": [row]}}
"""

from __future__ import annotations

import argparse
import copy
import csv
import io
import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from assets.designs.ingest import design_entity_id
from assets.designs.logic.design_model import Design, Element
from assets.designs.logic.crello_records import V4, V5, V5_TYPE_LABELS, design_json_names, design_to_record, read_design_file
from assets.designs.logic.indicators import INDICATORS, indicators_affected
from assets.designs.logic.perturb import perturb_design
from assets.designs.logic.review_votes import SHEET_COLUMNS, review_item
from assets.designs.perturbation import variant_seed
from assets.designs.settings import PerturbConfig
from warehouse.ids import digest_of

SCHEMA_VERSION = 1
PNG_COMPRESS_LEVEL = 6
SUPERSAMPLE = 4  # shapes are drawn this much larger and scaled down, for smooth edges
PARQUET_DESIGNS = 4
PARQUET_BROKEN_ROW = 2

Colour = tuple[int, int, int]


@dataclass(frozen=True)
class _Text:
    box: tuple[int, int, int, int]
    text: str
    font: str
    size: float
    colour: Colour
    align: str = "center"
    line_height: float = 1.0
    letter_spacing: float = 0.0
    capitalize: bool = False
    angle: float = 0.0
    opacity: float = 1.0
    bold: bool = False


@dataclass(frozen=True)
class _Layer:
    kind: str  # background | image | svg | mask
    box: tuple[int, int, int, int]
    style: str  # how the picture is drawn (see _draw_layer)
    colours: tuple[Colour, ...]
    angle: float = 0.0
    opacity: float = 1.0


@dataclass(frozen=True)
class _Spec:
    design_id: str
    canvas: tuple[int, int]
    layers: tuple[_Layer, ...]
    texts: tuple[_Text, ...]
    attributes: dict[str, Any] = field(default_factory=dict)


def _bg(canvas: tuple[int, int], *colours: Colour) -> _Layer:
    style = "gradient" if len(colours) > 1 else "solid"
    return _Layer("background", (0, 0, canvas[0], canvas[1]), style, colours)


SPECS: tuple[_Spec, ...] = (
    _Spec("fx-summer-sale", (400, 500), (
        _bg((400, 500), (255, 183, 94), (240, 98, 146)),
        _Layer("image", (40, 150, 320, 220), "sunset", ((255, 150, 80), (120, 60, 140))),
        _Layer("svg", (0, 410, 400, 90), "wave", ((255, 255, 255),), opacity=0.85),
    ), (
        _Text((20, 40, 360, 56), "Summer sale", "Montserrat", 44, (255, 255, 255), capitalize=True, letter_spacing=2),
        _Text((40, 102, 320, 28), "Up to 50% off everything", "Open Sans", 20, (70, 20, 70)),
        _Text((130, 440, 140, 28), "Shop now", "Roboto", 18, (150, 40, 90)),
    ), {"group": "SM", "format": "Instagram", "category": "sale", "title": "Summer Sale Poster",
        "keywords": ["summer", "sale", "sunset"]}),
    _Spec("fx-coffee-morning", (500, 500), (
        _bg((500, 500), (246, 239, 228)),
        _Layer("svg", (110, 110, 280, 280), "ring", ((196, 148, 98),), opacity=0.6),
        _Layer("image", (150, 150, 200, 220), "cup", ((250, 250, 250), (120, 72, 40))),
    ), (
        _Text((50, 36, 400, 62), "Morning Brew", "Playfair Display", 48, (74, 44, 26)),
        _Text((100, 395, 300, 28), "Fresh roasted every day", "Lato", 20, (110, 80, 60)),
        _Text((100, 440, 300, 24), "Order online, 7am to 2pm", "Roboto", 16, (150, 110, 80)),
    ), {"group": "SM", "format": "Instagram", "category": "food", "title": "Coffee Shop Morning Post",
        "keywords": ["coffee", "cafe"]}),
    _Spec("fx-tech-meetup", (600, 400), (
        _bg((600, 400), (18, 24, 60), (40, 64, 128)),
        _Layer("svg", (20, 20, 160, 100), "dots", ((90, 200, 255),), opacity=0.8),
        _Layer("image", (330, 110, 250, 270), "city", ((30, 40, 90), (255, 210, 90))),
    ), (
        _Text((30, 150, 300, 50), "Python Meetup", "Montserrat", 38, (255, 255, 255), align="left"),
        _Text((30, 210, 290, 28), "Talks, demos and pizza", "Open Sans", 20, (200, 210, 235), align="left"),
        _Text((30, 250, 290, 24), "Thursday 18:30, Hall B", "Roboto", 16, (90, 200, 255), align="left"),
        _Text((30, 330, 170, 28), "Register free", "Oswald", 18, (255, 210, 90), align="left", capitalize=True,
              letter_spacing=1.5),
    ), {"group": "SM", "format": "Facebook", "category": "technology", "title": "Tech Meetup Banner",
        "keywords": ["meetup", "python"]}),
    _Spec("fx-yoga-flyer", (420, 560), (
        _bg((420, 560), (232, 244, 236)),
        _Layer("svg", (70, 120, 280, 260), "blob", ((160, 210, 180),)),
        _Layer("mask", (110, 150, 200, 200), "portrait", ((250, 200, 150), (70, 130, 100))),
    ), (
        _Text((40, 40, 340, 50), "Sunrise Yoga", "Playfair Display", 40, (40, 90, 70)),
        _Text((60, 380, 300, 26), "Every Saturday in the park", "Lato", 18, (60, 110, 90)),
        _Text((60, 415, 300, 24), "All levels welcome", "Raleway", 16, (90, 130, 110), opacity=0.9),
        _Text((135, 480, 150, 28), "Book a mat", "Montserrat", 18, (40, 90, 70), capitalize=True),
    ), {"group": "MM", "format": "Flayer", "category": "sport", "title": "Sunrise Yoga Flyer",
        "keywords": ["yoga", "wellness"]}),
    _Spec("fx-bakery-opening", (450, 450), (
        _bg((450, 450), (255, 244, 214), (250, 214, 165)),
        _Layer("image", (90, 165, 270, 175), "bread", ((214, 150, 80), (150, 90, 40))),
        _Layer("svg", (355, 350, 70, 70), "star", ((230, 120, 60),), angle=12),
    ), (
        _Text((25, 60, 400, 54), "Grand Opening", "Playfair Display", 42, (120, 60, 30), bold=True),
        _Text((75, 360, 300, 26), "Fresh bread from 6am", "Open Sans", 18, (120, 80, 50)),
        _Text((75, 395, 300, 22), "12 Baker Street", "Roboto", 15, (150, 100, 70)),
    ), {"group": "MM", "format": "Poster", "category": "food", "title": "Bakery Grand Opening",
        "keywords": ["bakery", "opening"]}),
    _Spec("fx-travel-story", (400, 560), (
        _bg((400, 560), (255, 255, 255)),
        _Layer("image", (0, 0, 400, 380), "mountains", ((150, 200, 240), (60, 90, 110))),
        _Layer("svg", (20, 402, 120, 10), "bar", ((0, 120, 160),)),
        _Layer("svg", (290, 330, 90, 90), "badge", ((255, 200, 60),), angle=-15),
    ), (
        _Text((20, 420, 360, 44), "Explore the Alps", "Montserrat", 34, (20, 40, 60), align="left", bold=True),
        _Text((20, 470, 360, 24), "7 days of hiking & lakes", "Open Sans", 17, (70, 90, 110), align="left"),
        _Text((20, 512, 130, 24), "Swipe up", "Roboto", 15, (0, 120, 160), align="left", capitalize=True,
              letter_spacing=1.5),
    ), {"group": "SM", "format": "Instagram Story", "category": "travel", "title": "Alps Travel Story",
        "keywords": ["travel", "mountains"]}),
    _Spec("fx-book-club", (500, 400), (
        _bg((500, 400), (48, 38, 70)),
        _Layer("svg", (30, 320, 120, 50), "dots", ((240, 200, 120),), opacity=0.7),
        _Layer("image", (285, 60, 185, 280), "books", ((180, 60, 60), (60, 110, 160), (230, 190, 90))),
    ), (
        _Text((30, 80, 240, 56), "Book Club", "Playfair Display", 44, (245, 230, 200), align="left"),
        _Text((30, 150, 240, 26), "Monthly reads, warm tea", "Lato", 18, (220, 200, 170), align="left"),
        _Text((30, 190, 240, 42), "Join us on the first Friday\nof every month", "Open Sans", 14, (200, 185, 160),
              align="left", line_height=1.3),
    ), {"group": "EO", "format": "Facebook", "category": "education", "title": "Book Club Invitation",
        "keywords": ["books", "club"]}),
    _Spec("fx-charity-run", (480, 600), (
        _bg((480, 600), (228, 245, 255), (180, 220, 250)),
        _Layer("image", (40, 180, 400, 240), "hills", ((170, 215, 250), (70, 140, 70))),
        _Layer("svg", (345, 40, 110, 110), "badge", ((230, 70, 70),), angle=8),
    ), (
        _Text((30, 58, 310, 52), "Charity Run 5K", "Oswald", 40, (30, 60, 110), align="left"),
        _Text((30, 120, 300, 28), "Sunday, 9 May", "Montserrat", 20, (30, 60, 110), align="left"),
        _Text((40, 440, 400, 24), "Every step helps the children's hospital", "Open Sans", 16, (40, 70, 110)),
        _Text((155, 500, 170, 30), "Sign up today", "Roboto", 20, (230, 70, 70), capitalize=True, angle=-4),
    ), {"group": "HC", "format": "Poster", "category": "charity", "title": "Charity Run Poster",
        "keywords": ["run", "charity"]}),
)

# (file name, reason code, how the valid v5 record of SPECS[0] is broken)
_BROKEN: tuple[tuple[str, str, Callable[[dict[str, Any]], None]], ...] = (
    ("missing_width.json", "missing_field", lambda r: r.pop("width")),
    ("mismatched_lengths.json", "length_mismatch", lambda r: r["left"].pop()),
    ("unknown_type.json", "unknown_type", lambda r: r["type"].__setitem__(2, "VideoElement")),
    ("missing_layer.json", "layer_missing", lambda r: r["image"].__setitem__(1, "../layers/fx-summer-sale/99.png")),
    ("undecodable_layer.json", "layer_undecodable", lambda r: r["image"].__setitem__(1, "layers/garbage.png")),
    ("negative_size.json", "bad_size", lambda r: r["height"].__setitem__(1, -40.0)),
    ("outside_canvas.json", "box_outside_canvas", lambda r: r["left"].__setitem__(2, 450.0)),
    ("text_without_text.json", "text_missing", lambda r: r["text"].__setitem__(4, "  ")),
    ("zero_canvas.json", "bad_canvas", lambda r: r.__setitem__("canvas_width", 0)),
    ("nan_angle.json", "bad_number", lambda r: r["angle"].__setitem__(1, float("nan"))),
    ("bad_text_align.json", "bad_text_align", lambda r: r["text_align"].__setitem__(3, "middle")),
    ("bad_color.json", "bad_color", lambda r: r["color"].__setitem__(2, ["rgba(white)"])),
)
_TRUNCATED = ("truncated.json", "unreadable_record")


# --- pictures ---------------------------------------------------------------------------------------------


def _rng(*parts: Any) -> np.random.Generator:
    return np.random.default_rng(int(digest_of(["design-fixture", *parts])[:16], 16))


def _mix(a: Colour, b: Colour, t: np.ndarray) -> np.ndarray:
    """Per-pixel blend of two colours by t in [0, 1] (t shaped (h, w)); float32 (h, w, 3)."""
    a_ = np.array(a, dtype=np.float32)
    b_ = np.array(b, dtype=np.float32)
    return a_ + (b_ - a_) * t[..., None].astype(np.float32)


def _ramp(w: int, h: int, vertical: bool = True) -> np.ndarray:
    if vertical:
        return np.repeat(np.linspace(0.0, 1.0, h, dtype=np.float32)[:, None], w, axis=1)
    return np.repeat(np.linspace(0.0, 1.0, w, dtype=np.float32)[None, :], h, axis=0)


def _grain(rng: np.random.Generator, h: int, w: int, amount: int = 6) -> np.ndarray:
    return rng.integers(-amount, amount + 1, size=(h, w, 1)).astype(np.float32)


def _rgba(rgb: np.ndarray, alpha: np.ndarray | int = 255) -> Image.Image:
    h, w = rgb.shape[:2]
    out = np.empty((h, w, 4), dtype=np.uint8)
    out[..., :3] = np.clip(rgb + 0.5, 0, 255).astype(np.uint8)
    out[..., 3] = alpha if isinstance(alpha, int) else np.clip(alpha, 0, 255).astype(np.uint8)
    return Image.fromarray(out, "RGBA")


def _shape_canvas(w: int, h: int) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    big = Image.new("RGBA", (w * SUPERSAMPLE, h * SUPERSAMPLE), (0, 0, 0, 0))
    return big, ImageDraw.Draw(big)


def _shrink(big: Image.Image, w: int, h: int) -> Image.Image:
    return big.resize((w, h), Image.Resampling.LANCZOS)


def _ridge(rng: np.random.Generator, w: int, base: float, spread: float, smooth: int = 9) -> np.ndarray:
    """A smooth random skyline height per column (pixels from the top)."""
    steps = rng.integers(-100, 101, size=w + smooth).astype(np.float32) / 100.0
    walk = np.cumsum(steps)
    kernel = np.ones(smooth, dtype=np.float32) / smooth
    walk = np.convolve(walk, kernel, mode="valid")[:w]
    walk = walk - walk.min()
    walk = walk / max(float(walk.max()), 1e-6)
    return base + (walk - 0.5) * spread


def _landscape(rng: np.random.Generator, w: int, h: int, sky: tuple[Colour, Colour], ground: Colour,
               snow: bool = False, sun: Colour | None = None) -> np.ndarray:
    rgb = _mix(sky[0], sky[1], _ramp(w, h))
    ys = np.arange(h, dtype=np.float32)[:, None]
    xs = np.arange(w, dtype=np.float32)[None, :]
    if sun is not None:
        cx, cy, r = w * 0.62, h * 0.42, min(w, h) * 0.16
        d = np.sqrt((xs - cx) ** 2 + (ys - cy) ** 2)
        glow = np.clip(1.0 - (d - r) / (r * 1.5), 0.0, 1.0)
        glow = glow * glow
        rgb = rgb + (np.array(sun, dtype=np.float32) - rgb) * glow[..., None]
    for depth, (base, spread, shade) in enumerate(((0.55, 0.35, 0.75), (0.72, 0.22, 1.0))):
        ridge = _ridge(rng, w, base * h, spread * h)
        below = ys >= ridge[None, :]
        colour = np.array(ground, dtype=np.float32) * (0.8 + 0.2 * shade)
        if depth == 0 and snow:
            cap = (ys < ridge[None, :] + h * 0.05) & below
            rgb = np.where(cap[..., None], np.float32(245.0), rgb)
            below = below & ~cap
        rgb = np.where(below[..., None], colour, rgb)
    return rgb + _grain(rng, h, w)


def _rounded_alpha(w: int, h: int, radius: int) -> np.ndarray:
    big = Image.new("L", (w * SUPERSAMPLE, h * SUPERSAMPLE), 0)
    draw = ImageDraw.Draw(big)
    draw.rounded_rectangle((0, 0, w * SUPERSAMPLE - 1, h * SUPERSAMPLE - 1), radius=radius * SUPERSAMPLE, fill=255)
    return np.asarray(big.resize((w, h), Image.Resampling.LANCZOS), dtype=np.float32)


def _draw_layer(layer: _Layer, rng: np.random.Generator) -> Image.Image:
    """The RGBA picture of one non-text element, exactly box-sized."""
    w, h = layer.box[2], layer.box[3]
    c = layer.colours
    style = layer.style
    if style == "solid":
        return _rgba(np.broadcast_to(np.array(c[0], dtype=np.float32), (h, w, 3)).copy())
    if style == "gradient":
        return _rgba(_mix(c[0], c[1], _ramp(w, h)))
    if style in ("sunset", "mountains", "hills"):
        sky = {"sunset": ((255, 196, 120), c[0]), "mountains": (c[0], (225, 240, 250)),
               "hills": (c[0], (240, 248, 255))}[style]
        rgb = _landscape(rng, w, h, sky, c[1], snow=style == "mountains",
                         sun=(255, 236, 170) if style == "sunset" else None)
        alpha = 255 if style == "mountains" else _rounded_alpha(w, h, 18)
        return _rgba(rgb, alpha)
    if style == "city":
        rgb = _mix(c[0], (70, 80, 150), _ramp(w, h))
        img = _rgba(rgb + _grain(rng, h, w, 3))
        draw = ImageDraw.Draw(img)
        x = 0
        while x < w:
            bw = int(rng.integers(24, 48))
            top = int(rng.integers(int(h * 0.2), int(h * 0.7)))
            draw.rectangle((x, top, x + bw - 3, h), fill=(20, 26, 52, 255))
            for wy in range(top + 8, h - 8, 14):
                for wx in range(x + 5, x + bw - 8, 9):
                    if rng.integers(0, 3) == 0:
                        draw.rectangle((wx, wy, wx + 4, wy + 6), fill=(*c[1], 255))
            x += bw
        alpha = _rounded_alpha(w, h, 14)
        arr = np.asarray(img, dtype=np.float32)
        return _rgba(arr[..., :3], alpha)
    if style == "portrait":
        rgb = _mix((120, 170, 140), c[1], _ramp(w, h))
        ys = np.arange(h, dtype=np.float32)[:, None]
        xs = np.arange(w, dtype=np.float32)[None, :]
        head = ((xs - w * 0.5) / (w * 0.17)) ** 2 + ((ys - h * 0.4) / (h * 0.21)) ** 2 <= 1.0
        body = ((xs - w * 0.5) / (w * 0.36)) ** 2 + ((ys - h * 1.02) / (h * 0.42)) ** 2 <= 1.0
        rgb = np.where(head[..., None], np.array(c[0], dtype=np.float32), rgb)
        rgb = np.where(body[..., None], np.array((235, 235, 225), dtype=np.float32), rgb)
        rgb = rgb + _grain(rng, h, w, 4)
        big = Image.new("L", (w * SUPERSAMPLE, h * SUPERSAMPLE), 0)
        ImageDraw.Draw(big).ellipse((0, 0, w * SUPERSAMPLE - 1, h * SUPERSAMPLE - 1), fill=255)
        return _rgba(rgb, np.asarray(big.resize((w, h), Image.Resampling.LANCZOS), dtype=np.float32))
    big, draw = _shape_canvas(w, h)
    s = SUPERSAMPLE
    W, H = w * s, h * s
    fill = (*c[0], 255)
    if style == "cup":
        draw.ellipse((W * 0.05, H * 0.80, W * 0.95, H * 0.98), fill=(*c[0], 255))  # saucer
        draw.rounded_rectangle((W * 0.18, H * 0.32, W * 0.72, H * 0.86), radius=W * 0.12, fill=(*c[0], 255))
        draw.ellipse((W * 0.62, H * 0.45, W * 0.92, H * 0.70), outline=(*c[0], 255), width=int(W * 0.05))
        draw.ellipse((W * 0.21, H * 0.28, W * 0.69, H * 0.40), fill=(*c[1], 255))  # coffee
        for k in range(3):
            x0 = W * (0.3 + 0.12 * k)
            draw.arc((x0, H * 0.02, x0 + W * 0.1, H * 0.24), 100, 260, fill=(190, 170, 150, 200), width=int(W * 0.015))
    elif style == "bread":
        for k in range(3):
            x0 = W * (0.02 + 0.31 * k)
            y0 = H * (0.25 + 0.08 * (k % 2))
            colour = tuple(int(v * (0.9 + 0.05 * k)) for v in c[0])
            draw.ellipse((x0, y0, x0 + W * 0.34, y0 + H * 0.6), fill=(*colour, 255))
            for cut in range(3):
                cx = x0 + W * (0.09 + 0.08 * cut)
                draw.line((cx, y0 + H * 0.15, cx + W * 0.05, y0 + H * 0.42), fill=(*c[1], 255), width=int(W * 0.012))
    elif style == "books":
        y = H
        k = 0
        while y > H * 0.08:
            bh = int(H * float(rng.integers(9, 15)) / 100)
            inset = int(W * float(rng.integers(0, 12)) / 100)
            colour = c[k % len(c)]
            draw.rectangle((inset, y - bh, W - inset - 1, y - 1), fill=(*colour, 255))
            draw.line((inset + W * 0.1, y - bh / 2, W - inset - W * 0.1, y - bh / 2), fill=(245, 235, 210, 255),
                      width=max(1, s * 2))
            y -= bh + s
            k += 1
    elif style == "wave":
        points = [(0.0, H)]
        for i in range(41):
            x = W * i / 40
            points.append((x, H * (0.45 + 0.18 * math.sin(i / 40 * 2 * math.pi * 1.5))))
        points.append((W, H))
        draw.polygon(points, fill=fill)
    elif style == "ring":
        draw.ellipse((0, 0, W - 1, H - 1), outline=fill, width=int(W * 0.08))
    elif style == "dots":
        step = 20 * s
        for y in range(step // 2, H, step):
            for x in range(step // 2, W, step):
                draw.ellipse((x - 4 * s, y - 4 * s, x + 4 * s, y + 4 * s), fill=fill)
    elif style == "blob":
        radii = rng.integers(78, 100, size=18) / 100.0
        points = []
        for i, r in enumerate(radii):
            a = 2 * math.pi * i / len(radii)
            points.append((W / 2 + math.cos(a) * W / 2 * float(r), H / 2 + math.sin(a) * H / 2 * float(r)))
        draw.polygon(points, fill=fill)
    elif style == "star":
        points = []
        for i in range(10):
            r = 0.5 if i % 2 == 0 else 0.22
            a = -math.pi / 2 + math.pi * i / 5
            points.append((W / 2 + math.cos(a) * W * r, H / 2 + math.sin(a) * H * r))
        draw.polygon(points, fill=fill)
    elif style == "badge":
        draw.ellipse((0, 0, W - 1, H - 1), fill=fill)
        draw.ellipse((W * 0.12, H * 0.12, W * 0.88, H * 0.88), outline=(255, 255, 255, 255), width=int(W * 0.03))
    elif style == "bar":
        draw.rectangle((0, 0, W - 1, H - 1), fill=fill)
    else:
        raise ValueError(f"unknown layer style {style!r}")
    return _shrink(big, w, h)


def _main_colour(image: Image.Image) -> Colour:
    """Alpha-weighted mean colour, the way Crello's "extracted main colour" summarises a layer."""
    arr = np.asarray(image, dtype=np.float64)
    weight = arr[..., 3:4] / 255.0
    total = float(weight.sum())
    if total <= 0:
        return (0, 0, 0)
    mean = (arr[..., :3] * weight).sum(axis=(0, 1)) / total
    return (int(round(mean[0])), int(round(mean[1])), int(round(mean[2])))


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=PNG_COMPRESS_LEVEL, optimize=False)
    return buf.getvalue()


# --- designs ----------------------------------------------------------------------------------------------


def _design(spec: _Spec) -> tuple[Design, dict[int, Image.Image]]:
    elements: list[Element] = []
    pictures: dict[int, Image.Image] = {}
    for layer in spec.layers:
        index = len(elements)
        picture = _draw_layer(layer, _rng(spec.design_id, index))
        pictures[index] = picture
        elements.append(Element(
            element_id=f"e{index}", type=layer.kind, left=float(layer.box[0]), top=float(layer.box[1]),
            width=float(layer.box[2]), height=float(layer.box[3]), angle=float(layer.angle), opacity=layer.opacity,
            color=layer.colours[0] if layer.kind == "background" and layer.style == "solid" else _main_colour(picture),
            layer=f"layers/{spec.design_id}/{index}.png",
        ))
    for text in spec.texts:
        index = len(elements)
        elements.append(Element(
            element_id=f"e{index}", type="text", left=float(text.box[0]), top=float(text.box[1]),
            width=float(text.box[2]), height=float(text.box[3]), angle=float(text.angle), opacity=text.opacity,
            color=text.colour, text=text.text, font=text.font, font_size=float(text.size), text_align=text.align,
            line_height=text.line_height, letter_spacing=text.letter_spacing, capitalize=text.capitalize,
            bold=text.bold,
        ))
    design = Design(design_id=spec.design_id, canvas_width=spec.canvas[0], canvas_height=spec.canvas[1],
                    elements=tuple(elements), source_format=V5, attributes=dict(spec.attributes))
    return design, pictures


def _place(image: Image.Image, canvas: Image.Image, element: Element) -> None:
    if element.opacity < 1.0:
        alpha = np.asarray(image.getchannel("A"), dtype=np.float32) * element.opacity
        image = image.copy()
        image.putalpha(Image.fromarray(np.clip(alpha + 0.5, 0, 255).astype(np.uint8), "L"))
    if element.angle:
        image = image.rotate(-element.angle, resample=Image.Resampling.BICUBIC, expand=True)
    cx, cy = element.left + element.width / 2, element.top + element.height / 2
    layer = Image.new("RGBA", canvas.size, (0, 0, 0, 0))
    layer.paste(image, (int(round(cx - image.width / 2)), int(round(cy - image.height / 2))))
    canvas.alpha_composite(layer)


def _text_picture(element: Element) -> Image.Image:
    w, h = int(round(element.width)), int(round(element.height))
    image = Image.new("RGBA", (w, h), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=max(1, int(round(element.font_size or 12))))
    text = (element.text or "").upper() if element.capitalize else (element.text or "")
    colour = (*(element.color or (0, 0, 0)), 255)
    for n, line in enumerate(text.split("\n")):
        width = draw.textlength(line, font=font)
        x = {"center": (w - width) / 2, "right": w - width}.get(element.text_align, 0.0)
        draw.text((x, n * (element.font_size or 12) * element.line_height), line, font=font, fill=colour)
    return image


def _preview(design: Design, pictures: dict[int, Image.Image]) -> Image.Image:
    canvas = Image.new("RGBA", (design.canvas_width, design.canvas_height), (255, 255, 255, 255))
    for index, element in enumerate(design.elements):
        if element.type == "text":
            picture = _text_picture(element)
        else:
            picture = pictures[index].resize((int(round(element.width)), int(round(element.height))),
                                             Image.Resampling.BILINEAR)
        _place(picture, canvas, element)
    return canvas.convert("RGB")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def _expected_entry(design: Design) -> dict[str, Any]:
    return {
        "canvas": [design.canvas_width, design.canvas_height],
        "types": [e.type for e in design.elements],
        "texts": [e.text for e in design.elements if e.type == "text"],
        "fonts": [e.font for e in design.elements if e.type == "text"],
        "rotated": [i for i, e in enumerate(design.elements) if e.angle],
        "translucent": [i for i, e in enumerate(design.elements) if e.opacity < 1.0],
        "bold": [i for i, e in enumerate(design.elements) if e.bold],
    }


# --- parquet ----------------------------------------------------------------------------------------------


_PARQUET_COLUMNS = (
    ("id", "VARCHAR"), ("length", "BIGINT"), ("group", "BIGINT"), ("format", "BIGINT"),
    ("canvas_width", "BIGINT"), ("canvas_height", "BIGINT"), ("category", "BIGINT"), ("title", "VARCHAR"),
    ("keywords", "VARCHAR[]"), ("preview", "STRUCT(bytes BLOB, path VARCHAR)"),
    ("type", "BIGINT[]"), ("left", "FLOAT[]"), ("top", "FLOAT[]"), ("width", "FLOAT[]"), ("height", "FLOAT[]"),
    ("angle", "FLOAT[]"), ("opacity", "FLOAT[]"), ("color", "VARCHAR[][]"), ("text_color", "VARCHAR[][]"),
    ("text_line", "BIGINT[][]"), ("font_bold", "BOOLEAN[][]"), ("font_italic", "BOOLEAN[][]"),
    ("text", "VARCHAR[]"), ("font", "BIGINT[]"), ("font_size", "FLOAT[]"), ("text_align", "BIGINT[]"),
    ("capitalize", "BOOLEAN[]"), ("line_height", "FLOAT[]"), ("letter_spacing", "FLOAT[]"),
    ("image", "STRUCT(bytes BLOB, path VARCHAR)[]"),
)
_SEQUENCE_LABELS = ("type", "font", "text_align")
_SCALAR_LABELS = ("group", "format", "category")


def _label_tables(records: list[dict[str, Any]]) -> dict[str, list[str]]:
    tables: dict[str, list[str]] = {
        "type": list(V5_TYPE_LABELS.values()),
        "text_align": ["", "left", "center", "right", "justify"],
        "font": [""] + sorted({f for r in records for f in r["font"] if f}),
    }
    for name in _SCALAR_LABELS:
        tables[name] = sorted({r[name] for r in records})
    return tables


def _hf_metadata(tables: dict[str, list[str]]) -> str:
    features: dict[str, Any] = {}
    for name, names in tables.items():
        label = {"names": names, "_type": "ClassLabel"}
        features[name] = {"feature": label, "_type": "Sequence"} if name in _SEQUENCE_LABELS else label
    return json.dumps({"info": {"features": features}}, sort_keys=True)


def write_design_parquet(path: Path, records: list[dict[str, Any]], image_bytes: Callable[[Any], bytes | None]) -> None:
    """v5 records (decoded labels, paths) as one Hugging-Face-style Parquet file: integer class labels with
    their names in the ``huggingface`` key-value metadata, images embedded as ``{bytes, path}`` structs.
    ``image_bytes`` turns a record's image / preview entry into bytes (None for no image)."""
    import duckdb

    tables = _label_tables(records)
    index = {name: {label: i for i, label in enumerate(names)} for name, names in tables.items()}
    rows = []
    for r in records:
        row: dict[str, Any] = {name: r.get(name) for name, _ in _PARQUET_COLUMNS}
        for name in _SCALAR_LABELS:
            row[name] = index[name][r[name]]
        for name in _SEQUENCE_LABELS:
            row[name] = [index[name][v] for v in r[name]]
        row["preview"] = {"bytes": image_bytes(r["preview"]), "path": None} if r.get("preview") else None
        row["image"] = [{"bytes": data, "path": None} if (data := image_bytes(v)) is not None else None for v in r["image"]]
        rows.append([row[name] for name, _ in _PARQUET_COLUMNS])
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    try:
        con.execute("SET threads=1")
        columns = ", ".join(f'"{name}" {kind}' for name, kind in _PARQUET_COLUMNS)
        con.execute(f"CREATE TABLE designs ({columns})")
        placeholders = ", ".join("?" for _ in _PARQUET_COLUMNS)
        con.executemany(f"INSERT INTO designs VALUES ({placeholders})", rows)
        metadata = _hf_metadata(tables).replace("'", "''")
        target = str(path).replace("'", "''")
        con.execute(f"COPY (SELECT * FROM designs) TO '{target}' "
                    f"(FORMAT parquet, COMPRESSION zstd, KV_METADATA {{huggingface: '{metadata}'}})")
    finally:
        con.close()


# --- the fixture ------------------------------------------------------------------------------------------


def build_design_fixture(out: Path) -> dict[str, Any]:
    """Write the whole fixture under ``out`` (replacing an earlier one) and return expected.json's content."""
    out = Path(out)
    for name in ("layers", "previews", "v4", "v5", "broken", "review"):
        shutil.rmtree(out / name, ignore_errors=True)
    for name in ("designs.parquet", "expected.json"):
        (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)

    expected: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "designs": {}, "broken": {}, "parquet": {}}
    v5_records: list[dict[str, Any]] = []
    for spec in SPECS:
        design, pictures = _design(spec)
        for index, picture in pictures.items():
            _write(out / "layers" / spec.design_id / f"{index}.png", _png(picture))
        _write(out / "previews" / f"{spec.design_id}.png", _png(_preview(design, pictures)))
        preview = f"../previews/{spec.design_id}.png"

        def image_of(i: int, element: Element) -> str | None:
            return f"../{element.layer}" if element.layer else None

        v5 = design_to_record(design, V5, image_of=image_of, preview=preview)
        v4 = design_to_record(design, V4, image_of=image_of, preview=preview)
        _write(out / "v5" / f"{spec.design_id}.json", _json_bytes(v5))
        _write(out / "v4" / f"{spec.design_id}.json", _json_bytes(v4))
        v5_records.append(v5)
        expected["designs"][spec.design_id] = _expected_entry(design)

    base = v5_records[0]
    for name, reason, breaker in _BROKEN:
        record = copy.deepcopy(base)
        breaker(record)
        _write(out / "broken" / name, _json_bytes(record))
        expected["broken"][name] = reason
    _write(out / "broken" / "layers" / "garbage.png", b"\x89PNG\r\n\x1a\nthis is not a picture\n")
    text = _json_bytes(base)
    _write(out / "broken" / _TRUNCATED[0], text[: len(text) // 2])
    expected["broken"][_TRUNCATED[0]] = _TRUNCATED[1]

    def image_bytes(entry: Any) -> bytes | None:
        return (out / "v5" / entry).read_bytes() if entry else None

    parquet_records = [copy.deepcopy(r) for r in v5_records[:PARQUET_DESIGNS]]
    broken_row = copy.deepcopy(v5_records[PARQUET_DESIGNS])
    parquet_records.insert(PARQUET_BROKEN_ROW, broken_row)

    def parquet_image_bytes(entry: Any) -> bytes | None:
        data = image_bytes(entry)
        if data is not None and entry == broken_row["image"][1]:
            return data[:40]  # a truncated PNG: the row must be rejected as undecodable
        return data

    write_design_parquet(out / "designs.parquet", parquet_records, parquet_image_bytes)
    rows: dict[str, str] = {}
    for row, record in enumerate(parquet_records):
        rows[str(row)] = "layer_undecodable" if row == PARQUET_BROKEN_ROW else record["id"]
    expected["parquet"] = {"path": "designs.parquet", "rows": rows, "broken_rows": [PARQUET_BROKEN_ROW]}
    expected["review"] = write_review_votes(out / "v5", out / "review")
    _write(out / "expected.json", _json_bytes(expected))
    return expected


REVIEW_ANNOTATORS = ("ana", "ben", "cy")


def write_review_votes(folder: Path, out: Path, perturb: PerturbConfig = PerturbConfig(), voted_variants: int = 1,
                       review_round: str = "demo") -> dict[str, int]:
    """Returned review sheets of simulated annotators for the designs of ``folder`` perturbed as ``perturb`` says
    (the sample config's seed and variants), voting on every indicator of the first ``voted_variants`` variants.

    Why: the benchmark's labels come from people, so the sample needs people's votes to show a benchmark at all.
    The sheets name review items by id (the perturbed design's digest and the indicator), so the run's perturbation
    is replayed: the designs read as ingestion reads them, the layer pool as the perturbation stage draws it."""
    bases = [read.design for read in (read_design_file(folder / name) for name in design_json_names(folder)) if read.design]
    pool = sorted({e.layer for d in bases for e in d.elements if e.type == "image" and e.layer})[:perturb.replacement_pool]
    rows: dict[str, list[dict[str, str]]] = {name: [] for name in REVIEW_ANNOTATORS}
    for base in bases:
        base = Design.from_dict(json.loads(base.to_json()))
        for variant in range(min(voted_variants, perturb.variants_per_design)):
            result = perturb_design(base, variant_seed(perturb.seed, variant), perturb.settings(), pool)
            design_id = design_entity_id(result.design.to_json())
            touched = set(indicators_affected(result.operations))
            for indicator in INDICATORS:
                item = review_item(design_id, "-", indicator.id, indicator.definition)
                dissent = int(digest_of(["sample-dissent", item.item_id])[:2], 16) < 64
                for name in REVIEW_ANNOTATORS:
                    flawed = (indicator.id in touched) != (name == "cy" and dissent)
                    rows[name].append({"review_round": review_round, "item_id": item.item_id, "design_id": design_id,
                                       "image": "", "indicator": indicator.id, "definition": "", "annotator": name,
                                       "vote": "flawed" if flawed else "good", "comment": ""})
    out.mkdir(parents=True, exist_ok=True)
    for name, sheet in rows.items():
        with (out / f"{name}.csv").open("w", encoding="utf-8", newline="") as stream:
            writer = csv.DictWriter(stream, fieldnames=list(SHEET_COLUMNS), lineterminator="\n")
            writer.writeheader()
            writer.writerows(sheet)
    return {"sheets": len(rows), "items": len(rows[REVIEW_ANNOTATORS[0]])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write the fixture into")
    args = parser.parse_args(argv)
    expected = build_design_fixture(args.out)
    print(f"wrote {len(expected['designs'])} designs (v4 + v5), {len(expected['broken'])} broken records "
          f"and {len(expected['parquet']['rows'])} Parquet rows to {args.out}")


if __name__ == "__main__":
    main()
