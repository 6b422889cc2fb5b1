"""The low-quality measures and rules: a blurred, a noised, a blown-out and a crushed copy of a photograph each
fail their own rule with the measured value in the detail; the photograph itself, a low-contrast one and a
clean textured picture pass."""

import numpy as np
import pytest
from PIL import Image, ImageFilter

from assets.image_pool.logic.clarity import (
    BLURRED,
    NOISY,
    OVEREXPOSED,
    UNDEREXPOSED,
    ClarityRules,
    clarity_reason,
)
from assets.image_pool.logic.images import measure_file
from sample import synth


def _png(image: Image.Image) -> bytes:
    import io

    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _judged(image: Image.Image, rules: ClarityRules = ClarityRules()) -> tuple[str, str] | None:
    measured = measure_file(_png(image), 10**8)
    return clarity_reason(sharpness=measured.clarity.sharpness, noise_sigma=measured.clarity.noise_sigma,
                          highlights_clipped=measured.quality.highlights_clipped,
                          shadows_crushed=measured.clarity.shadows_crushed, rules=rules)


def _scaled(image: Image.Image, gain: float, offset: float = 0.0) -> Image.Image:
    pixels = np.asarray(image, dtype=np.float32) * gain + offset
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


@pytest.fixture(scope="module")
def photos() -> list[Image.Image]:
    return [synth.render_photo(seed, (640, 480)) for seed in range(6)]


def test_photographs_low_contrast_ones_and_clean_textures_pass(photos):
    for photo in photos:
        assert _judged(photo) is None
        assert _judged(_scaled(photo, 0.3, 90)) is None  # flat light, still in focus
    assert _judged(synth.render_painting(np.random.default_rng(3), (640, 480))) is None


def test_a_blurred_copy_is_blurred_with_its_sharpness(photos):
    reasons = [_judged(photo.filter(ImageFilter.GaussianBlur(10))) for photo in photos]
    assert all(r is not None and r[0] == BLURRED for r in reasons), reasons
    assert reasons[0][1].startswith("sharpness 0.0") and "below min_sharpness 0.02" in reasons[0][1]


def test_a_noised_copy_is_noisy_with_its_noise_level(photos):
    rng = np.random.default_rng(0)
    for photo in photos:
        noisy = np.asarray(photo, dtype=np.float32) + rng.normal(0, 30, (480, 640, 3))
        code, detail = _judged(Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)))
        assert code == NOISY and "above max_noise_sigma 9.0" in detail


def test_blown_out_and_crushed_copies_fail_exposure(photos):
    code, detail = _judged(_scaled(photos[0], 4.0, 120))
    assert code == OVEREXPOSED and "clipped to white" in detail
    code, detail = _judged(_scaled(photos[0], 0.01))
    assert code == UNDEREXPOSED and "crushed to black" in detail


def test_a_rule_set_to_none_is_off_and_a_missing_measure_is_not_judged(photos):
    blurred = photos[0].filter(ImageFilter.GaussianBlur(10))
    assert _judged(blurred, ClarityRules(min_sharpness=None)) is None
    assert clarity_reason(sharpness=None, noise_sigma=None, highlights_clipped=None, shadows_crushed=None,
                          rules=ClarityRules()) is None
