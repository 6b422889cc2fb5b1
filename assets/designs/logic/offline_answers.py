"""The offline answers to the two design-labelling schemas of ``labelling`` (``design_label``,
``design_reasoning``, and their repairs, which carry the same context), from the offline judge (``judge.judge``).

Why: the demo and the tests label designs with no key and no network. The design record and indicator come from
``request.context``, the render from ``request.image`` (a few-shot example sheet is cropped back to the design
panel at its top-left), and the answer is the judge's judgement in the requested shape. It refuses rather than
invent: an indicator the judge cannot measure from pixels gets no label, and a reasoning request whose given
verdict differs from the measured one gets no path, since every step it could write would be a measurement
pointing the other way (see ``_design_reasoning``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from PIL import Image

from assets.designs.logic.design_model import Design
from assets.designs.logic.judge import JudgeError, Judgement, judge
from assets.designs.logic.labelling import (
    LABEL_SCHEMA_NAME,
    REASONING_SCHEMA_NAME,
    VERDICTS,
    DesignLabelError,
    element_box,
    label_from_judgement,
    reasoning_from_judgement,
)
from resources.models.heuristic import AnswerCache, OfflineAnswer, Refusal, opened_image, required_image
from resources.models.types import ModelRequest
from warehouse.ids import sha256_hex

_MAX_STEPS = 8          # REASONING_SCHEMA's maxItems for steps
_MAX_REGION_STEPS = 3   # steps spent on asked-about regions the judge's own claims leave uncited
# compose_example_sheet's layout: the design panel (width w) at the origin, then a column max(160, w // 3) wide.
_SHEET_MIN_COLUMN = 160
_SHEET_DIVIDER = (128, 128, 128)  # ... and a 2-pixel line of this grey between the two, the sheet's full height


class Judgements:
    """The judge's judgements, cached: the label and the reasoning requests of one design and indicator arrive
    one after another, so the design is judged once."""

    def __init__(self) -> None:
        self._cache: AnswerCache[tuple[str, str, bool, str], Judgement] = AnswerCache()

    def judgement_for(self, image: bytes, design: Design, indicator: str, sheet: bool = False) -> Judgement:
        """The judge's judgement of ``design`` for ``indicator`` from its encoded render (``sheet``: the render is
        the top-left panel of a few-shot example sheet)."""
        key = (sha256_hex(image), sha256_hex(design.to_json().encode("utf-8")), sheet, indicator)
        return self._cache.get(key, partial(_judged, image, design, indicator, sheet))


def _judged(image: bytes, design: Design, indicator: str, sheet: bool) -> Judgement:
    with opened_image(image) as decoded:
        render = decoded.convert("RGB")
    if sheet:
        render = _design_panel(render, design)
    try:
        return judge(design, render, indicator)
    except JudgeError as exc:
        raise Refusal(f"design {design.design_id}: the judge cannot work with this input: {exc}") from None


def design_offline_answers() -> dict[str, OfflineAnswer]:
    """The two labelling schemas, sharing one judgement cache."""
    judgements = Judgements()
    return {schema: partial(_design_answer, judgements, schema) for schema in (LABEL_SCHEMA_NAME, REASONING_SCHEMA_NAME)}


def _design_answer(judgements: Judgements, schema: str, request: ModelRequest) -> dict[str, Any]:
    image = required_image(request)
    context = request.context or {}
    raw_design = context.get("design")
    if not isinstance(raw_design, Mapping):
        raise Refusal(f"a {schema} request needs the design record in request.context['design']")
    try:
        design = Design.from_dict(raw_design)
    except (KeyError, TypeError, ValueError) as exc:
        raise Refusal(f"request.context['design'] is not a design record: {type(exc).__name__}: {exc}") from None
    indicator = context.get("indicator")
    if not isinstance(indicator, str) or not indicator:
        raise Refusal(f"a {schema} request needs the indicator in request.context['indicator']")
    # Only label requests can carry a sheet: build_label_request composes one when any example has a picture.
    sheet = schema == LABEL_SCHEMA_NAME and any(
        isinstance(e, Mapping) and e.get("has_image") for e in context.get("examples") or ())
    judgement = judgements.judgement_for(image, design, indicator, sheet)
    if not judgement.evidence.get("measurable", True):
        why = judgement.claims[0].text if judgement.claims else "not measurable"
        raise Refusal(f"design {design.design_id}, indicator {indicator}: the heuristic judge gives no verdict "
                      f"({why})")
    try:
        if schema == LABEL_SCHEMA_NAME:
            return label_from_judgement(judgement, design)
        return _design_reasoning(judgement, design, context)
    except DesignLabelError as exc:
        raise Refusal(f"design {design.design_id}: {exc}") from None


def _design_panel(sheet: Image.Image, design: Design) -> Image.Image:
    """The design panel of a few-shot sheet (``compose_example_sheet``): the render, unscaled, at the origin.

    The panel's width w is the one for which the sheet is w + max(160, w // 3) wide (the canvas width, a render
    at scale 1, is tried first) and at which the sheet's 2-pixel grey divider runs down its whole height; the
    panel's height follows from the canvas's aspect ratio."""
    cw, ch = design.canvas_width, design.canvas_height
    if cw <= 0 or ch <= 0:
        raise Refusal(f"design {design.design_id} has canvas {cw}x{ch}")
    guess = max(1, (3 * sheet.width) // 4)
    for width in dict.fromkeys((cw, sheet.width - _SHEET_MIN_COLUMN, *range(guess - 2, guess + 3))):
        if not (0 < width < sheet.width - 1 and width + max(_SHEET_MIN_COLUMN, width // 3) == sheet.width):
            continue
        height = max(1, round(width * ch / cw))
        divider = sheet.crop((width, 0, width + 2, sheet.height)).getcolors(maxcolors=1)
        if height <= sheet.height and divider is not None and divider[0][1] == _SHEET_DIVIDER:
            return sheet.crop((0, 0, width, height))
    raise Refusal(f"the request image ({sheet.width}x{sheet.height}) is not an example sheet with a design panel "
                  f"of the canvas's aspect ({cw}x{ch}) at its top-left")


def _design_reasoning(judgement: Judgement, design: Design, context: Mapping[str, Any]) -> dict[str, Any]:
    """A ``design_reasoning`` answer: the judge's claims, each citing its element's box, then a step for every
    asked-about region (``context['region_element_ids']``) those claims leave uncited, then the verdict.

    The request states the verdict to explain. When the judge measured the same one, the path is its
    measurements. When it measured the other, there is no honest path: every step would be a measurement that
    points the other way, or a claim nothing measured. So the request is refused (``invalid_response``), and the
    refusal names both verdicts and the judge's first claim, which a reviewer can act on. Steps stay within the
    schema's eight; every box cited is an element's citable box (``element_box``), so ``parse_reasoning`` finds it.
    """
    requested = context.get("verdict")
    if requested not in VERDICTS:
        raise Refusal(f"request.context['verdict'] is {requested!r}; expected one of {', '.join(VERDICTS)}")
    answer = reasoning_from_judgement(judgement, design)
    if answer["verdict"] != requested:
        first = judgement.claims[0].text if judgement.claims else "no claim"
        raise Refusal(f"design {design.design_id}, indicator {judgement.indicator}: the requested verdict is "
                      f"{requested!r} but the heuristic judge measured {answer['verdict']!r} (score "
                      f"{judgement.score:g}; {first}); it writes no reasoning path against its own measurement")
    *claim_steps, closing = answer["steps"]
    claim_ids = [c.element_id for c in judgement.claims]
    regions = [e for e in dict.fromkeys(context.get("region_element_ids") or ()) if isinstance(e, str)]
    flagged = set(judgement.boxes)
    region_steps = []
    for element_id in [e for e in regions if e not in claim_ids][:_MAX_REGION_STEPS]:
        box = [round(v, 2) for v in element_box(design, element_id)]
        if element_id in flagged:
            claim = f"Element {element_id} is among those the {judgement.indicator} measurement flags."
        elif judgement.flawed:
            claim = (f"Element {element_id}, a region the question asks about, is not among those the "
                     f"{judgement.indicator} measurement flags.")
        else:
            claim = f"The {judgement.indicator} measurement flags nothing at element {element_id}."
        region_steps.append({"claim": claim, "element_box": box})
    # Over the step limit, the judge's claims about asked-about regions are kept first; order stays the judge's.
    budget = _MAX_STEPS - 1 - len(region_steps)
    about_regions = [i for i, e in enumerate(claim_ids) if e in regions]
    keep = sorted((about_regions + [i for i in range(len(claim_steps)) if i not in about_regions])[:budget])
    return {"steps": [*(claim_steps[i] for i in keep), *region_steps, closing], "verdict": answer["verdict"]}
