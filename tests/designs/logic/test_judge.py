"""The offline design judge on designs and renders built here with numpy and Pillow, whose truth is known."""

import json
import math

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from assets.designs.logic.judge import (
    INDICATOR_IDS,
    JudgeError,
    JudgeThresholds,
    blur_measure,
    contrast_ratio,
    element_bounds,
    grid_blockiness,
    judge,
    judge_design,
    relative_luminance,
)
from assets.designs.logic.design_model import Design, Element

W, H = 400, 300
WHITE, BLACK = (255, 255, 255), (0, 0, 0)


def backdrop(color=WHITE):
    return Element("bg", "background", 0, 0, W, H, color=color)


def text(element_id, left, top, width, height, words="Summer sale", color=BLACK, size=24, font="Roboto", **kw):
    return Element(element_id, "text", left, top, width, height, color=color, text=words, font=font, font_size=size, **kw)


def shape(element_id, left, top, width, height, color=(30, 90, 200), kind="svg"):
    return Element(element_id, kind, left, top, width, height, color=color)


def paint(elements, pictures=None, size=(W, H)):
    """Paint order as the renderer's: backgrounds fill, shapes fill their box (or get a picture), text is typeset."""
    pictures = pictures or {}
    image = Image.new("RGB", (W, H), WHITE)
    draw = ImageDraw.Draw(image)
    for e in elements:
        if e.type == "background":
            draw.rectangle([0, 0, W - 1, H - 1], fill=e.color)
        elif e.element_id in pictures:
            image.paste(pictures[e.element_id], (int(e.left), int(e.top)))
        elif e.type == "text":
            draw.text((e.left, e.top), e.text, fill=e.color, font=ImageFont.load_default(size=e.font_size))
        else:
            draw.rectangle([e.left, e.top, e.left + e.width - 1, e.top + e.height - 1], fill=e.color)
    return image if size == (W, H) else image.resize(size, Image.Resampling.BOX)


def design(*elements):
    return Design("d-test", W, H, tuple(elements))


def verdict(elements, indicator, **kw):
    return judge(design(*elements), paint(elements, kw.pop("pictures", None)), indicator, **kw)


# --- WCAG numbers -----------------------------------------------------------------------------------------------


def test_contrast_ratio_matches_hand_computed_wcag_values():
    assert contrast_ratio(BLACK, WHITE) == pytest.approx(21.0)
    assert contrast_ratio(WHITE, BLACK) == pytest.approx(21.0)  # order does not matter
    # #777: 119/255 = .4667 -> ((.4667 + .055) / 1.055) ** 2.4 = .1845; (1 + .05) / (.1845 + .05) = 4.48.
    assert relative_luminance((0x77,) * 3) == pytest.approx(0.1845, abs=1e-4)
    assert contrast_ratio((0x77,) * 3, WHITE) == pytest.approx(4.48, abs=0.005)
    # #767676 is the classic lightest grey that passes 4.5:1 on white.
    assert contrast_ratio((0x76,) * 3, WHITE) == pytest.approx(4.54, abs=0.005)
    # Pure red on white: L = .2126 -> 1.05 / .2626 = 4.0.
    assert contrast_ratio((255, 0, 0), WHITE) == pytest.approx(3.998, abs=0.001)
    assert contrast_ratio((90, 90, 90), (90, 90, 90)) == pytest.approx(1.0)


# --- contrast and legibility ----------------------------------------------------------------------------------------


def test_black_text_on_white_passes_and_grey_on_grey_fails():
    good = [backdrop(), text("t", 40, 40, 250, 40, color=BLACK, size=16)]
    j = verdict(good, "color_contrast")
    assert not j.flawed and j.score == 0.0 and j.boxes == ()
    assert j.evidence["texts"][0]["contrast_ratio"] == pytest.approx(21.0)
    assert j.evidence["texts"][0]["background_colour"] == "#ffffff"

    # #808080 text on #8c8c8c: L .2159 vs .2622 -> (.2622 + .05) / (.2159 + .05) = 1.17, far below 4.5:1.
    bad = [backdrop((140, 140, 140)), text("t", 40, 40, 250, 40, color=(128, 128, 128), size=16)]
    for indicator in ("color_contrast", "font_legibility"):
        j = verdict(bad, indicator)
        assert j.flawed and j.boxes == ("t",)
        measured = j.evidence["texts"][0]
        assert measured["contrast_ratio"] == pytest.approx(1.174, abs=0.005)
        assert measured["background_colour"] == "#8c8c8c" and measured["required"] == 4.5
        assert j.score == pytest.approx((4.5 - 1.174) / 3.5, abs=0.002)
        assert "1.17:1" in j.claims[0].text and j.claims[0].element_id == "t"


def test_large_text_needs_three_to_one_small_text_four_and_a_half():
    # #777 on white is 4.48:1: enough for large text (>= 24 px, or 18.66 px bold), not for small text.
    grey = (0x77,) * 3
    assert not verdict([backdrop(), text("t", 40, 40, 250, 40, color=grey, size=30)], "color_contrast").flawed
    assert not verdict([backdrop(), text("t", 40, 40, 250, 40, color=grey, size=20, font="Roboto Bold")],
                       "color_contrast").flawed
    small = verdict([backdrop(), text("t", 40, 40, 250, 40, color=grey, size=14)], "color_contrast")
    assert small.flawed and small.evidence["texts"][0]["required"] == 4.5
    assert small.score == pytest.approx((4.5 - 4.478) / 3.5, abs=0.001)
    # Thresholds are configurable.
    lenient = JudgeThresholds(contrast_small_text=4.0)
    assert not verdict([backdrop(), text("t", 40, 40, 250, 40, color=grey, size=14)], "color_contrast",
                       thresholds=lenient).flawed


def test_text_opacity_blends_with_its_background():
    # Black at 20 % over white shows as 204 grey: L .6038 -> 1.05 / .6538 = 1.61:1.
    j = verdict([backdrop(), text("t", 40, 40, 250, 40, color=BLACK, size=30, opacity=0.2)], "color_contrast")
    assert j.flawed and j.evidence["texts"][0]["contrast_ratio"] == pytest.approx(1.606, abs=0.01)
    assert j.evidence["texts"][0]["text_colour"] == "#cccccc"


def test_background_comes_from_the_render_without_the_text_when_given():
    elements = [backdrop((20, 20, 20)), shape("panel", 30, 30, 300, 60, color=(250, 250, 250)),
                text("t", 40, 40, 250, 40, color=(235, 235, 235), size=30)]
    d = design(*elements)
    calls = []

    def render_without(index):
        calls.append(index)
        return paint([e for i, e in enumerate(elements) if i != index])

    j = judge(d, paint(elements), "color_contrast", render_without=render_without)
    assert calls == [2]
    measured = j.evidence["texts"][0]
    assert measured["background_source"] == "render_without" and measured["background_colour"] == "#fafafa"
    # 235 grey on 250 grey: L .8308 vs .9560 -> 1.0060 / .8808 = 1.14.
    assert j.flawed and measured["contrast_ratio"] == pytest.approx(1.142, abs=0.005)
    # Without the callback the pixels around the glyphs give the same background here.
    assert judge(d, paint(elements), "color_contrast").evidence["texts"][0]["background_colour"] == "#fafafa"


def test_same_text_on_dark_and_light_panels_is_judged_by_what_lies_under_it():
    light_text = (230, 230, 230)
    on_dark = verdict([backdrop(WHITE), shape("panel", 20, 20, 360, 100, color=(30, 30, 30)),
                       text("t", 40, 40, 250, 40, color=light_text, size=16)], "color_contrast")
    on_light = verdict([backdrop(WHITE), shape("panel", 20, 20, 360, 100, color=(245, 245, 245)),
                        text("t", 40, 40, 250, 40, color=light_text, size=16)], "color_contrast")
    assert not on_dark.flawed and on_dark.evidence["texts"][0]["background_colour"] == "#1e1e1e"
    assert on_light.flawed and on_light.evidence["texts"][0]["contrast_ratio"] < 1.2


def test_tiny_text_fails_legibility_but_not_contrast():
    elements = [backdrop(), text("t", 40, 40, 100, 10, words="terms apply", color=BLACK, size=7)]
    assert not verdict(elements, "color_contrast").flawed
    legibility = verdict(elements, "font_legibility")
    assert legibility.flawed and legibility.boxes == ("t",) and "7 px" in legibility.claims[0].text


def test_a_half_size_render_gives_the_same_contrast():
    elements = [backdrop((140, 140, 140)), text("t", 40, 40, 250, 40, color=(128, 128, 128), size=30)]
    full = judge(design(*elements), paint(elements), "color_contrast")
    half = judge(design(*elements), paint(elements, size=(W // 2, H // 2)), "color_contrast")
    assert half.flawed == full.flawed
    assert half.evidence["texts"][0]["contrast_ratio"] == pytest.approx(full.evidence["texts"][0]["contrast_ratio"], abs=0.01)


# --- layering --------------------------------------------------------------------------------------------------------


def test_overlapping_text_boxes_are_a_layering_flaw():
    apart = [backdrop(), text("a", 40, 40, 200, 40), text("b", 40, 120, 200, 40)]
    j = verdict(apart, "layout_layering")
    assert not j.flawed and j.evidence["overlaps"] == []
    # b moved up by 20 px: 200 x 20 of its 200 x 40 box lies on a: half of the smaller box.
    clash = [backdrop(), text("a", 40, 40, 200, 40), text("b", 40, 60, 200, 40)]
    j = verdict(clash, "layout_layering")
    assert j.flawed and j.boxes == ("a", "b") and j.score == pytest.approx(0.5)
    assert j.evidence["overlaps"][0]["kind"] == "text_overlaps_text"


def test_text_on_its_panel_is_fine_text_under_a_later_picture_or_across_an_edge_is_not():
    on_panel = [backdrop(), shape("panel", 20, 20, 300, 100), text("t", 40, 40, 200, 40, color=WHITE)]
    assert not verdict(on_panel, "layout_layering").flawed
    covered = [backdrop(), text("t", 40, 40, 200, 40), shape("photo", 140, 20, 200, 120, kind="image")]
    j = verdict(covered, "layout_layering")
    assert j.flawed and j.boxes == ("t", "photo") and j.evidence["overlaps"][0]["kind"] == "covered_by_later_element"
    assert j.evidence["overlaps"][0]["of_text"] == pytest.approx(0.5)
    straddling = [backdrop(), shape("panel", 20, 20, 140, 100), text("t", 60, 40, 200, 40)]
    j = verdict(straddling, "layout_layering")
    assert j.flawed and j.evidence["overlaps"][0]["kind"] == "straddles_element_edge"
    assert j.evidence["overlaps"][0]["of_text"] == pytest.approx(0.5)  # 100 of 200 px across


def test_layering_is_not_measurable_without_text():
    j = verdict([backdrop(), shape("a", 10, 10, 50, 50), shape("b", 30, 30, 50, 50)], "layout_layering")
    assert not j.flawed and j.evidence == {"measurable": False}


# --- alignment --------------------------------------------------------------------------------------------------------


def column(c_left):
    return [backdrop(), text("a", 40, 30, 200, 40), text("b", 40, 100, 120, 30), text("c", c_left, 200, 260, 30)]


def test_left_aligned_column_is_aligned():
    j = verdict(column(40), "layout_alignment")
    assert not j.flawed and j.evidence["aligned_count"] == 3 and j.evidence["near_miss_count"] == 0


def test_an_edge_a_few_pixels_off_is_a_near_miss():
    j = verdict(column(47), "layout_alignment")
    assert j.flawed and j.boxes == ("c",) and j.score == pytest.approx(1 / 3, abs=1e-4)
    row = {r["element_id"]: r for r in j.evidence["elements"]}["c"]
    assert row["distance_px"] == pytest.approx(7.0) and row["nearest_edge"] == "left" and row["nearest_to"] in ("a", "b")


def test_an_element_far_from_any_edge_is_a_choice_not_a_near_miss():
    j = verdict(column(110), "layout_alignment")  # c: left 110, centre 240, right 370: 40+ px from every line
    assert not j.flawed
    assert not {r["element_id"]: r for r in j.evidence["elements"]}["c"]["aligned"]


def test_centred_on_the_canvas_counts_as_aligned():
    j = verdict([backdrop(), text("a", 100, 30, 200, 40), text("b", 150, 120, 100, 30)], "layout_alignment")
    assert not j.flawed and j.evidence["aligned_count"] == 2


# --- balance and whitespace ------------------------------------------------------------------------------------------


def test_all_weight_on_one_side_tips_the_balance():
    heavy_left = [backdrop(), shape("block", 20, 50, 100, 200, color=BLACK)]
    j = verdict(heavy_left, "layout_balance")
    # The block's centre is at x = 70 of 400: offset -.325, beyond the .12 limit.
    assert j.flawed and j.boxes == ("block",)
    assert j.evidence["centroid"][0] == pytest.approx(70 / 400, abs=0.01) and j.evidence["offset"][0] < -0.3
    balanced = [backdrop(), shape("l", 20, 50, 100, 200, color=BLACK), shape("r", 280, 50, 100, 200, color=BLACK)]
    j = verdict(balanced, "layout_balance")
    assert not j.flawed and j.evidence["centroid"][0] == pytest.approx(0.5, abs=0.01) and j.boxes == ()


def test_balance_is_not_measurable_on_an_empty_canvas():
    assert verdict([backdrop()], "layout_balance").evidence == {"measurable": False}


def test_text_touching_or_crossing_the_canvas_edge_lacks_whitespace():
    roomy = [backdrop(), text("t", 40, 40, 200, 40)]
    assert not verdict(roomy, "layout_whitespace").flawed
    touching = [backdrop(), text("t", 0, 40, 200, 40)]
    j = verdict(touching, "layout_whitespace")
    assert j.flawed and j.boxes == ("t",) and j.evidence["elements"][0]["problem"] == "touches_edge"
    crossing = [backdrop(), text("t", 280, 40, 200, 40)]
    j = verdict(crossing, "layout_whitespace")
    row = j.evidence["elements"][0]
    assert j.flawed and row["problem"] == "crosses_edge" and row["edge"] == "right" and row["min_margin_px"] == -80


def test_small_graphic_cut_off_is_flagged_a_bleeding_one_is_not():
    cut = [backdrop(), shape("logo", -40, 100, 100, 80)]  # 40 % of its width beyond the left edge
    j = verdict(cut, "layout_whitespace")
    assert j.flawed and j.evidence["elements"][0]["problem"] == "cut_off"
    bleed = [backdrop(), shape("band", -10, 200, 420, 60)]  # wider than the canvas: a full-bleed band
    assert not verdict(bleed, "layout_whitespace").flawed


# --- font hierarchy ----------------------------------------------------------------------------------------------


def test_body_copy_set_larger_than_the_headline_inverts_the_hierarchy():
    body_words = "Join us for live music, food trucks and games"
    good = [backdrop(), text("head", 40, 30, 300, 60, "SUMMER FEST", size=48), text("body", 40, 120, 300, 40, body_words, size=16)]
    j = verdict(good, "font_hierarchy")
    assert not j.flawed and [t["element_id"] for t in j.evidence["texts"]] == ["head", "body"]
    inverted = [backdrop(), text("head", 40, 30, 300, 60, "SUMMER FEST", size=20),
                text("body", 40, 120, 300, 40, body_words, size=40)]
    j = verdict(inverted, "font_hierarchy")
    assert j.flawed and j.boxes == ("body", "head")
    assert j.evidence["inversions"][0]["size_ratio"] == pytest.approx(2.0)
    assert j.evidence["inversions"][0]["longer_chars"] == 37 and j.evidence["inversions"][0]["shorter_chars"] == 10


def test_hierarchy_needs_two_texts():
    assert verdict([backdrop(), text("t", 40, 40, 200, 40)], "font_hierarchy").evidence == {"measurable": False}


# --- graphics quality ----------------------------------------------------------------------------------------------


def photo(size=(160, 120), seed=3):
    """A picture with fine detail and hard-edged shapes (deterministic)."""
    rng = np.random.default_rng(seed)
    base = Image.fromarray((rng.random((size[1] // 4, size[0] // 4, 3)) * 255).astype(np.uint8)).resize(size, Image.Resampling.BICUBIC)
    noise = (rng.random((size[1], size[0], 3)) * 60 - 30)
    picture = Image.fromarray(np.clip(np.asarray(base, dtype=float) + noise, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(picture)
    for _ in range(5):
        x, y = int(rng.integers(0, size[0] - 30)), int(rng.integers(0, size[1] - 30))
        draw.ellipse([x, y, x + 28, y + 28], fill=tuple(int(v) for v in rng.integers(0, 255, 3)))
    return picture


def graphic_verdict(picture):
    elements = [backdrop(), shape("pic", 40, 40, 160, 120, kind="image"), text("t", 240, 60, 120, 30)]
    return verdict(elements, "graphics_quality", pictures={"pic": picture})


def test_sharp_picture_passes_blurred_and_blocky_ones_fail():
    sharp = graphic_verdict(photo())
    assert not sharp.flawed and sharp.evidence["graphics"][0]["blur"] < 0.5
    blurred = graphic_verdict(photo().filter(ImageFilter.GaussianBlur(3)))
    assert blurred.flawed and blurred.boxes == ("pic",) and blurred.evidence["graphics"][0]["problems"] == ["blurred"]
    assert blurred.evidence["graphics"][0]["blur"] > 0.6
    blocky = graphic_verdict(photo().resize((40, 30), Image.Resampling.BILINEAR).resize((160, 120), Image.Resampling.NEAREST))
    assert blocky.flawed and "blocky" in blocky.evidence["graphics"][0]["problems"]
    assert blocky.evidence["graphics"][0]["block_size"] == 4.0


def test_a_flat_graphic_cannot_be_judged_for_sharpness():
    j = verdict([backdrop(), shape("flat", 40, 40, 160, 120, kind="image", color=(200, 40, 40))], "graphics_quality")
    assert not j.flawed and j.evidence == {"measurable": False}


def test_text_painted_over_a_blurred_picture_does_not_hide_the_blur():
    picture = photo().filter(ImageFilter.GaussianBlur(3))
    elements = [backdrop(), shape("pic", 40, 40, 160, 120, kind="image"),
                text("t", 50, 60, 140, 30, words="CRISP", color=BLACK, size=28)]
    j = verdict(elements, "graphics_quality", pictures={"pic": picture})
    assert j.flawed and j.evidence["graphics"][0]["visible_share"] == pytest.approx(1 - 140 * 30 / (160 * 120), abs=0.01)


def test_blur_and_blockiness_measures_directly():
    grey = np.asarray(photo().convert("L"), dtype=float)
    sharp, spread = blur_measure(grey)
    soft, _ = blur_measure(np.asarray(photo().filter(ImageFilter.GaussianBlur(3)).convert("L"), dtype=float))
    assert sharp < 0.5 < 0.6 < soft and spread > 3.0
    assert blur_measure(np.full((50, 50), 90.0)) == (0.0, 0.0)
    assert grid_blockiness(grey) == 0.0
    blocks = np.kron(np.asarray(photo((80, 60)).convert("L"), dtype=float), np.ones((5, 5)))
    assert grid_blockiness(blocks) == 5.0
    assert grid_blockiness(np.full((50, 50), 90.0)) is None


# --- colour ----------------------------------------------------------------------------------------------------------


BLUE_GROUND = (40, 80, 200)  # hue 225


def test_a_hue_neither_close_nor_opposite_clashes():
    orange = verdict([backdrop(BLUE_GROUND), text("t", 40, 40, 250, 40, color=(240, 140, 20), size=30)], "color_harmony")
    assert not orange.flawed and orange.evidence["coloured_elements"] == 1  # 30 deg vs 225 deg: complementary
    green = verdict([backdrop(BLUE_GROUND), text("t", 40, 40, 250, 40, color=(40, 200, 80), size=30)], "color_harmony")
    clash = green.evidence["clashes"][0]
    assert green.flawed and green.boxes == ("t",)
    # green 135 deg against blue 225 deg: 90 deg apart, inside the discordant 30-100 band.
    assert clash["hue"] == pytest.approx(135, abs=1) and clash["palette_hue"] == pytest.approx(225, abs=5)
    assert clash["hue_distance"] == pytest.approx(90, abs=5)


def test_harmony_needs_colour_to_measure():
    grey = [backdrop((230, 230, 230)), text("t", 40, 40, 250, 40, color=(40, 40, 40), size=30)]
    assert verdict(grey, "color_harmony").evidence == {"measurable": False}


def test_a_busy_palette_and_a_clash_lower_appeal():
    hues = [(220, 40, 40), (240, 220, 30), (40, 180, 60), (40, 90, 220), (160, 40, 200)]
    busy = [backdrop()] + [shape(f"s{i}", 10 + 78 * i, 40, 70, 220, color=c) for i, c in enumerate(hues)]
    j = verdict(busy, "color_appeal")
    assert j.flawed and j.evidence["busy_palette"] and len(j.evidence["strong_families"]) >= 4
    calm = [backdrop(), shape("a", 20, 40, 150, 200, color=(40, 90, 220)), shape("b", 230, 40, 150, 200, color=(50, 110, 230))]
    j = verdict(calm, "color_appeal")
    assert not j.flawed and not j.evidence["busy_palette"]


def test_psychology_and_relevance_are_never_guessed():
    elements = [backdrop(), text("t", 40, 40, 250, 40)]
    for indicator in ("color_psychology", "graphics_relevance"):
        j = verdict(elements, indicator)
        assert (j.flawed, j.score, j.evidence, j.boxes) == (False, 0.0, {"measurable": False}, ())


# --- whole-design behaviour -----------------------------------------------------------------------------------------


def test_every_indicator_is_answered_deterministically_and_as_json():
    elements = [backdrop((245, 240, 230)), shape("panel", 30, 30, 200, 120, color=(200, 60, 40)),
                text("head", 40, 40, 180, 40, "OPEN DAY", color=WHITE, size=32),
                text("body", 40, 170, 300, 30, "Saturday from ten, all welcome", color=(90, 90, 90), size=16)]
    d, image = design(*elements), paint(elements)
    first = [j.as_dict() for j in judge_design(d, image)]
    second = [j.as_dict() for j in judge_design(d, image)]
    assert first == second and [j["indicator"] for j in first] == list(INDICATOR_IDS)
    assert json.loads(json.dumps(first)) == first
    for j in first:
        assert j["flawed"] == (j["score"] > 0) and 0.0 <= j["score"] <= 1.0 and j["claims"]


def test_unknown_indicator_and_wrong_render_size_are_named():
    d = design(backdrop())
    with pytest.raises(JudgeError, match="'layout_beauty'") as info:
        judge(d, paint([backdrop()]), "layout_beauty")
    assert info.value.reason_code == "unknown_indicator"
    with pytest.raises(JudgeError) as info:
        judge(d, Image.new("RGB", (300, 300)), "layout_balance")
    assert info.value.reason_code == "render_size" and "400x300" in str(info.value)


def test_rotated_bounds_swap_width_and_height_at_ninety_degrees():
    e = shape("r", 100, 100, 80, 20)
    assert element_bounds(e) == (100, 100, 180, 120)
    x1, y1, x2, y2 = element_bounds(Element("r", "svg", 100, 100, 80, 20, angle=90))
    assert (x1, y1, x2, y2) == pytest.approx((130, 70, 150, 150))
    half = element_bounds(Element("r", "svg", 0, 0, 10, 10, angle=45))
    assert half[2] - half[0] == pytest.approx(10 * math.sqrt(2))
