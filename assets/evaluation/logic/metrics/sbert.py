"""SBERT-cos (Reimers and Gurevych 2019): cosine between sentence-transformers embeddings of the two texts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assets.evaluation.logic.metrics.base import BLANK_TEXT_SCORE, TextMetric, is_blank, scores_with_blanks
from assets.evaluation.logic.metrics.learned import LearnedMetric, is_integer, require


@dataclass(kw_only=True, eq=False)
class SbertCosine(LearnedMetric, TextMetric):
    """Each text is encoded whole, as one sequence, with the pooling the model was saved with (mean pooling for
    all-mpnet-base-v2), L2-normalised; the score is the dot product, in [-1, 1]. Text beyond ``max_seq_length``
    tokens is cut off (unset: the model's own limit, 384 for all-mpnet-base-v2)."""

    name = "sbert"
    libraries = ("sentence-transformers", "transformers", "torch")
    default_model = "sentence-transformers/all-mpnet-base-v2"
    weights_hint = "a sentence-transformers model directory"

    max_seq_length: int | None = None  # unset: the model's own limit

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self, "max_seq_length", self.max_seq_length is None or is_integer(self.max_seq_length, 1),
                "a positive integer or unset")

    def parameters(self) -> dict[str, Any]:
        return {
            "library": "sentence-transformers",
            **self._weights_parameters(),
            "similarity": "cosine",
            "max_seq_length": self.max_seq_length,
            "blank_text_score": BLANK_TEXT_SCORE,
        }

    def _load(self, weights: Path, device: str) -> Any:
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(weights), device=device, local_files_only=True)
        if self.max_seq_length is not None:
            model.max_seq_length = self.max_seq_length
        return model.eval()

    def _score_pairs(self, candidates: list[str], references: list[str]) -> list[float]:
        model = self._loaded()

        def cosines(rest: list[int]) -> list[float]:
            encoded = [
                model.encode([texts[i] for i in rest], batch_size=self.batch_size, normalize_embeddings=True,
                             convert_to_numpy=True, show_progress_bar=False)
                for texts in (candidates, references)
            ]
            return (encoded[0] * encoded[1]).sum(axis=1).tolist()

        return scores_with_blanks([is_blank(c) or is_blank(r) for c, r in zip(candidates, references)], cosines)
