"""Scoring a run item by item with real metrics: the max-mapping over predictions × references, the human
leave-one-out baseline from the references alone, mean word counts, and items that cannot be scored."""

import pytest
from rouge_score import rouge_scorer

from assets.evaluation.logic.benchmark_items import BenchmarkItem, ItemImage
from assets.evaluation.logic.metrics.registry import build_metrics
from assets.evaluation.logic.item_statistics import WORDS
from assets.evaluation.logic.scoring import human_baseline, score_items

REFS = ("the horizon is tilted to the left", "lovely warm light on the hills", "crop the empty sky at the top")


def _item(item_id, references=REFS):
    return BenchmarkItem(item_id, {"title": "t", "body": ""}, (ItemImage("0" * 64, None),), references)


def _rouge(a, b):
    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True).score(b, a)["rougeL"].fmeasure


def _by(scores):
    return {(s.item_id, s.metric): s.value for s in scores}


def test_each_prediction_takes_its_best_reference_and_the_item_scores_their_mean():
    [rouge] = build_metrics({"rouge_l": {}})
    predictions = ["the horizon is tilted to the left", "warm light", "nothing in common here"]
    scores = _by(score_items([(_item("p1"), predictions)], [rouge], image_of=lambda item: None))
    best = [max(_rouge(p, r) for r in REFS) for p in predictions]
    assert best[0] == 1.0 and best[2] == 0.0
    assert scores[("p1", "rouge_l")] == pytest.approx(sum(best) / 3)
    assert scores[("p1", WORDS)] == pytest.approx((7 + 2 + 4) / 3)


def test_an_item_without_predictions_or_references_has_no_score_and_chunks_keep_items_apart():
    [rouge] = build_metrics({"rouge_l": {}})
    pairs = [(_item(f"p{n}"), ["lovely warm light on the hills"]) for n in range(70)]  # more than one chunk
    pairs += [(_item("none"), []), (_item("norefs", ()), ["text"])]
    scores = _by(score_items(pairs, [rouge], image_of=lambda item: None))
    assert all(scores[(f"p{n}", "rouge_l")] == 1.0 for n in range(70))
    assert scores[("none", "rouge_l")] is None and scores[("none", WORDS)] is None
    assert scores[("norefs", "rouge_l")] is None


def test_the_human_baseline_is_each_reference_against_the_others():
    [rouge] = build_metrics({"rouge_l": {}})
    scores = _by(human_baseline([_item("p1"), _item("one", REFS[:1])], [rouge]))
    expected = sum(max(_rouge(REFS[i], REFS[j]) for j in range(3) if j != i) for i in range(3)) / 3
    assert scores[("p1", "rouge_l")] == pytest.approx(expected)
    assert scores[("one", "rouge_l")] is None  # leave-one-out needs two references
    assert scores[("p1", WORDS)] == pytest.approx((7 + 6 + 7) / 3)
