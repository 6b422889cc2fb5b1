"""Measurable aesthetic facts about an image: exposure, contrast, colour, sharpness, lines and placement.

Why: the offline critic (``assets.critique_canvas.logic.heuristic_critic``) must say only what is true of the image in front of it,
so every statement it makes is derived from one of these numbers. Everything is computed with numpy on a copy
whose longest side is at most ``WORKING_SIDE`` pixels, which keeps one measurement in the tens of milliseconds and
makes the numbers comparable across image sizes. The same pixels always give the same numbers.
"""

from __future__ import annotations

import colorsys
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from PIL import Image, ImageFilter
from scipy import ndimage

WORKING_SIDE = 512
HIGHLIGHT_LEVEL = 253 / 255  # luminance at or above this counts as a blown highlight
SHADOW_LEVEL = 2 / 255  # luminance at or below this counts as a crushed shadow
EDGE_LEVEL = 0.1  # Sobel gradient (luminance step across one pixel) above which a pixel is a strong edge
FLAT_LEVEL = 0.01  # ... and below which it is flat
CHROMATIC_SATURATION = 0.2  # HSV saturation and value a pixel needs before its hue is named
CHROMATIC_VALUE = 0.15
TILT_RANGE = 20.0  # degrees either side of horizontal searched for a dominant line
TILT_MIN_SUPPORT = 0.35  # a line's edge pixels must exceed an even spread by this many per pixel of frame width
TILT_MIN_EXTENT = 0.5  # ... and span at least this fraction of the frame width
_TILT_AGREEMENT = 12.0  # degrees between a pixel's own edge angle and a candidate line for it to vote
_TILT_MIN_PIXELS = 32
_TILT_MIN_WIDTH = 64  # thumbnails are too coarse for an angle to mean anything
THIRDS_POINTS = {
    "upper-left": (1 / 3, 1 / 3),
    "upper-right": (2 / 3, 1 / 3),
    "lower-left": (1 / 3, 2 / 3),
    "lower-right": (2 / 3, 2 / 3),
}
HUE_FAMILIES = ("red", "orange", "yellow", "green", "cyan", "blue", "purple", "magenta")
# Upper hue bound (degrees) of each family; red wraps around 360.
_HUE_BOUNDS = ((15, "red"), (40, "orange"), (65, "yellow"), (160, "green"), (195, "cyan"), (255, "blue"),
               (290, "purple"), (335, "magenta"), (360, "red"))
_CRISP_MIN_STEP = 0.03  # local luminance step below which there is no edge to judge
_CRISP_MIN_PIXELS = 20
_COLOR_MERGE_DISTANCE = 40.0  # RGB distance under which two histogram bins are taken for one colour


@dataclass(frozen=True)
class DominantColor:
    """One of the main colours: mean ``rgb`` (0-255), ``share`` of all pixels (0-1) and a plain-English ``name``."""

    rgb: tuple[int, int, int]
    share: float
    name: str


@dataclass(frozen=True)
class ImageMeasures:
    """What ``measure`` found. Fractions and luminances are 0-1; positions are fractions of width / height from the
    top-left corner, and distances between positions are in those frame units (0.1 is a tenth of the frame)."""

    width: int  # of the image as given
    height: int
    aspect_ratio: float  # width / height
    megapixels: float
    working_width: int  # of the downscaled copy that was measured
    working_height: int
    # Exposure: luminance is Rec. 709 luma of the encoded RGB values, 0 black .. 1 white.
    mean_luminance: float
    luminance_p1: float  # 1st percentile: the darkest tones
    luminance_p5: float
    luminance_p50: float  # median tone
    luminance_p95: float
    luminance_p99: float  # the brightest tones
    clipped_shadows: float  # fraction of pixels at or below 2/255: crushed to black, detail lost
    clipped_highlights: float  # fraction of pixels at or above 253/255: blown to white, detail lost
    # Contrast.
    rms_contrast: float  # standard deviation of luminance, 0 (flat) .. 0.5 (half black, half white)
    contrast_range: float  # p95 - p5 luminance: the span of the middle 90 % of tones, 0..1
    # Colour.
    mean_saturation: float  # mean HSV saturation, 0 grey .. 1 fully saturated
    colorfulness: float  # Hasler & Suesstrunk (2003) on 0-255 values: 0 grey, ~33 moderate, ~59 quite, >109 extreme
    hue_shares: tuple[tuple[str, float], ...]  # (hue family, fraction of all pixels) for chromatic pixels, largest first
    dominant_colors: tuple[DominantColor, ...]  # up to three, largest first
    # Sharpness and lines.
    sharpness: float  # variance of the 4-neighbour Laplacian of luminance (0-255) on the working copy; ~0 flat/blurred
    sharpness_normalized: float  # the same on a copy scaled to WORKING_SIDE px on its long side: comparable across sizes
    edge_crispness: float  # strongest edges' gradient over their local step: ~1 a one-pixel step, -> 0 blurred; 0: no edges
    edge_density: float  # fraction of pixels with a strong edge (gradient >= 0.1 luminance per pixel)
    flat_fraction: float  # fraction of pixels with almost no gradient (< 0.01): smooth fields, sky, flat colour
    edge_horizontal: float  # shares of strong-edge strength running near-horizontal / near-vertical / diagonal; sum 1
    edge_vertical: float
    edge_diagonal: float
    tilt_degrees: float | None  # angle of the dominant near-horizontal line, positive = rising to the right; None: none
    tilt_support: float  # fraction of the frame width the strongest near-horizontal line spans (0: none stands out)
    # Balance and placement.
    symmetry: float  # left-right mirror correlation of coarse luminance, 0 (none) .. 1 (mirror image)
    salient_centroid: tuple[float, float]  # (x, y) centre of the visually distinct mass
    salient_area: float  # fraction of pixels that stand out from the image's mean colour more than average
    salient_spread: float  # spread of that mass around its centroid: ~0 compact .. ~0.4 scattered over the frame
    nearest_thirds_point: str  # upper-left | upper-right | lower-left | lower-right
    thirds_distance: float  # from the salient centroid to that rule-of-thirds intersection
    center_distance: float  # from the salient centroid to the centre of the frame

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types only (tuples become lists), so the measures can be stored and compared as JSON."""
        return _jsonable(asdict(self))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    return value


def measure(image: Image.Image) -> ImageMeasures:
    """Measure ``image`` (any PIL mode; transparency is flattened onto white)."""
    rgb_image = _to_rgb(image)
    width, height = rgb_image.size
    working = _fit(rgb_image, WORKING_SIDE)
    rgb = np.asarray(working, dtype=np.float64) / 255.0
    luma = rgb @ np.array([0.2126, 0.7152, 0.0722])
    p1, p5, p50, p95, p99 = np.percentile(luma, [1, 5, 50, 95, 99])
    sobel_x, sobel_y = _sobel(luma)
    magnitude = np.hypot(sobel_x, sobel_y)
    edges = magnitude >= EDGE_LEVEL
    horizontal, vertical, diagonal = _edge_orientation_shares(sobel_x, sobel_y, magnitude, edges)
    tilt, support = _tilt(sobel_x, sobel_y, edges)
    centroid, area, spread = _salient_mass(working)
    thirds_name, thirds_distance = min(((name, math.dist(centroid, point)) for name, point in THIRDS_POINTS.items()),
                                       key=lambda item: item[1])
    return ImageMeasures(
        width=width,
        height=height,
        aspect_ratio=_r(width / height),
        megapixels=_r(width * height / 1e6),
        working_width=working.width,
        working_height=working.height,
        mean_luminance=_r(luma.mean()),
        luminance_p1=_r(p1),
        luminance_p5=_r(p5),
        luminance_p50=_r(p50),
        luminance_p95=_r(p95),
        luminance_p99=_r(p99),
        clipped_shadows=_r(np.mean(luma <= SHADOW_LEVEL + 1e-9)),
        clipped_highlights=_r(np.mean(luma >= HIGHLIGHT_LEVEL - 1e-9)),
        rms_contrast=_r(luma.std()),
        contrast_range=_r(p95 - p5),
        mean_saturation=_r(_saturation(rgb).mean()),
        colorfulness=_r(_colorfulness(rgb * 255.0), 2),
        hue_shares=_hue_shares(rgb),
        dominant_colors=_dominant_colors(np.asarray(working)),
        sharpness=_r(_laplacian_variance(luma * 255.0), 2),
        sharpness_normalized=_r(_normalized_sharpness(working, luma), 2),
        edge_crispness=_r(_edge_crispness(luma)),
        edge_density=_r(edges.mean()),
        flat_fraction=_r(np.mean(magnitude < FLAT_LEVEL)),
        edge_horizontal=horizontal,
        edge_vertical=vertical,
        edge_diagonal=diagonal,
        tilt_degrees=tilt,
        tilt_support=support,
        symmetry=_symmetry(working),
        salient_centroid=(_r(centroid[0]), _r(centroid[1])),
        salient_area=_r(area),
        salient_spread=_r(spread),
        nearest_thirds_point=thirds_name,
        thirds_distance=_r(thirds_distance),
        center_distance=_r(math.dist(centroid, (0.5, 0.5))),
    )


def color_name(rgb: tuple[int, int, int]) -> str:
    """A plain colour name: achromatic by lightness, otherwise a hue family with a dark / pale modifier."""
    hue, saturation, value = colorsys.rgb_to_hsv(*(channel / 255.0 for channel in rgb))
    if saturation < CHROMATIC_SATURATION or value < CHROMATIC_VALUE:
        for limit, name in ((0.15, "black"), (0.4, "dark grey"), (0.7, "grey"), (0.92, "light grey")):
            if value < limit:
                return name
        return "white"
    family = hue_family(hue * 360.0)
    if family == "orange" and value < 0.65:
        return "brown"
    if value < 0.45:
        return f"dark {family}"
    if saturation < 0.45 and value > 0.8:
        return "pink" if family in ("red", "magenta") else f"pale {family}"
    return family


def hue_family(hue_degrees: float) -> str:
    for bound, name in _HUE_BOUNDS:
        if hue_degrees < bound:
            return name
    return "red"


# --- helpers ------------------------------------------------------------------------------------------------

def _r(value: float, digits: int = 4) -> float:
    # Rounded so stored measures and the statements built from them are stable across platforms.
    return round(float(value), digits)


def _to_rgb(image: Image.Image) -> Image.Image:
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return image.convert("RGB")


def _fit(image: Image.Image, side: int) -> Image.Image:
    """Downscale (area average, which keeps clipped regions clipped) so the long side is at most ``side``."""
    scale = side / max(image.size)
    if scale >= 1:
        return image
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return image.resize(size, Image.Resampling.BOX)


def _sobel(luma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sobel derivatives, scaled so a one-pixel step from black to white reads 1 on both sides of the step."""
    p = np.pad(luma, 1, mode="edge")
    gx = (p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:] - p[:-2, :-2] - 2 * p[1:-1, :-2] - p[2:, :-2]) / 4.0
    gy = (p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:] - p[:-2, :-2] - 2 * p[:-2, 1:-1] - p[:-2, 2:]) / 4.0
    # The padded border would report edges that are not in the picture.
    gx[[0, -1], :] = gx[:, [0, -1]] = 0.0
    gy[[0, -1], :] = gy[:, [0, -1]] = 0.0
    return gx, gy


def _laplacian_variance(luma255: np.ndarray) -> float:
    if min(luma255.shape) < 3:
        return 0.0
    lap = (luma255[:-2, 1:-1] + luma255[2:, 1:-1] + luma255[1:-1, :-2] + luma255[1:-1, 2:]
           - 4.0 * luma255[1:-1, 1:-1])
    return float(lap.var())


def _normalized_sharpness(working: Image.Image, luma: np.ndarray) -> float:
    if max(working.size) == WORKING_SIDE:
        return _laplacian_variance(luma * 255.0)
    scale = WORKING_SIDE / max(working.size)
    size = (max(1, round(working.width * scale)), max(1, round(working.height * scale)))
    resized = Image.fromarray((luma * 255.0).astype(np.float32), mode="F").resize(size, Image.Resampling.BILINEAR)
    return _laplacian_variance(np.asarray(resized, dtype=np.float64))


def _saturation(rgb: np.ndarray) -> np.ndarray:
    high = rgb.max(axis=2)
    low = rgb.min(axis=2)
    # Near-black pixels look black whatever their channel ratios, so they count as unsaturated.
    return np.divide(high - low, high, out=np.zeros_like(high), where=high >= CHROMATIC_VALUE)


def _colorfulness(rgb255: np.ndarray) -> float:
    red, green, blue = rgb255[..., 0], rgb255[..., 1], rgb255[..., 2]
    rg = red - green
    yb = 0.5 * (red + green) - blue
    return float(np.hypot(rg.std(), yb.std()) + 0.3 * np.hypot(rg.mean(), yb.mean()))


def _hue_degrees(rgb: np.ndarray) -> np.ndarray:
    red, green, blue = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    high = rgb.max(axis=2)
    delta = high - rgb.min(axis=2)
    safe = np.where(delta > 0, delta, 1.0)
    hue = np.where(high == red, ((green - blue) / safe) % 6.0,
                   np.where(high == green, (blue - red) / safe + 2.0, (red - green) / safe + 4.0))
    return np.where(delta > 0, hue * 60.0, 0.0)


def _hue_shares(rgb: np.ndarray) -> tuple[tuple[str, float], ...]:
    chromatic = (_saturation(rgb) >= CHROMATIC_SATURATION) & (rgb.max(axis=2) >= CHROMATIC_VALUE)
    hues = np.minimum(_hue_degrees(rgb)[chromatic], 359.999)
    total = rgb.shape[0] * rgb.shape[1]
    bounds = np.array([bound for bound, _ in _HUE_BOUNDS])
    names = [name for _, name in _HUE_BOUNDS]
    counts: dict[str, int] = {}
    for index, count in enumerate(np.bincount(np.searchsorted(bounds, hues, side="right"), minlength=len(bounds))):
        counts[names[index]] = counts.get(names[index], 0) + int(count)
    shares = [(name, _r(count / total)) for name, count in counts.items() if count / total >= 0.005]
    return tuple(sorted(shares, key=lambda item: (-item[1], HUE_FAMILIES.index(item[0]))))


def _dominant_colors(pixels: np.ndarray, top: int = 3, min_share: float = 0.01) -> tuple[DominantColor, ...]:
    """Coarse 8x8x8 RGB histogram; bins whose mean colours lie close are merged, largest bins first, and clusters
    that end up with the same name are reported as one colour."""
    flat = pixels.reshape(-1, 3).astype(np.int64)
    bins = (flat[:, 0] >> 5) * 64 + (flat[:, 1] >> 5) * 8 + (flat[:, 2] >> 5)
    counts = np.bincount(bins, minlength=512)
    sums = np.stack([np.bincount(bins, weights=flat[:, c], minlength=512) for c in range(3)], axis=1)
    clusters: list[list[Any]] = []  # [count, mean rgb]
    centres = np.empty((0, 3))
    for index in sorted(np.flatnonzero(counts), key=lambda i: (-counts[i], i)):
        mean = sums[index] / counts[index]
        distances = np.linalg.norm(centres - mean, axis=1)
        nearest = int(np.argmin(distances)) if distances.size else -1
        if nearest >= 0 and distances[nearest] < _COLOR_MERGE_DISTANCE:
            _absorb(clusters[nearest], counts[index], mean)
            centres[nearest] = clusters[nearest][1]
        else:
            clusters.append([int(counts[index]), mean])
            centres = np.vstack([centres, mean])
    named: dict[str, list[Any]] = {}
    for count, mean in sorted(clusters, key=lambda c: -c[0]):
        name = color_name(_rgb_tuple(mean))
        if name in named:
            _absorb(named[name], count, mean)
        else:
            named[name] = [count, mean]
    result = [DominantColor(rgb=_rgb_tuple(mean), share=_r(count / len(flat)), name=name)
              for name, (count, mean) in named.items() if count / len(flat) >= min_share]
    return tuple(sorted(result, key=lambda c: -c.share)[:top])


def _absorb(cluster: list[Any], count: int, mean: np.ndarray) -> None:
    total = cluster[0] + int(count)
    cluster[1] = (cluster[1] * cluster[0] + mean * count) / total
    cluster[0] = total


def _rgb_tuple(mean: np.ndarray) -> tuple[int, int, int]:
    return int(round(mean[0])), int(round(mean[1])), int(round(mean[2]))


def _edge_crispness(luma: np.ndarray) -> float:
    """How abruptly the strongest edges change: the largest one-pixel difference over the local tonal step.

    For the steepest 0.5 % of pixels that sit at a visible step (a 7x7 neighbourhood spanning at least
    ``_CRISP_MIN_STEP`` of luminance), the median of (largest difference to a neighbour) / (neighbourhood range):
    a step from one pixel to the next reads 1, the same step blurred over several pixels reads far less (a Gaussian
    blur of 2 px about 0.23). Judging against the local step, not the whole image's range, keeps a faint but sharp
    edge from reading as soft.
    """
    if min(luma.shape) < 2:
        return 0.0
    difference = np.zeros_like(luma)
    across = np.abs(np.diff(luma, axis=1))
    down = np.abs(np.diff(luma, axis=0))
    difference[:, :-1] = np.maximum(difference[:, :-1], across)
    difference[:, 1:] = np.maximum(difference[:, 1:], across)
    difference[:-1, :] = np.maximum(difference[:-1, :], down)
    difference[1:, :] = np.maximum(difference[1:, :], down)
    step = ndimage.maximum_filter(luma, size=7) - ndimage.minimum_filter(luma, size=7)
    visible = step >= _CRISP_MIN_STEP
    if not visible.any():
        return 0.0
    differences, steps = difference[visible], step[visible]
    count = max(_CRISP_MIN_PIXELS, differences.size // 200)
    steepest = np.argsort(differences, kind="stable")[-count:]
    return min(1.0, float(np.median(differences[steepest] / steps[steepest])))


def _edge_orientation_shares(gx: np.ndarray, gy: np.ndarray, magnitude: np.ndarray,
                             edges: np.ndarray) -> tuple[float, float, float]:
    weight = magnitude[edges]
    if weight.size == 0:
        return 0.0, 0.0, 0.0
    # An edge runs perpendicular to its gradient: a vertical gradient means a horizontal edge.
    gradient_angle = np.degrees(np.arctan2(np.abs(gy[edges]), np.abs(gx[edges])))  # 0 .. 90
    total = weight.sum()
    horizontal = weight[gradient_angle >= 67.5].sum() / total
    vertical = weight[gradient_angle <= 22.5].sum() / total
    return _r(horizontal), _r(vertical), _r(1.0 - horizontal - vertical)


def _tilt(gx: np.ndarray, gy: np.ndarray, edges: np.ndarray) -> tuple[float | None, float]:
    """Angle of the longest near-horizontal straight edge: a Hough-style vote gated by gradient orientation.

    Each strong-edge pixel has a local edge angle from its gradient. For a candidate angle, the pixels whose own
    angle agrees (within ``_TILT_AGREEMENT`` degrees) are projected on the line's normal; a straight line piles
    them into one narrow band. The line counts when that band holds clearly more pixels than an even spread of
    the same pixels would, and when it spans at least half the frame width.
    """
    height, width = edges.shape
    ys, xs = np.nonzero(edges & (np.abs(gy) > 0))
    # The gradient of a line rising to the right at angle a is (sin a, cos a) with y pointing down.
    angles = np.degrees(np.arctan(gx[ys, xs] / gy[ys, xs]))
    near = np.abs(angles) <= TILT_RANGE + _TILT_AGREEMENT
    xs, ys, angles = xs[near].astype(np.float64), ys[near].astype(np.float64), angles[near]
    if xs.size < _TILT_MIN_PIXELS or width < _TILT_MIN_WIDTH:
        return None, 0.0

    def projection(angle: float, voters: np.ndarray) -> np.ndarray:
        theta = math.radians(angle)
        rho = xs[voters] * math.sin(theta) + ys[voters] * math.cos(theta)
        return np.bincount((rho - rho.min()).astype(np.int64))

    def support(angle: float, voters: np.ndarray | None = None) -> float:
        voters = np.abs(angles - angle) <= _TILT_AGREEMENT if voters is None else voters
        if voters.sum() < _TILT_MIN_PIXELS:
            return 0.0
        bands = np.convolve(projection(angle, voters), np.ones(3), mode="same")  # 3 px: stair-stepped lines
        theta = math.radians(angle)
        # What a band would hold if the same pixels were spread evenly over the frame (texture, noise).
        baseline = 3.0 * voters.sum() / (height * math.cos(theta) + width * abs(math.sin(theta)))
        return float(bands.max() - baseline)

    coarse = float(max(np.arange(-TILT_RANGE, TILT_RANGE + 1e-9, 0.5), key=lambda a: (support(float(a)), -abs(a))))
    # Refine with the voters fixed (a stair-stepped line's pixels disagree about their own angle, and a vote set
    # that changed with the candidate would bias the answer) by the concentration of the projection, which
    # peaks at the exact angle where a band count would plateau.
    voters = np.abs(angles - coarse) <= _TILT_AGREEMENT
    fine = np.arange(max(-TILT_RANGE, coarse - 1.0), min(TILT_RANGE, coarse + 1.0) + 1e-9, 0.05)
    best = float(max(fine, key=lambda a: (float((projection(float(a), voters).astype(np.float64) ** 2).sum()), -abs(a))))
    if support(best, voters) / width < TILT_MIN_SUPPORT:
        return None, 0.0
    theta = math.radians(best)
    rho = xs[voters] * math.sin(theta) + ys[voters] * math.cos(theta)
    offsets = rho - rho.min()
    peak = int(np.argmax(np.convolve(np.bincount(offsets.astype(np.int64)), np.ones(3), mode="same")))
    extent = np.unique(xs[voters][np.abs(offsets.astype(np.int64) - peak) <= 1]).size / width
    if extent < TILT_MIN_EXTENT:
        return None, _r(extent)
    return _r(best, 2) + 0.0, _r(extent)


def _symmetry(working: Image.Image) -> float:
    coarse = _fit(working.convert("L"), 64)
    values = np.asarray(coarse, dtype=np.float64)
    centred = values - values.mean()
    energy = float((centred**2).sum())
    if energy < 1e-6:
        return 1.0  # a uniform image is its own mirror
    return _r(max(0.0, float((centred * centred[:, ::-1]).sum()) / energy))


def _srgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = linear @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]).T
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def _salient_mass(working: Image.Image) -> tuple[tuple[float, float], float, float]:
    """Centroid, area and spread of what stands out: Lab distance of a lightly blurred copy from the mean colour.

    Only pixels more distinct than the average pixel carry weight, so a plain background does not drag the
    centroid toward the middle.
    """
    radius = max(1.0, max(working.size) / 256)
    lab = _srgb_to_lab(np.asarray(working.filter(ImageFilter.GaussianBlur(radius)), dtype=np.float64) / 255.0)
    distinct = np.linalg.norm(lab - lab.reshape(-1, 3).mean(axis=0), axis=2)
    weight = np.clip(distinct - distinct.mean(), 0.0, None)
    total = float(weight.sum())
    if total <= 1e-9:
        return (0.5, 0.5), 0.0, 0.0
    height, width = weight.shape
    xs = (np.arange(width) + 0.5) / width
    ys = (np.arange(height) + 0.5) / height
    cx = float((weight.sum(axis=0) * xs).sum() / total)
    cy = float((weight.sum(axis=1) * ys).sum() / total)
    variance = float((weight.sum(axis=0) * (xs - cx) ** 2).sum() / total
                     + (weight.sum(axis=1) * (ys - cy) ** 2).sum() / total)
    return (cx, cy), float(np.mean(weight > 0)), math.sqrt(variance)
