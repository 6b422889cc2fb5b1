"""CLIPScore (Hessel et al. 2021) with open_clip: how well a text matches its image, ``weight * max(cos, 0)``.

The model is loaded here rather than through ``resources.clip_embedding``: that module only embeds images, and
importing it runs ``resources/__init__``, which imports Dagster, which no ``logic`` module may.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

from assets.evaluation.logic.metrics.base import (
    BLANK_TEXT_SCORE,
    ImageTextMetric,
    MetricUnavailable,
    is_blank,
    scores_with_blanks,
)
from assets.evaluation.logic.metrics.learned import LearnedMetric, require

CONFIG_FILE = "open_clip_config.json"  # marks a directory that open_clip loads whole (its "local-dir:" schema)


@dataclass(kw_only=True, eq=False)
class ClipScore(LearnedMetric, ImageTextMetric):
    """Cosine between open_clip's normalised image and text embeddings, floored at 0 and times ``weight``
    (Hessel et al.'s w = 2.5). ``weight: 1`` with ``floor_at_zero: false`` gives the raw cosine instead.

    ``model_path`` is either a directory with open_clip_config.json and its weights (the form open_clip's
    checkpoints take on the Hugging Face hub; the default is OpenAI's ViT-B/32 there, looked up in the local
    cache) or one checkpoint file of the built-in architecture ``model_name``. Texts beyond the model's context
    length (77 tokens for ViT-B/32) are cut off.
    """

    name = "clip_score"
    libraries = ("open-clip-torch", "torch")
    default_model = "timm/vit_base_patch32_clip_224.openai"  # openai/clip-vit-base-patch32 in open_clip's format
    weights_hint = f"a directory holding {CONFIG_FILE} and weights, or an open_clip checkpoint file"

    model_name: str = "ViT-B-32-quickgelu"  # the architecture of a checkpoint file: OpenAI's ViT-B/32 by default
    weight: float = 2.5
    floor_at_zero: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        positive = isinstance(self.weight, (int, float)) and not isinstance(self.weight, bool) and self.weight > 0
        require(self, "weight", positive, "a positive number")
        require(self, "floor_at_zero", isinstance(self.floor_at_zero, bool), "true or false")
        self.weight = float(self.weight)

    def parameters(self) -> dict[str, Any]:
        weights = self.weights_path()
        from_file = weights is not None and weights.is_file()
        return {
            "library": "open-clip-torch",
            **self._weights_parameters(),
            "architecture": self.model_name if from_file else CONFIG_FILE,
            "model_cfg": None if weights is None else self._model_cfg(weights),  # shows e.g. quick_gelu
            "weight": self.weight,
            "floor_at_zero": self.floor_at_zero,
            "blank_text_score": BLANK_TEXT_SCORE,
        }

    def _model_cfg(self, weights: Path) -> dict[str, Any] | None:
        """The architecture the weights are loaded into, as open_clip reads it; None where it cannot be read."""
        if weights.is_file():
            import open_clip

            return open_clip.get_model_config(self.model_name)
        try:
            return json.loads((weights / CONFIG_FILE).read_text(encoding="utf-8"))["model_cfg"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _check_weights(self, weights: Path) -> None:
        import open_clip

        if weights.is_dir() and not (weights / CONFIG_FILE).is_file():
            raise MetricUnavailable(f"clip_score: {weights} has no {CONFIG_FILE}; expected {self.weights_hint}")
        if weights.is_file() and open_clip.get_model_config(self.model_name) is None:
            raise MetricUnavailable(
                f"clip_score: model_name {self.model_name!r} is not a built-in open_clip architecture "
                "(see open_clip.list_models())"
            )

    def _load(self, weights: Path, device: str) -> Any:
        import open_clip

        if weights.is_dir():
            model_name, checkpoint = f"local-dir:{weights}", None
        else:
            model_name, checkpoint = self.model_name, str(weights)
        model, preprocess = open_clip.create_model_from_pretrained(model_name, checkpoint, device=device)
        return model.eval(), preprocess, open_clip.get_tokenizer(model_name)

    def _score_image_pairs(self, images: list[bytes], texts: list[str]) -> list[float]:
        import torch

        model, preprocess, tokenizer = self._loaded()
        device = next(model.parameters()).device

        def scores(rest: list[int]) -> list[float]:
            cosines: list[float] = []
            for start in range(0, len(rest), self.batch_size):
                batch = rest[start:start + self.batch_size]
                pixels = torch.stack([preprocess(_decoded(images[i], i)) for i in batch]).to(device)
                tokens = tokenizer([texts[i] for i in batch]).to(device)
                with torch.inference_mode():
                    image_features = model.encode_image(pixels, normalize=True)
                    text_features = model.encode_text(tokens, normalize=True)
                cosines += (image_features * text_features).sum(dim=-1).float().cpu().tolist()
            return [self.weight * (max(cos, 0.0) if self.floor_at_zero else cos) for cos in cosines]

        return scores_with_blanks([is_blank(text) for text in texts], scores)


def _decoded(data: bytes, index: int) -> Any:
    from PIL import Image

    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"clip_score: image {index} is a {type(data).__name__}, not encoded image bytes")
    try:
        with Image.open(BytesIO(data)) as image:
            return image.convert("RGB")
    except (OSError, ValueError) as exc:
        raise ValueError(f"clip_score: image {index} cannot be decoded: {exc}") from exc
