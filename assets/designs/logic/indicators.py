"""The twelve AesEval indicators (seed paper 003, section 3.2): what each one judges and which perturbations
can plausibly break it.

Four dimensions, as in the paper: layout (balance, layering, whitespace, alignment), colour (harmony,
contrast, appeal, psychology), font (legibility, hierarchy) and graphics (quality, relevance). The
definitions and guiding questions are ours; they go into questions, review sheets and model prompts, where
the paper found that a clear definition matters most for the subjective indicators (relevance, psychology).

``affected_by`` links the perturbation library (design_perturb.OPERATIONS) to the indicators a flaw may show
up in, so a perturbed design is asked about the indicators its changes touch. Choices worth stating:

- position_shift touches all four layout indicators (balance, overlaps, empty space, shared edges); a
  font-size change also moves visual weight and box extents, so it touches balance, layering and whitespace,
  but not alignment, because the box is rescaled about the text's alignment anchor;
- low_contrast_color touches colour contrast and appeal, and font legibility when the element is text;
- clashing_color touches harmony, contrast, appeal and psychology (an off-mood hue), not legibility;
- font_swap touches legibility and hierarchy only. A typeface does carry mood, but colour psychology is
  about colour, and the recolouring operations already cover it, so we keep the dimensions apart;
- image_replacement touches graphics relevance first, and colour harmony and psychology, since a foreign
  picture brings its own palette;
- blur and downsample touch graphics quality only.

Font indicators count an operation only when it changed a text element (``element_types``), so recolouring
an svg shape is not reported as a legibility question.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from assets.designs.logic.perturb import OPERATION_NAMES

DIMENSIONS = ("layout", "color", "font", "graphics")


@dataclass(frozen=True)
class Indicator:
    id: str
    dimension: str
    name: str
    definition: str
    affected_by: tuple[str, ...]             # operation names (design_perturb.OPERATIONS)
    question: str = ""                       # the guiding question shown with the definition
    element_types: tuple[str, ...] | None = None   # only operations on these element types count; None: any


INDICATORS: tuple[Indicator, ...] = (
    Indicator(
        "layout_balance", "layout", "Balance",
        "How visual weight is spread over the canvas. Large, dark or saturated elements weigh more; a balanced "
        "design offsets them against each other, symmetrically or not, so that no side or corner feels loaded "
        "while another stands empty.",
        ("position_shift", "font_size_change"),
        "Does the weight of the elements feel evenly distributed, or does the design tip towards one area?",
    ),
    Indicator(
        "layout_layering", "layout", "Layering",
        "Whether overlapping elements stack in an intended order. Deliberate overlaps (text on a photo, a shape "
        "behind a heading) read as depth; accidental ones hide part of an element, cut through text or pile "
        "unrelated elements on top of one another.",
        ("position_shift", "font_size_change"),
        "Do the overlaps look intended, with nothing important covered or colliding?",
    ),
    Indicator(
        "layout_whitespace", "layout", "Whitespace",
        "The use of empty space between and around elements. Good spacing separates groups, lets the content "
        "breathe and keeps margins consistent; poor spacing crowds elements together in one place and leaves "
        "awkward, unexplained gaps in another.",
        ("position_shift", "font_size_change"),
        "Is the empty space even and purposeful, without cramped clusters or stray gaps?",
    ),
    Indicator(
        "layout_alignment", "layout", "Alignment",
        "Whether elements line up along shared edges, centres or a grid. Aligned elements form clear columns "
        "and rows; an element that sits a little off the common line looks like a mistake rather than a choice.",
        ("position_shift",),
        "Do the elements share common edges or axes, with none slightly off the line the others follow?",
    ),
    Indicator(
        "color_harmony", "color", "Harmony",
        "How well the colours go together as a palette: related hues, a consistent temperature and saturation, "
        "or a deliberate complementary scheme. A colour that belongs to no part of the scheme breaks harmony.",
        ("clashing_color", "image_replacement"),
        "Do all the colours belong to one coherent palette, or does some colour fight the rest?",
    ),
    Indicator(
        "color_contrast", "color", "Contrast",
        "The separation in lightness and colour between an element and what lies behind it. Enough contrast "
        "makes foreground elements stand out and read clearly; too little makes them fade into the backdrop, "
        "while a harsh, vibrating pairing is also a contrast fault.",
        ("low_contrast_color", "clashing_color"),
        "Does every foreground element stand clearly apart from its background, without a jarring pairing?",
    ),
    Indicator(
        "color_appeal", "color", "Appeal",
        "The overall pleasantness of the colouring as a viewer first sees it: whether it looks attractive and "
        "polished, rather than dull, muddy, washed out or garish.",
        ("clashing_color", "low_contrast_color"),
        "Is the colouring attractive at first sight, rather than dull, muddy or garish?",
    ),
    Indicator(
        "color_psychology", "color", "Psychology",
        "Whether the colours evoke the mood and associations the design's subject calls for: calm tones for a "
        "spa, warm and lively ones for a party, sober ones for a memorial. Colours whose connotation contradicts "
        "the message fail here even when they look fine on their own.",
        ("clashing_color", "image_replacement"),
        "Do the colours carry a mood that suits what the design is about?",
    ),
    Indicator(
        "font_legibility", "font", "Legibility",
        "How easily the text can be read: a size suited to its role and viewing distance, a typeface that stays "
        "clear at that size, and enough contrast with what is behind the letters.",
        ("low_contrast_color", "font_size_change", "font_swap"),
        "Can every piece of text be read quickly and without effort?",
        ("text",),
    ),
    Indicator(
        "font_hierarchy", "font", "Hierarchy",
        "Whether the type shows what to read first, second and last through consistent differences in size, "
        "weight and typeface, and whether the typefaces used work together instead of competing.",
        ("font_size_change", "font_swap"),
        "Do size and typeface lead the eye in a clear order, with fonts that belong together?",
        ("text",),
    ),
    Indicator(
        "graphics_quality", "graphics", "Quality",
        "The technical finish of pictures and shapes: sharp, free of pixelation, blur, compression blocks or "
        "stretching, at a resolution that fits the size they are shown at.",
        ("blur", "downsample"),
        "Are the images and graphics crisp and clean at the size they appear?",
    ),
    Indicator(
        "graphics_relevance", "graphics", "Relevance",
        "Whether the pictures and illustrations fit the design's topic and message. An image from an unrelated "
        "subject or setting confuses the reader, however good it looks by itself.",
        ("image_replacement",),
        "Do the images belong to the subject the design is communicating?",
    ),
)

_BY_ID = {indicator.id: indicator for indicator in INDICATORS}


def _check_registry() -> None:
    """Fail at import if the table drifts from the perturbation library or the four dimensions."""
    problems = [f"{i.id}: unknown operation {op!r}" for i in INDICATORS for op in i.affected_by if op not in OPERATION_NAMES]
    problems += [f"{i.id}: unknown dimension {i.dimension!r}" for i in INDICATORS if i.dimension not in DIMENSIONS]
    if len(_BY_ID) != len(INDICATORS):
        problems.append("indicator ids are not unique")
    if problems:
        raise RuntimeError("design indicators: " + "; ".join(problems))


_check_registry()


def indicator(indicator_id: str) -> Indicator:
    """The indicator with this id; a KeyError naming the known ids otherwise."""
    try:
        return _BY_ID[indicator_id]
    except KeyError:
        raise KeyError(f"unknown indicator {indicator_id!r}; known: {', '.join(_BY_ID)}") from None


def indicators_in(dimension: str) -> tuple[Indicator, ...]:
    if dimension not in DIMENSIONS:
        raise KeyError(f"unknown dimension {dimension!r}; known: {', '.join(DIMENSIONS)}")
    return tuple(i for i in INDICATORS if i.dimension == dimension)


def _op_and_type(operation: Any) -> tuple[str, str | None]:
    if isinstance(operation, str):
        return operation, None
    if isinstance(operation, Mapping):
        return str(operation["op"]), operation.get("element_type")
    return str(operation.op), getattr(operation, "element_type", None)


def indicators_affected(operations: Iterable[Any]) -> list[str]:
    """Ids of the indicators the given operations may affect, in table order, each once.

    Accepts design_perturb.Operation objects, logged rows (mappings with ``op`` and ``element_type``) or bare
    operation names; a bare name has no element type, so the font indicators' type filter is not applied."""
    seen: set[str] = set()
    for operation in operations:
        name, element_type = _op_and_type(operation)
        if name not in OPERATION_NAMES:
            raise KeyError(f"unknown operation {name!r}; known: {', '.join(OPERATION_NAMES)}")
        for item in INDICATORS:
            if name in item.affected_by and (
                    element_type is None or item.element_types is None or element_type in item.element_types):
                seen.add(item.id)
    return [item.id for item in INDICATORS if item.id in seen]


def operations_affecting(indicator_id: str) -> tuple[str, ...]:
    return indicator(indicator_id).affected_by


def answer_elements(ops: Iterable[tuple[str, str, str]], every_indicator: bool = False) -> dict[str, str]:
    """{indicator: element id} for one perturbed design's logged (element_id, element_type, op), in log order:
    an indicator's questions point at the first changed element whose operation may affect it. With
    ``every_indicator`` (every design asked about all twelve, as AesEval instantiates each question), an indicator
    no operation touches points at the first changed element: the paper's answer for a flawed design is the
    perturbed element's box whatever the indicator."""
    ops = list(ops)
    chosen: dict[str, str] = {}
    for element_id, element_type, op in ops:
        for name in indicators_affected([{"op": op, "element_type": element_type}]):
            chosen.setdefault(name, element_id)
    if every_indicator and ops:
        return {item.id: chosen.get(item.id, ops[0][0]) for item in INDICATORS}
    return {item.id: chosen[item.id] for item in INDICATORS if item.id in chosen}
