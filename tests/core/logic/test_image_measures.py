"""Image measurements on synthetic pictures whose truth is known by construction."""

import colorsys
import json
import math

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter

from assets.core.logic.image_measures import WORKING_SIDE, color_name, measure

# --- builders shared with test_heuristic_critic --------------------------------------------------------------


def scene(width=800, height=600) -> np.ndarray:
    """A soft colour gradient with one warm patch: an ordinary, mid-toned picture (floats 0..1)."""
    yy, xx = np.mgrid[0:height, 0:width] / np.array([height, width])[:, None, None]
    pixels = np.stack([0.3 + 0.4 * xx, 0.35 + 0.3 * yy, 0.5 - 0.2 * xx], axis=-1)
    pixels[height // 3: 2 * height // 3, 3 * width // 8: 5 * width // 8] = [0.8, 0.5, 0.3]
    return pixels


def to_image(pixels: np.ndarray) -> Image.Image:
    return Image.fromarray((np.clip(pixels, 0, 1) * 255).round().astype(np.uint8))


def overexposed() -> Image.Image:
    """Everything pushed up, and the top third (the sky) blown to pure white."""
    pixels = scene() * 1.3 + 0.25
    pixels[: pixels.shape[0] // 3] = 1.0
    return to_image(pixels)


def dark() -> Image.Image:
    return to_image(scene() * 0.25)


def horizon(degrees: float, width=800, height=600) -> Image.Image:
    """Sky over ground, the boundary through the centre rising to the right by ``degrees``."""
    image = Image.new("RGB", (width, height), (120, 160, 210))
    rise = math.tan(math.radians(degrees)) * width / 2
    ImageDraw.Draw(image).polygon([(0, height / 2 + rise), (width, height / 2 - rise), (width, height), (0, height)],
                                  fill=(70, 110, 60))
    return image


def square_at(cx: float, cy: float, width=900, height=600, side=100) -> Image.Image:
    image = Image.new("RGB", (width, height), (40, 60, 90))
    x, y = cx * width, cy * height
    ImageDraw.Draw(image).rectangle([x - side / 2, y - side / 2, x + side / 2, y + side / 2], fill=(240, 200, 40))
    return image


def colour_bars(width=640, height=480) -> Image.Image:
    pixels = np.zeros((height, width, 3))
    for i in range(6):
        pixels[:, i * width // 6:(i + 1) * width // 6] = colorsys.hsv_to_rgb(i / 6, 1, 1)
    return to_image(pixels)


def grey_texture(width=640, height=480, seed=0) -> Image.Image:
    values = np.random.default_rng(seed).normal(0.5, 0.12, (height, width))
    return to_image(np.repeat(values[..., None], 3, axis=2))


def blocks(width=640, height=480, seed=0) -> Image.Image:
    """Hard-edged random colour blocks: plenty of crisp edges to blur."""
    cells = np.random.default_rng(seed).integers(0, 255, (height // 8, width // 8, 3), dtype=np.uint8)
    return Image.fromarray(cells).resize((width, height), Image.Resampling.NEAREST)


def blurred(image: Image.Image, radius=4) -> Image.Image:
    return image.filter(ImageFilter.GaussianBlur(radius))


# --- exposure -----------------------------------------------------------------------------------------------


def test_half_white_half_black_is_fully_clipped_at_both_ends():
    pixels = np.zeros((100, 200, 3))
    pixels[:, 100:] = 1.0
    m = measure(to_image(pixels))
    assert m.clipped_highlights == pytest.approx(0.5, abs=0.01)
    assert m.clipped_shadows == pytest.approx(0.5, abs=0.01)
    assert m.rms_contrast == pytest.approx(0.5, abs=0.01)
    assert m.luminance_p1 == 0 and m.luminance_p99 == 1


def test_overexposed_image_reports_its_blown_highlights_and_a_dark_one_does_not():
    bright, gloomy, normal = measure(overexposed()), measure(dark()), measure(to_image(scene()))
    assert 0.3 <= bright.clipped_highlights < 0.45 and bright.mean_luminance > 0.8
    assert normal.clipped_highlights == 0 and 0.3 < normal.mean_luminance < 0.7
    assert gloomy.clipped_highlights == 0 and gloomy.mean_luminance < 0.2
    assert gloomy.luminance_p99 < 0.3 and bright.luminance_p1 > 0.6 and bright.luminance_p99 == 1
    assert bright.luminance_p1 <= bright.luminance_p50 <= bright.luminance_p99


# --- colour -------------------------------------------------------------------------------------------------


def test_colourful_bars_versus_grey_texture():
    bars, grey = measure(colour_bars()), measure(grey_texture())
    assert bars.colorfulness > 109 and bars.mean_saturation > 0.95
    assert grey.colorfulness == 0 and grey.mean_saturation == 0
    assert {family for family, _ in bars.hue_shares} == {"red", "yellow", "green", "cyan", "blue", "magenta"}
    assert grey.hue_shares == ()
    assert all(c.name.endswith("grey") for c in grey.dominant_colors)


def test_dominant_colours_have_shares_and_names():
    pixels = np.zeros((100, 100, 3))
    pixels[:, :70] = [0.85, 0.1, 0.1]
    pixels[:, 70:] = [0.1, 0.2, 0.8]
    m = measure(to_image(pixels))
    assert [(c.name, c.share) for c in m.dominant_colors] == [("red", 0.7), ("blue", 0.3)]
    assert m.dominant_colors[0].rgb == (217, 26, 26)


@pytest.mark.parametrize(("rgb", "name"), [
    ((250, 250, 250), "white"), ((10, 10, 10), "black"), ((128, 128, 128), "grey"), ((200, 30, 30), "red"),
    ((40, 60, 90), "dark blue"), ((120, 160, 210), "pale blue"), ((120, 70, 30), "brown"), ((250, 180, 200), "pink"),
    ((60, 200, 60), "green"), ((240, 200, 40), "yellow"),
])
def test_colour_names(rgb, name):
    assert color_name(rgb) == name


# --- sharpness and lines ------------------------------------------------------------------------------------


def test_sharp_versus_blurred_copy():
    sharp, soft = measure(blocks()), measure(blurred(blocks()))
    assert sharp.sharpness > 20 * soft.sharpness
    assert sharp.edge_crispness >= 0.9 and soft.edge_crispness < 0.3
    assert sharp.edge_density > 0.1 and soft.edge_density < sharp.edge_density / 5


def test_sharpness_normalized_rescales_small_images_only():
    big, small = measure(blocks(1280, 960)), measure(blocks(160, 120))
    assert (big.working_width, big.working_height) == (WORKING_SIDE, 384)
    assert big.sharpness_normalized == big.sharpness
    assert (small.working_width, small.working_height) == (160, 120)
    assert small.sharpness_normalized < small.sharpness  # upsampling spreads each edge over more pixels


@pytest.mark.parametrize("degrees", [5.0, -5.0, 2.0, 12.0])
def test_tilted_horizon_angle_is_measured(degrees):
    m = measure(horizon(degrees))
    assert m.tilt_degrees == pytest.approx(degrees, abs=1.0)
    assert m.tilt_support > 0.8
    assert m.edge_horizontal > 0.8


def test_a_thin_tilted_line_counts_and_a_level_horizon_reads_level():
    image = Image.new("RGB", (800, 600), (200, 200, 200))
    rise = math.tan(math.radians(5)) * 400
    ImageDraw.Draw(image).line([(0, 300 + rise), (800, 300 - rise)], fill=(20, 20, 20), width=4)
    assert measure(image).tilt_degrees == pytest.approx(5.0, abs=1.0)
    assert abs(measure(horizon(0)).tilt_degrees) < 0.5


def test_no_tilt_without_a_long_straight_line():
    for image in (grey_texture(), grey_texture(160, 120), colour_bars(), square_at(0.5, 0.5), to_image(scene())):
        assert measure(image).tilt_degrees is None


# --- placement and balance ----------------------------------------------------------------------------------


def test_subject_on_a_thirds_point_versus_centred():
    thirds, centred = measure(square_at(1 / 3, 1 / 3)), measure(square_at(0.5, 0.5))
    assert thirds.nearest_thirds_point == "upper-left"
    assert thirds.thirds_distance < 0.02 and thirds.center_distance > 0.2
    assert thirds.salient_centroid == pytest.approx((1 / 3, 1 / 3), abs=0.02)
    assert centred.center_distance < 0.02 and centred.thirds_distance > 0.2
    assert centred.symmetry > 0.95 and thirds.symmetry < 0.2
    assert 0.01 < thirds.salient_area < 0.05 and thirds.salient_spread < 0.1
    lower_right = measure(square_at(2 / 3, 2 / 3))
    assert lower_right.nearest_thirds_point == "lower-right" and lower_right.thirds_distance < 0.02


def test_uniform_image_is_symmetric_and_has_no_salient_mass():
    m = measure(Image.new("RGB", (300, 200), (90, 90, 90)))
    assert m.symmetry == 1.0 and m.salient_area == 0 and m.salient_centroid == (0.5, 0.5)
    assert m.edge_crispness == 0 and m.tilt_degrees is None and m.flat_fraction == 1.0


# --- form ---------------------------------------------------------------------------------------------------


def test_size_and_aspect_ratio_describe_the_original():
    m = measure(blocks(1280, 960))
    assert (m.width, m.height, m.aspect_ratio, m.megapixels) == (1280, 960, 1.3333, 1.2288)


def test_measures_are_deterministic_and_json_friendly():
    first, second = measure(horizon(5)), measure(horizon(5))
    assert first == second
    data = first.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert isinstance(data["dominant_colors"][0]["rgb"], list) and isinstance(data["salient_centroid"], list)


def test_transparency_is_flattened_onto_white():
    m = measure(Image.new("RGBA", (64, 64), (255, 0, 0, 0)))
    assert m.clipped_highlights == 1.0 and m.dominant_colors[0].name == "white"
