"""Decoding, normalising and measuring image bytes, and the pool's filter rules.

Each failure maps to a stable reason code that is stored in the warehouse, so a user can count
and inspect what was turned away and why.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError

# Reason codes.
NOT_AN_IMAGE = "not_an_image"
UNDECODABLE = "undecodable"
DECOMPRESSION_BOMB = "decompression_bomb"
TOO_SMALL = "too_small"
TOO_LARGE = "too_large_dimensions"
BLANK = "blank"
EXTREME_ASPECT_RATIO = "extreme_aspect_ratio"
LICENSE_NOT_ALLOWED = "license_not_allowed"
REMOVED_IMAGE_PLACEHOLDER = "removed_image_placeholder"

_EXIF_ORIENTATION = 0x0112
_MEASURE_SIDE = 256

ImageFile.LOAD_TRUNCATED_IMAGES = False  # a cut-off file must fail, not decode grey padding


class DecodeFailure(Exception):
    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(f"{reason_code}: {detail}")
        self.reason_code = reason_code
        self.detail = detail


@dataclass(frozen=True)
class DecodedImage:
    image: Image.Image  # RGB, EXIF orientation applied
    pixel_sha256: str  # of the decoded RGB pixels and size: equal for the same picture in any container
    source_format: str
    source_mode: str
    exif_orientation: int | None
    pixel_std: float

    @property
    def width(self) -> int:
        return self.image.width

    @property
    def height(self) -> int:
        return self.image.height


def decode_normalized(data: bytes, max_pixels: int) -> DecodedImage:
    """Decode bytes into an upright RGB image, refusing decompression bombs before allocating them."""
    try:
        source = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        raise DecodeFailure(DECOMPRESSION_BOMB, str(exc)) from exc
    except UnidentifiedImageError as exc:
        raise DecodeFailure(NOT_AN_IMAGE, "no image decoder recognises these bytes") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise DecodeFailure(UNDECODABLE, f"the image header is damaged or truncated: {exc}") from exc
    width, height = source.size
    if width * height > max_pixels:
        raise DecodeFailure(
            DECOMPRESSION_BOMB, f"{width}x{height} = {width * height} pixels exceeds the {max_pixels} pixel limit"
        )
    try:
        source.load()
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise DecodeFailure(UNDECODABLE, f"{source.format or 'image'} data is damaged or truncated: {exc}") from exc
    orientation = source.getexif().get(_EXIF_ORIENTATION)
    upright = ImageOps.exif_transpose(source)
    rgb = _to_rgb(upright)
    digest = hashlib.sha256(f"{rgb.width}x{rgb.height}:".encode() + rgb.tobytes()).hexdigest()
    return DecodedImage(
        image=rgb,
        pixel_sha256=digest,
        source_format=source.format or "unknown",
        source_mode=source.mode,
        exif_orientation=int(orientation) if orientation else None,
        pixel_std=pixel_spread(rgb),
    )


def _to_rgb(image: Image.Image) -> Image.Image:
    """Flatten transparency onto white (what a viewer shows) and convert everything else to RGB."""
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        canvas = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(canvas, rgba).convert("RGB")
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        array = np.asarray(image, dtype=np.float64)
        peak = array.max() or 1.0
        return Image.fromarray((array / peak * 255).astype(np.uint8)).convert("RGB")
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
    if min(width, height) < rules.min_side:
        return TOO_SMALL, f"{width}x{height}: shorter side below {rules.min_side} px"
    if max(width, height) > rules.max_side:
        return TOO_LARGE, f"{width}x{height}: longer side above {rules.max_side} px"
    ratio = max(width, height) / max(1, min(width, height))
    if ratio > rules.max_aspect_ratio:
        return EXTREME_ASPECT_RATIO, f"{width}x{height}: aspect ratio {ratio:.1f} above {rules.max_aspect_ratio}"
    if pixel_std < rules.blank_max_std:
        return BLANK, f"pixel standard deviation {pixel_std:.2f} below {rules.blank_max_std}: blank or near-uniform"
    return None
