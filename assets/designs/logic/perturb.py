"""Flaw injection for graphic designs: AesEval's perturbation library (seed paper 003, appendix E, Algorithm 1).

A professional design becomes a *potentially* flawed one by changing one to three of its elements at the
record level, then re-rendering it. Per chosen element one operation that suits its type is drawn, with a
sampled intensity:

==================  ==============================  ===================================================
operation           elements                        change to the record
==================  ==============================  ===================================================
position_shift      any but a full-canvas backdrop  left/top += U(-δ, δ) × canvas size, box kept partly
                                                    on the canvas
font_size_change    text with a font size           font size × a factor away from 1; the box (and a
                                                    non-zero letter spacing) scaled alike about the
                                                    text's alignment anchor, so line breaks survive
font_swap           text                            another family from the font library, preferring
                                                    another style category so the swap is visible
low_contrast_color  text / svg with a colour        colour = the colour behind the element + a small
                                                    offset (WCAG contrast ratio at most ~1.5)
clashing_color      text / svg with a colour        a saturated colour whose hue is 150–210° away from
                                                    the design's dominant hue (else the element's own)
image_replacement   image / mask with a layer       the layer ref swapped for another from the pool
downsample          image / mask / svg / background effect ("downsample", k), k in 3..8
                    with a layer
blur                the same                        effect ("blur", r): r = U(2, 8) px scaled by the
                                                    box's short side / 300 px (bounded to 0.5–3)
==================  ==============================  ===================================================

Every operation is a change to the record, never to pixels (``effects`` are applied by the renderer), and is
logged as an :class:`Operation` holding exactly the fields it changed (a diff of the element before and
after), the element's box before and after, and the sampled parameters.

Reproducibility: the generator is ``random.Random`` seeded from ``digest_of(["design-perturb", seed,
design_id])``, so one design's perturbation depends only on the run seed and that design, never on the order
a stream visits designs. Pools given by the caller (replacement layers) are sorted first for the same reason.

Identity: the perturbed record gets ``design_id = f"{base}-p{digest[:16]}"`` where ``digest`` is
``digest_of({"base": base_design_id_of_input, "operations": [op.to_dict() ...]})``: the same base and the
same changes give the same id, whatever seed produced them. Its attributes carry ``base_design_id`` (the root
original, kept when a perturbed design is perturbed again, so splits by base design stay leak-free) and
``parent_design_id`` (the record it was derived from); its ``preview`` is cleared, since the dataset's preview
shows the original.
"""

from __future__ import annotations

import colorsys
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from assets.designs.logic.design_model import RGB, Box, Design, Element
from warehouse.ids import digest_of

# --- the operation registry -------------------------------------------------------------------------------

TEXT_TYPES = ("text",)
COLORED_TYPES = ("text", "svg")
PICTURE_TYPES = ("image", "mask")
LAYER_EFFECT_TYPES = ("image", "mask", "svg", "background")


@dataclass(frozen=True)
class OperationSpec:
    """What an operation may touch: the lead validates logged operations against this."""

    name: str
    family: str                       # layout | font | color | graphic (Algorithm 1's four branches)
    element_types: tuple[str, ...]    # element types it can apply to (further conditions in operations_for)
    fields: tuple[str, ...]           # the only Element fields it may change
    summary: str


OPERATIONS: dict[str, OperationSpec] = {
    spec.name: spec
    for spec in (
        OperationSpec("position_shift", "layout", ("image", "mask", "svg", "text"), ("left", "top"),
                      "move the element by a sampled fraction of the canvas"),
        OperationSpec("font_size_change", "font", TEXT_TYPES,
                      ("font_size", "left", "top", "width", "height", "letter_spacing"),
                      "scale the text's font size (and its box) by a factor away from 1"),
        OperationSpec("font_swap", "font", TEXT_TYPES, ("font",),
                      "set the text in a different family from the font library"),
        OperationSpec("low_contrast_color", "color", COLORED_TYPES, ("color",),
                      "recolour the element close to the colour behind it"),
        OperationSpec("clashing_color", "color", COLORED_TYPES, ("color",),
                      "recolour the element with a saturated hue opposite the design's dominant hue"),
        OperationSpec("image_replacement", "graphic", PICTURE_TYPES, ("layer",),
                      "swap the picture for another one from the replacement pool"),
        OperationSpec("downsample", "graphic", LAYER_EFFECT_TYPES, ("effects",),
                      "render the layer at 1/k resolution and scale it back up"),
        OperationSpec("blur", "graphic", LAYER_EFFECT_TYPES, ("effects",),
                      "Gaussian-blur the layer"),
    )
}
OPERATION_NAMES: tuple[str, ...] = tuple(OPERATIONS)

# Real families, each packaged for Debian (the renderer maps names to files): the DejaVu ones ship with the
# machine; Liberation (fonts-liberation2), Noto (fonts-noto-core), Lato (fonts-lato), Lobster (fonts-lobster),
# Dancing Script (fonts-dancingscript), Kaushan Script (fonts-kaushanscript).
DEFAULT_FONT_LIBRARY: tuple[tuple[str, str], ...] = (
    ("DejaVu Serif", "serif"),
    ("Liberation Serif", "serif"),
    ("Noto Serif", "serif"),
    ("DejaVu Sans", "sans"),
    ("Liberation Sans", "sans"),
    ("Lato", "sans"),
    ("Lobster", "display"),
    ("DejaVu Sans Mono", "mono"),
    ("Liberation Mono", "mono"),
    ("Dancing Script", "script"),
    ("Kaushan Script", "script"),
)


class PerturbError(ValueError):
    """A design, setting or callback the perturbation cannot work with; names the element and field."""

    def __init__(self, reason_code: str, message: str) -> None:
        self.reason_code = reason_code
        super().__init__(f"{message} [{reason_code}]")


Range = tuple[float, float]


@dataclass(frozen=True)
class PerturbSettings:
    """Intensity ranges; each is sampled uniformly per operation. Fractions are of the canvas size."""

    min_elements: int = 1
    max_elements: int = 3
    operations: tuple[str, ...] = OPERATION_NAMES        # the enabled subset of OPERATIONS
    shift_delta: Range = (0.05, 0.2)                     # δ; the offset per axis is U(-δ, δ)
    min_shift: float = 0.02                              # the larger axis moves at least this fraction
    min_visible: float = 0.5                             # share of min(box, canvas) kept on canvas per axis
    font_shrink: Range = (0.5, 0.8)
    font_grow: Range = (1.25, 1.8)
    font_families: tuple[tuple[str, str], ...] = DEFAULT_FONT_LIBRARY   # (family, style category)
    low_contrast_offset: Range = (4.0, 24.0)             # ε; per-channel offset U(-ε, ε) from the backdrop
    clash_hue_shift: Range = (150.0, 210.0)              # degrees away from the reference hue
    clash_saturation: Range = (0.75, 1.0)
    clash_value: Range = (0.75, 1.0)
    downsample_factor: tuple[int, int] = (3, 8)          # integer factor, both ends included
    blur_radius: Range = (2.0, 8.0)                      # px for a box whose short side is blur_reference_px
    blur_reference_px: float = 300.0
    blur_scale_bounds: Range = (0.5, 3.0)

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not 1 <= self.min_elements <= self.max_elements:
            problems.append(f"need 1 <= min_elements <= max_elements, got {self.min_elements}..{self.max_elements}")
        unknown = [name for name in self.operations if name not in OPERATIONS]
        if unknown or not self.operations:
            problems.append(f"operations must be a non-empty subset of {OPERATION_NAMES}, unknown: {unknown}")
        ranges = {
            "shift_delta": (self.shift_delta, 0.0, 1.0), "font_shrink": (self.font_shrink, 0.0, 0.999),
            "font_grow": (self.font_grow, 1.001, 100.0), "low_contrast_offset": (self.low_contrast_offset, 0.0, 64.0),
            "clash_hue_shift": (self.clash_hue_shift, 90.0, 270.0), "clash_saturation": (self.clash_saturation, 0.0, 1.0),
            "clash_value": (self.clash_value, 0.0, 1.0), "downsample_factor": (self.downsample_factor, 2, 64),
            "blur_radius": (self.blur_radius, 0.1, 100.0), "blur_scale_bounds": (self.blur_scale_bounds, 0.01, 100.0),
        }
        for name, ((low, high), lowest, highest) in ranges.items():
            if not (lowest <= low <= high <= highest) or (name == "font_shrink" and low <= 0):
                problems.append(f"{name} must satisfy {lowest} <= low <= high <= {highest}, got ({low}, {high})")
        if not 0 <= self.min_shift <= self.shift_delta[0]:
            problems.append(f"min_shift must be within [0, shift_delta low], got {self.min_shift}")
        if not 0 < self.min_visible <= 1:
            problems.append(f"min_visible must be in (0, 1], got {self.min_visible}")
        if self.blur_reference_px <= 0:
            problems.append(f"blur_reference_px must be positive, got {self.blur_reference_px}")
        if len({_font_key(family) for family, _ in self.font_families}) < 2:
            problems.append("font_families needs at least two distinct families")
        if problems:
            raise PerturbError("bad_settings", "perturbation settings: " + "; ".join(problems))


# --- results ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    """One logged change: which element, which operation, its parameters, and exactly what changed.

    ``before``/``after`` map each changed Element field to its JSON form (colours and effects as lists)."""

    element_index: int
    element_id: str
    element_type: str
    op: str
    params: Mapping[str, Any]
    box_before: Box
    box_after: Box
    before: Mapping[str, Any]
    after: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "element_index": self.element_index,
            "element_id": self.element_id,
            "element_type": self.element_type,
            "op": self.op,
            "params": dict(self.params),
            "box_before": list(self.box_before),
            "box_after": list(self.box_after),
            "before": dict(self.before),
            "after": dict(self.after),
        }


@dataclass(frozen=True)
class Perturbation:
    design: Design
    operations: tuple[Operation, ...]
    seed: int = 0
    parent_design_id: str = ""

    def log_rows(self) -> list[dict[str, Any]]:
        """One flat row per operation, ready for the warehouse's perturbation log."""
        return [
            {
                "design_id": self.design.design_id,
                "parent_design_id": self.parent_design_id,
                "base_design_id": self.design.attributes.get("base_design_id"),
                "seed": self.seed,
                "position": position,
                **op.to_dict(),
            }
            for position, op in enumerate(self.operations)
        ]


BackgroundColorFn = Callable[[Design, int], RGB]


# --- small geometry and colour helpers --------------------------------------------------------------------


def _font_key(name: str | None) -> str:
    return "".join((name or "").lower().split())


def is_full_canvas(element: Element, canvas_width: int, canvas_height: int, tolerance: float = 0.01) -> bool:
    """True for a box covering the whole canvas (within ``tolerance`` of each side)."""
    tx, ty = tolerance * canvas_width, tolerance * canvas_height
    return (element.left <= tx and element.top <= ty
            and element.left + element.width >= canvas_width - tx and element.top + element.height >= canvas_height - ty)


def is_backdrop(element: Element, canvas_width: int, canvas_height: int) -> bool:
    """A background element or anything that fills the canvas: moving it would only open empty margins."""
    return element.type == "background" or is_full_canvas(element, canvas_width, canvas_height)


def _visible_bounds(start_size: float, canvas: float, min_visible: float) -> tuple[float, float]:
    """Allowed range of an edge so at least ``min_visible × min(size, canvas)`` overlaps the canvas."""
    keep = min_visible * min(start_size, canvas)
    return keep - start_size, canvas - keep


def _relative_luminance(color: Sequence[int]) -> float:
    def channel(value: int) -> float:
        c = value / 255.0
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in color)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(first: Sequence[int], second: Sequence[int]) -> float:
    """WCAG 2 contrast ratio between two sRGB colours (1 = identical luminance, 21 = black on white)."""
    a, b = _relative_luminance(first), _relative_luminance(second)
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


def hue_saturation_value(color: Sequence[int]) -> tuple[float, float, float]:
    """(hue in degrees [0, 360), saturation, value) of an sRGB colour."""
    h, s, v = colorsys.rgb_to_hsv(*(c / 255.0 for c in color))
    return (h * 360.0) % 360.0, s, v


def hue_distance(a: float, b: float) -> float:
    """Shortest angle between two hues, 0..180."""
    d = abs(a - b) % 360.0
    return min(d, 360.0 - d)


def _rgb(values: Iterable[float]) -> RGB:
    r, g, b = (max(0, min(255, int(round(v)))) for v in values)
    return (r, g, b)


def default_background_color(design: Design, element_index: int) -> RGB:
    """Record-only estimate of the colour behind an element, for when no render is at hand.

    Walks down from the element to the nearest lower non-text element that carries a colour and covers the
    element's centre; white when there is none (Crello's default canvas). Image layers carry no colour in
    the record, so a caller with a render should pass a callback that averages the pixels under the box.
    """
    element = design.elements[element_index]
    cx, cy = element.left + element.width / 2, element.top + element.height / 2
    for lower in reversed(design.elements[:element_index]):
        if lower.type == "text" or lower.color is None:
            continue
        if lower.left <= cx <= lower.left + lower.width and lower.top <= cy <= lower.top + lower.height:
            return _rgb(lower.color)
    return (255, 255, 255)


def dominant_color(design: Design, exclude_index: int | None = None) -> RGB | None:
    """The record colour covering the most canvas area (box area on the canvas × opacity; text boxes count
    0.3, since glyphs fill only part of them); ties go to the smaller RGB triple. None without colours."""
    weights: dict[RGB, float] = {}
    for index, element in enumerate(design.elements):
        if index == exclude_index or element.color is None:
            continue
        width = max(0.0, min(element.left + element.width, design.canvas_width) - max(element.left, 0.0))
        height = max(0.0, min(element.top + element.height, design.canvas_height) - max(element.top, 0.0))
        weight = width * height * element.opacity * (0.3 if element.type == "text" else 1.0)
        color = _rgb(element.color)
        weights[color] = weights.get(color, 0.0) + weight
    if not weights:
        return None
    return min(weights, key=lambda c: (-weights[c], c))


# --- validation -------------------------------------------------------------------------------------------


def _check_design(design: Design) -> None:
    if design.canvas_width <= 0 or design.canvas_height <= 0:
        raise PerturbError("bad_canvas", f"design {design.design_id}: canvas must be positive, "
                                         f"got {design.canvas_width}x{design.canvas_height}")
    for index, e in enumerate(design.elements):
        where = f"design {design.design_id} element {index} ({e.element_id})"
        for name in ("left", "top", "width", "height", "angle", "opacity"):
            if not math.isfinite(getattr(e, name)):
                raise PerturbError("bad_geometry", f"{where}: {name} is not finite")
        if e.width < 0 or e.height < 0:
            raise PerturbError("bad_geometry", f"{where}: width and height must be >= 0")
        if e.color is not None and (len(e.color) != 3 or any(not 0 <= c <= 255 for c in e.color)):
            raise PerturbError("bad_color", f"{where}: color must be three values in 0..255, got {e.color}")
        if e.type == "text" and e.font_size is not None and not (math.isfinite(e.font_size) and e.font_size > 0):
            raise PerturbError("bad_font_size", f"{where}: font_size must be positive, got {e.font_size}")


def operations_for(element: Element, design: Design | None = None, replacement_layers: Sequence[str] | None = None,
                   settings: PerturbSettings | None = None) -> list[str]:
    """The operations that can change ``element``, in registry order.

    Without ``design`` the full-canvas test for position shifts is skipped (only ``background`` elements are
    excluded); without ``replacement_layers`` image replacement is offered whenever the element has a layer.
    """
    enabled = set(settings.operations) if settings else set(OPERATION_NAMES)
    families = settings.font_families if settings else DEFAULT_FONT_LIBRARY
    ops: list[str] = []
    t = element.type
    backdrop = (is_backdrop(element, design.canvas_width, design.canvas_height) if design is not None
                else t == "background")
    effects = {name for name, _ in element.effects}
    checks = {
        "position_shift": not backdrop,
        "font_size_change": t in TEXT_TYPES and element.font_size is not None and element.font_size > 0,
        "font_swap": t in TEXT_TYPES and any(_font_key(f) != _font_key(element.font) for f, _ in families),
        "low_contrast_color": t in COLORED_TYPES and element.color is not None,
        "clashing_color": t in COLORED_TYPES and element.color is not None,
        "image_replacement": t in PICTURE_TYPES and element.layer is not None and (
            replacement_layers is None or any(ref != element.layer for ref in replacement_layers)),
        "downsample": t in LAYER_EFFECT_TYPES and element.layer is not None and "downsample" not in effects,
        "blur": t in LAYER_EFFECT_TYPES and element.layer is not None and "blur" not in effects,
    }
    for name in OPERATION_NAMES:
        if name in enabled and checks[name]:
            ops.append(name)
    return ops


# --- the operations ---------------------------------------------------------------------------------------

_Params = dict[str, Any]
_Changes = dict[str, Any]


@dataclass(frozen=True)
class _Context:
    design: Design
    index: int
    settings: PerturbSettings
    replacement_layers: tuple[str, ...]
    background_color: BackgroundColorFn


def _position_shift(rng: random.Random, ctx: _Context, e: Element) -> tuple[_Changes, _Params]:
    s, W, H = ctx.settings, ctx.design.canvas_width, ctx.design.canvas_height
    delta = rng.uniform(*s.shift_delta)
    ux, uy = rng.uniform(-delta, delta), rng.uniform(-delta, delta)
    for _ in range(8):  # a shift too small to see is no perturbation: redraw, then force the floor
        if max(abs(ux), abs(uy)) >= s.min_shift:
            break
        ux, uy = rng.uniform(-delta, delta), rng.uniform(-delta, delta)
    else:
        ux = math.copysign(s.min_shift, ux)
    x_low, x_high = _visible_bounds(e.width, W, s.min_visible)
    y_low, y_high = _visible_bounds(e.height, H, s.min_visible)

    def place(sign: float) -> tuple[float, float]:
        left = min(max(e.left + sign * ux * W, x_low), x_high)
        top = min(max(e.top + sign * uy * H, y_low), y_high)
        return round(left, 2), round(top, 2)

    sign = 1.0
    left, top = place(sign)
    if abs(left - e.left) < 1 and abs(top - e.top) < 1:  # pinned against the limit: go the other way
        sign = -1.0
        left, top = place(sign)
    requested_dx, requested_dy = round(sign * ux * W, 2), round(sign * uy * H, 2)
    dx, dy = round(left - e.left, 2), round(top - e.top, 2)
    params = {
        "delta": round(delta, 6), "requested_dx": requested_dx, "requested_dy": requested_dy, "dx": dx, "dy": dy,
        "reversed": sign < 0, "clamped": abs(dx - requested_dx) > 0.011 or abs(dy - requested_dy) > 0.011,
    }
    return {"left": left, "top": top}, params


def _font_size_change(rng: random.Random, ctx: _Context, e: Element) -> tuple[_Changes, _Params]:
    s = ctx.settings
    grow = rng.random() < 0.5
    factor = round(rng.uniform(*(s.font_grow if grow else s.font_shrink)), 4)  # the logged factor is the applied one
    assert e.font_size is not None
    width, height = e.width * factor, e.height * factor
    if e.text_align == "center":
        left = e.left + (e.width - width) / 2
    elif e.text_align == "right":
        left = e.left + e.width - width
    else:  # left and justify keep the left edge
        left = e.left
    top = e.top + (e.height - height) / 2
    changes: _Changes = {
        "font_size": round(e.font_size * factor, 2),
        "left": round(left, 2), "top": round(top, 2), "width": round(width, 2), "height": round(height, 2),
    }
    if e.letter_spacing:
        changes["letter_spacing"] = round(e.letter_spacing * factor, 3)
    return changes, {"factor": factor, "direction": "grow" if grow else "shrink", "anchor": e.text_align}


def _font_swap(rng: random.Random, ctx: _Context, e: Element) -> tuple[_Changes, _Params]:
    library = ctx.settings.font_families
    current = _font_key(e.font)
    categories = {_font_key(f): c for f, c in library}
    current_category = categories.get(current)
    others = [(f, c) for f, c in library if _font_key(f) != current]
    contrasting = [(f, c) for f, c in others if c != current_category] if current_category else others
    family, category = rng.choice(contrasting or others)
    return {"font": family}, {"from": e.font, "to": family, "from_category": current_category, "to_category": category}


def _low_contrast_color(rng: random.Random, ctx: _Context, e: Element) -> tuple[_Changes, _Params]:
    raw = ctx.background_color(ctx.design, ctx.index)
    try:
        background = tuple(int(v) for v in raw)
        valid = len(background) == 3 and all(0 <= v <= 255 for v in background)
    except (TypeError, ValueError):
        valid = False
    if not valid:
        raise PerturbError("bad_background_color", f"design {ctx.design.design_id} element {ctx.index}: the "
                                                   f"background_color callback must return three ints in 0..255, got {raw!r}")
    epsilon = rng.uniform(*ctx.settings.low_contrast_offset)
    offsets = [rng.uniform(-epsilon, epsilon) for _ in range(3)]
    color = _rgb(b + o for b, o in zip(background, offsets))
    return {"color": color}, {
        "background": list(background), "epsilon": round(epsilon, 4), "offsets": [round(o, 4) for o in offsets],
        "contrast_ratio": round(contrast_ratio(color, background), 4),
        "contrast_ratio_before": round(contrast_ratio(e.color or color, background), 4),
    }


def _clashing_color(rng: random.Random, ctx: _Context, e: Element) -> tuple[_Changes, _Params]:
    s = ctx.settings
    dominant = dominant_color(ctx.design, exclude_index=ctx.index)
    reference, reference_hue = "random", None
    for source, color in (("dominant", dominant), ("element", e.color)):
        if color is not None:
            hue, sat, val = hue_saturation_value(color)
            if sat >= 0.2 and val >= 0.15:  # an achromatic colour has no hue to oppose
                reference, reference_hue = source, hue
                break
    if reference_hue is None:
        reference_hue = rng.uniform(0.0, 360.0)
    shift = rng.uniform(*s.clash_hue_shift)
    hue = (reference_hue + shift) % 360.0
    saturation, value = rng.uniform(*s.clash_saturation), rng.uniform(*s.clash_value)
    color = _rgb(255 * c for c in colorsys.hsv_to_rgb(hue / 360.0, saturation, value))
    return {"color": color}, {
        "reference": reference, "reference_hue": round(reference_hue, 3), "hue_shift": round(shift, 3),
        "hue": round(hue, 3), "saturation": round(saturation, 4), "value": round(value, 4),
        "dominant_color": list(dominant) if dominant else None,
    }


def _image_replacement(rng: random.Random, ctx: _Context, e: Element) -> tuple[_Changes, _Params]:
    pool = [ref for ref in ctx.replacement_layers if ref != e.layer]
    new = rng.choice(pool)
    return {"layer": new}, {"from": e.layer, "to": new, "pool_size": len(pool)}


def _downsample(rng: random.Random, ctx: _Context, e: Element) -> tuple[_Changes, _Params]:
    factor = rng.randint(*ctx.settings.downsample_factor)
    return {"effects": (*e.effects, ("downsample", float(factor)))}, {"factor": factor}


def _blur(rng: random.Random, ctx: _Context, e: Element) -> tuple[_Changes, _Params]:
    s = ctx.settings
    base = rng.uniform(*s.blur_radius)
    low, high = s.blur_scale_bounds
    scale = min(max(min(e.width, e.height) / s.blur_reference_px, low), high)
    radius = round(base * scale, 2)
    return {"effects": (*e.effects, ("blur", radius))}, {"radius": radius, "base_radius": round(base, 4),
                                                         "scale": round(scale, 4)}


_APPLY: dict[str, Callable[[random.Random, _Context, Element], tuple[_Changes, _Params]]] = {
    "position_shift": _position_shift,
    "font_size_change": _font_size_change,
    "font_swap": _font_swap,
    "low_contrast_color": _low_contrast_color,
    "clashing_color": _clashing_color,
    "image_replacement": _image_replacement,
    "downsample": _downsample,
    "blur": _blur,
}
assert set(_APPLY) == set(OPERATIONS)


def _diff(before: Element, after: Element) -> tuple[dict[str, Any], dict[str, Any]]:
    old, new = before.to_dict(), after.to_dict()
    changed = [name for name in old if old[name] != new[name]]
    return {name: old[name] for name in changed}, {name: new[name] for name in changed}


# --- Algorithm 1 ------------------------------------------------------------------------------------------


def perturbation_rng(seed: int, design_id: str) -> random.Random:
    """The generator for one design in one run: depends on nothing but the seed and the design id."""
    return random.Random(int(digest_of(["design-perturb", seed, design_id])[:16], 16))


def perturbed_design_id(base_design_id: str, operations: Sequence[Operation]) -> str:
    """Content-derived id of a perturbed record: the base id and the logged changes, nothing else."""
    digest = digest_of({"base": base_design_id, "operations": [op.to_dict() for op in operations]})
    return f"{base_design_id}-p{digest[:16]}"


def perturb_design(design: Design, seed: int, settings: PerturbSettings | None = None,
                   replacement_layers: Sequence[str] = (), *,
                   background_color: BackgroundColorFn | None = None) -> Perturbation:
    """Inject 1–3 flaws into ``design`` (Algorithm 1): choose elements, one type-valid operation each, sample
    its intensity, change the record. Elements without any valid operation are never chosen; an operation
    that turns out to change nothing (e.g. a degenerate box) is replaced by another of the element's.

    Raises PerturbError ``no_perturbable_element`` when no element can be changed at all."""
    settings = settings or PerturbSettings()
    _check_design(design)
    rng = perturbation_rng(seed, design.design_id)
    pool = tuple(sorted({str(ref) for ref in replacement_layers}))
    ctx_background = background_color or default_background_color

    candidates = [i for i, e in enumerate(design.elements) if operations_for(e, design, pool, settings)]
    if not candidates:
        raise PerturbError("no_perturbable_element", f"design {design.design_id}: none of its "
                                                     f"{len(design.elements)} elements admits an enabled operation")
    wanted = rng.randint(settings.min_elements, settings.max_elements)
    chosen = sorted(rng.sample(candidates, min(wanted, len(candidates))))

    current = design
    operations: list[Operation] = []
    for index in chosen:
        element = current.elements[index]
        ctx = _Context(current, index, settings, pool, ctx_background)
        options = operations_for(element, current, pool, settings)
        while options:
            name = rng.choice(options)
            changes, params = _APPLY[name](rng, ctx, element)
            updated = replace(element, **changes)
            before, after = _diff(element, updated)
            if not before:
                options.remove(name)
                continue
            current = current.with_element(index, **changes)
            operations.append(Operation(
                element_index=index, element_id=element.element_id, element_type=element.type, op=name,
                params=params, box_before=element.box, box_after=updated.box, before=before, after=after,
            ))
            break
    if not operations:
        raise PerturbError("no_perturbable_element", f"design {design.design_id}: every operation drawn for "
                                                     f"elements {chosen} left the record unchanged")

    root = str(design.attributes.get("base_design_id") or design.design_id)
    attributes = {**dict(design.attributes), "base_design_id": root, "parent_design_id": design.design_id}
    ops = tuple(operations)
    # the dataset's own preview shows the original, so the perturbed record has none
    perturbed = replace(current, design_id=perturbed_design_id(design.design_id, ops), attributes=attributes,
                        preview=None)
    return Perturbation(design=perturbed, operations=ops, seed=seed, parent_design_id=design.design_id)


def check_operation(operation: Operation) -> list[str]:
    """Problems with a logged operation against the registry (empty when it is consistent)."""
    spec = OPERATIONS.get(operation.op)
    if spec is None:
        return [f"unknown operation {operation.op!r}"]
    problems = []
    if operation.element_type not in spec.element_types:
        problems.append(f"{operation.op} does not apply to {operation.element_type} elements")
    if set(operation.before) != set(operation.after) or not operation.before:
        problems.append("before and after must name the same, non-empty set of fields")
    extra = sorted(set(operation.after) - set(spec.fields))
    if extra:
        problems.append(f"{operation.op} may not change {extra}")
    return problems
