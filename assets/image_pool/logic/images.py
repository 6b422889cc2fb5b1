"""Decoding, normalising and measuring image bytes, and the pool's filter rules.

Each failure maps to a stable reason code that is stored in the warehouse, so a user can count
and inspect what was turned away and why. Bytes are opened as ``resources.image_formats`` opens them for
the fetcher (asking every plugin registered with Pillow), so both agree on what is an image.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFile

from assets.image_pool.logic.perceptual import MIN_SIGNATURE_SIDE
from resources.image_formats import (
    DECODER_ERRORS,
    DECOMPRESSION_BOMB,
    UNSUPPORTED_FORMAT,
    DecodeFailure,
    bomb_failure,
    decode_failure,
    open_image,
)

# Reason codes of the filter rules.
TOO_SMALL = "too_small"
TOO_LARGE = "too_large_dimensions"
BLANK = "blank"
EXTREME_ASPECT_RATIO = "extreme_aspect_ratio"
LICENSE_NOT_ALLOWED = "license_not_allowed"
REMOVED_IMAGE_PLACEHOLDER = "removed_image_placeholder"

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
_MEASURE_SIDE = 256


@dataclass(frozen=True)
class DecodedImage:
    image: Image.Image  # RGB, EXIF orientation applied
    pixel_sha256: str  # of the decoded RGB pixels and size: equal for the same picture in any container
    source_format: str
    source_mode: str
    exif_orientation: int | None  # the valid EXIF orientation (1-8) that was applied; None when absent or invalid
    pixel_std: float
    frame_count: int | None = 1  # frames (animation) or pages (multipage TIFF); None when the later ones are damaged
    frame_used: int = 0  # the one decoded: always the first, what a viewer shows as the still

    @property
    def width(self) -> int:
        return self.image.width

    @property
    def height(self) -> int:
        return self.image.height

    @property
    def can_be_signed(self) -> bool:
        """Whether a perceptual signature can be computed (smaller images are rejected by the filter as too small)."""
        return min(self.image.size) >= MIN_SIGNATURE_SIDE


def decode_normalized(data: bytes, max_pixels: int) -> DecodedImage:
    """Decode bytes into an upright RGB image (the first frame of an animation or a multipage file), refusing
    decompression bombs from the header, before their pixels are allocated."""
    source = open_image(data, max_pixels)
    fmt = source.format or "image"
    width, height = source.size
    if width * height > max_pixels:
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
    digest = hashlib.sha256(f"{rgb.width}x{rgb.height}:".encode() + rgb.tobytes()).hexdigest()
    return DecodedImage(
        image=rgb,
        pixel_sha256=digest,
        source_format=source.format or "unknown",
        source_mode=source.mode,
        exif_orientation=orientation,
        pixel_std=pixel_spread(rgb),
        frame_count=frame_count,
    )


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
    return image.convert("RGB")


def pixel_spread(image: Image.Image) -> float:
    """Largest per-channel standard deviation on a small copy: ~0 for blank or near-uniform images."""
    small = image.copy()
    small.thumbnail((_MEASURE_SIDE, _MEASURE_SIDE), Image.Resampling.BOX)
    array = np.asarray(small, dtype=np.float32).reshape(-1, 3)
    return float(array.std(axis=0).max())


def encode_normalized(image: Image.Image) -> bytes:
    """Lossless, deterministic PNG of the normalised image (the derivative every later stage reads)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue()


@dataclass(frozen=True)
class FilterRules:
    min_side: int
    max_side: int
    max_aspect_ratio: float
    blank_max_std: float
    license_allowlist: Sequence[str]
    placeholder_sizes: Sequence[tuple[int, int]] = ((161, 81),)


def filter_reason(
    *, width: int, height: int, pixel_std: float, license: str | None, rules: FilterRules
) -> tuple[str, str] | None:
    """The first rule a candidate breaks, as (reason code, detail), or None when it may enter the pool."""
    allowed = {name.casefold() for name in rules.license_allowlist}
    if (license or "").casefold() not in allowed:
        return LICENSE_NOT_ALLOWED, f"license {license!r} is not in the allow-list ({', '.join(rules.license_allowlist)})"
    if (width, height) in {tuple(size) for size in rules.placeholder_sizes}:
        return REMOVED_IMAGE_PLACEHOLDER, f"{width}x{height} is the size of a host's 'image removed' placeholder"
    if min(width, height) < max(rules.min_side, MIN_SIGNATURE_SIDE):
        floor = "" if rules.min_side >= MIN_SIGNATURE_SIDE else " (the smallest a perceptual signature is made from)"
        return TOO_SMALL, f"{width}x{height}: shorter side below {max(rules.min_side, MIN_SIGNATURE_SIDE)} px{floor}"
    if max(width, height) > rules.max_side:
        return TOO_LARGE, f"{width}x{height}: longer side above {rules.max_side} px"
    ratio = max(width, height) / max(1, min(width, height))
    if ratio > rules.max_aspect_ratio:
        return EXTREME_ASPECT_RATIO, f"{width}x{height}: aspect ratio {ratio:.1f} above {rules.max_aspect_ratio}"
    if pixel_std < rules.blank_max_std:
        return BLANK, f"pixel standard deviation {pixel_std:.2f} below {rules.blank_max_std}: blank or near-uniform"
    return None
