"""Render a :class:`~assets.designs.logic.design_model.Design` to pixels with Pillow (AesEval's Render(M'), seed 003).

A perturbation is a change to the record, so every perturbed design must be re-rendered from the record
alone, the same way every time. The rules, in the order they are applied:

- The canvas is ``canvas_width × canvas_height`` × ``scale`` px, opaque white (Crello's page colour).
- Elements are painted in list order, the first at the bottom, each alpha-composited onto the canvas.
- Box edges are rounded to whole pixels (``floor(x + 0.5)`` of left, top, right, bottom, × scale), so boxes
  that touch in the record touch on the canvas; a box under one pixel wide or high draws nothing (warning).
- Picture elements (background, image, svg, mask) with a ``layer``: the loaded image (any mode → RGBA) is
  stretched to its box with LANCZOS (aspect ratio not kept: the record's box is the truth). An ``svg``
  element that carries a ``color`` is a one-colour shape: its pixels take that colour, its alpha is kept
  (how a colour perturbation on a shape becomes visible). Elements without a layer but with a colour are
  filled boxes; with neither they draw nothing (warning).
- Text elements are re-typeset from their attributes (their pre-rendered layer, if any, is ignored so font,
  size and colour changes show): the face from :mod:`assets.designs.logic.fonts`, asked for with the element's
  ``bold`` / ``italic`` appended to the font name as style words (see :func:`styled_font_name`), so a bold
  text gets the family's bold face when one is installed; ``font_size`` px × scale;
  ``capitalize`` upper-cases; paragraphs split at newlines, runs of spaces collapse (CSS ``white-space:
  normal``); words wrap greedily at the box width (CJK characters may break anywhere; one word wider than
  the box overflows); baselines are ``line_height × font_size`` apart and the first line box starts at the
  box top with the glyphs centred in it (CSS half-leading); ``letter_spacing`` px goes between glyphs and
  then glyphs are placed one by one (whole runs are drawn, with kerning, when it is 0); ``text_align``
  left / center / right / justify inside the box (justify spreads the spaces of every line but a
  paragraph's last, as CSS does). Glyphs are drawn into a coverage mask the size of the box, coloured with
  ``color`` (black when absent, with a warning) — anything outside the box is clipped, with a warning.
- Effects, in record order, on the box-sized layer: ``("blur", r)`` is a Gaussian blur of radius r × scale
  px on premultiplied alpha (no dark fringes); ``("downsample", f)`` shrinks the layer by f (area average,
  BOX) and enlarges it back with NEAREST, so the loss shows as visible pixel blocks, distinct from blur.
  Both stay inside the element's box.
- Alpha × ``opacity``; then a rotation by ``angle`` degrees clockwise about the box centre (BICUBIC,
  expand=True, the centre kept, the pasting offset rounded to whole pixels).

Output is deterministic: no randomness, clocks or unordered iteration; fonts come from one resolver with
Pillow's BASIC layout (see fonts.py), and :func:`to_png_bytes` writes no metadata at a fixed compression.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from assets.designs.logic.design_model import EFFECTS, ELEMENT_TYPES, TEXT_ALIGNS, Design, Element
from assets.designs.logic.fonts import LAST_RESORT, FontChoice, FontResolver, default_resolver, is_cjk, parse_request

WHITE = (255, 255, 255, 255)
DEFAULT_TEXT_COLOR = (0, 0, 0)
PNG_COMPRESS_LEVEL = 6
# Bounds that keep one odd record from taking the machine's memory or FreeType's limits: a design beyond them
# is rejected with its reason, not drawn approximately.
MAX_PIXELS = 64_000_000      # the canvas, and any one element's box, at the render scale
MAX_FONT_PX = 4096           # a glyph bitmap that size is 16 Mpx; FreeType refuses much larger sizes
MAX_BLUR_PX = 1024           # Pillow refuses very large radii; beyond a layer's size a blur changes nothing
LoadLayer = Callable[[str], Image.Image]


class RenderError(ValueError):
    """A design the renderer cannot draw faithfully; names the design, the element index and the field."""

    def __init__(self, reason_code: str, message: str) -> None:
        self.reason_code = reason_code
        super().__init__(f"{message} [{reason_code}]")


@dataclass
class RenderResult:
    image: Image.Image                                             # RGB, canvas size × scale
    fonts_used: dict[str, FontChoice] = field(default_factory=dict)  # element_id → face, in paint order
    warnings: list[str] = field(default_factory=list)


def _px(value: float) -> int:
    return math.floor(value + 0.5)


def _where(design: Design, index: int, element: Element) -> str:
    return f"design {design.design_id} element {index} ({element.element_id})"


# --- layers ------------------------------------------------------------------------------------------------


def _apply_effects(layer: Image.Image, effects: Sequence[tuple[str, float]], scale: float, where: str) -> Image.Image:
    for position, effect in enumerate(effects):
        if not isinstance(effect, (tuple, list)) or len(effect) != 2:
            raise RenderError("bad_effect", f"{where}: effects[{position}] must be (name, amount), got {effect!r}")
        name, amount = effect
        if name not in EFFECTS:
            raise RenderError("unknown_effect", f"{where}: effects[{position}] {name!r} is not one of {EFFECTS}")
        amount = float(amount)
        if name == "blur":
            if not 0 <= amount * scale <= MAX_BLUR_PX:
                raise RenderError("bad_effect", f"{where}: effects[{position}] blur radius must be in [0, {MAX_BLUR_PX}] px,"
                                                f" got {amount}")
            if amount > 0:
                layer = layer.convert("RGBa").filter(ImageFilter.GaussianBlur(amount * scale)).convert("RGBA")
        else:
            if not amount >= 1:
                raise RenderError("bad_effect", f"{where}: effects[{position}] downsample factor must be >= 1, got {amount}")
            small = (max(1, _px(layer.width / amount)), max(1, _px(layer.height / amount)))
            if small != layer.size:
                layer = layer.resize(small, Image.Resampling.BOX).resize(layer.size, Image.Resampling.NEAREST)
    return layer


def _with_opacity(layer: Image.Image, opacity: float) -> Image.Image:
    if opacity >= 1.0:
        return layer
    table = [_px(a * opacity) for a in range(256)]
    r, g, b, a = layer.split()
    return Image.merge("RGBA", (r, g, b, a.point(table)))


def _composite(canvas: Image.Image, layer: Image.Image, x: int, y: int) -> None:
    """Alpha-composite ``layer`` with its top-left at (x, y), clipped to the canvas."""
    left, top = max(x, 0), max(y, 0)
    right, bottom = min(x + layer.width, canvas.width), min(y + layer.height, canvas.height)
    if right <= left or bottom <= top:
        return
    if (left, top, right, bottom) != (x, y, x + layer.width, y + layer.height):
        layer = layer.crop((left - x, top - y, right - x, bottom - y))
    canvas.alpha_composite(layer, dest=(left, top))


def _place(canvas: Image.Image, layer: Image.Image, element: Element, box_px: tuple[int, int, int, int],
           scale: float) -> None:
    """Opacity, rotation about the box centre, composite."""
    layer = _with_opacity(layer, element.opacity)
    angle = float(element.angle) % 360.0
    if angle == 0.0:
        _composite(canvas, layer, box_px[0], box_px[1])
        return
    rotated = layer.rotate(-angle, resample=Image.Resampling.BICUBIC, expand=True)
    cx = (element.left + element.width / 2) * scale
    cy = (element.top + element.height / 2) * scale
    _composite(canvas, rotated, _px(cx - rotated.width / 2), _px(cy - rotated.height / 2))


def _picture_layer(element: Element, size: tuple[int, int], load_layer: LoadLayer, where: str) -> Image.Image | None:
    if element.layer is None:
        if element.color is None:
            return None
        return Image.new("RGBA", size, (*element.color, 255))
    try:
        source = load_layer(element.layer)
    except Exception as error:  # the loader's own failure (missing file, bad blob): name the element
        raise RenderError("layer_unavailable", f"{where}: layer {element.layer!r} could not be loaded "
                                               f"({type(error).__name__}: {error})") from error
    if not isinstance(source, Image.Image):
        raise RenderError("layer_unavailable", f"{where}: the layer loader returned {type(source).__name__}, not an image")
    layer = source.convert("RGBA")
    if layer.size != size:
        layer = layer.resize(size, Image.Resampling.LANCZOS)
    if element.type == "svg" and element.color is not None:
        layer = Image.merge("RGBA", (*Image.new("RGB", size, element.color).split(), layer.getchannel("A")))
    return layer


# --- text --------------------------------------------------------------------------------------------------


def _tokens(paragraph: str) -> list[tuple[str, bool]]:
    """(piece, space before) pairs: words split at spaces, CJK characters as pieces of their own."""
    pieces: list[tuple[str, bool]] = []
    for word in paragraph.split():
        gap = True
        run = ""
        for char in word:
            if is_cjk(char):
                if run:
                    pieces.append((run, gap))
                    gap = False
                    run = ""
                pieces.append((char, gap))
                gap = False
            else:
                run += char
        if run:
            pieces.append((run, gap))
    return pieces


class _Typesetter:
    def __init__(self, font: ImageFont.FreeTypeFont, spacing: float) -> None:
        self.font = font
        self.spacing = spacing

    def width(self, text: str) -> float:
        if not text:
            return 0.0
        if self.spacing == 0:
            return float(self.font.getlength(text))
        return sum(float(self.font.getlength(c)) for c in text) + self.spacing * (len(text) - 1)

    def wrap(self, paragraph: str, box_width: float) -> list[str]:
        lines: list[str] = []
        current = ""
        for piece, gap in _tokens(paragraph):
            candidate = current + (" " if gap and current else "") + piece
            if current and self.width(candidate) > box_width:
                lines.append(current)
                current = piece
            else:
                current = candidate
        lines.append(current)
        return lines

    def draw(self, draw: ImageDraw.ImageDraw, x: float, y: float, text: str) -> None:
        if self.spacing == 0:
            draw.text((x, y), text, font=self.font, fill=255, anchor="ls")
            return
        for char in text:
            if not char.isspace():
                draw.text((x, y), char, font=self.font, fill=255, anchor="ls")
            x += float(self.font.getlength(char)) + self.spacing


def styled_font_name(font: str | None, bold: bool = False, italic: bool = False) -> str | None:
    """The name handed to the font resolver: ``font`` plus "Bold" / "Italic" style words, because the
    resolver picks a family's face from the style words in the name ("Roboto" + bold → "Roboto Bold").

    A name whose own words already ask for that weight or heavier ("Roboto Black") or for a slant keeps
    them (appending "Bold" would lighten a Black face). No flags: the name unchanged. A styled text with
    no font name asks for the last-resort family by name (``LAST_RESORT`` + style words): the resolver
    cannot read a style from a name that has no family part."""
    if not bold and not italic:
        return font
    base = font.strip() if font and font.strip() else LAST_RESORT
    request = parse_request(base)
    words = [base]
    if bold and request.weight < 700:
        words.append("Bold")
    if italic and not request.italic:
        words.append("Italic")
    return " ".join(words)


def typeset_text(text: str, font: ImageFont.FreeTypeFont, size: tuple[int, int], font_size: float, line_height: float,
                 letter_spacing: float, align: str) -> tuple[Image.Image, bool]:
    """The coverage mask ("L", box-sized) of ``text`` laid out by the module's rules, and whether any of it
    fell outside the box."""
    box_w, box_h = size
    setter = _Typesetter(font, letter_spacing)
    mask = Image.new("L", size, 0)
    draw = ImageDraw.Draw(mask)
    ascent, descent = font.getmetrics()
    advance = line_height * font_size
    baseline = (advance - (ascent + descent)) / 2 + ascent
    overflow = False
    paragraphs = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for paragraph in paragraphs:
        lines = setter.wrap(paragraph, box_w)
        for number, line in enumerate(lines):
            line_width = setter.width(line)
            overflow = overflow or line_width > box_w + 0.5
            last = number == len(lines) - 1
            if align == "justify" and not last and " " in line:
                words = line.split(" ")
                extra = max(0.0, box_w - line_width) / (len(words) - 1)
                start = 0
                for k, word in enumerate(words):
                    prefix = setter.width(line[:start]) + (letter_spacing if start else 0.0)
                    setter.draw(draw, prefix + k * extra, baseline, word)
                    start += len(word) + 1
            else:
                x = {"left": 0.0, "justify": 0.0, "center": (box_w - line_width) / 2, "right": box_w - line_width}[align]
                setter.draw(draw, x, baseline, line)
            baseline += advance
    overflow = overflow or (baseline - advance + descent) > box_h + 0.5
    return mask, overflow


def _text_layer(element: Element, size: tuple[int, int], font: ImageFont.FreeTypeFont, scale: float,
                where: str, warnings: list[str]) -> Image.Image:
    text = element.text or ""
    if element.capitalize:
        text = text.upper()
    color = element.color
    if color is None:
        warnings.append(f"{where}: text has no color; drawn in black")
        color = DEFAULT_TEXT_COLOR
    mask, overflow = typeset_text(text, font, size, float(element.font_size or 0) * scale, float(element.line_height),
                                  float(element.letter_spacing) * scale, element.text_align)
    if overflow:
        warnings.append(f"{where}: text overflows its box and is clipped")
    layer = Image.new("RGBA", size, (*color, 0))
    layer.putalpha(mask)
    return layer


# --- validation --------------------------------------------------------------------------------------------


def _check(design: Design, scale: float) -> None:
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise RenderError("bad_scale", f"design {design.design_id}: scale must be a positive number, got {scale!r}")
    if design.canvas_width <= 0 or design.canvas_height <= 0:
        raise RenderError("bad_canvas", f"design {design.design_id}: canvas must be positive, got "
                                        f"{design.canvas_width}x{design.canvas_height}")
    if design.canvas_width * design.canvas_height * scale * scale > MAX_PIXELS:
        raise RenderError("canvas_too_large", f"design {design.design_id}: canvas {design.canvas_width}x"
                                              f"{design.canvas_height} is over {MAX_PIXELS} pixels at scale {scale}")
    seen: set[str] = set()
    for index, e in enumerate(design.elements):
        where = _where(design, index, e)
        if e.element_id in seen:
            raise RenderError("duplicate_element_id", f"{where}: element_id repeats an earlier element")
        seen.add(e.element_id)
        if e.type not in ELEMENT_TYPES:
            raise RenderError("unknown_element_type", f"{where}: type {e.type!r} is not one of {ELEMENT_TYPES}")
        numbers = {"left": e.left, "top": e.top, "width": e.width, "height": e.height, "angle": e.angle,
                   "opacity": e.opacity, "line_height": e.line_height, "letter_spacing": e.letter_spacing}
        for name, value in numbers.items():
            if not (isinstance(value, (int, float)) and math.isfinite(value)):
                raise RenderError("bad_number", f"{where}: {name} must be a finite number, got {value!r}")
        if e.width < 0 or e.height < 0:
            raise RenderError("bad_box", f"{where}: width and height must be >= 0, got {e.width}x{e.height}")
        if not 0.0 <= e.opacity <= 1.0:
            raise RenderError("bad_opacity", f"{where}: opacity must be in [0, 1], got {e.opacity}")
        if e.color is not None and (len(e.color) != 3 or any(not (isinstance(c, (int, np.integer)) and 0 <= c <= 255) for c in e.color)):
            raise RenderError("bad_color", f"{where}: color must be three ints in 0..255, got {e.color!r}")
        if e.type == "text":
            if e.text_align not in TEXT_ALIGNS:
                raise RenderError("bad_text_align", f"{where}: text_align {e.text_align!r} is not one of {TEXT_ALIGNS}")
            if e.text and not (isinstance(e.font_size, (int, float)) and math.isfinite(e.font_size) and e.font_size > 0):
                raise RenderError("bad_font_size", f"{where}: font_size must be a positive number, got {e.font_size!r}")
            if e.line_height <= 0:
                raise RenderError("bad_line_height", f"{where}: line_height must be > 0, got {e.line_height}")
            if e.text and e.font_size * scale > MAX_FONT_PX:
                raise RenderError("font_too_large", f"{where}: font_size {e.font_size} px is over {MAX_FONT_PX} px at this scale")
        if e.width * e.height * scale * scale > MAX_PIXELS:
            raise RenderError("element_too_large", f"{where}: box {e.width}x{e.height} px is over {MAX_PIXELS} pixels")


# --- public ------------------------------------------------------------------------------------------------


def render_design(design: Design, load_layer: LoadLayer, fonts: FontResolver | None = None,
                  scale: float = 1.0) -> RenderResult:
    """Draw ``design`` by the module's rules; ``load_layer`` resolves an element's ``layer`` reference to an
    image. Raises :class:`RenderError` on a record it cannot draw faithfully; softer problems (missing
    glyphs, clipped text, invisible elements) come back as warnings naming the element."""
    _check(design, scale)
    resolver = fonts if fonts is not None else default_resolver()
    width, height = max(1, _px(design.canvas_width * scale)), max(1, _px(design.canvas_height * scale))
    canvas = Image.new("RGBA", (width, height), WHITE)
    result = RenderResult(canvas)
    for index, element in enumerate(design.elements):
        where = _where(design, index, element)
        x0, y0 = _px(element.left * scale), _px(element.top * scale)
        x1, y1 = _px((element.left + element.width) * scale), _px((element.top + element.height) * scale)
        size = (x1 - x0, y1 - y0)
        if size[0] < 1 or size[1] < 1:
            result.warnings.append(f"{where}: box is under one pixel at this scale; not drawn")
            continue
        if element.type == "text":
            if not element.text:
                result.warnings.append(f"{where}: text element has no text; not drawn")
                continue
            if float(element.font_size or 0) * scale < 1:
                result.warnings.append(f"{where}: font size is under one pixel at this scale; not drawn")
                continue
            text = element.text.upper() if element.capitalize else element.text
            choice, missing = resolver.resolve_for_text(styled_font_name(element.font, element.bold, element.italic), text)
            result.fonts_used[element.element_id] = choice
            if missing:
                shown = "".join(missing[:10]) + ("…" if len(missing) > 10 else "")
                result.warnings.append(f"{where}: font {choice.family} {choice.style} has no glyph for {shown!r} "
                                       f"({len(missing)} characters); drawn as boxes")
            font = resolver.font(choice, float(element.font_size or 0) * scale)
            layer: Image.Image | None = _text_layer(element, size, font, scale, where, result.warnings)
        else:
            layer = _picture_layer(element, size, load_layer, where)
            if layer is None:
                result.warnings.append(f"{where}: {element.type} element has neither a layer nor a color; not drawn")
                continue
        assert layer is not None
        layer = _apply_effects(layer, element.effects, scale, where)
        _place(canvas, layer, element, (x0, y0, x1, y1), scale)
    result.image = canvas.convert("RGB")
    return result


def _flatten(image: Image.Image) -> Image.Image:
    """RGB on white (a preview with transparency is seen over the white page)."""
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        page = Image.new("RGBA", rgba.size, WHITE)
        page.alpha_composite(rgba)
        return page.convert("RGB")
    return image.convert("RGB")


def preview_difference(render: Image.Image, preview: Image.Image) -> float:
    """Mean absolute difference per pixel and RGB channel, in [0, 255], between our render and the dataset's
    own preview. The preview is flattened onto white and resized (LANCZOS) to the render's size, since
    previews ship at another resolution; 0 means identical, ~255 means inverted."""
    ours = np.asarray(_flatten(render), dtype=np.int16)
    theirs_image = _flatten(preview)
    if theirs_image.size != render.size:
        theirs_image = theirs_image.resize(render.size, Image.Resampling.LANCZOS)
    theirs = np.asarray(theirs_image, dtype=np.int16)
    return float(np.abs(ours - theirs).mean())


def to_png_bytes(image: Image.Image) -> bytes:
    """PNG bytes that depend on the pixels alone: the image is rebuilt without its info (no ICC profile,
    text chunks, dpi or time) and written at a fixed zlib level without the optimiser."""
    mode = image.mode if image.mode in ("RGB", "RGBA", "L", "LA") else "RGB"
    source = image if image.mode == mode else image.convert(mode)
    clean = Image.frombytes(mode, source.size, source.tobytes())
    buffer = io.BytesIO()
    clean.save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL, optimize=False)
    return buffer.getvalue()
