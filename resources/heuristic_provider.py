"""The offline ``heuristic`` provider: answers every CritiqueCanvas role from measurements of the image itself.

Why: the demo and the tests must run the whole chain with no key and no network, through the same call layer
(cache, logging, validation) as the remote providers. It ignores the prompt text and reads the structured inputs
the prompt was rendered from (``request.context``: domain, plan, dialogue), so its answers depend only on the
image and those inputs, never on wording.

It also answers the poem rubric judge (``poem_rubric_scores``: technical quality and style from the image's
measurements, null where pixels cannot tell) and the ContextCanvas text-only probe (``context_text_only``: the
word-overlap shortcut detector over the case's text). It also answers the two design-labelling schemas of
``assets.designs.logic.labelling`` (``design_label``, ``design_reasoning``, and their repairs, which carry the same
context): the design record and indicator come from
``request.context``, the render from ``request.image`` (a few-shot example sheet is cropped back to the design
panel at its top-left), and the answer is the offline judge's (``assets.designs.logic.judge.judge``) judgement in the
requested shape. It refuses (``invalid_response``) rather than invent: an indicator the judge cannot measure from
pixels gets no label, and a reasoning request whose given verdict differs from the measured one gets no path,
since every step it could write would be a measurement pointing the other way (see ``_design_reasoning``).
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from PIL import Image, UnidentifiedImageError

from assets.critique_canvas.logic import heuristic_critic
from assets.context_canvas.logic.case_records import CaseOption
from assets.context_canvas.logic.shortcuts import text_only_guess
from assets.context_canvas.logic.text_only import TEXT_ONLY_SCHEMA_NAME
from assets.critique_canvas.logic.answers import DOMAINS
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
from assets.designs.logic.design_model import Design
from assets.core.logic.image_measures import ImageMeasures, measure
from assets.poetry.logic.rubric_judge import JUDGE_SCHEMA_NAME, heuristic_judgement
from resources.model_providers import INVALID_RESPONSE, OK, ModelRequest, ModelResponse
from warehouse.ids import sha256_hex

_ROLE_SCHEMA = {"planner": "plan", "annotator": "dialogue", "verifier": "verdicts", "repair": None}
_DESIGN_SCHEMAS = (LABEL_SCHEMA_NAME, REASONING_SCHEMA_NAME)
_CACHE_SIZE = 1024
_MAX_STEPS = 8          # REASONING_SCHEMA's maxItems for steps
_MAX_REGION_STEPS = 3   # steps spent on asked-about regions the judge's own claims leave uncited
# compose_example_sheet's layout: the design panel (width w) at the origin, then a column max(160, w // 3) wide.
_SHEET_MIN_COLUMN = 160
_SHEET_DIVIDER = (128, 128, 128)  # ... and a 2-pixel line of this grey between the two, the sheet's full height


class _Refusal(Exception):
    """A request this provider cannot answer; the message becomes the response's error."""


class HeuristicProvider:
    name = "heuristic"

    def __init__(self, model: str = "heuristic-v1") -> None:
        self.model = model
        # The three roles of one image arrive one after another, often from concurrent workers: measure once.
        self._measures: OrderedDict[str, ImageMeasures] = OrderedDict()
        # The label and the reasoning requests of one design and indicator arrive one after another: judge once.
        self._judgements: OrderedDict[tuple[str, str, bool, str], Judgement] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HeuristicProvider(model={self.model!r})"

    def complete(self, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        try:
            text = json.dumps(self._answer(request), ensure_ascii=False)
        except _Refusal as exc:
            return self._response("", INVALID_RESPONSE, str(exc), started)
        return self._response(text, OK, None, started)

    def measures_for(self, image: bytes) -> ImageMeasures:
        """Measurements of the encoded image, cached by its sha256 for the life of this provider."""
        digest = sha256_hex(image)
        with self._lock:
            if digest in self._measures:
                self._measures.move_to_end(digest)
                return self._measures[digest]
        try:
            with Image.open(io.BytesIO(image)) as decoded:
                measured = measure(decoded)
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
            raise _Refusal(f"the request image could not be decoded: {exc}") from None
        with self._lock:
            self._measures[digest] = measured
            while len(self._measures) > _CACHE_SIZE:
                self._measures.popitem(last=False)
        return measured

    def _answer(self, request: ModelRequest) -> dict[str, Any]:
        if request.role not in _ROLE_SCHEMA:
            raise _Refusal(f"unknown role {request.role!r}; the heuristic provider answers "
                           f"{', '.join(_ROLE_SCHEMA)}")
        schema = request.schema_name or _ROLE_SCHEMA[request.role]
        if schema in _DESIGN_SCHEMAS:
            return self._design_answer(request, schema)
        if schema == JUDGE_SCHEMA_NAME:
            return self._poem_judgement(request)
        if schema == TEXT_ONLY_SCHEMA_NAME:
            return _text_only_answer(request)
        if schema not in ("plan", "dialogue", "verdicts"):
            raise _Refusal(f"role {request.role!r} with schema {schema!r}: expected schema plan, dialogue or verdicts "
                           f"(or a design schema: {', '.join(_DESIGN_SCHEMAS)})")
        if not request.image:
            raise _Refusal("the heuristic provider needs the image: the request carries none")
        context = request.context or {}
        domain = context.get("domain")
        if domain not in DOMAINS:
            raise _Refusal(f"request.context domain is {domain!r}; expected one of {', '.join(DOMAINS)}")
        measures = self.measures_for(request.image)
        if schema == "plan":
            return heuristic_critic.plan(measures, domain)
        if schema == "dialogue":
            return heuristic_critic.dialogue(measures, domain, _as_mapping(context.get("plan")))
        dialogue = _as_mapping(context.get("dialogue"))
        if dialogue is None or not isinstance(dialogue.get("pairs"), list):
            raise _Refusal("a verdicts request needs the dialogue to judge in request.context['dialogue']")
        return heuristic_critic.verdicts(measures, domain, dialogue)

    # --- poem illustrations -------------------------------------------------------------------------------------

    def _poem_judgement(self, request: ModelRequest) -> dict[str, Any]:
        """The rubric answer from measurements of the illustration (``assets.poetry.logic.rubric_judge.heuristic_judgement``):
        technical quality and style where pixels say something, null ("cannot tell") for the rest."""
        if not request.image:
            raise _Refusal("the heuristic provider needs the image: the request carries none")
        poem_text = (request.context or {}).get("poem_text")
        if not isinstance(poem_text, str):
            raise _Refusal("a poem judgement request needs the poem in request.context['poem_text']")
        try:
            with Image.open(io.BytesIO(request.image)) as decoded:
                return heuristic_judgement(decoded.convert("RGB"), poem_text)
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
            raise _Refusal(f"the request image could not be decoded: {exc}") from None

    # --- design labelling ------------------------------------------------------------------------------------

    def judgement_for(self, image: bytes, design: Design, indicator: str, sheet: bool = False) -> Judgement:
        """The offline judge's judgement of ``design`` for ``indicator`` from its encoded render (``sheet``: the
        render is the top-left panel of a few-shot example sheet), cached for the life of this provider."""
        key = (sha256_hex(image), sha256_hex(design.to_json().encode("utf-8")), sheet, indicator)
        with self._lock:
            if key in self._judgements:
                self._judgements.move_to_end(key)
                return self._judgements[key]
        try:
            with Image.open(io.BytesIO(image)) as decoded:
                render = decoded.convert("RGB")
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
            raise _Refusal(f"the request image could not be decoded: {exc}") from None
        if sheet:
            render = _design_panel(render, design)
        try:
            judgement = judge(design, render, indicator)
        except JudgeError as exc:
            raise _Refusal(f"design {design.design_id}: the judge cannot work with this input: {exc}") from None
        with self._lock:
            self._judgements[key] = judgement
            while len(self._judgements) > _CACHE_SIZE:
                self._judgements.popitem(last=False)
        return judgement

    def _design_answer(self, request: ModelRequest, schema: str) -> dict[str, Any]:
        if not request.image:
            raise _Refusal("the heuristic provider needs the image: the request carries none")
        context = request.context or {}
        raw_design = context.get("design")
        if not isinstance(raw_design, Mapping):
            raise _Refusal(f"a {schema} request needs the design record in request.context['design']")
        try:
            design = Design.from_dict(raw_design)
        except (KeyError, TypeError, ValueError) as exc:
            raise _Refusal(f"request.context['design'] is not a design record: {type(exc).__name__}: {exc}") from None
        indicator = context.get("indicator")
        if not isinstance(indicator, str) or not indicator:
            raise _Refusal(f"a {schema} request needs the indicator in request.context['indicator']")
        # Only label requests can carry a sheet: build_label_request composes one when any example has a picture.
        sheet = schema == LABEL_SCHEMA_NAME and any(
            isinstance(e, Mapping) and e.get("has_image") for e in context.get("examples") or ())
        judgement = self.judgement_for(request.image, design, indicator, sheet)
        if not judgement.evidence.get("measurable", True):
            why = judgement.claims[0].text if judgement.claims else "not measurable"
            raise _Refusal(f"design {design.design_id}, indicator {indicator}: the heuristic judge gives no verdict "
                           f"({why})")
        try:
            if schema == LABEL_SCHEMA_NAME:
                return label_from_judgement(judgement, design)
            return _design_reasoning(judgement, design, context)
        except DesignLabelError as exc:
            raise _Refusal(f"design {design.design_id}: {exc}") from None

    def _response(self, text: str, status: str, error: str | None, started: float) -> ModelResponse:
        return ModelResponse(text=text, input_tokens=None, output_tokens=None,
                             finish_reason="stop" if status == OK else None,
                             latency_ms=(time.perf_counter() - started) * 1000.0, attempts=1, status=status, error=error,
                             provider_model=self.model)


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    """Context values are plain dicts, or the typed Plan / Dialogue values, which convert themselves."""
    if value is None or isinstance(value, Mapping):
        return value
    as_dict = getattr(value, "as_dict", None)
    return as_dict() if callable(as_dict) else None


def _design_panel(sheet: Image.Image, design: Design) -> Image.Image:
    """The design panel of a few-shot sheet (``compose_example_sheet``): the render, unscaled, at the origin.

    The panel's width w is the one for which the sheet is w + max(160, w // 3) wide (the canvas width, a render
    at scale 1, is tried first) and at which the sheet's 2-pixel grey divider runs down its whole height; the
    panel's height follows from the canvas's aspect ratio."""
    cw, ch = design.canvas_width, design.canvas_height
    if cw <= 0 or ch <= 0:
        raise _Refusal(f"design {design.design_id} has canvas {cw}x{ch}")
    guess = max(1, (3 * sheet.width) // 4)
    for width in dict.fromkeys((cw, sheet.width - _SHEET_MIN_COLUMN, *range(guess - 2, guess + 3))):
        if not (0 < width < sheet.width - 1 and width + max(_SHEET_MIN_COLUMN, width // 3) == sheet.width):
            continue
        height = max(1, round(width * ch / cw))
        divider = sheet.crop((width, 0, width + 2, sheet.height)).getcolors(maxcolors=1)
        if height <= sheet.height and divider is not None and divider[0][1] == _SHEET_DIVIDER:
            return sheet.crop((0, 0, width, height))
    raise _Refusal(f"the request image ({sheet.width}x{sheet.height}) is not an example sheet with a design panel "
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
        raise _Refusal(f"request.context['verdict'] is {requested!r}; expected one of {', '.join(VERDICTS)}")
    answer = reasoning_from_judgement(judgement, design)
    if answer["verdict"] != requested:
        first = judgement.claims[0].text if judgement.claims else "no claim"
        raise _Refusal(f"design {design.design_id}, indicator {judgement.indicator}: the requested verdict is "
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


def _text_only_answer(request: ModelRequest) -> dict[str, Any]:
    """A case answered from its wording alone (``assets.context_canvas.logic.shortcuts.text_only_guess``): the shortcut
    detector, computed from the scenario, question and options in ``request.context``."""
    context = request.context or {}
    options = context.get("options")
    if not isinstance(options, list) or not options:
        raise _Refusal("a text-only request needs the case's options in request.context['options']")
    scenario = f"{context.get('scenario', '')} {context.get('proposed_assessment', '')}"
    choice = text_only_guess(scenario, str(context.get("question", "")),
                             [CaseOption(str(o["option_id"]), str(o["text"])) for o in options])
    return {"answer": choice, "reason": "the option sharing the most words with the scenario and question (ties: the"
            " longer option), read without the image"}
