"""Which image format a file's bytes are, asked of the decoder itself, and why bytes that give no image do not.

Why in resources: the fetcher must tell an image from a web page or a PDF before it keeps a download, and the
pool's decoder must open the same bytes the same way; both ask here. Which bytes are an image is asked of every
plugin registered with Pillow, in Pillow's own order, never of a list of magic bytes, so every format Pillow can
decode here is accepted, and a plugin installed later (HEIF, say) is too. Each failure is a stable reason code
that is stored in the warehouse.
"""

from __future__ import annotations

import io
import struct

from PIL import Image, ImageFile

# Reason codes.
NOT_AN_IMAGE = "not_an_image"  # nothing any decoder recognises: a web page, text, random bytes
UNSUPPORTED_FORMAT = "unsupported_format"  # a recognised format this installation cannot decode (SVG, PDF, HEIC, ...)
TRUNCATED = "truncated"  # a recognised image whose data ends early
UNDECODABLE = "undecodable"  # a recognised image whose header or data the decoder refuses otherwise
DECOMPRESSION_BOMB = "decompression_bomb"

_PLUGIN_PREFIX = 16  # bytes Pillow's Image.open hands each plugin's _accept test
_SNIFF_TEXT = 4096  # bytes searched for the markup of a document that is not a raster image
# What a decoder raises on bytes it cannot read: expected outcomes for hostile input, never a fault of the code.
DECODER_ERRORS = (OSError, SyntaxError, ValueError, TypeError, IndexError, KeyError, EOFError, struct.error, ArithmeticError,
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

    def __reduce__(self) -> tuple:
        """Pickled by its fields, so a failure decided in a worker process arrives whole."""
        return DecodeFailure, (self.reason_code, self.detail, self.source_format)


def open_image(data: bytes, max_pixels: int | None = None) -> ImageFile.ImageFile:
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
        except DECODER_ERRORS:  # some tests index past the end of a short file
            continue
        if isinstance(verdict, str):  # the plugin knows the format but its library is not installed
            missing.append(f"{fmt}: {verdict}")
            continue
        if accept and not verdict:
            continue
        try:
            return factory(io.BytesIO(data), "")
        except Image.DecompressionBombError as exc:  # a frame the plugin read while opening is past Pillow's own limit
            raise bomb_failure(fmt, exc, max_pixels) from exc
        except DECODER_ERRORS as exc:
            if accept and claimed is None:  # plugins without an _accept test try every file; their refusals say nothing
                claimed = (fmt, exc)
    if claimed:
        raise decode_failure(claimed[0], claimed[1], "header")
    if missing:
        raise DecodeFailure(UNSUPPORTED_FORMAT, "; ".join(missing))
    raise _unrecognised(data)


def decode_failure(fmt: str, exc: Exception, part: str) -> DecodeFailure:
    """What a decoder's refusal of the ``part`` (header or data) of a recognised ``fmt`` file means: a variant not
    implemented, a file that ends early, or a damaged one."""
    message = " ".join(str(exc).split())[:300] or type(exc).__name__
    if isinstance(exc, NotImplementedError):  # a variant of the format Pillow does not implement
        return DecodeFailure(UNSUPPORTED_FORMAT, f"{fmt} {part} uses a variant that is not decoded: {message}", fmt)
    if isinstance(exc, EOFError) or any(mark in message.lower() for mark in _TRUNCATION_MARKS):
        return DecodeFailure(TRUNCATED, f"{fmt} {part} ends early: {message}", fmt)
    return DecodeFailure(UNDECODABLE, f"{fmt} {part} is damaged: {type(exc).__name__}: {message}", fmt)


def bomb_failure(fmt: str, exc: Image.DecompressionBombError, max_pixels: int | None) -> DecodeFailure:
    """A frame past Pillow's own bomb limit, met while opening or decoding."""
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
        return open_image(data).format.lower()
    except DecodeFailure as failure:
        if failure.source_format is None:
            raise
        return failure.source_format.lower()
