"""Scoring closed-answer runs from stored answers, on hand-computed examples: ContextCanvas accuracy, Yes rate and
F1 (unreadable and missing answers are wrong and listed), the counterfactual pair figures and NCU (checked against the
counterfactual library's own ``pair_figures``), AesEval per format and indicator, and the poem judges."""

import json

import pytest

from assets.counterfactual.logic.edit_pairs import CounterfactualSpec, pair_figures
from assets.evaluation.logic.benchmark_items import aeseval_item, context_canvas_item, counterfactual_item, poem_item
from assets.evaluation.logic.choice_scoring import MISSING, NO_GOLD, metric_names, score_run
from assets.evaluation.logic.choice_answers import AMBIGUOUS, UNPARSED
from assets.evaluation.logic.choice_requests import NO_DESCRIPTION
from assets.poetry.logic.rubric import DIMENSION_KEYS

YES_NO = [{"id": "A", "text": "Yes"}, {"id": "B", "text": "No"}]


def _case(case_id, gold, options=YES_NO, neutral=""):
    row = {"id": case_id, "images": [], "image_sha256": [], "scenario": "A calm clinic wall.", "question": "Suitable?",
           "options": options, "neutral_description": neutral}
    return context_canvas_item(row, {"gold": {case_id: {"id": case_id, "gold": gold}} if gold else {}})


def _scores(run):
    out = {}
    for s in run.scores:
        out.setdefault(s.metric, {})[s.item_id] = s.value
    return out


def _figure(run, name):
    return next(a for a in run.aggregates if a.metric == name)


def test_context_canvas_accuracy_yes_rate_and_f1_count_unreadable_and_missing_answers_wrong():
    three = [{"id": "A", "text": "Image 1"}, {"id": "B", "text": "Image 2"}, {"id": "C", "text": "Neither"}]
    items = {i.id: i for i in (_case("c1", "A"), _case("c2", "B"), _case("c3", "B"), _case("c4", "A"), _case("c5", "C", three),
                               _case("c6", None))}
    answers = {"c1": {0: '{"answer": "A", "reason": "calm blues", "confidence": "high"}'},
               "c2": {0: "A"},                        # wrong
               "c3": {0: "Yes or No, hard to say"},   # ambiguous: wrong, no class
               "c5": {0: "C"}}                        # c4: no answer stored
    run = score_run("context_canvas", "image", items, answers, 500, 0)
    scores = _scores(run)
    assert scores["accuracy"] == {"c1": 1.0, "c2": 0.0, "c3": 0.0, "c4": 0.0, "c5": 1.0}
    assert scores["binary_accuracy"] == {"c1": 1.0, "c2": 0.0, "c3": 0.0, "c4": 0.0}  # c5 has three options
    assert scores["yes_rate"] == {"c1": 1.0, "c2": 1.0, "c3": 0.0, "c4": 0.0}
    assert run.skipped["c6"][0] == NO_GOLD
    problems = {a.item_id: a.problem for a in run.answers}
    assert problems == {"c1": None, "c2": None, "c3": AMBIGUOUS, "c4": MISSING, "c5": None}
    # binary: gold A, B, B, A; answered A, A, None, None -> F1 A: tp 1, fp 1, fn 1 = 0.5; F1 B: tp 0 -> 0
    assert _figure(run, "f1:A").mean == pytest.approx(0.5)
    assert _figure(run, "f1:B").mean == 0.0
    assert _figure(run, "macro_f1").mean == pytest.approx(0.25)
    assert "macro_f1" in metric_names("context_canvas", run.scores, run.aggregates)


def test_a_condition_the_case_cannot_take_leaves_it_out_with_the_reason():
    items = {i.id: i for i in (_case("c1", "A", neutral="Pale blue shapes on a grey ground."), _case("c2", "B"))}
    run = score_run("context_canvas", "neutral", items, {"c1": {0: "A"}, "c2": {0: "B"}}, 100, 0)
    assert _scores(run)["accuracy"] == {"c1": 1.0}
    assert run.skipped["c2"][0] == NO_DESCRIPTION


def _pair(pair_id, original="B", edited="A"):
    row = {"id": pair_id, "case_id": "ctx-1", "scenario": "A hospice family room.", "proposed_assessment": None,
           "question": "Suitable?", "options": YES_NO, "original_image": None, "edited_image": None,
           "original_image_sha256": "0" * 64, "edited_image_sha256": "1" * 64, "original_gold": original,
           "edited_gold": edited, "decisive_cue": "the red flare"}
    return counterfactual_item(row, {})


def test_counterfactual_pair_figures_and_ncu_by_hand_and_as_the_library_counts_them():
    items = {i.id: i for i in (_pair("p1"), _pair("p2"), _pair("p3"), _pair("p4"), _pair("p5"))}
    answers = {"p1": {0: "B", 1: "A"},   # correct update: both right
               "p2": {0: "A", 1: "B"},   # reverse update: both wrong
               "p3": {0: "B", 1: "B"},   # unchanged, right on the original
               "p4": {0: "A", 1: "A"},   # unchanged, wrong on the original
               "p5": {0: "B"}}           # the edit's answer is missing: wrong on it, unchanged
    run = score_run("counterfactual", "image", items, answers, 500, 0)
    s = _scores(run)
    assert s["ncu"] == {"p1": 1.0, "p2": -1.0, "p3": 0.0, "p4": 0.0, "p5": 0.0}
    assert s["pair_accuracy"] == {"p1": 1.0, "p2": 0.0, "p3": 0.0, "p4": 0.0, "p5": 0.0}
    assert s["original_accuracy"] == {"p1": 1.0, "p2": 0.0, "p3": 1.0, "p4": 0.0, "p5": 1.0}
    assert s["edit_accuracy"] == {"p1": 1.0, "p2": 0.0, "p3": 0.0, "p4": 1.0, "p5": 0.0}
    assert sum(s["unchanged_correct"].values()) == 2 and sum(s["unchanged_wrong"].values()) == 1
    assert s["yes_rate"]["p4"] == 1.0 and s["yes_rate"]["p1"] == 0.5
    # NCU = 100 (C - R) / pairs = 100 (1 - 1) / 5 = 0; the library agrees on every figure
    figures = pair_figures([(CounterfactualSpec(k, "cue", "", "B", "A"), v.get(0, ""), v.get(1, "")) for k, v in answers.items()])
    assert figures.net_correct_update == 100 * sum(s["ncu"].values()) / 5 == 0.0
    assert figures.pair_accuracy == 100 * sum(s["pair_accuracy"].values()) / 5
    assert (figures.correct, figures.reverse) == (1, 1)
    assert [a.problem for a in run.answers if a.item_id == "p5"] == [None, MISSING]


def _question(qid, fmt, indicator, answer, options=(), answer_box=None):
    metadata = json.dumps({"canvas": {"width": 200, "height": 100}, "elements": []})
    row = {"question_id": qid, "format": fmt, "indicator": indicator, "question": "Indicator under review: x. What it"
           " means: y.\nQ", "options": list(options), "answer": answer, "answer_box": answer_box, "box_units": "pixels",
           "metadata": metadata, "image_sha256": "2" * 64, "image": None}
    return aeseval_item(row, {})


def test_aeseval_scores_each_format_per_indicator_and_overall_as_the_mean_over_indicators():
    boxes = ["[0, 0, 100, 50]", "None", "[100, 50, 200, 100]", "[0, 50, 100, 100]"]
    items = {i.id: i for i in (
        _question("j1", "aesthetic_judgment", "layout_balance", "yes", ["yes", "no"]),
        _question("j2", "aesthetic_judgment", "layout_balance", "no", ["yes", "no"]),
        _question("j3", "aesthetic_judgment", "color_contrast", "no", ["yes", "no"]),
        _question("r1", "region_selection", "color_contrast", "C", boxes, [100, 50, 200, 100]),
        _question("l1", "precise_localisation", "layout_balance", "None"),
        _question("l2", "precise_localisation", "layout_balance", "[0, 0, 100, 100]", answer_box=[0, 0, 100, 100]))}
    answers = {"j1": {0: "yes"}, "j2": {0: "yes"}, "j3": {0: "No."}, "r1": {0: "the flaw is in C"},
               "l1": {0: "None"}, "l2": {0: "[0, 0, 100, 50]"}}
    run = score_run("aeseval", "full", items, answers, 300, 0)
    s = _scores(run)
    assert s["judgment_accuracy"] == {"j1": 1.0, "j2": 0.0, "j3": 1.0}
    assert s["judgment_accuracy:layout_balance"] == {"j1": 1.0, "j2": 0.0}
    assert s["region_accuracy"] == {"r1": 1.0}
    assert s["localisation_none_accuracy"] == {"l1": 1.0}
    assert s["localisation_iou"] == {"l2": pytest.approx(0.5)}  # [0,0,100,50] inside [0,0,100,100]: 5000 / 10000
    # overall = mean over indicators: balance 0.5, contrast 1.0 -> 0.75 (the item mean would be 2/3)
    assert _figure(run, "judgment_accuracy_overall").mean == pytest.approx(0.75)


def _image(item_id, poem, human):
    return poem_item({"id": item_id, "poem_id": poem, "image_sha256": "3" * 64, "image": None,
                      "dimensions": {k: human for k in DIMENSION_KEYS}}, {"poems": {poem: {"text": "..."}}})


def test_poem_judges_score_mae_within_005_per_image_and_tau_per_poem():
    items = {i.id: i for i in (_image("a1", "p1", 0.9), _image("a2", "p1", 0.5), _image("a3", "p1", 0.1),
                               _image("b1", "p2", 0.8), _image("b2", "p2", 0.2))}

    def scores(value):
        return json.dumps({"scores": {k: value for k in DIMENSION_KEYS}})
    judge = {"a1": {0: scores(0.85)}, "a2": {0: scores(0.5)}, "a3": {0: scores(0.3)}, "b1": {0: scores(0.1)},
             "b2": {0: scores(0.6)}}
    run = score_run("poem_benchmark", "rubric", items, judge, 300, 0)
    s = _scores(run)
    assert s["mae"] == pytest.approx({"a1": 0.05, "a2": 0.0, "a3": 0.2, "b1": 0.7, "b2": 0.4})
    assert s["within_005"] == {"a1": 1.0, "a2": 1.0, "a3": 0.0, "b1": 0.0, "b2": 0.0}
    assert _figure(run, "kendall_tau").mean == pytest.approx(0.0)  # p1 ordered right (1), p2 reversed (-1)
    constant = score_run("poem_benchmark", "rubric", items, {k: {0: scores(0.5)} for k in items}, 300, 0)
    assert _figure(constant, "kendall_tau").mean is None  # a constant judge orders nothing
    unreadable = score_run("poem_benchmark", "rubric", items, {"a1": {0: "a fine picture"}}, 300, 0)
    assert [a.problem is not None for a in unreadable.answers if a.item_id == "a1"] == [True]
    assert {a.problem for a in unreadable.answers if a.item_id != "a1"} == {MISSING}


def test_a_benchmark_that_is_not_closed_is_refused():
    with pytest.raises(KeyError):
        score_run("photocritique", "capped_plain", {}, {}, 10, 0)


def test_unparsed_is_the_problem_of_an_answer_with_no_option():
    run = score_run("context_canvas", "image", {"c1": _case("c1", "A")}, {"c1": {0: "a lovely painting"}}, 10, 0)
    assert run.answers[0].problem == UNPARSED and run.answers[0].correct is False
