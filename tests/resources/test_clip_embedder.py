"""ClipEmbedder on a real open_clip ViT-S-32 at seeded random init, on CPU, with synthetic scenes.

Random weights know nothing about semantics, but they are a real forward pass
through the real preprocessing, which is what batching, normalisation, copy
detection and the weights-resolution errors depend on.
"""

from __future__ import annotations

import hashlib
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from resources.clip_embedding import ClipEmbedder, ClipUnavailable, _load_model, _resolve_weights, load_embedder
from assets.image_pool.logic.near_duplicates import similar_pairs
from resources.clip_embedder import ClipEmbedderResource
from resources.clip_pixels import PixelsFailed

MODEL = "ViT-S-32"
W, H = 256, 192
# Resized copies score >= 0.998 and distinct scenes <= 0.93 under this model; the threshold sits between.
COPY_THRESHOLD = 0.97


def _scenes() -> dict[str, Image.Image]:
    """Distinct structured scenes: gradients, periodic patterns, smooth and blocky noise, flat shapes."""
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    radius = np.hypot(xx - W / 2, yy - H / 2) / np.hypot(W / 2, H / 2)
    arrays = {
        "h_gradient": np.stack([xx / W, 1 - xx / W, np.full_like(xx, 0.3)], -1),
        "v_gradient": np.stack([np.full_like(yy, 0.8), yy / H, 0.5 * (1 - yy / H)], -1),
        "radial": np.stack([1 - radius, radius, 0.5 + 0.5 * np.cos(6 * radius)], -1),
        "stripes": np.stack([0.5 + 0.5 * np.sin((xx + yy) / 6)] * 3, -1) * np.array([1, 0.6, 0.2]),
        "checker": np.stack([(xx // 32 + yy // 32) % 2] * 3, -1) * np.array([0.1, 0.9, 0.9]),
        "smooth_noise": _upscaled_noise(rng, (6, 8), Image.BICUBIC),
        "block_noise": _upscaled_noise(rng, (H // 8, W // 8), Image.NEAREST),
    }
    scenes = {k: Image.fromarray((np.clip(v, 0, 1) * 255).astype(np.uint8)) for k, v in arrays.items()}
    shapes = Image.new("RGB", (W, H), (30, 40, 90))
    draw = ImageDraw.Draw(shapes)
    draw.ellipse((20, 20, 120, 120), fill=(250, 200, 0))
    draw.rectangle((140, 60, 240, 170), fill=(200, 30, 30))
    draw.polygon([(60, 180), (120, 130), (180, 180)], fill=(20, 220, 120))
    scenes["shapes"] = shapes
    return scenes


def _upscaled_noise(rng: np.random.Generator, shape: tuple[int, int], resample: int) -> np.ndarray:
    small = Image.fromarray(rng.integers(0, 256, (*shape, 3), dtype=np.uint8))
    return np.asarray(small.resize((W, H), resample), dtype=np.float32) / 255


def _half_size(image: Image.Image) -> Image.Image:
    return image.resize((image.width // 2, image.height // 2), Image.BICUBIC)


@pytest.fixture(scope="module")
def embedder() -> ClipEmbedder:
    return ClipEmbedderResource(model_name=MODEL, allow_random_init=True, batch_size=8, device="cpu").get_embedder()


@pytest.fixture(scope="module")
def scenes() -> dict[str, Image.Image]:
    return _scenes()


def test_embeddings_are_unit_norm_float32_rows(embedder: ClipEmbedder, scenes: dict[str, Image.Image]) -> None:
    emb = embedder.embed_images(scenes.values())
    assert embedder.model_key == "ViT-S-32@random-init(seed=0)"
    assert embedder.device == "cpu"
    assert embedder.dim == 384
    assert emb.shape == (len(scenes), 384)
    assert emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)


def test_batch_size_does_not_change_embeddings(embedder: ClipEmbedder, scenes: dict[str, Image.Image]) -> None:
    images = list(scenes.values())[:5]
    small_batches = load_embedder(MODEL, None, allow_random_init=True, batch_size=2, device="cpu")
    np.testing.assert_allclose(small_batches.embed_images(images), embedder.embed_images(images), atol=1e-5)


def test_empty_input_gives_empty_matrix(embedder: ClipEmbedder) -> None:
    emb = embedder.embed_images([])
    assert emb.shape == (0, 384) and emb.dtype == np.float32


def test_exact_copy_has_similarity_one(embedder: ClipEmbedder, scenes: dict[str, Image.Image]) -> None:
    original = scenes["shapes"]
    emb = embedder.embed_images([original, original.copy(), original.convert("RGBA")])
    assert float(emb[0] @ emb[1]) == pytest.approx(1.0, abs=1e-5)
    assert float(emb[0] @ emb[2]) == pytest.approx(1.0, abs=1e-5)  # preprocessing converts modes to RGB


def test_resized_copies_are_nearest_and_cluster_with_their_originals(
    embedder: ClipEmbedder, scenes: dict[str, Image.Image]
) -> None:
    names = list(scenes)
    originals = embedder.embed_images(scenes.values())
    halves = embedder.embed_images(_half_size(img) for img in scenes.values())
    nearest = np.argmax(halves @ originals.T, axis=1)
    assert [names[i] for i in nearest] == names

    keys = [*names, "shapes_copy", "shapes_half", "radial_half"]
    images = [*scenes.values(), scenes["shapes"].copy(), _half_size(scenes["shapes"]), _half_size(scenes["radial"])]
    pairs = list(similar_pairs(keys, embedder.embed_images(images), threshold=COPY_THRESHOLD, block_size=4))
    assert {frozenset((p.a, p.b)) for p in pairs} == {
        frozenset(("shapes", "shapes_copy")),
        frozenset(("shapes", "shapes_half")),
        frozenset(("shapes_copy", "shapes_half")),
        frozenset(("radial", "radial_half")),
    }


def test_repeated_calls_reuse_the_loaded_model() -> None:
    def resource(batch_size: int) -> ClipEmbedderResource:
        return ClipEmbedderResource(model_name=MODEL, allow_random_init=True, batch_size=batch_size, device="cpu")

    first, second = resource(3).get_embedder(), resource(5).get_embedder()
    assert second._model is first._model
    assert (first.batch_size, second.batch_size) == (3, 5)


def test_random_init_is_reproducible_and_leaves_global_rng_alone(
    embedder: ClipEmbedder, scenes: dict[str, Image.Image]
) -> None:
    images = list(scenes.values())[:3]
    _load_model.cache_clear()
    torch.manual_seed(123)
    expected_draw = torch.rand(3)
    torch.manual_seed(123)
    rebuilt = load_embedder(MODEL, None, allow_random_init=True, device="cpu")
    assert torch.equal(torch.rand(3), expected_draw)
    assert rebuilt._model is not embedder._model
    np.testing.assert_allclose(rebuilt.embed_images(images), embedder.embed_images(images), atol=1e-6)


def test_local_checkpoint_loads_with_content_hash_key(
    embedder: ClipEmbedder, scenes: dict[str, Image.Image], tmp_path: Path
) -> None:
    checkpoint = tmp_path / "vit-s-32.pt"
    torch.save(embedder._model.state_dict(), checkpoint)
    digest = hashlib.sha256(checkpoint.read_bytes()).hexdigest()

    loaded = ClipEmbedderResource(model_name=MODEL, pretrained=str(checkpoint), device="cpu").get_embedder()

    assert loaded.model_key == f"ViT-S-32@ckpt:sha256:{digest[:16]}"
    images = [scenes["checker"], scenes["stripes"]]
    np.testing.assert_allclose(loaded.embed_images(images), embedder.embed_images(images), atol=1e-6)


def test_nothing_configured_is_unavailable() -> None:
    with pytest.raises(ClipUnavailable, match="no CLIP weights are configured"):
        ClipEmbedderResource(device="cpu").get_embedder()


def test_missing_checkpoint_path_is_unavailable(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "weights.pt"
    with pytest.raises(ClipUnavailable) as info:
        ClipEmbedderResource(pretrained=str(missing), device="cpu").get_embedder()
    assert str(missing) in str(info.value)
    assert "does not exist" in str(info.value)


def test_uncached_tag_is_unavailable_without_download(tmp_path: Path) -> None:
    resource = ClipEmbedderResource(pretrained="laion2b_s34b_b79k", cache_dir=str(tmp_path), device="cpu")
    with pytest.raises(ClipUnavailable, match="'laion2b_s34b_b79k' of ViT-B-32 are not in the local cache") as info:
        resource.get_embedder()
    assert str(tmp_path) in str(info.value)


def test_cached_tag_file_is_found_offline_and_load_errors_are_explained(tmp_path: Path) -> None:
    # The Hugging Face cache layout hf_hub_download would have written for this tag.
    repo = tmp_path / "models--laion--CLIP-ViT-B-32-laion2B-s34B-b79K"
    commit = "0" * 40
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    weights = repo / "snapshots" / commit / "open_clip_model.safetensors"
    weights.parent.mkdir(parents=True)
    weights.write_bytes(b"not a safetensors file")

    resource = ClipEmbedderResource(pretrained="LAION2B-S34B-B79K", cache_dir=str(tmp_path), device="cpu")
    with pytest.raises(ClipUnavailable, match="could not load CLIP weights") as info:
        resource.get_embedder()
    assert str(weights) in str(info.value)


def test_unknown_architecture_is_unavailable() -> None:
    with pytest.raises(ClipUnavailable, match="'ViT-Nope' is not a built-in open_clip architecture"):
        ClipEmbedderResource(model_name="ViT-Nope", allow_random_init=True, device="cpu").get_embedder()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_gpu_is_unavailable() -> None:
    with pytest.raises(ClipUnavailable, match="torch sees 0 CUDA GPU"):
        ClipEmbedderResource(model_name=MODEL, allow_random_init=True, device="cuda").get_embedder()


def test_non_image_input_is_rejected_with_its_position(embedder: ClipEmbedder, scenes: dict[str, Image.Image]) -> None:
    with pytest.raises(ValueError, match="image 8 could not be embedded: TypeError: the loader gave a ndarray"):
        embedder.embed_images([*scenes.values(), np.zeros((8, 8, 3), np.uint8)])


@pytest.fixture(scope="module")
def scene_files(scenes: dict[str, Image.Image], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The scenes as files (JPEG and PNG), with one file that is not an image among them."""
    folder = tmp_path_factory.mktemp("scenes")
    files = {}
    for n, (name, image) in enumerate(scenes.items()):
        files[name] = folder / f"{name}.{'png' if n % 2 else 'jpg'}"
        image.save(files[name])
        if n == 3:
            files["corrupt"] = folder / "corrupt.jpg"
            files["corrupt"].write_bytes(b"\xff\xd8\xff\xe0 not really a JPEG")
    return files


def _work(files: dict[str, Path]) -> list[tuple[str, partial]]:
    return [(name, partial(Image.open, path)) for name, path in files.items()]


def test_stream_isolates_a_corrupt_file_and_matches_in_process_embeddings(
    embedder: ClipEmbedder, scene_files: dict[str, Path]
) -> None:
    """Decoded in two worker processes, batches of 3: the corrupt file is exactly one failure, in its place, and
    every other file embeds as it does when decoded here."""
    results = list(load_embedder(MODEL, None, allow_random_init=True, batch_size=3, device="cpu")
                   .embed_stream(_work(scene_files), decode_workers=2))

    assert [key for key, _ in results] == list(scene_files)
    failures = {key: value for key, value in results if isinstance(value, PixelsFailed)}
    assert list(failures) == ["corrupt"]
    assert failures["corrupt"].error_type == "OSError"  # a JPEG header, then nothing to decode
    good = [name for name in scene_files if name != "corrupt"]
    with_rgb = [Image.open(scene_files[name]).convert("RGB") for name in good]
    expected = embedder.embed_images(with_rgb)
    np.testing.assert_allclose(np.stack([value for key, value in results if key != "corrupt"]), expected, atol=1e-5)


def test_worker_and_in_process_decoding_give_the_same_embeddings(
    embedder: ClipEmbedder, scene_files: dict[str, Path]
) -> None:
    in_process = dict(embedder.embed_stream(_work(scene_files), decode_workers=0))
    in_workers = dict(embedder.embed_stream(_work(scene_files), decode_workers=2))
    assert in_process.keys() == in_workers.keys()
    for key, value in in_process.items():
        if isinstance(value, PixelsFailed):
            assert str(in_workers[key]) == str(value)
        else:
            np.testing.assert_array_equal(in_workers[key], value)


def test_failures_keep_their_places_even_filling_a_whole_batch(
    embedder: ClipEmbedder, scenes: dict[str, Image.Image]
) -> None:
    images = list(scenes.values())[:4]
    work = [(f"good{i}", lambda image=image: image) for i, image in enumerate(images)]
    work.insert(1, ("bad_early", partial(Image.open, "/nonexistent/early.png")))
    work += [("bad_late1", dict), ("bad_late2", dict)]  # after the last good batch: a batch of failures only

    results = list(load_embedder(MODEL, None, allow_random_init=True, batch_size=2, device="cpu")
                   .embed_stream(work, decode_workers=0))

    assert [key for key, _ in results] == [key for key, _ in work]
    assert [key for key, value in results if isinstance(value, PixelsFailed)] == ["bad_early", "bad_late1", "bad_late2"]
    assert dict(results)["bad_early"].error_type == "FileNotFoundError"
    np.testing.assert_allclose(np.stack([v for k, v in results if k.startswith("good")]), embedder.embed_images(images),
                               atol=1e-5)


def test_stream_preprocessing_is_open_clips_own(embedder: ClipEmbedder, scenes: dict[str, Image.Image]) -> None:
    """uint8 pixels from the workers, normalised on the device, give what open_clip's transform gives."""
    images = list(scenes.values())
    model, preprocess, _ = _load_model(MODEL, _resolve_weights(MODEL, None, True, None), 0, "cpu")  # the embedder's
    with torch.inference_mode():
        reference = torch.nn.functional.normalize(model.encode_image(torch.stack([preprocess(i) for i in images])), dim=-1)
    np.testing.assert_allclose(embedder.embed_images(images), reference.numpy(), atol=1e-6)


def test_no_configured_weights_are_known_without_importing_torch():
    """The pool's CLIP step asks the resource first: with no weights configured it says why, and torch (seconds and
    about a gigabyte to import) is never loaded in that process."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from resources.clip_embedder import ClipEmbedderResource, NO_WEIGHTS\n"
            "import assets.image_pool.clip_dedup\n"
            "assert ClipEmbedderResource().unavailable() == NO_WEIGHTS\n"
            "assert ClipEmbedderResource(allow_random_init=True).unavailable() is None\n"
            "print('torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
