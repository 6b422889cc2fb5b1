"""The text-only probe's offline answer (``context_text_only``: the case's wording alone, answered by
``text_only_guess``) through the heuristic provider and the real request builder and parser, and its refusals
when an input is missing."""

import json
from dataclasses import replace

import pytest

from assets.context_canvas.logic.case_records import ContextCase, validate_case
from assets.context_canvas.logic.offline_answers import context_offline_answers
from assets.context_canvas.logic.shortcuts import text_only_answers, text_only_guess
from assets.context_canvas.logic.text_only import TEXT_ONLY_SCHEMA_NAME, answer_parser, build_text_only_request
from assets.core.model_calls import CallSettings
from resources.models.heuristic import HeuristicProvider
from resources.models.types import INVALID_RESPONSE, OK

SETTINGS = CallSettings(model="heuristic-v1")
PROVIDER = HeuristicProvider(context_offline_answers())
RIGHTS = {"title": "t", "creator": "unknown", "provider": "p", "url": "https://example.invalid/x",
          "license_note": "CC0-1.0", "redistribution": "allowed"}


def case(case_id: str, scenario: str, question: str, options: list[tuple[str, str]], gold: str,
         proposed: str | None = None) -> ContextCase:
    record = {"case_id": case_id, "images": ["a.png"], "scenario": scenario, "question": question,
              "proposed_assessment": proposed, "options": [{"option_id": i, "text": t} for i, t in options],
              "gold": gold, "rationale": "r", "source_basis": "s", "rights": [RIGHTS]}
    validated = validate_case(record, f"test#{case_id}")
    assert isinstance(validated, ContextCase), validated
    return validated


# Hand-checked answers of the word-overlap rule (function words dropped; ties: longer option, then first listed):
CASES = {
    # No option shares a word with the text; "Yes" (3 letters) is longer than "No": A.
    "yes-no": (case("c-yes", "A charity prints a leaflet about winter.", "Is this image suitable?", [("A", "Yes"), ("B", "No")],
                    "B"), "A"),
    # "winter" and "snow" are in the scenario: only B shares words, though C is longer.
    "overlap": (case("c-three", "A festival programme needs the town in winter snow.", "Which picture fits the cover?",
                     [("A", "Summer meadow"), ("B", "Winter snow scene"), ("C", "A long night street by the river")], "B"),
                "B"),
    # The proposed assessment is model input too: its words ("calm", "blue", "palette") pick option B.
    "proposed": (case("c-prop", "A hospice chooses a print.", "Do you agree with the designer?",
                      [("A", "Yes, it fits the room well"), ("B", "No, the calm blue palette is wrong here")], "A",
                      proposed="The designer says the calm blue palette suits the room."), "B"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_text_only_answer_is_the_word_overlap_guess_on_the_same_text(name):
    the_case, expected = CASES[name]
    request = build_text_only_request(the_case, SETTINGS)
    assert request.image is None and request.schema_name == TEXT_ONLY_SCHEMA_NAME
    response = PROVIDER.complete(request)
    assert response.status == OK and response.error is None
    answer = json.loads(response.text)
    assert set(answer) == {"answer", "reason"} and answer["reason"]
    scenario = the_case.scenario + " " + (the_case.proposed_assessment or "")
    assert answer["answer"] == expected == text_only_guess(scenario, the_case.question, the_case.options)
    assert text_only_answers([the_case]) == {the_case.case_id: expected}
    assert answer_parser(the_case)(response.text) == expected  # the answer passes the pipeline's own parser


def test_text_only_answer_ignores_the_prompt_wording():
    the_case, expected = CASES["overlap"]
    request = build_text_only_request(the_case, SETTINGS)
    reworded = replace(request, system="Answer B.", user="Pick the longest option, C.")
    assert json.loads(PROVIDER.complete(reworded).text)["answer"] == expected


@pytest.mark.parametrize("context, words", [
    ({}, "options"),
    ({"schema": TEXT_ONLY_SCHEMA_NAME, "scenario": "s", "question": "q", "options": []}, "options"),
    ({"schema": TEXT_ONLY_SCHEMA_NAME, "scenario": "s", "question": "q"}, "options"),
])
def test_text_only_request_without_options_is_refused(context, words):
    request = replace(build_text_only_request(CASES["yes-no"][0], SETTINGS), context=context)
    response = PROVIDER.complete(request)
    assert response.status == INVALID_RESPONSE and response.text == "" and words in response.error
