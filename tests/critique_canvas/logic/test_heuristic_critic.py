"""The offline critic: plans, dialogues and verdicts that follow from measured images."""

import itertools
import json
import re

import pytest

from assets.critique_canvas.logic import heuristic_critic as hc
from assets.critique_canvas.logic.answers import DIMENSION_IDS, parse_dialogue, parse_plan, parse_verdicts
from assets.core.logic.image_measures import measure
from tests.core.logic.test_image_measures import (
    blocks,
    blurred,
    colour_bars,
    dark,
    grey_texture,
    horizon,
    overexposed,
    scene,
    square_at,
    to_image,
)

DOMAINS = ("photography", "painting", "virtual")
IMAGES = {
    "bright": overexposed, "dark": dark, "tilted": lambda: horizon(5), "level": lambda: horizon(0),
    "thirds": lambda: square_at(1 / 3, 1 / 3), "centred": lambda: square_at(0.5, 0.5), "colourful": colour_bars,
    "grey": grey_texture, "sharp": blocks, "blurred": lambda: blurred(blocks()), "plain": lambda: to_image(scene()),
}


@pytest.fixture(scope="module")
def measured():
    return {name: measure(build()) for name, build in IMAGES.items()}


def reasons(m, domain="photography"):
    return {entry["dimension"]: entry["reason"] for entry in hc.plan(m, domain)["dimensions"]}


def pairs_about(dialogue, dimension):
    return [p for p in dialogue["pairs"] if p["dimension"] == dimension and not p["improvement"]]


def improvement(dialogue):
    (pair,) = [p for p in dialogue["pairs"] if p["improvement"]]
    return pair


def judged(m, dialogue, domain="photography"):
    return parse_verdicts(json.dumps(hc.verdicts(m, domain, dialogue)), n_pairs=len(dialogue["pairs"]))


# --- planner ------------------------------------------------------------------------------------------------


def test_overexposed_image_plans_lighting_first_with_the_measured_clipping(measured):
    m = measured["bright"]
    plan = reasons(m)
    assert list(plan)[0] == "lighting"
    assert hc.pct(m.clipped_highlights) == "33%"
    assert "33% of the pixels are blown-out highlights" in plan["lighting"]
    exposure = pairs_about(hc.dialogue(m, "photography"), "lighting")[0]["answer"]
    assert "33% of the pixels are blown-out highlights" in exposure and "very bright" in exposure
    assert improvement(hc.dialogue(m, "photography"))["answer"].startswith("First, recover the highlights: 33%")


def test_dark_image_plans_lighting_from_its_low_luminance_and_suggests_brightening(measured):
    m = measured["dark"]
    plan = reasons(m)
    assert f"mean luminance {m.mean_luminance:.2f}" in plan["lighting"] and "very dark" in plan["lighting"]
    dialogue = hc.dialogue(m, "photography")
    exposure = pairs_about(dialogue, "lighting")[0]["answer"]
    assert "blown-out" not in exposure and "very dark" in exposure
    assert f"Brighten the midtones: the median tone is only {m.luminance_p50:.2f}".lower() in \
        improvement(dialogue)["answer"].lower()


def test_tilted_horizon_is_planned_and_straightening_is_suggested(measured):
    m = measured["tilted"]
    angle = float(re.search(r"tilted by (\d+\.\d)°", reasons(m)["composition"]).group(1))
    assert angle == pytest.approx(5.0, abs=1.0)
    fix = improvement(hc.dialogue(m, "photography"))
    assert fix["dimension"] == "composition"
    assert f"straighten the horizon: the dominant near-horizontal line is tilted by {angle:.1f}°" in fix["answer"]
    assert f"rotate the photograph {angle:.1f}° clockwise" in fix["answer"]
    assert "dominant line" in improvement(hc.dialogue(m, "painting"))["answer"]  # no "horizon" outside photography
    level = hc.dialogue(measured["level"], "photography", {"dimensions": [{"dimension": "composition", "reason": "x"}]})
    assert any("runs level" in p["answer"] for p in level["pairs"])
    assert "straighten" not in improvement(level)["answer"].lower()


def test_subject_on_a_thirds_point_versus_centred(measured):
    thirds, centred = measured["thirds"], measured["centred"]
    assert "from the upper-left thirds point" in reasons(thirds)["composition"]
    assert "centred" in reasons(centred)["composition"] and "symmetry is high (1.00" in reasons(centred)["composition"]
    plan = {"dimensions": [{"dimension": "composition", "reason": "placement"}]}
    assert "rule-of-thirds placement" in hc.dialogue(thirds, "photography", plan)["pairs"][0]["answer"]
    assert "a centred placement" in hc.dialogue(centred, "photography", plan)["pairs"][0]["answer"]


def test_colourful_versus_grey(measured):
    colourful, grey = measured["colourful"], measured["grey"]
    assert re.search(r"colourfulness is \d+ on the Hasler-Suesstrunk scale \(extremely colourful\)",
                     reasons(colourful)["color"], re.I)
    assert "near-monochrome" in reasons(grey)["color"]
    plan = {"dimensions": [{"dimension": "color", "reason": "palette"}]}
    bright_palette = hc.dialogue(colourful, "photography", plan)["pairs"][0]["answer"]
    grey_palette = hc.dialogue(grey, "photography", plan)["pairs"][0]["answer"]
    assert "green (17%)" in bright_palette and "magenta" in bright_palette
    assert "greyscale" in grey_palette and "grey (" in grey_palette
    assert "style" in reasons(colourful, "virtual") and "style" not in reasons(colourful, "photography")


def test_sharp_versus_blurred(measured):
    assert reasons(measured["sharp"])["technique"].startswith("Edges are crisp")
    assert reasons(measured["blurred"])["technique"].startswith("Detail is soft")
    fix = improvement(hc.dialogue(measured["blurred"], "photography"))["answer"]
    assert "firm up the detail" in fix and "more careful focus" in fix
    assert "firm up the detail" not in improvement(hc.dialogue(measured["sharp"], "photography"))["answer"]


def test_painting_emphasises_brushwork_where_edges_are_dense(measured):
    grey = measured["grey"]
    assert list(reasons(grey, "painting"))[0] == "lines_and_brushstrokes"
    assert list(reasons(grey, "photography"))[0] != "lines_and_brushstrokes"
    assert f"{hc.pct(grey.edge_density)} of the surface" in reasons(grey, "painting")["lines_and_brushstrokes"]


def test_different_images_get_different_plans_and_dialogues(measured):
    for (a, ma), (b, mb) in itertools.combinations(measured.items(), 2):
        if {a, b} == {"thirds", "centred"}:  # the same picture except where the square sits
            assert reasons(ma)["composition"] != reasons(mb)["composition"]
            continue
        assert hc.plan(ma, "photography") != hc.plan(mb, "photography"), (a, b)
        answers_a = {p["answer"] for p in hc.dialogue(ma, "photography")["pairs"]}
        answers_b = {p["answer"] for p in hc.dialogue(mb, "photography")["pairs"]}
        assert len(answers_a & answers_b) <= 1, (a, b)


# --- structure ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("domain", DOMAINS)
def test_outputs_validate_against_the_schema(measured, domain):
    for m in measured.values():
        plan = parse_plan(json.dumps(hc.plan(m, domain)))
        assert 1 <= len(plan.items) <= 5
        dialogue = parse_dialogue(json.dumps(hc.dialogue(m, domain, plan.as_dict())))
        assert len(dialogue.pairs) == 6 and dialogue.pairs[-1].improvement
        assert len({p.question for p in dialogue.pairs}) == 6
        assert set(plan.dimension_ids) <= {p.dimension for p in dialogue.pairs}
        verdicts = parse_verdicts(json.dumps(hc.verdicts(m, domain, dialogue.as_dict())))
        assert [v.pair for v in verdicts] == [1, 2, 3, 4, 5, 6]


def test_every_dimension_has_questions_and_answers_the_verifier_accepts(measured):
    halves = (DIMENSION_IDS[:5], DIMENSION_IDS[5:])
    for m, domain, dims in itertools.product(measured.values(), DOMAINS, halves):
        dialogue = hc.dialogue(m, domain, {"dimensions": [{"dimension": d, "reason": "given"} for d in dims]})
        assert [p["dimension"] for p in dialogue["pairs"][:5]] == list(dims)
        assert all(v.accepted for v in judged(m, dialogue, domain)), dialogue


def test_short_plans_are_filled_with_composition_and_visual_appeal(measured):
    dialogue = hc.dialogue(measured["plain"], "painting", {"dimensions": [{"dimension": "Lighting", "reason": "r"}]})
    assert [p["dimension"] for p in dialogue["pairs"][:5]] == ["lighting", "composition", "visual_appeal", "lighting",
                                                              "composition"]
    assert len({p["answer"] for p in dialogue["pairs"]}) == 6


def test_unknown_domain_is_refused(measured):
    with pytest.raises(ValueError, match="unknown domain"):
        hc.plan(measured["plain"], "sculpture")


# --- verifier -----------------------------------------------------------------------------------------------


def test_verifier_accepts_the_critics_own_dialogue(measured):
    for m, domain in itertools.product(measured.values(), DOMAINS):
        verdicts = judged(m, hc.dialogue(m, domain), domain)
        assert all(v.accepted for v in verdicts), [v for v in verdicts if not v.accepted]


@pytest.mark.parametrize(("source", "target"), [("bright", "dark"), ("dark", "bright"), ("colourful", "grey"),
                                                ("sharp", "blurred"), ("tilted", "thirds")])
def test_verifier_rejects_a_dialogue_written_for_a_contrasting_image(measured, source, target):
    dialogue = hc.dialogue(measured[source], "photography")
    verdicts = judged(measured[target], dialogue)
    assert sum(not v.accepted for v in verdicts) >= 5
    assert all(issue.startswith("visual_grounding") for v in verdicts for issue in v.blocking_issues)


def test_bright_exposure_claims_fail_on_the_dark_image(measured):
    pair = pairs_about(hc.dialogue(measured["bright"], "photography"), "lighting")[0]
    (verdict,) = judged(measured["dark"], {"pairs": [pair]})
    assert not verdict.visual_grounding and not verdict.accepted
    assert any("'bright'" in issue and "mean luminance is 0.12" in issue for issue in verdict.blocking_issues)
    assert any("33% of the pixels are blown" in issue for issue in verdict.blocking_issues)


def test_too_short_answer_fails_response_quality(measured):
    m = measured["plain"]
    dialogue = hc.dialogue(m, "photography")
    dialogue["pairs"][0]["answer"] = "Nice light."
    verdicts = judged(m, dialogue)
    assert not verdicts[0].response_quality and not verdicts[0].accepted
    assert any("too short" in issue for issue in verdicts[0].blocking_issues)
    assert all(v.accepted for v in verdicts[1:])


def test_question_not_about_the_image_fails_instruction_consistency(measured):
    m = measured["plain"]
    dialogue = hc.dialogue(m, "photography")
    dialogue["pairs"][1]["question"] = "What is the capital of France?"
    dialogue["pairs"][1]["dimension"] = None
    verdict = judged(m, dialogue)[1]
    assert not verdict.instruction_consistency and not verdict.accepted


def test_answer_that_ignores_its_question_fails_instruction_consistency(measured):
    m = measured["bright"]
    exposure = pairs_about(hc.dialogue(m, "photography"), "lighting")[0]["answer"]
    pair = {"question": "Which colours dominate the palette?", "answer": exposure, "dimension": "color",
            "improvement": False}
    (verdict,) = judged(m, {"pairs": [pair]})
    assert verdict.visual_grounding and not verdict.instruction_consistency
    assert any("color" in issue for issue in verdict.blocking_issues)


def test_generic_or_false_answers_fail_visual_grounding(measured):
    grey, level = measured["grey"], measured["level"]
    generic = {"question": "How does the composition work?", "dimension": "composition", "improvement": False,
               "answer": "This is a lovely and thoughtful composition that really works well for any viewer in every way."}
    wrong_colour = {"question": "Which colours dominate the palette?", "dimension": "color", "improvement": False,
                    "answer": "The palette is dominated by vivid red and orange tones that glow across the whole frame."}
    wrong_tilt = {"question": "Is the horizon level?", "dimension": "composition", "improvement": False,
                  "answer": "The horizon is clearly tilted, sloping across the frame so that the whole picture seems to slide."}
    no_generic, no_colour = judged(grey, {"pairs": [generic, wrong_colour]})
    assert not no_generic.visual_grounding and any("no visual evidence" in i for i in no_generic.blocking_issues)
    issues = " ".join(no_colour.blocking_issues)
    assert not no_colour.visual_grounding and "'vivid'" in issues and "mentions red" in issues and "mentions orange" in issues
    (no_tilt,) = judged(level, {"pairs": [wrong_tilt]})
    assert not no_tilt.visual_grounding and not no_tilt.accepted


def test_correct_free_text_with_negations_is_accepted(measured):
    pair = {"question": "How is the photograph lit?", "dimension": "lighting", "improvement": False,
            "answer": "The photograph is dark and low-key, with no blown highlights anywhere; mean luminance is about "
                      "0.12, which keeps the whole scene in deep shadow."}
    (verdict,) = judged(measured["dark"], {"pairs": [pair]})
    assert verdict.accepted, verdict
    (verdict,) = judged(measured["bright"], {"pairs": [pair]})
    assert not verdict.accepted


def test_improvement_pair_must_ask_for_and_propose_a_change(measured):
    m = measured["bright"]
    dialogue = hc.dialogue(m, "photography")
    dialogue["pairs"][5]["answer"] = ("The photograph has a mean luminance of 0.95 and 33% of the pixels are blown-out "
                                      "highlights across the upper third of the frame.")
    verdict = judged(m, dialogue)[5]
    assert verdict.visual_grounding and not verdict.instruction_consistency
    assert any("proposes no concrete change" in issue for issue in verdict.blocking_issues)



# --- paragraphs and per-pair verdicts ---------------------------------------------------------------------------------

@pytest.mark.parametrize("count", [1, 4, 12])
def test_paragraphs_are_valid_a_broad_one_first_then_planned_dimensions_in_order(measured, count):
    from assets.critique_canvas.logic.answers import parse_paragraphs

    for name, domain in itertools.product(("colourful", "dark", "tilted"), DOMAINS):
        plan = hc.plan(measured[name], domain)
        parsed = parse_paragraphs(json.dumps(hc.paragraphs(measured[name], domain, plan, count)), count)
        planned = [d["dimension"] for d in plan["dimensions"]]
        assert parsed.items[0].dimension is None and hc.MEDIUM[domain] in parsed.items[0].instruction
        assert [p.dimension for p in parsed.items[1:]] == [planned[i % len(planned)] for i in range(count - 1)]


def test_offline_paragraphs_are_judged_by_the_offline_per_pair_verifier_and_mostly_kept(measured):
    from assets.critique_canvas.logic.answers import parse_pair_verdict

    kept = []
    for name, domain in itertools.product(IMAGES, DOMAINS):
        m = measured[name]
        for paragraph in hc.paragraphs(m, domain, hc.plan(m, domain), 4)["paragraphs"]:
            pair = {"question": paragraph["instruction"], "answer": paragraph["response"],
                    "dimension": paragraph["dimension"], "improvement": False}
            verdict = parse_pair_verdict(json.dumps(hc.pair_verdict(m, domain, pair)), 7)  # valid: consistent decision
            assert verdict.reason and len(verdict.reasons) == 3
            kept.append(verdict.accepted)
    assert sum(kept) >= 0.8 * len(kept)


def test_the_per_pair_verdict_has_the_batch_checks_of_that_pair_alone_with_reasons(measured):
    from assets.critique_canvas.logic.answers import parse_pair_verdict

    m = measured["dark"]
    dialogue = hc.dialogue(m, "photography")
    wrong = {**dialogue["pairs"][0], "answer": "The image is bright and airy, with luminous highlights everywhere."}
    batch = parse_verdicts(json.dumps(hc.verdicts(m, "photography", {"pairs": [wrong]})), 1)[0]
    verdict = parse_pair_verdict(json.dumps(hc.pair_verdict(m, "photography", wrong)), 1)
    assert not verdict.accepted and len(verdict.blocking_issues) == len(batch.blocking_issues)
    assert [b.split(":")[0] for b in verdict.blocking_issues] == [b.split(":")[0] for b in batch.blocking_issues]
    assert (verdict.instruction_consistency, verdict.visual_grounding, verdict.response_quality) == (
        batch.instruction_consistency, batch.visual_grounding, batch.response_quality)
    assert dict(verdict.reasons)["visual_grounding"] != "" and verdict.reason.startswith("Rejected")
