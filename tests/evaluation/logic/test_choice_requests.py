"""The closed-answer benchmarks' requests under each prompt condition (what the model is shown, and what it is not),
and the offline ContextCanvas judge whose answers follow from what it is given."""

import io
import json

import pytest
from PIL import Image

from assets.context_canvas.logic.case_records import CaseOption
from assets.evaluation.logic.benchmark_items import aeseval_item, context_canvas_item
from assets.evaluation.logic.choice_requests import (CONTEXT_SCHEMA, NO_DESCRIPTION, NO_EXPLANATION_MARKER, choice_call,
                                                     choice_request, condition_problem)
from assets.evaluation.logic.grounding import CORRECT_IMAGE, TEXT_ONLY
from assets.evaluation.logic.offline_context import offline_context_answer

CASE = context_canvas_item({
    "id": "ctx-1", "images": [], "image_sha256": [], "scenario": "A hospice family room needs calm, cool colour.",
    "proposed_assessment": "The designer likes its bold red.", "question": "Is this painting suitable?",
    "options": [{"id": "A", "text": "Yes"}, {"id": "B", "text": "No"}],
    "neutral_description": "A red circle on an orange ground.", "evidence_description": ""}, {"gold": {}})


@pytest.mark.parametrize(("condition", "control"), [("image", CORRECT_IMAGE), ("text_only", TEXT_ONLY), ("neutral", TEXT_ONLY)])
def test_each_context_condition_shows_the_image_or_says_there_is_none(condition, control):
    call = choice_call("context_canvas", condition)
    assert call.control == control and call.temperature == 0.0 and call.max_output_tokens == 256
    request = choice_request(call, "context_canvas", condition, CASE, 0, None, None, None, "m")
    assert request.schema_name == CONTEXT_SCHEMA and request.json_schema["required"] == ["answer", "reason", "confidence"]
    assert "A. Yes" in request.user and "B. No" in request.user and "hospice family room" in request.user
    assert "Proposed assessment: The designer likes its bold red." in request.user
    assert ("A red circle on an orange ground." in request.user) == (condition == "neutral")
    assert request.context["condition"] == condition


def test_a_condition_needing_a_missing_description_does_not_apply():
    assert condition_problem("context_canvas", "evidence", CASE)[0] == NO_DESCRIPTION
    assert condition_problem("context_canvas", "neutral", CASE) is None
    with pytest.raises(KeyError, match="conditions: image, text_only, neutral, evidence"):
        choice_call("context_canvas", "caption")


def test_a_counterfactual_pair_is_asked_twice():
    assert choice_call("counterfactual", "image").calls_per_item == 2


QUESTION = aeseval_item({
    "question_id": "q1", "format": "region_selection", "indicator": "layout_balance",
    "question": "Indicator under review: layout balance. What it means: visual weight evenly spread.\nWhich region?",
    "options": ["[0, 0, 10, 10]", "None"], "answer": "A", "answer_box": [0, 0, 10, 10], "box_units": "pixels",
    "metadata": json.dumps({"canvas": {"width": 40, "height": 20}, "elements": [{"element_id": "e1"}]}),
    "image_sha256": "0" * 64, "image": None}, {})


def test_aeseval_ablations_leave_out_what_they_name():
    full = choice_request(choice_call("aeseval", "full"), "aeseval", "full", QUESTION, 0, b"png", "image/png", "s", "m")
    assert '"element_id": "e1"' in full.user and "What it means" in full.user and full.image == b"png"
    bare = choice_request(choice_call("aeseval", "no_metadata"), "aeseval", "no_metadata", QUESTION, 0, b"png", "image/png",
                          "s", "m")
    assert "element_id" not in bare.user and bare.context["metadata"] == ""
    plain = choice_request(choice_call("aeseval", "no_explanation"), "aeseval", "no_explanation", QUESTION, 0, None, None,
                           None, "m")
    assert "What it means" not in plain.user and "Indicator under review: layout balance." in plain.user
    assert choice_call("aeseval", "no_image").control == TEXT_ONLY
    unmarked = aeseval_item({**{k: v for k, v in QUESTION.fields.items() if k in ("format", "indicator", "metadata")},
                             "question_id": "q2", "question": "Which region?", "options": [], "answer": "None",
                             "box_units": "pixels", "image_sha256": "0" * 64}, {})
    assert condition_problem("aeseval", "no_explanation", unmarked)[0] == NO_EXPLANATION_MARKER


def _png(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), colour).save(out, format="PNG")
    return out.getvalue()


OPTIONS = [CaseOption("A", "Yes"), CaseOption("B", "No")]


def test_the_offline_context_judge_answers_from_the_pixels_it_is_shown():
    scenario = "A hospice family room needs calm, cool colour, nothing dramatic."
    assert offline_context_answer(scenario, "Suitable?", OPTIONS, _png((230, 40, 20)), None)["answer"] == "B"  # warm, vivid
    assert offline_context_answer(scenario, "Suitable?", OPTIONS, _png((120, 140, 170)), None)["answer"] == "A"  # cool, muted
    described = offline_context_answer(scenario, "Suitable?", OPTIONS, None, "A vivid red and orange burst.")
    assert described["answer"] == "B" and "description" in described["reason"]


def test_without_anything_visual_the_offline_judge_falls_back_to_the_wording_and_says_so():
    answer = offline_context_answer("A poster for a dark-sky campaign.", "Suitable?", OPTIONS, None, None)
    assert answer["answer"] in ("A", "B") and answer["confidence"] == "low" and "nothing visual" in answer["reason"]


def test_a_description_that_rules_a_quality_out_is_read_as_the_other_pole():
    scenario = "A walking brochure wants open country far from towns, with no buildings."
    clean = offline_context_answer(scenario, "Suitable?", OPTIONS, None, "Hills and water; no houses, towers or roads.")
    built = offline_context_answer(scenario, "Suitable?", OPTIONS, None, "Hills, and a cluster of towers in the centre.")
    assert (clean["answer"], built["answer"]) == ("A", "B")
