"""CritiqueCanvas response statistics (Table S5) on hand-made answers whose words, dimension hits, density, Prompt
Align and Generic Top-3 are counted by hand; the lexicon stays on the construction pipeline's ten dimensions."""

import re

import pytest

from assets.critique_canvas.logic.answers import DIMENSION_IDS
from assets.evaluation.logic.response_stats import (
    DIMENSION_NAMES,
    DIMENSIONS,
    LEXICON,
    LEXICON_DIGEST,
    CritiqueAnswer,
    dimensions_in,
    model_response_stats,
    response_stats,
    term_hits,
    words,
)

GENERIC = "Describe this painting."
# 12 words; composition x2 (composition, balanced), color x1 (palette), emotion x2 (calm, mood).
R1 = "The composition is balanced, and the warm palette gives a calm mood."
# 11 words; lighting x2 (light, shadows), emotion x1 (tense).
R2 = "Soft light falls from the left and the shadows feel tense."
# 5 words; the heading is not matched, so only color x1 (colours).
R3 = "## Brushwork\nThe colours are vivid."
# 9 words; visual appeal (striking), content (subject), technique (in focus), composition (background).
R4 = "A striking subject, in focus against a soft background."


def test_lexicon_covers_the_construction_dimensions():
    assert DIMENSIONS == DIMENSION_IDS
    assert set(DIMENSION_NAMES) == set(DIMENSIONS)
    for dimension, terms in LEXICON.items():
        for term in terms:
            assert re.fullmatch(r"[a-z]+( [a-z]+)*", term), (dimension, term)
    assert re.fullmatch(r"[0-9a-f]{64}", LEXICON_DIGEST)


def test_words_are_lowercase_letter_runs():
    assert words("Three figures, 3 dogs; eye-catching!") == ["three", "figures", "dogs", "eye", "catching"]


def test_terms_are_matched_longest_first_and_repeats_count():
    assert term_hits("Leading lines pull the eye; the lines are thin.") == {"composition": 1, "lines_and_brushstrokes": 1}
    assert term_hits("An eye-catching, eye catching poster.") == {"visual_appeal": 2}
    assert term_hits("A long exposure blurs the water. Exposure is fine.") == {"technique": 1, "lighting": 1}
    assert term_hits("The colour harmony and the harmony of forms.") == {"color": 1, "visual_appeal": 1}


def test_headings_and_link_targets_are_not_matched():
    assert term_hits("# Composition\n### Lighting\nA quiet [figure](https://example.org/light-style).") == {
        "content_and_narrative": 1}
    assert term_hits("#lighting is a hashtag, not a heading") == {"lighting": 1}


def test_one_response_by_hand():
    stats = response_stats(R1, GENERIC, ("word " * 10, "word " * 14))
    assert (stats.words, stats.reference_words, stats.term_hits) == (12, 12.0, 5)
    assert stats.dimensions == ("composition", "color", "emotion")
    assert (stats.focus, stats.aligned) == ((), None)

    focused = response_stats(R2, "How does the lighting shape the mood?")
    assert (focused.words, focused.term_hits, focused.reference_words) == (11, 3, None)
    assert focused.focus == ("lighting", "emotion") and focused.aligned is True

    missed = response_stats(R3, "Comment on the brushwork.")
    assert (missed.words, missed.term_hits, missed.dimensions) == (5, 1, ("color",))
    assert missed.focus == ("lines_and_brushstrokes",) and missed.aligned is False


def test_model_statistics_by_hand():
    answers = [
        CritiqueAnswer("m", GENERIC, R1, ("word " * 10, "word " * 14)),
        CritiqueAnswer("m", "How does the lighting shape the mood?", R2, ("word " * 22,)),
        CritiqueAnswer("m", "Comment on the brushwork.", R3),
        CritiqueAnswer("m", "What do you think of this photo?", R4),
    ]
    stats = model_response_stats(answers)["m"]
    assert (stats.n, stats.n_focused, stats.n_generic) == (4, 2, 2)
    assert stats.avg_length == pytest.approx(37 / 4)
    assert stats.len_ref == pytest.approx((12 + 11) / (12 + 22))
    assert stats.dim_hits == pytest.approx((3 + 2 + 1 + 4) / 4)
    assert stats.density == pytest.approx(100 * 13 / 37)
    assert stats.prompt_align == 0.5
    # Composition twice; ties at one go in lexicon order.
    assert stats.generic_top3 == ("composition", "content_and_narrative", "color")
    assert stats.generic_counts["composition"] == 2
    assert stats.as_dict()["lexicon_digest"] == LEXICON_DIGEST


def test_generic_top3_ignores_focused_questions():
    lighting = "Describe the lighting."
    answers = [CritiqueAnswer("n", lighting, "Hard light and deep shadows.")] * 3 + [
        CritiqueAnswer("n", GENERIC, "A stylized, painterly style.")]
    stats = model_response_stats(answers)["n"]
    assert stats.generic_top3 == ("style",)
    assert stats.generic_counts == {"style": 1}
    assert stats.prompt_align == 1.0


def test_models_are_kept_apart_and_empty_figures_are_none():
    stats = model_response_stats([CritiqueAnswer("b", GENERIC, ""), CritiqueAnswer("a", GENERIC, R4)])
    assert list(stats) == ["a", "b"]
    empty = stats["b"]
    assert (empty.avg_length, empty.len_ref, empty.density, empty.prompt_align, empty.generic_top3) == (
        0.0, None, None, None, ())


def test_question_focus_ignores_generic_critique_words():
    for question in ("Describe this image in detail.", "What is the overall aesthetic quality of this photograph?",
                     "How could this picture be improved?"):
        assert dimensions_in(question) == ()
