"""AesEval answers: reading a model's box, scoring one question, the "without explanation" input, and an offline
answerer computed from the question's input (seed paper 003, sections 3.2, 3.3 and 5.1, Tables 2-5).

The release's ``questions`` rows ask three formats (``assets/designs/logic/question_formats.py`` builds them):

- ``aesthetic_judgment``: options ``["yes", "no"]``, gold ``yes`` or ``no``. The option ids are the option texts
  themselves, so the closed-answer parser (``choice_answers.parse_choice``) reads "Yes.", ``{"answer": "no"}`` or
  "Answer: yes" alike. Scored by accuracy.
- ``region_selection``: four options, each a box as the question writes it (``"[30, 250, 320, 274]"``) or
  ``"None"``; gold is the letter A-D. The option ids are the letters, their texts the boxes, so a model may name
  the letter or write the option's text. An answer the closed-answer parser finds no option in is read once more as
  a box: a box equal to exactly one option's box, or a None claim, names that option. Scored by accuracy.
- ``precise_localisation``: a free answer, a box or None. Scored as the paper does (section 3.3): accuracy on items
  whose gold is None (metric ``none_accuracy``), IoU between the predicted and the gold box on items whose gold is
  a box (metric ``iou``; 0.0 for a None answer or an unreadable one).

An answer that cannot be read counts as wrong (accuracy 0, IoU 0); the item's result keeps the reason code
(``unparsed``, ``ambiguous``, ``invalid_box``) and a detail, so unreadable answers can be listed.

Boxes. ``parse_box`` always returns canvas PIXELS, ``[left, top, right, bottom]`` from the top-left corner. The
question's ``box_units`` decide how the numbers are read, never their size: with ``normalised`` every coordinate is
a fraction of the canvas width (x) or height (y) and is multiplied out; with ``pixels`` the numbers are pixels even
when all of them lie within [0, 1] on a large canvas (a tiny box near the corner, not a fraction: guessing would
score a model by a rule the question never stated). Swapped corners are put in order; a box partly outside the
canvas is clipped to it, and one with no area inside it is ``invalid_box``.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from PIL import Image

from assets.designs.logic.design_model import Design, Element
from assets.designs.logic.judge import INDICATOR_IDS, JudgeError, judge
from assets.designs.logic.question_formats import (
    BOX_UNITS,
    CHOICE_LETTERS,
    FORMATS,
    JUDGMENT,
    JUDGMENT_CHOICES,
    LOCALISATION,
    NO,
    REGION_SELECTION,
    YES,
    normalised_box,
    pixel_box,
)
from assets.evaluation.logic.choice_answers import AMBIGUOUS, UNPARSED, parse_choice

INVALID_BOX = "invalid_box"
PIXELS, NORMALISED = BOX_UNITS
NONE_TEXT = "None"

ACCURACY = "accuracy"
NONE_ACCURACY = "none_accuracy"
IOU = "iou"

PixelBox = tuple[float, float, float, float]   # left, top, right, bottom in canvas pixels

_MAX_DEPTH = 4          # nesting of JSON values and of strings inside them read as answers again
_SHOWN = 60             # characters of an answer quoted in a detail


@dataclass(frozen=True)
class BoxAnswer:
    """A localisation answer as read. Exactly one holds: ``box`` is set (the box, in canvas pixels, in order,
    clipped to the canvas), ``none`` is true (the model said there is no problem), or ``problem`` names why no
    answer could be read (``unparsed``, ``ambiguous``, ``invalid_box``). ``detail`` says where the answer was found
    (and what was corrected: corners put in order, clipping) or what was wrong."""

    box: PixelBox | None
    none: bool
    problem: str | None
    detail: str


# --- reading a box ------------------------------------------------------------------------------------------------

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_TOKEN = re.compile(rf"^(?:{_NUMBER}|[-+]?(?:nan|inf|infinity))(?:px)?$", re.I)
_GROUP = re.compile(r"[\[\(]([^\[\]\(\)]{0,300})[\]\)]")
_SEPARATORS = re.compile(r"[,;\s]+")
_CODE_FENCE = re.compile(r"```[A-Za-z]*")
_OBJECT_START = re.compile(r"\{\s*\"")
_KEY_VALUE = re.compile(
    rf"(?<![\w])(x1|y1|x2|y2|xmin|ymin|xmax|ymax|x_min|y_min|x_max|y_max|left|top|right|bottom|width|height|x|y|w|h)"
    rf"[\"']?\s*[:=]\s*[\"']?({_NUMBER})", re.I)
_MARKER = re.compile(r"(?:final\s+answer|answer)[\"'*]*\s*(?:is\b|:|=)", re.I)
# A None claim: the word None/null on its own ("None of the others ..." is prose, not a claim), or "no problem",
# "no such issue", "no flaws", ... ("no other issues" says the box given is the only one: not a claim). A whole
# answer of "No" counts too (the question says: if none, reply None).
_NONE_WORD = re.compile(r"\b(?:none|null|nil)\b(?!\s+of\b)", re.I)
_NO_PROBLEM = re.compile(r"\bno\s+(?!(?:other|further|additional|more)\b)(?:[a-z-]+\s+){0,2}?"
                         r"(?:problems?|issues?|flaws?|errors?|defects?|mistakes?)\b", re.I)
_BOX_KEYS = ("answer", "final_answer", "box", "bbox", "bbox_2d", "bounding_box", "boundingbox", "coordinates",
             "coords", "region", "location", "element_box", "result")
_CORNER_KEYS = (("x1", "y1", "x2", "y2"), ("xmin", "ymin", "xmax", "ymax"), ("x_min", "y_min", "x_max", "y_max"),
                ("left", "top", "right", "bottom"))
_SIZE_KEYS = (("x", "y", "width", "height"), ("x", "y", "w", "h"), ("left", "top", "width", "height"),
              ("left", "top", "w", "h"))


@dataclass(frozen=True)
class _Finding:
    kind: str                      # "box" | "none" | "bad"
    where: str                     # where in the answer it was found
    numbers: tuple[float, ...] = ()  # a box: left, top, right, bottom as written (before units and ordering)
    problem: str | None = None     # a bad finding: unparsed | invalid_box
    detail: str = ""


def _quote(text: str) -> str:
    return repr(text[:_SHOWN] + ("…" if len(text) > _SHOWN else ""))


def _to_float(value: Any) -> float | None:
    """A JSON or text number as a float (inf for one too large), None for anything else (booleans included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            return math.inf
    if isinstance(value, str):
        token = value.strip()
        if token.lower().endswith("px"):
            token = token[:-2]
        if _TOKEN.match(token):
            try:
                return float(token)
            except (ValueError, OverflowError):
                return math.inf
    return None


def _box_finding(numbers: Sequence[float], where: str) -> _Finding:
    if len(numbers) != 4:
        return _Finding("bad", where, problem=UNPARSED,
                        detail=f"{where} holds {len(numbers)} numbers; a box needs four: left, top, right, bottom")
    if not all(math.isfinite(v) for v in numbers):
        return _Finding("bad", where, problem=INVALID_BOX, detail=f"{where} has a coordinate that is not a finite number")
    return _Finding("box", where, numbers=tuple(numbers))


def _mapping_box(values: Mapping[str, Any], where: str) -> _Finding | None:
    """A box written as named coordinates: corners (x1/y1/x2/y2, xmin..., left/top/right/bottom) or an origin and a
    size (x/y/width/height, x/y/w/h, left/top/width/height)."""
    lowered = {str(k).strip().lower(): v for k, v in values.items()}
    for keys in _CORNER_KEYS:
        if all(k in lowered for k in keys):
            numbers = [_to_float(lowered[k]) for k in keys]
            if any(n is None for n in numbers):
                return _Finding("bad", where, problem=UNPARSED, detail=f"{where}: {'/'.join(keys)} are not all numbers")
            return _box_finding([n for n in numbers if n is not None], f"{where} ({'/'.join(keys)})")
    for keys in _SIZE_KEYS:
        if all(k in lowered for k in keys):
            numbers = [_to_float(lowered[k]) for k in keys]
            if any(n is None for n in numbers):
                return _Finding("bad", where, problem=UNPARSED, detail=f"{where}: {'/'.join(keys)} are not all numbers")
            x, y, w, h = (n for n in numbers if n is not None)
            return _box_finding([x, y, x + w, y + h], f"{where} ({'/'.join(keys)})")
    return None


def _from_json(value: Any, where: str, depth: int) -> list[_Finding]:
    if depth > _MAX_DEPTH:
        return []
    if value is None:
        return [_Finding("none", f"{where}: null")]
    if isinstance(value, str):
        return _from_text(value, depth + 1, where)
    if isinstance(value, list):
        numbers = [_to_float(v) for v in value]
        if value and all(n is not None for n in numbers):
            if len(value) == 1:
                return []
            return [_box_finding([n for n in numbers if n is not None], f"{where} {json.dumps(value)[:_SHOWN]}")]
        found: list[_Finding] = []
        for index, item in enumerate(value[:16]):
            if isinstance(item, (list, dict)):
                found.extend(_from_json(item, f"{where}[{index}]", depth + 1))
        return found
    if isinstance(value, dict):
        named = _mapping_box(value, where)
        if named is not None:
            return [named]
        lowered = {str(k).strip().lower(): v for k, v in value.items()}
        found = []
        for key in _BOX_KEYS:
            if key in lowered:
                found.extend(_from_json(lowered[key], f"JSON key {key!r}", depth + 1))
        return found
    return []


def _whole_json(text: str) -> tuple[bool, Any]:
    """(True, value) when the whole answer is one JSON value."""
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def _embedded_json(text: str) -> list[Any]:
    """The JSON objects inside an answer that is not JSON as a whole (after prose, in a fence), at most four."""
    decoder = json.JSONDecoder()
    values = []
    for match in _OBJECT_START.finditer(text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        values.append(value)
        if len(values) >= 4:
            break
    return values


def _numbers(tokens: Sequence[str]) -> list[float]:
    values = [_to_float(t) for t in tokens]
    return [math.nan if v is None else v for v in values]


def _from_text(text: str, depth: int = 0, where: str = "the answer") -> list[_Finding]:
    """Everything in ``text`` that reads as a box, a None claim or a failed box, JSON first."""
    text = _CODE_FENCE.sub(" ", text).strip()
    if not text or depth > _MAX_DEPTH:
        return []
    label = "the JSON answer" if where == "the answer" else where
    whole, value = _whole_json(text)
    if whole:  # JSON as asked: only what its answer fields say counts, not boxes cited in its reasoning
        return _from_json(value, label, depth)
    for value in _embedded_json(text):
        found = _from_json(value, label, depth)
        if found:
            return found
    found: list[_Finding] = []
    for match in _GROUP.finditer(text):
        tokens = [t for t in _SEPARATORS.split(match.group(1).strip()) if t]
        if len(tokens) < 2 or not all(_TOKEN.match(t) for t in tokens):
            continue  # prose in brackets, or a single number such as "(2)"
        found.append(_box_finding(_numbers(tokens), match.group(0)[:_SHOWN]))
    pairs: dict[str, float] = {}
    for match in _KEY_VALUE.finditer(text):
        number = _to_float(match.group(2))
        if number is not None:
            pairs.setdefault(match.group(1).lower(), number)
    named = _mapping_box(pairs, "the named coordinates") if pairs else None
    if named is not None:
        found.append(named)
    if not found:  # four bare numbers as the whole answer ("10, 20, 30, 40"); split, not one regex: no backtracking
        tokens = [t for t in _SEPARATORS.split(text.strip(" \t\r\n\"'*`").rstrip(".")) if t]
        if len(tokens) == 4 and all(_TOKEN.match(t) for t in tokens):
            found.append(_box_finding(_numbers(tokens), "four bare numbers"))
    if _NONE_WORD.search(text) or _NO_PROBLEM.search(text) or text.strip(" .!*\"'`").lower() == "no":
        claim = (_NONE_WORD.search(text) or _NO_PROBLEM.search(text))
        found.append(_Finding("none", f"{where}: {claim.group(0)!r}" if claim else f"{where}: 'No'"))
    return found


def _check_canvas(units: str, canvas: tuple[int, int]) -> tuple[float, float]:
    if units not in BOX_UNITS:
        raise ValueError(f"box units must be one of {BOX_UNITS}, not {units!r}")
    try:
        width, height = (float(v) for v in canvas)
    except (TypeError, ValueError):
        raise ValueError(f"canvas must be (width, height), not {canvas!r}") from None
    if not (math.isfinite(width) and math.isfinite(height) and width > 0 and height > 0):
        raise ValueError(f"canvas must be a positive (width, height), not {canvas!r}")
    return width, height


def _in_pixels(numbers: Sequence[float], units: str, width: float, height: float) -> PixelBox:
    x1, y1, x2, y2 = numbers
    if units == NORMALISED:
        x1, x2, y1, y2 = x1 * width, x2 * width, y1 * height, y2 * height
    x1, y1, x2, y2 = (round(v, 6) if math.isfinite(v) else v for v in (x1, y1, x2, y2))
    return (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))


def _resolve(found: Sequence[_Finding], units: str, width: float, height: float) -> BoxAnswer | None:
    """One answer from the findings, or None when there are none."""
    boxes: dict[PixelBox, _Finding] = {}
    for f in found:
        if f.kind == "box":
            boxes.setdefault(_in_pixels(f.numbers, units, width, height), f)
    nones = [f for f in found if f.kind == "none"]
    if boxes and nones:
        first = next(iter(boxes.values()))
        return BoxAnswer(None, False, AMBIGUOUS, f"the answer gives a box ({first.where}) and also says there is "
                                                 f"no problem ({nones[0].where})")
    if len(boxes) > 1:
        listed = "; ".join(f.where for f in list(boxes.values())[:3])
        return BoxAnswer(None, False, AMBIGUOUS, f"the answer gives {len(boxes)} different boxes: {listed}")
    if boxes:
        (box, finding), = boxes.items()
        return _finished(box, finding, units, width, height)
    if nones:
        return BoxAnswer(None, True, None, f"no problem claimed ({nones[0].where})")
    bad = [f for f in found if f.kind == "bad"]
    if bad:
        return BoxAnswer(None, False, bad[0].problem, bad[0].detail)
    return None


def _finished(box: PixelBox, finding: _Finding, units: str, width: float, height: float) -> BoxAnswer:
    written = "[" + ", ".join(f"{v:g}" for v in finding.numbers) + "]"
    if not all(math.isfinite(v) for v in box):
        return BoxAnswer(None, False, INVALID_BOX, f"{written} ({finding.where}) overflows in {units}")
    notes = [f"read {written} ({finding.where}) in {units}"]
    x1, y1, x2, y2 = finding.numbers
    if x1 > x2 or y1 > y2:
        notes.append("corners put in order")
    if units == NORMALISED and any(abs(v) > 1 for v in finding.numbers):
        notes.append("numbers above 1 read as fractions all the same: the question's units decide")
    if units == PIXELS and all(0 <= v <= 1 for v in finding.numbers) and (width > 2 or height > 2):
        notes.append("all numbers within [0, 1] but the question asks for pixels: read as pixels")
    if box[2] <= box[0] or box[3] <= box[1]:
        return BoxAnswer(None, False, INVALID_BOX, "; ".join(notes) + ": the box has no area")
    clipped = (max(box[0], 0.0), max(box[1], 0.0), min(box[2], width), min(box[3], height))
    if clipped[2] <= clipped[0] or clipped[3] <= clipped[1]:
        return BoxAnswer(None, False, INVALID_BOX,
                         "; ".join(notes) + f": no part of the box lies on the {width:g}x{height:g} canvas")
    if clipped != box:
        notes.append(f"clipped to the {width:g}x{height:g} canvas")
    return BoxAnswer(clipped, False, None, "; ".join(notes))


def parse_box(answer: str, units: str, canvas: tuple[int, int]) -> BoxAnswer:
    """A model's localisation answer read as a box in canvas pixels, a None claim, or why neither could be read.

    ``units`` is the question's ``box_units`` (``pixels`` or ``normalised``) and ``canvas`` its (width, height) in
    pixels; a bad ``units`` or ``canvas`` is the caller's error (ValueError), while any ``answer`` string gives a
    BoxAnswer. Accepted: ``[l, t, r, b]`` or ``(l, t, r, b)`` with any spacing, decimals and a ``px`` suffix; JSON
    (``{"box": [...]}``, ``{"bbox": [...]}``, ``{"answer": "[...]"}``, ``{"answer": "None"}``, ``{"answer": null}``,
    named coordinates such as ``{"x", "y", "width", "height"}`` or ``{"x1", "y1", "x2", "y2"}``), in code fences or
    after prose; the same named coordinates in prose (``x: 10, y: 20, width: 30, height: 40``); four bare numbers as
    the whole answer; None, null, "no problem", "No issues" (and a whole answer of "No") as the None answer. When the
    answer marks its conclusion ("Answer: ...", "The final answer is ..."), the part after the last marker is read
    first, so boxes cited in the reasoning before it do not count.

    Two different boxes, or a box and a None claim, are ``ambiguous``; a bracket of numbers that are not four, or no
    box and no None claim at all, ``unparsed``; a non-finite coordinate, a box with no area, or one entirely off
    the canvas, ``invalid_box``.
    """
    width, height = _check_canvas(units, canvas)
    if not isinstance(answer, str):
        return BoxAnswer(None, False, UNPARSED, f"the answer is a {type(answer).__name__}, not text")
    text = _CODE_FENCE.sub(" ", answer).strip()
    if not text:
        return BoxAnswer(None, False, UNPARSED, "the answer is empty")
    whole, _ = _whole_json(text)
    markers = [] if whole else list(_MARKER.finditer(text))
    if markers:
        tail = text[markers[-1].end():]
        read = _resolve(_from_text(tail, where="the marked answer"), units, width, height)
        if read is not None:
            return read
    read = _resolve(_from_text(text), units, width, height)
    if read is not None:
        return read
    if whole:
        return BoxAnswer(None, False, UNPARSED, f"the JSON answer {_quote(text)} has no box and no None")
    return BoxAnswer(None, False, UNPARSED, f"no box and no None in {_quote(text)}")


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two boxes ``[left, top, right, bottom]`` (pixels; corners in any order).

    0.0 for boxes that do not overlap or only touch, and whenever the union has no area (two degenerate boxes,
    even identical ones: a line or a point overlaps nothing). Boxes that are not four finite numbers give 0.0.
    """
    try:
        ax1, ay1, ax2, ay2 = (float(v) for v in a)
        bx1, by1, bx2, by2 = (float(v) for v in b)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    if not all(math.isfinite(v) for v in (ax1, ay1, ax2, ay2, bx1, by1, bx2, by2)):
        return 0.0
    ax1, ax2, ay1, ay2 = min(ax1, ax2), max(ax1, ax2), min(ay1, ay2), max(ay1, ay2)
    bx1, bx2, by1, by2 = min(bx1, bx2), max(bx1, bx2), min(by1, by2), max(by1, by2)
    inter = max(0.0, min(ax2, bx2) - max(ax1, bx1)) * max(0.0, min(ay2, by2) - max(ay1, by1))
    union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter
    if not union > 0 or not math.isfinite(union):
        return 0.0
    return min(1.0, max(0.0, inter / union))


def format_box(box: PixelBox, units: str, canvas: tuple[int, int]) -> str:
    """A pixel box as the questions write it (``question_formats._format_box``): whole pixels ``[l, t, r, b]``, or
    fractions of the canvas with three decimals."""
    width, height = _check_canvas(units, canvas)
    if units == PIXELS:
        return "[" + ", ".join(str(int(round(v))) for v in box) + "]"
    return "[" + ", ".join(f"{v:.3f}" for v in normalised_box(box, width, height)) + "]"  # type: ignore[arg-type]


# --- scoring one question -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemResult:
    """One question scored. ``metrics``: ``{"accuracy": 1.0 | 0.0}`` for judgment and region selection;
    ``{"none_accuracy": 1.0 | 0.0}`` for a localisation whose gold is None, ``{"iou": 0.0..1.0}`` for one whose gold
    is a box. ``answer`` is what the prediction was read as: an option id (``yes``, ``C``), ``None``, or a box in
    canvas pixels as ``[l, t, r, b]``; None when unreadable, and then ``problem`` (``unparsed``, ``ambiguous``,
    ``invalid_box``) and ``detail`` say why. ``box`` is the box read, in canvas pixels (localisation, or a region
    answer written as a box)."""

    format: str
    metrics: Mapping[str, float]
    answer: str | None
    box: PixelBox | None = None
    problem: str | None = None
    detail: str = ""
    correct: bool | None = field(default=None)  # judgment and region selection: the answer is the gold option


def _pixel_text(box: PixelBox) -> str:
    return "[" + ", ".join(f"{v:g}" for v in box) + "]"


def _option_map(fmt: str, options: Sequence[str]) -> dict[str, str]:
    if fmt == JUDGMENT:
        texts = list(options) or list(JUDGMENT_CHOICES)
        return {str(text): str(text) for text in texts}
    letters = [CHOICE_LETTERS[i] if i < len(CHOICE_LETTERS) else chr(65 + i) for i in range(len(options))]
    return dict(zip(letters, (str(o) for o in options)))


def _gold_option(gold: str, choices: Mapping[str, str]) -> str:
    wanted = str(gold).strip().casefold()
    for option_id in choices:
        if option_id.casefold() == wanted:
            return option_id
    raise ValueError(f"gold answer {gold!r} is not one of the options {', '.join(choices)}")


def _choice_from_box(prediction: str, choices: Mapping[str, str], units: str,
                     canvas: tuple[int, int]) -> tuple[str | None, PixelBox | None, str]:
    """A region answer written as a box or a None claim: the one option it equals, else None."""
    read = parse_box(prediction, units, canvas)
    if read.none:
        named = [oid for oid, text in choices.items() if parse_box(text, units, canvas).none]
        return (named[0], None, "a None claim names the None option") if len(named) == 1 else (None, None, "")
    if read.box is None:
        return None, None, ""
    named = []
    for oid, text in choices.items():
        option_box = parse_box(text, units, canvas).box
        if option_box is not None and all(abs(p - q) <= 1e-6 * max(canvas) for p, q in zip(read.box, option_box)):
            named.append(oid)
    if len(named) == 1:
        return named[0], read.box, f"the answer writes option {named[0]}'s box"
    return None, read.box, ""


def _gold_box(gold: str, gold_box: Sequence[float] | None, units: str, canvas: tuple[int, int]) -> PixelBox | None:
    """The gold of a localisation in pixels, None when the gold is None."""
    width, height = _check_canvas(units, canvas)
    if gold_box is not None:
        numbers = [_to_float(v) for v in gold_box]
        if len(numbers) != 4 or any(n is None or not math.isfinite(n) for n in numbers):
            raise ValueError(f"gold box {gold_box!r} is not four finite numbers")
        return _in_pixels([n for n in numbers if n is not None], units, width, height)
    read = parse_box(str(gold), units, canvas)
    if read.none:
        return None
    if read.box is None:
        raise ValueError(f"gold answer {gold!r} is neither None nor a box: {read.detail}")
    return read.box


def score_item(fmt: str, gold: str, gold_box: Sequence[float] | None, options: Sequence[str], prediction: str,
               units: str | None, canvas: tuple[int, int]) -> ItemResult:
    """One AesEval question scored (see the module docstring). ``gold``, ``gold_box``, ``options`` and ``units``
    are the release row's ``answer``, ``answer_box``, ``options`` and ``box_units``; ``canvas`` its (width, height).
    A gold that is not among the options, or a localisation gold that is neither None nor a box, is bad data and
    raises ValueError; any prediction gives a result."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
    prediction = prediction if isinstance(prediction, str) else ""
    if fmt == LOCALISATION:
        if units is None:
            raise ValueError("a localisation question needs its box units")
        gold_pixels = _gold_box(gold, gold_box, units, canvas)
        read = parse_box(prediction, units, canvas)
        answer = NONE_TEXT if read.none else (_pixel_text(read.box) if read.box is not None else None)
        if gold_pixels is None:
            metrics = {NONE_ACCURACY: 1.0 if read.none else 0.0}
        else:
            metrics = {IOU: iou(read.box, gold_pixels) if read.box is not None else 0.0}
        return ItemResult(fmt, metrics, answer, read.box, read.problem, read.detail)
    choices = _option_map(fmt, options)
    if fmt == REGION_SELECTION and len(choices) < 2:
        raise ValueError(f"a region selection question needs its options, got {list(options)!r}")
    gold_id = _gold_option(gold, choices)
    read_choice = parse_choice(prediction, choices)
    option, box, detail, problem = read_choice.option, None, read_choice.detail, read_choice.problem
    if option is None and problem == UNPARSED and fmt == REGION_SELECTION and units is not None:
        found, box, why = _choice_from_box(prediction, choices, units, canvas)
        if found is not None:
            option, detail, problem = found, why, None
    correct = option == gold_id
    return ItemResult(fmt, {ACCURACY: 1.0 if correct else 0.0}, option, box, problem, detail, correct)


# --- the "without explanation" input ------------------------------------------------------------------------------

_EXPLANATION = re.compile(r"What it means:", re.I)


def has_explanation(question: str) -> bool:
    """Whether ``question`` carries the indicator's explanation ("What it means: ..."), i.e. whether
    ``strip_explanation`` changes it; the harness reports the ablation as not applied to a question without it."""
    return bool(_EXPLANATION.search(question))


def strip_explanation(question: str) -> str:
    """The question without the indicator's explanation, for the paper's "without explanation" input (section 5.1):
    from "What it means:" to the end of that line, the spaces before it included; every other line unchanged. A
    question without the marker comes back unchanged (``has_explanation`` tells which)."""
    found = _EXPLANATION.search(question)
    if found is None:
        return question
    start = found.start()
    while start > 0 and question[start - 1] in " \t":
        start -= 1
    end = question.find("\n", found.end())
    return question[:start] + (question[end:] if end >= 0 else "")


# --- the design record from a question's metadata -----------------------------------------------------------------


class OfflineAnswerError(ValueError):
    """A question input the offline answerer cannot work with (bad metadata, an undecodable image, an unknown
    indicator); ``reason_code`` names the problem."""

    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(f"{reason_code}: {detail}")
        self.reason_code = reason_code
        self.detail = detail


_ELEMENT_FIELDS = {f.name for f in fields(Element)}
_REQUIRED_NUMBERS = ("left", "top", "width", "height")
_OPTIONAL_NUMBERS = ("angle", "opacity", "font_size", "line_height", "letter_spacing")


def _metadata(metadata_json: str) -> dict[str, Any]:
    try:
        data = json.loads(metadata_json)
    except (ValueError, RecursionError, TypeError) as exc:
        raise OfflineAnswerError("bad_metadata", f"the metadata is not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("canvas"), dict):
        raise OfflineAnswerError("bad_metadata", "the metadata needs an object with a 'canvas' object")
    return data


def metadata_canvas(metadata_json: str) -> tuple[int, int]:
    """The (width, height) of a question's canvas, from its metadata JSON."""
    canvas = _metadata(metadata_json)["canvas"]
    width, height = canvas.get("width"), canvas.get("height")
    for name, value in (("width", width), ("height", height)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0 \
                or value != int(value):
            raise OfflineAnswerError("bad_metadata", f"canvas {name} must be a positive whole number, not {value!r}")
    return int(width), int(height)


def design_from_metadata(metadata_json: str, design_id: str = "aeseval-question") -> Design:
    """The design record a question's metadata describes (release column ``metadata``: the canvas and every element
    in paint order; fields that do not apply to an element are null). No layer images or render effects: the
    metadata names nothing about the edit, so the record holds geometry, colour, opacity and text settings only."""
    data = _metadata(metadata_json)
    width, height = metadata_canvas(metadata_json)
    raw_elements = data.get("elements")
    if not isinstance(raw_elements, list):
        raise OfflineAnswerError("bad_metadata", "the metadata needs an 'elements' list")
    elements = []
    for index, raw in enumerate(raw_elements):
        if not isinstance(raw, dict):
            raise OfflineAnswerError("bad_metadata", f"elements[{index}] is not an object")
        values = {k: v for k, v in raw.items() if k in _ELEMENT_FIELDS and v is not None}
        if not isinstance(values.get("element_id"), str) or not isinstance(values.get("type"), str):
            raise OfflineAnswerError("bad_metadata", f"elements[{index}] needs a string element_id and type")
        for name in _REQUIRED_NUMBERS + _OPTIONAL_NUMBERS:
            value = values.get(name)
            if value is None and name in _OPTIONAL_NUMBERS:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise OfflineAnswerError("bad_metadata", f"elements[{index}].{name} must be a finite number, not {value!r}")
        for name in ("text", "font", "text_align"):
            if name in values and not isinstance(values[name], str):
                raise OfflineAnswerError("bad_metadata", f"elements[{index}].{name} must be text, not {values[name]!r}")
        color = values.get("color")
        if color is not None and (not isinstance(color, list) or len(color) != 3
                                  or any(isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= 255 for c in color)):
            raise OfflineAnswerError("bad_metadata", f"elements[{index}].color must be three 0-255 integers, not {color!r}")
        values.pop("layer", None)
        values.pop("effects", None)
        try:
            elements.append(Element.from_dict(values))
        except (TypeError, ValueError) as exc:
            raise OfflineAnswerError("bad_metadata", f"elements[{index}]: {exc}") from None
    return Design(design_id, width, height, tuple(elements))


# --- the offline answerer -----------------------------------------------------------------------------------------

# Indicators whose judge reads only the record's geometry and text settings, never the render's pixels (judge.py:
# alignment compares element edges, layering box overlaps, whitespace margins, hierarchy font sizes and text
# lengths). Without the image they are still judged, on a blank canvas; the test suite checks that their verdicts do
# not depend on the pixels.
METADATA_INDICATORS = frozenset({"layout_alignment", "layout_layering", "layout_whitespace", "font_hierarchy"})
REGION_MIN_IOU = 0.5    # an option points at a flagged element when their boxes overlap at least this much

RENDER = "render"                      # judged on the question's image (and its metadata)
METADATA_ONLY = "metadata_only"        # no image; an indicator the judge measures from the record alone
NO_IMAGE = "fallback_no_image"         # no image and an indicator that needs pixels: answered "no flaw"
NO_METADATA = "fallback_no_metadata"   # no metadata: nothing to measure against, answered "no flaw"
UNMEASURED = "fallback_unmeasurable"   # the judge cannot measure the indicator on this design: "no flaw"


@dataclass(frozen=True)
class OfflineVerdict:
    """What the offline answerer concluded about one (design, indicator) and from what. ``boxes`` are the flagged
    elements' boxes in canvas pixels (as the question builder draws them), most severe first; ``basis`` is one of
    ``render``, ``metadata_only``, ``fallback_no_image``, ``fallback_no_metadata``, ``fallback_unmeasurable``."""

    flawed: bool
    boxes: tuple[tuple[int, int, int, int], ...]
    basis: str
    detail: str


def offline_verdict(image: bytes | None, metadata_json: str | None, indicator: str) -> OfflineVerdict:
    """The designs' offline judge (``assets/designs/logic/judge.py``) applied to a question's input.

    With the image: the judge's verdict on the decoded render and the design record the metadata describes. Without
    it (the "without image" input): the judge's verdict on the record alone for ``METADATA_INDICATORS``, otherwise
    no flaw. Without metadata, or when the judge reports the indicator unmeasurable on this design: no flaw. These
    fallbacks are deliberate and derived from the input (what is missing decides them), never from the gold answer;
    ``basis`` records which one applied."""
    if indicator not in INDICATOR_IDS:
        raise OfflineAnswerError("unknown_indicator", f"{indicator!r} is not one of {', '.join(INDICATOR_IDS)}")
    if metadata_json is None or not metadata_json.strip():
        return OfflineVerdict(False, (), NO_METADATA, "no metadata: no design record to measure")
    design = design_from_metadata(metadata_json)
    if image is not None:
        try:
            with Image.open(io.BytesIO(image)) as opened:
                render = opened.convert("RGB")
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            raise OfflineAnswerError("bad_image", f"the image does not decode: {exc}") from None
        basis = RENDER
    elif indicator in METADATA_INDICATORS:
        render = Image.new("RGB", (design.canvas_width, design.canvas_height), (255, 255, 255))
        basis = METADATA_ONLY
    else:
        return OfflineVerdict(False, (), NO_IMAGE, f"no image, and {indicator} is judged from pixels")
    try:
        judgement = judge(design, render, indicator)
    except JudgeError as exc:
        raise OfflineAnswerError(exc.reason_code, exc.detail) from None
    if judgement.evidence.get("measurable") is False:
        why = judgement.claims[0].text if judgement.claims else "not measurable"
        return OfflineVerdict(False, (), UNMEASURED, why)
    by_id = {e.element_id: e for e in design.elements}
    boxes = []
    for element_id in judgement.boxes:
        element = by_id.get(element_id)
        if element is None:
            continue
        box = pixel_box(element.left, element.top, element.width, element.height, element.angle,
                        design.canvas_width, design.canvas_height)
        if box is not None and box not in boxes:
            boxes.append(box)
    flagged = ", ".join(judgement.boxes) or "no element"
    return OfflineVerdict(judgement.flawed, tuple(boxes), basis,
                          f"judge score {judgement.score:g}, flawed={judgement.flawed}, flagged {flagged}")


def offline_answer(fmt: str, image: bytes | None, metadata_json: str, indicator: str, options: Sequence[str],
                   units: str | None) -> str:
    """The answer text the offline heuristic "model" gives to one AesEval question, from the question's input only
    (``offline_verdict``): no network, no model, the same text for the same input.

    - ``aesthetic_judgment``: ``yes`` when the judge finds a flaw for the indicator, else ``no``.
    - ``region_selection``: the letter of the option whose box best overlaps (IoU at least ``REGION_MIN_IOU``) the
      box of a flagged element, trying the flagged elements most severe first (ties: the earlier letter); otherwise
      the None option's letter (as the question says: none of the regions shows the problem).
    - ``precise_localisation``: the most severe flagged element's box in the question's units, written as the
      questions write boxes; ``None`` when nothing is flagged (a flaw the judge ties to no element, such as a busy
      palette, also gives ``None``: it names only boxes the judge points at).

    The fallbacks (no image for a pixel indicator, no metadata, an unmeasurable indicator) answer ``no``, the None
    option, ``None``: see ``offline_verdict``.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
    verdict = offline_verdict(image, metadata_json, indicator)
    if fmt == JUDGMENT:
        wanted = YES if verdict.flawed else NO
        return next((str(o) for o in options if str(o).casefold() == wanted), wanted)
    if units not in BOX_UNITS:
        raise ValueError(f"a {fmt} question needs box units {BOX_UNITS}, not {units!r}")
    flagged = verdict.boxes if verdict.flawed else ()
    if fmt == LOCALISATION:
        if not flagged:
            return NONE_TEXT
        canvas = _canvas_for(metadata_json)
        return format_box(flagged[0], units, canvas)
    choices = _option_map(REGION_SELECTION, options)
    none_option = None
    option_boxes: list[tuple[str, PixelBox]] = []
    canvas = _canvas_for(metadata_json)
    for option_id, text in choices.items():
        if canvas is None:  # no metadata, so nothing is flagged: only the None option matters
            read = BoxAnswer(None, text.strip().casefold() == NONE_TEXT.casefold(), None, "")
        else:
            read = parse_box(text, units, canvas)
        if read.none and none_option is None:
            none_option = option_id
        elif read.box is not None:
            option_boxes.append((option_id, read.box))
    for box in flagged:
        best_id, best = None, 0.0
        for option_id, option_box in option_boxes:
            overlap = iou(box, option_box)
            if overlap > best:
                best_id, best = option_id, overlap
        if best_id is not None and best >= REGION_MIN_IOU:
            return best_id
    return none_option if none_option is not None else NONE_TEXT


def _canvas_for(metadata_json: str | None) -> tuple[int, int] | None:
    if metadata_json is None or not metadata_json.strip():
        return None
    return metadata_canvas(metadata_json)
