import json

import pytest

from assets.poetry.logic.rubric import DIMENSION_KEYS
from assets.poetry.logic.stats import (
    METRICS,
    ErrorCell,
    MeanCell,
    bootstrap_ranks,
    image_scores,
    judge_agreement,
    model_means,
    within_one_agreement,
)
from assets.poetry.logic.survey_rows import QcParams, quality_control
from tests.poetry.logic.test_survey_rows import fixture_parse

approx = pytest.approx


def kept():
    # After QC of the fixture survey (see test_poem_survey.py): e1 x4, c1 on p1@gpt and p1@nano, c4 on p1@gpt.
    return quality_control(fixture_parse().responses, QcParams()).kept


# --- image scores -----------------------------------------------------------------------------------------


def test_image_scores_by_hand():
    scores = image_scores(kept())
    assert sorted(scores) == ["p1@gpt", "p1@nano", "p2@gpt", "p2@nano"]
    s = scores["p1@gpt"]
    # raters e1 (a a b a d a a b b b), c1 (a b a a e d a a c a), c4 (a a c b c b b c e c)
    assert s.n_raters == 3
    assert s.dims == approx({
        "safety": 1.0,                          # 1, 1, 1
        "technical_quality": 2.5 / 3,           # 1, .5, 1
        "ai_plausibility": 2 / 3,               # .67, 1, .33
        "text_integrity": 2 / 3,                # 1, 1, 0
        "scene_consistency": 0.165,             # .33, N/A, 0 -> (.33 + 0) / 2: the N/A is left out, not a 0
        "cultural_coherence": 0.75,             # 1, N/A, .5
        "artistic_style": 2.5 / 3,              # 1, 1, .5
        "core_imagery": 2 / 3,                  # .67, 1, .33
        "emotional_resonance": 0.335,           # .67, N/A, 0
        "overall_impression": 0.75,             # .75, 1, .5
    })
    assert s.n_applicable["scene_consistency"] == 2 and s.n_applicable["safety"] == 3
    # quality: (1 + 5/6 + 2/3 + 2/3 + .165 + .75 + 5/6 + 2/3 + .335 + .75) / 10 = 6.6667 / 10
    assert s.quality == approx(2 / 3)
    # phase 1: e1 A (right), c1 a (right), c4 B (wrong)
    assert s.recognizability == approx(2 / 3)
    assert s.text_integrity_survey == approx(2 / 3) and not s.text_integrity_labelled

    n = scores["p1@nano"]  # e1 (b a a a a c a a a a), c1 (a c b b b a b d f c)
    assert n.dims == approx({"safety": 0.75, "technical_quality": 0.5, "ai_plausibility": 0.835, "text_integrity": 0.5,
                             "scene_consistency": 0.835, "cultural_coherence": 0.5, "artistic_style": 0.75,
                             "core_imagery": 0.5, "emotional_resonance": 0.5, "overall_impression": 0.75})
    assert n.quality == approx(0.642)        # 6.42 / 10
    assert n.recognizability == 0.5          # e1 B right, c1 C wrong

    g = scores["p2@gpt"]  # e1 only: a b a a a a a a c b -> emotion c is N/A
    assert g.dims["emotional_resonance"] is None and g.n_applicable["emotional_resonance"] == 0
    # mean over the nine dimensions with a value: (1 + .5 + 1 + 1 + 1 + 1 + 1 + 1 + .75) / 9 = 8.25 / 9
    # (were N/A counted as 0 it would be 8.25 / 10)
    assert g.quality == approx(8.25 / 9)
    assert g.recognizability == 1.0

    d = scores["p2@nano"]  # e1 only: a c d a c b c d e e -> 1 0 0 1 0 .5 0 0 0 0
    assert d.quality == approx(0.25)


def test_text_integrity_label_replaces_the_survey_vote():
    scores = image_scores(kept(), {"p1@gpt": 0.0, "p2@gpt": 1.0, "unscored@gpt": 0.0})
    s = scores["p1@gpt"]
    assert s.dims["text_integrity"] == 0.0 and s.text_integrity_labelled
    assert s.text_integrity_survey == approx(2 / 3)
    assert s.quality == approx(0.6)  # (6.6667 - 2/3 + 0) / 10
    assert scores["p2@gpt"].quality == approx(8.25 / 9)  # the label agrees with the survey's 1.0
    assert not scores["p1@nano"].text_integrity_labelled and scores["p1@nano"].dims["text_integrity"] == 0.5
    assert "unscored@gpt" not in scores
    assert json.loads(json.dumps(s.as_dict()))["text_integrity_survey"] == approx(2 / 3)
    with pytest.raises(ValueError, match="p1@gpt"):
        image_scores(kept(), {"p1@gpt": 2.0})


# --- agreement --------------------------------------------------------------------------------------------


def test_within_one_agreement_by_hand():
    agreement = within_one_agreement(kept())
    # Levels (0 = best) on the two multi-rated images; p2 images have one rater and give no pair.
    # p1@gpt  e1: 0 0 1 0 2 0 0 1 1 1 | c1: 0 1 0 0 - - 0 0 - 0 | c4: 0 0 2 1 3 1 1 2 3 2
    # p1@nano e1: 1 0 0 0 0 2 0 0 0 0 | c1: 0 2 1 1 1 0 1 3 3 2
    expected = {
        "safety": (4, 4),               # all within one
        "technical_quality": (4, 3),    # nano 0 vs 2 fails
        "ai_plausibility": (4, 3),      # gpt c1-c4 0 vs 2 fails
        "text_integrity": (4, 1),       # binary: same answer needed; only gpt e1-c1 agree
        "scene_consistency": (2, 2),    # gpt: c1 said N/A, so only e1-c4 (2 vs 3); nano 0 vs 1
        "cultural_coherence": (2, 1),   # gpt: only e1-c4 (0 vs 1); nano 2 vs 0 fails
        "artistic_style": (4, 4),
        "core_imagery": (4, 2),         # gpt c1-c4 0 vs 2, nano 0 vs 3 fail
        "emotional_resonance": (2, 0),  # gpt e1-c4 1 vs 3 (e); nano 0 vs 3 (f)
        "overall_impression": (4, 2),   # gpt c1-c4 0 vs 2, nano 0 vs 2 fail
    }
    assert {k: (a.pairs, a.agreeing) for k, a in agreement.items()} == expected
    assert agreement["technical_quality"].rate == 0.75 and agreement["emotional_resonance"].rate == 0.0
    assert agreement["text_integrity"].as_dict() == {"pairs": 4, "agreeing": 1, "rate": 0.25}


def test_agreement_rate_is_none_without_pairs():
    single = [r for r in kept() if r.item_id.startswith("p2")]
    assert all(a.rate is None and a.pairs == 0 for a in within_one_agreement(single).values())


# --- model means ------------------------------------------------------------------------------------------


def test_model_means_by_hand():
    scores = image_scores(kept())
    means = model_means(scores, {item: item.split("@")[1] for item in scores})
    assert sorted(means) == ["gpt", "nano"] and list(means["gpt"]) == list(METRICS)
    assert means["gpt"]["quality"].mean == approx((2 / 3 + 8.25 / 9) / 2) and means["gpt"]["quality"].n == 2
    assert means["nano"]["quality"].mean == approx((0.642 + 0.25) / 2)
    assert means["gpt"]["recognizability"].mean == approx((2 / 3 + 1) / 2)
    assert means["nano"]["recognizability"].mean == approx(0.75)
    # emotion: gpt has p1 0.335 and p2 N/A -> mean over one image; nano (.5 + 0) / 2
    assert means["gpt"]["emotional_resonance"] == MeanCell(approx(0.335), 1)
    assert means["nano"]["emotional_resonance"] == MeanCell(approx(0.25), 2)
    assert means["gpt"]["scene_consistency"].mean == approx((0.165 + 1.0) / 2)
    with pytest.raises(ValueError, match="p2@nano"):
        model_means(scores, {"p1@gpt": "gpt", "p1@nano": "nano", "p2@gpt": "gpt"})


# --- bootstrap --------------------------------------------------------------------------------------------


def _poems(n, base, step):
    return {f"poem{i}": base + step * i for i in range(n)}


def test_bootstrap_clearly_better_model_ranks_first_always_and_is_deterministic():
    # poem difficulty varies a lot (0.0 .. 0.76) but "strong" beats "mid" beats "weak" on every poem: the paired
    # bootstrap keeps that order in every resample.
    quality = {"weak": _poems(20, 0.0, 0.04), "mid": _poems(20, 0.1, 0.04), "strong": _poems(20, 0.2, 0.04)}
    quality["weak"]["only-weak"] = 1.0  # not scored for every model: left out
    result = bootstrap_ranks(quality, n_resamples=2500, seed=7)
    assert result.n_poems == 20 and result.models == ("mid", "strong", "weak")
    assert result.observed_ranking == ("strong", "mid", "weak")
    assert result.observed_means["strong"] == approx(0.2 + 0.04 * 9.5)
    assert result.frequencies["strong"] == {1: 1.0, 2: 0.0, 3: 0.0}
    assert result.frequencies["weak"][3] == 1.0
    assert bootstrap_ranks(quality, n_resamples=2500, seed=7) == result
    assert json.loads(json.dumps(result.as_dict()))["frequencies"]["mid"]["2"] == 1.0


def test_bootstrap_close_models_split_and_frequencies_sum_to_one():
    # a and b alternate which is better: the ranking flips between resamples
    a = {f"p{i}": (0.6 if i % 2 else 0.4) for i in range(10)}
    b = {f"p{i}": (0.45 if i % 2 else 0.55) for i in range(10)}
    result = bootstrap_ranks({"a": a, "b": b}, n_resamples=3000, seed=1)
    first_a = result.frequencies["a"][1]
    assert 0.2 < first_a < 0.8
    assert first_a + result.frequencies["b"][1] == approx(1.0)
    assert result.frequencies["a"][1] + result.frequencies["a"][2] == approx(1.0)
    assert bootstrap_ranks({"a": a, "b": b}, n_resamples=3000, seed=2) != result  # another seed, another draw


def test_bootstrap_ties_go_to_the_name_first_and_errors():
    same = {"p1": 0.5, "p2": 0.7}
    result = bootstrap_ranks({"zeta": same, "alpha": dict(same)}, n_resamples=50, seed=0)
    assert result.observed_ranking == ("alpha", "zeta") and result.frequencies["alpha"][1] == 1.0
    with pytest.raises(ValueError, match="no poem"):
        bootstrap_ranks({"a": {"p1": 0.5}, "b": {"p2": 0.5}})
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_ranks({"a": {"p1": 0.5}}, n_resamples=0)


# --- judge agreement --------------------------------------------------------------------------------------


def test_judge_agreement_by_hand():
    o = "overall_impression"
    human = {
        "a1": {o: 0.9}, "a2": {o: 0.7}, "a3": {o: 0.5}, "a4": {o: 0.3},        # poem P
        "b1": {o: 1.0, "safety": 1.0}, "b2": {o: 0.5, "safety": None},         # poem Q
        "c1": {o: 0.5}, "c2": {o: 0.5},                                        # poem R: human tie
        "d1": {o: 1.0},                                                        # poem S: one image
        "h-only": {o: 0.1},                                                    # no judgement: ignored
    }
    judged = {
        "a1": {o: 0.8}, "a2": {o: 0.9}, "a3": {o: 0.4}, "a4": {o: 0.3},
        "b1": {o: 0.75, "safety": 1.0}, "b2": {o: 0.5, "safety": 0.5},
        "c1": {o: 0.52}, "c2": {o: 0.6},
        "d1": {o: 0.95},
    }
    poem_of = {"a1": "P", "a2": "P", "a3": "P", "a4": "P", "b1": "Q", "b2": "Q", "c1": "R", "c2": "R", "d1": "S"}
    result = judge_agreement(human, judged, poem_of)
    # |diff| overall: .1 .2 .1 0 | .25 0 | .02 .1 | .05 -> sum .82 over 9; safety: b1 0 (b2 human N/A) -> 1 pair
    # within 0.05: a4, b2, c1, d1 (1.0 - 0.95 = 0.050000000000000044, inside the 1e-9 slack), b1 safety -> 5 of 10
    assert result.overall == ErrorCell(10, approx(0.082), 0.5)
    assert result.per_dimension == {o: ErrorCell(9, approx(0.82 / 9), approx(4 / 9)), "safety": ErrorCell(1, 0.0, 1.0)}
    assert list(result.per_dimension) == ["safety", o]  # rubric order
    # P: human .9 .7 .5 .3, judged .8 .9 .4 .3 -> a1/a2 discordant, the other 5 pairs concordant: (5 - 1) / 6
    # Q: human 1.0 > .5, judged (.75 + 1)/2 = .875 > (.5 + .5)/2 = .5 -> 1.0;  R: human tie, tau-b undefined, skipped;
    # S: one image, skipped.
    assert result.taus == {"P": approx(2 / 3), "Q": approx(1.0)}
    assert result.mean_tau == approx(5 / 6) and result.n_poems == 2
    assert json.loads(json.dumps(result.as_dict()))["n_poems"] == 2
    with pytest.raises(ValueError, match="a1"):
        judge_agreement(human, judged, {k: v for k, v in poem_of.items() if k != "a1"})


def test_judge_agreement_empty():
    result = judge_agreement({}, {}, {})
    assert result.overall == ErrorCell(0, None, None) and result.mean_tau is None and result.n_poems == 0


def test_dimension_keys_cover_metrics():
    assert METRICS[: len(DIMENSION_KEYS)] == DIMENSION_KEYS


def test_bootstrap_result_does_not_depend_on_the_chunk_size(monkeypatch):
    import assets.poetry.logic.stats as poem_stats

    a = {f"p{i}": (0.6 if i % 3 else 0.4) for i in range(12)}
    b = {f"p{i}": (0.45 if i % 2 else 0.55) for i in range(12)}
    whole = bootstrap_ranks({"a": a, "b": b}, n_resamples=1000, seed=3)
    monkeypatch.setattr(poem_stats, "BOOTSTRAP_CHUNK", 7)  # 142 chunks of 7 and one of 6
    assert bootstrap_ranks({"a": a, "b": b}, n_resamples=1000, seed=3) == whole
