"""The offline judge for graphic designs: does a rendered design show a flaw for one indicator, from measurements.

Why: AesEval labels perturbed designs with people and, at scale, with models guided by people (seed paper 003,
section 4). Runs without a model (the demo, the tests, a first pass over 10^6 designs) still need a verdict that
comes from the design in front of them, so every answer here is computed from the render's pixels and the record's
geometry; nothing is read from the perturbation log or the ``effects`` field, and an indicator this module cannot
measure says so (``evidence={"measurable": False}``) instead of guessing.

What each indicator measures (all coordinates canvas pixels; a render of another size is scaled to the canvas):

- ``color_contrast`` / ``font_legibility``: the WCAG 2 contrast ratio of every text element's colour against the
  median background luminance under its box. The background comes from ``render_without(i)`` (the design
  rendered without text element ``i``) when the caller supplies it; otherwise from the render itself, using the
  box's pixels that are not close to the text colour (the glyphs and their anti-aliasing), or all of the box when
  nearly every pixel is close to it, which is exactly the case of text that blends into its ground. Text needs
  3:1 when large (>= 24 px, or >= 18.66 px in a bold face) and 4.5:1 otherwise (WCAG 1.4.3). Legibility also
  fails for text below ``min_legible_px``.
- ``layout_layering``: box overlaps of text with text (intersection over the smaller box), text hidden under a
  later-painted element, and text straddling the edge of an element it is painted over (partly on, partly off).
  Backdrops (type ``background`` or covering 90 % of the canvas) never count.
- ``layout_alignment``: left, centre and right edges of every element against the same edges of the others and
  the canvas centre line; an element none of whose edges aligns within ``align_tolerance_px`` but one of which
  lies within ``align_near_px`` of alignment is a near miss, the flaw a small position shift leaves.
- ``layout_balance``: the centroid of visual mass (each pixel's colour distance from the backdrop colour, the
  median of the canvas border) against the canvas centre.
- ``layout_whitespace``: margins to the canvas edges: text touching or crossing an edge, or a smaller element
  cut off by an edge by more than ``crop_fraction`` of its size (large elements bleeding off are a style).
- ``font_hierarchy``: pairs of text elements where the one with far more characters (body copy) is set clearly
  larger than the short one (the headline): an inverted hierarchy.
- ``graphics_quality``: image and svg regions (minus the boxes of elements painted over them): a no-reference
  blur measure (an edge-weighted variant of Crete-Roffet et al. 2007, "The blur effect": how little of the
  region's edge energy a further blur removes; 0 sharp, 1 fully blurred) and blockiness (edge energy concentrated on a regular grid of columns and
  rows, what nearest-neighbour upscaling of a downsampled layer leaves).
- ``color_harmony`` / ``color_appeal``: hue relations measured on the render: an element whose saturated hue lies
  30-100 degrees from the dominant hue of the rest of the design (neither analogous nor triadic nor
  complementary: our simplification of hue-template harmony) clashes; appeal also fails for a busy palette
  (``busy_hue_families`` or more saturated hue families, each at least ``busy_family_share`` of the coloured pixels).
- ``color_psychology`` / ``graphics_relevance``: depend on what the design is for and what its pictures mean,
  which pixels do not tell: always ``measurable: False``.

``score`` is a severity in [0, 1], 0 when nothing is flagged and larger for more or worse problems; for every
indicator ``flawed`` is exactly ``score > 0``. Every ``evidence`` value is plain JSON (numbers rounded to 4 places),
so it can be stored with the label. Cost per design: one pass over a few crops plus a 256-pixel copy for mass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from assets.designs.logic.design_model import Design, Element
from warehouse.ids import digest_of

JUDGE_VERSION = "1"
INDICATOR_IDS = (
    "layout_balance", "layout_layering", "layout_whitespace", "layout_alignment",
    "color_harmony", "color_contrast", "color_appeal", "color_psychology",
    "font_legibility", "font_hierarchy", "graphics_quality", "graphics_relevance",
)
UNMEASURABLE = {
    "color_psychology": "the feelings a palette should evoke depend on the design's purpose and audience, not on pixels",
    "graphics_relevance": "whether a picture suits the message depends on its meaning, which pixels do not give",
}
XYXY = tuple[float, float, float, float]
RenderWithout = Callable[[int], Image.Image]

_BOLD_WORDS = ("bold", "black", "heavy", "extrabold", "ultrabold")
_MASS_SIDE = 256
_BORDER_FRACTION = 0.03
_GREY = np.array([0.2126, 0.7152, 0.0722])


class JudgeError(ValueError):
    """Input the judge cannot work with; ``reason_code`` names the problem."""

    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(f"{reason_code}: {detail}")
        self.reason_code = reason_code
        self.detail = detail


@dataclass(frozen=True)
class JudgeThresholds:
    """Every cut-off the judge uses; part of a label's provenance (see ``digest``)."""

    contrast_small_text: float = 4.5       # WCAG 1.4.3 minimum for normal text
    contrast_large_text: float = 3.0       # ... and for large text
    large_text_px: float = 24.0            # 18 pt
    large_bold_text_px: float = 18.66      # 14 pt bold
    min_legible_px: float = 9.0
    glyph_distance: float = 48.0           # RGB distance under which a box pixel is taken for the text itself
    overlap_ratio: float = 0.10            # intersection over the smaller (or the text) box that counts
    contained_ratio: float = 0.90          # ... and at which a box counts as inside the other
    frame_area_ratio: float = 4.0          # a later element containing the text and this much larger: a panel
    align_tolerance_px: float = 2.0
    align_near_px: float = 12.0
    balance_x: float = 0.12                # centroid offset, fraction of canvas width, that tips the balance
    balance_y: float = 0.20                # ... of canvas height (designs are often top-heavy on purpose)
    mass_floor: float = 0.08               # colour distance (0-1) below which a pixel carries no mass
    edge_margin_px: float = 2.0            # text closer than this to a canvas edge touches it
    crop_fraction: float = 0.25            # share of an element's size beyond the canvas that cuts it off
    bleed_fraction: float = 0.5            # elements at least this share of the canvas may bleed off
    hierarchy_char_ratio: float = 2.0      # "body" has at least this many times the characters of "headline"
    hierarchy_size_ratio: float = 1.15     # ... and an inversion is body set this much larger
    blur_max: float = 0.6                  # blur measure above this is a blurred graphic
    blur_min_structure: float = 3.0        # grey-level spread a region needs for its blur to be measured
    block_min_lines: int = 6               # grid lines a region needs before blockiness is believed
    block_grid_share: float = 0.9          # share of edge energy on the grid
    min_visible_share: float = 0.3         # share of a graphic's box not covered by later elements to judge it
    chroma_saturation: float = 0.35        # HSV saturation (and value >= 0.2) for a pixel or colour to have a hue
    chroma_share: float = 0.3              # share of an element's pixels with a hue for the element to have one
    clash_low_deg: float = 30.0
    clash_high_deg: float = 100.0
    palette_min_share: float = 0.10        # the rest of the design's dominant hue must hold this share of its pixels
    busy_hue_families: int = 4
    busy_family_share: float = 0.08

    def digest(self) -> str:
        return digest_of({"judge_version": JUDGE_VERSION, **asdict(self)})


@dataclass(frozen=True)
class Claim:
    """One measured statement, about one element (``element_id``) or the whole design (None)."""

    element_id: str | None
    text: str


@dataclass(frozen=True)
class Judgement:
    indicator: str
    flawed: bool
    score: float
    evidence: Mapping[str, Any]
    boxes: tuple[str, ...]  # element ids of the elements that carry the flaw, most severe first
    claims: tuple[Claim, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"indicator": self.indicator, "flawed": self.flawed, "score": self.score, "evidence": dict(self.evidence),
                "boxes": list(self.boxes), "claims": [asdict(c) for c in self.claims]}


# --- colour ------------------------------------------------------------------------------------------------


def relative_luminance(rgb: Sequence[float]) -> float:
    """WCAG 2 relative luminance of an sRGB colour given as 0-255 channels."""
    return float(_luminance(np.asarray(rgb, dtype=np.float64)))


def contrast_ratio(foreground: Sequence[float], background: Sequence[float]) -> float:
    """WCAG 2 contrast ratio (1 to 21) of two sRGB colours (0-255 channels)."""
    return _ratio(relative_luminance(foreground), relative_luminance(background))


def _luminance(rgb: np.ndarray) -> np.ndarray:
    c = rgb / 255.0
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return linear @ _GREY


def _ratio(l1: float, l2: float) -> float:
    high, low = max(l1, l2), min(l1, l2)
    return (high + 0.05) / (low + 0.05)


def _hsv(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hue (degrees), saturation and value (0-1) of 0-255 RGB pixels (any leading shape)."""
    x = rgb.astype(np.float64) / 255.0
    high, low = x.max(axis=-1), x.min(axis=-1)
    delta = high - low
    safe = np.where(delta > 0, delta, 1.0)
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    hue = np.where(high == r, ((g - b) / safe) % 6.0, np.where(high == g, (b - r) / safe + 2.0, (r - g) / safe + 4.0))
    saturation = np.divide(delta, high, out=np.zeros_like(high), where=high > 0)
    return np.where(delta > 0, hue * 60.0, 0.0), saturation, high


def _hue_distance(a: float, b: float) -> float:
    d = abs(a - b) % 360.0
    return min(d, 360.0 - d)


def _hex(rgb: Sequence[float]) -> str:
    return "#" + "".join(f"{int(round(min(max(c, 0), 255))):02x}" for c in rgb[:3])


# --- geometry ----------------------------------------------------------------------------------------------


def element_bounds(element: Element) -> XYXY:
    """Axis-aligned bounds of the element after its rotation about its centre (x1, y1, x2, y2)."""
    cx, cy = element.left + element.width / 2.0, element.top + element.height / 2.0
    if element.angle % 180.0 == 0.0:
        half_w, half_h = element.width / 2.0, element.height / 2.0
    else:
        rad = math.radians(element.angle)
        cos, sin = abs(math.cos(rad)), abs(math.sin(rad))
        half_w = (element.width * cos + element.height * sin) / 2.0
        half_h = (element.width * sin + element.height * cos) / 2.0
    return (cx - half_w, cy - half_h, cx + half_w, cy + half_h)


def clip_box(box: XYXY, width: float, height: float) -> XYXY | None:
    """The part of ``box`` on the canvas, or None when nothing of it is."""
    x1, y1, x2, y2 = max(box[0], 0.0), max(box[1], 0.0), min(box[2], float(width)), min(box[3], float(height))
    return (x1, y1, x2, y2) if x2 > x1 and y2 > y1 else None


def _area(box: XYXY) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def _intersection(a: XYXY, b: XYXY) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def _r(value: float, digits: int = 4) -> float:
    return round(float(value), digits)


def _box_list(box: XYXY) -> list[float]:
    return [_r(v, 2) for v in box]


# --- the shared view of one design ---------------------------------------------------------------------------


@dataclass
class _View:
    """One design and its render, measured lazily and shared by all indicators of one ``judge_design`` call."""

    design: Design
    pixels: np.ndarray  # H x W x 3 uint8
    thresholds: JudgeThresholds
    render_without: RenderWithout | None
    sx: float = 1.0
    sy: float = 1.0
    bounds: list[XYXY] = field(default_factory=list)
    visible: list[XYXY | None] = field(default_factory=list)  # bounds clipped to the canvas, None when unseen
    _cache: dict[str, Any] = field(default_factory=dict)

    @property
    def width(self) -> int:
        return self.design.canvas_width

    @property
    def height(self) -> int:
        return self.design.canvas_height

    def is_shown(self, index: int) -> bool:
        return self.visible[index] is not None and self.design.elements[index].opacity > 0.05

    def is_backdrop(self, index: int) -> bool:
        element, box = self.design.elements[index], self.visible[index]
        return element.type == "background" or (box is not None and _area(box) >= 0.9 * self.width * self.height)

    def foreground(self) -> list[int]:
        """Indexes of visible elements that are not backdrops, in paint order."""
        return [i for i in range(len(self.design.elements)) if self.is_shown(i) and not self.is_backdrop(i)]

    def texts(self) -> list[int]:
        return [i for i in self.foreground() if self.design.elements[i].type == "text"]

    def slices(self, box: XYXY) -> tuple[slice, slice]:
        """Render rows and columns that a canvas box covers (at least one pixel each way)."""
        h, w = self.pixels.shape[:2]
        x1 = min(max(int(math.floor(box[0] * self.sx)), 0), w - 1)
        y1 = min(max(int(math.floor(box[1] * self.sy)), 0), h - 1)
        x2 = min(max(int(math.ceil(box[2] * self.sx)), x1 + 1), w)
        y2 = min(max(int(math.ceil(box[3] * self.sy)), y1 + 1), h)
        return slice(y1, y2), slice(x1, x2)

    def uncovered_mask(self, index: int, rows: slice, cols: slice) -> np.ndarray:
        """Pixels of a crop not under the box of any visible element painted after ``index``."""
        mask = np.ones((rows.stop - rows.start, cols.stop - cols.start), dtype=bool)
        for later in range(index + 1, len(self.design.elements)):
            box = self.visible[later]
            if box is None or not self.is_shown(later):
                continue
            r, c = self.slices(box)
            r0, r1 = max(r.start, rows.start) - rows.start, min(r.stop, rows.stop) - rows.start
            c0, c1 = max(c.start, cols.start) - cols.start, min(c.stop, cols.stop) - cols.start
            if r1 > r0 and c1 > c0:
                mask[r0:r1, c0:c1] = False
        return mask

    def border_colour(self) -> np.ndarray:
        if "border" not in self._cache:
            h, w = self.pixels.shape[:2]
            band_y, band_x = max(1, round(h * _BORDER_FRACTION)), max(1, round(w * _BORDER_FRACTION))
            ring = np.concatenate([
                self.pixels[:band_y].reshape(-1, 3), self.pixels[h - band_y:].reshape(-1, 3),
                self.pixels[:, :band_x].reshape(-1, 3), self.pixels[:, w - band_x:].reshape(-1, 3),
            ])
            self._cache["border"] = np.median(ring, axis=0)
        return self._cache["border"]

    def small(self) -> np.ndarray:
        """A copy whose longer side is at most 256 pixels, for whole-canvas measures."""
        if "small" not in self._cache:
            h, w = self.pixels.shape[:2]
            scale = min(1.0, _MASS_SIDE / max(h, w))
            image = Image.fromarray(self.pixels)
            if scale < 1.0:
                image = image.resize((max(1, round(w * scale)), max(1, round(h * scale))), Image.Resampling.BOX)
            self._cache["small"] = np.asarray(image, dtype=np.float64)
        return self._cache["small"]


def _view(design: Design, render: Image.Image, thresholds: JudgeThresholds, render_without: RenderWithout | None) -> _View:
    if design.canvas_width <= 0 or design.canvas_height <= 0:
        raise JudgeError("bad_canvas", f"design {design.design_id} has canvas {design.canvas_width}x{design.canvas_height}")
    canvas_aspect = design.canvas_width / design.canvas_height
    if abs(render.width / render.height - canvas_aspect) > 0.02 * canvas_aspect:
        raise JudgeError("render_size", f"render is {render.width}x{render.height} but design {design.design_id} "
                                        f"has canvas {design.canvas_width}x{design.canvas_height} (another aspect ratio)")
    pixels = np.asarray(_flatten(render))
    view = _View(design, pixels, thresholds, render_without,
                 sx=render.width / design.canvas_width, sy=render.height / design.canvas_height)
    view.bounds = [element_bounds(e) for e in design.elements]
    view.visible = [clip_box(b, design.canvas_width, design.canvas_height) for b in view.bounds]
    return view


def _flatten(image: Image.Image) -> Image.Image:
    if image.mode == "RGB":
        return image
    if "A" in image.getbands() or image.mode == "P":
        rgba = image.convert("RGBA")
        flat = Image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    return image.convert("RGB")


# --- text contrast -----------------------------------------------------------------------------------------------


def _is_large(element: Element, thresholds: JudgeThresholds) -> bool:
    size = element.font_size or 0.0
    bold = any(word in (element.font or "").lower() for word in _BOLD_WORDS)
    return size >= thresholds.large_text_px or (bold and size >= thresholds.large_bold_text_px)


def _text_contrasts(view: _View) -> list[dict[str, Any]]:
    """Per visible text element: its colour, the background under it and their contrast ratio (cached)."""
    if "contrast" in view._cache:
        return view._cache["contrast"]
    t = view.thresholds
    rows_out = []
    for index in view.texts():
        element = view.design.elements[index]
        rows, cols = view.slices(view.visible[index])
        crop = view.pixels[rows, cols].reshape(-1, 3).astype(np.float64)
        if view.render_without is not None:
            without = np.asarray(_flatten(view.render_without(index)))
            if without.shape != view.pixels.shape:
                raise JudgeError("render_size", f"render_without({index}) is {without.shape[1]}x{without.shape[0]}, "
                                                f"the render {view.pixels.shape[1]}x{view.pixels.shape[0]}")
            ground = without[rows, cols].reshape(-1, 3).astype(np.float64)
            source = "render_without"
        else:
            ground, source = crop, "render"
        if element.color is not None:
            ink = np.asarray(element.color, dtype=np.float64)
        else:  # no colour in the record: the box pixel farthest from the box's median colour
            distance = np.linalg.norm(crop - np.median(crop, axis=0), axis=1)
            ink = crop[int(np.argmax(distance))]
        if source == "render":
            away = np.linalg.norm(ground - ink, axis=1) > t.glyph_distance
            if away.mean() >= 0.1:
                ground, source = ground[away], "render_around_glyphs"
            else:
                source = "render_whole_box"
        ground_luminance = float(np.median(_luminance(ground)))
        ground_colour = np.median(ground, axis=0)
        # The renderer blends text at its opacity, so the ink seen is a mix with what lies under it.
        seen = element.opacity * ink + (1.0 - element.opacity) * ground_colour
        ratio = _ratio(relative_luminance(seen), ground_luminance)
        large = _is_large(element, t)
        required = t.contrast_large_text if large else t.contrast_small_text
        rows_out.append({
            "element_id": element.element_id, "index": index, "text_colour": _hex(seen),
            "background_colour": _hex(ground_colour), "background_luminance": _r(ground_luminance),
            "contrast_ratio": _r(ratio, 3), "required": required, "large_text": large,
            "font_size": element.font_size, "background_source": source,
        })
    view._cache["contrast"] = rows_out
    return rows_out


def _judge_contrast(view: _View, indicator: str) -> Judgement:
    t = view.thresholds
    measured = _text_contrasts(view)
    if not measured:
        return _not_measurable(indicator, "the design has no visible text")
    failing = [m for m in measured if m["contrast_ratio"] < m["required"]]
    tiny: list[dict[str, Any]] = []
    if indicator == "font_legibility":
        tiny = [m for m in measured if m["font_size"] is not None and m["font_size"] < t.min_legible_px]
    severity = [(m["required"] - m["contrast_ratio"]) / (m["required"] - 1.0) for m in failing]
    severity += [1.0 - m["font_size"] / t.min_legible_px for m in tiny]
    score = _r(min(1.0, max(severity, default=0.0)))
    ordered = sorted(failing, key=lambda m: m["contrast_ratio"]) + [m for m in tiny if m not in failing]
    claims = [Claim(m["element_id"], f"text {m['text_colour']} on {m['background_colour']} has contrast "
                                     f"{m['contrast_ratio']:.2f}:1, below the {m['required']:g}:1 that "
                                     f"{'large' if m['large_text'] else 'normal-size'} text needs") for m in failing]
    claims += [Claim(m["element_id"], f"text set at {m['font_size']:g} px is below the {t.min_legible_px:g} px "
                                      f"that stays legible") for m in tiny]
    if not ordered:
        worst = min(measured, key=lambda m: m["contrast_ratio"] / m["required"])
        claims = [Claim(worst["element_id"], f"the lowest text contrast is {worst['contrast_ratio']:.2f}:1, "
                                             f"at least the {worst['required']:g}:1 it needs")]
    evidence = {"measurable": True, "texts": [{k: v for k, v in m.items() if k != "index"} for m in measured],
                "min_contrast_ratio": min(m["contrast_ratio"] for m in measured)}
    if indicator == "font_legibility":
        evidence["min_legible_px"] = t.min_legible_px
    return Judgement(indicator, score > 0, score, evidence, _ids(m["element_id"] for m in ordered), tuple(claims))


# --- layering ----------------------------------------------------------------------------------------------------


def _judge_layering(view: _View) -> Judgement:
    t = view.thresholds
    elements = view.design.elements
    texts, foreground = view.texts(), view.foreground()
    if not texts or len(foreground) < 2:
        return _not_measurable("layout_layering", "the design has no text element with another element to overlap")
    found: list[dict[str, Any]] = []
    for ti in texts:
        tbox = view.visible[ti]
        for oi in foreground:
            if oi == ti or (elements[oi].type == "text" and oi < ti):
                continue  # each text pair once
            obox = view.visible[oi]
            inter = _intersection(tbox, obox)
            if inter <= 0:
                continue
            of_text, of_other = inter / _area(tbox), inter / _area(obox)
            kind = None
            if elements[oi].type == "text":
                if inter / min(_area(tbox), _area(obox)) > t.overlap_ratio:
                    kind = "text_overlaps_text"
            elif oi > ti:
                panel = of_text >= t.contained_ratio and _area(obox) >= t.frame_area_ratio * _area(tbox)
                if of_text > t.overlap_ratio and not panel:
                    kind = "covered_by_later_element"
            elif t.overlap_ratio < of_text < t.contained_ratio and of_other < t.contained_ratio:
                kind = "straddles_element_edge"
            if kind:
                found.append({"text": elements[ti].element_id, "other": elements[oi].element_id, "kind": kind,
                              "of_text": _r(of_text), "of_other": _r(of_other),
                              "of_smaller": _r(inter / min(_area(tbox), _area(obox)))})
    found.sort(key=lambda f: -f["of_smaller"])
    score = _r(max((f["of_smaller"] for f in found), default=0.0))
    words = {"text_overlaps_text": "overlaps text", "covered_by_later_element": "is partly covered by",
             "straddles_element_edge": "sits half on, half off"}
    claims = tuple(Claim(f["text"], f"this text {words[f['kind']]} element {f['other']} "
                                    f"({f['of_text']:.0%} of the text box)") for f in found)
    if not claims:
        claims = (Claim(None, f"none of the {len(texts)} text boxes overlaps another text or sits partly under or "
                              "across another element"),)
    boxes = _ids(x for f in found for x in (f["text"], f["other"]))
    evidence = {"measurable": True, "overlaps": found, "texts_checked": len(texts), "overlap_ratio": t.overlap_ratio}
    return Judgement("layout_layering", score > 0, score, evidence, boxes, claims)


# --- alignment ---------------------------------------------------------------------------------------------------


def _edges(box: XYXY) -> dict[str, float]:
    return {"left": box[0], "centre": (box[0] + box[2]) / 2.0, "right": box[2]}


def _judge_alignment(view: _View) -> Judgement:
    t = view.thresholds
    indexes = view.foreground()
    if len(indexes) < 2:
        return _not_measurable("layout_alignment", "fewer than two foreground elements to align")
    edges = {i: _edges(view.bounds[i]) for i in indexes}
    rows, near = [], []
    for i in indexes:
        best_distance, best_to, best_edge = math.inf, None, None
        for name, value in edges[i].items():
            targets = [(edges[j][name], view.design.elements[j].element_id) for j in indexes if j != i]
            if name == "centre":
                targets.append((view.width / 2.0, "canvas_centre"))
            for target, target_id in targets:
                distance = abs(value - target)
                if distance < best_distance:
                    best_distance, best_to, best_edge = distance, target_id, name
        aligned = best_distance <= t.align_tolerance_px
        near_miss = not aligned and best_distance <= t.align_near_px
        row = {"element_id": view.design.elements[i].element_id, "aligned": aligned, "near_miss": near_miss,
               "nearest_edge": best_edge, "nearest_to": best_to, "distance_px": _r(best_distance, 2)}
        rows.append(row)
        if near_miss:
            near.append(row)
    near.sort(key=lambda r: -r["distance_px"])
    score = _r(len(near) / len(rows))
    claims = tuple(Claim(r["element_id"], f"its {r['nearest_edge']} edge misses the {r['nearest_edge']} of "
                                          f"{r['nearest_to']} by {r['distance_px']:g} px and aligns with nothing")
                   for r in near)
    if not claims:
        claims = (Claim(None, f"{sum(r['aligned'] for r in rows)} of {len(rows)} elements share an edge or centre "
                              "line with another, and none misses one by a few pixels"),)
    evidence = {"measurable": True, "elements": rows, "aligned_count": sum(r["aligned"] for r in rows),
                "near_miss_count": len(near), "tolerance_px": t.align_tolerance_px, "near_px": t.align_near_px}
    return Judgement("layout_alignment", score > 0, score, evidence, _ids(r["element_id"] for r in near), claims)


# --- balance and whitespace --------------------------------------------------------------------------------------


def _mass(view: _View) -> np.ndarray:
    if "mass" not in view._cache:
        small = view.small()
        distance = np.linalg.norm(small - view.border_colour(), axis=2) / (255.0 * math.sqrt(3.0))
        view._cache["mass"] = np.where(distance >= view.thresholds.mass_floor, distance, 0.0)
    return view._cache["mass"]


def _judge_balance(view: _View) -> Judgement:
    t = view.thresholds
    mass = _mass(view)
    total = float(mass.sum())
    if total <= 1e-9:
        return _not_measurable("layout_balance", "nothing stands out from the backdrop colour")
    h, w = mass.shape
    ys, xs = np.mgrid[0:h, 0:w]
    cx, cy = float((mass * (xs + 0.5)).sum() / total) / w, float((mass * (ys + 0.5)).sum() / total) / h
    dx, dy = cx - 0.5, cy - 0.5
    tilt = max(abs(dx) / t.balance_x, abs(dy) / t.balance_y)
    score = _r(min(1.0, max(0.0, tilt - 1.0)))
    # The element that pulls hardest towards the heavy side: its mass times its lever along the offset.
    direction = np.array([dx, dy]) / (math.hypot(dx, dy) or 1.0)
    pulls = []
    for i in view.foreground():
        box = view.visible[i]
        r0, r1 = int(box[1] / view.height * h), max(int(box[1] / view.height * h) + 1, int(math.ceil(box[3] / view.height * h)))
        c0, c1 = int(box[0] / view.width * w), max(int(box[0] / view.width * w) + 1, int(math.ceil(box[2] / view.width * w)))
        lever = np.array([(box[0] + box[2]) / 2.0 / view.width - 0.5, (box[1] + box[3]) / 2.0 / view.height - 0.5])
        pull = float(mass[r0:r1, c0:c1].sum() / total * (lever @ direction))
        pulls.append((pull, view.design.elements[i].element_id))
    pulls.sort(key=lambda p: (-p[0], p[1]))
    heaviest = pulls[0] if pulls and pulls[0][0] > 0 else None
    side = ("right" if dx > 0 else "left") if abs(dx) / t.balance_x >= abs(dy) / t.balance_y else ("lower" if dy > 0 else "upper")
    claims = [Claim(None, f"the visual mass centres at {cx:.0%} across and {cy:.0%} down, "
                          f"{'too far towards the ' + side + ' side' if score > 0 else 'close enough to the centre'}")]
    if score > 0 and heaviest:
        claims.append(Claim(heaviest[1], f"this element pulls the weight towards the {side} side"))
    evidence = {"measurable": True, "centroid": [_r(cx), _r(cy)], "offset": [_r(dx), _r(dy)],
                "limits": [t.balance_x, t.balance_y], "backdrop_colour": _hex(view.border_colour()),
                "heaviest_pull": [heaviest[1], _r(heaviest[0])] if heaviest else None}
    boxes = (heaviest[1],) if score > 0 and heaviest else ()
    return Judgement("layout_balance", score > 0, score, evidence, boxes, tuple(claims))


def _judge_whitespace(view: _View) -> Judgement:
    t = view.thresholds
    indexes = view.foreground()
    if not indexes:
        return _not_measurable("layout_whitespace", "no foreground elements")
    rows, flagged = [], []
    for i in indexes:
        element, box = view.design.elements[i], view.bounds[i]
        margins = {"left": box[0], "top": box[1], "right": view.width - box[2], "bottom": view.height - box[3]}
        edge, margin = min(margins.items(), key=lambda kv: kv[1])
        problem = None
        if element.type == "text" and margin < t.edge_margin_px:
            problem = "crosses_edge" if margin < 0 else "touches_edge"
        elif element.type != "text":
            for name, size, canvas in (("left", box[2] - box[0], view.width), ("right", box[2] - box[0], view.width),
                                       ("top", box[3] - box[1], view.height), ("bottom", box[3] - box[1], view.height)):
                if margins[name] < 0 and -margins[name] > t.crop_fraction * size and size < t.bleed_fraction * canvas:
                    problem, edge, margin = "cut_off", name, margins[name]
                    break
        row = {"element_id": element.element_id, "type": element.type, "min_margin_px": _r(margin, 2),
               "edge": edge, "problem": problem}
        rows.append(row)
        if problem:
            flagged.append(row)
    flagged.sort(key=lambda r: r["min_margin_px"])
    score = _r(len(flagged) / len(rows))
    words = {"crosses_edge": "runs past", "touches_edge": "touches", "cut_off": "is cut off by"}
    claims = tuple(Claim(r["element_id"], f"this {r['type']} {words[r['problem']]} the {r['edge']} edge of the canvas "
                                          f"(margin {r['min_margin_px']:g} px)") for r in flagged)
    if not claims:
        closest = min(rows, key=lambda r: r["min_margin_px"])
        margin = closest["min_margin_px"]
        where = f"bleeds {-margin:g} px past" if margin < 0 else f"keeps {margin:g} px from"
        claims = (Claim(closest["element_id"], f"the element closest to a canvas edge {where} the {closest['edge']} edge"),)
    evidence = {"measurable": True, "elements": rows, "edge_margin_px": t.edge_margin_px, "crop_fraction": t.crop_fraction}
    return Judgement("layout_whitespace", score > 0, score, evidence, _ids(r["element_id"] for r in flagged), claims)


# --- font hierarchy ----------------------------------------------------------------------------------------------


def _judge_hierarchy(view: _View) -> Judgement:
    t = view.thresholds
    texts = [view.design.elements[i] for i in view.texts()]
    texts = [e for e in texts if e.font_size and (e.text or "").strip()]
    if len(texts) < 2:
        return _not_measurable("font_hierarchy", "fewer than two sized text elements to rank")
    chars = {e.element_id: len("".join((e.text or "").split())) for e in texts}
    inversions = []
    for body in texts:
        for head in texts:
            if body is head or chars[body.element_id] < t.hierarchy_char_ratio * chars[head.element_id]:
                continue
            if body.font_size > t.hierarchy_size_ratio * head.font_size:
                inversions.append({"longer": body.element_id, "shorter": head.element_id,
                                   "longer_chars": chars[body.element_id], "shorter_chars": chars[head.element_id],
                                   "longer_px": body.font_size, "shorter_px": head.font_size,
                                   "size_ratio": _r(body.font_size / head.font_size, 3)})
    inversions.sort(key=lambda v: -v["size_ratio"])
    pairs = len(texts) * (len(texts) - 1) / 2
    score = _r(min(1.0, len(inversions) / pairs))
    ranked = sorted(texts, key=lambda e: (-e.font_size, e.element_id))
    claims = tuple(Claim(v["longer"], f"this text of {v['longer_chars']} characters is set at {v['longer_px']:g} px, "
                                      f"larger than the {v['shorter_chars']}-character text {v['shorter']} "
                                      f"at {v['shorter_px']:g} px") for v in inversions)
    if not claims:
        top = ranked[0]
        claims = (Claim(top.element_id, f"the largest text ({top.font_size:g} px) is also among the shortest "
                                        f"({chars[top.element_id]} characters)"),)
    evidence = {"measurable": True, "inversions": inversions,
                "texts": [{"element_id": e.element_id, "font_size": e.font_size, "characters": chars[e.element_id],
                           "top": _r(e.top, 2)} for e in ranked]}
    boxes = _ids(x for v in inversions for x in (v["longer"], v["shorter"]))
    return Judgement("font_hierarchy", score > 0, score, evidence, boxes, claims)


# --- graphics quality --------------------------------------------------------------------------------------------


def blur_measure(grey: np.ndarray, mask: np.ndarray | None = None) -> tuple[float, float]:
    """No-reference blur (0 sharp .. 1 blurred) and the region's grey-level standard deviation (its structure).

    After Crete-Roffet et al. (2007): the region is re-blurred with a 9-pixel box along each axis; a sharp region
    loses much of its step energy, an already blurred one little. We weight each step by its own size, so strong
    edges decide and smooth gradients (which lose little under a re-blur by nature) do not read as blur. Steps
    are counted only between two pixels inside ``mask``; the worse axis is reported.
    """
    grey = grey.astype(np.float64)
    mask = np.ones(grey.shape, dtype=bool) if mask is None else mask
    if min(grey.shape) < 10 or not mask.any():
        return 0.0, 0.0
    results = []
    for axis in (0, 1):
        blurred = _box_blur(grey, axis)
        d_f = np.abs(np.diff(grey, axis=axis))
        d_b = np.abs(np.diff(blurred, axis=axis))
        both = mask[1:, :] & mask[:-1, :] if axis == 0 else mask[:, 1:] & mask[:, :-1]
        d_f, d_b = d_f[both], d_b[both]
        weight = float((d_f * d_f).sum())
        if weight <= 0:
            return 0.0, 0.0
        kept = float((np.maximum(0.0, d_f - d_b) * d_f).sum())
        results.append(1.0 - kept / weight)
    return max(results), float(grey[mask].std())


def _box_blur(grey: np.ndarray, axis: int, size: int = 9) -> np.ndarray:
    pad = [(0, 0), (0, 0)]
    pad[axis] = (size // 2, size // 2)
    padded = np.pad(grey, pad, mode="edge")
    cumulative = np.cumsum(padded, axis=axis)
    cumulative = np.concatenate([np.zeros_like(np.take(cumulative, [0], axis=axis)), cumulative], axis=axis)
    n = grey.shape[axis]
    return (np.take(cumulative, range(size, size + n), axis=axis) - np.take(cumulative, range(0, n), axis=axis)) / size


def grid_blockiness(grey: np.ndarray, thresholds: JudgeThresholds | None = None) -> float | None:
    """Estimated block size when the region's edges sit on a regular grid both ways, 0.0 when they do not,
    None when there are too few edges to tell.

    Nearest-neighbour upscaling of a downsampled layer puts every step on the block boundaries: the columns
    (and rows) that carry step energy are few and evenly spaced. A photograph steps in nearly every column and a
    vector shape at a handful of unrelated ones.
    """
    t = thresholds or JudgeThresholds()
    sizes = []
    for axis in (1, 0):
        energy = np.abs(np.diff(grey.astype(np.float64), axis=axis)).sum(axis=1 - axis)
        total = float(energy.sum())
        if total <= 0:
            return None
        active = np.flatnonzero(energy > 0.05 * energy.max())
        if len(active) < t.block_min_lines:
            return None
        gaps = np.diff(active)
        step = float(np.median(gaps))
        on_grid = float(energy[active].sum()) / total
        regular = float(np.mean(np.abs(gaps - step) <= 1.0))
        if step < 2.0 or on_grid < t.block_grid_share or regular < 0.8:
            return 0.0
        sizes.append(step)
    return float(min(sizes))


def _judge_graphics_quality(view: _View) -> Judgement:
    t = view.thresholds
    elements = view.design.elements
    candidates = [i for i in range(len(elements)) if view.is_shown(i) and elements[i].type in ("image", "svg")]
    rows, flagged = [], []
    for i in candidates:
        rows_, cols = view.slices(view.visible[i])
        mask = view.uncovered_mask(i, rows_, cols)
        row: dict[str, Any] = {"element_id": elements[i].element_id, "visible_share": _r(mask.mean())}
        if mask.mean() < t.min_visible_share:
            row["measurable"] = False
            rows.append(row)
            continue
        grey = view.pixels[rows_, cols].astype(np.float64) @ _GREY
        blur, structure = blur_measure(grey, mask)
        block = grid_blockiness(np.where(mask, grey, np.median(grey[mask])), t)
        measurable_blur = structure >= t.blur_min_structure
        row.update({"measurable": measurable_blur or bool(block), "blur": _r(blur), "grey_std": _r(structure, 3),
                    "block_size": block})
        problems = []
        if measurable_blur and blur > t.blur_max:
            problems.append("blurred")
        if block:
            problems.append("blocky")
        row["problems"] = problems
        rows.append(row)
        if problems:
            flagged.append(row)
    measured = [r for r in rows if r["measurable"]]
    if not measured:
        why = "no image or svg element" if not candidates else "no graphic has enough visible detail to judge sharpness"
        return _not_measurable("graphics_quality", why)
    flagged.sort(key=lambda r: -r["blur"])
    score = _r(len(flagged) / len(measured))
    claims = []
    for r in flagged:
        parts = []
        if "blurred" in r["problems"]:
            parts.append(f"a further blur removes only {1 - r['blur']:.0%} of its edge energy (blur {r['blur']:.2f})")
        if "blocky" in r["problems"]:
            parts.append(f"its edges sit on a {r['block_size']:g}-pixel block grid")
        claims.append(Claim(r["element_id"], "this graphic looks degraded: " + "; ".join(parts)))
    if not claims:
        worst = max(measured, key=lambda r: r["blur"])
        claims.append(Claim(worst["element_id"], f"the softest graphic still has blur {worst['blur']:.2f}, "
                                                 f"within the {t.blur_max:g} limit"))
    evidence = {"measurable": True, "graphics": rows, "blur_max": t.blur_max}
    return Judgement("graphics_quality", score > 0, score, evidence, _ids(r["element_id"] for r in flagged), tuple(claims))


# --- colour harmony and appeal -----------------------------------------------------------------------------------


def _element_hue(view: _View, index: int) -> tuple[float, float] | None:
    """(hue, saturation) of an element that has one: text from its colour, others from their chromatic pixels."""
    t = view.thresholds
    element = view.design.elements[index]
    if element.type == "text" and element.color is not None:
        hue, sat, val = _hsv(np.asarray(element.color, dtype=np.float64))
        return (float(hue), float(sat)) if sat >= t.chroma_saturation and val >= 0.2 else None
    rows, cols = view.slices(view.visible[index])
    mask = view.uncovered_mask(index, rows, cols)
    hue, sat, val = _hsv(view.pixels[rows, cols][mask])
    chromatic = (sat >= t.chroma_saturation) & (val >= 0.2)
    if chromatic.size == 0 or chromatic.mean() < t.chroma_share:
        return None
    return _circular_mean(hue[chromatic], sat[chromatic]), float(np.median(sat[chromatic]))


def _circular_mean(hues: np.ndarray, weights: np.ndarray) -> float:
    rad = np.radians(hues)
    return float(math.degrees(math.atan2(float((np.sin(rad) * weights).sum()), float((np.cos(rad) * weights).sum()))) % 360.0)


def _chromatic_small(view: _View) -> tuple[np.ndarray, np.ndarray]:
    """Hues and a chromatic mask of the 256-pixel copy (cached)."""
    if "hues" not in view._cache:
        hue, sat, val = _hsv(view.small())
        view._cache["hues"] = (hue, (sat >= view.thresholds.chroma_saturation) & (val >= 0.2))
    return view._cache["hues"]


def _clashes(view: _View) -> tuple[list[dict[str, Any]], int]:
    """Elements whose hue stands in a discordant relation to the dominant hue of the rest of the design."""
    if "clashes" in view._cache:
        return view._cache["clashes"]
    t = view.thresholds
    hue, chromatic = _chromatic_small(view)
    h, w = hue.shape
    found, checked = [], 0
    for i in view.foreground():
        own = _element_hue(view, i)
        if own is None:
            continue
        box = view.visible[i]
        outside = np.ones((h, w), dtype=bool)
        outside[int(box[1] / view.height * h):int(math.ceil(box[3] / view.height * h)),
                int(box[0] / view.width * w):int(math.ceil(box[2] / view.width * w))] = False
        rest = chromatic & outside
        if rest.sum() == 0:
            continue
        # The dominant hue of everything outside the element: the fullest 30-degree window of a 10-degree histogram.
        bins = np.bincount((hue[rest] // 10).astype(int) % 36, minlength=36).astype(np.float64)
        smoothed = bins + np.roll(bins, 1) + np.roll(bins, -1)
        peak = int(np.argmax(smoothed))
        share = float(smoothed[peak] / outside.sum())
        window = [(peak + k) % 36 for k in (-1, 0, 1)]
        in_peak = np.isin((hue[rest] // 10).astype(int) % 36, window)
        if share < t.palette_min_share:
            continue  # no main hue around the element to relate it to
        checked += 1
        dominant = _circular_mean(hue[rest][in_peak], np.ones(int(in_peak.sum())))
        distance = _hue_distance(own[0], dominant)
        if t.clash_low_deg < distance < t.clash_high_deg:
            found.append({"element_id": view.design.elements[i].element_id, "hue": _r(own[0], 1),
                          "saturation": _r(own[1], 3), "palette_hue": _r(dominant, 1), "palette_share": _r(share),
                          "hue_distance": _r(distance, 1)})
    view._cache["clashes"] = (found, checked)
    return found, checked


def _palette_families(view: _View) -> list[dict[str, Any]]:
    hue, chromatic = _chromatic_small(view)
    hues = hue[chromatic]
    if hues.size == 0:
        return []
    counts = np.bincount(((hues + 15.0) % 360.0 // 30.0).astype(int), minlength=12)
    return [{"centre_deg": k * 30, "share": _r(c / hues.size)} for k, c in enumerate(counts) if c > 0]


def _judge_harmony(view: _View) -> Judgement:
    clashes, checked = _clashes(view)
    if not checked:
        return _not_measurable("color_harmony", "no saturated foreground element sits in a design with a main hue")
    hue, chromatic = _chromatic_small(view)
    score = _r(min(1.0, len(clashes) / checked))
    claims = [Claim(c["element_id"], f"its hue ({c['hue']:.0f} deg) sits {c['hue_distance']:.0f} deg from the "
                                     f"design's main hue ({c['palette_hue']:.0f} deg): neither close nor opposite")
              for c in clashes]
    if not claims:
        claims = [Claim(None, f"all {checked} coloured elements sit in analogous, triadic or complementary relations "
                              "to the main hue")]
    evidence = {"measurable": True, "clashes": clashes, "coloured_elements": checked,
                "chromatic_share": _r(chromatic.mean()), "hue_families": _palette_families(view),
                "discordant_band_deg": [view.thresholds.clash_low_deg, view.thresholds.clash_high_deg]}
    return Judgement("color_harmony", score > 0, score, evidence, _ids(c["element_id"] for c in clashes), tuple(claims))


def _judge_appeal(view: _View) -> Judgement:
    t = view.thresholds
    clashes, checked = _clashes(view)
    families = _palette_families(view)
    _, chromatic = _chromatic_small(view)
    if not checked and not families:
        return _not_measurable("color_appeal", "the design has no saturated colour to judge")
    strong = [f for f in families if f["share"] >= t.busy_family_share]
    busy = len(strong) >= t.busy_hue_families and chromatic.mean() >= 0.2
    score = _r(min(1.0, (len(clashes) / checked if checked else 0.0) + (0.5 if busy else 0.0)))
    claims = [Claim(c["element_id"], f"its hue clashes with the main hue ({c['hue_distance']:.0f} deg apart)")
              for c in clashes]
    if busy:
        claims.append(Claim(None, f"{len(strong)} competing hue families each cover at least "
                                  f"{t.busy_family_share:.0%} of the coloured area"))
    if not claims:
        claims = [Claim(None, f"{len(strong)} main hue {'family' if len(strong) == 1 else 'families'} "
                              "and no clashing element")]
    evidence = {"measurable": True, "clashes": clashes, "busy_palette": busy, "strong_families": strong,
                "chromatic_share": _r(chromatic.mean())}
    return Judgement("color_appeal", score > 0, score, evidence, _ids(c["element_id"] for c in clashes), tuple(claims))


# --- entry points ------------------------------------------------------------------------------------------------


def _not_measurable(indicator: str, why: str) -> Judgement:
    return Judgement(indicator, False, 0.0, {"measurable": False}, (), (Claim(None, f"not measurable: {why}"),))


def _ids(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


_JUDGES: dict[str, Callable[[_View], Judgement]] = {
    "color_contrast": lambda v: _judge_contrast(v, "color_contrast"),
    "font_legibility": lambda v: _judge_contrast(v, "font_legibility"),
    "layout_layering": _judge_layering,
    "layout_alignment": _judge_alignment,
    "layout_balance": _judge_balance,
    "layout_whitespace": _judge_whitespace,
    "font_hierarchy": _judge_hierarchy,
    "graphics_quality": _judge_graphics_quality,
    "color_harmony": _judge_harmony,
    "color_appeal": _judge_appeal,
}


def judge_design(
    design: Design,
    render: Image.Image,
    indicators: Sequence[str] = INDICATOR_IDS,
    *,
    render_without: RenderWithout | None = None,
    thresholds: JudgeThresholds | None = None,
) -> list[Judgement]:
    """Judgements for ``indicators`` (in the order given) of one rendered design; measurements are shared.

    ``render_without(i)``, when given, renders the design without element ``i`` at the render's size; it is
    called once per visible text element and only for the contrast indicators.
    """
    unknown = [name for name in indicators if name not in INDICATOR_IDS]
    if unknown:
        raise JudgeError("unknown_indicator", f"unknown indicator(s) {', '.join(map(repr, unknown))}; "
                                              f"expected one of {', '.join(INDICATOR_IDS)}")
    view = _view(design, render, thresholds or JudgeThresholds(), render_without)
    out = []
    for name in indicators:
        if name in UNMEASURABLE:
            out.append(_not_measurable(name, UNMEASURABLE[name]))
        else:
            out.append(_JUDGES[name](view))
    return out


def judge(design: Design, render: Image.Image, indicator: str, *, render_without: RenderWithout | None = None,
          thresholds: JudgeThresholds | None = None) -> Judgement:
    """One indicator's judgement of one rendered design (see the module docstring for what is measured)."""
    return judge_design(design, render, (indicator,), render_without=render_without, thresholds=thresholds)[0]
