"""Hostile image files for the pool's fetch, decode and filter stages, written with Pillow (or by hand) at test time.

Each :class:`ImageCase` is one file with the one outcome the pool must give it: ``kept`` (it reaches the pool), or
``stage:reason`` (its rejection row). :func:`write_image_cases` writes them all into a folder and returns them;
:func:`write_manifest` lists them in a JSONL manifest. Every picture is distinct random texture, so no two cases
are duplicates of each other and the kept ones all survive de-duplication. ``FOLDER_CASES`` are cases that only a
folder source can have (a directory whose name ends in ``.jpg``, a non-Latin file name).
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

KEPT = "kept"
SIDE = (96, 72)  # every kept case is at least this big, so a filter min_side of 32 keeps it


@dataclass(frozen=True)
class ImageCase:
    name: str
    filename: str
    expected: str  # KEPT or "stage:reason_code"
    frames: int | None = None  # for kept multi-frame files: the frame count file_decode must record


def _noise(seed: int, size: tuple[int, int] = SIDE, mode: str = "RGB") -> Image.Image:
    w, h = size
    rgb = Image.fromarray(np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8))
    return rgb if mode == "RGB" else rgb.convert(mode)


def _encoded(image: Image.Image, fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def _frames(seed: int, n: int, fmt: str) -> bytes:
    frames = [_noise(seed + i) for i in range(n)]
    if fmt == "GIF":
        frames = [f.convert("P", palette=Image.Palette.ADAPTIVE) for f in frames]
    return _encoded(frames[0], fmt, save_all=True, append_images=frames[1:])


def _grey16(seed: int) -> bytes:
    w, h = SIDE
    values = np.random.default_rng(seed).integers(0, 65536, (h, w), dtype=np.uint16)
    return _encoded(Image.fromarray(values), "PNG")  # uint16 -> mode I;16, a 16-bit grey PNG


def _palette_with_transparency(seed: int) -> bytes:
    image = _noise(seed).convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    return _encoded(image, "PNG", transparency=0)


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _bomb_png() -> bytes:
    """A 63-byte PNG whose header claims 100000 x 100000 grey pixels: a bomb known from the header alone."""
    header = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", zlib.compress(b"\x00" * 16))
            + _png_chunk(b"IEND", b""))


def _exif_jpeg(seed: int, exif: bytes) -> bytes:
    return _encoded(_noise(seed), "JPEG", quality=90, exif=exif)


def _exif_with_orientation(values: tuple[int, ...]) -> bytes:
    """A big-endian EXIF block whose only tag is Orientation (SHORT), with ``values`` (1 value is valid EXIF)."""
    count = len(values)
    inline = struct.pack(f">{count}H", *values).ljust(4, b"\x00") if count <= 2 else struct.pack(">I", 26)
    ifd = struct.pack(">H", 1) + struct.pack(">HHI", 0x0112, 3, count) + inline + struct.pack(">I", 0)
    extra = struct.pack(f">{count}H", *values) if count > 2 else b""
    return b"Exif\x00\x00" + b"MM\x00*" + struct.pack(">I", 8) + ifd + extra


def _truncated(data: bytes, keep: float) -> bytes:
    return data[: int(len(data) * keep)]


def _damaged_jpeg_header(seed: int) -> bytes:
    data = _encoded(_noise(seed), "JPEG", quality=90)
    return data[:3] + bytes(200) + data[203:]


_SVG = (b'<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="96" height="72">'
        b'<rect width="96" height="72" fill="teal"/></svg>\n')
_HTML = (b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\n"
         b"<body><h1>Not Found</h1><p>The requested image was not found on this server.</p></body></html>\n")
_PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
_HEIC = b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + bytes(64)

# (case, how to make its bytes); a None maker is a directory.
_CASES: tuple[tuple[ImageCase, Callable[[], bytes] | None], ...] = (
    (ImageCase("zero_bytes", "empty.jpg", "fetch:empty_body"), lambda: b""),
    (ImageCase("truncated_jpeg", "truncated.jpg", "decode:truncated"), lambda: _truncated(_encoded(_noise(1), "JPEG", quality=90), 0.5)),
    (ImageCase("truncated_png", "truncated.png", "decode:truncated"), lambda: _truncated(_encoded(_noise(2), "PNG"), 0.6)),
    (ImageCase("damaged_jpeg_header", "damaged.jpg", "decode:undecodable"), lambda: _damaged_jpeg_header(3)),
    (ImageCase("one_by_one", "pixel.png", "filter:too_small"), lambda: _encoded(_noise(4, (1, 1)), "PNG")),
    (ImageCase("one_by_5000", "sliver.png", "filter:too_small"), lambda: _encoded(_noise(5, (1, 5000)), "PNG")),
    (ImageCase("seven_by_seven", "seven.png", "filter:too_small"), lambda: _encoded(_noise(6, (7, 7)), "PNG")),
    (ImageCase("grey_16_bit", "grey16.png", KEPT), lambda: _grey16(7)),
    (ImageCase("cmyk_jpeg", "cmyk.jpg", KEPT), lambda: _encoded(_noise(8, mode="CMYK"), "JPEG", quality=90)),
    (ImageCase("palette_transparency", "palette.png", KEPT), lambda: _palette_with_transparency(9)),
    (ImageCase("animated_gif", "animated.gif", KEPT, frames=4), lambda: _frames(10, 4, "GIF")),
    (ImageCase("animated_webp", "animated.webp", KEPT, frames=3), lambda: _frames(20, 3, "WEBP")),
    (ImageCase("multipage_tiff", "pages.tiff", KEPT, frames=3), lambda: _frames(30, 3, "TIFF")),
    (ImageCase("bomb_from_header", "bomb.png", "decode:decompression_bomb"), _bomb_png),
    (ImageCase("svg", "vector.svg", "fetch:unsupported_format"), lambda: _SVG),
    (ImageCase("pdf_as_png", "document.png", "fetch:unsupported_format"), lambda: _PDF),
    (ImageCase("heic_without_plugin", "phone.heic", "fetch:unsupported_format"), lambda: _HEIC),
    (ImageCase("html_as_jpg", "page.jpg", "fetch:not_an_image"), lambda: _HTML),
    (ImageCase("garbage_exif", "garbage_exif.jpg", KEPT), lambda: _exif_jpeg(40, b"Exif\x00\x00" + b"\xde\xad\xbe\xef" * 12)),
    (ImageCase("orientation_9", "orientation9.jpg", KEPT), lambda: _exif_jpeg(41, _exif_with_orientation((9,)))),
    (ImageCase("orientation_list", "orientation_list.jpg", KEPT), lambda: _exif_jpeg(42, _exif_with_orientation((6, 3, 1)))),
    (ImageCase("ppm", "colour.ppm", KEPT), lambda: _encoded(_noise(50), "PPM")),
    (ImageCase("pgm", "grey.pgm", KEPT), lambda: _encoded(_noise(51, mode="L"), "PPM")),
    (ImageCase("pbm", "bits.pbm", KEPT), lambda: _encoded(_noise(52, mode="1"), "PPM")),
    (ImageCase("ico", "favicon.ico", KEPT), lambda: _encoded(_noise(53, (64, 64)), "ICO", sizes=[(64, 64)])),
    (ImageCase("webp", "still.webp", KEPT), lambda: _encoded(_noise(54), "WEBP", lossless=True)),
    (ImageCase("bmp", "bitmap.bmp", KEPT), lambda: _encoded(_noise(55), "BMP")),
    (ImageCase("tga_no_magic", "targa.tga", KEPT), lambda: _encoded(_noise(56), "TGA")),
    (ImageCase("directory_named_jpg", "dir.jpg", "fetch:missing_file"), None),
    (ImageCase("good_png", "good.png", KEPT), lambda: _encoded(_noise(60, (128, 96)), "PNG")),
    (ImageCase("good_jpeg", "good.jpg", KEPT), lambda: _encoded(_noise(61, (128, 96)), "JPEG", quality=92)),
)

CASES = tuple(case for case, _ in _CASES)

# Cases of a folder source: a directory named like an image is walked into (its image is kept), and a file name
# with spaces and non-Latin letters is an ordinary file.
FOLDER_CASES = (
    ImageCase("non_latin_name", "café 東京.png", KEPT),
    ImageCase("image_inside_dir_named_jpg", "album.jpg/inside.png", KEPT),
    ImageCase("good_folder_png", "plain.png", KEPT),
)
_FOLDER_SEEDS = {"non_latin_name": 70, "image_inside_dir_named_jpg": 71, "good_folder_png": 72}


def write_image_cases(folder: Path) -> list[ImageCase]:
    """Write every case of :data:`CASES` into ``folder``; returns them."""
    folder.mkdir(parents=True, exist_ok=True)
    for case, make in _CASES:
        path = folder / case.filename
        if make is None:
            path.mkdir()
        else:
            path.write_bytes(make())
    return list(CASES)


def write_folder_cases(folder: Path) -> list[ImageCase]:
    """Write :data:`FOLDER_CASES` into ``folder`` (a folder source's root); returns them."""
    for case in FOLDER_CASES:
        path = folder / case.filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_encoded(_noise(_FOLDER_SEEDS[case.name]), "PNG"))
    return list(FOLDER_CASES)


def write_manifest(path: Path, folder: Path, cases: list[ImageCase], license: str = "CC0-1.0") -> Path:
    """A JSONL manifest with one row per case (absolute locator, the case name as title)."""
    rows = [{"locator": str(folder / c.filename), "title": c.name, "license": license, "domain": "photography"} for c in cases]
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path
