"""The offline heuristic provider on the two issue-6 schemas, through the real request builders and parsers:
``context_text_only`` (the case's wording alone, answered by ``text_only_guess``) and ``poem_rubric_scores``
(the illustration's pixels, answered by ``heuristic_judgement``), and its refusals when an input is missing."""

import io
import json
from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

from assets.context_canvas.logic.case_records import ContextCase, validate_case
from assets.context_canvas.logic.shortcuts import text_only_answers, text_only_guess
from assets.context_canvas.logic.text_only import TEXT_ONLY_SCHEMA_NAME, answer_parser, build_text_only_request
from assets.core.model_calls import CallSettings
from assets.poetry.logic.rubric_judge import JUDGE_SCHEMA_NAME, build_judge_request, heuristic_judgement, parse_judgement
from assets.poetry.logic.rubric import DIMENSIONS
from assets.poetry.logic.poems import Poem
from resources.heuristic_provider import HeuristicProvider
from resources.model_providers import INVALID_RESPONSE, OK

SETTINGS = CallSettings(model="heuristic-v1")
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
    response = HeuristicProvider().complete(request)
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
    assert json.loads(HeuristicProvider().complete(reworded).text)["answer"] == expected


@pytest.mark.parametrize("context, words", [
    ({}, "options"),
    ({"schema": TEXT_ONLY_SCHEMA_NAME, "scenario": "s", "question": "q", "options": []}, "options"),
    ({"schema": TEXT_ONLY_SCHEMA_NAME, "scenario": "s", "question": "q"}, "options"),
])
def test_text_only_request_without_options_is_refused(context, words):
    request = replace(build_text_only_request(CASES["yes-no"][0], SETTINGS), context=context)
    response = HeuristicProvider().complete(request)
    assert response.status == INVALID_RESPONSE and response.text == "" and words in response.error


# --- poem rubric judge -----------------------------------------------------------------------------------------

POEM = Poem("tang-001", "Quiet Night Thought", "Li Bai", "床前明月光\n疑是地上霜", "Moonlight before my bed",
            ("moon", "home"), "jueju", "test", "poems.json#record=0")


def png(seed: int, size=(320, 240), grey: bool = False) -> bytes:
    """A painted-looking gradient with noise; ``grey`` makes a light ink-wash-like one."""
    rng = np.random.default_rng(seed)
    h, w = size[1], size[0]
    ramp = np.linspace(0, 1, w)[None, :, None]
    if grey:
        pixels = 200 + 40 * ramp + rng.normal(0, 3, (h, w, 1))
        pixels = np.repeat(pixels, 3, axis=2)
    else:
        base = np.array([40, 120, 200])[None, None, :]
        pixels = base + 80 * ramp + rng.normal(0, 20, (h, w, 3))
    out = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(out, format="PNG")
    return out.getvalue()


@pytest.mark.parametrize("seed, grey", [(1, False), (2, True)])
def test_poem_rubric_answer_is_the_heuristic_judgement_of_the_same_image(seed, grey):
    image = png(seed, grey=grey)
    request = build_judge_request(POEM, image, "image/png", "tang-001@stand-in-1", SETTINGS)
    assert request.schema_name == JUDGE_SCHEMA_NAME
    response = HeuristicProvider().complete(request)
    assert response.status == OK, response.error
    answer = json.loads(response.text)
    assert answer == heuristic_judgement(Image.open(io.BytesIO(image)).convert("RGB"), POEM.text)
    judged = parse_judgement(response.text)  # the pipeline's parser accepts it
    assert set(judged.scores) == {d.key for d in DIMENSIONS}
    # Only technical quality and style can come from pixels; every other dimension is "cannot tell" (null).
    measured = {k for k, v in answer["scores"].items() if v["option"] is not None}
    assert measured <= {"technical_quality", "artistic_style"} and "technical_quality" in measured
    assert all(v["reason"] for v in answer["scores"].values())


def test_poem_rubric_answer_depends_on_the_image_not_the_poem():
    image = png(3)
    other = replace(POEM, poem_id="tang-002", text="白日依山尽", translation=None)
    first = HeuristicProvider().complete(build_judge_request(POEM, image, "image/png", "a@g", SETTINGS))
    second = HeuristicProvider().complete(build_judge_request(other, image, "image/png", "b@g", SETTINGS))
    assert json.loads(first.text) == json.loads(second.text)


@pytest.mark.parametrize("change, words", [
    ({"image": None}, "needs the image"),
    ({"image": b"not an image at all"}, "could not be decoded"),
    ({"context": {"schema": JUDGE_SCHEMA_NAME, "item_id": "tang-001@g"}}, "poem_text"),
])
def test_poem_rubric_request_missing_its_inputs_is_refused(change, words):
    request = replace(build_judge_request(POEM, png(4), "image/png", "tang-001@g", SETTINGS), **change)
    response = HeuristicProvider().complete(request)
    assert response.status == INVALID_RESPONSE and response.text == "" and words in response.error
