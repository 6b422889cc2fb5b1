"""The offline heuristic provider as a dispatcher: the schema picks the answer function, refusals become
``invalid_response``, and the resource keeps one provider per model and answer set so roles share caches.
Each pipeline's own answers are tested beside it (tests/<pipeline>/logic/test_offline_answers.py)."""

import json

import pytest

from resources.model_providers import ModelProvidersResource, RoleConfig
from resources.models.heuristic import AnswerCache, HeuristicProvider, Refusal, opened_image, required_image
from resources.models.types import INVALID_RESPONSE, OK, ModelRequest


def request(role="annotator", schema_name="echo", image=None, **context):
    return ModelRequest(role=role, model="heuristic-v1", system="(ignored)", user="(ignored)", image=image,
                        image_mime=None, json_schema=None, schema_name=schema_name, context=context)


def echo(request):
    if "word" not in request.context:
        raise Refusal("an echo request needs request.context['word']")
    return {"word": request.context["word"], "role": request.role}


def test_the_schema_picks_the_answer_and_a_repair_gets_its_originals():
    provider = HeuristicProvider({"echo": echo, "other": lambda r: {"other": True}}, model="heuristic-x")
    answered = provider.complete(request(word="café"))
    assert (answered.status, answered.error, answered.finish_reason, answered.attempts) == (OK, None, "stop", 1)
    assert answered.provider_model == "heuristic-x" and answered.input_tokens is None
    assert answered.text == '{"word": "café", "role": "annotator"}'  # not ASCII-escaped
    assert json.loads(provider.complete(request("repair", word="café")).text)["word"] == "café"
    assert json.loads(provider.complete(request("planner", "other")).text) == {"other": True}


@pytest.mark.parametrize(("req", "message"), [
    (request("critic", word="w"), "unknown role 'critic'; the heuristic provider answers planner, annotator, verifier, repair, candidate, judge"),
    (request(schema_name="plan", word="w"), "role 'annotator' with schema 'plan': expected schema echo or other"),
    (request(schema_name=None, word="w"), "with schema None: expected schema echo or other"),
    (request(), "needs request.context['word']"),
])
def test_what_no_answer_function_answers_is_an_invalid_response(req, message):
    response = HeuristicProvider({"echo": echo, "other": echo}).complete(req)
    assert (response.status, response.text, response.finish_reason) == (INVALID_RESPONSE, "", None)
    assert message in response.error and response.provider_model == "heuristic-v1"


def test_the_resource_shares_one_provider_per_model_and_answer_set():
    built = []

    def answers():
        built.append(1)
        return {"echo": echo}

    def other_answers():
        return {"echo": echo}

    resource = ModelProvidersResource(verifier=RoleConfig(model="heuristic-other"))
    planner = resource.provider_for("planner", offline=answers)
    assert resource.provider_for("annotator", offline=answers) is planner and len(built) == 1
    assert resource.provider_for("annotator", offline=other_answers) is not planner
    verifier = resource.provider_for("verifier", offline=answers)
    assert verifier is not planner and verifier.model == "heuristic-other" and len(built) == 2


def test_the_answer_cache_computes_each_key_once_and_keeps_no_refusal():
    cache, computed = AnswerCache(), []
    assert cache.get("a", lambda: computed.append("a") or 1) == 1
    assert cache.get("a", lambda: computed.append("again") or 2) == 1 and computed == ["a"]
    with pytest.raises(Refusal):
        cache.get("b", lambda: (_ for _ in ()).throw(Refusal("no")))
    assert cache.get("b", lambda: 3) == 3
    for key in range(1024):
        cache.get(key, lambda: 0)
    assert cache.get("a", lambda: "recomputed") == "recomputed"  # the oldest key made way


def test_images_missing_or_undecodable_are_refusals():
    with pytest.raises(Refusal, match="needs the image: the request carries none"):
        required_image(request())
    with pytest.raises(Refusal, match="the request image could not be decoded"):
        with opened_image(b"not an image") as image:
            image.load()
