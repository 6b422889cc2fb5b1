"""The poem rubric judge's offline answer (``poem_rubric_scores``: the illustration's pixels, answered by
``heuristic_judgement``) through the heuristic provider and the real request builder and parser, and its
refusals when an input is missing."""

import io
import json
from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

from assets.core.model_calls import CallSettings
from assets.poetry.logic.offline_answers import poem_offline_answers
from assets.poetry.logic.poems import Poem
from assets.poetry.logic.rubric import DIMENSIONS
from assets.poetry.logic.rubric_judge import JUDGE_SCHEMA_NAME, build_judge_request, heuristic_judgement, parse_judgement
from resources.models.heuristic import HeuristicProvider
from resources.models.types import INVALID_RESPONSE, OK

SETTINGS = CallSettings(model="heuristic-v1")
PROVIDER = HeuristicProvider(poem_offline_answers())

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
    response = PROVIDER.complete(request)
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
    first = PROVIDER.complete(build_judge_request(POEM, image, "image/png", "a@g", SETTINGS))
    second = PROVIDER.complete(build_judge_request(other, image, "image/png", "b@g", SETTINGS))
    assert json.loads(first.text) == json.loads(second.text)


@pytest.mark.parametrize("change, words", [
    ({"image": None}, "needs the image"),
    ({"image": b"not an image at all"}, "could not be decoded"),
    ({"context": {"schema": JUDGE_SCHEMA_NAME, "item_id": "tang-001@g"}}, "poem_text"),
])
def test_poem_rubric_request_missing_its_inputs_is_refused(change, words):
    request = replace(build_judge_request(POEM, png(4), "image/png", "tang-001@g", SETTINGS), **change)
    response = PROVIDER.complete(request)
    assert response.status == INVALID_RESPONSE and response.text == "" and words in response.error
