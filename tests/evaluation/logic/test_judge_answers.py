"""Reading pairwise and similarity judge answers, and combining the position-swapped verdicts."""

import pytest

from assets.evaluation.logic.judge_answers import (A, AMBIGUOUS, B, EMPTY_ANSWER, INCONSISTENT, INVALID_VALUE,
                                                   NO_ANSWER_FOUND, OUT_OF_RANGE, TIE, UNPARSED, combine_swapped,
                                                   parse_preference, parse_similarity)


@pytest.mark.parametrize("answer, verdict", [
    ('{"winner": "B", "reason": "It names the tilted horizon."}', B),
    ('```json\n{"winner": "a", "reason": "x"}\n```', A),
    ('Here is my verdict:\n{"Winner": "Critique B"}', B),
    ('{"winner": "tie", "reason": "Both are generic."}', TIE),
    ("A", A),
    ("**B**", B),
    ("(A).", A),
    ("Tie", TIE),
    ("Verdict: B", B),
    ("After reading both, Critique A is clearly more useful because it is specific.", A),
    ("I would prefer Critique B.", B),
    ("The winner is **A**.", A),
    ('{"winner": "B", "reason": "The crit', B),  # truncated JSON, but the verdict is stated before the cut
    ("Both critiques are equally useful.", TIE),
])
def test_preference_shapes(answer, verdict):
    parsed = parse_preference(answer)
    assert (parsed.value, parsed.problem) == (verdict, None), parsed.detail


def test_preference_keeps_the_judges_reason():
    assert parse_preference('{"winner": "A", "reason": "More specific."}').rationale == "More specific."


@pytest.mark.parametrize("answer, rating", [
    ('{"similarity": 2, "reason": "Only the crop advice is shared."}', 2),
    ('{"similarity": "4"}', 4),
    ('{"rating": 3.0}', 3),
    ("3", 3),
    ("**5**", 5),
    ("2/5", 2),
    ("Similarity: 1", 1),
    ("They overlap on lighting only. Rating: 2 (mostly different).", 2),
    ("I'd rate this a 4 out of 5.", 4),
    ("I would give it 3.", 3),
    ("Score (1-5): 4", 4),
])
def test_similarity_shapes(answer, rating):
    parsed = parse_similarity(answer)
    assert (parsed.value, parsed.problem) == (rating, None), parsed.detail


@pytest.mark.parametrize("parse, answer, problem", [
    (parse_preference, "", EMPTY_ANSWER),
    (parse_preference, "   \n", EMPTY_ANSWER),
    (parse_preference, "A critique should be specific; this one is a good start.", NO_ANSWER_FOUND),  # an article
    (parse_preference, "Critique A is better in tone, but Critique B is more useful overall.", AMBIGUOUS),
    (parse_preference, '{"winner": "C"}', INVALID_VALUE),
    (parse_preference, '{"winner": 1}', INVALID_VALUE),
    (parse_preference, "I cannot decide.", NO_ANSWER_FOUND),
    (parse_similarity, "", EMPTY_ANSWER),
    (parse_similarity, '{"similarity": 6}', OUT_OF_RANGE),
    (parse_similarity, '{"similarity": 0}', OUT_OF_RANGE),
    (parse_similarity, '{"similarity": 2.5}', INVALID_VALUE),
    (parse_similarity, '{"similarity": "high"}', INVALID_VALUE),
    (parse_similarity, '{"similarity": true}', INVALID_VALUE),
    (parse_similarity, "7", OUT_OF_RANGE),
    (parse_similarity, "Rating: 2. On reflection, Rating: 4.", AMBIGUOUS),
    (parse_similarity, "They are quite different.", NO_ANSWER_FOUND),
    (parse_similarity, "Score: 4.5", INVALID_VALUE),
])
def test_failures_have_a_reason(parse, answer, problem):
    parsed = parse(answer)
    assert parsed.value is None
    assert parsed.problem == problem


@pytest.mark.parametrize("original, swapped, outcome", [
    (A, B, A),            # A first, then (shown second) still chosen: a consistent A
    (B, A, B),
    (TIE, TIE, TIE),
    (A, A, INCONSISTENT),  # the first position won both times
    (B, B, INCONSISTENT),
    (A, TIE, TIE),
    (TIE, A, TIE),
    (None, A, UNPARSED),
    (A, None, UNPARSED),
])
def test_combining_position_swapped_verdicts(original, swapped, outcome):
    assert combine_swapped(original, swapped) == outcome


def test_combining_rejects_a_non_verdict():
    with pytest.raises(ValueError):
        combine_swapped("a", B)
