"""The normalised pixels of an image file: upright RGB of its first frame, from the original bytes.

Why one function: the pool stores each file's original bytes once and no second, decoded copy; every stage that
looks at an image (signatures, CLIP, critiques, edits, contact sheets, releases) gets the same pixels from the
same bytes by calling :func:`normalized_pixels`. The normalisation is a fixed function of the bytes: the EXIF
orientation applied, the first frame of an animation or multipage file, transparency flattened onto white (what
a viewer shows), 16-bit and float pixels scaled to 8 bits, any other mode converted to RGB. The pool records the
parameters it found (``file_decode``: format, source mode, orientation, frames) beside the image.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFile

from resources.image_formats import (
    DECODER_ERRORS,
    DECOMPRESSION_BOMB,
    UNSUPPORTED_FORMAT,
    DecodeFailure,
    bomb_failure,
    decode_failure,
    open_image,
)

_EXIF_ORIENTATION = 0x0112
# EXIF orientation -> the transposition that makes the picture upright (as ImageOps.exif_transpose does).
_UPRIGHT = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}


@dataclass(frozen=True)
class UprightImage:
    """A decoded file: its normalised pixels and the normalisation parameters found in it."""

    image: Image.Image  # RGB, EXIF orientation applied, first frame
    source_format: str
    source_mode: str
    exif_orientation: int | None  # the valid EXIF orientation (1-8) that was applied; None when absent or invalid
    frame_count: int | None  # frames (animation) or pages (multipage file); None when the later ones are damaged
    quantization: dict | None = None  # a JPEG's quantisation tables, as the header gave them
    compression: str | None = None  # a TIFF's compression scheme


def decode_upright(data: bytes, max_pixels: int | None = None, min_side: int | None = None) -> UprightImage:
    """Decode bytes into upright RGB pixels (the first frame), refusing decompression bombs from the header, before
    their pixels are allocated; a file that gives no image raises :class:`DecodeFailure` with its reason.

    ``min_side``: the caller needs only a picture whose shorter side is at least this many pixels (a model input, a
    thumbnail), so a JPEG is decoded at the smallest DCT scale (1/2, 1/4 or 1/8) that keeps it that big (Pillow's
    draft mode, several times faster). None decodes every pixel, as the pixel digest needs."""
    source = open_image(data, max_pixels)
    fmt = source.format or "image"
    width, height = source.size
    if max_pixels is not None and width * height > max_pixels:
        raise DecodeFailure(
            DECOMPRESSION_BOMB,
            f"{fmt} header declares {width}x{height} = {width * height} pixels, above max_pixels = {max_pixels}; not decoded",
            fmt,
        )
    try:
        frame_count: int | None = max(1, int(getattr(source, "n_frames", 1) or 1))  # counting seeks through the file
    except Image.DecompressionBombError as exc:
        raise bomb_failure(fmt, exc, max_pixels) from exc
    except DECODER_ERRORS:
        frame_count, source = None, open_image(data, max_pixels)  # damaged after the first frame: decode that one afresh
    if min_side is not None and min(width, height) > 2 * min_side:
        scale = min_side / min(width, height)
        source.draft(source.mode, (math.ceil(width * scale), math.ceil(height * scale)))
    try:
        source.load()
    except Image.DecompressionBombError as exc:
        raise bomb_failure(fmt, exc, max_pixels) from exc
    except DECODER_ERRORS as exc:
        if isinstance(source, ImageFile.StubImageFile):
            raise DecodeFailure(UNSUPPORTED_FORMAT, f"{fmt} is recognised but no decoder for it is installed: {exc}", fmt) from exc
        raise decode_failure(fmt, exc, "data") from exc
    upright, orientation = _upright(source)
    try:
        rgb = _to_rgb(upright)
    except DECODER_ERRORS as exc:
        raise DecodeFailure(UNSUPPORTED_FORMAT, f"{fmt} pixels in mode {source.mode} cannot be converted to RGB: {exc}", fmt) from exc
    return UprightImage(rgb, source.format or "unknown", source.mode, orientation, frame_count,
                        getattr(source, "quantization", None), _text(source.info.get("compression")))


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def normalized_pixels(data: bytes, max_pixels: int | None = None, min_side: int | None = None) -> Image.Image:
    """The normalised upright RGB pixels of an original file's bytes (see the module docstring); ``min_side`` as
    for :func:`decode_upright`."""
    return decode_upright(data, max_pixels, min_side).image


def normalized_png(data: bytes) -> bytes:
    """A deterministic, lossless PNG of the normalised pixels of ``data``, for where a file of them is published
    (a release, a case image, an edit's source): the same bytes give the same PNG, byte for byte."""
    buffer = io.BytesIO()
    normalized_pixels(data).save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue()


def _upright(source: Image.Image) -> tuple[Image.Image, int | None]:
    """Apply the EXIF orientation. An EXIF block that cannot be parsed, or an orientation outside 1-8, is ignored
    (the pixels stay as stored), so broken metadata never costs a picture."""
    try:
        orientation = source.getexif().get(_EXIF_ORIENTATION)
    except DECODER_ERRORS:
        return source, None
    if not isinstance(orientation, int) or not 1 <= orientation <= 8:
        return source, None
    return (source.transpose(_UPRIGHT[orientation]) if orientation in _UPRIGHT else source), orientation


def _to_rgb(image: Image.Image) -> Image.Image:
    """Flatten transparency onto white (what a viewer shows) and convert everything else to RGB."""
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        canvas = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(canvas, rgba).convert("RGB")
    if image.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        array = np.asarray(image, dtype=np.float64)
        peak = array.max() or 1.0
        return Image.fromarray(np.clip(array / peak * 255, 0, 255).astype(np.uint8)).convert("RGB")
    return image if image.mode == "RGB" else image.convert("RGB")  # RGB already (most JPEGs): no copy
