"""Sentence BLEU (Papineni et al. 2002) with sacrebleu, on sacrebleu's 0-100 scale."""

from __future__ import annotations

from typing import Any

from sacrebleu.metrics import BLEU

from assets.evaluation.logic.metrics.base import TextMetric

OFFLINE_TOKENIZERS = ("13a", "intl", "zh", "char", "none")  # the others fetch a model or need MeCab


class Bleu(TextMetric):
    """sacrebleu's sentence BLEU for each pair, one reference each, effective order on (as sentence BLEU needs:
    a short sentence has no 4-grams, and without it every such pair would score 0).

    The scale is sacrebleu's 0-100; an average of these per-pair scores is not corpus BLEU.
    """

    name = "bleu"
    libraries = ("sacrebleu",)

    def __init__(self, *, tokenize: str = "13a", smooth_method: str = "exp") -> None:
        if tokenize not in OFFLINE_TOKENIZERS:
            known = ", ".join(OFFLINE_TOKENIZERS)
            raise ValueError(f"bleu: tokenize {tokenize!r} is not one of the offline sacrebleu tokenizers {known}")
        if smooth_method not in BLEU.SMOOTH_DEFAULTS:
            known = ", ".join(BLEU.SMOOTH_DEFAULTS)
            raise ValueError(f"bleu: unknown smooth_method {smooth_method!r}; sacrebleu knows {known}")
        self._bleu = BLEU(tokenize=tokenize, smooth_method=smooth_method, effective_order=True)
        self._bleu.sentence_score("", [""])  # sacrebleu signs only once it has seen how many references a pair has
        self._signature = str(self._bleu.get_signature())
        self._tokenize = tokenize
        self._smooth_method = smooth_method

    def parameters(self) -> dict[str, Any]:
        return {
            "library": "sacrebleu",
            "level": "sentence",
            "scale": "0-100",
            "tokenize": self._tokenize,
            "smooth_method": self._smooth_method,
            "effective_order": True,
            "lowercase": False,
            "signature": self._signature,
        }

    def _score_pairs(self, candidates: list[str], references: list[str]) -> list[float]:
        return [
            self._bleu.sentence_score(candidate, [reference]).score
            for candidate, reference in zip(candidates, references)
        ]
