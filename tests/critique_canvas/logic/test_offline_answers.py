"""The chain's offline answers through the heuristic provider: each role answered from the measured image, and
the requests it cannot answer refused with the reason."""

import io
import json

import pytest

from assets.core.logic.image_measures import measure
from assets.critique_canvas.logic import heuristic_critic as hc
from assets.critique_canvas.logic import offline_answers
from assets.critique_canvas.logic.answers import parse_dialogue, parse_plan, parse_verdicts
from assets.critique_canvas.logic.offline_answers import Measurements, critique_offline_answers
from resources.models.heuristic import HeuristicProvider
from resources.models.types import INVALID_RESPONSE, OK, ModelRequest
from tests.core.logic.test_image_measures import dark, horizon


def png(image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def request(role, image, schema_name=None, **context):
    return ModelRequest(role=role, model="heuristic-v1", system="(ignored)", user="(ignored)", image=image,
                        image_mime="image/png", json_schema=None, schema_name=schema_name, context=context)


def test_provider_answers_each_role_with_parseable_json(monkeypatch):
    measured_images = []
    monkeypatch.setattr(offline_answers, "measure", lambda image: measured_images.append(image) or measure(image))
    provider = HeuristicProvider(critique_offline_answers())
    image = png(horizon(5))
    expected = measure(horizon(5))

    planned = provider.complete(request("planner", image, "plan", domain="photography"))
    assert (planned.status, planned.error, planned.attempts, planned.provider_model) == (OK, None, 1, "heuristic-v1")
    assert planned.input_tokens is None and planned.output_tokens is None and planned.latency_ms >= 0
    plan = parse_plan(planned.text)
    assert json.loads(planned.text) == hc.plan(expected, "photography")

    annotated = provider.complete(request("annotator", image, "dialogue", domain="photography", plan=plan.as_dict()))
    dialogue = parse_dialogue(annotated.text)
    assert annotated.status == OK and dialogue.pairs[0].dimension == plan.dimension_ids[0]

    verified = provider.complete(request("verifier", image, "verdicts", domain="photography", dialogue=dialogue))
    assert verified.status == OK and all(v.accepted for v in parse_verdicts(verified.text))

    repaired = provider.complete(request("repair", image, "dialogue", domain="photography", plan=plan))
    assert repaired.status == OK and parse_dialogue(repaired.text) == dialogue
    assert len(measured_images) == 1  # the four requests of one image share one measurement
    assert provider.name == "heuristic" and "heuristic-v1" in repr(provider)


def test_measurements_are_cached_by_image():
    measurements, image = Measurements(), png(horizon(5))
    assert measurements.measures_for(image) is measurements.measures_for(image) == measure(horizon(5))


@pytest.mark.parametrize(("req", "message"), [
    (request("critic", b"png", "plan", domain="photography"), "unknown role 'critic'"),
    (request("planner", None, "plan", domain="photography"), "needs the image"),
    (request("planner", b"not an image", "plan", domain="photography"), "could not be decoded"),
    (request("planner", png(dark()), "plan"), "domain is None"),
    (request("verifier", png(dark()), "verdicts", domain="painting"), "needs the dialogue"),
    (request("repair", png(dark()), None, domain="painting"), "expected schema plan, dialogue, paragraphs, verdicts or pair_verdict"),
    (request("annotator", png(dark()), "design_label", domain="painting"), "expected schema plan, dialogue, paragraphs, verdicts or pair_verdict"),
])
def test_provider_refuses_what_it_cannot_answer(req, message):
    response = HeuristicProvider(critique_offline_answers(), model="heuristic-test").complete(req)
    assert response.status == INVALID_RESPONSE and response.text == ""
    assert message in response.error and response.provider_model == "heuristic-test"
