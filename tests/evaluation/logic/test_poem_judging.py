import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytest import approx

from assets.evaluation.logic.poem_judging import (
    PHASE1_CHANCE,
    SPLIT_KEY,
    JudgePrediction,
    bootstrap_mean_tau,
    calibration_mean,
    dimension_spearman,
    held_out_poems,
    image_agreement,
    judge_errors,
    per_poem_tau,
    phase1_accuracy,
    read_judge_prediction,
)
from assets.poetry.logic.rubric import DIMENSION_KEYS
from assets.poetry.logic.stats import judge_agreement
from warehouse.ids import digest_of

POEMS = [f"tang-{i:03d}" for i in range(1, 41)]


# --- the split ------------------------------------------------------------------------------------------------------


def test_split_is_deterministic_whatever_the_order_and_repeats():
    held = held_out_poems(POEMS, 0.2, seed=7)
    shuffled = POEMS[::-1] + POEMS[:5]
    random.Random(3).shuffle(shuffled)
    assert held_out_poems(shuffled, 0.2, seed=7) == held
    assert held_out_poems(iter(POEMS), 0.2, seed=7) == held
    assert len(held) == 8 and held <= set(POEMS)
    # the rule: the poems whose keyed digest sorts first
    assert held == set(sorted(POEMS, key=lambda p: digest_of([SPLIT_KEY, 7, p]))[:8])
    assert len({held_out_poems(POEMS, 0.2, seed=s) for s in range(5)}) > 1  # the seed matters


def test_split_size_is_the_ceiling_with_one_poem_on_each_side():
    assert len(held_out_poems(POEMS[:10], 0.2, 0)) == 2
    assert len(held_out_poems(POEMS[:10], 0.25, 0)) == 3       # ceil(2.5)
    assert len(held_out_poems(POEMS[:30], 0.1, 0)) == 3        # 0.1 * 30 is 3.0000000000000004 in floats
    assert len(held_out_poems(POEMS[:2], 0.01, 0)) == 1        # at least one held out
    assert len(held_out_poems(POEMS[:2], 0.99, 0)) == 1        # at least one left to calibrate on
    assert held_out_poems(POEMS[:1], 0.5, 0) == {POEMS[0]}
    assert held_out_poems([], 0.5, 0) == frozenset()


def test_adding_a_poem_moves_at_most_one_old_poem_across_the_cut():
    for n in range(2, 40):
        before = held_out_poems(POEMS[:n], 0.3, 1)
        after = held_out_poems(POEMS[: n + 1], 0.3, 1)
        assert len((before ^ after) - {POEMS[n]}) <= 1


@pytest.mark.parametrize("fraction", [0, 1, 0.0, 1.0, -0.1, 1.5, math.nan, True, "0.2", None])
def test_split_fraction_must_lie_strictly_inside_zero_one(fraction):
    with pytest.raises(ValueError, match="fraction"):
        held_out_poems(POEMS, fraction, 0)


def test_split_rejects_bad_ids_and_seeds():
    with pytest.raises(ValueError, match="poem ids"):
        held_out_poems(["tang-001", ""], 0.5, 0)
    with pytest.raises(ValueError, match="seed"):
        held_out_poems(POEMS, 0.5, "0")


# --- reading answers ------------------------------------------------------------------------------------------------


def _rubric_answer(**options):
    letters = dict.fromkeys(DIMENSION_KEYS, "a") | options
    return {"scores": {k: {"option": letters[k], "reason": "Seen in the image."} for k in DIMENSION_KEYS}}


def test_rubric_schema_answer_is_read_by_the_rubric_parser():
    # safety null (could not tell), emotional resonance c (not applicable), core imagery b (0.67), the rest a (1.0)
    text = "Here you go:\n```json\n" + json.dumps(_rubric_answer(safety=None, emotional_resonance="c",
                                                                 core_imagery="B")) + "\n```"
    p = read_judge_prediction(text)
    assert p.problem is None and not p.scalar
    assert p.scores["safety"] is None and p.scores["emotional_resonance"] is None
    assert p.scores["core_imagery"] == 0.67 and p.scores["overall_impression"] == 1.0
    assert list(p.scores) == list(DIMENSION_KEYS)
    assert p.overall == approx((7 * 1.0 + 0.67) / 8)


def test_rubric_schema_problems_keep_the_rubric_reason_codes():
    assert read_judge_prediction(json.dumps(_rubric_answer(core_imagery="z"))).problem == "invalid_option"
    missing = _rubric_answer()
    del missing["scores"]["safety"]
    assert read_judge_prediction(json.dumps(missing)).problem == "missing_dimension"
    empty_reason = _rubric_answer()
    empty_reason["scores"]["safety"]["reason"] = " "
    assert read_judge_prediction(json.dumps(empty_reason)).problem == "empty_reason"


def test_plain_numbers_nested_or_flat():
    nested = read_judge_prediction('{"scores": {"safety": 1, "core_imagery": 0.67, "overall_impression": null}}')
    flat = read_judge_prediction('{"safety": 1, "core_imagery": 0.67, "overall_impression": null}')
    for p in (nested, flat):
        assert p.problem is None and not p.scalar
        assert p.scores["safety"] == 1.0 and p.scores["core_imagery"] == 0.67
        assert p.scores["overall_impression"] is None and p.scores["technical_quality"] is None  # left out: None
        assert p.overall == approx(0.835)
    assert read_judge_prediction('{"scores": {}}').overall is None


@pytest.mark.parametrize("text, problem", [
    ('{"scores": {"safety": 1, "beauty": 0.5}}', "unknown_dimension"),
    ('{"safety": 1, "beauty": 0.5}', "unknown_dimension"),
    ('{"scores": {"safety": 1.2}}', "out_of_range"),
    ('{"scores": {"safety": -0.01}}', "out_of_range"),
    ('{"scores": {"safety": NaN}}', "out_of_range"),
    ('{"scores": {"safety": true}}', "wrong_type"),
    ('{"scores": {"safety": "0.5"}}', "wrong_type"),
    ('{"scores": {"safety": [0.5]}}', "wrong_type"),
    ('{"scores": [0.5]}', "wrong_type"),
    ('{"scores": {"safety": {"option": "a", "reason": "ok"}, "core_imagery": 0.5}}', "missing_dimension"),
    ('{"score": true}', "wrong_type"),
    ('{"score": "high"}', "wrong_type"),
    ('{"score": Infinity}', "out_of_range"),
    ("1e400", "out_of_range"),
    ("NaN", "out_of_range"),
    ("", "empty_answer"),
    ("   \n", "empty_answer"),
    ("null", "not_a_prediction"),
    ("[0.5, 0.6]", "not_a_prediction"),
    ('"0.5"', "not_a_prediction"),
    ("true", "not_a_prediction"),
    ("{", "invalid_json"),
    ('{"scores": {"safety": 1', "invalid_json"),
    ("The image is lovely, I would say 0.7.", "invalid_json"),
    ("9" * 5000, "invalid_json"),
    ("[" * 100_000, "invalid_json"),
    ('{"a":' * 50_000, "invalid_json"),
    ('{"overall": 0.5}', "missing_field"),
    ("{}", "missing_field"),
])
def test_hostile_answers_give_a_problem_never_an_exception(text, problem):
    p = read_judge_prediction(text)
    assert p.problem == problem, p.detail
    assert p.detail and p.overall is None and not p.scalar and dict(p.scores) == {}


def test_scalar_answers():
    for text in ('{"score": 0.31}', "0.31", " 0.31\n", '```json\n{"score": 0.31, "reason": "x"}\n```'):
        p = read_judge_prediction(text)
        assert p == JudgePrediction.of_scalar(0.31) and p.scalar and dict(p.scores) == {} and p.problem is None
    assert read_judge_prediction("2.5").overall == 2.5              # a scalar metric keeps its own scale
    assert read_judge_prediction("10" * 200).problem == "out_of_range"  # an integer past float range
    assert read_judge_prediction(None).problem == "wrong_type"        # not even text


def test_prediction_is_immutable():
    p = read_judge_prediction('{"safety": 1}')
    with pytest.raises(TypeError):
        p.scores["safety"] = 0.0  # type: ignore[index]
    assert json.loads(json.dumps(p.as_dict()))["scores"]["safety"] == 1.0


_json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=10)
    | st.sampled_from(["a", "b", "z", None, 0.5]),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from([*DIMENSION_KEYS, "scores", "score", "option", "reason", "x"]), children,
                      max_size=5),
    max_leaves=20,
)


def _check(p: JudgePrediction) -> None:
    assert isinstance(p, JudgePrediction)
    if p.problem is not None:
        assert p.overall is None and dict(p.scores) == {} and isinstance(p.detail, str)
    elif p.scalar:
        assert dict(p.scores) == {} and math.isfinite(p.overall)
    else:
        assert list(p.scores) == list(DIMENSION_KEYS)
        present = [v for v in p.scores.values() if v is not None]
        assert all(0.0 <= v <= 1.0 for v in present)
        assert (p.overall is None) == (not present)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_reads_without_raising(text):
    _check(read_judge_prediction(text))


@settings(max_examples=300, deadline=None)
@given(_json_values, st.sampled_from(["{}", "```json\n{}\n```", "Answer: {} Thanks."]))
def test_any_json_value_reads_without_raising(value, frame):
    _check(read_judge_prediction(frame.replace("{}", json.dumps(value))))


# --- per-image agreement ---------------------------------------------------------------------------------------------

HUMAN_A = {"safety": 1.0, "technical_quality": 0.5, "core_imagery": 0.67, "overall_impression": 0.75,
           "emotional_resonance": None}
PRED_A = JudgePrediction.of_scores({"safety": 0.95, "technical_quality": 0.56, "core_imagery": 0.67,
                                    "overall_impression": 0.5, "emotional_resonance": 0.33, "artistic_style": 1.0})


def test_image_agreement_by_hand():
    # compared: safety |0.95 - 1| = 0.05 (1.0 - 0.95 is 0.050000000000000044: inside the slack), technical 0.06
    # (outside), core 0 (inside), overall 0.25 (outside); emotion (human N/A) and style (no human score) left out
    result = image_agreement(HUMAN_A, PRED_A)
    assert result == {"mae": approx(0.36 / 4), "within_005": 0.5, "n": 4}
    just_over = JudgePrediction.of_scores({"safety": 0.9499})
    assert image_agreement({"safety": 1.0}, just_over)["within_005"] == 0.0
    at_boundary = JudgePrediction.of_scores({"safety": 0.45})
    assert image_agreement({"safety": 0.5}, at_boundary)["within_005"] == 1.0


def test_image_agreement_without_dimensions():
    none = {"mae": None, "within_005": None, "n": 0}
    assert image_agreement(HUMAN_A, JudgePrediction.of_scalar(0.3)) == none
    assert image_agreement(HUMAN_A, read_judge_prediction("{")) == none
    assert image_agreement({"safety": None}, PRED_A) == none


def test_judge_errors_pooled_matches_judge_agreement_and_image_mean_weighs_images_equally():
    human = {"A": HUMAN_A, "B": {"safety": 1.0}, "C": {"safety": 0.5}, "D": {"safety": 0.5}}
    predicted = {"A": PRED_A, "B": JudgePrediction.of_scores({"safety": 0.5}), "C": JudgePrediction.of_scalar(0.9),
                 "E": JudgePrediction.of_scores({"safety": 0.5})}  # C scalar, D no prediction, E no human score
    result = judge_errors(human, predicted)
    # A: 4 dims, mae 0.09, within 0.5; B: 1 dim, 0.5, 0.0 -> pooled (0.36 + 0.5) / 5 and 2 / 5; per image means
    assert result.n_images == 2
    assert (result.pooled.n, result.pooled.mae, result.pooled.share_within) == (5, approx(0.172), approx(0.4))
    assert result.image_mae == approx(0.295) and result.image_within_005 == approx(0.25)
    reference = judge_agreement(human, {k: dict(p.scores) for k, p in predicted.items() if not p.scalar},
                                {"A": "p", "B": "p", "C": "q", "D": "q", "E": "q"})
    assert result.pooled == reference.overall
    assert json.loads(json.dumps(result.as_dict()))["n_images"] == 2


def test_judge_errors_averagings_coincide_with_equal_dimension_counts():
    human = {"A": {"safety": 1.0, "core_imagery": 0.67}, "B": {"safety": 0.5, "core_imagery": 0.0}}
    predicted = {"A": JudgePrediction.of_scores({"safety": 0.5, "core_imagery": 0.67}),
                 "B": JudgePrediction.of_scores({"safety": 0.5, "core_imagery": 0.33})}
    result = judge_errors(human, predicted)
    assert result.image_mae == approx(result.pooled.mae) == approx((0.5 + 0 + 0 + 0.33) / 4)
    assert result.image_within_005 == approx(result.pooled.share_within) == 0.5
    empty = judge_errors(human, {})
    assert empty.n_images == 0 and empty.pooled.n == 0 and empty.image_mae is None


# --- ranking ---------------------------------------------------------------------------------------------------------


def _rows(poem, human, predicted):
    return [(poem, f"{poem}@{i}", h, p) for i, (h, p) in enumerate(zip(human, predicted))]


def test_per_poem_tau_by_hand():
    rows = [
        *_rows("P", [0.9, 0.7, 0.5], [0.8, 0.6, 0.1]),      # same order: 1
        *_rows("Q", [0.9, 0.7, 0.5], [0.1, 0.2, 0.3]),      # reversed: -1
        *_rows("R", [0.9, 0.7, 0.5], [0.6, 0.8, 0.1]),      # pair (0, 1) discordant, 2 concordant: (2 - 1) / 3
        *_rows("T", [1.0, 0.5, 0.5], [0.9, 0.8, 0.7]),      # human tie on (1, 2): tau-b 2 / sqrt(2 * 3)
        *_rows("S", [0.9, 0.7, 0.5], [0.4, 0.4, 0.4]),      # constant prediction: undefined, left out
        *_rows("U", [0.9], [0.5]),                          # one image: left out
        *_rows("V", [0.9, None, 0.4], [0.5, 0.6, None]),    # missing values leave one image: left out
    ]
    taus = per_poem_tau(rows)
    assert taus == {"P": approx(1.0), "Q": approx(-1.0), "R": approx(1 / 3), "T": approx(2 / math.sqrt(6))}
    with pytest.raises(ValueError, match="twice"):
        per_poem_tau(_rows("P", [0.9, 0.7], [0.8, 0.6]) * 2)


def test_per_poem_tau_agrees_with_judge_agreement():
    rows = [*_rows("P", [0.9, 0.7, 0.5, 0.3], [0.8, 0.9, 0.4, 0.3]), *_rows("Q", [1.0, 0.5], [0.875, 0.5])]
    human = {item: {"overall_impression": h} for _, item, h, _ in rows}
    judged = {item: {"overall_impression": p} for _, item, _, p in rows}
    poem_of = {item: poem for poem, item, _, _ in rows}
    assert per_poem_tau(rows) == judge_agreement(human, judged, poem_of).taus == {"P": approx(2 / 3), "Q": 1.0}


def test_bootstrap_mean_tau():
    taus = {"P": 1.0, "Q": -1.0, "R": 1 / 3}
    mean, low, high = bootstrap_mean_tau(taus, resamples=2000, seed=3)
    assert mean == approx(1 / 9) and -1.0 <= low < mean < high <= 1.0
    assert bootstrap_mean_tau(dict(reversed(taus.items())), resamples=2000, seed=3) == (mean, low, high)
    assert bootstrap_mean_tau({"P": 0.5}, resamples=100, seed=0) == (0.5, 0.5, 0.5)
    assert bootstrap_mean_tau({}, resamples=100, seed=0) == (None, None, None)


# --- the calibration baseline ----------------------------------------------------------------------------------------


def test_calibration_mean_and_its_undefined_tau():
    human = {"a": {"safety": 1.0, "core_imagery": 0.5}, "b": {"safety": 0.5, "core_imagery": None},
             "c": {"safety": 0.0, "core_imagery": 1.0}, "d": {"safety": 1.0, "core_imagery": 0.0}}
    baseline = calibration_mean(human, ["a", "b", "a"])   # c, d held out
    assert baseline == {**dict.fromkeys(DIMENSION_KEYS), "safety": 0.75, "core_imagery": 0.5}
    prediction = JudgePrediction.of_scores(baseline)
    assert prediction.overall == approx(0.625)
    # every held-out image gets the same prediction: no poem has a tau, and the report shows none
    taus = per_poem_tau([("Q", item, 0.5 if item == "c" else 0.9, prediction.overall) for item in ("c", "d")])
    assert taus == {} and bootstrap_mean_tau(taus) == (None, None, None)
    errors = judge_errors({k: human[k] for k in ("c", "d")}, {"c": prediction, "d": prediction})
    # c: |0.75 - 0| + |0.5 - 1| ; d: |0.75 - 1| + |0.5 - 0| -> (0.75 + 0.5 + 0.25 + 0.5) / 4
    assert errors.pooled.mae == approx(0.5) and errors.pooled.share_within == 0.0
    assert calibration_mean(human, []) == dict.fromkeys(DIMENSION_KEYS)
    with pytest.raises(ValueError, match="zz"):
        calibration_mean(human, ["a", "zz"])


# --- section 4 -------------------------------------------------------------------------------------------------------


def test_dimension_spearman_by_hand():
    o = "overall_impression"
    images = [
        {o: 1.0, "core_imagery": 0.67, "safety": 1.0, "emotional_resonance": 0.0, "quality": 0.9},
        {o: 0.75, "core_imagery": 1.0, "safety": 1.0, "emotional_resonance": None, "quality": 0.8},
        {o: 0.5, "core_imagery": 0.33, "safety": 1.0, "emotional_resonance": 0.33, "quality": 0.7},
        {o: 0.25, "core_imagery": 0.0, "safety": 1.0, "emotional_resonance": 1.0, "quality": 0.6},
        {o: None, "core_imagery": 1.0, "safety": 0.0, "quality": 0.1},  # no target: left out
    ]
    result = dimension_spearman(images)
    assert o not in result and list(result)[:2] == ["safety", "technical_quality"]
    # core ranks 3 4 2 1 against overall 4 3 2 1: d^2 = 2, rho = 1 - 6 * 2 / (4 * 15)
    assert result["core_imagery"] == (approx(0.8), 4)
    assert result["safety"] == (None, 4)                  # constant column
    assert result["emotional_resonance"] == (approx(-1.0), 3)
    assert result["quality"] == (approx(1.0), 4)
    assert result["technical_quality"] == (None, 0) and result["recognizability"] == (None, 0)
    by_quality = dimension_spearman(images, target="quality")
    assert by_quality[o] == (approx(1.0), 4) and "quality" not in by_quality
    with pytest.raises(ValueError, match="target"):
        dimension_spearman(images, target="beauty")


def test_phase1_accuracy_per_group_with_qc_failures_left_out():
    def row(group, correct, passed=True, phase="recognizability"):
        return {"rater_group": group, "phase": phase, "correct": correct, "passed_qc": passed, "item": "poem_choice"}

    annotations = [
        row("crowd", True), row("crowd", True), row("crowd", False),
        row("crowd", True, passed=False), row("crowd", True, passed=None),   # failed QC: left out
        row("crowd", None, phase="rubric"),                                   # phase 2: left out
        row("expert", True), row("expert", True), row("expert", None),        # no outcome: left out
    ]
    result = phase1_accuracy(annotations)
    assert result == {"crowd": (2, 3, approx(2 / 3)), "expert": (2, 2, 1.0)}
    assert PHASE1_CHANCE == 0.25
    assert phase1_accuracy([]) == {}
