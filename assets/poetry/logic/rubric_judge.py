"""Rubric-conditioned judge for poem illustrations (TangPoetryBench section 5): request, answer check, offline answer.

Why: the paper's evaluator scores an image against the same written rubric the annotators used, one option per
dimension, so its answers can be compared with people's dimension by dimension (mean absolute error, share within
0.05, per-poem ranking). This module decides what is asked and what an answer means; the provider layer
(``resources.model_providers``) sends it and ``assets.core.model_calls.ModelCaller`` caches, logs and repairs it.

- ``build_judge_request``: the poem, the image and the rubric written out from ``assets.poetry.logic.rubric`` (every
  dimension with its option letters, their meanings and scores; not-applicable options say so), rendered from the
  versioned template ``assets/poetry/prompts/judge_v1.txt`` (critique-template format).
- ``parse_judgement``: checks an answer of the ``poem_rubric_scores`` schema and maps each option to its rubric
  score. An option of ``null`` means the judge could not tell; it scores None and, like a not-applicable option,
  is left out of agreement. Failures raise ``JudgeAnswerError`` (a ValueError with a ``reason_code``), which is
  what ``ModelCaller`` records and repairs by.
- ``heuristic_judgement``: the offline answer in the same shape, computed from the image's measurements
  (``assets.core.logic.image_measures``) and a noise estimate. It rates only what pixels can show (technical quality;
  artistic style where the palette is conclusive) and answers null, saying why, for everything else.

The request's ``context`` carries the structured inputs (schema name, item, poem) for offline providers; it is
never sent to a remote API. No API key is touched here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from assets.core.templates import PromptFolder, PromptTemplate, render, repair_template
from assets.core.logic.json_answers import SchemaError, extract_json_object
from assets.core.model_calls import CallSettings
from assets.core.logic.image_measures import WORKING_SIDE, ImageMeasures, measure
from assets.core.model_calls import schema_repair_request
from assets.poetry.logic.rubric import DIMENSION_KEYS, DIMENSIONS, RUBRIC_VERSION, Dimension, dimension
from assets.poetry.logic.poems import Poem
from resources.models.types import ModelRequest
from warehouse.ids import digest_of

JUDGE_SCHEMA_NAME = "poem_rubric_scores"
JUDGE_TEMPLATE = "judge_v1"
POETRY_PROMPTS = PromptFolder("assets.poetry.prompts", "poetry")

# Reason codes, stable: stored with rejected answers and counted in reports.
INVALID_JSON = "invalid_json"
MISSING_FIELD = "missing_field"
WRONG_TYPE = "wrong_type"
MISSING_DIMENSION = "missing_dimension"
UNKNOWN_DIMENSION = "unknown_dimension"
INVALID_OPTION = "invalid_option"
EMPTY_REASON = "empty_reason"
REASON_CODES = (INVALID_JSON, MISSING_FIELD, WRONG_TYPE, MISSING_DIMENSION, UNKNOWN_DIMENSION, INVALID_OPTION,
                EMPTY_REASON)


class JudgeAnswerError(ValueError):
    """An answer that does not hold up; ``reason_code`` is one of REASON_CODES."""

    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(f"{reason_code}: {detail}")
        self.reason_code = reason_code
        self.detail = detail


# --- the answer schema -------------------------------------------------------------------------------------------


def _dimension_schema(d: Dimension) -> dict[str, Any]:
    letters = [o.letter for o in d.options]
    return {
        "type": "object",
        "description": f"{d.name}: {d.asks}.",
        "properties": {
            "option": {"anyOf": [{"type": "string", "enum": letters}, {"type": "null"}],
                       "description": "One of the rubric's letters for this dimension; null when the image does not "
                                      "let you decide."},
            "reason": {"type": "string", "description": "One sentence naming what is visible."},
        },
        "required": ["option", "reason"],
        "additionalProperties": False,
    }


JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "One option per rubric dimension for one poem illustration, each with a short reason.",
    "properties": {
        "scores": {
            "type": "object",
            "properties": {d.key: _dimension_schema(d) for d in DIMENSIONS},
            "required": list(DIMENSION_KEYS),
            "additionalProperties": False,
        },
    },
    "required": ["scores"],
    "additionalProperties": False,
}


# --- the template and the rubric text -----------------------------------------------------------------------------


def load_judge_template(name: str = JUDGE_TEMPLATE) -> PromptTemplate:
    """The packaged template ``poetry/<name>.txt``."""
    return POETRY_PROMPTS.load(name)


def _score_text(score: float | None) -> str:
    return "not applicable: leaves this dimension out of the score" if score is None else f"score {score:g}"


def rubric_text() -> str:
    """The rubric as the judge reads it: per dimension its key, name and question, then each option as
    ``letter = meaning [score]``, in the survey's letter order."""
    blocks = []
    for number, d in enumerate(DIMENSIONS, start=1):
        options = "\n".join(f"   {o.letter} = {o.meaning} [{_score_text(o.score)}]" for o in d.options)
        blocks.append(f"{number}. {d.key} ({d.name}, {d.group}): {d.asks}.\n{options}")
    return "\n".join(blocks)


def judge_digest() -> str:
    """Identity of the judge configuration apart from the model: prompt templates, answer schema and rubric.
    A change to any of them is a new configuration (and a new cache key)."""
    rubric = [[d.key, d.asks, [[o.letter, o.meaning, o.score] for o in d.options]] for d in DIMENSIONS]
    return digest_of([load_judge_template().sha256, repair_template().sha256, JUDGE_SCHEMA, RUBRIC_VERSION,
                      rubric])


# --- requests ------------------------------------------------------------------------------------------------------


def build_judge_request(poem: Poem, image: bytes, image_mime: str, item_id: str, settings: CallSettings) -> ModelRequest:
    """One rubric-conditioned rating of one illustration (role ``annotator``)."""
    if not image:
        raise ValueError(f"item {item_id}: the judge request needs the image")
    template = load_judge_template()
    translation = f"(In English: {' '.join(poem.translation.split())})" if poem.translation else ""
    system, user = render(template, title=poem.title, author=poem.author, poem_text=poem.text, translation=translation,
                          rubric_version=RUBRIC_VERSION, rubric=rubric_text(), dimension_keys=", ".join(DIMENSION_KEYS))
    context = {"schema": JUDGE_SCHEMA_NAME, "item_id": item_id, "poem_id": poem.poem_id, "poem_text": poem.text,
               "poem_title": poem.title, "poem_author": poem.author, "rubric_version": RUBRIC_VERSION,
               "template_sha256": template.sha256}
    return ModelRequest(
        role=template.role, model=settings.model, system=system, user=user, image=image, image_mime=image_mime,
        json_schema=JUDGE_SCHEMA, schema_name=JUDGE_SCHEMA_NAME, temperature=settings.temperature,
        max_output_tokens=settings.max_output_tokens, template_id=template.id, template_version=template.version,
        context=context,
    )


def repair_request(original: ModelRequest, invalid_answer: str, problem: str) -> ModelRequest:
    """The shared repair prompt (``critique/repair``) for a judge answer: same model, image and schema.
    Pass as ``ModelCaller``'s ``repair``."""
    if original.schema_name != JUDGE_SCHEMA_NAME:
        raise ValueError(f"not a judge request (schema {original.schema_name!r}, expected {JUDGE_SCHEMA_NAME!r})")
    return schema_repair_request(original, invalid_answer, problem, JUDGE_SCHEMA)


# --- answers -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoemJudgement:
    """A checked answer: per dimension the option (lower-case letter, or None when the judge could not tell),
    its rubric score (None for "could not tell" and for not-applicable options) and the judge's reason."""

    options: dict[str, str | None]
    scores: dict[str, float | None]
    reasons: dict[str, str]

    def as_dict(self) -> dict[str, Any]:
        return {key: {"option": self.options[key], "score": self.scores[key], "reason": self.reasons[key]}
                for key in DIMENSION_KEYS}


def parse_judgement(text: str) -> PoemJudgement:
    """Checks, in order: a JSON object; ``scores`` an object; no key that is not a dimension; every dimension
    present as an object with ``option`` (a letter of that dimension, any case, or null) and a non-empty
    ``reason``."""
    try:
        obj = extract_json_object(text)
    except SchemaError as exc:
        raise JudgeAnswerError(INVALID_JSON, exc.detail) from None
    if not isinstance(obj, dict):
        raise JudgeAnswerError(INVALID_JSON, "the answer is not a JSON object")
    if "scores" not in obj:
        raise JudgeAnswerError(MISSING_FIELD, "answer has no 'scores'")
    scores = obj["scores"]
    if not isinstance(scores, dict):
        raise JudgeAnswerError(WRONG_TYPE, f"answer.scores is {type(scores).__name__}, not an object")
    unknown = sorted(set(scores) - set(DIMENSION_KEYS))
    if unknown:
        raise JudgeAnswerError(UNKNOWN_DIMENSION, f"answer.scores has key(s) {', '.join(map(repr, unknown))} that are "
                                                  f"not dimensions (expected {', '.join(DIMENSION_KEYS)})")
    missing = [key for key in DIMENSION_KEYS if key not in scores]
    if missing:
        raise JudgeAnswerError(MISSING_DIMENSION, f"answer.scores lacks {', '.join(missing)}")
    options: dict[str, str | None] = {}
    values: dict[str, float | None] = {}
    reasons: dict[str, str] = {}
    for key in DIMENSION_KEYS:
        where = f"scores.{key}"
        entry = scores[key]
        if not isinstance(entry, dict):
            raise JudgeAnswerError(WRONG_TYPE, f"{where} is {type(entry).__name__}, not an object")
        for field in ("option", "reason"):
            if field not in entry:
                raise JudgeAnswerError(MISSING_FIELD, f"{where} has no {field!r}")
        option, reason = entry["option"], entry["reason"]
        if not isinstance(reason, str):
            raise JudgeAnswerError(WRONG_TYPE, f"{where}.reason is {type(reason).__name__}, not text")
        if not reason.strip():
            raise JudgeAnswerError(EMPTY_REASON, f"{where}.reason is empty")
        d = dimension(key)
        allowed = ", ".join(o.letter for o in d.options)
        if option is None:
            options[key], values[key] = None, None
        elif isinstance(option, str) and option.strip().lower() in {o.letter for o in d.options}:
            letter = option.strip().lower()
            options[key], values[key] = letter, d.score(letter)
        else:
            raise JudgeAnswerError(INVALID_OPTION, f"{where}.option is {json.dumps(option)[:40]}, not one of "
                                                   f"{allowed} or null")
        reasons[key] = " ".join(reason.split())
    return PoemJudgement(options, values, reasons)


# --- the offline answer ---------------------------------------------------------------------------------------------

# Technical quality. Edge crispness is the heuristic critic's measure (steepest edges' one-pixel step over their
# local tonal step: ~1 a hard step, ~0.23 a 2-px blur); its "soft" line is 0.3, and below 0.15 detail is smeared.
# Thin strokes blurred further keep a crispness near 0.2 (their local step shrinks with them), so a soft image
# with almost no strong edge left (gradient >= 0.1 luminance per pixel on under 0.2% of pixels) counts as blurred.
SOFT_CRISPNESS = 0.3
BLURRED_CRISPNESS = 0.15
BLURRED_EDGE_DENSITY = 0.002
# Noise: Immerkaer's estimate of the standard deviation of additive noise, in 0-255 luminance levels, on the working
# copy. Clean renders and scans read about 0-3; grain becomes visible around 8 and dominates fine detail past 16.
NOISY_SIGMA = 8.0
VERY_NOISY_SIGMA = 16.0
# Resolution: the long side, in pixels, of the image as delivered.
LOW_RESOLUTION_SIDE = 512
VERY_LOW_RESOLUTION_SIDE = 256
# Tones. White paper may fill most of an ink painting, and a few strokes may be all that is painted, so blown
# highlights and a narrow middle-90% span are not flaws here; the full span (1st to 99th percentile) is used.
FLAT_SPAN = 0.05          # p99 - p1 luminance below this: almost one tone, nothing painted stands out
NARROW_SPAN = 0.15        # ... below this: washed out or murky, no real darks against lights
CRUSHED_SHADOWS = 0.25    # fraction of pixels at or below 2/255
# Artistic style, from the palette only. Ink and light colour on paper or silk: low saturation on a light ground.
INK_MAX_SATURATION = 0.25
PAPER_MIN_MEDIAN_LUMINANCE = 0.6
# A vivid, saturated palette unlike ink or mineral pigment washes (Hasler-Suesstrunk colourfulness ~59 is "quite
# colourful", ~82 "highly", >109 "extremely").
VIVID_SATURATION = 0.45
CLASHING_SATURATION = 0.6
CLASHING_COLORFULNESS = 82.0
DARK_GROUND_MEDIAN_LUMINANCE = 0.3

_NOT_FROM_PIXELS = {
    "safety": "whether content is inappropriate is not something the offline judge can measure from pixel statistics",
    "ai_plausibility": "structural and anatomical artefacts need object recognition, which pixel measures do not give",
    "text_integrity": "writing in the image is decided by the OCR pass and adjudication, not by pixel measures",
    "scene_consistency": "season, time of day and setting cannot be read against the poem from pixel measures",
    "cultural_coherence": "dress, architecture and objects cannot be recognised from pixel measures",
    "core_imagery": "whether the poem's central image is shown needs object recognition and reading the poem",
    "emotional_resonance": "the emotion an image carries cannot be measured from pixel statistics",
    "overall_impression": "a holistic judgement needs the dimensions the offline judge cannot measure",
}


def noise_sigma(image: Image.Image) -> float:
    """Immerkaer (1996) fast noise estimate: the mean absolute response to a 3x3 mask that cancels any locally
    planar image, scaled to the standard deviation of white Gaussian noise, on the luminance (0-255) of the same
    working copy ``measure`` uses. Textured subjects read somewhat high, so the thresholds above are generous."""
    rgb = np.asarray(_working_copy(image), dtype=np.float64)
    luma = rgb @ np.array([0.2126, 0.7152, 0.0722])
    height, width = luma.shape
    if height < 3 or width < 3:
        return 0.0
    response = (luma[:-2, :-2] - 2 * luma[:-2, 1:-1] + luma[:-2, 2:]
                - 2 * luma[1:-1, :-2] + 4 * luma[1:-1, 1:-1] - 2 * luma[1:-1, 2:]
                + luma[2:, :-2] - 2 * luma[2:, 1:-1] + luma[2:, 2:])
    return round(float(np.sqrt(np.pi / 2) * np.abs(response).sum() / (6.0 * (width - 2) * (height - 2))), 2)


def _working_copy(image: Image.Image) -> Image.Image:
    """RGB, transparency flattened onto white, long side at most WORKING_SIDE (box filter): as ``measure`` does."""
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        rgb = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba).convert("RGB")
    else:
        rgb = image.convert("RGB")
    scale = WORKING_SIDE / max(rgb.size)
    if scale >= 1:
        return rgb
    return rgb.resize((max(1, round(rgb.width * scale)), max(1, round(rgb.height * scale))), Image.Resampling.BOX)


def _technical(m: ImageMeasures, sigma: float) -> tuple[str, str]:
    serious: list[str] = []
    minor: list[str] = []
    long_side = max(m.width, m.height)
    span = _span(m)
    if span < FLAT_SPAN:
        serious.append(f"almost one tone (1st-99th percentile luminance spans {span:.2f} < {FLAT_SPAN})")
    else:
        if span < NARROW_SPAN:
            minor.append(f"washed-out tones (1st-99th percentile luminance spans {span:.2f} < {NARROW_SPAN})")
        if m.edge_crispness < BLURRED_CRISPNESS:
            serious.append(f"blurred edges (crispness {m.edge_crispness:.2f} < {BLURRED_CRISPNESS})")
        elif m.edge_crispness < SOFT_CRISPNESS and m.edge_density < BLURRED_EDGE_DENSITY:
            serious.append(f"blurred edges (crispness {m.edge_crispness:.2f} < {SOFT_CRISPNESS} and strong edges on "
                           f"{m.edge_density:.2%} < {BLURRED_EDGE_DENSITY:.1%} of pixels)")
        elif m.edge_crispness < SOFT_CRISPNESS:
            minor.append(f"soft edges (crispness {m.edge_crispness:.2f} < {SOFT_CRISPNESS})")
    if sigma >= VERY_NOISY_SIGMA:
        serious.append(f"heavy noise (sigma {sigma:.1f} >= {VERY_NOISY_SIGMA:g} levels)")
    elif sigma >= NOISY_SIGMA:
        minor.append(f"visible noise (sigma {sigma:.1f} >= {NOISY_SIGMA:g} levels)")
    if long_side < VERY_LOW_RESOLUTION_SIDE:
        serious.append(f"very low resolution ({m.width}x{m.height} px, long side < {VERY_LOW_RESOLUTION_SIDE})")
    elif long_side < LOW_RESOLUTION_SIDE:
        minor.append(f"low resolution ({m.width}x{m.height} px, long side < {LOW_RESOLUTION_SIDE})")
    if m.clipped_shadows >= CRUSHED_SHADOWS:
        minor.append(f"{m.clipped_shadows:.0%} of pixels crushed to black (>= {CRUSHED_SHADOWS:.0%})")
    if serious:
        return "c", "Measured " + "; ".join(serious + minor) + "."
    if minor:
        return "b", "Measured " + "; ".join(minor) + "."
    return "a", (f"Measured clean rendering: edge crispness {m.edge_crispness:.2f}, noise sigma {sigma:.1f} levels, "
                 f"tonal span {span:.2f}, {m.width}x{m.height} px.")


def _span(m: ImageMeasures) -> float:
    return round(m.luminance_p99 - m.luminance_p1, 4)


def _style(m: ImageMeasures) -> tuple[str | None, str]:
    palette = (f"mean saturation {m.mean_saturation:.2f}, colourfulness {m.colorfulness:.0f}, "
               f"median luminance {m.luminance_p50:.2f}")
    if _span(m) < FLAT_SPAN:
        return None, f"Almost one tone (luminance span {_span(m):.2f}): nothing painted whose style could be judged."
    if m.mean_saturation >= CLASHING_SATURATION and m.colorfulness >= CLASHING_COLORFULNESS:
        return "c", f"Vivid, highly saturated palette unlike ink or pigment washes ({palette})."
    if m.mean_saturation <= INK_MAX_SATURATION and m.luminance_p50 >= PAPER_MIN_MEDIAN_LUMINANCE:
        return "a", f"Low-saturation tones on a light, paper-like ground, as in ink painting ({palette})."
    if m.mean_saturation >= VIVID_SATURATION:
        return "b", f"Saturated palette, stronger than ink or light pigment washes usually give ({palette})."
    if m.luminance_p50 < DARK_GROUND_MEDIAN_LUMINANCE:
        return "b", f"Dark ground, unlike the paper or silk of a classical painting ({palette})."
    return None, f"The palette neither confirms nor rules out a classical painting style ({palette})."


def heuristic_judgement(image: Image.Image, poem_text: str) -> dict[str, Any]:
    """The offline judge's answer, in the ``poem_rubric_scores`` shape (it passes ``parse_judgement``).

    Technical quality comes from edge crispness, a noise estimate, tonal span, crushed shadows and resolution
    (thresholds above: any serious finding -> c, any minor one -> b, none -> a). Artistic style comes from the
    palette: ink-like (low saturation, light ground) -> a, clearly vivid or dark -> b or c, in between -> null.
    Every other dimension is null with the reason it cannot be measured. ``poem_text`` is accepted so the offline
    judge has the same inputs as a model, but no measurement here uses it: reading an image against a poem is
    exactly what pixel statistics cannot do.
    """
    del poem_text  # see the docstring: nothing measurable depends on it
    m = measure(image)
    sigma = noise_sigma(image)
    scores: dict[str, dict[str, Any]] = {}
    for key in DIMENSION_KEYS:
        if key == "technical_quality":
            option, reason = _technical(m, sigma)
        elif key == "artistic_style":
            option, reason = _style(m)
        else:
            option, reason = None, "Not judged offline: " + _NOT_FROM_PIXELS[key] + "."
        scores[key] = {"option": option, "reason": reason}
    return {"scores": scores}


def judged_scores(answer: Mapping[str, Any]) -> dict[str, float | None]:
    """Scores of an answer already in the schema's shape (e.g. ``heuristic_judgement``'s), checked as a model's."""
    return parse_judgement(json.dumps(answer)).scores
