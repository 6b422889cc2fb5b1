"""Decoding, normalising and measuring image bytes, and the pool's filter rules.

Each failure maps to a stable reason code that is stored in the warehouse, so a user can count
and inspect what was turned away and why. Which bytes are an image is asked of the decoder itself
(every plugin registered with Pillow, in Pillow's own order), never of a list of magic bytes, so
every format Pillow can decode here is accepted, and a plugin installed later (HEIF, say) is too.
"""

from __future__ import annotations

import hashlib
import io
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFile

from assets.image_pool.logic.perceptual import MIN_SIGNATURE_SIDE

# Reason codes.
NOT_AN_IMAGE = "not_an_image"  # nothing any decoder recognises: a web page, text, random bytes
UNSUPPORTED_FORMAT = "unsupported_format"  # a recognised format this installation cannot decode (SVG, PDF, HEIC, ...)
TRUNCATED = "truncated"  # a recognised image whose data ends early
UNDECODABLE = "undecodable"  # a recognised image whose header or data the decoder refuses otherwise
DECOMPRESSION_BOMB = "decompression_bomb"
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
_PLUGIN_PREFIX = 16  # bytes Pillow's Image.open hands each plugin's _accept test
_SNIFF_TEXT = 4096  # bytes searched for the markup of a document that is not a raster image
# What a decoder raises on bytes it cannot read: expected outcomes for hostile input, never a fault of the code.
_DECODER_ERRORS = (OSError, SyntaxError, ValueError, TypeError, IndexError, KeyError, EOFError, struct.error, ArithmeticError,
                   NotImplementedError)
_TRUNCATION_MARKS = ("truncated", "incomplete", "premature end", "unexpected end", "not enough data", "buffer is not large enough")
# Formats that are recognisably something, but nothing a registered Pillow plugin decodes: (test on the lower-cased
# head without leading whitespace and BOM, name). HEIF and AVIF brands are listed for installations without the plugin.
_FOREIGN_FORMATS = (
    (lambda head: head.startswith(b"%pdf-"), "a PDF document"),
    (lambda head: b"<svg" in head and not head.startswith((b"<!doctype html", b"<html")), "an SVG (vector) image"),
    (lambda head: head[4:8] == b"ftyp" and head[8:12] in (b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"mif1", b"msf1", b"avif", b"avis"),
     "a HEIF/HEIC/AVIF image (no decoder plugin for it is installed)"),
    (lambda head: head.startswith((b"\xff\x0a", b"\x00\x00\x00\x0cjxl \r\n\x87\n")), "a JPEG XL image (no decoder plugin is installed)"),
)

ImageFile.LOAD_TRUNCATED_IMAGES = False  # a cut-off file must fail, not decode grey padding


class DecodeFailure(Exception):
    """A decided outcome for bytes that give no image: the reason code, a detail, and the format the bytes were
    recognised as (None when nothing recognised them)."""

    def __init__(self, reason_code: str, detail: str, source_format: str | None = None) -> None:
        super().__init__(f"{reason_code}: {detail}")
        self.reason_code = reason_code
        self.detail = detail
        self.source_format = source_format


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


def _open(data: bytes, max_pixels: int | None = None) -> ImageFile.ImageFile:
    """Open the header (nothing decoded yet) with the first registered Pillow plugin that reads it.

    This is ``Image.open``'s own search, with two differences that matter for an outcome: the caller's
    ``max_pixels`` applies instead of Pillow's global bomb limit (checked next, before any pixel is decoded), and
    a plugin whose ``_accept`` test claimed the bytes but could not read the header makes the file ``truncated``
    or ``undecodable`` in that format, not "not an image".
    """
    Image.init()
    head = data[:_PLUGIN_PREFIX]
    claimed: tuple[str, Exception] | None = None
    missing: list[str] = []
    for fmt in Image.ID:
        factory, accept = Image.OPEN[fmt]
        try:
            verdict = accept(head) if accept else None
        except _DECODER_ERRORS:  # some tests index past the end of a short file
            continue
        if isinstance(verdict, str):  # the plugin knows the format but its library is not installed
            missing.append(f"{fmt}: {verdict}")
            continue
        if accept and not verdict:
            continue
        try:
            return factory(io.BytesIO(data), "")
        except Image.DecompressionBombError as exc:  # a frame the plugin read while opening is past Pillow's own limit
            raise _bomb(fmt, exc, max_pixels) from exc
        except _DECODER_ERRORS as exc:
            if accept and claimed is None:  # plugins without an _accept test try every file; their refusals say nothing
                claimed = (fmt, exc)
    if claimed:
        raise _failure(claimed[0], claimed[1], "header")
    if missing:
        raise DecodeFailure(UNSUPPORTED_FORMAT, "; ".join(missing))
    raise _unrecognised(data)


def _failure(fmt: str, exc: Exception, part: str) -> DecodeFailure:
    message = " ".join(str(exc).split())[:300] or type(exc).__name__
    if isinstance(exc, NotImplementedError):  # a variant of the format Pillow does not implement
        return DecodeFailure(UNSUPPORTED_FORMAT, f"{fmt} {part} uses a variant that is not decoded: {message}", fmt)
    if isinstance(exc, EOFError) or any(mark in message.lower() for mark in _TRUNCATION_MARKS):
        return DecodeFailure(TRUNCATED, f"{fmt} {part} ends early: {message}", fmt)
    return DecodeFailure(UNDECODABLE, f"{fmt} {part} is damaged: {type(exc).__name__}: {message}", fmt)


def _bomb(fmt: str, exc: Image.DecompressionBombError, max_pixels: int | None) -> DecodeFailure:
    limit = f"; max_pixels = {max_pixels}" if max_pixels else ""
    return DecodeFailure(DECOMPRESSION_BOMB, f"{fmt} holds a frame larger than Pillow decodes at all ({exc}){limit}", fmt)


def _unrecognised(data: bytes) -> DecodeFailure:
    head = data[:_SNIFF_TEXT].lstrip(b"\xef\xbb\xbf \t\r\n\f").lower()
    for test, name in _FOREIGN_FORMATS:
        if test(head):
            return DecodeFailure(UNSUPPORTED_FORMAT, f"{len(data)} bytes of {name}, which is not decoded")
    if head.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<?xml", b"<")):
        what = "an HTML or XML document"
    else:
        what = f"bytes beginning {data[:8].hex()}"
    return DecodeFailure(NOT_AN_IMAGE, f"no image decoder recognises these {len(data)} bytes ({what})")


def recognised_format(data: bytes) -> str:
    """The format (lower-case Pillow name) of complete file bytes, read from the header alone; raises
    :class:`DecodeFailure` (``not_an_image`` or ``unsupported_format``) when no registered decoder reads them.

    A file that is recognised but damaged is returned with its format: decoding it records exactly what is wrong.
    """
    try:
        return _open(data).format.lower()
    except DecodeFailure as failure:
        if failure.source_format is None:
            raise
        return failure.source_format.lower()


def decode_normalized(data: bytes, max_pixels: int) -> DecodedImage:
    """Decode bytes into an upright RGB image (the first frame of an animation or a multipage file), refusing
    decompression bombs from the header, before their pixels are allocated."""
    source = _open(data, max_pixels)
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
        raise _bomb(fmt, exc, max_pixels) from exc
    except _DECODER_ERRORS:
        frame_count, source = None, _open(data, max_pixels)  # damaged after the first frame: decode that one afresh
    try:
        source.load()
    except Image.DecompressionBombError as exc:
        raise _bomb(fmt, exc, max_pixels) from exc
    except _DECODER_ERRORS as exc:
        if isinstance(source, ImageFile.StubImageFile):
            raise DecodeFailure(UNSUPPORTED_FORMAT, f"{fmt} is recognised but no decoder for it is installed: {exc}", fmt) from exc
        raise _failure(fmt, exc, "data") from exc
    upright, orientation = _upright(source)
    try:
        rgb = _to_rgb(upright)
    except _DECODER_ERRORS as exc:
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
    except _DECODER_ERRORS:
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
