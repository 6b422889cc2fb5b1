import io

import numpy as np
import pytest
from PIL import Image

from assets.lib import images
from assets.lib.images import DecodeFailure, FilterRules, decode_normalized, filter_reason

RULES = FilterRules(min_side=64, max_side=4096, max_aspect_ratio=6.0, blank_max_std=2.0, license_allowlist=["CC0-1.0", "CC-BY-4.0"])


def _encode(image: Image.Image, fmt: str, **kwargs) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **kwargs)
    return buffer.getvalue()


def _noise(w=96, h=64, seed=0):
    return Image.fromarray(np.random.default_rng(seed).integers(0, 255, (h, w, 3), dtype=np.uint8))


def test_exif_orientation_is_applied():
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise when displayed
    decoded = decode_normalized(_encode(_noise(96, 64), "JPEG", exif=exif), 10**8)
    assert decoded.exif_orientation == 6 and decoded.image.size == (64, 96)


def test_transparency_is_flattened_onto_white_and_same_pixels_hash_equal():
    rgba = Image.new("RGBA", (80, 80), (255, 0, 0, 0))
    decoded = decode_normalized(_encode(rgba, "PNG"), 10**8)
    assert decoded.image.mode == "RGB" and decoded.image.getpixel((0, 0)) == (255, 255, 255)
    picture = _noise()
    assert decode_normalized(_encode(picture, "PNG"), 10**8).pixel_sha256 == decode_normalized(_encode(picture, "BMP"), 10**8).pixel_sha256


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"<html>not an image</html>", images.NOT_AN_IMAGE),
        (_encode(_noise(), "JPEG")[:400], images.UNDECODABLE),
        (_encode(_noise(), "PNG")[:-40], images.UNDECODABLE),
    ],
)
def test_bad_bytes_fail_with_reason(payload, reason):
    with pytest.raises(DecodeFailure) as failure:
        decode_normalized(payload, 10**8)
    assert failure.value.reason_code == reason and failure.value.detail


def test_decompression_bomb_is_refused_before_decoding():
    with pytest.raises(DecodeFailure) as failure:
        decode_normalized(_encode(Image.new("L", (3000, 3000)), "PNG"), max_pixels=1_000_000)
    assert failure.value.reason_code == images.DECOMPRESSION_BOMB


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"license": "All-Rights-Reserved"}, images.LICENSE_NOT_ALLOWED),
        ({"width": 40}, images.TOO_SMALL),
        ({"width": 5000, "height": 4000}, images.TOO_LARGE),
        ({"width": 1000, "height": 100}, images.EXTREME_ASPECT_RATIO),
        ({"pixel_std": 0.5}, images.BLANK),
        ({"width": 161, "height": 81}, images.REMOVED_IMAGE_PLACEHOLDER),
        ({"width": 81, "height": 161}, None),  # only the exact placeholder size, not its transpose
        ({}, None),
    ],
)
def test_filter_rules(kwargs, reason):
    args = {"width": 300, "height": 200, "pixel_std": 40.0, "license": "cc0-1.0"} | kwargs
    result = filter_reason(**args, rules=RULES)
    assert (result[0] if result else None) == reason


def test_blank_measure_separates_uniform_from_textured():
    assert images.pixel_spread(Image.new("RGB", (200, 200), (120, 30, 200))) == 0.0
    assert images.pixel_spread(_noise(200, 200)) > 50
