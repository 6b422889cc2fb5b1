"""Model labelling of perturbed designs (AesEval section 4): human-guided labels and indicator-grounded reasoning.

Why: people can review only a sample; the paper labels the rest with a strong vision-language model that sees a
few human-judged examples and the box of the edited element as a prior, and then asks a model to write reasoning
paths that tie an indicator to concrete element boxes. This module decides what to ask and what an answer means;
the provider layer (``resources.model_providers``) sends it and ``assets.core.model_calls.ModelCaller`` caches,
logs and repairs it. Two request builders, two parsers:

- ``build_label_request`` / ``parse_label``: ``{"flawed": bool, "reason": str, "box": [x1, y1, x2, y2] | null}``;
- ``build_reasoning_request`` / ``parse_reasoning``:
  ``{"steps": [{"claim": str, "element_box": [x1, y1, x2, y2] | null}], "verdict": "flawed" | "good"}``.

Boxes in prompts and answers are ``[x1, y1, x2, y2]`` canvas pixels. An element's citable box is its rotated
bounds clipped to the canvas (what can be seen of it); an answer's box is accepted when it lies on the canvas and
is within ``tolerance`` pixels (each coordinate) of some element's citable or unrotated box, so every cited box
names an element of the design. Parsers raise ``DesignLabelError`` (a ValueError with a ``reason_code``), which
is what ``ModelCaller`` records and repairs by.

Templates live in ``assets/designs/prompts/*.txt`` in the critique templates' format (header with id, version and
role, then ``[system]`` and ``[user]``); their sha256 goes into ``request.context`` and ``labelling_digest``.
The request's ``context`` carries the structured inputs (design record, indicator, boxes) for offline providers;
it is never sent to a remote API. No API key is ever touched here: the provider layer holds keys.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from assets.core.templates import PromptFolder, PromptTemplate, render, repair_template
from assets.core.logic.json_answers import SchemaError, extract_json_object
from assets.designs.logic.judge import Judgement, clip_box, element_bounds
from assets.designs.logic.design_model import Design, Element
from assets.designs.logic.question_formats import (
    JUDGMENT,
    LOCALISATION,
    REGION_SELECTION,
    SkippedQuestion,
    question_input_from_design,
    region_selection_question,
)
from assets.core.model_calls import CallSettings, schema_repair_request
from resources.models.types import ModelRequest
from warehouse.ids import digest_of

DESIGN_PROMPTS = PromptFolder("assets.designs.prompts", "design")
LABEL_SCHEMA_NAME = "design_label"
REASONING_SCHEMA_NAME = "design_reasoning"
TASKS = ("judgment", "selection", "localisation")
TASK_FORMATS = {"judgment": JUDGMENT, "selection": REGION_SELECTION, "localisation": LOCALISATION}
"""The question format each reasoning task explains (AesEval 4: a path for each of the three)."""
VERDICTS = ("flawed", "good")
BOX_TOLERANCE_PX = 4.0
_TEXT_PREVIEW = 60

# Reason codes, stable: stored with rejected answers and counted in reports.
INVALID_JSON = "invalid_json"
MISSING_FIELD = "missing_field"
WRONG_TYPE = "wrong_type"
EMPTY_TEXT = "empty_text"
INVALID_BOX = "invalid_box"
INCONSISTENT_BOX = "inconsistent_box"        # a box given with flawed false
BOX_OUTSIDE_CANVAS = "box_outside_canvas"
BOX_NOT_IN_DESIGN = "box_not_in_design"
NO_STEPS = "no_steps"
NO_CITATION = "no_citation"                  # a reasoning path that cites no box at all
FOCUS_NOT_CITED = "focus_not_cited"          # ... or none of the regions it was asked about
INVALID_VERDICT = "invalid_verdict"
VERDICT_MISMATCH = "verdict_mismatch"
REASON_CODES = (INVALID_JSON, MISSING_FIELD, WRONG_TYPE, EMPTY_TEXT, INVALID_BOX, INCONSISTENT_BOX, BOX_OUTSIDE_CANVAS,
                BOX_NOT_IN_DESIGN, NO_STEPS, NO_CITATION, FOCUS_NOT_CITED, INVALID_VERDICT, VERDICT_MISMATCH)

XYXY = tuple[float, float, float, float]


class DesignLabelError(ValueError):
    """An answer (or a request input) that does not hold up; ``reason_code`` is one of REASON_CODES."""

    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(f"{reason_code}: {detail}")
        self.reason_code = reason_code
        self.detail = detail


# --- JSON Schemas (OpenAI json_schema and Gemini response_json_schema accept these) ---------------------------

_BOX = {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4,
        "description": "[x1, y1, x2, y2] in canvas pixels, copied from the element list"}

LABEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Whether one design shows the problem one indicator describes.",
    "properties": {
        "flawed": {"type": "boolean", "description": "True when the design shows the problem."},
        "reason": {"type": "string", "description": "One or two sentences naming the element and what is visible."},
        "box": {"anyOf": [_BOX, {"type": "null"}], "description": "The flawed element's box; null when not flawed."},
    },
    "required": ["flawed", "reason", "box"],
    "additionalProperties": False,
}

REASONING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A reasoning path that ties an indicator to element boxes and ends in the given verdict.",
    "properties": {
        "steps": {
            "type": "array", "minItems": 1, "maxItems": 8,
            "items": {
                "type": "object",
                "properties": {
                    "claim": {"type": "string", "description": "One observation about the design."},
                    "element_box": {"anyOf": [_BOX, {"type": "null"}],
                                    "description": "The box of the element the claim is about; null for the whole design."},
                },
                "required": ["claim", "element_box"],
                "additionalProperties": False,
            },
        },
        "verdict": {"type": "string", "enum": list(VERDICTS)},
    },
    "required": ["steps", "verdict"],
    "additionalProperties": False,
}

SCHEMAS: dict[str, dict[str, Any]] = {LABEL_SCHEMA_NAME: LABEL_SCHEMA, REASONING_SCHEMA_NAME: REASONING_SCHEMA}


# --- templates ---------------------------------------------------------------------------------------------------


def template_names() -> tuple[str, ...]:
    return DESIGN_PROMPTS.names()


def load_design_template(name: str) -> PromptTemplate:
    """The packaged template ``design/<name>.txt``."""
    return DESIGN_PROMPTS.load(name)


def labelling_digest() -> str:
    """Identity of the labelling prompts and answer formats: a change to either is a new configuration."""
    return digest_of([[load_design_template(n).sha256 for n in ("labeller", "reasoning")],
                      repair_template().sha256, SCHEMAS])


# --- boxes -------------------------------------------------------------------------------------------------------


def citable_box(element: Element, design: Design) -> XYXY | None:
    """What can be seen of an element: its rotated bounds clipped to the canvas (None when it is off-canvas)."""
    return clip_box(element_bounds(element), design.canvas_width, design.canvas_height)


def element_box(design: Design, element_id: str) -> XYXY:
    """The citable box of the element named ``element_id``."""
    for element in design.elements:
        if element.element_id == element_id:
            box = citable_box(element, design)
            if box is None:
                raise DesignLabelError(BOX_OUTSIDE_CANVAS, f"element {element_id} of design {design.design_id} "
                                                           "lies wholly outside the canvas")
            return box
    raise DesignLabelError(BOX_NOT_IN_DESIGN, f"design {design.design_id} has no element {element_id!r}")


def _candidate_boxes(element: Element, design: Design) -> list[XYXY]:
    boxes = []
    for raw in (element_bounds(element), (element.left, element.top, element.left + element.width,
                                          element.top + element.height)):
        clipped = clip_box(raw, design.canvas_width, design.canvas_height)
        if clipped is not None and clipped not in boxes:
            boxes.append(clipped)
    return boxes


def match_box(box: XYXY, design: Design, tolerance: float = BOX_TOLERANCE_PX, where: str = "box") -> str:
    """The id of the element whose box ``box`` names, within ``tolerance`` px per coordinate.

    Checks that the box lies on the canvas first (``box_outside_canvas``), then looks for the element
    (``box_not_in_design``). When elements share a box, the top-most (last painted) one is named.
    """
    width, height = design.canvas_width, design.canvas_height
    if box[0] < -tolerance or box[1] < -tolerance or box[2] > width + tolerance or box[3] > height + tolerance:
        raise DesignLabelError(BOX_OUTSIDE_CANVAS, f"{where} {_fmt(box)} reaches outside the {width}x{height} canvas")
    best: tuple[float, str] | None = None
    for element in reversed(design.elements):
        for candidate in _candidate_boxes(element, design):
            distance = max(abs(a - b) for a, b in zip(box, candidate))
            if best is None or distance < best[0]:
                best = (distance, element.element_id)
    if best is None or best[0] > tolerance:
        nearest = f" (nearest: {best[1]}, {best[0]:.1f} px off)" if best else ""
        raise DesignLabelError(BOX_NOT_IN_DESIGN, f"{where} {_fmt(box)} matches no element box of design "
                                                  f"{design.design_id} within {tolerance:g} px{nearest}")
    return best[1]


def _fmt(box: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in box) + "]"


def _prompt_box(box: XYXY) -> list[int]:
    return [int(round(v)) for v in box]


def _element_lines(design: Design) -> str:
    """One line per visible element, bottom first: id, type, citable box and, for text, what it says and how."""
    lines = []
    for element in design.elements:
        box = citable_box(element, design)
        if box is None:
            continue
        line = f"- {element.element_id}: {element.type} {json.dumps(_prompt_box(box))}"
        if element.type == "text":
            text = " ".join((element.text or "").split())
            text = text if len(text) <= _TEXT_PREVIEW else text[:_TEXT_PREVIEW - 1] + "…"
            details = [f"font {element.font}" if element.font else None,
                       f"{element.font_size:g} px" if element.font_size else None,
                       "colour #" + "".join(f"{c:02x}" for c in element.color) if element.color else None]
            line += f" {json.dumps(text, ensure_ascii=False)} (" + ", ".join(d for d in details if d) + ")"
        if element.angle % 360:
            line += f", rotated {element.angle:g} deg"
        if element.opacity < 1:
            line += f", opacity {element.opacity:g}"
        lines.append(line)
    return "\n".join(lines)


def _checked_boxes(boxes: Sequence[Sequence[float]], design: Design, what: str) -> list[tuple[XYXY, str]]:
    """Input boxes (priors, regions, candidates) must name elements too, so a prompt never shows a foreign box.
    Each comes back as its element's citable box, the form the element list shows (an unrotated or unclipped
    box from a perturbation log is thus shown as the model will see and cite it)."""
    out = []
    for index, raw in enumerate(boxes):
        box = _box_value(list(raw), f"{what}[{index}]")
        element_id = match_box(box, design, where=f"{what}[{index}]")
        out.append((element_box(design, element_id), element_id))
    return out


def reasoning_regions(design: Design, indicator: str, definition: str, task: str, flawed: bool, answer_element_id: str,
                      perturbed_ids: Sequence[str], seed: int, box_units: str) -> tuple[list[XYXY], list[XYXY | None] | None]:
    """The regions a ``task`` reasoning path discusses, and the selection question's candidates (None otherwise).

    After AesEval 4 "Indicator-Grounded Reasoning": judgment discusses the perturbed region the label is about;
    selection every candidate of the design's region-selection question (the perturbed region and the others),
    rebuilt with the question's seed and units so the candidates are the ones the question shows, in its order;
    localisation every visible perturbed region, the labelled one first, for the path to relate to the layout.
    A selection question that was skipped (too few distinct boxes) raises ``DesignLabelError``."""
    if task == "judgment":
        return [element_box(design, answer_element_id)], None
    if task == "localisation":
        visible = {e.element_id for e in design.elements if citable_box(e, design) is not None}
        ids = [e for e in dict.fromkeys([answer_element_id, *perturbed_ids]) if e in visible]
        return [element_box(design, e) for e in ids] or [element_box(design, answer_element_id)], None
    if task != "selection":
        raise ValueError(f"task must be one of {TASKS}, not {task!r}")
    question = region_selection_question(
        question_input_from_design(design, indicator, definition, perturbed_ids, flawed, answer_element_id), seed, box_units)
    if isinstance(question, SkippedQuestion):
        raise DesignLabelError(question.reason_code, f"design {design.design_id}: {question.detail}")
    candidates = [None if e is None else element_box(design, e) for e in question.choice_elements]
    return [c for c in candidates if c is not None], candidates


# --- requests ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelledExample:
    """A design people judged for the same indicator: their verdict, a short reason, the edited element's box
    (canvas pixels of that design) and, optionally, its rendered image."""

    flawed: bool
    reason: str
    box: XYXY | None = None
    image: bytes | None = None
    image_mime: str | None = None
    design_id: str = ""

    def __repr__(self) -> str:  # image bytes are not worth printing
        return (f"LabelledExample(flawed={self.flawed!r}, reason={self.reason!r}, box={self.box!r}, "
                f"design_id={self.design_id!r}, image={'<%d bytes>' % len(self.image) if self.image else None})")


def _example_lines(examples: Sequence[LabelledExample], with_sheet: bool) -> str:
    if not examples:
        return "(none given)"
    lines, panel = [], 0
    for number, example in enumerate(examples, start=1):
        verdict = "flawed" if example.flawed else "not flawed"
        line = f"{number}. Judged {verdict}: {' '.join(example.reason.split())}"
        if example.box is not None:
            line += f" Edited element box: {json.dumps(_prompt_box(example.box))}."
        if with_sheet and example.image is not None:
            panel += 1
            line += f" Its picture is panel {panel} on the right of the attached sheet."
        lines.append(line)
    return "\n".join(lines)


def compose_example_sheet(target: bytes, examples: Sequence[LabelledExample], panel_width: int | None = None) -> bytes:
    """One PNG: the design to judge at its own size at the top-left, the examples' pictures in a column to its
    right, each under a numbered caption. Models get one image per request, and keeping the target at the
    origin and unscaled keeps its boxes meaningful. Deterministic for the same inputs."""
    with Image.open(io.BytesIO(target)) as opened:
        design = opened.convert("RGB")
    pictures = [e for e in examples if e.image is not None]
    width = panel_width or max(160, design.width // 3)
    caption = max(14, width // 12)
    font = ImageFont.load_default(size=caption - 4)
    cell = max(caption + 16, design.height // max(1, len(pictures)))
    sheet = Image.new("RGB", (design.width + width, max(design.height, cell * len(pictures))), (255, 255, 255))
    sheet.paste(design, (0, 0))
    draw = ImageDraw.Draw(sheet)
    for number, example in enumerate(pictures, start=1):
        top = (number - 1) * cell
        draw.text((design.width + 4, top + 2), f"Example {number}: {'flawed' if example.flawed else 'not flawed'}",
                  fill=(0, 0, 0), font=font)
        with Image.open(io.BytesIO(example.image)) as opened:
            picture = opened.convert("RGB")
        picture.thumbnail((width - 8, cell - caption - 8), Image.Resampling.LANCZOS)
        left, upper = design.width + 4, top + caption + 4
        sheet.paste(picture, (left, upper))
        draw.rectangle([left - 1, upper - 1, left + picture.width, upper + picture.height], outline=(128, 128, 128))
    draw.line([(design.width, 0), (design.width, sheet.height)], fill=(128, 128, 128), width=2)
    out = io.BytesIO()
    sheet.save(out, format="PNG", optimize=False)
    return out.getvalue()


def build_label_request(
    design: Design,
    image: bytes,
    image_mime: str,
    indicator: str,
    definition: str,
    examples: Sequence[LabelledExample],
    prior_boxes: Sequence[Sequence[float]],
    settings: CallSettings,
) -> ModelRequest:
    """Few-shot labelling of one design for one indicator, with the edited elements' boxes as a prior hint.

    Example images, when any example has one, are put on a sheet next to the design (see
    ``compose_example_sheet``); otherwise the examples go as text and the design image alone is sent.
    """
    if not image:
        raise ValueError(f"design {design.design_id}: the label request needs the rendered design image")
    if not definition.strip():
        raise ValueError(f"indicator {indicator!r} needs a definition")
    priors = _checked_boxes(prior_boxes, design, "prior_boxes")
    with_sheet = any(e.image is not None for e in examples)
    if with_sheet:
        image, image_mime = compose_example_sheet(image, examples), "image/png"
        note = ("The attached picture is a sheet: the design to judge is the large panel at the top-left; the people's "
                "example designs are the smaller panels on the right.")
    else:
        note = "The rendered design is attached."
    if priors:
        prior = ("the element(s) " + ", ".join(f"{json.dumps(_prompt_box(box))} ({element_id})" for box, element_id in priors)
                 + " were edited before rendering.")
    else:
        prior = "no edited element is known for this design."
    template = load_design_template("labeller")
    system, user = render(
        template, indicator=indicator, definition=" ".join(definition.split()),
        canvas_width=str(design.canvas_width), canvas_height=str(design.canvas_height), image_note=note,
        elements=_element_lines(design), examples=_example_lines(examples, with_sheet), prior=prior,
    )
    context = {
        "task": LABEL_SCHEMA_NAME, "design_id": design.design_id, "design": design.to_dict(), "indicator": indicator,
        "prior_boxes": [list(box) for box, _ in priors], "prior_element_ids": [e for _, e in priors],
        "examples": [{"flawed": e.flawed, "design_id": e.design_id, "has_image": e.image is not None} for e in examples],
        "template_sha256": template.sha256,
    }
    return _request(template, system, user, image, image_mime, LABEL_SCHEMA_NAME, settings, context)


def build_reasoning_request(
    design: Design,
    image: bytes,
    image_mime: str,
    indicator: str,
    definition: str,
    task: str,
    verdict: str,
    regions: Sequence[Sequence[float]],
    settings: CallSettings,
    candidates: Sequence[Sequence[float] | None] | None = None,
) -> ModelRequest:
    """An indicator-grounded reasoning path for one design, question type and known verdict.

    After the paper: ``regions`` are the boxes to discuss (the edited elements for judgment; for selection the
    caller passes the edited and the other candidate boxes; for localisation the edited ones, and the prompt asks
    to relate them to the whole layout). ``candidates`` are the selection question's options (None for "None").
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, not {task!r}")
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, not {verdict!r}")
    if not image:
        raise ValueError(f"design {design.design_id}: the reasoning request needs the rendered design image")
    if not regions:
        raise ValueError(f"design {design.design_id}: a reasoning path needs at least one region to discuss")
    checked = _checked_boxes(regions, design, "regions")
    options = ""
    if task == "selection":
        if not candidates:
            raise ValueError("a selection reasoning path needs the candidate regions")
        lines = []
        for letter, box in zip("ABCDEFGH", candidates):
            if box is None:
                lines.append(f"{letter}. None (no region has the problem)")
            else:
                (checked_box, element_id), = _checked_boxes([box], design, f"candidates[{letter}]")
                lines.append(f"{letter}. {json.dumps(_prompt_box(checked_box))} ({element_id})")
        options = "Candidate regions:\n" + "\n".join(lines) + "\n"
    template = load_design_template("reasoning")
    system, user = render(
        template, indicator=indicator, definition=" ".join(definition.split()),
        canvas_width=str(design.canvas_width), canvas_height=str(design.canvas_height), elements=_element_lines(design),
        task=task, candidates=options, verdict=verdict,
        regions="\n".join(f"- {json.dumps(_prompt_box(box))} ({element_id})" for box, element_id in checked),
    )
    context = {
        "task": REASONING_SCHEMA_NAME, "design_id": design.design_id, "design": design.to_dict(), "indicator": indicator,
        "question": task, "verdict": verdict, "regions": [list(box) for box, _ in checked],
        "region_element_ids": [e for _, e in checked], "template_sha256": template.sha256,
    }
    return _request(template, system, user, image, image_mime, REASONING_SCHEMA_NAME, settings, context)


def _request(template: PromptTemplate, system: str, user: str, image: bytes, image_mime: str, schema_name: str,
             settings: CallSettings, context: Mapping[str, Any]) -> ModelRequest:
    return ModelRequest(
        role=template.role, model=settings.model, system=system, user=user, image=image, image_mime=image_mime,
        json_schema=SCHEMAS[schema_name], schema_name=schema_name, temperature=settings.temperature,
        max_output_tokens=settings.max_output_tokens, template_id=template.id, template_version=template.version,
        context=context,
    )


def repair_request(original: ModelRequest, invalid_answer: str, problem: str) -> ModelRequest:
    """The shared repair prompt (``critique/repair``) for a design answer: same model, image and schema.
    Pass as ``ModelCaller``'s ``repair``."""
    schema_name = original.schema_name or ""
    if schema_name not in SCHEMAS:
        raise ValueError(f"no design schema {schema_name!r}; expected one of {', '.join(SCHEMAS)}")
    return schema_repair_request(original, invalid_answer, problem, SCHEMAS[schema_name])


# --- answers -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Label:
    flawed: bool
    reason: str
    box: XYXY | None
    element_id: str | None  # the element the box names (None without a box or without a design to check against)


@dataclass(frozen=True)
class ReasoningStep:
    claim: str
    box: XYXY | None
    element_id: str | None


@dataclass(frozen=True)
class ReasoningPath:
    steps: tuple[ReasoningStep, ...]
    verdict: str

    @property
    def cited_element_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.element_id for s in self.steps if s.element_id is not None))

    def as_dict(self) -> dict[str, Any]:
        return {"steps": [{"claim": s.claim, "element_box": list(s.box) if s.box else None, "element_id": s.element_id}
                          for s in self.steps], "verdict": self.verdict}


def _object(text: str) -> dict[str, Any]:
    try:
        value = extract_json_object(text)
    except SchemaError as exc:
        raise DesignLabelError(INVALID_JSON, exc.detail) from None
    if not isinstance(value, dict):
        raise DesignLabelError(INVALID_JSON, "the answer is not a JSON object")
    return value


def _get(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise DesignLabelError(MISSING_FIELD, f"{where} has no {key!r}")
    return obj[key]


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise DesignLabelError(WRONG_TYPE, f"{where} is {type(value).__name__}, not text")
    if not value.strip():
        raise DesignLabelError(EMPTY_TEXT, f"{where} is empty")
    return value.strip()


def _box_value(value: Any, where: str) -> XYXY:
    if (not isinstance(value, list) or len(value) != 4
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)):
        raise DesignLabelError(INVALID_BOX, f"{where} is {json.dumps(value)[:80]}, not four numbers [x1, y1, x2, y2]")
    x1, y1, x2, y2 = (float(v) for v in value)
    if x2 <= x1 or y2 <= y1:
        raise DesignLabelError(INVALID_BOX, f"{where} {_fmt((x1, y1, x2, y2))} is empty or inverted (need x1 < x2, y1 < y2)")
    return (x1, y1, x2, y2)


def parse_label(text: str, design: Design | None = None, tolerance: float = BOX_TOLERANCE_PX) -> Label:
    """Checks, in order: JSON object; fields present and typed; a non-empty reason; a box only when flawed; and,
    given the design, that the box lies on the canvas and names one of its elements."""
    obj = _object(text)
    flawed = _get(obj, "flawed", "answer")
    if not isinstance(flawed, bool):
        raise DesignLabelError(WRONG_TYPE, f"answer.flawed is {json.dumps(flawed)[:40]}, not true or false")
    reason = _text(_get(obj, "reason", "answer"), "answer.reason")
    raw_box = _get(obj, "box", "answer")
    if raw_box is None:
        return Label(flawed, reason, None, None)
    box = _box_value(raw_box, "answer.box")
    if not flawed:
        raise DesignLabelError(INCONSISTENT_BOX, f"answer.box is {_fmt(box)} but flawed is false; give null")
    element_id = match_box(box, design, tolerance, "answer.box") if design is not None else None
    return Label(flawed, reason, box, element_id)


def parse_reasoning(text: str, design: Design, tolerance: float = BOX_TOLERANCE_PX, expected_verdict: str | None = None,
                    required_boxes: Sequence[Sequence[float]] = ()) -> ReasoningPath:
    """Checks, in order: JSON object; steps present, each with a non-empty claim and a box or null; every box on
    the canvas and naming an element; at least one box cited (and, given ``required_boxes``, one of those); the
    verdict one of flawed/good and, given ``expected_verdict``, that one."""
    obj = _object(text)
    raw_steps = _get(obj, "steps", "answer")
    if not isinstance(raw_steps, list):
        raise DesignLabelError(WRONG_TYPE, f"answer.steps is {type(raw_steps).__name__}, not a list")
    if not raw_steps:
        raise DesignLabelError(NO_STEPS, "answer.steps is empty")
    steps = []
    for index, raw in enumerate(raw_steps):
        where = f"steps[{index}]"
        if not isinstance(raw, dict):
            raise DesignLabelError(WRONG_TYPE, f"{where} is {type(raw).__name__}, not an object")
        claim = _text(_get(raw, "claim", where), f"{where}.claim")
        raw_box = _get(raw, "element_box", where)
        if raw_box is None:
            steps.append(ReasoningStep(claim, None, None))
            continue
        box = _box_value(raw_box, f"{where}.element_box")
        steps.append(ReasoningStep(claim, box, match_box(box, design, tolerance, f"{where}.element_box")))
    verdict = _get(obj, "verdict", "answer")
    if not isinstance(verdict, str) or verdict.strip().lower() not in VERDICTS:
        raise DesignLabelError(INVALID_VERDICT, f"answer.verdict is {json.dumps(verdict)[:40]}, not one of {VERDICTS}")
    verdict = verdict.strip().lower()
    path = ReasoningPath(tuple(steps), verdict)
    if not path.cited_element_ids:
        raise DesignLabelError(NO_CITATION, "no step cites an element box")
    if required_boxes:
        wanted = [element_id for _, element_id in _checked_boxes(required_boxes, design, "required_boxes")]
        if not set(wanted) & set(path.cited_element_ids):
            raise DesignLabelError(FOCUS_NOT_CITED, f"no step cites the region(s) to discuss ({', '.join(wanted)})")
    if expected_verdict is not None and verdict != expected_verdict:
        raise DesignLabelError(VERDICT_MISMATCH, f"answer.verdict is {verdict!r} but the given verdict is {expected_verdict!r}")
    return path


def label_parser(design: Design, tolerance: float = BOX_TOLERANCE_PX) -> Callable[[str], Label]:
    """``parse_label`` bound to a design, in the one-argument form ``ModelCaller.call`` takes."""
    return lambda text: parse_label(text, design, tolerance)


def reasoning_parser(design: Design, expected_verdict: str | None = None, required_boxes: Sequence[Sequence[float]] = (),
                     tolerance: float = BOX_TOLERANCE_PX) -> Callable[[str], ReasoningPath]:
    """``parse_reasoning`` bound to a design and its expectations, for ``ModelCaller.call``."""
    return lambda text: parse_reasoning(text, design, tolerance, expected_verdict, required_boxes)


# --- the offline path: answers in the same shapes from the judge's measurements ----------------------------------


def label_from_judgement(judgement: Judgement, design: Design) -> dict[str, Any]:
    """A ``design_label`` answer made from a heuristic judgement: its verdict, its measured claims as the reason,
    and the box of the first element it blames (null when it blames none or finds no flaw)."""
    reason = "; ".join(c.text for c in judgement.claims[:2]) or f"{judgement.indicator}: nothing measured"
    box = None
    if judgement.flawed and judgement.boxes:
        box = [round(v, 2) for v in element_box(design, judgement.boxes[0])]
    return {"flawed": judgement.flawed, "reason": reason[0].upper() + reason[1:] + ".", "box": box}


def reasoning_from_judgement(judgement: Judgement, design: Design) -> dict[str, Any]:
    """A ``design_reasoning`` answer made from a heuristic judgement: one step per measured claim, citing the
    claim's element, and a closing step with the verdict."""
    steps = []
    for claim in judgement.claims:
        box = [round(v, 2) for v in element_box(design, claim.element_id)] if claim.element_id else None
        steps.append({"claim": claim.text[0].upper() + claim.text[1:] + ".", "element_box": box})
    verdict = "flawed" if judgement.flawed else "good"
    steps.append({"claim": f"So the design {'breaks' if judgement.flawed else 'meets'} the {judgement.indicator} "
                           "indicator.", "element_box": None})
    return {"steps": steps, "verdict": verdict}
