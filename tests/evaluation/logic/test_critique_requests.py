"""The requests asked of a model under test: multi-pass conditions in one call, image controls, answer reading."""

import pytest

from assets.evaluation.logic.benchmark_items import BenchmarkItem, ItemImage
from assets.evaluation.logic.critique_requests import (CRITIQUE_SCHEMA, CRITIQUES_SCHEMA, candidate_call, critique_request,
                                                       parse_critique, parse_critiques)

POST = BenchmarkItem("p1", {"title": "Harbour at dusk", "body": "first try with a tripod"}, (ItemImage("ab" * 32, None, None),),
                     ("a reference",))


def test_a_single_pass_condition_asks_each_critique_in_its_own_call_with_its_own_seed():
    call = candidate_call("photocritique", "capped_plain")
    assert (call.samples, call.calls_per_item, call.multi_pass, call.control) == (3, 3, False, "correct_image")
    seeds = [critique_request(call, POST, k, b"img", "image/jpeg", "ab" * 32, "m").seed for k in range(3)]
    assert seeds == [42, 43, 44]
    request = critique_request(call, POST, 0, b"img", "image/jpeg", "ab" * 32, "m")
    assert request.schema_name == CRITIQUE_SCHEMA and request.role == "candidate"
    assert "Harbour at dusk" in request.user and "first try with a tripod" in request.user


def test_a_multi_pass_condition_asks_all_three_in_one_call():
    call = candidate_call("photocritique", "multi_plain")
    assert (call.samples, call.calls_per_item, call.multi_pass) == (3, 1, True)
    assert critique_request(call, POST, 0, b"img", "image/jpeg", "ab" * 32, "m").schema_name == CRITIQUES_SCHEMA


def test_a_control_after_a_plus_changes_only_the_image_shown():
    plain = candidate_call("photocritique", "capped_plain")
    text_only = candidate_call("photocritique", "capped_plain+text_only")
    assert text_only.control == "text_only" and text_only.template == plain.template
    assert text_only.decoding()["control"] == "text_only" != plain.decoding()["control"]
    request = critique_request(text_only, POST, 0, None, None, None, "m")
    assert request.image is None and request.context["image_sha256"] is None
    with pytest.raises(KeyError, match="no image control 'blurred'"):
        candidate_call("photocritique", "capped_plain+blurred")
    with pytest.raises(KeyError, match="no photocritique condition 'loud'"):
        candidate_call("photocritique", "loud")


def test_answers_are_read_as_given_or_rejected_with_the_problem():
    assert parse_critique('  {"critique": " tilt the horizon "} ') == "tilt the horizon"
    assert parse_critique("Nice light.\n") == "Nice light."
    with pytest.raises(ValueError):
        parse_critique("   ")
    three = parse_critiques(3)
    assert three('{"critiques": ["one", "two", "three"]}') == ("one", "two", "three")
    assert three("1. crop tighter\n2. the sky is blown\n3. lovely tones") == ("crop tighter", "the sky is blown", "lovely tones")
    with pytest.raises(ValueError) as two:
        three('{"critiques": ["one", "two"]}')
    assert two.value.reason_code == "wrong_critique_count"
