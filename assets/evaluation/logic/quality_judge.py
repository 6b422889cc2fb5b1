"""The MLLM judge of CritiqueCanvas critique quality (AesCanvas S2.2.3): the prompt, its answer schema and the check
of an answer.

Why: reference-overlap metrics reward wording close to one expert answer, while several analyses of an image can be
right. The judge sees the image, the question and one critique, never the reference (the paper withholds it so that
similarity to it earns nothing), and gives four criterion scores and a holistic ``overall_quality`` on 1..5; the
holistic score is the one a leaderboard reports. Critiques are judged one per call rather than five side by side
as in the paper, so a model's scores do not depend on which other models were judged with it.

An answer is never trusted: ``parse_quality_judgement`` returns the scores, or None with a stable reason code and
a detail when the answer does not parse or a score is missing, not an integer or off the scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assets.core.logic.json_answers import INVALID_JSON, SchemaError, extract_json_object
from assets.core.templates import PromptFolder, PromptTemplate, RenderedPrompt, rendered
from warehouse.ids import digest_of

EVALUATION_PROMPTS = PromptFolder("assets.evaluation.prompts", "evaluation")
JUDGE_TEMPLATE = "critique_canvas_quality_judge_v1"
JUDGE_SCHEMA_NAME = "critique_quality_scores"

CRITERIA: tuple[str, ...] = ("visual_grounding", "aesthetic_specificity", "criterion_appropriateness",
                             "analytical_usefulness", "overall_quality")
OVERALL = "overall_quality"
SCALE = (1, 5)

# Reason codes, stable: stored with rejected answers and counted in reports.
MISSING_SCORE = "missing_score"
NOT_AN_INTEGER = "not_an_integer"
OUT_OF_RANGE = "out_of_range"
REASON_CODES = (INVALID_JSON, MISSING_SCORE, NOT_AN_INTEGER, OUT_OF_RANGE)

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Scores of one critique, each a whole number from 1 (very weak) to 5 (excellent).",
    "properties": {c: {"type": "integer", "minimum": SCALE[0], "maximum": SCALE[1]} for c in CRITERIA},
    "required": list(CRITERIA),
    "additionalProperties": False,
}


def load_judge_template() -> PromptTemplate:
    return EVALUATION_PROMPTS.load(JUDGE_TEMPLATE)


def judge_prompt(instruction: str, response: str) -> RenderedPrompt:
    """The judge's prompt for one critique; the image travels beside it in the request."""
    return rendered(load_judge_template(), instruction=instruction.strip(), response=response.strip())


def judge_digest() -> str:
    """Identity of the judge apart from its model: template, schema and scale. A change is a new configuration."""
    return digest_of([load_judge_template().sha256, JUDGE_SCHEMA, list(CRITERIA), list(SCALE)])


@dataclass(frozen=True)
class CritiqueQuality:
    scores: dict[str, int]  # every criterion of CRITERIA, overall_quality included

    @property
    def overall(self) -> int:
        return self.scores[OVERALL]


@dataclass(frozen=True)
class JudgeParse:
    """A checked answer: ``quality`` when it holds up, else None with ``reason_code`` and ``detail``."""

    quality: CritiqueQuality | None
    reason_code: str | None = None
    detail: str = ""


def _rejected(reason_code: str, detail: str) -> JudgeParse:
    return JudgeParse(None, reason_code, detail)


def parse_quality_judgement(text: str) -> JudgeParse:
    """Checks, in order: a JSON object; every criterion present; each an integer (4.0 counts, "4" and true do not);
    each within SCALE. Keys beyond the criteria are ignored."""
    try:
        answer = extract_json_object(text)
    except SchemaError as exc:
        return _rejected(INVALID_JSON, exc.detail)
    missing = [c for c in CRITERIA if c not in answer]
    if missing:
        return _rejected(MISSING_SCORE, f"the answer lacks {', '.join(missing)}")
    scores: dict[str, int] = {}
    for criterion in CRITERIA:
        value = answer[criterion]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                isinstance(value, float) and not value.is_integer()):
            return _rejected(NOT_AN_INTEGER, f"{criterion} is {value!r}, not a whole number")
        if not SCALE[0] <= value <= SCALE[1]:
            return _rejected(OUT_OF_RANGE, f"{criterion} is {value!r}, outside {SCALE[0]}..{SCALE[1]}")
        scores[criterion] = int(value)
    return JudgeParse(CritiqueQuality(scores))
