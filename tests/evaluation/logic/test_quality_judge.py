"""The critique-quality judge: its packaged template loads and renders without the reference, and every kind of bad
answer comes back as None with its reason."""

import json

import pytest

from assets.core.templates import PromptFolder, TemplateError, render
from assets.core.logic.json_answers import INVALID_JSON
from assets.evaluation.logic.quality_judge import (
    CRITERIA,
    JUDGE_SCHEMA,
    MISSING_SCORE,
    NOT_AN_INTEGER,
    OUT_OF_RANGE,
    judge_digest,
    judge_prompt,
    parse_quality_judgement,
)

GOOD = {"visual_grounding": 4, "aesthetic_specificity": 3, "criterion_appropriateness": 5, "analytical_usefulness": 2,
        "overall_quality": 4}


def test_template_loads_and_renders():
    template = PromptFolder("assets.evaluation.prompts", "evaluation").load("critique_canvas_quality_judge_v1")
    assert (template.id, template.version, template.role) == ("evaluation/critique_canvas_quality_judge_v1", "1", "judge")
    assert template.placeholders == {"instruction", "response"}
    system, user = render(template, instruction="How is the light used?", response="It costs $5 of light.")
    assert "How is the light used?" in user and "It costs $5 of light." in user
    for criterion in CRITERIA:
        assert criterion in system
    with pytest.raises(TemplateError):
        render(template, instruction="only the question")


def test_judge_prompt_and_digest_are_stable():
    first = judge_prompt("  Critique the composition. ", "The horizon is tilted.\n")
    assert first.hash == judge_prompt("Critique the composition.", "The horizon is tilted.").hash
    assert first.template.role == "judge"
    assert judge_digest() == judge_digest()
    assert JUDGE_SCHEMA["required"] == list(CRITERIA)


def test_a_good_answer_in_prose_and_fences():
    parsed = parse_quality_judgement("Here you go:\n```json\n" + json.dumps({**GOOD, "note": "x"}) + "\n```")
    assert parsed.reason_code is None and parsed.quality is not None
    assert parsed.quality.scores == GOOD and parsed.quality.overall == 4
    assert parse_quality_judgement(json.dumps({**GOOD, "overall_quality": 5.0})).quality.overall == 5


@pytest.mark.parametrize("answer, reason", [
    ("no scores today", INVALID_JSON),
    ('{"visual_grounding": 4, "aesthetic_specificity": 3', INVALID_JSON),
    (json.dumps({k: v for k, v in GOOD.items() if k != "overall_quality"}), MISSING_SCORE),
    (json.dumps({**GOOD, "visual_grounding": "4"}), NOT_AN_INTEGER),
    (json.dumps({**GOOD, "visual_grounding": True}), NOT_AN_INTEGER),
    (json.dumps({**GOOD, "visual_grounding": 3.5}), NOT_AN_INTEGER),
    (json.dumps({**GOOD, "visual_grounding": None}), NOT_AN_INTEGER),
    ('{"visual_grounding": NaN, "aesthetic_specificity": 3, "criterion_appropriateness": 5,'
     ' "analytical_usefulness": 2, "overall_quality": 4}', NOT_AN_INTEGER),
    (json.dumps({**GOOD, "overall_quality": 6}), OUT_OF_RANGE),
    (json.dumps({**GOOD, "analytical_usefulness": 0}), OUT_OF_RANGE),
])
def test_bad_answers_are_none_with_a_reason(answer, reason):
    parsed = parse_quality_judgement(answer)
    assert parsed.quality is None
    assert parsed.reason_code == reason and parsed.detail
