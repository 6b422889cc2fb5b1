"""BLEURT (Sellam et al. 2020) as a transformers sequence-regression checkpoint: the pair in, one logit out."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assets.evaluation.logic.metrics.base import MetricUnavailable, TextMetric
from assets.evaluation.logic.metrics.learned import LearnedMetric, is_integer, require


@dataclass(kw_only=True, eq=False)
class Bleurt(LearnedMetric, TextMetric):
    """The checkpoint reads "[CLS] reference [SEP] candidate [SEP]" (BLEURT's order), truncated to ``max_length``
    tokens, and its single regression logit is the score: unbounded, and negative for loosely related texts.

    There is no default: the original BLEURT-20 is a TensorFlow checkpoint, and the usual PyTorch port
    (model_type "bleurt") needs the bleurt-pytorch package, which does not work with transformers 5.  Point
    ``model_path`` at a conversion that transformers' Auto classes load, with ``num_labels`` 1.
    """

    name = "bleurt"
    libraries = ("transformers", "torch")
    default_model = None
    weights_hint = "a transformers-format BLEURT-20 checkpoint (a sequence-classification model with one label)"

    max_length: int = 512  # tokens of reference and candidate together, as BLEURT-20 was trained

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self, "max_length", is_integer(self.max_length, 1), "a positive integer")

    def parameters(self) -> dict[str, Any]:
        return {
            "library": "transformers",
            **self._weights_parameters(),
            "input": "reference, candidate",
            "max_length": self.max_length,
            "output": "logit",
        }

    def _check_weights(self, weights: Path) -> None:
        import transformers
        from transformers.models.auto.modeling_auto import MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES

        config_file = weights / "config.json"
        if not config_file.is_file():
            raise MetricUnavailable(f"bleurt: {weights} has no config.json; expected {self.weights_hint}")
        model_type = json.loads(config_file.read_text(encoding="utf-8")).get("model_type")
        if model_type not in MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES:
            raise MetricUnavailable(
                f"bleurt: {weights} has config model_type {model_type!r}, which transformers "
                f"{transformers.__version__} cannot load as a sequence classifier; expected {self.weights_hint}"
            )
        labels = transformers.AutoConfig.from_pretrained(weights, local_files_only=True).num_labels
        if labels != 1:
            raise MetricUnavailable(f"bleurt: {weights} has {labels} labels; a BLEURT checkpoint regresses one")

    def _load(self, weights: Path, device: str) -> Any:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(weights, local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(weights, local_files_only=True)
        return tokenizer, model.to(device).eval()

    def _score_pairs(self, candidates: list[str], references: list[str]) -> list[float]:
        import torch

        tokenizer, model = self._loaded()
        scores: list[float] = []
        for start in range(0, len(candidates), self.batch_size):
            stop = start + self.batch_size
            inputs = tokenizer(
                references[start:stop], candidates[start:stop], padding=True, truncation=True,
                max_length=self.max_length, return_tensors="pt",
            ).to(model.device)
            with torch.inference_mode():
                scores += model(**inputs).logits[:, 0].float().cpu().tolist()
        return scores
