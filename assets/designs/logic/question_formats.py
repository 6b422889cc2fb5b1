"""The three AesEval question formats for one (design, indicator), built from the perturbation record and the label.

After AesEval section 3.2 "Generating Question-Answer Pairs" (seed paper 003). The label says whether the design,
as rendered, is judged flawed for the indicator (a human majority vote, or a model or heuristic label at scale):

- **aesthetic judgment** asks whether the design shows a problem with the indicator; the answer is ``yes`` when it
  was judged flawed and ``no`` when judged good.
- **region selection** offers four choices. Flawed: the perturbed element's box, two boxes of other elements and
  ``None``; the answer is the perturbed element's box. Good: three element boxes and ``None``; the answer is ``None``.
- **precise localisation** asks for the box itself: the perturbed element's box when flawed, ``None`` when good.

Boxes. A question box is ``[x1, y1, x2, y2]``: left, top, right, bottom in integer canvas pixels, the axis-aligned
extent of the element as painted (a rotated element's rotated corners), rounded outward to whole pixels and clipped
to the canvas. With ``box_units="normalised"`` every coordinate is divided by the canvas width or height and rounded
to three decimals, for models that answer in relative coordinates; the choice rules are applied after that
conversion, so choices stay distinct in the units the model sees.

Randomness. Distractor boxes and the choice order come from a ``random.Random`` seeded with
``digest_of([seed, design_id, indicator])``: the same input and seed give the same question whatever order designs
are processed in, and the twelve indicators of one design are shuffled independently of each other.

Too few elements. Region selection needs enough *distinct* boxes (the perturbed box plus two others, or three when
good). A design that lacks them gets no region-selection question — a ``SkippedQuestion`` with reason_code
``too_few_elements`` — rather than an invented box or a duplicated choice; its other two formats are still built.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assets.designs.logic.design_model import Design
from warehouse.ids import digest_of

JUDGMENT = "aesthetic_judgment"
REGION_SELECTION = "region_selection"
LOCALISATION = "precise_localisation"
FORMATS = (JUDGMENT, REGION_SELECTION, LOCALISATION)

YES, NO = "yes", "no"
JUDGMENT_CHOICES = (YES, NO)
CHOICE_LETTERS = ("A", "B", "C", "D")
BOX_UNITS = ("pixels", "normalised")

TOO_FEW_ELEMENTS = "too_few_elements"
PERTURBED_OFF_CANVAS = "perturbed_element_off_canvas"
INVALID_INPUT = "invalid_question_input"

PixelBox = tuple[int, int, int, int]            # x1, y1, x2, y2 in canvas pixels
QuestionBox = tuple[int, int, int, int] | tuple[float, float, float, float]


class QuestionInputError(ValueError):
    """A question input that cannot give sound questions; names the design and the field at fault."""

    def __init__(self, design_id: str, field_name: str, detail: str, reason_code: str = INVALID_INPUT) -> None:
        self.design_id = design_id
        self.field = field_name
        self.detail = detail
        self.reason_code = reason_code
        super().__init__(f"design {design_id}: {field_name}: {detail} ({reason_code})")


@dataclass(frozen=True)
class QuestionInput:
    """What the question builder needs about one (design, indicator), as plain values.

    ``element_boxes`` maps element_id to its pixel box ``(x1, y1, x2, y2)`` inside the canvas; ``off_canvas`` names
    elements with no visible pixels (they cannot be pointed at). ``perturbed_element_id`` is the element the answer
    refers to (required when ``judged_flawed``); ``other_perturbed_ids`` are the design's other perturbed elements,
    kept out of the distractors of a flawed design so that no distractor is a second defensible answer.
    """

    design_id: str
    canvas_width: int
    canvas_height: int
    element_boxes: Mapping[str, PixelBox]
    perturbed_element_id: str | None
    judged_flawed: bool
    indicator: str
    definition: str
    other_perturbed_ids: frozenset[str] = frozenset()
    off_canvas: frozenset[str] = frozenset()

    def validate(self) -> None:
        """Raise QuestionInputError naming the first field that breaks a rule the questions rely on."""
        d = self.design_id
        if not isinstance(d, str) or not d:
            raise QuestionInputError(str(d), "design_id", "must be a non-empty string")
        for name, size in (("canvas_width", self.canvas_width), ("canvas_height", self.canvas_height)):
            if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
                raise QuestionInputError(d, name, f"must be a positive integer, not {size!r}")
        if not isinstance(self.indicator, str) or not self.indicator.strip():
            raise QuestionInputError(d, "indicator", "must be a non-empty indicator id")
        if not isinstance(self.definition, str) or not self.definition.strip():
            raise QuestionInputError(d, "definition", f"indicator {self.indicator!r} needs a non-empty definition")
        for element_id, box in self.element_boxes.items():
            problem = _box_problem(box, self.canvas_width, self.canvas_height)
            if problem:
                raise QuestionInputError(d, f"element_boxes[{element_id!r}]", problem)
        if self.judged_flawed and self.perturbed_element_id is None:
            raise QuestionInputError(d, "perturbed_element_id", "a design judged flawed needs the perturbed element")
        if self.perturbed_element_id is not None and self.perturbed_element_id not in self.element_boxes:
            if self.perturbed_element_id not in self.off_canvas:
                raise QuestionInputError(
                    d, "perturbed_element_id", f"{self.perturbed_element_id!r} is neither in element_boxes nor off_canvas"
                )


def _box_problem(box: Any, width: int, height: int) -> str | None:
    if not isinstance(box, (tuple, list)) or len(box) != 4:
        return f"must be four integers x1, y1, x2, y2, not {box!r}"
    if any(isinstance(v, bool) or not isinstance(v, int) for v in box):
        return f"coordinates must be integers, not {list(box)!r}"
    x1, y1, x2, y2 = box
    if not (0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height):
        return f"{list(box)} is not a non-empty box inside the {width}x{height} canvas"
    return None


def pixel_box(
    left: float, top: float, width: float, height: float, angle: float, canvas_width: int, canvas_height: int
) -> PixelBox | None:
    """The painted extent of an element as an integer box inside the canvas, or None when nothing of it is visible.

    Rotation is about the centre (the design model's convention); the extent of the rotated rectangle is
    ``|w cos a| + |h sin a|`` wide and ``|w sin a| + |h cos a|`` tall, whichever way it turns. Rounding is outward
    (floor the near edge, ceil the far one) so the box always covers every painted pixel.
    """
    radians = math.radians(angle)
    cos, sin = abs(math.cos(radians)), abs(math.sin(radians))
    half_w = (width * cos + height * sin) / 2
    half_h = (width * sin + height * cos) / 2
    cx, cy = left + width / 2, top + height / 2
    # round() first absorbs float noise such as cos(90°) = 6e-17, which would otherwise push a ceil up a pixel
    x1 = max(0, math.floor(round(cx - half_w, 6)))
    y1 = max(0, math.floor(round(cy - half_h, 6)))
    x2 = min(canvas_width, math.ceil(round(cx + half_w, 6)))
    y2 = min(canvas_height, math.ceil(round(cy + half_h, 6)))
    if x2 <= x1 or y2 <= y1:
        return None
    return (x1, y1, x2, y2)


def question_input_from_design(
    design: Design,
    indicator: str,
    definition: str,
    perturbed_element_ids: Sequence[str],
    judged_flawed: bool,
    answer_element_id: str | None = None,
    exclude_types: Iterable[str] = (),
) -> QuestionInput:
    """The QuestionInput for a (perturbed) design as rendered.

    ``perturbed_element_ids`` are all the elements the perturbation log touched; the answer refers to
    ``answer_element_id`` when given, else to the only perturbed element (a design with several needs the caller to
    say which one the indicator's label is about). Element ids must be unique within the design.
    ``exclude_types`` (e.g. ``("background",)``: a whole-canvas box says nothing about where a flaw is) keeps those
    element types out of the candidate boxes, unless the element was perturbed.
    """
    boxes: dict[str, PixelBox] = {}
    off: set[str] = set()
    seen: set[str] = set()
    excluded_types = set(exclude_types)
    for index, element in enumerate(design.elements):
        if element.element_id in seen:
            raise QuestionInputError(design.design_id, f"elements[{index}].element_id", f"{element.element_id!r} is repeated")
        seen.add(element.element_id)
        if element.type in excluded_types and element.element_id not in perturbed_element_ids:
            continue
        box = pixel_box(
            element.left, element.top, element.width, element.height, element.angle, design.canvas_width, design.canvas_height
        )
        if box is None:
            off.add(element.element_id)
        else:
            boxes[element.element_id] = box
    for element_id in perturbed_element_ids:
        if element_id not in seen:
            raise QuestionInputError(design.design_id, "perturbed_element_ids", f"{element_id!r} is not an element of the design")
    if answer_element_id is None and len(perturbed_element_ids) == 1:
        answer_element_id = perturbed_element_ids[0]
    if answer_element_id is not None and answer_element_id not in perturbed_element_ids:
        raise QuestionInputError(design.design_id, "answer_element_id", f"{answer_element_id!r} was not perturbed")
    if judged_flawed and answer_element_id is None:
        detail = "no element was perturbed" if not perturbed_element_ids else "several elements were perturbed; say which one"
        raise QuestionInputError(design.design_id, "answer_element_id", detail)
    return QuestionInput(
        design_id=design.design_id,
        canvas_width=design.canvas_width,
        canvas_height=design.canvas_height,
        element_boxes=boxes,
        perturbed_element_id=answer_element_id,
        judged_flawed=judged_flawed,
        indicator=indicator,
        definition=definition,
        other_perturbed_ids=frozenset(e for e in perturbed_element_ids if e != answer_element_id),
        off_canvas=frozenset(off),
    )


def normalised_box(box: PixelBox, canvas_width: int, canvas_height: int) -> tuple[float, float, float, float]:
    """A pixel box as fractions of the canvas, three decimals."""
    x1, y1, x2, y2 = box
    return (
        round(x1 / canvas_width, 3),
        round(y1 / canvas_height, 3),
        round(x2 / canvas_width, 3),
        round(y2 / canvas_height, 3),
    )


@dataclass(frozen=True)
class Question:
    question_id: str
    design_id: str
    indicator: str
    format: str
    prompt: str
    choices: tuple[Any, ...]             # ("yes", "no"); four boxes-or-None; () for localisation (free answer)
    answer: Any                          # "yes" / "no"; a box; or None
    answer_index: int | None             # position of the answer in choices; None for localisation
    box_units: str = "pixels"
    choice_elements: tuple[str | None, ...] = field(default=())  # region selection: element id behind each choice

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: boxes become lists."""
        return {
            "question_id": self.question_id,
            "design_id": self.design_id,
            "indicator": self.indicator,
            "format": self.format,
            "prompt": self.prompt,
            "choices": [_jsonable(c) for c in self.choices],
            "answer": _jsonable(self.answer),
            "answer_index": self.answer_index,
            "box_units": self.box_units,
            "choice_elements": list(self.choice_elements),
        }


@dataclass(frozen=True)
class SkippedQuestion:
    design_id: str
    indicator: str
    format: str
    reason_code: str
    detail: str


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _question(
    item: QuestionInput, fmt: str, prompt: str, choices: tuple[Any, ...], answer: Any, answer_index: int | None,
    box_units: str, choice_elements: tuple[str | None, ...] = (),
) -> Question:
    content = [item.design_id, item.indicator, fmt, prompt, [_jsonable(c) for c in choices], _jsonable(answer), box_units]
    return Question(
        question_id="design-question:" + digest_of(["design-question", *content]),
        design_id=item.design_id,
        indicator=item.indicator,
        format=fmt,
        prompt=prompt,
        choices=choices,
        answer=answer,
        answer_index=answer_index,
        box_units=box_units,
        choice_elements=choice_elements,
    )


def _indicator_name(indicator: str) -> str:
    return indicator.strip().replace("_", " ")


def _indicator_preamble(item: QuestionInput) -> str:
    return f"Indicator under review: {_indicator_name(item.indicator)}. What it means: {item.definition.strip()}"


def _units_sentence(item: QuestionInput, box_units: str) -> str:
    if box_units == "pixels":
        return (
            f"Boxes are written [left, top, right, bottom] in pixels of the {item.canvas_width}x{item.canvas_height} "
            "canvas, measured from its top-left corner."
        )
    return (
        "Boxes are written [left, top, right, bottom] as fractions of the canvas width and height (0 to 1, three "
        "decimals), measured from its top-left corner."
    )


def _format_box(box: QuestionBox | None, box_units: str) -> str:
    if box is None:
        return "None"
    if box_units == "pixels":
        return "[" + ", ".join(str(v) for v in box) + "]"
    return "[" + ", ".join(f"{v:.3f}" for v in box) + "]"


def _seeded_rng(seed: int, item: QuestionInput) -> random.Random:
    return random.Random(int(digest_of(["design-question-rng", seed, item.design_id, item.indicator])[:16], 16))


def _box_in_units(item: QuestionInput, box: PixelBox, box_units: str) -> QuestionBox:
    return box if box_units == "pixels" else normalised_box(box, item.canvas_width, item.canvas_height)


def judgment_question(item: QuestionInput) -> Question:
    """Yes/no: does the design show a problem with the indicator? ``yes`` exactly when judged flawed."""
    item.validate()
    name = _indicator_name(item.indicator)
    prompt = (
        f"{_indicator_preamble(item)}\n"
        f"Look at the design. Does it show a problem with {name}? Reply with a single word: yes or no."
    )
    answer = YES if item.judged_flawed else NO
    return _question(item, JUDGMENT, prompt, JUDGMENT_CHOICES, answer, JUDGMENT_CHOICES.index(answer), "pixels")


def region_selection_question(item: QuestionInput, seed: int, box_units: str = "pixels") -> Question | SkippedQuestion:
    """Four choices, exactly one correct, ``None`` among them exactly once; see the module docstring for the rules."""
    item.validate()
    if box_units not in BOX_UNITS:
        raise ValueError(f"box_units must be one of {BOX_UNITS}, not {box_units!r}")
    if item.judged_flawed and item.perturbed_element_id not in item.element_boxes:
        return SkippedQuestion(
            item.design_id, item.indicator, REGION_SELECTION, PERTURBED_OFF_CANVAS,
            f"perturbed element {item.perturbed_element_id!r} has no visible pixels on the canvas",
        )
    rng = _seeded_rng(seed, item)
    taken: dict[QuestionBox, str] = {}
    if item.judged_flawed:
        assert item.perturbed_element_id is not None
        answer_box = _box_in_units(item, item.element_boxes[item.perturbed_element_id], box_units)
        taken[answer_box] = item.perturbed_element_id
        excluded = {item.perturbed_element_id, *item.other_perturbed_ids}
        n_distractors = 2
    else:
        excluded = set()
        n_distractors = 3
    # one candidate per distinct box (the smallest element id stands for a box shared by several elements), in a
    # canonical order so the seeded sample does not depend on the mapping's order
    pool: dict[QuestionBox, str] = {}
    for element_id in sorted(item.element_boxes):
        if element_id in excluded:
            continue
        box = _box_in_units(item, item.element_boxes[element_id], box_units)
        if box not in taken and box not in pool:
            pool[box] = element_id
    if len(pool) < n_distractors:
        wanted = "the perturbed box and two other distinct boxes" if item.judged_flawed else "three distinct boxes"
        return SkippedQuestion(
            item.design_id, item.indicator, REGION_SELECTION, TOO_FEW_ELEMENTS,
            f"region selection needs {wanted}; the design has {len(pool)} distinct candidate box(es)",
        )
    candidates = sorted(pool.items(), key=lambda kv: (kv[1], kv[0]))
    options: list[tuple[QuestionBox | None, str | None]] = list(taken.items())
    options.extend(rng.sample(candidates, n_distractors))
    options.append((None, None))
    rng.shuffle(options)
    choices = tuple(box for box, _ in options)
    elements = tuple(element_id for _, element_id in options)
    answer = answer_box if item.judged_flawed else None
    answer_index = choices.index(answer)
    name = _indicator_name(item.indicator)
    lines = [
        _indicator_preamble(item),
        _units_sentence(item, box_units),
        f"Which of these regions of the design shows a problem with {name}? If none of them does, pick the None option.",
        *(f"{letter}. {_format_box(box, box_units)}" for letter, box in zip(CHOICE_LETTERS, choices)),
        "Reply with the letter of your choice only.",
    ]
    return _question(item, REGION_SELECTION, "\n".join(lines), choices, answer, answer_index, box_units, elements)


def localisation_question(item: QuestionInput, box_units: str = "pixels") -> Question | SkippedQuestion:
    """Free answer: the perturbed element's box when judged flawed, ``None`` when judged good."""
    item.validate()
    if box_units not in BOX_UNITS:
        raise ValueError(f"box_units must be one of {BOX_UNITS}, not {box_units!r}")
    if item.judged_flawed and item.perturbed_element_id not in item.element_boxes:
        return SkippedQuestion(
            item.design_id, item.indicator, LOCALISATION, PERTURBED_OFF_CANVAS,
            f"perturbed element {item.perturbed_element_id!r} has no visible pixels on the canvas",
        )
    answer: QuestionBox | None = None
    if item.judged_flawed:
        assert item.perturbed_element_id is not None
        answer = _box_in_units(item, item.element_boxes[item.perturbed_element_id], box_units)
    name = _indicator_name(item.indicator)
    prompt = "\n".join(
        [
            _indicator_preamble(item),
            _units_sentence(item, box_units),
            f"Find the element of the design that shows a problem with {name} and reply with its box only. "
            "If the design has no such problem, reply None.",
        ]
    )
    return _question(item, LOCALISATION, prompt, (), answer, None, box_units)


def build_questions(
    item: QuestionInput, seed: int, box_units: str = "pixels"
) -> tuple[list[Question], list[SkippedQuestion]]:
    """All three formats for one (design, indicator): the questions made and the ones skipped, with reasons."""
    questions: list[Question] = []
    skipped: list[SkippedQuestion] = []
    made_all = (judgment_question(item), region_selection_question(item, seed, box_units), localisation_question(item, box_units))
    for made in made_all:
        (questions if isinstance(made, Question) else skipped).append(made)
    return questions, skipped


@dataclass(frozen=True)
class AnswerBalance:
    """How one (indicator, format)'s answers are spread, so a skew (all ``no``, the answer always at B) shows."""

    indicator: str
    format: str
    n_questions: int
    n_yes: int                 # aesthetic judgment
    n_no: int
    n_none: int                # region selection and localisation: the answer is None (judged good)
    n_box: int                 # ... the answer is a box (judged flawed)
    positions: tuple[int, ...]  # how often the answer sits at each choice position (A, B, ...); () for localisation


def answer_balance(questions: Iterable[Question]) -> list[AnswerBalance]:
    """Per (indicator, format) answer counts, sorted by indicator then format; one pass, memory per pair only."""
    counts: dict[tuple[str, str], dict[str, Any]] = {}
    for q in questions:
        c = counts.setdefault(
            (q.indicator, q.format),
            {"n": 0, "yes": 0, "no": 0, "none": 0, "box": 0, "positions": [0] * len(q.choices)},
        )
        c["n"] += 1
        if q.format == JUDGMENT:
            c["yes" if q.answer == YES else "no"] += 1
        else:
            c["none" if q.answer is None else "box"] += 1
        if q.answer_index is not None:
            positions = c["positions"]
            if q.answer_index >= len(positions):
                positions.extend([0] * (q.answer_index + 1 - len(positions)))
            positions[q.answer_index] += 1
    order = {fmt: i for i, fmt in enumerate(FORMATS)}
    return [
        AnswerBalance(indicator, fmt, c["n"], c["yes"], c["no"], c["none"], c["box"], tuple(c["positions"]))
        for (indicator, fmt), c in sorted(counts.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 99), kv[0][1]))
    ]
