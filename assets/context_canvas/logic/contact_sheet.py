"""A labelled side-by-side contact sheet of a case's images, for models that take one image per request.

ContextCanvas (seed paper 000, S2.4.1) gives its one paired-image case to single-image checkpoints as a
labelled horizontal contact sheet. The labels ("Image 1", "Image 2", ...) let the question refer to each
picture. Layout: every image scaled to a common height (aspect kept), left to right with ``gap`` pixels of
white between them, each under a white band with its label centred in black; no outer margin.

The bytes are deterministic: fixed resampling, no PNG metadata, DejaVu Sans through Pillow's BASIC layout
engine (no libraqm shaping, which differs between machines); without DejaVu, Pillow's built-in font.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont, ImageOps

DEJAVU_NAME = "DejaVuSans.ttf"
DEJAVU_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu", "/usr/share/fonts/TTF")
BACKGROUND, INK = (255, 255, 255), (0, 0, 0)


def default_labels(n: int) -> list[str]:
    return [f"Image {i}" for i in range(1, n + 1)]


def label_font_size(height: int) -> int:
    """Label size in px: 6% of the image height, at least 12 px so small sheets stay legible."""
    return max(12, round(height * 0.06))


def band_height(height: int) -> int:
    """Height of the label band above the images: the font size plus breathing room."""
    return round(label_font_size(height) * 1.8)


@lru_cache(maxsize=16)
def label_font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """DejaVu Sans at ``size`` (looked up by name on Pillow's font path, then in the usual folders), else
    Pillow's default font."""
    candidates = [DEJAVU_NAME, *(str(Path(d) / DEJAVU_NAME) for d in DEJAVU_DIRS)]
    for candidate in candidates:
        try:
            return ImageFont.truetype(candidate, size, layout_engine=ImageFont.Layout.BASIC)
        except OSError:
            continue
    try:
        return ImageFont.load_default(size)
    except TypeError:  # Pillow < 10.1 has no sized default font
        return ImageFont.load_default()


def _decode(data: bytes, index: int) -> Image.Image:
    try:
        with Image.open(io.BytesIO(data)) as opened:
            image = ImageOps.exif_transpose(opened)
            image.load()
    except Exception as exc:  # noqa: BLE001 - any decoder failure means the same thing here
        raise ValueError(f"contact sheet: image {index + 1} does not decode ({type(exc).__name__}: {exc})") from None
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        base = Image.new("RGB", image.size, BACKGROUND)
        base.paste(image.convert("RGBA"), mask=image.convert("RGBA").getchannel("A"))
        return base
    return image.convert("RGB")


def _fit(text: str, font: ImageFont.FreeTypeFont | ImageFont.ImageFont, width: int, draw: ImageDraw.ImageDraw) -> str:
    """The label, cut with an ellipsis when wider than its image."""
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "…", font=font) > width:
        text = text[:-1]
    return text + "…" if text else ""


def scaled_widths(sizes: Sequence[tuple[int, int]], height: int) -> list[int]:
    """Widths the images get at a common ``height`` (aspect kept, at least 1 px)."""
    return [max(1, round(w * height / h)) for w, h in sizes]


def contact_sheet(images: Sequence[bytes], labels: Sequence[str] | None = None, height: int = 512, gap: int = 16) -> bytes:
    """PNG bytes of the images side by side at ``height`` px, each labelled in a band above it.

    ``labels`` default to "Image 1", "Image 2", ...; there must be one per image. The sheet is
    ``sum(scaled widths) + gap * (n - 1)`` wide and ``band_height(height) + height`` tall.
    """
    if not images:
        raise ValueError("contact sheet needs at least one image")
    labels = default_labels(len(images)) if labels is None else list(labels)
    if len(labels) != len(images):
        raise ValueError(f"contact sheet: {len(images)} image(s) but {len(labels)} label(s)")
    if height < 1 or gap < 0:
        raise ValueError(f"contact sheet: height must be >= 1 and gap >= 0 (got {height}, {gap})")
    decoded = [_decode(data, i) for i, data in enumerate(images)]
    widths = scaled_widths([image.size for image in decoded], height)
    band = band_height(height)
    sheet = Image.new("RGB", (sum(widths) + gap * (len(decoded) - 1), band + height), BACKGROUND)
    draw = ImageDraw.Draw(sheet)
    font = label_font(label_font_size(height))
    x = 0
    for image, width, label in zip(decoded, widths, labels):
        sheet.paste(image.resize((width, height), Image.Resampling.LANCZOS), (x, band))
        text = _fit(label, font, width, draw)
        if text:  # centred by its ink box (works for the bitmap fallback too, which has no anchors)
            left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
            draw.text((x + (width - (right - left)) // 2 - left, (band - (bottom - top)) // 2 - top), text, fill=INK, font=font)
        x += width + gap
    out = io.BytesIO()
    sheet.save(out, format="PNG", optimize=False, compress_level=6)
    return out.getvalue()
