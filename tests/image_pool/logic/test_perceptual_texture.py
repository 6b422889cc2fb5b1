"""The texture route: crops and turned copies of periodic patterns match, another weave in the same palette does not."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from PIL import Image, ImageDraw

from assets.image_pool.logic.perceptual import (
    TEXTURE_SIDE,
    Alignment,
    PerceptualMatcher,
    PerceptualParams,
    PerceptualSignature,
    compute_signature,
    periodicity,
    verify_frames,
    verify_pair,
    verify_texture,
)
from sample import synth

SIZE = (480, 320)
PALETTE = ((40, 60, 160), (230, 200, 90))
FRAMES_ONLY = PerceptualParams(min_texture_correlation=2.0)  # the texture route can never pass


def woven(kind: str, degrees: float, repeats: float, label: tuple[int, int] = (60, 50), size: tuple[int, int] = SIZE) -> Image.Image:
    """Stripes, checks or plaid of ``repeats`` periods across the short side, a little noise, and a red label at
    ``label`` (its top-left corner)."""
    width, height = size
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    period, theta = min(size) / repeats, math.radians(degrees)
    u = (xs * math.cos(theta) + ys * math.sin(theta)) / period
    v = (-xs * math.sin(theta) + ys * math.cos(theta)) / period
    if kind == "stripes":
        field = (np.sin(2 * np.pi * u) > 0).astype(np.float32)
    elif kind == "checkers":
        field = ((np.floor(u) + np.floor(v)) % 2).astype(np.float32)
    else:  # plaid
        field = 0.5 + 0.25 * np.sin(2 * np.pi * u) + 0.25 * np.sin(2 * np.pi * v * 1.7)
    colours = np.array(PALETTE, dtype=np.float32)
    canvas = colours[0] * (1 - field[..., None]) + colours[1] * field[..., None]
    canvas += np.random.default_rng(0).normal(0, 3, canvas.shape)
    image = Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8))
    left, top = label
    ImageDraw.Draw(image).rectangle((left, top, left + width // 5, top + height // 8), fill=(200, 40, 40))
    return image


def stored(img: Image.Image) -> Image.Image:
    return Image.open(io.BytesIO(synth.recompressed(img, 90))).convert("RGB")


def matched(original: Image.Image, copy: Image.Image, params: PerceptualParams | None = None) -> list[tuple[str, str, str]]:
    matcher: PerceptualMatcher[str] = PerceptualMatcher(params)
    return [(m.a, m.b, m.method) for m in matcher.match_new([("original", compute_signature(original)),
                                                              ("copy", compute_signature(copy))])]


# (kind, angle, repeats) where the frame tests alone refuse both copies (checked below)
WEAVES = [("stripes", 20.0, 3), ("checkers", 20.0, 4), ("plaid", 35.0, 4)]
COPIES = {"cropped": lambda img: synth.cropped(img, 0.12, "bottom-right"), "rotated": lambda img: synth.rotated(img, 7.0)}


@pytest.mark.parametrize(("kind", "degrees", "repeats"), WEAVES)
@pytest.mark.parametrize("copy", sorted(COPIES))
def test_a_crop_and_a_turned_copy_of_a_periodic_pattern_match_through_the_texture_route(kind, degrees, repeats, copy) -> None:
    original = woven(kind, degrees, repeats)
    duplicate = stored(COPIES[copy](original))
    assert matched(original, duplicate, FRAMES_ONLY) == []  # the 32 px thumbnail and 8 x 8 colour cells lose it
    assert matched(original, duplicate) == [("original", "copy", "texture")]


@pytest.mark.parametrize(("kind", "degrees", "repeats"), WEAVES)
def test_another_weave_in_the_same_palette_period_and_angle_is_refused(kind: str, degrees: float, repeats: int) -> None:
    """Another product in the same colours: the next weave, its label elsewhere."""
    original = woven(kind, degrees, repeats)
    other = ("stripes", "checkers", "plaid")[(("stripes", "checkers", "plaid").index(kind) + 1) % 3]
    look_alike = stored(woven(other, degrees, repeats, label=(300, 200)))
    a, b = compute_signature(original), compute_signature(look_alike)
    assert min(a.periodicity, b.periodicity) >= PerceptualParams().min_texture_periodicity  # the texture route is open
    assert verify_texture(a, b, Alignment(), PerceptualParams()) is None
    assert matched(original, look_alike) == []


def test_the_texture_route_refuses_a_mirror_or_stretch_and_a_recoloured_pattern() -> None:
    """Any two checks of one palette align once mirrored or stretched; a hue turned keeps the weave but not the colour."""
    original = compute_signature(woven("checkers", 20.0, 4))
    copy = compute_signature(stored(synth.cropped(woven("checkers", 20.0, 4), 0.12, "bottom-right")))
    near = Alignment(scale=0.88, dx=0.06 * 1.5, dy=0.06)  # the crop kept the bottom-right 88 % of each side
    params = PerceptualParams()
    assert verify_texture(original, copy, near, params) is not None
    assert verify_texture(original, copy, Alignment(scale=0.88, dx=0.09, dy=0.06, mirror=True), params) is None
    assert verify_texture(original, copy, Alignment(scale=0.88, dx=0.09, dy=0.06, stretch=1.2), params) is None
    recoloured = compute_signature(stored(synth.recoloured(synth.cropped(woven("checkers", 20.0, 4), 0.12, "bottom-right"), 4)))
    assert verify_texture(original, recoloured, near, params) is None


def test_verify_pair_adds_the_texture_route_where_the_frame_tests_refuse() -> None:
    original = compute_signature(woven("stripes", 20.0, 3))
    copy = compute_signature(stored(synth.cropped(woven("stripes", 20.0, 3), 0.12, "bottom-right")))
    near = Alignment(scale=0.88, dx=0.06 * 1.5, dy=0.06)
    params = PerceptualParams()
    assert not verify_frames(original, copy, near, params).accepted
    verdict = verify_pair(original, copy, near, params)
    assert verdict.accepted and verdict.texture and verdict.structure >= params.min_texture_correlation


def test_the_texture_square_is_the_centred_square_and_round_trips() -> None:
    img = Image.new("RGB", (300, 100), (0, 0, 0))
    ImageDraw.Draw(img).rectangle((100, 0, 199, 99), fill=(255, 255, 255))  # exactly the centred square
    sig = compute_signature(img)
    assert sig.thumb_texture.shape == (TEXTURE_SIDE, TEXTURE_SIDE)
    assert sig.thumb_texture[:, 2:-2].min() > 240
    back = PerceptualSignature.from_record(sig.to_record())
    assert np.array_equal(back.thumb_texture, sig.thumb_texture)
    assert np.array_equal(back.thumb_luma, sig.thumb_luma)


def template_render(index: int) -> Image.Image:
    """One of bench/dedup.py's virtual renders (seed 0), stored as it stores originals (JPEG q92)."""
    rng = np.random.default_rng([0, index])
    size = (int(rng.integers(400, 800)), int(rng.integers(300, 600)))
    return Image.open(io.BytesIO(synth.recompressed(synth.render_virtual(rng, size), 92))).convert("RGB")


@pytest.mark.parametrize("pair", [(479, 1127), (938, 1304)])
def test_distinct_renders_of_one_template_stay_apart_because_they_do_not_repeat(pair: tuple[int, int]) -> None:
    """Their centred squares correlate ~0.95 once aligned: without the periodicity gate and the tone test (grey level
    and contrast) the texture route merges them; either alone keeps them apart."""
    a, b = (template_render(i) for i in pair)
    assert compute_signature(a).periodicity < PerceptualParams().min_texture_periodicity
    any_tone = {"max_texture_luma_shift": 255.0, "max_texture_contrast_ratio": 100.0}
    assert matched(a, b, PerceptualParams(min_texture_periodicity=0.0, **any_tone)) == [("original", "copy", "texture")]
    assert matched(a, b, PerceptualParams(min_texture_periodicity=0.0)) == []
    assert matched(a, b, PerceptualParams(**any_tone)) == []
    assert matched(a, b) == []


def test_periodicity_finds_repeats_beyond_a_valley_and_none_in_smooth_or_random_content() -> None:
    for kind, degrees, repeats in WEAVES:
        assert compute_signature(woven(kind, degrees, repeats)).periodicity >= 0.5
    assert periodicity(np.tile(np.linspace(0, 255, TEXTURE_SIDE, dtype=np.float32), (TEXTURE_SIDE, 1))) == 0.0  # a ramp
    noise = np.random.default_rng(1).normal(128, 40, (TEXTURE_SIDE, TEXTURE_SIDE)).astype(np.float32)
    assert periodicity(noise) < 0.3
    tiled = np.tile(noise[:8, :8], (TEXTURE_SIDE // 8, TEXTURE_SIDE // 8))  # any 8 px tile, repeated
    assert periodicity(tiled) > 0.9
