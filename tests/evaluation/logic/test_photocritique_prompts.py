"""Every photocritique template loads through the packaged prompt folder, renders, and matches the condition table."""

import string

import pytest

from assets.core.templates import PromptFolder, render
from assets.evaluation.logic.photocritique_conditions import (CONDITIONS, CRITIQUES_PER_POST, DECODING, LENGTH_MATCHED,
                                                              MULTI, PRIMARY, SINGLE, condition, sample_seeds)
from assets.evaluation.logic.multi_critiques import CRITIQUES_KEY

FOLDER = PromptFolder("assets.evaluation.prompts", "evaluation")
JUDGES = {"photocritique_pairwise_judge_v1": {"title", "body", "critique_a", "critique_b"},
          "photocritique_similarity_judge_v1": {"critique_a", "critique_b"}}
VALUES = {"title": "First try at night shots", "body": "Shot handheld, please be $harsh.",
          "critique_a": "Nice light.", "critique_b": "Crop the left side."}
NAMES = [name for name in FOLDER.names() if name.startswith("photocritique_")]


def test_every_condition_and_judge_has_its_file():
    assert sorted(NAMES) == sorted([c.template for c in CONDITIONS] + list(JUDGES))


@pytest.mark.parametrize("name", NAMES)
def test_each_template_loads_and_renders(name):
    template = FOLDER.load(name)
    assert template.id == f"evaluation/{name}"
    expected = JUDGES.get(name, {"title", "body"})
    assert template.placeholders == expected
    assert template.role == ("judge" if name in JUDGES else "candidate")
    system, user = render(template, **{k: VALUES[k] for k in expected})
    assert "$" not in system
    for key in expected:
        assert VALUES[key] in user  # a "$" inside a value is passed through, not read as a placeholder


@pytest.mark.parametrize("cond", CONDITIONS, ids=lambda c: c.name)
def test_templates_say_what_the_table_says(cond):
    template = FOLDER.load(cond.template)
    assert template.id == cond.template_id
    text = template.system + "\n" + template.user
    if cond.word_range is None:
        assert " words" not in text
    else:
        assert f"between {cond.word_range[0]} and {cond.word_range[1]} words" in text
    assert ("experienced photographer" in text) == cond.persona
    assert ("composition, lighting, colour" in text) == cond.aspect_hint
    assert (f'"{CRITIQUES_KEY}"' in text) == (cond.passes == MULTI)


def test_conditions_differ_only_where_they_should():
    def load(name: str) -> str:
        return FOLDER.load(f"photocritique_{name}_v1").system

    user = {FOLDER.load(c.template).user for c in CONDITIONS if c.passes == SINGLE and c.persona}
    assert len(user) == 1
    primary = load("capped_plain")
    assert load("capped_plain_30_60") == primary.replace("50 and 150", "30 and 60")
    assert load("capped_plain_20_45") == primary.replace("50 and 150", "20 and 45")
    hint = "Where they matter for this photo, you may consider its composition, lighting, colour, exposure, " \
           "technique, mood and subject.\n\n"
    assert load("capped_hinted").replace(hint, "") == primary
    assert load("capped_hinted") == load("open_hinted") + "\n\nKeep the critique between 50 and 150 words."


def test_condition_table():
    assert [c.name for c in CONDITIONS] == ["open_hinted", "capped_hinted", "capped_plain", "capped_plain_30_60",
                                            "capped_plain_20_45", "multi_hinted", "multi_plain", "unguided"]
    assert condition(PRIMARY).word_range == (50, 150)
    assert all(condition(name).word_range[1] <= 60 for name in LENGTH_MATCHED)
    assert (DECODING.temperature, DECODING.top_p, DECODING.seed) == (0.5, 0.9, 42)
    for cond in CONDITIONS:
        assert len(sample_seeds(cond)) == cond.calls_per_post
        assert cond.calls_per_post * (CRITIQUES_PER_POST if cond.passes == MULTI else 1) == CRITIQUES_PER_POST
        if cond.word_range:  # the budget leaves room for the longest asked critique (~1.35 tokens a word)
            assert cond.max_new_tokens >= 1.35 * cond.word_range[1]
    assert sample_seeds(condition(PRIMARY)) == (42, 43, 44)
    assert sample_seeds(condition("multi_plain")) == (42,)
    with pytest.raises(KeyError):
        condition("capped")


def test_judge_templates_ask_for_the_json_the_parsers_read():
    assert '"winner"' in FOLDER.load("photocritique_pairwise_judge_v1").system
    assert '"similarity"' in FOLDER.load("photocritique_similarity_judge_v1").system
    assert all(string.Template(FOLDER.load(n).system).is_valid() for n in NAMES)
