"""CLIP model inputs made with Pillow alone: the same pixels as open_clip's torchvision transform, item by item."""

from __future__ import annotations

import io
import pickle
from functools import partial

import numpy as np
import open_clip
import pytest
from PIL import Image

from resources.clip_pixels import InputGeometry, PixelsFailed, model_inputs

SIZES = [(300, 200), (200, 300), (224, 224), (100, 50), (1000, 225), (223, 225), (31, 400)]


def _image(width: int, height: int, mode: str, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    rgba = Image.fromarray(rng.integers(0, 256, (height, width, 4), dtype=np.uint8), "RGBA")
    return rgba.convert("RGB").quantize(64) if mode == "P" else rgba.convert(mode)


@pytest.mark.parametrize(
    ("size", "resize_mode", "interpolation", "fill"),
    [
        (224, "shortest", "bicubic", 0),
        ((224, 192), "shortest", "bicubic", 0),
        ((160, 224), "longest", "bilinear", 7),
        ((96, 128), "squash", "bicubic", 0),
    ],
)
@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "P"])
def test_geometry_gives_open_clips_pixels(size, resize_mode: str, interpolation: str, fill: int, mode: str) -> None:
    transform = open_clip.image_transform(
        size, is_train=False, resize_mode=resize_mode, interpolation=interpolation, fill_color=fill
    )
    until_tensor = transform.transforms[:-2]  # what comes before ToTensor and Normalize
    geometry = InputGeometry.from_preprocess_cfg(
        {"size": size, "resize_mode": resize_mode, "interpolation": interpolation, "fill_color": fill}
    )
    for n, (width, height) in enumerate(SIZES):
        image = _image(width, height, mode, seed=n)
        expected = image
        for step in until_tensor:
            expected = step(expected)
        np.testing.assert_array_equal(geometry(image), np.asarray(expected), err_msg=f"{width}x{height} {mode}")


def _png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    _image(width, height, "RGB", seed=width).save(out, "PNG")
    return out.getvalue()


def _opened(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data))


@pytest.mark.parametrize("workers", [0, 2])
def test_each_item_gets_its_input_or_its_own_failure_in_order(workers: int) -> None:
    geometry = InputGeometry(32, 32, "shortest", Image.Resampling.BICUBIC)
    work = [(f"img{i}", partial(_opened, _png(40 + i, 30))) for i in range(9)]
    work.insert(2, ("garbage", partial(_opened, b"not an image")))
    work.insert(7, ("not_an_image", partial(np.zeros, (4, 4))))

    results = list(model_inputs(work, geometry, workers=workers, window=4))

    assert [key for key, _ in results] == [key for key, _ in work]
    failures = {key: value for key, value in results if isinstance(value, PixelsFailed)}
    assert failures.keys() == {"garbage", "not_an_image"}
    assert failures["garbage"].error_type == "UnidentifiedImageError"
    assert str(failures["not_an_image"]).startswith("TypeError: the loader gave a ndarray, not a PIL.Image.Image")
    for key, loader in work:
        if key not in failures:
            np.testing.assert_array_equal(dict(results)[key], geometry(loader()))


def test_failure_survives_the_trip_back_from_a_worker() -> None:
    failure = PixelsFailed("OSError", "broken data stream", "load at PIL/ImageFile.py:1")
    again = pickle.loads(pickle.dumps(failure))
    assert (again.error_type, again.message, again.where) == ("OSError", "broken data stream", "load at PIL/ImageFile.py:1")
    assert str(again) == "OSError: broken data stream (raised in load at PIL/ImageFile.py:1)"


def test_clip_pixels_imports_neither_torch_nor_dagster() -> None:
    """What a spawned decode worker imports to run: Pillow and numpy."""
    import subprocess
    import sys

    code = "import sys, resources.clip_pixels\nprint(sorted({'torch', 'dagster'} & set(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
