import random
from dataclasses import replace

import pytest

from assets.designs.logic.design_model import Design, Element
from assets.designs.logic.perturb import (
    DEFAULT_FONT_LIBRARY,
    OPERATION_NAMES,
    OPERATIONS,
    PerturbError,
    PerturbSettings,
    check_operation,
    contrast_ratio,
    default_background_color,
    dominant_color,
    hue_distance,
    hue_saturation_value,
    is_backdrop,
    operations_for,
    perturb_design,
    perturbed_design_id,
)

W, H = 800, 600
POOL = ("layers/photo-a.png", "layers/photo-b.png", "layers/photo-c.png")
SEEDS = range(150)


def _design(design_id: str = "crello-001") -> Design:
    return Design(
        design_id=design_id,
        canvas_width=W,
        canvas_height=H,
        elements=(
            Element("bg", "background", 0, 0, W, H, color=(240, 230, 200)),
            Element("backdrop", "image", 0, 0, W, H, layer="layers/backdrop.png"),
            Element("photo", "image", 100, 100, 300, 200, layer="layers/photo-a.png"),
            Element("badge", "svg", 560, 40, 120, 120, color=(30, 120, 200), layer="layers/badge.png"),
            Element("title", "text", 50, 380, 500, 80, color=(20, 20, 20), text="Summer Sale", font="DejaVu Serif",
                    font_size=48, text_align="center"),
            Element("body", "text", 50, 480, 300, 40, color=(200, 40, 40), text="This weekend only", font="Montserrat",
                    font_size=20, letter_spacing=1.5),
            Element("price", "text", 600, 520, 160, 50, color=(10, 10, 10), text="-40%", font="Liberation Sans",
                    font_size=30, text_align="right"),
        ),
        preview="previews/crello-001.png",
        attributes={"category": "sale"},
    )


def _only(op: str, **overrides) -> PerturbSettings:
    return PerturbSettings(operations=(op,), **overrides)


def _perturbations(op: str | None = None, seeds=SEEDS, design: Design | None = None, **overrides):
    design = design or _design()
    settings = _only(op, **overrides) if op else PerturbSettings(**overrides)
    return [(seed, perturb_design(design, seed, settings, POOL)) for seed in seeds]


# --- each operation changes exactly what it says -----------------------------------------------------------

EXPECTED_FIELDS = {
    "position_shift": {"left", "top"},
    "font_size_change": {"font_size", "left", "top", "width", "height", "letter_spacing"},
    "font_swap": {"font"},
    "low_contrast_color": {"color"},
    "clashing_color": {"color"},
    "image_replacement": {"layer"},
    "downsample": {"effects"},
    "blur": {"effects"},
}


@pytest.mark.parametrize("op", OPERATION_NAMES)
def test_each_operation_changes_exactly_its_fields_and_nothing_else(op):
    base = _design()
    for _, result in _perturbations(op, seeds=range(60)):
        out = result.design
        assert (out.canvas_width, out.canvas_height, out.source_format) == (base.canvas_width, base.canvas_height,
                                                                           base.source_format)
        assert len(out.elements) == len(base.elements)
        assert dict(out.attributes) == {"category": "sale", "base_design_id": "crello-001",
                                         "parent_design_id": "crello-001"}
        touched = {o.element_index: o for o in result.operations}
        assert all(o.op == op for o in result.operations)
        for index, (before, after) in enumerate(zip(base.elements, out.elements)):
            old, new = before.to_dict(), after.to_dict()
            changed = {name for name in old if old[name] != new[name]}
            if index not in touched:
                assert after == before, f"element {index} changed without an operation"
                continue
            logged = touched[index]
            assert changed and changed == set(logged.before) == set(logged.after)
            assert changed <= EXPECTED_FIELDS[op] == set(OPERATIONS[op].fields)
            assert logged.before == {k: old[k] for k in changed} and logged.after == {k: new[k] for k in changed}
            assert check_operation(logged) == []
            if op == "position_shift":
                assert after.box[2:] == before.box[2:]
            if op == "font_size_change":
                assert {"font_size", "width", "height"} <= changed
                assert ("letter_spacing" in changed) == (before.letter_spacing != 0)
            if op in ("downsample", "blur"):
                assert after.effects[:-1] == before.effects and after.effects[-1][0] == op


def test_font_size_change_scales_box_about_the_alignment_anchor():
    base = _design()
    seen = set()
    for _, result in _perturbations("font_size_change"):
        for o in result.operations:
            before, after = base.elements[o.element_index], result.design.elements[o.element_index]
            f = o.params["factor"]
            assert after.font_size == round(before.font_size * f, 2)
            assert after.width == pytest.approx(before.width * f, abs=0.01)
            assert after.height == pytest.approx(before.height * f, abs=0.01)
            # vertical centre stays; horizontal anchor follows the text alignment
            assert after.top + after.height / 2 == pytest.approx(before.top + before.height / 2, abs=0.02)
            if before.text_align == "center":
                assert after.left + after.width / 2 == pytest.approx(before.left + before.width / 2, abs=0.02)
            elif before.text_align == "right":
                assert after.left + after.width == pytest.approx(before.left + before.width, abs=0.02)
            else:
                assert after.left == before.left
            if before.letter_spacing:
                assert after.letter_spacing == round(before.letter_spacing * f, 3)
            seen.add(before.text_align)
    assert seen == {"left", "center", "right"}


# --- intensity bounds --------------------------------------------------------------------------------------


def test_position_shift_bounds_and_stays_partly_on_canvas():
    base, s = _design(), PerturbSettings()
    count = 0
    for _, result in _perturbations("position_shift"):
        for o in result.operations:
            p = o.params
            assert s.shift_delta[0] <= p["delta"] <= s.shift_delta[1]
            assert abs(p["requested_dx"]) <= p["delta"] * W + 0.01 and abs(p["requested_dy"]) <= p["delta"] * H + 0.01
            assert max(abs(p["requested_dx"]) / W, abs(p["requested_dy"]) / H) >= s.min_shift - 1e-6
            left, top, width, height = o.box_after
            assert (left - o.box_before[0], top - o.box_before[1]) == pytest.approx((p["dx"], p["dy"]), abs=0.011)
            visible_x = min(left + width, W) - max(left, 0)
            visible_y = min(top + height, H) - max(top, 0)
            assert visible_x >= s.min_visible * min(width, W) - 0.01
            assert visible_y >= s.min_visible * min(height, H) - 0.01
            assert not is_backdrop(base.elements[o.element_index], W, H)
            count += 1
    assert count > 150


def test_position_shift_at_the_edge_is_clamped_or_reversed_never_lost():
    # a box already hanging half off the right edge: a shift to the right must be clamped or turned back
    edge = Design("edge", W, H, (Element("bg", "background", 0, 0, W, H, color=(255, 255, 255)),
                                 Element("tag", "svg", W - 50, 100, 100, 100, color=(0, 0, 0))))
    directions = set()
    for _, result in _perturbations("position_shift", design=edge):
        (o,) = result.operations
        assert o.box_after[0] <= W - 50 + 1e-9            # never further out than half the box
        assert o.box_after != o.box_before
        directions.add((o.params["reversed"], o.params["clamped"]))
    assert (True, False) in directions or (False, True) in directions


def test_font_size_factor_is_away_from_one():
    s = PerturbSettings()
    directions = set()
    for _, result in _perturbations("font_size_change"):
        for o in result.operations:
            f = o.params["factor"]
            low, high = s.font_grow if o.params["direction"] == "grow" else s.font_shrink
            assert low <= f <= high
            directions.add(o.params["direction"])
    assert directions == {"grow", "shrink"}


def test_low_contrast_color_is_near_the_background():
    s = PerturbSettings()
    for _, result in _perturbations("low_contrast_color"):
        for o in result.operations:
            new, bg = tuple(o.after["color"]), tuple(o.params["background"])
            assert bg == (240, 230, 200)   # the background element lies under everything
            assert s.low_contrast_offset[0] <= o.params["epsilon"] <= s.low_contrast_offset[1]
            assert all(abs(n - b) <= o.params["epsilon"] + 0.5 for n, b in zip(new, bg))
            assert contrast_ratio(new, bg) == pytest.approx(o.params["contrast_ratio"], abs=1e-4)
            assert o.params["contrast_ratio"] <= 1.5


def test_low_contrast_uses_the_callers_background_callback():
    calls = []

    def dark(design, index):
        calls.append(index)
        return (0, 0, 0)

    design = _design()
    result = perturb_design(design, 3, _only("low_contrast_color"), POOL, background_color=dark)
    assert calls == [o.element_index for o in result.operations]
    for o in result.operations:
        assert o.params["background"] == [0, 0, 0] and max(o.after["color"]) <= 24
    with pytest.raises(PerturbError) as error:
        perturb_design(design, 3, _only("low_contrast_color"), POOL, background_color=lambda d, i: (300, 0, 0))
    assert error.value.reason_code == "bad_background_color" and "element" in str(error.value)


def test_default_background_color_walks_down_to_a_covering_colour():
    design = _design()
    assert default_background_color(design, 4) == (240, 230, 200)       # title over the background colour
    over_badge = replace(design.elements[5], left=570, top=50, width=50, height=50)
    design2 = Design("x", W, H, design.elements[:4] + (over_badge,))
    assert default_background_color(design2, 4) == (30, 120, 200)       # the svg badge covers its centre
    lone = Design("y", W, H, (Element("t", "text", 0, 0, 10, 10, color=(0, 0, 0), font_size=5),))
    assert default_background_color(lone, 0) == (255, 255, 255)


def test_clashing_color_hue_is_far_from_the_reference():
    s = PerturbSettings()
    design = _design()
    for _, result in _perturbations("clashing_color", design=design):
        for o in result.operations:
            p = o.params
            hue, sat, val = hue_saturation_value(o.after["color"])
            assert s.clash_hue_shift[0] <= p["hue_shift"] <= s.clash_hue_shift[1]
            # 150..210° away either way round is at least 150° on the circle; 2° slack for integer RGB
            assert hue_distance(hue, p["reference_hue"]) >= 148
            assert sat >= s.clash_saturation[0] - 0.02 and val >= s.clash_value[0] - 0.01
            assert p["reference"] in ("dominant", "element", "random")


def test_clashing_color_opposes_a_dominant_chromatic_colour():
    red_poster = Design("red", W, H, (
        Element("bg", "background", 0, 0, W, H, color=(200, 20, 20)),
        Element("t", "text", 100, 100, 300, 60, color=(255, 255, 255), font="Lato", font_size=40),
    ))
    assert dominant_color(red_poster, exclude_index=1) == (200, 20, 20)
    for _, result in _perturbations("clashing_color", design=red_poster, seeds=range(40)):
        (o,) = result.operations
        assert o.params["reference"] == "dominant" and o.params["reference_hue"] == pytest.approx(0.0, abs=0.01)
        hue, _, _ = hue_saturation_value(o.after["color"])
        assert 148 <= hue <= 212       # cyan-ish, opposite red


def test_graphic_effect_bounds():
    s = PerturbSettings()
    factors = set()
    for _, result in _perturbations("downsample"):
        for o in result.operations:
            assert isinstance(o.params["factor"], int) and 3 <= o.params["factor"] <= 8
            assert o.after["effects"][-1] == ["downsample", float(o.params["factor"])]
            factors.add(o.params["factor"])
    assert factors == set(range(3, 9))
    for _, result in _perturbations("blur"):
        for o in result.operations:
            p = o.params
            assert 2.0 <= p["base_radius"] <= 8.0
            short = min(o.box_before[2], o.box_before[3])
            assert p["scale"] == pytest.approx(min(max(short / 300, 0.5), 3.0), abs=1e-4)
            assert p["radius"] == pytest.approx(p["base_radius"] * p["scale"], abs=0.01)
            assert o.after["effects"][-1] == ["blur", p["radius"]]
            assert s.blur_radius[0] * s.blur_scale_bounds[0] - 0.01 <= p["radius"] <= 8.0 * 3.0


def test_image_replacement_never_keeps_the_current_layer():
    for _, result in _perturbations("image_replacement"):
        for o in result.operations:
            assert o.after["layer"] != o.before["layer"] and o.after["layer"] in POOL
            assert o.params["from"] == o.before["layer"]
    photo = _design().elements[2]
    assert "image_replacement" not in operations_for(photo, _design(), ["layers/photo-a.png"])
    assert "image_replacement" not in operations_for(photo, _design(), [])
    assert "image_replacement" in operations_for(photo, _design(), ["layers/photo-a.png", "x.png"])


def test_font_swap_picks_another_family_of_another_style():
    categories = {family: category for family, category in DEFAULT_FONT_LIBRARY}
    seen = set()
    for _, result in _perturbations("font_swap"):
        for o in result.operations:
            assert o.after["font"] != o.before["font"] and o.after["font"] in categories
            if o.before["font"] in categories:        # a known font moves to another style category
                assert categories[o.after["font"]] != categories[o.before["font"]]
            seen.add(o.after["font"])
    assert len(seen) >= 6


# --- selection, validity, determinism ----------------------------------------------------------------------


def test_one_to_three_distinct_elements_with_type_valid_operations():
    counts = set()
    base = _design()
    for _, result in _perturbations():
        indices = [o.element_index for o in result.operations]
        assert 1 <= len(indices) <= 3 and len(set(indices)) == len(indices) and indices == sorted(indices)
        counts.add(len(indices))
        for o in result.operations:
            element = base.elements[o.element_index]
            assert (o.element_id, o.element_type) == (element.element_id, element.type)
            assert o.op in operations_for(element, base, POOL)
            assert check_operation(o) == []
            if element.type != "text":
                assert OPERATIONS[o.op].family != "font"
            if o.op in ("image_replacement",):
                assert element.type in ("image", "mask")
            assert o.element_index != 0 or o.op in ("downsample", "blur")   # the background only gets effects
    assert counts == {1, 2, 3}


def test_operations_for_by_type():
    d = _design()
    e = d.elements
    assert operations_for(e[0], d, POOL) == []                     # flat colour background, no layer
    assert operations_for(e[1], d, POOL) == ["image_replacement", "downsample", "blur"]   # full-canvas photo
    assert operations_for(e[2], d, POOL) == ["position_shift", "image_replacement", "downsample", "blur"]
    assert operations_for(e[3], d, POOL) == ["position_shift", "low_contrast_color", "clashing_color", "downsample", "blur"]
    assert operations_for(e[4], d, POOL) == ["position_shift", "font_size_change", "font_swap", "low_contrast_color",
                                             "clashing_color"]
    blurred = replace(e[2], effects=(("blur", 3.0),))
    assert "blur" not in operations_for(blurred, d, POOL) and "downsample" in operations_for(blurred, d, POOL)
    assert operations_for(e[4], d, POOL, PerturbSettings(operations=("blur", "font_swap"))) == ["font_swap"]


def test_few_candidates_and_fixed_counts():
    two = Design("two", W, H, (Element("bg", "background", 0, 0, W, H, color=(255, 255, 255)),
                               Element("a", "svg", 10, 10, 50, 50, color=(0, 0, 0)),
                               Element("b", "text", 100, 100, 200, 40, color=(0, 0, 0), font_size=20)))
    for seed in range(40):
        assert len(perturb_design(two, seed, PerturbSettings(min_elements=3, max_elements=3)).operations) == 2
        assert len(perturb_design(_design(), seed, PerturbSettings(min_elements=2, max_elements=2), POOL).operations) == 2


def test_same_seed_same_result_different_seed_different():
    design = _design()
    first = perturb_design(design, 11, PerturbSettings(), POOL)
    again = perturb_design(design, 11, PerturbSettings(), list(reversed(POOL)))  # pool order does not matter
    assert first == again and first.design.to_json() == again.design.to_json()
    ids = {perturb_design(design, seed, PerturbSettings(), POOL).design.design_id for seed in range(30)}
    assert len(ids) >= 28
    # the generator depends on the design id, not on how many designs were perturbed before
    other = _design("crello-002")
    rng_noise = random.Random(0)
    for _ in range(3):
        perturb_design(other, rng_noise.randint(0, 99), PerturbSettings(), POOL)
    assert perturb_design(design, 11, PerturbSettings(), POOL) == first
    assert perturb_design(other, 11, PerturbSettings(), POOL).operations != first.operations


def test_perturbed_record_identity_and_log():
    design = _design()
    result = perturb_design(design, 5, PerturbSettings(), POOL)
    out = result.design
    assert out.design_id == perturbed_design_id("crello-001", result.operations)
    assert out.design_id.startswith("crello-001-p") and len(out.design_id) == len("crello-001-p") + 16
    assert out.preview is None and design.preview == "previews/crello-001.png"
    assert out.attributes["base_design_id"] == "crello-001" and design.attributes == {"category": "sale"}
    for o in result.operations:
        assert o.box_before == design.elements[o.element_index].box
        assert o.box_after == out.elements[o.element_index].box
    rows = result.log_rows()
    assert [r["position"] for r in rows] == list(range(len(result.operations)))
    assert all(r["design_id"] == out.design_id and r["parent_design_id"] == "crello-001" and r["seed"] == 5 for r in rows)
    # a perturbation of a perturbation keeps the root base id (splits are by base design)
    twice = perturb_design(out, 6, PerturbSettings(), POOL)
    assert twice.design.attributes["base_design_id"] == "crello-001"
    assert twice.design.attributes["parent_design_id"] == out.design_id


# --- errors ------------------------------------------------------------------------------------------------


def test_errors_name_the_problem():
    only_bg = Design("bare", W, H, (Element("bg", "background", 0, 0, W, H, color=(1, 2, 3)),))
    with pytest.raises(PerturbError) as error:
        perturb_design(only_bg, 1, PerturbSettings(), POOL)
    assert error.value.reason_code == "no_perturbable_element" and "bare" in str(error.value)
    bad = Design("bad", W, H, (Element("t", "text", 0, 0, 10, 10, color=(0, 0, 0), font_size=-3),))
    with pytest.raises(PerturbError) as error:
        perturb_design(bad, 1, PerturbSettings())
    assert error.value.reason_code == "bad_font_size" and "element 0 (t)" in str(error.value)
    with pytest.raises(PerturbError) as error:
        perturb_design(Design("nan", W, H, (Element("s", "svg", float("nan"), 0, 1, 1),)), 1, PerturbSettings())
    assert error.value.reason_code == "bad_geometry" and "left" in str(error.value)
    for kwargs in ({"min_elements": 0}, {"min_elements": 3, "max_elements": 2}, {"operations": ("rotate",)},
                   {"font_shrink": (0.9, 1.2)}, {"font_families": (("Lato", "sans"),)}):
        with pytest.raises(PerturbError) as error:
            PerturbSettings(**kwargs)
        assert error.value.reason_code == "bad_settings"
