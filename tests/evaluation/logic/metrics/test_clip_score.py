"""CLIPScore on a tiny random open_clip model saved to disk, on CPU, without any download."""

from __future__ import annotations

import json
from io import BytesIO
from pathlib import Path

import pytest
from PIL import Image

from assets.evaluation.logic.metrics.base import MetricUnavailable
from assets.evaluation.logic.metrics.clip_score import ClipScore

# "12345" has a negative cosine with its image under the tiny model; the last text exceeds its 16 tokens.
TEXTS = ["a warm sunset over the sea", "12345", "", "a red square " * 30]


def _png(colour: tuple[int, int, int], size: tuple[int, int] = (40, 30)) -> bytes:
    buffer = BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


IMAGES = [_png((250, 120, 20)), _png((20, 60, 240)), _png((0, 0, 0)), _png((200, 10, 10), (64, 64))]


def _raw_cosines(directory: Path) -> list[float]:
    """The cosines computed with open_clip directly, for the non-blank pairs."""
    import open_clip
    import torch

    model, preprocess = open_clip.create_model_from_pretrained(f"local-dir:{directory}")
    tokenizer = open_clip.get_tokenizer(f"local-dir:{directory}")
    kept = [i for i, text in enumerate(TEXTS) if text.strip()]
    pixels = torch.stack([preprocess(Image.open(BytesIO(IMAGES[i])).convert("RGB")) for i in kept])
    with torch.inference_mode():
        image = model.eval().encode_image(pixels, normalize=True)
        text = model.encode_text(tokenizer([TEXTS[i] for i in kept]), normalize=True)
    return (image * text).sum(-1).tolist()


def test_clip_score_is_hessels_weighted_floored_cosine(tiny_clip: Path):
    metric = ClipScore(model_path=str(tiny_clip), device="cpu", batch_size=2)
    assert metric.needs_image and metric.unavailable() is None
    scores = metric.score_images(IMAGES, TEXTS)
    raw = _raw_cosines(tiny_clip)
    assert min(raw) < 0  # so the floor is exercised
    cosines = iter(raw)
    expected = [0.0 if not text.strip() else 2.5 * max(next(cosines), 0.0) for text in TEXTS]
    assert scores == pytest.approx(expected, abs=1e-5)
    assert metric.score_images(IMAGES, TEXTS) == pytest.approx(scores, abs=1e-6)
    assert metric.score_images([], []) == []


def test_weight_one_without_floor_is_the_raw_cosine(tiny_clip: Path):
    metric = ClipScore(model_path=str(tiny_clip), device="cpu", weight=1, floor_at_zero=False)
    scores = metric.score_images(IMAGES, TEXTS)
    assert [s for s, text in zip(scores, TEXTS) if text.strip()] == pytest.approx(_raw_cosines(tiny_clip), abs=1e-5)
    assert metric.parameters()["weight"] == 1.0 and metric.parameters()["floor_at_zero"] is False


def test_parameters_name_the_weights(tiny_clip: Path):
    parameters = ClipScore(model_path=str(tiny_clip)).parameters()
    json.dumps(parameters)
    assert parameters["weights"] == str(tiny_clip) and parameters["architecture"] == "open_clip_config.json"
    assert parameters["model_cfg"]["embed_dim"] == 16
    assert ClipScore().parameters()["model"] == "timm/vit_base_patch32_clip_224.openai"


def test_a_checkpoint_file_loads_into_the_named_architecture(tiny_clip: Path, tmp_path: Path):
    import open_clip

    architecture = json.loads((tiny_clip / "open_clip_config.json").read_text(encoding="utf-8"))["model_cfg"]
    (tmp_path / "aesforge-tiny-clip.json").write_text(json.dumps(architecture), encoding="utf-8")
    open_clip.add_model_config(tmp_path / "aesforge-tiny-clip.json")  # registers the architecture by file name
    checkpoint = tiny_clip / "open_clip_pytorch_model.bin"
    from_file = ClipScore(model_path=str(checkpoint), model_name="aesforge-tiny-clip", device="cpu")
    assert from_file.parameters()["architecture"] == "aesforge-tiny-clip"
    assert from_file.parameters()["model_cfg"] == architecture
    from_dir = ClipScore(model_path=str(tiny_clip), device="cpu")
    assert from_file.score_images(IMAGES, TEXTS) == pytest.approx(from_dir.score_images(IMAGES, TEXTS), abs=1e-6)
    unknown = ClipScore(model_path=str(checkpoint), model_name="ViT-Nope")
    assert "model_name 'ViT-Nope' is not a built-in open_clip architecture" in unknown.unavailable()


def test_missing_or_unsuitable_weights_make_it_unavailable(tmp_path: Path):
    absent = ClipScore(model_path=str(tmp_path / "absent"))
    assert absent.unavailable().startswith(f"clip_score: no weights at {tmp_path / 'absent'}")
    with pytest.raises(MetricUnavailable, match="no weights at"):
        absent.score_images(IMAGES[:1], TEXTS[:1])
    assert "has no open_clip_config.json" in ClipScore(model_path=str(tmp_path)).unavailable()
    not_cached = ClipScore(cache_dir=str(tmp_path)).unavailable()
    assert "'timm/vit_base_patch32_clip_224.openai' is neither a local path nor a model in" in not_cached


def test_undecodable_image_bytes_are_named(tiny_clip: Path):
    metric = ClipScore(model_path=str(tiny_clip), device="cpu")
    with pytest.raises(ValueError, match="image 1 cannot be decoded"):
        metric.score_images([IMAGES[0], b"not an image"], TEXTS[:2])
    with pytest.raises(ValueError, match="1 images but 2 texts"):
        metric.score_images(IMAGES[:1], TEXTS[:2])
