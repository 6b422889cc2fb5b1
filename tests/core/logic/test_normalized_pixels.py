"""The normalised pixels every stage reads, against the PNG derivatives the pool stored before it stopped storing them.

``fixtures/derivatives`` holds small originals (EXIF-rotated JPEGs, CMYK, 16-bit grey, a palette PNG with a
transparent index, an animated GIF, RGBA) and beside each, ``<name>.derivative.png``: the PNG the pool's
``normalized_images`` stored for it up to issue 18 (``encode_normalized(decode_normalized(data).image)``, written
with that code). The function must give the same pixels, and its export PNG the same bytes, so ids that named the
derivative (a case image, an edit's source) stay valid.
"""

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from assets.core.logic.normalized_pixels import decode_upright, normalized_pixels, normalized_png
from resources.image_formats import DECOMPRESSION_BOMB, DecodeFailure

FIXTURES = Path(__file__).parent / "fixtures" / "derivatives"
ORIGINALS = sorted(p for p in FIXTURES.iterdir() if not p.name.endswith(".derivative.png"))


def _derivative(original: Path) -> Path:
    return original.with_name(original.name + ".derivative.png")


@pytest.mark.parametrize("original", ORIGINALS, ids=lambda p: p.name)
def test_pixels_equal_the_stored_derivative_pixel_for_pixel(original):
    pixels = normalized_pixels(original.read_bytes())
    with Image.open(_derivative(original)) as stored:
        assert pixels.mode == "RGB" and pixels.size == stored.size
        assert np.array_equal(np.asarray(pixels), np.asarray(stored.convert("RGB")))


@pytest.mark.parametrize("original", ORIGINALS, ids=lambda p: p.name)
def test_the_export_png_is_the_stored_derivative_byte_for_byte(original):
    assert normalized_png(original.read_bytes()) == _derivative(original).read_bytes()


def test_the_cases_cover_each_normalisation():
    found = {p.name: decode_upright(p.read_bytes()) for p in ORIGINALS}
    assert found["exif_rotated.jpg"].exif_orientation == 6 and found["exif_rotated.jpg"].image.size == (32, 48)
    assert found["exif_transposed.jpg"].exif_orientation == 5
    assert found["cmyk.jpg"].source_mode == "CMYK"
    assert found["grey16.png"].source_mode.startswith("I")
    assert found["palette_transparent.png"].source_mode == "P"
    assert found["animated.gif"].frame_count == 3
    assert found["rgba.png"].source_mode == "RGBA"


def test_transparent_palette_entries_become_white():
    with Image.open(FIXTURES / "palette_transparent.png") as source:
        transparent = np.asarray(source) == source.info["transparency"]
    assert transparent.any()
    assert (np.asarray(normalized_pixels((FIXTURES / "palette_transparent.png").read_bytes()))[transparent] == 255).all()


def test_the_first_frame_of_an_animation_is_the_one_shown():
    with Image.open(FIXTURES / "animated.gif") as source:
        first = source.convert("RGB")
    assert np.array_equal(np.asarray(normalized_pixels((FIXTURES / "animated.gif").read_bytes())), np.asarray(first))


def test_a_limit_refuses_a_bomb_from_its_header():
    with pytest.raises(DecodeFailure) as failure:
        normalized_pixels((FIXTURES / "cmyk.jpg").read_bytes(), max_pixels=100)
    assert failure.value.reason_code == DECOMPRESSION_BOMB


def test_a_jpeg_needed_only_small_is_decoded_at_a_reduced_scale_at_least_that_big():
    image = Image.fromarray(np.random.default_rng(0).integers(0, 255, (480, 800, 3), dtype=np.uint8))
    buffer = io.BytesIO()
    exif = Image.Exif()
    exif[0x0112] = 6
    image.save(buffer, format="JPEG", quality=90, exif=exif)
    full = normalized_pixels(buffer.getvalue())
    small = normalized_pixels(buffer.getvalue(), min_side=100)
    assert full.size == (480, 800) and small.size == (120, 200)  # 1/4 scale, still upright
    assert normalized_pixels(buffer.getvalue(), min_side=300).size == (480, 800)  # half would be below 300
