"""BERTScore F1 (Zhang et al. 2020) with the bert-score package, by default RoBERTa-large rescaled with its baseline."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from assets.evaluation.logic.metrics.base import (
    BLANK_TEXT_SCORE,
    SETTINGS_PREFIX,
    MetricUnavailable,
    TextMetric,
    is_blank,
    scores_with_blanks,
)
from assets.evaluation.logic.metrics.learned import LearnedMetric, is_integer, require

DEFAULT_MODEL_TYPE = "roberta-large"
LANG = "en"  # picks the rescale baseline; the critiques are English


@dataclass(kw_only=True, eq=False)
class BertScore(LearnedMetric, TextMetric):
    """Greedy token matching over one layer's contextual embeddings, no IDF weighting; the score is F1.

    ``model_type`` names the model the weights are (a bert_score model name such as "roberta-large" or
    "microsoft/deberta-base-mnli"): it picks the default layer and the rescale baseline that ships with bert_score.
    ``model_path`` says where the weights are; unset, ``model_type`` is looked up in the Hugging Face cache.
    With local weights, give ``model_type`` too, or else ``num_layers`` and ``rescale: false``.

    A model with no shipped baseline cannot be rescaled: with ``rescale`` on (the default) the metric is then
    unavailable rather than silently unrescaled, since the two scales differ widely; ``rescale: false`` scores it
    unrescaled and says so in the parameters.
    """

    name = "bertscore"
    libraries = ("bert-score", "transformers", "torch")
    default_model = DEFAULT_MODEL_TYPE
    weights_hint = "a transformers model directory"

    model_type: str | None = None  # unset: model_path when that is set, else roberta-large
    num_layers: int | None = None  # unset: bert_score's tuned layer for model_type
    rescale: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.model_type is None:
            self.model_type = self.default_model if self.model_path is None else self.model_path
        if self.model_path is None:  # the weights of the named model, from the Hugging Face cache
            self.model_path = self.model_type
        layer_ok = self.num_layers is None or is_integer(self.num_layers, 0)
        require(self, "num_layers", layer_ok, "a layer number (0: the embeddings) or unset")
        require(self, "rescale", isinstance(self.rescale, bool), "true or false")

    def layer(self) -> int | None:
        """The layer whose embeddings are matched: as configured, else bert_score's tuned default for the model."""
        if self.num_layers is not None:
            return self.num_layers
        from bert_score.utils import model2layers

        return model2layers.get(self.model_type)

    def baseline_file(self) -> Path | None:
        """bert_score's shipped rescale baseline for ``model_type``, where there is one."""
        spec = find_spec("bert_score")
        if spec is None or not spec.submodule_search_locations:
            return None
        baseline = Path(spec.submodule_search_locations[0], "rescale_baseline", LANG, f"{self.model_type}.tsv")
        return baseline if baseline.is_file() else None

    def parameters(self) -> dict[str, Any]:
        baseline = self.baseline_file() if self.rescale else None
        return {
            "library": "bert-score",
            **self._weights_parameters(),
            "model_type": self.model_type,
            "num_layers": self.layer(),
            "idf": False,
            "lang": LANG,
            "rescale": self.rescale,
            "baseline": None if baseline is None else f"{LANG}/{self.model_type}.tsv",
            "measure": "F1",
            "blank_text_score": BLANK_TEXT_SCORE,
        }

    def _check_weights(self, weights: Path) -> None:
        setting = f"{SETTINGS_PREFIX}.{self.name}"
        if self.layer() is None:
            raise MetricUnavailable(
                f"bertscore: bert_score has no default layer for model_type {self.model_type!r} "
                f"(set {setting}.num_layers, or {setting}.model_type to the model these weights are)"
            )
        if self.rescale and self.baseline_file() is None:
            raise MetricUnavailable(
                f"bertscore: bert_score ships no rescale baseline for model_type {self.model_type!r} "
                f"(set {setting}.model_type to the model these weights are, or {setting}.rescale to false)"
            )

    def _load(self, weights: Path, device: str) -> Any:
        from bert_score import BERTScorer

        baseline = self.baseline_file() if self.rescale else None
        return BERTScorer(
            model_type=str(weights),
            num_layers=self.layer(),
            lang=LANG,
            rescale_with_baseline=self.rescale,
            baseline_path=None if baseline is None else str(baseline),
            device=device,
            batch_size=self.batch_size,
        )

    def _score_pairs(self, candidates: list[str], references: list[str]) -> list[float]:
        scorer = self._loaded()

        def f1(rest: list[int]) -> list[float]:
            _, _, f_measure = scorer.score(
                [candidates[i] for i in rest], [references[i] for i in rest], batch_size=self.batch_size
            )
            return f_measure.tolist()

        return scores_with_blanks([is_blank(c) or is_blank(r) for c, r in zip(candidates, references)], f1)
