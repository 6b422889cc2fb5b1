"""How good a copy a file is, measured once when it is decoded, so a duplicate cluster can keep the best copy.

Why these: the copies a crawl meets are re-encoded (lossy, lower JPEG quality), resized (fewer pixels, or more
pixels without more detail: an upscale), exposure-shifted, or marked (overlays, judged per pair by the perceptual
verification). Each measure is cheap and reads only the file's header or a bounded part of its pixels:

- ``lossless``: the container stores the pixels exactly (PNG, BMP, lossless WebP, uncompressed or LZW/Deflate TIFF…).
- ``jpeg_quality``: the IJG quality (1–100) whose scaled standard luminance table has the same sum as the file's
  first quantisation table; other encoders' tables get the IJG quality of equal coarseness, which still orders
  copies by how much detail their encoder threw away.
- ``fine_detail``: the top octave's share of detail (RMS of the finest Laplacian-pyramid band over the next one)
  on a central crop at full resolution. Natural images keep a similar share at every scale; an upscaled copy has
  lost it (about 0.1 against 0.5–1 for a native picture), so the representative rule can see that its extra
  pixels carry nothing.
- ``tones``: mean luminance, its 99.5th percentile and the share of clipped highlights (>= 250) of the small copy
  the pool measures (its luminance histogram: exact, and no array of pixels).
  Which of two differently exposed copies is the original cannot be read from one file; from a pair it often can
  (:func:`exposure_edited`): brightening clips highlights the other copy still has, darkening leaves the top of the
  range empty that the other copy reaches without clipping.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from assets.core.logic.normalized_pixels import UprightImage

DETAIL_CROP = 256  # side of the central full-resolution crop ``fine_detail`` reads
CLIPPED_LUMA = 250  # a highlight this bright (0-255) has lost its detail

LOSSLESS_FORMATS = frozenset({"PNG", "BMP", "PPM", "TGA", "QOI", "SGI", "PCX", "ICO", "DIB", "XBM"})
_LOSSLESS_TIFF = frozenset({"raw", "tiff_lzw", "tiff_adobe_deflate", "tiff_deflate", "packbits", "tiff_raw_16"})

# The IJG standard luminance quantisation table (ITU T.81 Annex K); only its sum matters here, so order is irrelevant.
_IJG_LUMA = np.array([
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
    14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
])


def _ijg_table_sums() -> np.ndarray:
    """Sum of the IJG luminance table at each quality 1..100, as libjpeg scales it (baseline: values clipped 1..255)."""
    quality = np.arange(1, 101)
    scale = np.where(quality < 50, 5000 // quality, 200 - 2 * quality)
    tables = np.clip((_IJG_LUMA[None, :] * scale[:, None] + 50) // 100, 1, 255)
    return tables.sum(axis=1)


_IJG_SUMS = _ijg_table_sums()


@dataclass(frozen=True)
class SourceQuality:
    lossless: bool
    jpeg_quality: int | None  # None for anything but JPEG
    fine_detail: float | None  # None when the picture is too small to have two octaves
    luma_mean: float
    luma_top: float  # 99.5th percentile
    highlights_clipped: float  # share of pixels at CLIPPED_LUMA or above

    def to_record(self) -> dict:
        """The ``file_decode`` columns (migration 0023)."""
        return {"lossless": self.lossless, "jpeg_quality": self.jpeg_quality, "fine_detail": self.fine_detail,
                "luma_mean": self.luma_mean, "luma_top": self.luma_top, "highlights_clipped": self.highlights_clipped}


def jpeg_quality(quantization: dict | None) -> int | None:
    """The IJG quality matching the first (luminance) quantisation table, or None without tables."""
    if not quantization:
        return None
    table = quantization.get(0) or next(iter(quantization.values()))
    total = int(np.sum(np.asarray(table, dtype=np.int64)))
    return int(np.argmin(np.abs(_IJG_SUMS - total))) + 1


def is_lossless(source_format: str, compression: str | None, data: bytes) -> bool:
    """Whether the container kept the pixels exactly (a palette GIF has already quantised colours: lossy)."""
    fmt = source_format.upper()
    if fmt in LOSSLESS_FORMATS:
        return True
    if fmt == "TIFF":
        return (compression or "raw") in _LOSSLESS_TIFF
    if fmt == "WEBP":
        return b"VP8L" in data[:64] or (b"VP8X" in data[:16] and b"VP8L" in data[:4096] and b"VP8 " not in data[:4096])
    return False


def fine_detail(rgb: Image.Image) -> float | None:
    """:func:`band_ratio` of a central crop at full resolution: low for an upscale, whose extra pixels add nothing."""
    side = min(DETAIL_CROP, rgb.width, rgb.height) // 4 * 4
    if side < 16:
        return None
    left, top = (rgb.width - side) // 2, (rgb.height - side) // 2
    return band_ratio(np.asarray(rgb.crop((left, top, left + side, top + side)).convert("L"), dtype=np.float32))


def band_ratio(luma: np.ndarray) -> float | None:
    """RMS of the finest Laplacian-pyramid band over the next coarser one (None: too small, or flat at both)."""
    h, w = luma.shape[0] // 4 * 4, luma.shape[1] // 4 * 4
    if min(h, w) < 16:
        return None
    luma = luma[:h, :w]
    half = _halve(luma)
    quarter = _halve(half)
    finest = luma - _double(half)
    next_band = half - _double(quarter)
    coarse = float(np.sqrt(np.mean(next_band * next_band)))
    if coarse < 1e-3:
        return None  # flat: no detail at either scale to compare
    return round(float(np.sqrt(np.mean(finest * finest))) / coarse, 4)


def _halve(square: np.ndarray) -> np.ndarray:
    """2 x 2 box means."""
    return (square[0::2, 0::2] + square[1::2, 0::2] + square[0::2, 1::2] + square[1::2, 1::2]) * np.float32(0.25)


def _double(square: np.ndarray) -> np.ndarray:
    """Bilinear doubling with pixel centres aligned (edges repeated): a smooth (upscaled) signal comes back almost
    exactly, so only real detail is left over."""
    return _double_axis(_double_axis(square, 0), 1)


def _double_axis(values: np.ndarray, axis: int) -> np.ndarray:
    """Each sample becomes two, at a quarter step either side: 3/4 of it plus 1/4 of its neighbour on that side."""
    before = np.concatenate([np.take(values, [0], axis), np.take(values, range(values.shape[axis] - 1), axis)], axis)
    after = np.concatenate([np.take(values, range(1, values.shape[axis]), axis), np.take(values, [-1], axis)], axis)
    three_quarters = np.float32(0.75) * values
    pair = np.stack([three_quarters + np.float32(0.25) * before, three_quarters + np.float32(0.25) * after], axis + 1)
    shape = list(values.shape)
    shape[axis] *= 2
    return pair.reshape(shape)


def tones(image: Image.Image) -> tuple[float, float, float]:
    """(mean luminance, its 99.5th percentile as numpy interpolates it, share of pixels at CLIPPED_LUMA or above),
    read from the luminance histogram."""
    counts = np.asarray(image.convert("L").histogram(), dtype=np.int64)
    n = int(counts.sum())
    cumulative = np.cumsum(counts)
    rank = 0.995 * (n - 1)
    below = int(np.floor(rank))
    low, high = np.searchsorted(cumulative, [below, min(below + 1, n - 1)], side="right")
    top = low + (rank - below) * (high - low)
    mean = float(counts @ np.arange(256)) / n
    return round(mean, 2), round(float(top), 2), round(float(counts[CLIPPED_LUMA:].sum()) / n, 5)


EXPOSURE_MIN_GAIN = 1.08  # mean luminance ratio below which two copies count as equally exposed
CLIPPING_MIN_SHARE = 0.01  # highlights clipped in at least this share of the brighter copy ...
CLIPPING_MIN_RATIO = 3.0  # ... and this many times the darker copy's: the brighter was pushed up
FULL_RANGE_TOP = 240.0  # the brighter copy reaches this without clipping ...
DARKENED_MAX_TOP_RATIO = 0.9  # ... and the darker copy's top stays below this share of it: the darker was pulled down


def exposure_edited(brighter: tuple[float, float, float], darker: tuple[float, float, float]) -> str | None:
    """Which of two copies of one frame (their :func:`tones`, the brighter first) had its exposure shifted:
    "brighter", "darker", or None when the evidence does not say."""
    (mean_b, top_b, clipped_b), (mean_d, top_d, clipped_d) = brighter, darker
    if mean_b < EXPOSURE_MIN_GAIN * max(mean_d, 1e-3):
        return None
    if clipped_b >= CLIPPING_MIN_SHARE and clipped_b >= CLIPPING_MIN_RATIO * clipped_d + 0.005:
        return "brighter"
    if top_b >= FULL_RANGE_TOP and clipped_b < CLIPPING_MIN_SHARE and top_d <= DARKENED_MAX_TOP_RATIO * top_b:
        return "darker"
    return None


def measure_source(upright: UprightImage, data: bytes, small: Image.Image) -> SourceQuality:
    """Every measure of one file: ``upright`` as decoded (format, tables, pixels), ``small`` the pool's measuring
    copy of its pixels (:func:`assets.image_pool.logic.images.measuring_copy`) or that copy's luminance."""
    fmt = upright.source_format.upper()
    luma_mean, luma_top, highlights_clipped = tones(small)
    return SourceQuality(
        lossless=is_lossless(fmt, upright.compression, data),
        jpeg_quality=jpeg_quality(upright.quantization) if fmt in ("JPEG", "MPO") else None,
        fine_detail=fine_detail(upright.image),
        luma_mean=luma_mean,
        luma_top=luma_top,
        highlights_clipped=highlights_clipped,
    )
