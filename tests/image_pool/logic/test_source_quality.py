"""The measures the representative rule reads: lossless containers, JPEG quality from the tables, fine detail, tones."""

import io

import numpy as np
import pytest
from PIL import Image, ImageOps

from assets.image_pool.logic.images import measure_file
from assets.image_pool.logic.source_quality import exposure_edited, fine_detail, is_lossless, jpeg_quality, tones
from sample import synth


def _photo(seed: int = 0, size: tuple[int, int] = (640, 480)) -> Image.Image:
    return synth.render_painting(np.random.default_rng(seed), size)


def _reopened(image: Image.Image, **save) -> tuple[Image.Image, bytes]:
    buffer = io.BytesIO()
    image.save(buffer, **save)
    data = buffer.getvalue()
    return Image.open(io.BytesIO(data)), data


@pytest.mark.parametrize("quality", [15, 30, 50, 75, 90, 92, 95])
def test_jpeg_quality_is_read_back_from_the_quantisation_tables(quality):
    source, _ = _reopened(_photo(), format="JPEG", quality=quality)
    assert jpeg_quality(source.quantization) == quality


def _lossless(image: Image.Image, **save) -> bool:
    source, data = _reopened(image, **save)
    return is_lossless(source.format, source.info.get("compression"), data)


def test_lossless_containers_and_lossy_ones():
    image = _photo()
    assert _lossless(image, format="PNG")
    assert _lossless(image, format="WEBP", lossless=True)
    assert not _lossless(image, format="WEBP", quality=80)
    assert not _lossless(image, format="JPEG", quality=95)
    assert _lossless(image, format="TIFF", compression="tiff_lzw")
    assert not _lossless(image, format="TIFF", compression="jpeg")
    assert not _lossless(image.convert("P"), format="GIF")  # colours already quantised


def test_an_upscale_has_less_fine_detail_than_its_original():
    original = _photo()
    upscaled = original.resize((1280, 960), Image.Resampling.BICUBIC)
    assert fine_detail(upscaled) < 0.75 * fine_detail(original)


def test_fine_detail_needs_two_octaves_and_some_contrast():
    assert fine_detail(Image.new("RGB", (12, 12), (10, 20, 30))) is None
    assert fine_detail(Image.new("RGB", (300, 300), (10, 20, 30))) is None


def test_measure_source_fills_every_column():
    image = _photo()
    _, data = _reopened(image, format="JPEG", quality=88)
    record = measure_file(data, 10**8).quality.to_record()
    assert record["jpeg_quality"] == 88 and record["lossless"] is False
    assert record["fine_detail"] > 0 and 0 < record["luma_mean"] < record["luma_top"] <= 255
    _, png_data = _reopened(image, format="PNG")
    assert measure_file(png_data, 10**8).quality.to_record()["jpeg_quality"] is None


def test_tones_read_from_the_histogram_equal_numpy_on_the_pixels():
    image = _photo(3, (333, 217))
    luma = np.asarray(image.convert("L"), dtype=np.float64)
    assert tones(image) == (round(luma.mean(), 2), round(float(np.percentile(luma, 99.5)), 2),
                            round(float((luma >= 250).mean()), 5))


def test_fine_detail_doubling_is_pillows_bilinear():
    from assets.image_pool.logic.source_quality import _double

    square = np.random.default_rng(0).random((24, 16)).astype(np.float32) * 255
    pillow = np.asarray(Image.fromarray(square, mode="F").resize((32, 48), Image.Resampling.BILINEAR))
    assert np.abs(_double(square) - pillow).max() < 1e-3


def _full_range_photo() -> Image.Image:
    """A render stretched to the whole 0-255 range, as an exposed photograph is."""
    return ImageOps.autocontrast(synth.render_photo(np.random.default_rng(3), (640, 480)), cutoff=0.2)


def test_a_brightened_copy_clips_highlights_its_original_keeps():
    original = _full_range_photo()
    brightened = synth.brightness_shifted(original, 1.25)
    assert exposure_edited(tones(brightened), tones(original)) == "brighter"


def test_a_darkened_copy_leaves_the_top_of_the_range_empty():
    original = _full_range_photo()
    darkened = synth.brightness_shifted(original, 0.75)
    assert exposure_edited(tones(original), tones(darkened)) == "darker"


def test_equally_exposed_copies_say_nothing():
    original = _full_range_photo()
    assert exposure_edited(tones(original), tones(original.resize((320, 240)))) is None
