"""Clarity: how sharp, how noisy and how badly exposed a picture is, measured once when it is decoded, and the
pool's low-quality rules over those measures.

Why these: a critique dataset is built from pictures a person would judge on their merits; a frame that is blurred
all over, buried in sensor noise, or blown out / black is judged by its defect (AesCanvas removes "low-quality"
images before annotation). Each measure is chosen so that the picture's content does not pass for the defect:

- ``sharpness``: the 90th percentile over 16 px blocks of the RMS of the Laplacian (after a 3 x 3 binomial
  smoothing, without which the 8-bit rounding noise sets a floor no blur goes below), over the luminance spread, on the measuring copy (long side 256-511 px). A picture in focus anywhere (a subject against a soft
  background) has some crisp blocks; a blurred one has none. Dividing by the spread keeps a low-contrast picture
  from reading as blurred. (A band ratio, finest octave over the next, was tried and dropped: under heavy blur
  both bands fall to the rounding noise and the ratio rises again.)
- ``noise_sigma``: luminance noise (0-255) by Immerkaer's estimator ("Fast noise variance estimation", 1996: the
  mean absolute response to a mask that cancels linear structure), on the full-resolution central crop, taken in
  the flattest tenth of its 16 px blocks, so texture is not counted as noise.
- exposure: the shares of clipped highlights (>= 250: ``file_decode.highlights_clipped``, a tone measure of
  :mod:`assets.image_pool.logic.source_quality`) and of crushed shadows (<= 5) of the measuring copy.

Thresholds (``pool.filters.clarity``) were set on two calibration sets, scikit-image's bundled photographs and the
sample corpus, with each picture also blurred (Gaussian, radius 2 and 4 px) and noised (sigma 20 per channel):
defaults reject none of the photographs (lowest sharpness 0.052, scikit-image's own motion-blur test picture;
highest noise 7.9), most noised copies (median noise 11.8) and heavy blur only (median 0.033 at radius 6 on the
photographs, 0.022 on the sample): a conservative rule, as a wrongly rejected photograph is lost to the dataset,
and one the clarity rules only judge photographs by default (a colour-wheel graphic reads 0.008).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image


# Reason codes of the clarity rules.
BLURRED = "blurred"
NOISY = "noisy"
OVEREXPOSED = "overexposed"
UNDEREXPOSED = "underexposed"

BLOCK = 16  # side of the blocks the sharpness and noise measures compare
NOISE_CROP = 256  # side of the full-resolution central crop the noise measure reads


CRUSHED_LUMA = 5  # a shadow this dark (0-255) has lost its detail


@dataclass(frozen=True)
class Clarity:
    sharpness: float | None  # None when the picture has fewer than two blocks a side
    noise_sigma: float | None
    shadows_crushed: float  # share of pixels at CRUSHED_LUMA or below

    def to_record(self) -> dict:
        """The ``file_decode`` columns (migration 0025)."""
        return {"sharpness": self.sharpness, "noise_sigma": self.noise_sigma, "shadows_crushed": self.shadows_crushed}


def measure_clarity(rgb: Image.Image, small: Image.Image) -> Clarity:
    """Sharpness and crushed shadows of ``small`` (the measuring copy, or its luminance), noise of ``rgb`` (full
    resolution)."""
    counts = np.asarray(small.convert("L").histogram(), dtype=np.int64)
    crushed = round(float(counts[: CRUSHED_LUMA + 1].sum()) / max(1, int(counts.sum())), 5)
    return Clarity(sharpness(small), noise_sigma(rgb), crushed)


def _three_taps(values: np.ndarray, outer: float, centre: float) -> np.ndarray:
    """(outer, centre, outer) along both axes over the interior (no padding: the border adds no made-up structure);
    separable, so six array operations where the 3 x 3 kernel takes eighteen."""
    rows = outer * (values[:, :-2] + values[:, 2:]) + centre * values[:, 1:-1]
    return outer * (rows[:-2] + rows[2:]) + centre * rows[1:-1]


def _laplacian(values: np.ndarray) -> np.ndarray:
    return values[:-2, 1:-1] + values[2:, 1:-1] + values[1:-1, :-2] + values[1:-1, 2:] - 4 * values[1:-1, 1:-1]


def _block_means(values: np.ndarray) -> np.ndarray | None:
    h, w = (values.shape[0] // BLOCK) * BLOCK, (values.shape[1] // BLOCK) * BLOCK
    if h < 2 * BLOCK or w < 2 * BLOCK:
        return None
    return values[:h, :w].reshape(h // BLOCK, BLOCK, w // BLOCK, BLOCK).mean(axis=(1, 3)).ravel()


def sharpness(small: Image.Image) -> float | None:
    luma = np.asarray(small.convert("L"), dtype=np.float32)
    if min(luma.shape) < 5:
        return None
    smoothed = _three_taps(luma, np.float32(0.25), np.float32(0.5))  # the 3 x 3 binomial, (1 2 1) / 4 each way
    energy = _block_means(np.square(_laplacian(smoothed)))
    if energy is None:
        return None
    return round(float(np.percentile(np.sqrt(energy), 90)) / (float(luma.std()) + 1.0), 4)


def noise_sigma(rgb: Image.Image) -> float | None:
    side = min(NOISE_CROP, rgb.width, rgb.height)
    left, top = (rgb.width - side) // 2, (rgb.height - side) // 2
    luma = np.asarray(rgb.crop((left, top, left + side, top + side)).convert("L"), dtype=np.float32)
    if side < 3:
        return None
    response = _block_means(np.abs(_three_taps(luma, np.float32(1), np.float32(-2))))  # Immerkaer's mask
    if response is None:
        return None
    return round(float(np.sqrt(np.pi / 2) * np.percentile(response, 10) / 6), 3)


@dataclass(frozen=True)
class ClarityRules:
    """None switches a rule off. ``domains``: the pool domains judged. Blur, noise and exposure are camera
    defects; a flat illustration or a design on white reads as "blurred" and "overexposed" by the same measures,
    so by default only photographs are judged."""

    min_sharpness: float | None = 0.02
    max_noise_sigma: float | None = 9.0
    max_highlights_clipped: float | None = 0.6
    max_shadows_crushed: float | None = 0.9
    domains: tuple[str, ...] = ("photography",)


def clarity_reason(*, sharpness: float | None, noise_sigma: float | None, highlights_clipped: float | None,
                   shadows_crushed: float | None, rules: ClarityRules) -> tuple[str, str] | None:
    """The first clarity rule a picture breaks, as (reason code, detail with the measured value), or None.
    Exposure comes first: a blown-out or black frame has also lost its detail, and that is why. A measure that is
    missing (a file decoded before the measures existed, a picture too small) is not judged."""
    if _above(highlights_clipped, rules.max_highlights_clipped):
        return OVEREXPOSED, (f"{highlights_clipped:.1%} of the picture clipped to white (>= 250), above"
                             f" max_highlights_clipped {rules.max_highlights_clipped:.0%}")
    if _above(shadows_crushed, rules.max_shadows_crushed):
        return UNDEREXPOSED, (f"{shadows_crushed:.1%} of the picture crushed to black (<= 5), above"
                              f" max_shadows_crushed {rules.max_shadows_crushed:.0%}")
    if _below(sharpness, rules.min_sharpness):
        return BLURRED, (f"sharpness {sharpness:.3f} below min_sharpness {rules.min_sharpness}: no crisp detail"
                         " anywhere in the picture")
    if _above(noise_sigma, rules.max_noise_sigma):
        return NOISY, (f"luminance noise sigma {noise_sigma:.2f} (0-255, flattest tenth of the picture) above"
                       f" max_noise_sigma {rules.max_noise_sigma}")
    return None


def _below(value: float | None, limit: float | None) -> bool:
    return value is not None and limit is not None and value < limit


def _above(value: float | None, limit: float | None) -> bool:
    return value is not None and limit is not None and value > limit
