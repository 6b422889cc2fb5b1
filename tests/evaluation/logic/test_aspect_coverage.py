"""The seven-aspect keyword tagger: what must and must not count, and the versioning of its lists."""

import re

import pytest

from assets.evaluation.logic.aspect_coverage import (ASPECTS, TAGGER_VERSION, TERMS_DIGEST, aspects_of, coverage,
                                                     matched_terms, post_averaged_coverage, terms)

MUST_MATCH = {
    "composition": ["Try cropping tighter.", "The rule of thirds would help.", "Nice leading lines.",
                    "The horizon is tilted.", "Too much negative space on the left.", "Your eye is drawn to the sign.",
                    "The background is cluttered.", "Well balanced frame."],
    "lighting": ["The light is harsh.", "Beautifully backlit.", "Shoot during golden hour.", "Deep shadows.",
                 "A reflector would fill the face.", "The flash is too strong.", "Lovely side-lit portrait."],
    "color": ["The colours are muted.", "Great color palette.", "It looks oversaturated.", "Fix the white balance.",
              "There is a green cast.", "Would work in black and white.", "Skin tones look off.",
              "The image feels colorless."],
    "exposure": ["The sky is blown out.", "It is underexposed by a stop.", "Check the histogram.",
                 "Recover the highlights.", "A bit dark overall.", "Lift the shadows a little.",
                 "Limited dynamic range.", "Very over-exposed."],
    "technique": ["Focus missed the eyes.", "Shot at f/2.8 and ISO 3200.", "Use a tripod.", "Needs sharpening.",
                  "Lovely bokeh.", "A faster shutter speed would freeze it.", "Try a 50mm lens.",
                  "Edited in Lightroom.", "The vignette is heavy."],
    "mood": ["Very moody.", "The atmosphere is eerie.", "It evokes nostalgia.", "Such a calm scene.",
             "Dramatic sky.", "It has a dreamy, ethereal quality.", "A strong feeling of solitude."],
    "subject": ["The subject is lost.", "What is the focal point?", "A striking portrait.",
                "Her expression makes it.", "Great street photography.", "It tells a story.",
                "You captured the moment perfectly."],
}

# Word-boundary traps and other senses the lists must not take (aspect -> texts that must not tag it).
MUST_NOT_MATCH = {
    "technique": ["The isolated tree stands alone.", "I use Adobe software.", "The shop was shuttered."],
    "lighting": ["A lightweight camera bag.", "I edit in Lightroom.", "The forecast says rain."],
    "color": ["The stone wall.", "Credit where it is due.", "A broadcast tower.", "Reduce the clutter."],
    "composition": ["Fix the white balance.", "Adjust the colour balance."],
    "exposure": ["He stopped by.", "Every nice picture.", "Ten meters away."],
    "mood": ["I feel like the crop is off.", "Unhappy with it."],
    "subject": ["This is a nice picture.", "Mind the focal length."],
}


@pytest.mark.parametrize("aspect", ASPECTS)
def test_each_aspect_fires_on_its_vocabulary(aspect):
    for text in MUST_MATCH[aspect]:
        assert aspect in aspects_of(text), f"{aspect!r} not found in {text!r}"


@pytest.mark.parametrize("aspect", sorted(MUST_NOT_MATCH))
def test_word_boundaries_and_other_senses_do_not_fire(aspect):
    for text in MUST_NOT_MATCH[aspect]:
        assert aspect not in aspects_of(text), f"{aspect!r} wrongly found in {text!r}: {matched_terms(text)}"


def test_case_and_typographic_punctuation_do_not_matter():
    assert aspects_of("THE COLOUR IS OFF") == {"color"}
    assert "lighting" in aspects_of("A well–lit room")  # en dash between the words


def test_non_photographic_senses_are_accepted_by_design():
    # Documented: a keyword tagger counts mention; "shot" and "subject to" in another sense are accepted.
    assert "subject" in aspects_of("It is subject to change.")


def test_a_plain_compliment_covers_nothing():
    assert aspects_of("Great job, I love it!") == frozenset()
    assert aspects_of("") == frozenset()


def test_matched_terms_show_why():
    found = matched_terms("The horizon is crooked and the highlights are clipped.")
    assert found["composition"] == ("horizon", "crooked")
    assert found["exposure"] == ("highlights", "clipped")
    assert set(found) == {"composition", "exposure"}


def test_term_lists_are_fifteen_to_twenty_five_valid_patterns():
    listed = terms()
    assert tuple(listed) == ASPECTS
    for aspect, patterns in listed.items():
        assert 15 <= len(patterns) <= 25, aspect
        assert len(set(patterns)) == len(patterns), aspect
        for pattern in patterns:
            re.compile(pattern)


def test_coverage_rates_over_critiques_and_over_posts():
    critiques = ["Nice light.", "Crop it.", "Crop it, and the light is flat.", "Love it."]
    result = coverage(critiques)
    assert result.n == 4
    assert result.rates["lighting"] == pytest.approx(0.5)
    assert result.rates["composition"] == pytest.approx(0.5)
    assert result.rates["mood"] == 0.0
    assert (result.tagger_version, result.terms_digest) == (TAGGER_VERSION, TERMS_DIGEST)
    # Posts weigh the same: post 1 has 1 of 1 lighting, post 2 has 0 of 3 -> (1 + 0) / 2.
    by_post = post_averaged_coverage([["Nice light."], ["Crop it.", "Love it.", "Hm."], []])
    assert by_post.n == 2
    assert by_post.rates["lighting"] == pytest.approx(0.5)
    assert coverage([]).rates["color"] is None


def test_digest_names_the_lists():
    assert re.fullmatch(r"[0-9a-f]{64}", TERMS_DIGEST)
