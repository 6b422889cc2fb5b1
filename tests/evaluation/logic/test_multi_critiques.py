"""Splitting a multi-pass answer into its three critiques."""

import pytest

from assets.evaluation.logic.multi_critiques import (EMPTY_ANSWER, EMPTY_CRITIQUE, NO_CRITIQUES, NOT_A_LIST, NOT_TEXT,
                                                     WRONG_COUNT, parse_multi_critiques)


def test_the_asked_json_shape():
    result = parse_multi_critiques('{"critiques": ["Crop the left.", " Lift the shadows. ", "Lovely mood."]}')
    assert result.ok
    assert result.critiques == ("Crop the left.", "Lift the shadows.", "Lovely mood.")


def test_json_in_fences_after_prose_and_objects_in_the_list():
    answer = 'Sure! Here they are:\n```json\n{"critiques": [{"angle": "composition", "critique": "One."}, ' \
             '{"text": "Two."}, "Three."]}\n```'
    assert parse_multi_critiques(answer).critiques == ("One.", "Two.", "Three.")


def test_numbered_sections_when_there_is_no_json():
    answer = ("**Critique 1:** The horizon tilts.\n1.5 stops under, too.\n\n"
              "**Critique 2**: Warm the colours.\n2. and soften the vignette\n\n"
              "### 3. Try a lower angle.")
    result = parse_multi_critiques(answer)
    assert result.ok, result.detail
    assert result.critiques == ("The horizon tilts.\n1.5 stops under, too.",
                                "Warm the colours.\n2. and soften the vignette", "Try a lower angle.")
    assert parse_multi_critiques("1. First.\n2) Second.\n3: Third.").critiques == ("First.", "Second.", "Third.")


@pytest.mark.parametrize("answer, problem", [
    ("", EMPTY_ANSWER),
    ('{"critiques": ["One.", "Two."]}', WRONG_COUNT),
    ('{"critiques": ["One.", "", "Three."]}', EMPTY_CRITIQUE),
    ('{"critiques": "One. Two. Three."}', NOT_A_LIST),
    ('{"critiques": ["One.", 2, "Three."]}', NOT_TEXT),
    ("Nice photo, great light, crop a little.", NO_CRITIQUES),
    ('{"comments": ["a", "b", "c"]}', NO_CRITIQUES),
])
def test_problems_have_codes(answer, problem):
    assert parse_multi_critiques(answer).problem == problem


def test_what_was_found_comes_back_with_a_wrong_count():
    result = parse_multi_critiques('{"critiques": ["a", "b", "c", "d"]}')
    assert result.problem == WRONG_COUNT
    assert result.critiques == ("a", "b", "c", "d")
    assert parse_multi_critiques('{"critiques": ["a", "b"]}', expected=2).ok
