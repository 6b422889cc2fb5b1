"""Decoding and measuring image bytes, and the pool's filter rules.

Each failure maps to a stable reason code that is stored in the warehouse, so a user can count
and inspect what was turned away and why. Bytes are normalised by ``assets.core.logic.normalized_pixels`` (the one
function every later stage reads pixels with), which opens them as ``resources.image_formats`` opens them for the
fetcher (asking every plugin registered with Pillow), so both agree on what is an image.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageStat

from assets.core.logic.normalized_pixels import UprightImage, decode_upright
from assets.image_pool.logic.clarity import Clarity, measure_clarity
from assets.image_pool.logic.perceptual import MIN_SIGNATURE_SIDE, PerceptualSignature, compute_signature
from assets.image_pool.logic.source_quality import SourceQuality, measure_source
from resources.image_formats import DecodeFailure

# Reason codes of the filter rules.
TOO_SMALL = "too_small"
TOO_LARGE = "too_large_dimensions"
BLANK = "blank"
EXTREME_ASPECT_RATIO = "extreme_aspect_ratio"
LICENSE_NOT_ALLOWED = "license_not_allowed"
REMOVED_IMAGE_PLACEHOLDER = "removed_image_placeholder"

MEASURE_SIDE = 256  # the measuring copy keeps its long side at least this long


@dataclass(frozen=True)
class DecodedImage:
    upright: UprightImage  # RGB pixels, EXIF orientation applied, and what the file's header said
    small: Image.Image  # the measuring copy (:func:`measuring_copy`)
    pixel_sha256: str  # of the decoded RGB pixels and size: equal for the same picture in any container
    pixel_std: float

    @property
    def image(self) -> Image.Image:
        return self.upright.image

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
    """Decode bytes once into their normalised pixels (``assets.core.logic.normalized_pixels``) and measure them:
    the pixel digest (exact-pixel duplicates), the spread (blank images). The full decode stays: the digest must
    cover every pixel, so a PNG and a BMP of one picture are one image."""
    upright = decode_upright(data, max_pixels)
    rgb = upright.image
    digest = hashlib.sha256(f"{rgb.width}x{rgb.height}:".encode())
    digest.update(rgb.tobytes())  # not joined to the prefix: that would copy every pixel once more
    small = measuring_copy(rgb)
    return DecodedImage(upright=upright, small=small, pixel_sha256=digest.hexdigest(), pixel_std=pixel_spread(small))


def measuring_copy(rgb: Image.Image) -> Image.Image:
    """The small copy the spread and tone measures read: box-reduced by the largest whole factor that keeps the
    long side at least MEASURE_SIDE (a reduce costs a fraction of a resize and copies nothing else)."""
    factor = max(1, max(rgb.size) // MEASURE_SIDE)
    return rgb.reduce(factor) if factor > 1 else rgb


def pixel_spread(image: Image.Image) -> float:
    """Largest per-channel standard deviation (of the measuring copy): ~0 for blank or near-uniform images. From
    the channel histograms (Pillow's ``ImageStat``, in C), a tenth of the time of a float array's."""
    return float(max(ImageStat.Stat(image).stddev))


@dataclass(frozen=True)
class MeasuredFile:
    """What normalisation keeps of one decoded file: measures, no pixels (every later stage reads those again from
    the original), so it is small enough to come back from a worker process."""

    pixel_sha256: str
    width: int
    height: int
    pixel_std: float
    source_format: str
    source_mode: str
    exif_orientation: int | None
    frame_count: int | None
    signature: PerceptualSignature | None  # None below the signature's minimum size (the filter rejects those)
    quality: SourceQuality  # how good a copy the file is (the representative rule reads it)
    clarity: Clarity  # sharpness, noise, crushed shadows (the low-quality filter reads them)
    frame_used: int = 0  # the one decoded: always the first, what a viewer shows as the still


def measure_file(data: bytes, max_pixels: int) -> MeasuredFile | DecodeFailure:
    """Decode one file's bytes once and take every measure the pool keeps: digest, size, spread, perceptual
    signature, source quality, clarity. A file that gives no image returns its :class:`DecodeFailure` (a decided outcome,
    not an error)."""
    try:
        decoded = decode_normalized(data, max_pixels)
    except DecodeFailure as failure:
        return failure
    upright = decoded.upright
    small_luma = decoded.small.convert("L")  # what the tone, sharpness and shadow measures read: converted once
    return MeasuredFile(
        pixel_sha256=decoded.pixel_sha256,
        width=decoded.width,
        height=decoded.height,
        pixel_std=decoded.pixel_std,
        source_format=upright.source_format,
        source_mode=upright.source_mode,
        exif_orientation=upright.exif_orientation,
        frame_count=upright.frame_count,
        signature=compute_signature(decoded.image) if decoded.can_be_signed else None,
        quality=measure_source(upright, data, small_luma),
        clarity=measure_clarity(decoded.image, small_luma),
    )


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
