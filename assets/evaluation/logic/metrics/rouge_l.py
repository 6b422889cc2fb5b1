"""ROUGE-L (Lin 2004) with the rouge-score package: F-measure of the longest common subsequence, stemmed."""

from __future__ import annotations

from typing import Any

from rouge_score import rouge_scorer

from assets.evaluation.logic.metrics.base import TextMetric


class RougeL(TextMetric):
    """Sentence-level ROUGE-L F-measure, on rouge-score's own tokens (lowercased, runs of [a-z0-9], Porter-stemmed).

    rouge-score drops every other character, so text with no ASCII letters or digits scores 0.
    """

    name = "rouge_l"
    libraries = ("rouge-score", "nltk")  # nltk supplies the Porter stemmer

    def __init__(self) -> None:
        self._scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)

    def parameters(self) -> dict[str, Any]:
        return {
            "library": "rouge-score",
            "variant": "rougeL",
            "measure": "fmeasure",
            "use_stemmer": True,
            "tokenizer": "rouge-score default: lowercase, [a-z0-9]+ tokens",
        }

    def _score_pairs(self, candidates: list[str], references: list[str]) -> list[float]:
        return [
            float(self._scorer.score(target=reference, prediction=candidate)["rougeL"].fmeasure)
            for candidate, reference in zip(candidates, references)
        ]
