"""Perceptual near-duplicate detection: signatures, sub-quadratic retrieval, per-pair verification.

Why this shape: plain pHash misses flipped, rotated and cropped copies, and a
large Hamming radius merges look-alikes.  So each image gets several *views*
hashed with pHash (full frame, mirrored frame, crop windows, rotation-centre
windows, de-rotated frames); a new image's views are looked up in
multi-index-hashing tables of the earlier images' complementary views within a
small radius, which yields candidates *and* a geometric hypothesis (which
window, which angle, mirrored or not).  Each candidate pair is then verified by
aligning two 32 px thumbnails around that hypothesis and requiring a high
zero-mean normalised correlation of luminance (brightness-robust), enough
overlap (barely-overlapping crops of one scene fail), agreeing chroma
(recoloured layouts fail) and correlated fine structure (high-pass luminance:
distinct renders of one template, whose broad layout correlates > 0.9, fail).
No step compares all pairs.

Periodic patterns (stripes, checks, plaid) of a few repeats defeat the 32 px
thumbnail and the 8 x 8 colour cells, whose content moves with the pattern's
phase; where the frame tests refuse a candidate and both images repeat, the
texture route (:func:`verify_texture`) judges it on a 48 px centred square
that resolves the repeats.  Such copies are often never retrieved by the hashes (a pattern of a few repeats lies
inside pHash's 8 x 8 DCT band and its phase moves with a crop), so images whose squares repeat are also indexed by
their lattice (:mod:`~assets.image_pool.logic.lattice`): each such image's nearest lattices are candidates too,
verified by the texture route from the (scale, rotation) the two lattices give.

The 64 px grey base is reduced with a Lanczos filter: a box filter lets fine
textures (brick, gravel, fabric) alias differently at every scale, so a
resized copy of a texture lost its pHash.

Speed: all derived views are sampled from one 64 px grey copy by a
cached sparse bilinear matrix (one per base shape) and hashed together by
:func:`batched_phash` (imagehash's pHash algorithm as two batched matrix
products); the full-frame pHash and dHash come from imagehash itself.

Memory at 10^6 images: the matcher keeps 26 codes per image in numpy arrays
(~1.5 KB with 4 chunks), a 4-byte aspect and the caller's key; thumbnails
(~3.5 KB a row in the store) are fetched through ``load_signatures`` when a
candidate needs verifying; the lattice index adds ~100 bytes per image whose texture square repeats.

Exact duplicates are removed before this stage; this module never decodes
anything but the one image it is given.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Generic, TypeVar

import imagehash
import numpy as np
from PIL import Image, ImageOps
from scipy import ndimage, sparse

from assets.image_pool.logic.hamming_index import Hits, MultiIndexHammingIndex
from assets.image_pool.logic.lattice import Lattice, LatticeBounds, LatticeIndex, lattice_vectors, nearest

K = TypeVar("K", bound=Hashable)

SIGNATURE_VERSION = 4  # 4: a texture square joins the luminance thumbnail; 3: the grey base reduced with Lanczos
HASH_BASE_SIDE = 64  # long side of the grey image every hash is computed from
MIN_SIGNATURE_SIDE = 8  # shorter side below which an image has too few pixels for the 8 x 8 hashes
THUMB_SIDE = 32  # verification luminance thumbnail (squashed to a square)
CHROMA_SIDE = 8  # verification chroma thumbnail (Cb, Cr; squashed)
TEXTURE_SIDE = 48  # texture square: the frame's centred square, grey, unsquashed (12 repeats: 4 px each)
WINDOW_SCALES: tuple[float, ...] = (0.95, 0.90, 0.85)  # crop windows: side kept, as a fraction
WINDOW_ANCHORS: tuple[tuple[float, float], ...] = ((0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (0.5, 0.5))
ROTATION_STEPS_DEG: tuple[float, ...] = (4.0, 8.0, 12.0)  # de-rotation angles tried (both signs)

_MASK64 = (1 << 64) - 1


def to_signed64(code: int) -> int:
    """Unsigned 64-bit hash -> the signed value a DuckDB BIGINT column can hold."""
    return code - (1 << 64) if code >= 1 << 63 else code


def from_signed64(value: int) -> int:
    """Inverse of :func:`to_signed64`."""
    return value & _MASK64


def fill_zoom(degrees: float, aspect: float) -> float:
    """Zoom that makes a frame rotated by ``degrees`` fill the original frame (no empty corners)."""
    theta = math.radians(abs(degrees))
    return math.cos(theta) + max(aspect, 1.0 / aspect) * math.sin(theta)


# --------------------------------------------------------------------------
# signatures
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class PerceptualHashes:
    """The hash ints the index needs (unsigned 64-bit); ~200 bytes per image."""

    phash: int
    dhash: int
    phash_mirror: int
    window_hashes: tuple[int, ...]  # pHash of each crop window, WINDOW_SCALES x WINDOW_ANCHORS
    centre_hashes: tuple[int, ...]  # pHash of the centre window a rotation by each ROTATION_STEPS_DEG keeps
    derotated_hashes: tuple[int, ...]  # pHash of the frame rotated by -a, +a for each a in ROTATION_STEPS_DEG
    aspect_milli: int  # width / height x 1000, needed to place crop windows

    @property
    def aspect(self) -> float:
        return self.aspect_milli / 1000

    def views_to_bytes(self) -> bytes:
        codes = (*self.window_hashes, *self.centre_hashes, *self.derotated_hashes)
        return struct.pack(f">{len(codes)}Q", *codes)

    def to_record(self) -> dict[str, int | bytes]:
        return {
            "phash": to_signed64(self.phash),
            "dhash": to_signed64(self.dhash),
            "phash_mirror": to_signed64(self.phash_mirror),
            "view_hashes": self.views_to_bytes(),
            "aspect_milli": self.aspect_milli,
        }

    @classmethod
    def from_record(cls, record: dict[str, int | bytes]) -> PerceptualHashes:
        """Read only the hash columns (enough for :meth:`PerceptualMatcher.index_existing`)."""
        views = record["view_hashes"]
        n_windows, n_centres = len(WINDOW_SCALES) * len(WINDOW_ANCHORS), len(ROTATION_STEPS_DEG)
        expected = 8 * (n_windows + 3 * n_centres)
        if not isinstance(views, bytes) or len(views) != expected:
            raise ValueError(f"view_hashes must be {expected} bytes, got {type(views).__name__} of {len(views)}")
        codes = struct.unpack(f">{expected // 8}Q", views)
        aspect_milli = int(record["aspect_milli"])
        if aspect_milli <= 0:
            raise ValueError(f"aspect_milli must be positive, got {aspect_milli}")
        return cls(
            phash=from_signed64(int(record["phash"])),
            dhash=from_signed64(int(record["dhash"])),
            phash_mirror=from_signed64(int(record["phash_mirror"])),
            window_hashes=codes[:n_windows],
            centre_hashes=codes[n_windows : n_windows + n_centres],
            derotated_hashes=codes[n_windows + n_centres :],
            aspect_milli=aspect_milli,
        )


@dataclass(frozen=True)
class PerceptualSignature:
    """Hashes plus ~3.5 KB of verification thumbnails; ``to_record`` fits one DuckDB row."""

    hashes: PerceptualHashes
    thumb_luma: np.ndarray = field(repr=False)  # (THUMB_SIDE, THUMB_SIDE) uint8
    thumb_chroma: np.ndarray = field(repr=False)  # (2, CHROMA_SIDE, CHROMA_SIDE) uint8: Cb, Cr
    thumb_texture: np.ndarray = field(repr=False)  # (TEXTURE_SIDE, TEXTURE_SIDE) uint8: centred square, grey

    @property
    def phash(self) -> int:
        return self.hashes.phash

    @property
    def dhash(self) -> int:
        return self.hashes.dhash

    @property
    def aspect(self) -> float:
        return self.hashes.aspect

    @cached_property
    def luma(self) -> np.ndarray:
        """Luminance thumbnail as float32, converted once per signature for verification."""
        return self.thumb_luma.astype(np.float32)

    @cached_property
    def structure(self) -> np.ndarray:
        """High-pass luminance (:func:`high_pass`), the fine structure verification compares."""
        return high_pass(self.luma)

    @cached_property
    def texture(self) -> np.ndarray:
        """The texture square as float32."""
        return self.thumb_texture.astype(np.float32)

    @cached_property
    def texture_luma(self) -> float:
        """Mean grey level of the texture square."""
        return float(self.texture.mean())

    @cached_property
    def texture_contrast(self) -> float:
        """Standard deviation of the texture square's high-pass (the pattern's contrast)."""
        return float(high_pass(self.texture, _TEXTURE_BLUR).std())

    @cached_property
    def periodicity(self) -> float:
        """:func:`periodicity` of the texture square, computed once per signature (the matcher asks it of every new
        image: the lattice route's gate)."""
        return periodicity(self.texture)

    @cached_property
    def lattice(self) -> Lattice:
        """The lattice route's key: the texture square's lattice vectors, the mean colour and grey level, the contrast."""
        cb, cr = self.thumb_chroma.reshape(2, -1).mean(axis=1).tolist()
        return Lattice(lattice_vectors(self.thumb_texture, self.aspect), (cb, cr), self.texture_luma,
                       self.texture_contrast)

    @cached_property
    def chroma(self) -> np.ndarray:
        """(Cb, Cr) thumbnail centred on grey (0), as float32."""
        return self.thumb_chroma.astype(np.float32) - 128.0

    def to_record(self) -> dict[str, int | bytes]:
        """Columns: phash, dhash, phash_mirror (signed BIGINT), view_hashes, thumb_luma, thumb_chroma (BLOB), aspect_milli, signature_version (INTEGER).

        ``thumb_luma`` holds both grey thumbnails, the squashed one then the texture square.
        """
        return {
            **self.hashes.to_record(),
            "thumb_luma": self.thumb_luma.astype(np.uint8).tobytes() + self.thumb_texture.astype(np.uint8).tobytes(),
            "thumb_chroma": self.thumb_chroma.astype(np.uint8).tobytes(),
            "signature_version": SIGNATURE_VERSION,
        }

    @classmethod
    def from_record(cls, record: dict[str, int | bytes]) -> PerceptualSignature:
        version = record.get("signature_version")
        if version != SIGNATURE_VERSION:
            raise ValueError(f"signature_version {version!r} is not {SIGNATURE_VERSION}; recompute the signature")
        luma, chroma = record["thumb_luma"], record["thumb_chroma"]
        if not isinstance(luma, bytes) or len(luma) != THUMB_SIDE**2 + TEXTURE_SIDE**2:
            raise ValueError(f"thumb_luma must be {THUMB_SIDE**2 + TEXTURE_SIDE**2} bytes")
        if not isinstance(chroma, bytes) or len(chroma) != 2 * CHROMA_SIDE**2:
            raise ValueError(f"thumb_chroma must be {2 * CHROMA_SIDE**2} bytes")
        return cls(
            hashes=PerceptualHashes.from_record(record),
            thumb_luma=np.frombuffer(luma[: THUMB_SIDE**2], dtype=np.uint8).reshape(THUMB_SIDE, THUMB_SIDE),
            thumb_chroma=np.frombuffer(chroma, dtype=np.uint8).reshape(2, CHROMA_SIDE, CHROMA_SIDE),
            thumb_texture=np.frombuffer(luma[THUMB_SIDE**2 :], dtype=np.uint8).reshape(TEXTURE_SIDE, TEXTURE_SIDE),
        )


def _hash_int(image_hash: imagehash.ImageHash) -> int:
    return int(np.packbits(image_hash.hash.flatten()).view(">u8")[0])


PHASH_SIDE = 32  # imagehash.phash: 32 px grey square, lowest 8 x 8 DCT-II terms
# Unnormalised DCT-II rows 0..7, as scipy.fftpack.dct(type=2) computes them (the factor 2 does not change any bit).
_DCT = 2 * np.cos(np.pi * np.outer(np.arange(8), 2 * np.arange(PHASH_SIDE) + 1) / (2 * PHASH_SIDE))


def batched_phash(pixels: np.ndarray) -> list[int]:
    """imagehash.phash bits of many 32 x 32 grey squares, (n, 32, 32), in two batched matrix products.

    Same algorithm as imagehash.phash (DCT-II along both axes, the 8 x 8
    lowest-frequency terms compared with their median, row-major bits), minus
    its resize: the squares are given.  Tested bit-for-bit against imagehash.
    """
    low = _DCT @ np.asarray(pixels, dtype=np.float64) @ _DCT.T  # (n, 8, 8)
    flat = low.reshape(len(low), 64)
    bits = flat > np.median(flat, axis=1, keepdims=True)
    return [int(x) for x in np.packbits(bits, axis=1).view(">u8")[:, 0]]


def _window_view(scale: float, anchor: tuple[float, float], aspect: float) -> Alignment:
    """The crop window keeping ``scale`` of each side at ``anchor`` (0 = left/top, 1 = right/bottom)."""
    return Alignment(scale=scale, dx=(anchor[0] - 0.5) * (1 - scale) * aspect, dy=(anchor[1] - 0.5) * (1 - scale))


def hashed_views(aspect: float) -> list[Alignment]:
    """Every view hashed besides the full frame: mirror, crop windows, rotation-centre windows, de-rotated frames."""
    views = [Alignment(mirror=True)]
    views += [_window_view(s, a, aspect) for s in WINDOW_SCALES for a in WINDOW_ANCHORS]
    views += [Alignment(scale=fill_zoom(a, aspect) ** -2) for a in ROTATION_STEPS_DEG]
    views += [Alignment(scale=1 / fill_zoom(a, aspect), degrees=sign * a) for a in ROTATION_STEPS_DEG for sign in (-1, 1)]
    return views


@lru_cache(maxsize=256)
def _view_sampler(width: int, height: int) -> sparse.csr_matrix:
    """Sparse (views x 32 x 32, height x width) bilinear sampling matrix of every hashed view of a base grey image.

    Depends only on the base image's shape (the aspect is taken from it), so
    it is built once per shape; sampling all views is then one sparse product.
    """
    aspect = width / height
    xs, ys = _centred_grid(PHASH_SIDE, aspect)
    u, v = _map_points(hashed_views(aspect), xs, ys, aspect)
    x = np.clip(u.ravel() * width - 0.5, 0, width - 1.0001)
    y = np.clip(v.ravel() * height - 0.5, 0, height - 1.0001)
    x0, y0 = x.astype(np.intp), y.astype(np.intp)
    fx, fy = x - x0, y - y0
    rows = np.tile(np.arange(len(x)), 4)
    cols = np.concatenate([y0 * width + x0, y0 * width + x0 + 1, (y0 + 1) * width + x0, (y0 + 1) * width + x0 + 1])
    weights = np.concatenate([(1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy])
    return sparse.csr_matrix((weights, (rows, cols)), shape=(len(x), width * height))


def compute_signature(img: Image.Image) -> PerceptualSignature:
    """Signature of an RGB, orientation-corrected image; all hashes come from one small grey copy."""
    if img.mode != "RGB":
        raise ValueError(f"compute_signature needs an RGB image, got mode {img.mode}")
    if min(img.size) < MIN_SIGNATURE_SIDE:
        raise ValueError(f"image {img.size} is too small for a perceptual signature")
    aspect = img.width / img.height
    scale = HASH_BASE_SIDE / max(img.size)
    base_size = (max(8, round(img.width * scale)), max(8, round(img.height * scale)))
    small = img.resize(base_size, Image.Resampling.LANCZOS if scale < 1 else Image.Resampling.BILINEAR, reducing_gap=3.0 if scale < 1 else None)
    gray = small.convert("L")
    samples = _view_sampler(*base_size) @ np.asarray(gray, dtype=np.float64).ravel()
    codes = batched_phash(samples.reshape(-1, PHASH_SIDE, PHASH_SIDE))
    n_windows, n_steps = len(WINDOW_SCALES) * len(WINDOW_ANCHORS), len(ROTATION_STEPS_DEG)
    hashes = PerceptualHashes(
        phash=_hash_int(imagehash.phash(gray)),
        dhash=_hash_int(imagehash.dhash(gray)),
        phash_mirror=codes[0],
        window_hashes=tuple(codes[1 : 1 + n_windows]),
        centre_hashes=tuple(codes[1 + n_windows : 1 + n_windows + n_steps]),
        derotated_hashes=tuple(codes[1 + n_windows + n_steps :]),
        aspect_milli=round(aspect * 1000),
    )
    thumb_luma = np.asarray(gray.resize((THUMB_SIDE, THUMB_SIDE), Image.Resampling.BOX), dtype=np.uint8)
    ycc = small.resize((CHROMA_SIDE, CHROMA_SIDE), Image.Resampling.BOX).convert("YCbCr")
    thumb_chroma = np.asarray(ycc, dtype=np.uint8)[:, :, 1:].transpose(2, 0, 1).copy()
    return PerceptualSignature(hashes=hashes, thumb_luma=thumb_luma, thumb_chroma=thumb_chroma,
                               thumb_texture=texture_square(img))


def texture_square(img: Image.Image) -> np.ndarray:
    """The frame's centred square (side: the short side), grey, reduced to TEXTURE_SIDE with Lanczos.

    Why unsquashed and apart from the 64 px base: a pattern of 12 repeats across the short side of a 2.5:1
    frame is about two pixels a period there and one in the squashed 32 px thumbnail, so a stripe and a
    check of one palette look alike; here each repeat keeps about four pixels.
    """
    side = min(img.size)
    left, top = (img.width - side) // 2, (img.height - side) // 2
    square = img.crop((left, top, left + side, top + side)).convert("L")
    reduce = side > TEXTURE_SIDE
    resample = Image.Resampling.LANCZOS if reduce else Image.Resampling.BILINEAR
    return np.asarray(square.resize((TEXTURE_SIDE, TEXTURE_SIDE), resample, reducing_gap=3.0 if reduce else None), dtype=np.uint8)


def signature_from_path(path: str | Path) -> PerceptualSignature:
    """Decode at reduced scale (JPEG DCT scaling via ``draft``), fix orientation, then :func:`compute_signature`.

    ``draft`` keeps both sides at least HASH_BASE_SIDE, so the signature sees
    at least as many pixels as it uses; the rest of the reduction is the same
    Lanczos filter as for a fully decoded image.
    """
    with Image.open(path) as img:
        if img.format == "JPEG":
            img.draft("RGB", (HASH_BASE_SIDE, HASH_BASE_SIDE))
        upright = ImageOps.exif_transpose(img)
        return compute_signature(upright.convert("RGB"))


# --------------------------------------------------------------------------
# verification
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Alignment:
    """Maps the query image B onto the indexed image A, in height-normalised, centred coordinates.

    p_A = scale * R(degrees) * (mirror ? -stretch : stretch, 1) * p_B + (dx, dy), where
    p = ((u - 0.5) * aspect, v - 0.5) for normalised pixel position (u, v). ``stretch`` widens B
    against its height: a copy resized to another aspect ratio (4:3 stored as 1:1) maps back with
    stretch = aspect_A / aspect_B.
    """

    scale: float = 1.0
    degrees: float = 0.0
    dx: float = 0.0
    dy: float = 0.0
    mirror: bool = False
    stretch: float = 1.0

    def covered(self, overlap: float, aspect_a: float, aspect_b: float) -> tuple[float, float]:
        """(share of A's frame that B shows, share of B's frame that A shows), from the share of B inside A."""
        b_in_a = overlap * self.scale**2 * self.stretch * aspect_b / aspect_a
        return min(1.0, round(b_in_a, 4)), round(overlap, 4)


@dataclass(frozen=True)
class PerceptualParams:
    """Retrieval radii and verification thresholds (defaults tuned on sample.synth, see bench/README.md)."""

    # Radii <= 7 (with 4 chunks) keep multi-index probes at 1 bit per chunk: 8x fewer probes than radius
    # 8..11. The many view hashes stay at 7 (a copy missed by one view is found by another); the two
    # full-frame hashes are the only route for strong brightness shifts (8-9 bits away), so they get 9.
    phash_radius: int = 9  # full-frame pHash (resize, recompress, brightness)
    dhash_radius: int = 9  # full-frame dHash: catches overlaid logos, which move pHash more than dHash
    mirror_radius: int = 7  # query's mirrored pHash vs indexed pHash (horizontal flips)
    window_radius: int = 7  # crop windows vs full frames (crops up to 15 % per side)
    rotation_radius: int = 7  # de-rotated frames vs rotation-centre windows
    n_chunks: int = 4  # multi-index hashing chunks (4 x 16 bits suits 10^4..10^7 images)
    min_correlation: float = 0.80  # zero-mean normalised luminance correlation after alignment
    trim_fraction: float = 0.12  # share of worst-agreeing pixels ignored (overlays cover <= 10 %)
    min_overlap: float = 0.60  # share of one frame that must lie inside the other (_shared; a 15 % crop keeps 0.72)
    min_chroma_cosine: float = 0.85  # cosine of aligned (Cb, Cr) fields; a hue turned by >= ~32 deg fails
    min_structure_correlation: float = 0.65  # aligned high-pass luminance (edges, small parts); look-alike layouts fail
    structure_trim_fraction: float = 0.05  # share of worst-agreeing high-pass pixels ignored (a logo's edges)
    clipped_luma: float = 240.0  # chroma cells this bright (0..255) in either image are left out of the colour test
    crushed_luma: float = 15.0  # ... and cells this dark
    min_toned_cells: int = 16  # fewer usable cells than this: compare colour over the whole overlap
    grey_chroma_rms: float = 3.0  # chroma RMS (0..128) below which an image counts as grey; both grey: skip the test
    recoloured_cell_chroma: float = 20.0  # chroma distance (0..128) at which a cell counts as painted another colour
    max_recoloured_share: float = 0.3  # share of cells painted another colour above which a pair is refused
    refine_scale: tuple[float, ...] = (0.97, 1.0, 1.03)  # multiplicative scale steps around the hypothesis
    refine_degrees: tuple[float, ...] = (-2.0, 0.0, 2.0)  # rotation steps around the hypothesis
    refine_shift: tuple[float, ...] = (-0.03, 0.0, 0.03)  # translation steps (fraction of height)
    signature_cache_size: int = 4096  # earlier runs' signatures kept after loading
    max_stretch: float = 2.0  # widest aspect change tried for a full-frame match (4:3 stored as 1:1 is 1.33)
    edit_min_residual: float = 1.2  # standardised luminance difference that marks a pixel as locally edited
    edit_min_share: float = 0.01  # locally edited pixels: at least this share of the overlap ...
    edit_max_share: float = 0.15  # ... and at most this (more is a global change, not an overlay)
    edit_min_structure_ratio: float = 1.3  # fine structure there, edited side over the other, to name a side
    min_texture_periodicity: float = 0.45  # both texture squares must repeat (:func:`periodicity`); the lattice route too
    min_texture_correlation: float = 0.92  # texture squares' high-pass correlation (:func:`verify_texture`)
    min_texture_chroma_cosine: float = 0.5  # colour cells spanning a repeat blur; a hue turned >= 60 deg still fails
    # another palette in the same weave correlates as well in grey high-pass; its contrast and brightness differ
    # (bench/dedup.py --hard: true pairs within 1.13x and 4 grey levels; each of the 18 pairs of different textures
    # the lattice route accepted without these bounds lay beyond one of them)
    max_texture_contrast_ratio: float = 1.25  # texture squares' high-pass standard deviations, either way
    max_texture_luma_shift: float = 12.0  # texture squares' mean grey levels (0..255)
    # scale x rotation steps around the frame tests' alignment (a crop window's scale is up to 2.5 % off; at 2 %
    # the repeats at the square's edge are a third of a period out of step for 8 repeats)
    texture_refine_scale: tuple[float, ...] = (0.97, 0.985, 1.0, 1.015, 1.03)
    texture_refine_degrees: tuple[float, ...] = (-1.5, 0.0, 1.5)
    # the lattice route (:mod:`~assets.image_pool.logic.lattice`): candidates among images whose squares repeat
    lattice_neighbours: int = 8  # at most this many candidates a periodic image, nearest lattice first
    lattice_max_scale: float = 1.6  # periods may differ this much either way (a turn zoomed to fill: up to 1.45)
    lattice_max_degrees: float = 16.0  # lattice angles may differ this much (turns up to 12 degrees)
    lattice_max_colour: float = 24.0  # mean (Cb, Cr) may differ this much
    # scale x rotation steps around the two lattices' hypothesis (its scale is a percent or two off)
    lattice_refine_scale: tuple[float, ...] = (0.955, 0.97, 0.985, 1.0, 1.015, 1.03, 1.045)
    lattice_refine_degrees: tuple[float, ...] = (-1.5, 0.0, 1.5)
    lattice_reverse_from: float = 0.75  # one way's texture correlation from which the other way is tried too
    # texture correlation at the hypothesis itself below which the grid is not searched (bench/dedup.py --hard:
    # verified pairs 0.63 and up, 0.84 at the 5th percentile; refused pairs of rendered photographs median 0.39)
    lattice_min_hypothesis_score: float = 0.55

    @property
    def lattice_bounds(self) -> LatticeBounds:
        return LatticeBounds(self.lattice_max_scale, self.lattice_max_degrees, self.lattice_max_colour,
                             self.max_texture_luma_shift, self.max_texture_contrast_ratio)


@dataclass(frozen=True)
class PerceptualMatch(Generic[K]):
    """A verified near-duplicate pair; ``b`` is the newer image, ``a`` the one it matched."""

    a: K
    b: K
    method: str  # "phash" | "dhash" | "phash_mirror" | "crop_window" | "rotation" | "texture" | "lattice" (verify_texture)
    distance: int  # Hamming bits of the retrieving hash pair
    score: float  # best aligned luminance correlation ("texture": the texture squares' high-pass correlation)
    covered_a: float = 1.0  # share of a's frame that b shows (below 1: b is a crop of a)
    covered_b: float = 1.0  # share of b's frame that a shows
    edited: str | None = None  # "a" or "b": the side showing a local overlay the other lacks


@lru_cache(maxsize=4096)
def _centred_grid(side: int, aspect: float) -> tuple[np.ndarray, np.ndarray]:
    """Pixel centres of a side x side grid in centred, height-normalised coordinates (cached: aspects repeat)."""
    centres = (np.arange(side, dtype=np.float64) + 0.5) / side - 0.5
    xs = np.tile(centres * aspect, side)
    ys = np.repeat(centres, side)
    xs.flags.writeable = ys.flags.writeable = False
    return xs, ys


def _bilinear(image: np.ndarray, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``image`` (h, w[, ...]) at normalised (u, v) arrays; returns (values, inside-mask)."""
    side_y, side_x = image.shape[-2:]
    x = u * side_x - 0.5
    y = v * side_y - 0.5
    inside = (x >= -0.5) & (x <= side_x - 0.5) & (y >= -0.5) & (y <= side_y - 0.5)
    x = np.clip(x, 0, side_x - 1.0001)
    y = np.clip(y, 0, side_y - 1.0001)
    x0, y0 = x.astype(np.intp), y.astype(np.intp)
    fx, fy = x - x0, y - y0
    top = image[..., y0, x0] * (1 - fx) + image[..., y0, x0 + 1] * fx
    bottom = image[..., y0 + 1, x0] * (1 - fx) + image[..., y0 + 1, x0 + 1] * fx
    return top * (1 - fy) + bottom * fy, inside


def _map_points(
    alignments: list[Alignment], xs: np.ndarray, ys: np.ndarray, aspect_a: float
) -> tuple[np.ndarray, np.ndarray]:
    """Normalised A coordinates, shape (len(alignments), n_points), of B's centred points."""
    scale = np.array([a.scale for a in alignments])[:, None]
    theta = np.radians([a.degrees for a in alignments])[:, None]
    flip = np.array([-a.stretch if a.mirror else a.stretch for a in alignments])[:, None]
    bx, by = xs[None, :] * flip, ys[None, :]
    cos, sin = np.cos(theta), np.sin(theta)
    ax = scale * (cos * bx - sin * by) + np.array([a.dx for a in alignments])[:, None]
    ay = scale * (sin * bx + cos * by) + np.array([a.dy for a in alignments])[:, None]
    return ax / aspect_a + 0.5, ay + 0.5


def _luma_onto(a: PerceptualSignature, b: PerceptualSignature, alignments: list[Alignment]) -> tuple[np.ndarray, np.ndarray]:
    """A's luminance sampled onto B's THUMB_SIDE grid at each alignment: (values, inside-mask), each (len(alignments), pixels)."""
    xs, ys = _centred_grid(THUMB_SIDE, b.aspect)
    u, v = _map_points(alignments, xs, ys, a.aspect)
    return _bilinear(a.luma, u, v)


def _grid(seed: Alignment, scales: Iterable[float], degrees: Iterable[float], shifts: Iterable[float]) -> list[Alignment]:
    shifts = list(shifts)
    return [
        Alignment(seed.scale * s, seed.degrees + d, seed.dx + tx, seed.dy + ty, seed.mirror, seed.stretch)
        for s in scales
        for d in degrees
        for tx in shifts
        for ty in shifts
    ]


@dataclass(frozen=True)
class Verdict:
    """Outcome of aligning B onto A: accepted, and the numbers that decided it."""

    accepted: bool
    correlation: float
    overlap: float
    chroma_cosine: float
    structure: float  # NaN when an earlier test already failed
    alignment: Alignment
    aligned: bool  # luminance and overlap passed (chroma is NaN when they did not)
    edited: str | None = None  # accepted pairs: "a" or "b" when one side shows a local overlay (:func:`edited_side`)
    texture: bool = False  # accepted by :func:`verify_texture` (correlation and structure: the texture squares')


def _masked_ncc(sampled: np.ndarray, target: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise zero-mean normalised correlation over pixels with weight 1; also the standardised rows."""
    count = np.maximum(weight.sum(axis=1, keepdims=True), 1.0)
    sa = (sampled - (sampled * weight).sum(axis=1, keepdims=True) / count) * weight
    tb = (target - (target * weight).sum(axis=1, keepdims=True) / count) * weight
    norm_a = np.sqrt((sa * sa).sum(axis=1, keepdims=True))
    norm_b = np.sqrt((tb * tb).sum(axis=1, keepdims=True))
    za, zb = sa / np.maximum(norm_a, 1e-6), tb / np.maximum(norm_b, 1e-6)
    ncc = (za * zb).sum(axis=1)
    flat = ((norm_a < 1e-6) | (norm_b < 1e-6))[:, 0]
    return np.where(flat, -1.0, ncc), za, zb


STRUCTURE_SIGMA_PX = 2.0  # Gaussian removed by high_pass, in THUMB_SIDE pixels


def _blur_matrix(side: int, sigma: float) -> np.ndarray:
    """Row-normalised Gaussian (side x side): ``M @ x @ M.T`` blurs a square, renormalised at the borders."""
    offsets = np.arange(side)[:, None] - np.arange(side)[None, :]
    weights = np.exp(-0.5 * (offsets / sigma) ** 2)
    return (weights / weights.sum(axis=1, keepdims=True)).astype(np.float32)


_BLUR = _blur_matrix(THUMB_SIDE, STRUCTURE_SIGMA_PX)


def high_pass(square: np.ndarray, blur: np.ndarray = _BLUR) -> np.ndarray:
    """A square (THUMB_SIDE unless ``blur`` says otherwise) minus its Gaussian blur: the edges and small parts,
    without the broad layout.

    Why: distinct renders of one template (same sky, same figure placement)
    correlate > 0.9 in plain luminance; their fine structure does not.
    """
    return square - blur @ square @ blur.T


def _structure_correlation(a: PerceptualSignature, b: PerceptualSignature, alignment: Alignment, params: PerceptualParams) -> float:
    """Trimmed correlation of B's high-pass luminance with A's luminance sampled onto B's grid and then high-passed.

    Filtering after sampling keeps both maps at B's scale, so crops and
    rotations compare like with like.  The trim is smaller than the luminance
    test's: enough to ignore a logo's edges, not the parts that tell two
    renders of one template apart.
    """
    sampled, inside = _luma_onto(a, b, [alignment])
    structure_a = high_pass(sampled.reshape(THUMB_SIDE, THUMB_SIDE).astype(np.float32)).reshape(1, -1)
    return float(_trimmed_ncc(structure_a, b.structure.reshape(1, -1), inside, params.structure_trim_fraction)[0])


def _trimmed_ncc(sampled: np.ndarray, target: np.ndarray, inside: np.ndarray, trim_fraction: float) -> np.ndarray:
    """Row-wise correlation over the inside pixels, less the ``trim_fraction`` of them that disagree most."""
    weight = inside.astype(np.float32)
    ncc, za, zb = _masked_ncc(sampled, target, weight)
    n_drop = int(trim_fraction * inside.shape[1])
    if not n_drop:
        return ncc
    residual = np.where(inside, np.abs(za - zb), -1.0)
    cut = np.partition(residual, inside.shape[1] - n_drop, axis=1)[:, -n_drop][:, None]
    return _masked_ncc(sampled, target, weight * (residual < cut))[0]


def _correlations(
    a: PerceptualSignature, b: PerceptualSignature, candidates: list[Alignment], params: PerceptualParams
) -> tuple[np.ndarray, np.ndarray]:
    """Per candidate alignment: trimmed luminance correlation (-1 when the overlap is too small) and overlap.

    Trimming drops the ``trim_fraction`` of overlapping pixels that disagree
    most, so a logo or watermark over a few percent of the frame cannot sink
    the score, while a different picture stays uncorrelated everywhere.
    """
    sampled, inside = _luma_onto(a, b, candidates)
    ncc = _trimmed_ncc(sampled, b.luma.reshape(1, -1), inside, params.trim_fraction)
    overlap = inside.mean(axis=1)
    shared = np.array([_shared(alignment, o, a, b) for alignment, o in zip(candidates, overlap.tolist())])
    return np.where(shared >= params.min_overlap, ncc, -1.0), overlap


def _shared(alignment: Alignment, overlap: float, a: PerceptualSignature, b: PerceptualSignature) -> float:
    """The larger of B's share inside A and A's share inside B: how much of one frame the other shows.

    Why the larger: a copy cut or turned from a picture lies wholly inside it whichever of the two was indexed
    first, while the picture can lie mostly outside the copy (turned 12 degrees and zoomed to fill, a 2.5:1
    frame keeps under half of itself). Two barely overlapping crops of one scene have both shares small.
    """
    return max(overlap, alignment.covered(overlap, a.aspect, b.aspect)[0])


def verify_pair(a: PerceptualSignature, b: PerceptualSignature, seed: Alignment, params: PerceptualParams) -> Verdict:
    """:func:`verify_frames`; where it refuses, the texture route (:func:`verify_texture`) from the alignment it
    reached (a periodic pattern passes there or nowhere)."""
    verdict = verify_frames(a, b, seed, params)
    if verdict.accepted:
        return verdict
    return verify_texture(a, b, verdict.alignment, params) or verdict


def verify_frames(a: PerceptualSignature, b: PerceptualSignature, seed: Alignment, params: PerceptualParams) -> Verdict:
    """Align B's thumbnail onto A's starting from ``seed``, then apply the luminance, overlap, chroma and structure tests.

    Tests run cheapest first and stop at the first failure.  The seed is
    tested alone first (most copies pass there); otherwise, unless it is
    aligned but differently coloured, the seed is moved by the translation
    phase correlation finds between the two thumbnails (textures and periodic
    patterns decorrelate within a pixel, so a window a few percent off fails
    however close its hash was), then scale x rotation, translation and scale
    x rotation again are searched around the best luminance alignment so far
    (coordinate ascent, 9 alignments per step) and the tests rerun there: a
    roughly right seed can pass luminance yet be too far off for the fine
    structure.
    """
    scores, overlaps = _correlations(a, b, [seed], params)
    verdict = _judge(a, b, seed, float(scores[0]), float(overlaps[0]), params)
    if verdict.accepted or verdict.chroma_cosine < params.min_chroma_cosine:
        return verdict
    best, best_score, overlap = seed, float(scores[0]), float(overlaps[0])
    shifted = _phase_shifted(a, b, seed)
    scores, overlaps = _correlations(a, b, shifted, params)
    i = int(np.argmax(scores))
    if scores[i] > best_score:
        best, best_score, overlap = shifted[i], float(scores[i]), float(overlaps[i])
    for step in ("scale_rotation", "shift", "scale_rotation"):
        if step == "shift":
            candidates = _grid(best, [1.0], [0.0], params.refine_shift)
        else:
            candidates = _grid(best, params.refine_scale, params.refine_degrees, [0.0])
        scores, overlaps = _correlations(a, b, candidates, params)
        i = int(np.argmax(scores))
        if scores[i] > best_score:
            best, best_score, overlap = candidates[i], float(scores[i]), float(overlaps[i])
    return _judge(a, b, best, best_score, overlap, params) if best != seed else verdict


_HANN = np.outer(np.hanning(THUMB_SIDE), np.hanning(THUMB_SIDE)).astype(np.float32)


def _phase_shifted(a: PerceptualSignature, b: PerceptualSignature, seed: Alignment) -> list[Alignment]:
    """``seed`` moved by the translation phase correlation finds between A (sampled at ``seed``) and B, in both
    directions (the cheaper way to be sure of the sign)."""
    sampled, inside = _luma_onto(a, b, [seed])
    sx, sy = _phase_peak(sampled.reshape(THUMB_SIDE, THUMB_SIDE), inside.reshape(THUMB_SIDE, THUMB_SIDE), b.luma, _HANN)
    if sx == 0 and sy == 0:
        return [seed]
    return [_moved(seed, sign * sx * b.aspect / THUMB_SIDE, sign * sy / THUMB_SIDE) for sign in (1.0, -1.0)]


def _phase_peak(sampled: np.ndarray, inside: np.ndarray, target: np.ndarray, window: np.ndarray) -> tuple[int, int]:
    """The translation (x, y pixels, within half a side) phase correlation finds between a sampled square (only
    its ``inside`` pixels count) and a target square."""
    if not inside.any():
        return 0, 0
    fa = (sampled - sampled[inside].mean()) * inside * window
    fb = (target - target.mean()) * window
    cross = np.fft.fft2(fa) * np.conj(np.fft.fft2(fb))
    peak = np.fft.ifft2(cross / np.maximum(np.abs(cross), 1e-6)).real
    sy, sx = np.unravel_index(int(np.argmax(peak)), peak.shape)
    side_y, side_x = peak.shape
    return int((sx + side_x // 2) % side_x - side_x // 2), int((sy + side_y // 2) % side_y - side_y // 2)


def _moved(seed: Alignment, step_x: float, step_y: float) -> Alignment:
    """``seed`` with B's points moved by (step_x, step_y) in B's centred, height-normalised units, carried into A's
    coordinates by the seed's own map."""
    bx = (-1.0 if seed.mirror else 1.0) * seed.stretch * step_x
    theta = math.radians(seed.degrees)
    dx = seed.scale * (math.cos(theta) * bx - math.sin(theta) * step_y)
    dy = seed.scale * (math.sin(theta) * bx + math.cos(theta) * step_y)
    return replace(seed, dx=seed.dx + dx, dy=seed.dy + dy)


TEXTURE_SIGMA_PX = 4.0  # Gaussian removed from the texture squares: the broad layout, not repeats up to ~12 px
_TEXTURE_BLUR = _blur_matrix(TEXTURE_SIDE, TEXTURE_SIGMA_PX)
_TEXTURE_HANN = np.outer(np.hanning(TEXTURE_SIDE), np.hanning(TEXTURE_SIDE)).astype(np.float32)


PERIODIC_DIP = 0.3  # autocorrelation a repeat's peak must rise above the valley between it and the centre
_OVERLAP_COUNTS = np.maximum(np.round(np.fft.irfft2(np.abs(np.fft.rfft2(np.ones((TEXTURE_SIDE, TEXTURE_SIDE)), s=(2 * TEXTURE_SIDE,) * 2)) ** 2,
                                                    s=(2 * TEXTURE_SIDE,) * 2)), 1.0)  # pixels a shifted square overlaps
_PEAK_RING = np.hypot(*(np.indices((TEXTURE_SIDE, TEXTURE_SIDE)) - TEXTURE_SIDE // 2)) >= 2  # shifts of 2 px up to ...
_PEAK_RING &= np.hypot(*(np.indices((TEXTURE_SIDE, TEXTURE_SIDE)) - TEXTURE_SIDE // 2)) < TEXTURE_SIDE // 2 - 1  # ... half a side


def periodicity(square: np.ndarray) -> float:
    """How strongly a texture square repeats: the highest off-centre peak of its high-pass autocorrelation (1 at no
    shift; each shift over the pixels it overlaps, so a coarse pattern's repeat is not diluted by the square's edge)
    that a valley at least PERIODIC_DIP deep parts from the centre; 0 when there is none (a peak lower than
    PERIODIC_DIP cannot be one).

    Why a valley: any content correlates with itself at small shifts (the central lobe, wide for smooth pictures);
    a repeat is a second peak beyond a dip.  On bench/dedup.py's files the periodic textures reach a median of 0.88
    (a fifth of them, the finest, below 0.5), rendered photographs 0.43 at the 95th percentile, 0.59 at the 99th.
    """
    structure = high_pass(square.astype(np.float64), _TEXTURE_BLUR)
    structure -= structure.mean()
    padded = (2 * TEXTURE_SIDE, 2 * TEXTURE_SIDE)  # no wrap-around: a shifted square is compared where it overlaps
    auto = np.fft.irfft2(np.abs(np.fft.rfft2(structure, s=padded)) ** 2, s=padded) / _OVERLAP_COUNTS
    auto = np.fft.fftshift(auto)[TEXTURE_SIDE // 2 : -TEXTURE_SIDE // 2, TEXTURE_SIDE // 2 : -TEXTURE_SIDE // 2]
    auto /= max(float(auto[TEXTURE_SIDE // 2, TEXTURE_SIDE // 2]), 1e-9)
    centre = TEXTURE_SIDE // 2
    peaks = _PEAK_RING & (auto >= PERIODIC_DIP) & (auto >= ndimage.maximum_filter(auto, size=3, mode="wrap"))
    ys, xs = np.nonzero(peaks)
    steps = np.linspace(0.0, 1.0, TEXTURE_SIDE)[None, :]  # the way from the centre to each peak, a pixel a step or finer
    valleys = auto[np.round(centre + (ys[:, None] - centre) * steps).astype(int),
                   np.round(centre + (xs[:, None] - centre) * steps).astype(int)].min(axis=1)
    repeats = auto[ys, xs][valleys <= auto[ys, xs] - PERIODIC_DIP]
    return float(repeats.max()) if len(repeats) else 0.0


def _texture_onto(a: PerceptualSignature, b: PerceptualSignature, alignments: list[Alignment]) -> tuple[np.ndarray, np.ndarray]:
    """A's texture square sampled onto B's texture square at each alignment: (values, inside-mask), each
    (len(alignments), pixels).  A square's side is its frame's short side, in height-normalised units."""
    side_a, side_b = min(a.aspect, 1.0), min(b.aspect, 1.0)
    xs, ys = _centred_grid(TEXTURE_SIDE, 1.0)
    u, v = _map_points(alignments, xs * side_b, ys * side_b, a.aspect)
    return _bilinear(a.texture, (u - 0.5) * a.aspect / side_a + 0.5, (v - 0.5) / side_a + 0.5)


def verify_texture(a: PerceptualSignature, b: PerceptualSignature, near: Alignment, params: PerceptualParams) -> Verdict | None:
    """The texture route: whether B shows A's pattern near alignment ``near``, judged on the texture squares.

    Why: a copy cropped or turned from a periodic pattern (stripes, checks, plaid) of a few repeats is lost by
    the frame tests: the 32 px thumbnail resolves about one pixel a period, the 8 x 8 colour cells span about
    one period, so every cell's mean moves with the pattern's phase, and the alignment search stops in one of
    the many maxima of a periodic correlation.  Here the squares resolve the repeats, and phase correlation
    moves each scale x rotation step of ``near`` onto the nearest repeat (any repeat is a right answer for a
    periodic pattern); the high-pass squares must then correlate (another weave in the same palette does not).
    Colour is compared as the mean over the shared cells, which a pattern's phase does not move; ``near`` came
    from the frame tests, so it places the pattern, labels and all, and the cheap colour tests run there first.
    None when a test fails.
    """
    if near.mirror or near.stretch != 1.0:
        return None  # with a mirror or a stretch any two checks of one palette align; such copies keep their phase
    if not _texture_pair(a, b, params) or not _same_colour(a, b, near, params):
        return None
    score, at = _texture_search(a, b, near, params.texture_refine_scale, params.texture_refine_degrees, params)
    return _texture_verdict(a, b, score, at, params, colour=False)


def _texture_pair(a: PerceptualSignature, b: PerceptualSignature, params: PerceptualParams) -> bool:
    """Whether the texture route may judge a pair: both squares repeat, in the same tone."""
    if not params.lattice_bounds.same_tone(a.texture_luma, b.texture_luma, a.texture_contrast, b.texture_contrast):
        return False  # the same weave in another palette: shapes alike, contrast or brightness not
    # not a repeating pattern: the frame tests are the judges (look-alike renders pass the squares)
    return min(a.periodicity, b.periodicity) >= params.min_texture_periodicity


def _texture_search(a: PerceptualSignature, b: PerceptualSignature, near: Alignment, scales: tuple[float, ...],
                    degrees: tuple[float, ...], params: PerceptualParams) -> tuple[float, Alignment]:
    """The best trimmed correlation of the high-passed texture squares, and where: each scale x rotation step of
    ``near`` moved onto a repeat by phase correlation (both signs)."""
    steps = _grid(near, scales, degrees, [0.0])
    sampled, inside = _texture_onto(a, b, steps)
    shape = (TEXTURE_SIDE, TEXTURE_SIDE)
    pixel = min(b.aspect, 1.0) / TEXTURE_SIDE  # one texture-square pixel of B, in height-normalised units
    moved: list[Alignment] = []
    for row, mask, step in zip(sampled, inside, steps):
        sx, sy = _phase_peak(row.reshape(shape), mask.reshape(shape), b.texture, _TEXTURE_HANN)
        moved += [_moved(step, sign * sx * pixel, sign * sy * pixel) for sign in (1.0, -1.0)]
    sampled, inside = _texture_onto(a, b, moved)
    structure_a = high_pass(sampled.reshape(-1, *shape).astype(np.float32), _TEXTURE_BLUR).reshape(len(moved), -1)
    structure_b = high_pass(b.texture, _TEXTURE_BLUR).reshape(1, -1)
    scores = _trimmed_ncc(structure_a, structure_b, inside, params.structure_trim_fraction)
    i = int(np.argmax(scores))
    return float(scores[i]), moved[i]


def _texture_verdict(a: PerceptualSignature, b: PerceptualSignature, score: float, at: Alignment,
                     params: PerceptualParams, colour: bool) -> Verdict | None:
    """The texture route's verdict at the best alignment of :func:`_texture_search`: the squares correlate, the
    frames overlap, and (``colour``: not tested before the search) the colours agree there."""
    if score < params.min_texture_correlation:
        return None
    shared, overlap = (float(x[0]) for x in _correlations(a, b, [at], params))
    if shared == -1.0:  # too little of either frame inside the other
        return None
    if colour and not _same_colour(a, b, at, params):
        return None
    return Verdict(True, score, overlap, float("nan"), score, at, True, texture=True)


def _same_colour(a: PerceptualSignature, b: PerceptualSignature, alignment: Alignment, params: PerceptualParams) -> bool:
    """The texture route's colour tests: the mean colour of the shared cells agrees and the cell-wise chroma cosine
    reaches ``min_texture_chroma_cosine`` (cells spanning a repeat blur the pattern, not its palette)."""
    fields = chroma_fields(a, b, alignment, params)
    if fields.sampled.shape[1] == 0 or fields.cosine(params) < params.min_texture_chroma_cosine:
        return False
    return float(np.linalg.norm(fields.sampled.mean(axis=1) - fields.target.mean(axis=1))) <= params.recoloured_cell_chroma


def _judge(a: PerceptualSignature, b: PerceptualSignature, alignment: Alignment, correlation: float, overlap: float, params: PerceptualParams) -> Verdict:
    """The tests after luminance at one alignment, cheapest first; NaN for those not reached."""
    aligned = correlation >= params.min_correlation and _shared(alignment, overlap, a, b) >= params.min_overlap
    fields = chroma_fields(a, b, alignment, params) if aligned else None
    chroma = fields.cosine(params) if fields is not None else float("nan")
    coloured = fields is not None and chroma >= params.min_chroma_cosine and fields.recoloured_share(params) <= params.max_recoloured_share
    structure = _structure_correlation(a, b, alignment, params) if coloured else float("nan")
    accepted = structure >= params.min_structure_correlation
    edited = edited_side(a, b, alignment, params) if accepted else None
    return Verdict(accepted, correlation, overlap, chroma, structure, alignment, aligned, edited)


def edited_side(a: PerceptualSignature, b: PerceptualSignature, alignment: Alignment, params: PerceptualParams) -> str | None:
    """Which of two verified copies shows a local overlay (logo, caption, watermark) the other lacks, if either.

    The pair must disagree locally: a small share of the aligned, standardised luminance (between
    ``edit_min_share`` and ``edit_max_share`` of the overlap) differs by ``edit_min_residual`` or more, the
    rest agreeing. An overlay adds edges (its box, its letters) where it sits, so the side with clearly more
    fine structure there (``edit_min_structure_ratio``) is named; otherwise neither is.
    """
    sampled, inside = _luma_onto(a, b, [alignment])
    _, za, zb = _masked_ncc(sampled, b.luma.reshape(1, -1), inside.astype(np.float32))
    n_inside = max(1, int(inside.sum()))
    scale = np.sqrt(n_inside)  # _masked_ncc gives unit-norm rows: back to standard deviations per pixel
    residual = np.abs(za - zb)[0] * scale
    local = inside[0] & (residual >= params.edit_min_residual)
    share = local.sum() / n_inside
    if not params.edit_min_share <= share <= params.edit_max_share:
        return None
    structure_a = np.abs(high_pass(sampled.reshape(THUMB_SIDE, THUMB_SIDE).astype(np.float32))).reshape(-1)[local].sum()
    structure_b = np.abs(b.structure).reshape(-1)[local].sum()
    if structure_b >= params.edit_min_structure_ratio * structure_a:
        return "b"
    if structure_a >= params.edit_min_structure_ratio * structure_b:
        return "a"
    return None


def _cell_means(luma: np.ndarray) -> np.ndarray:
    """The luminance thumbnail averaged down to the chroma grid."""
    k = THUMB_SIDE // CHROMA_SIDE
    return luma.reshape(CHROMA_SIDE, k, CHROMA_SIDE, k).mean(axis=(1, 3))


@dataclass(frozen=True)
class ChromaFields:
    """A's (Cb, Cr) sampled onto B's chroma grid and B's own, (2, cells), over the cells both still have colour in.

    Computed once per alignment; both colour tests read it.
    """

    sampled: np.ndarray
    target: np.ndarray

    def cosine(self, params: PerceptualParams) -> float:
        """Cosine between the aligned (Cb, Cr) fields (1.0 when both are grey)."""
        sampled, target = self.sampled, self.target
        if sampled.shape[1] == 0:
            return 0.0
        rms_a, rms_b = np.sqrt((sampled**2).mean() * 2), np.sqrt((target**2).mean() * 2)
        if max(rms_a, rms_b) < params.grey_chroma_rms:
            return 1.0  # both grey: hue is noise, nothing to compare
        if min(rms_a, rms_b) < params.grey_chroma_rms:
            # one side grey: no hue to compare with; the other may add colour only where an overlay would
            coloured = sampled if rms_a >= rms_b else target
            share = float((np.linalg.norm(coloured, axis=0) > params.recoloured_cell_chroma).mean())
            return 1.0 if share <= params.trim_fraction else 0.0
        return float((sampled * target).sum() / (np.linalg.norm(sampled) * np.linalg.norm(target)))

    def recoloured_share(self, params: PerceptualParams) -> float:
        """Share of the compared cells whose colour differs by more than ``recoloured_cell_chroma`` once a
        common saturation gain is taken out (a brightened or darkened copy scales every colour alike).

        Why: the cosine over the whole field is ruled by the largest areas; two renders of one template on the
        same backdrop, with the figure painted in other colours, pass it but differ in many cells.
        """
        sampled, target = self.sampled, self.target
        if sampled.shape[1] == 0:
            return 0.0
        gain = float((sampled * target).sum() / max(float((sampled * sampled).sum()), 1e-6))
        differs = np.linalg.norm(gain * sampled - target, axis=0) > params.recoloured_cell_chroma
        return float(differs.mean())


def chroma_fields(a: PerceptualSignature, b: PerceptualSignature, alignment: Alignment, params: PerceptualParams) -> ChromaFields:
    """The aligned colour of both images (:class:`ChromaFields`), leaving out cells clipped or crushed in either."""
    xs, ys = _centred_grid(CHROMA_SIDE, b.aspect)
    u, v = _map_points([alignment], xs, ys, a.aspect)
    sampled, inside = _bilinear(a.chroma, u[0], v[0])
    target = b.chroma.reshape(2, -1)
    # Highlights pushed to white (a brightened copy) or shadows crushed to black have lost their colour:
    # judge hue only where both images still have tonal room, when enough such cells remain.
    luma_a, _ = _bilinear(_cell_means(a.luma), u[0], v[0])
    luma_b = _cell_means(b.luma).reshape(-1)
    toned = inside & (np.minimum(luma_a, luma_b) > params.crushed_luma) & (np.maximum(luma_a, luma_b) < params.clipped_luma)
    if toned.sum() >= params.min_toned_cells:
        inside = toned
    return ChromaFields(sampled[:, inside], target[:, inside])


# --------------------------------------------------------------------------
# matcher
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Hint:
    method: str
    distance: int
    alignment: Alignment


_METHOD_ORDER = {"phash": 0, "dhash": 1, "phash_mirror": 2, "crop_window": 3, "rotation": 4, "lattice": 5}


_N_WINDOWS = len(WINDOW_SCALES) * len(WINDOW_ANCHORS)
_N_STEPS = len(ROTATION_STEPS_DEG)
_WINDOWS = [(s, anchor) for s in WINDOW_SCALES for anchor in WINDOW_ANCHORS]
_ROTATIONS = [(sign * a, j) for j, a in enumerate(ROTATION_STEPS_DEG) for sign in (-1, 1)]  # order of derotated_hashes
_VIEW_SLOTS = _N_WINDOWS + 3 * _N_STEPS  # views index: windows, then centres, then de-rotated frames


_CENTRED_WINDOWS = [i for i, (_, anchor) in enumerate(_WINDOWS) if anchor == (0.5, 0.5)]  # one per WINDOW_SCALES


def _view_slot_filter() -> np.ndarray:
    """Which views-index slots each views query may match (see ``_hints_from``).

    Queries: [phash, de-rotated x 6, centres x 3, centred windows x 3]. A copy turned in an editor without
    zooming (corners filled) is at the scale of its original, not zoomed to fill: B turned back (and zoomed
    in by the fill factor) then matches a centred crop window of A, and B's centred windows match A turned
    back.
    """
    allowed = np.zeros((1 + 3 * _N_STEPS + len(_CENTRED_WINDOWS), _VIEW_SLOTS), dtype=bool)
    allowed[0, :_N_WINDOWS] = True  # B is a crop of A: B's frame vs A's windows
    for i, (_, j) in enumerate(_ROTATIONS):
        allowed[1 + i, _N_WINDOWS + j] = True  # B is A rotated: B turned back vs A's centre window for that angle
        allowed[1 + i, _CENTRED_WINDOWS] = True  # ... or, not zoomed, vs A's centred crop windows
        allowed[1 + 2 * _N_STEPS + j, _N_WINDOWS + _N_STEPS + i] = True  # A is B rotated: B's centre vs A turned back
        allowed[1 + 3 * _N_STEPS:, _N_WINDOWS + _N_STEPS + i] = True  # ... or, not zoomed: B's centred windows
    return allowed


_VIEW_SLOT_FILTER = _view_slot_filter()
_FRAME_SLOT_FILTER = np.array([[True, False], [False, True]] + [[True, False]] * (1 + _N_WINDOWS))  # phash, dhash, mirror, windows


def _queries(h: PerceptualHashes, p: PerceptualParams, widen: int = 0) -> tuple[list[int], np.ndarray, list[int], np.ndarray]:
    """The codes (and radii) a new image looks up: against indexed full frames, then against indexed views."""
    frame_radii = np.array([p.phash_radius, p.dhash_radius, p.mirror_radius] + [p.window_radius] * _N_WINDOWS) + widen
    view_radii = np.array([p.window_radius] + [p.rotation_radius] * (3 * _N_STEPS + len(_CENTRED_WINDOWS))) + widen
    return ([h.phash, h.dhash, h.phash_mirror, *h.window_hashes], frame_radii,
            [h.phash, *h.derotated_hashes, *h.centre_hashes, *(h.window_hashes[i] for i in _CENTRED_WINDOWS)], view_radii)


def _hints_from(frame_hits: Hits, view_hits: Hits, b: PerceptualSignature, aspect_milli: Callable[[int], int],
                p: PerceptualParams) -> dict[int, list[_Hint]]:
    """Turn lookup hits into candidates with the method, distance and geometric hypothesis of each hit."""
    hints: dict[int, list[_Hint]] = {}
    for q, item, d in zip(frame_hits.query.tolist(), frame_hits.item.tolist(), frame_hits.distance.tolist()):
        if q <= 2:  # a full frame: same picture, perhaps mirrored, perhaps resized to another aspect ratio
            hint = _Hint(("phash", "dhash", "phash_mirror")[q], d, Alignment(mirror=q == 2))
            stretch = aspect_milli(item) / b.hashes.aspect_milli
            if math.log(1.03) < abs(math.log(stretch)) <= math.log(p.max_stretch):
                hints.setdefault(item, []).append(_Hint(hint.method, d, Alignment(mirror=q == 2, stretch=stretch)))
        else:  # A is a crop of B: A's frame matched B's window q - 3
            s, (ax, ay) = _WINDOWS[q - 3]
            hint = _Hint("crop_window", d, Alignment(scale=1 / s, dx=-(ax - 0.5) * (1 - s) * b.aspect / s, dy=-(ay - 0.5) * (1 - s) / s))
        hints.setdefault(item, []).append(hint)
    for q, item, slot, d in zip(view_hits.query.tolist(), view_hits.item.tolist(), view_hits.slot.tolist(), view_hits.distance.tolist()):
        if q == 0:  # B is a crop of A: B's frame matched A's window ``slot``
            s, (ax, ay) = _WINDOWS[slot]
            aspect_a = aspect_milli(item) / 1000
            hint = _Hint("crop_window", d, Alignment(scale=s, dx=(ax - 0.5) * (1 - s) * aspect_a, dy=(ay - 0.5) * (1 - s)))
        elif q <= 2 * _N_STEPS and slot < _N_WINDOWS:  # B is A turned, not zoomed: B turned back matched A's window
            degrees, _ = _ROTATIONS[q - 1]
            hint = _Hint("rotation", d, Alignment(scale=_WINDOWS[slot][0] * fill_zoom(degrees, b.aspect), degrees=-degrees))
        elif q <= 2 * _N_STEPS:  # B is A rotated: B turned back by this angle matched A's centre window
            degrees, _ = _ROTATIONS[q - 1]
            hint = _Hint("rotation", d, Alignment(scale=1 / fill_zoom(degrees, b.aspect), degrees=-degrees))
        elif q <= 3 * _N_STEPS:  # A is B rotated: B's centre window matched A turned back
            degrees, _ = _ROTATIONS[slot - _N_WINDOWS - _N_STEPS]
            hint = _Hint("rotation", d, Alignment(scale=fill_zoom(degrees, b.aspect), degrees=degrees))
        else:  # A is B turned, not zoomed: B's centred window matched A turned back
            degrees, _ = _ROTATIONS[slot - _N_WINDOWS - _N_STEPS]
            window_scale = WINDOW_SCALES[q - 1 - 3 * _N_STEPS]
            hint = _Hint("rotation", d, Alignment(scale=1 / (fill_zoom(degrees, aspect_milli(item) / 1000) * window_scale),
                                                  degrees=degrees))
        hints.setdefault(item, []).append(hint)
    return hints


def _first_verified(key_a: K, key_b: K, a: PerceptualSignature, b: PerceptualSignature, hints: list[_Hint],
                    p: PerceptualParams) -> PerceptualMatch[K] | None:
    """Verify B against A from each distinct hypothesis, most reliable first; the first that passes is the match.
    The lattice route's hypotheses come last and only go to the texture route (:func:`_verify_lattice`)."""
    tried: set[Alignment] = set()
    for hint in sorted(hints, key=lambda h: (_METHOD_ORDER[h.method], h.distance)):
        if hint.method == "lattice" or hint.alignment in tried:
            continue
        tried.add(hint.alignment)
        verdict = verify_pair(a, b, hint.alignment, p)
        if verdict.accepted:
            covered_a, covered_b = verdict.alignment.covered(verdict.overlap, a.aspect, b.aspect)
            method = "texture" if verdict.texture else hint.method
            return PerceptualMatch(key_a, key_b, method, hint.distance, round(verdict.correlation, 4), covered_a, covered_b,
                                   verdict.edited)
        if verdict.chroma_cosine < p.min_chroma_cosine:
            break  # aligned but differently coloured (NaN compares False): another geometry cannot fix colour
    for hint in hints:
        if hint.method == "lattice" and (found := _verify_lattice(a, b, hint.alignment, p)) is not None:
            verdict, covered_a, covered_b = found
            return PerceptualMatch(key_a, key_b, "lattice", hint.distance, round(verdict.correlation, 4), covered_a, covered_b)
    return None


def _verify_lattice(a: PerceptualSignature, b: PerceptualSignature, near: Alignment,
                    p: PerceptualParams) -> tuple[Verdict, float, float] | None:
    """The texture route from a lattice hypothesis, B onto A and, failing that but coming close, A onto B; with the
    covered shares (of A's frame, of B's frame).  A hypothesis has no translation, so colour is tested where the
    search lines the pattern up (at ``near`` a label's colour cell can sit elsewhere).

    Why both ways: the texture squares are each frame's centred square, so the part of the pattern they share
    depends on which is sampled onto which; a crop's square sampled onto its original's scores 0.81-0.92 where
    the other way scores 0.92-0.98 (bench/README.md).
    """
    if not _texture_pair(a, b, p) or _texture_search(a, b, near, (1.0,), (0.0,), p)[0] < p.lattice_min_hypothesis_score:
        return None  # the hypothesis alone, one step instead of the grid's 21, is far off: a pattern of another picture
    score, at = _texture_search(a, b, near, p.lattice_refine_scale, p.lattice_refine_degrees, p)
    verdict = _texture_verdict(a, b, score, at, p, colour=True)
    if verdict is not None:
        return verdict, *verdict.alignment.covered(verdict.overlap, a.aspect, b.aspect)
    if score < p.lattice_reverse_from:
        return None
    inverse = Alignment(scale=1.0 / near.scale, degrees=-near.degrees)
    score, at = _texture_search(b, a, inverse, p.lattice_refine_scale, p.lattice_refine_degrees, p)
    verdict = _texture_verdict(b, a, score, at, p, colour=True)
    if verdict is None:
        return None
    covered_b, covered_a = verdict.alignment.covered(verdict.overlap, b.aspect, a.aspect)
    return verdict, covered_a, covered_b


def _pair_hits(query: list[int], radii: np.ndarray, indexed: list[int], slots: np.ndarray) -> Hits:
    """Hits of ``query`` codes against one item's ``indexed`` codes by direct popcount (what an index of one would give)."""
    distance = np.bitwise_count(np.array(query, dtype=np.uint64)[:, None] ^ np.array(indexed, dtype=np.uint64)[None, :])
    q, slot = np.nonzero(slots & (distance <= radii[:, None]))
    return Hits(query=q, item=np.zeros_like(q), slot=slot, distance=distance[q, slot].astype(np.intp))


@dataclass(frozen=True)
class Candidate(Generic[K]):
    """A pair the lookup found, with everything its verification reads: both signatures and the hypotheses.

    Why apart from the lookup: the index is state that only the matcher's process holds, while verifying a pair is
    a pure function of the two signatures and their hints, so a batch's pairs can be verified in other processes.
    """

    key_a: K
    key_b: K
    a: PerceptualSignature
    b: PerceptualSignature
    hints: list[_Hint]


def verify_candidates(candidates: list[Candidate[K]], params: PerceptualParams) -> list[PerceptualMatch[K] | None]:
    """Each candidate's verified match, or None, in order (a module-level function: worker processes run it)."""
    return [_first_verified(c.key_a, c.key_b, c.a, c.b, c.hints, params) for c in candidates]


VerifyCandidates = Callable[[list[Candidate], PerceptualParams], list[PerceptualMatch | None]]


LATTICE_HYPOTHESES = 2  # hypotheses verified per lattice candidate (pairs of lattice vectors), closest first
CONFIRM_WIDEN_BITS = 6  # a pair already linked through a third image is looked up this many bits wider


def confirm_pair(a: PerceptualSignature, b: PerceptualSignature, params: PerceptualParams | None = None) -> PerceptualMatch[str] | None:
    """Whether B is a near-duplicate of A, for one pair known to be related through a third image.

    Same hypotheses and verification as the matcher, with retrieval radii ``CONFIRM_WIDEN_BITS`` wider:
    the pair is already a candidate, so only the verification has to decide.
    """
    p = params or PerceptualParams()
    frame_codes, frame_radii, view_codes, view_radii = _queries(b.hashes, p, CONFIRM_WIDEN_BITS)
    ha = a.hashes
    frame_hits = _pair_hits(frame_codes, frame_radii, [ha.phash, ha.dhash], _FRAME_SLOT_FILTER)
    view_hits = _pair_hits(view_codes, view_radii, [*ha.window_hashes, *ha.centre_hashes, *ha.derotated_hashes], _VIEW_SLOT_FILTER)
    hints = _hints_from(frame_hits, view_hits, b, lambda _: ha.aspect_milli, p).get(0, [])
    return _first_verified("a", "b", a, b, hints, p)


class PerceptualMatcher(Generic[K]):
    """Streaming near-duplicate matcher: each new image is matched against everything indexed before it.

    Memory per indexed image (measured in tests/image_pool/logic/test_perceptual.py):
    26 hash codes in two :class:`MultiIndexHammingIndex` arrays (8 bytes per
    code + 12 per code and chunk: ~1.5 KB with 4 chunks), 4 bytes of aspect,
    and the caller's key (kept in a list and a key -> id dict).  Thumbnails are
    not kept: those of the current ``match_new`` call are in hand, earlier ones
    are fetched through ``load_signatures`` for candidates that need
    verifying, and a bounded LRU (``signature_cache_size``) keeps recent ones.
    """

    def __init__(
        self,
        params: PerceptualParams | None = None,
        load_signatures: Callable[[list[K]], dict[K, PerceptualSignature]] | None = None,
        verify: VerifyCandidates | None = None,
    ) -> None:
        self.params = params or PerceptualParams()
        self._load_signatures = load_signatures
        self._verify = verify or verify_candidates
        chunks = self.params.n_chunks
        self._frames = MultiIndexHammingIndex(64, chunks, codes_per_item=2)  # phash, dhash
        self._views = MultiIndexHammingIndex(64, chunks, codes_per_item=_VIEW_SLOTS)
        self._keys: list[K] = []
        self._ids: dict[K, int] = {}
        self._aspect_milli = array("I")
        self._lattices = LatticeIndex(self.params.lattice_bounds)
        self._batch: dict[K, PerceptualSignature] = {}
        self._cache: OrderedDict[K, PerceptualSignature] = OrderedDict()

    def __len__(self) -> int:
        return len(self._keys)

    def index_nbytes(self) -> int:
        """Bytes of the hash indexes and aspects (not the keys, nor cached thumbnails)."""
        return (self._frames.nbytes() + self._views.nbytes() + self._aspect_milli.itemsize * len(self._aspect_milli)
                + self._lattices.nbytes())

    def periodic_indexed(self) -> int:
        """How many indexed images take the lattice route (their texture squares repeat)."""
        return len(self._lattices)

    def _periodic(self, signature: PerceptualSignature) -> bool:
        """Whether an image takes the lattice route: its texture square repeats and has a lattice."""
        return signature.periodicity >= self.params.min_texture_periodicity and bool(signature.lattice.vectors)

    def _add(self, key: K, hashes: PerceptualHashes, signature: PerceptualSignature | None = None) -> None:
        """Index one image's hashes and, given its signature and periodic, its lattice."""
        if key in self._ids:
            raise ValueError(f"key {key!r} is already indexed")
        if signature is not None and self._periodic(signature):
            self._lattices.add(len(self._keys), signature.lattice)
        self._ids[key] = len(self._keys)
        self._keys.append(key)
        self._aspect_milli.append(hashes.aspect_milli)
        self._frames.add([hashes.phash, hashes.dhash])
        self._views.add([*hashes.window_hashes, *hashes.centre_hashes, *hashes.derotated_hashes])

    def index_existing(self, items: Iterable[tuple[K, PerceptualHashes | PerceptualSignature]]) -> None:
        """Index earlier runs' images; only their hashes (and, given as signatures, periodic ones' lattices) stay in
        memory.  Images given as hashes alone are not lattice candidates of later images."""
        for key, item in items:
            if isinstance(item, PerceptualSignature):
                self._add(key, item.hashes, item)
            else:
                self._add(key, item)

    def _with_lattice(self, hints: dict[int, list[_Hint]], signature: PerceptualSignature,
                      before: list[tuple[LatticeIndex, int | None]]) -> dict[int, list[_Hint]]:
        """``hints`` plus the lattice route's candidates of a periodic image among the periodic images of
        ``before`` (each index with the ids it may offer: below the bound, or all), nearest first."""
        if not self._periodic(signature):
            return hints
        lattice = signature.lattice
        found = nearest([index.ranked(lattice, bound) for index, bound in before], self.params.lattice_neighbours)
        for item, steps in found.items():
            hints.setdefault(item, []).extend(_Hint("lattice", 0, Alignment(scale=scale, degrees=degrees))
                                              for scale, degrees in steps[:LATTICE_HYPOTHESES])
        return hints

    def _hints(self, b: PerceptualSignature) -> dict[int, list[_Hint]]:
        """Candidates (indexed ids) with the method, distance and geometric hypothesis of each retrieving lookup."""
        frame_codes, frame_radii, view_codes, view_radii = _queries(b.hashes, self.params)
        frame_hits = self._frames.query(frame_codes, frame_radii, _FRAME_SLOT_FILTER)
        view_hits = self._views.query(view_codes, view_radii, _VIEW_SLOT_FILTER)
        return _hints_from(frame_hits, view_hits, b, lambda item: self._aspect_milli[item], self.params)

    def _signatures_for(self, keys: list[K]) -> dict[K, PerceptualSignature]:
        found = {k: self._batch[k] for k in keys if k in self._batch}
        for k in keys:
            if k not in found and k in self._cache:
                self._cache.move_to_end(k)
                found[k] = self._cache[k]
        missing = [k for k in keys if k not in found]
        if missing:
            if self._load_signatures is None:
                raise LookupError(f"{len(missing)} indexed images have no signature and no load_signatures was given")
            loaded = self._load_signatures(missing)
            absent = [k for k in missing if k not in loaded]
            if absent:
                raise LookupError(f"load_signatures returned no signature for {absent[:5]}")
            for k in missing:
                found[k] = loaded[k]
                self._remember(k, loaded[k])
        return found

    def _remember(self, key: K, signature: PerceptualSignature) -> None:
        self._cache[key] = signature
        self._cache.move_to_end(key)
        while len(self._cache) > self.params.signature_cache_size:
            self._cache.popitem(last=False)

    def match_one(self, key: K, signature: PerceptualSignature) -> list[PerceptualMatch[K]]:
        """Verified matches of one new image against everything indexed; then index it."""
        hints = self._with_lattice(self._hints(signature), signature, [(self._lattices, None)])
        signatures = self._signatures_for([self._keys[i] for i in hints])
        matches = [m for other_id, other_hints in hints.items()
                   if (m := _first_verified(self._keys[other_id], key, signatures[self._keys[other_id]], signature,
                                            other_hints, self.params)) is not None]
        self._add(key, signature.hashes, signature)
        self._remember(key, signature)
        return matches

    def match_new(self, items: Iterable[tuple[K, PerceptualSignature]]) -> Iterator[PerceptualMatch[K]]:
        """One streaming pass: each item is matched against all earlier ones, then indexed.

        This call's signatures stay in hand until it ends (callers bound that
        by batching); afterwards only their hashes and the LRU remain.
        """
        try:
            for key, signature in items:
                self._batch[key] = signature
                yield from self.match_one(key, signature)
        finally:
            self._batch.clear()

    def match_batch(self, items: list[tuple[K, PerceptualSignature]]) -> list[list[PerceptualMatch[K]]]:
        """What :meth:`match_one` would give for each item in turn (each against everything indexed and the
        batch's earlier items), with one index lookup for the whole batch instead of one per image: the lookups'
        fixed cost is most of an image's matching. The batch's candidate pairs are then verified in one call of
        ``verify`` (given to the constructor: worker processes may run it), in lookup order. Nothing is indexed
        unless the whole batch is matched, so a batch that fails can be matched again item by item."""
        keys = [key for key, _ in items]
        if len(set(keys)) < len(keys) or any(key in self._ids for key in keys):
            raise ValueError("a key is repeated in the batch or already indexed")
        if not items:
            return []
        first = len(self._keys)
        queries = [_queries(signature.hashes, self.params) for _, signature in items]
        batch = _BatchIndex([signature.hashes for _, signature in items], self.params.n_chunks)
        frames, views = _stacked(queries, 0, _FRAME_SLOT_FILTER), _stacked(queries, 2, _VIEW_SLOT_FILTER)
        frame_hits = _split_hits([self._frames.query(*frames), batch.frames.query(*frames)], len(_FRAME_SLOT_FILTER),
                                 len(items), first)
        view_hits = _split_hits([self._views.query(*views), batch.views.query(*views)], len(_VIEW_SLOT_FILTER),
                                len(items), first)

        def aspect_milli(item: int) -> int:
            return self._aspect_milli[item] if item < first else items[item - first][1].hashes.aspect_milli

        def key_of(item: int) -> K:
            return self._keys[item] if item < first else keys[item - first]

        batch_lattices = LatticeIndex(self.params.lattice_bounds)
        for i, (_, signature) in enumerate(items):
            if self._periodic(signature):
                batch_lattices.add(first + i, signature.lattice)
        self._batch.update(items)
        try:
            owners, candidates = [], []
            for i, (key, signature) in enumerate(items):
                hints = self._with_lattice(_hints_from(frame_hits[i], view_hits[i], signature, aspect_milli, self.params),
                                           signature, [(self._lattices, None), (batch_lattices, first + i)])
                signatures = self._signatures_for([key_of(other) for other in hints])
                for other, other_hints in hints.items():
                    owners.append(i)
                    candidates.append(Candidate(key_of(other), key, signatures[key_of(other)], signature, other_hints))
        finally:
            for key in keys:
                self._batch.pop(key, None)
        verdicts = self._verify(candidates, self.params)
        results: list[list[PerceptualMatch[K]]] = [[] for _ in items]
        for i, match in zip(owners, verdicts, strict=True):
            if match is not None:
                results[i].append(match)
        for key, signature in items:
            self._add(key, signature.hashes, signature)
            self._remember(key, signature)
        return results


class _BatchIndex:
    """The batch's own hashes, indexed like the matcher's, for its images' lookups among themselves."""

    def __init__(self, hashes: list[PerceptualHashes], n_chunks: int) -> None:
        self.frames = MultiIndexHammingIndex(64, n_chunks, codes_per_item=2)
        self.views = MultiIndexHammingIndex(64, n_chunks, codes_per_item=_VIEW_SLOTS)
        for h in hashes:
            self.frames.add([h.phash, h.dhash])
            self.views.add([*h.window_hashes, *h.centre_hashes, *h.derotated_hashes])


def _stacked(queries: list[tuple], at: int, slots: np.ndarray) -> tuple[list[int], np.ndarray, np.ndarray]:
    """Every image's codes of one kind (frames: ``at`` 0, views: 2) in one lookup, with their radii and slots."""
    return ([code for q in queries for code in q[at]], np.concatenate([q[at + 1] for q in queries]),
            np.tile(slots, (len(queries), 1)))


def _split_hits(found: list[Hits], per_image: int, n_images: int, first: int) -> list[Hits]:
    """One lookup's hits (against the index, then against the batch) per image, numbered within the image as
    :func:`_hints_from` expects and in the order one image's lookup gives them (query, then item and slot); a
    batch image keeps only its hits on the batch's earlier images (ids from ``first``), which is what
    :meth:`PerceptualMatcher.match_one` would have seen."""
    indexed, own = found
    earlier = own.item < own.query // per_image
    query = np.concatenate([indexed.query, own.query[earlier]])
    item = np.concatenate([indexed.item, own.item[earlier] + first])
    slot = np.concatenate([indexed.slot, own.slot[earlier]])
    distance = np.concatenate([indexed.distance, own.distance[earlier]])
    order = np.lexsort((slot, item, query))  # query // per_image is the image: query order sorts images too
    query, item, slot, distance = query[order], item[order], slot[order], distance[order]
    bounds = np.searchsorted(query // per_image, np.arange(n_images + 1))
    return [Hits(query[a:b] % per_image, item[a:b], slot[a:b], distance[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
