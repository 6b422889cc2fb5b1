import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from assets.image_pool.logic import images
from assets.image_pool.logic.images import FilterRules, decode_normalized, filter_reason
from resources import image_formats
from resources.image_formats import DecodeFailure, recognised_format
from tests.support.hostile.images import CASES, write_image_cases

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
    assert decoded.upright.exif_orientation == 6 and decoded.image.size == (64, 96)


def test_an_orientation_outside_1_to_8_is_ignored_not_fatal():
    exif = Image.Exif()
    exif[0x0112] = 9
    decoded = decode_normalized(_encode(_noise(96, 64), "JPEG", exif=exif), 10**8)
    assert decoded.upright.exif_orientation is None and decoded.image.size == (96, 64)


def test_transparency_is_flattened_onto_white_and_same_pixels_hash_equal():
    rgba = Image.new("RGBA", (80, 80), (255, 0, 0, 0))
    decoded = decode_normalized(_encode(rgba, "PNG"), 10**8)
    assert decoded.image.mode == "RGB" and decoded.image.getpixel((0, 0)) == (255, 255, 255)
    picture = _noise()
    assert decode_normalized(_encode(picture, "PNG"), 10**8).pixel_sha256 == decode_normalized(_encode(picture, "BMP"), 10**8).pixel_sha256


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"<html>not an image</html>", image_formats.NOT_AN_IMAGE),
        (b"\x00\x01garbage" * 20, image_formats.NOT_AN_IMAGE),
        (b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>', image_formats.UNSUPPORTED_FORMAT),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", image_formats.UNSUPPORTED_FORMAT),
        (_encode(_noise(), "JPEG")[:400], image_formats.TRUNCATED),
        (_encode(_noise(), "JPEG")[:1500], image_formats.TRUNCATED),
        (_encode(_noise(), "PNG")[:-40], image_formats.TRUNCATED),
        (b"\xff\xd8\xff" + bytes(300), image_formats.UNDECODABLE),  # a JPEG start, then no valid marker
    ],
)
def test_bad_bytes_fail_with_reason(payload, reason):
    with pytest.raises(DecodeFailure) as failure:
        decode_normalized(payload, 10**8)
    assert failure.value.reason_code == reason and failure.value.detail


def test_decompression_bomb_is_refused_before_decoding_quoting_the_configured_limit():
    with pytest.raises(DecodeFailure) as failure:
        decode_normalized(_encode(Image.new("L", (3000, 3000)), "PNG"), max_pixels=1_000_000)
    assert failure.value.reason_code == image_formats.DECOMPRESSION_BOMB
    assert "3000x3000" in failure.value.detail and "max_pixels = 1000000" in failure.value.detail


def test_a_limit_above_pillows_own_is_the_one_that_applies(monkeypatch):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # Pillow alone would refuse this image as a bomb
    assert decode_normalized(_encode(_noise(100, 100), "PNG"), max_pixels=10**8).width == 100


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "GIF", "WEBP", "BMP", "TIFF", "PPM", "ICO", "TGA", "QOI", "PCX", "SGI", "DDS"])
def test_every_format_pillow_writes_is_recognised_and_decoded(fmt):
    data = _encode(_noise(64, 64), fmt)
    assert recognised_format(data) == fmt.lower()
    assert decode_normalized(data, 10**8).image.size == (64, 64)


def _in_mode(mode: str) -> Image.Image:
    if mode == "I;16":
        return Image.fromarray(np.arange(48 * 40, dtype=np.uint16).reshape(40, 48) * 30)
    if mode == "F":
        return Image.fromarray(np.linspace(-1.0, 5.0, 48 * 40, dtype=np.float32).reshape(40, 48))
    return _noise(48, 40).convert(mode)


@pytest.mark.parametrize(("mode", "fmt"), [("1", "PPM"), ("L", "PPM"), ("CMYK", "JPEG"), ("LA", "PNG"), ("I;16", "PNG"), ("F", "TIFF")])
def test_any_source_mode_becomes_rgb(mode, fmt):
    decoded = decode_normalized(_encode(_in_mode(mode), fmt), 10**8)
    assert decoded.upright.source_mode == mode and decoded.image.mode == "RGB" and decoded.image.size == (48, 40)


def test_multi_frame_files_record_their_frame_count_and_use_the_first():
    frames = [Image.new("RGB", (40, 30), (60 * i, 20, 200 - 40 * i)) for i in range(4)]
    data = _encode(frames[0], "GIF", save_all=True, append_images=frames[1:])
    decoded = decode_normalized(data, 10**8)
    assert decoded.upright.frame_count == 4
    assert decoded.image.getpixel((0, 0)) == decode_normalized(_encode(frames[0], "GIF"), 10**8).image.getpixel((0, 0))


def test_recognised_format_keeps_damaged_images_for_the_decoder_and_refuses_the_rest():
    assert recognised_format(_encode(_noise(), "JPEG")[:400]) == "jpeg"  # decoding will say it is truncated
    for payload, reason in ((b"<!DOCTYPE html><html></html>", image_formats.NOT_AN_IMAGE), (b"", image_formats.NOT_AN_IMAGE),
                            (b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic", image_formats.UNSUPPORTED_FORMAT)):
        with pytest.raises(DecodeFailure) as failure:
            recognised_format(payload)
        assert failure.value.reason_code == reason


def test_every_hostile_case_decides_as_the_generator_says(tmp_path):
    """The cases the pipeline test runs, checked at the library level: fetch-stage reasons come from
    recognised_format, decode-stage reasons from decode_normalized, and everything else decodes."""
    for case in write_image_cases(tmp_path):
        path = tmp_path / case.filename
        if case.expected in ("fetch:missing_file", "fetch:empty_body"):
            continue  # a directory and an empty file are the fetcher's to refuse, before any content check
        stage, _, reason = case.expected.partition(":")
        data = path.read_bytes()
        if stage == "fetch":
            with pytest.raises(DecodeFailure) as failure:
                recognised_format(data)
            assert failure.value.reason_code == reason, case.name
            continue
        recognised_format(data)
        if stage == "decode":
            with pytest.raises(DecodeFailure) as failure:
                decode_normalized(data, 10**8)
            assert failure.value.reason_code == reason, case.name
        else:
            decoded = decode_normalized(data, 10**8)
            assert decoded.upright.frame_count == (case.frames or 1), case.name
    assert len(CASES) > 25


_VALID = [_encode(_noise(24, 16, seed=i), fmt) for i, fmt in enumerate(["PNG", "JPEG", "GIF", "TIFF", "BMP", "WEBP", "PPM", "ICO"])]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(_VALID), edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=8),
       cut=st.integers(0, 10**6))
def test_mutated_images_decode_or_fail_with_a_reason(base, edits, cut):
    data = bytearray(base)
    for position, value in edits:
        data[position % len(data)] = value
    data = bytes(data[: max(1, cut % (len(data) + 1))])
    try:
        decoded = decode_normalized(data, 10**6)
    except DecodeFailure as failure:
        assert failure.reason_code in {image_formats.NOT_AN_IMAGE, image_formats.UNSUPPORTED_FORMAT,
                                       image_formats.TRUNCATED, image_formats.UNDECODABLE,
                                       image_formats.DECOMPRESSION_BOMB}
    else:
        assert decoded.image.mode == "RGB"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2048))
def test_random_bytes_never_raise_anything_but_a_decode_failure(data):
    try:
        recognised_format(data)
        decode_normalized(data, 10**6)
    except DecodeFailure:
        pass


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


def test_images_too_small_for_a_signature_are_too_small_whatever_min_side_says():
    lenient = FilterRules(min_side=0, max_side=4096, max_aspect_ratio=10**4, blank_max_std=-1.0, license_allowlist=["CC0-1.0"])
    for size in ((1, 1), (7, 300)):
        reason, detail = filter_reason(width=size[0], height=size[1], pixel_std=0.0, license="CC0-1.0", rules=lenient)
        assert reason == images.TOO_SMALL and "perceptual signature" in detail
    assert filter_reason(width=8, height=8, pixel_std=0.0, license="CC0-1.0", rules=lenient) is None


def test_blank_measure_separates_uniform_from_textured():
    assert images.pixel_spread(Image.new("RGB", (200, 200), (120, 30, 200))) == 0.0
    assert images.pixel_spread(_noise(200, 200)) > 50
