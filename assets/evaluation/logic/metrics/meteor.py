"""METEOR (Banerjee and Lavie 2005) with nltk, on whitespace tokens; WordNet synonyms only where nltk finds WordNet."""

from __future__ import annotations

from typing import Any

from nltk.translate.meteor_score import single_meteor_score

from assets.evaluation.logic.metrics.base import TextMetric

ALPHA, BETA, GAMMA = 0.9, 3.0, 0.5  # nltk's defaults, recorded so a change of default shows in the parameters


class _NoSynonyms:
    """Stands in for WordNet where its data is not installed: no word has synsets, so the synonym stage of the
    matcher finds nothing and METEOR runs on exact and stemmed matches alone."""

    def synsets(self, word: str) -> list[Any]:
        return []


def installed_wordnet() -> Any | None:
    """nltk's WordNet reader when its data is installed, else None (nltk only looks on disk here)."""
    from nltk.corpus import wordnet

    try:
        wordnet.ensure_loaded()
    except LookupError:
        return None
    return wordnet


class Meteor(TextMetric):
    """nltk's ``single_meteor_score`` per pair: lowercased, Porter stemmer, texts split on whitespace (so no punkt
    data is needed, and punctuation stays attached to its word).

    Without WordNet the scores can be lower than with it, never higher; ``parameters()["synonyms"]`` says which.
    """

    name = "meteor"
    libraries = ("nltk",)

    def __init__(self) -> None:
        wordnet = installed_wordnet()
        self._wordnet: Any = wordnet if wordnet is not None else _NoSynonyms()
        self._wordnet_version = None if wordnet is None else wordnet.get_version()

    def parameters(self) -> dict[str, Any]:
        return {
            "library": "nltk",
            "tokenizer": "whitespace",
            "preprocess": "lowercase",
            "stemmer": "porter",
            "synonyms": "none" if self._wordnet_version is None else "wordnet",
            "wordnet_version": self._wordnet_version,
            "alpha": ALPHA,
            "beta": BETA,
            "gamma": GAMMA,
        }

    def _score_pairs(self, candidates: list[str], references: list[str]) -> list[float]:
        return [
            single_meteor_score(
                reference.split(), candidate.split(), wordnet=self._wordnet, alpha=ALPHA, beta=BETA, gamma=GAMMA
            )
            for candidate, reference in zip(candidates, references)
        ]
