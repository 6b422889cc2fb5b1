"""The lattice route's retrieval: periodic images keyed by their lattice (period, angle) and mean colour.

Why: a crop or a turned copy of a periodic pattern (stripes, checks, plaid) of a few repeats is often never a
candidate of the hash index: the pattern lies inside pHash's 8 x 8 DCT band and its phase moves with a crop
window's scale, so every window hash is 8-16 bits off (bench/README.md, "Still open: retrieval").  What a crop or
a turn changes only a little is the lattice itself: a crop of up to 15 % a side changes its period (in units of
the frame's height) by at most 18 %, a turn zoomed to fill by up to 45 %; its angle moves by the turn (up to
12 degrees); the mean colour barely moves.  So each periodic image is keyed by up to two lattice vectors and its
mean (Cb, Cr); candidates are the images whose keys lie within those bounds, nearest first, at most ``k`` of
them; and each candidate pair carries the hypothesis the two lattices give (scale = ratio of periods, rotation =
difference of angles) for the verification to start from.

Scaling: the keys sit in a grid of buckets (a period band, an angle band, a colour cell), so a query reads only
the 3 x 3 x 3 x 3 neighbouring buckets of each of its vectors, never the whole index; only images whose texture
square repeats are indexed (2-3 % of rendered photographs), and each query yields at most ``k`` candidates, so
verification is linear in the number of images.  Memory: about 100 bytes per periodic image.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from itertools import product

import numpy as np
from scipy import ndimage

SPECTRUM_PAD = 256  # the texture square's spectrum is taken on this padded grid: 0.19 bins of a 48 px square a step
MIN_CYCLES = 1.8  # lowest frequency (cycles a square side) taken for a lattice: below it, the broad layout and labels
MAX_CYCLES_SHARE = 0.4  # highest frequency as a share of the square's side in pixels (Nyquist is 0.5): aliasing
MIN_SECOND_POWER = 0.25  # a second lattice vector needs this share of the first's spectral power
MIN_VECTOR_DEGREES = 20.0  # a second lattice vector must point this far from the first (its harmonics do not count)


@dataclass(frozen=True)
class LatticeVector:
    """One direction of a periodic pattern: its period in units of the frame's height and the angle of its wave
    vector in degrees, [0, 180), in image coordinates (x right, y down)."""

    period: float
    degrees: float


@dataclass(frozen=True)
class Lattice:
    """What the lattice route keys an image by: its strongest lattice vectors (one for stripes, two for checks and
    plaid, :func:`lattice_vectors`), its mean (Cb, Cr) and grey level, 0..255, and its pattern's contrast (another
    palette in the same weave has the same shapes: its brightness or contrast differ)."""

    vectors: tuple[LatticeVector, ...]
    colour: tuple[float, float]
    luma: float
    contrast: float


@dataclass(frozen=True)
class LatticeBounds:
    """How far two lattices of one pattern may lie apart (a crop or a turn zoomed to fill, see the module doc)."""

    max_scale: float = 1.6  # ratio of periods, either way
    max_degrees: float = 16.0  # difference of angles
    max_colour: float = 24.0  # distance of the mean (Cb, Cr)
    max_luma_shift: float = 12.0  # difference of the mean grey levels
    max_contrast_ratio: float = 1.25  # ratio of the contrasts, either way

    def compatible(self, a: Lattice, b: Lattice) -> bool:
        """Whether two lattices' colour, grey level and contrast allow one pattern."""
        return math.dist(a.colour, b.colour) <= self.max_colour and self.same_tone(a.luma, b.luma, a.contrast, b.contrast)

    def same_tone(self, luma_a: float, luma_b: float, contrast_a: float, contrast_b: float) -> bool:
        """Whether two patterns' mean grey levels and contrasts are close enough for one pattern."""
        ratio = max(contrast_a, 1e-6) / max(contrast_b, 1e-6)
        return abs(luma_a - luma_b) <= self.max_luma_shift and abs(math.log(ratio)) <= math.log(self.max_contrast_ratio)


@lru_cache(maxsize=4)
def _spectrum_grid(side: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Hann window of a side x side square, and the (fx, fy) frequency (cycles a side) and usable-band mask of its
    padded half-plane spectrum."""
    window = np.outer(np.hanning(side), np.hanning(side))
    fy, fx = np.meshgrid(np.fft.fftfreq(SPECTRUM_PAD) * side, np.fft.rfftfreq(SPECTRUM_PAD) * side, indexing="ij")
    radius = np.hypot(fx, fy)
    band = (radius >= MIN_CYCLES) & (radius <= MAX_CYCLES_SHARE * side)
    return window, fx, fy, band


def _refined(power: np.ndarray, y: int, x: int) -> tuple[float, float]:
    """Sub-bin (y, x) of a spectral peak: a parabola through the log power on each axis."""
    def offset(left: float, centre: float, right: float) -> float:
        curve = left - 2 * centre + right
        return 0.0 if curve >= 0 else 0.5 * (left - right) / curve

    logs = np.log(np.maximum(power, 1e-12))
    rows, cols = power.shape
    dy = offset(logs[(y - 1) % rows, x], logs[y, x], logs[(y + 1) % rows, x])
    dx = offset(logs[y, x - 1], logs[y, x], logs[y, x + 1]) if 0 < x < cols - 1 else 0.0
    return y + dy, x + dx


def lattice_vectors(square: np.ndarray, aspect: float) -> tuple[LatticeVector, ...]:
    """The lattice vectors of a texture square (grey, the frame's centred square of side min(width, height)), for a
    frame of ``aspect`` (width / height): the strongest peak of the windowed square's spectrum in the usable band,
    and the strongest one pointing at least MIN_VECTOR_DEGREES away with MIN_SECOND_POWER of its power.  Periods are
    in units of the frame's height, so a crop's and its original's compare directly."""
    side = square.shape[0]
    window, fx, fy, band = _spectrum_grid(side)
    values = square.astype(np.float64)
    power = np.abs(np.fft.rfft2((values - values.mean()) * window, s=(SPECTRUM_PAD, SPECTRUM_PAD))) ** 2
    power = np.where(band, power, 0.0)
    peaks = band & (power > 0) & (power >= ndimage.maximum_filter(power, size=5, mode="wrap"))
    ys, xs = np.nonzero(peaks)
    vectors: list[LatticeVector] = []
    first_power = 0.0
    cycles_per_bin = side / SPECTRUM_PAD
    for i in np.argsort(-power[ys, xs], kind="stable")[:16]:
        y, x = _refined(power, int(ys[i]), int(xs[i]))
        f_y = ((y + SPECTRUM_PAD / 2) % SPECTRUM_PAD - SPECTRUM_PAD / 2) * cycles_per_bin
        f_x = x * cycles_per_bin
        degrees = math.degrees(math.atan2(f_y, f_x)) % 180.0
        if vectors:
            if power[ys[i], xs[i]] < MIN_SECOND_POWER * first_power:
                break
            if angle_between(degrees, vectors[0].degrees) < MIN_VECTOR_DEGREES:
                continue
        else:
            first_power = float(power[ys[i], xs[i]])
        vectors.append(LatticeVector(period=min(aspect, 1.0) / math.hypot(f_x, f_y), degrees=degrees))
        if len(vectors) == 2:
            break
    return tuple(vectors)


def angle_between(a: float, b: float) -> float:
    """The smaller angle between two directions given mod 180 degrees."""
    d = abs(a - b) % 180.0
    return min(d, 180.0 - d)


def hypotheses(indexed: Lattice, query: Lattice, bounds: LatticeBounds) -> list[tuple[float, float]]:
    """(scale, degrees) that map the query image's frame onto the indexed image's (the :class:`Alignment`
    convention p_indexed = scale * R(degrees) * p_query) for each pair of lattice vectors within ``bounds``,
    closest first; empty when their colour, grey level or contrast differ too much (:meth:`LatticeBounds.compatible`)."""
    if not bounds.compatible(indexed, query):
        return []
    found: list[tuple[float, float, float]] = []
    for a, b in product(indexed.vectors, query.vectors):
        scale = a.period / b.period
        degrees = (a.degrees - b.degrees + 90.0) % 180.0 - 90.0
        if abs(math.log(scale)) <= math.log(bounds.max_scale) and abs(degrees) <= bounds.max_degrees:
            found.append((_distance(scale, degrees, bounds), scale, degrees))
    return [(scale, degrees) for _, scale, degrees in sorted(found)]


def _distance(scale: float, degrees: float, bounds: LatticeBounds) -> float:
    return (math.log(scale) / math.log(bounds.max_scale)) ** 2 + (degrees / bounds.max_degrees) ** 2


class LatticeIndex:
    """Periodic images' lattices in a grid of buckets, for :meth:`nearest` (see the module doc for why and how it
    scales)."""

    def __init__(self, bounds: LatticeBounds) -> None:
        self.bounds = bounds
        self._angle_bins = max(1, int(180.0 // bounds.max_degrees))
        self._buckets: defaultdict[tuple[int, int, int, int], list[int]] = defaultdict(list)
        self._lattices: dict[int, Lattice] = {}

    def __len__(self) -> int:
        return len(self._lattices)

    def nbytes(self) -> int:
        """Rough bytes held: the lattices and their bucket entries (Python objects)."""
        return 100 * len(self._lattices)

    def _bucket(self, vector: LatticeVector, colour: tuple[float, float]) -> tuple[int, int, int, int]:
        return (math.floor(math.log(vector.period) / math.log(self.bounds.max_scale)),
                int(vector.degrees / (180.0 / self._angle_bins)) % self._angle_bins,
                math.floor(colour[0] / self.bounds.max_colour), math.floor(colour[1] / self.bounds.max_colour))

    def add(self, item: int, lattice: Lattice) -> None:
        if item in self._lattices:
            raise ValueError(f"item {item} is already indexed")
        self._lattices[item] = lattice
        for key in {self._bucket(v, lattice.colour) for v in lattice.vectors}:
            self._buckets[key].append(item)

    def ranked(self, lattice: Lattice, before: int | None = None) -> list[tuple[float, int, list[tuple[float, float]]]]:
        """Indexed items (ids below ``before``, when given) whose lattice lies within the bounds of ``lattice``, as
        (distance, item, hypotheses), closest first: hypotheses as :func:`hypotheses` gives them, the distance that
        of the closest hypothesis plus the colours'."""
        seen: set[int] = set()
        for vector in lattice.vectors:
            period, angle, cb, cr = self._bucket(vector, lattice.colour)
            for dp, da, dcb, dcr in product((-1, 0, 1), repeat=4):
                seen.update(self._buckets.get((period + dp, (angle + da) % self._angle_bins, cb + dcb, cr + dcr), ()))
        ranked: list[tuple[float, int, list[tuple[float, float]]]] = []
        for item in seen:
            if before is not None and item >= before:
                continue
            found = hypotheses(self._lattices[item], lattice, self.bounds)
            if found:
                distance = _distance(*found[0], self.bounds) + (math.dist(self._lattices[item].colour, lattice.colour) / self.bounds.max_colour) ** 2
                ranked.append((distance, item, found))
        return sorted(ranked)


def nearest(ranked: list[list[tuple[float, int, list[tuple[float, float]]]]], k: int) -> dict[int, list[tuple[float, float]]]:
    """The ``k`` closest items of one or more :meth:`LatticeIndex.ranked` answers, with their hypotheses."""
    return {item: found for _, item, found in sorted(r for answer in ranked for r in answer)[:k]}
