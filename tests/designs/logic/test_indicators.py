from collections import Counter

import pytest

from assets.designs.logic.indicators import (
    DIMENSIONS,
    INDICATORS,
    answer_elements,
    indicator,
    indicators_affected,
    indicators_in,
    operations_affecting,
)
from assets.designs.logic.design_model import Design, Element
from assets.designs.logic.perturb import OPERATION_NAMES, PerturbSettings, perturb_design

LAYOUT = ["layout_balance", "layout_layering", "layout_whitespace", "layout_alignment"]


def test_twelve_indicators_in_four_dimensions():
    ids = [i.id for i in INDICATORS]
    assert len(ids) == len(set(ids)) == 12
    assert DIMENSIONS == ("layout", "color", "font", "graphics")
    assert Counter(i.dimension for i in INDICATORS) == {"layout": 4, "color": 4, "font": 2, "graphics": 2}
    assert [i.name for i in indicators_in("layout")] == ["Balance", "Layering", "Whitespace", "Alignment"]
    assert [i.name for i in indicators_in("color")] == ["Harmony", "Contrast", "Appeal", "Psychology"]
    assert [i.name for i in indicators_in("font")] == ["Legibility", "Hierarchy"]
    assert [i.name for i in indicators_in("graphics")] == ["Quality", "Relevance"]
    assert all(i.id == f"{i.dimension}_{i.name.lower()}" for i in INDICATORS)
    # definitions and questions are present, distinct and end as sentences
    assert len({i.definition for i in INDICATORS}) == 12 and all(len(i.definition) > 80 for i in INDICATORS)
    assert all(i.question.endswith("?") for i in INDICATORS)


def test_every_operation_affects_an_indicator_and_every_indicator_has_an_operation():
    for op in OPERATION_NAMES:
        assert indicators_affected([op]), op
    for item in INDICATORS:
        assert item.affected_by and set(item.affected_by) <= set(OPERATION_NAMES), item.id


def test_mapping_choices():
    assert indicators_affected(["position_shift"]) == LAYOUT
    assert indicators_affected([{"op": "low_contrast_color", "element_type": "text"}]) == [
        "color_contrast", "color_appeal", "font_legibility"]
    # recolouring a shape is not a legibility question
    assert indicators_affected([{"op": "low_contrast_color", "element_type": "svg"}]) == ["color_contrast", "color_appeal"]
    assert indicators_affected(["blur"]) == indicators_affected(["downsample"]) == ["graphics_quality"]
    assert "graphics_relevance" in indicators_affected(["image_replacement"])
    swap = indicators_affected([{"op": "font_swap", "element_type": "text"}])
    assert swap == ["font_legibility", "font_hierarchy"] and "color_psychology" not in swap
    assert "layout_alignment" not in indicators_affected(["font_size_change"])
    assert operations_affecting("graphics_relevance") == ("image_replacement",)


def test_indicators_affected_by_a_real_perturbation_is_ordered_and_deduplicated():
    design = Design("d", 400, 300, (
        Element("bg", "background", 0, 0, 400, 300, color=(255, 255, 255)),
        Element("a", "text", 20, 20, 200, 40, color=(0, 0, 0), font="Lato", font_size=24),
        Element("b", "text", 20, 200, 200, 40, color=(0, 0, 0), font="Lato", font_size=18),
    ))
    result = perturb_design(design, 1, PerturbSettings(operations=("position_shift",), min_elements=2, max_elements=2))
    assert len(result.operations) == 2
    assert indicators_affected(result.operations) == LAYOUT
    assert indicators_affected([o.to_dict() for o in result.operations]) == LAYOUT
    assert indicators_affected([]) == []


def test_lookups_fail_clearly():
    assert indicator("font_legibility").dimension == "font"
    with pytest.raises(KeyError, match="unknown indicator 'legibility'"):
        indicator("legibility")
    with pytest.raises(KeyError, match="unknown dimension"):
        indicators_in("typography")
    with pytest.raises(KeyError, match="unknown operation 'rotate'"):
        indicators_affected(["rotate"])


OPS = [("e-photo", "image", "blur"), ("e-head", "text", "font_swap"), ("e-head", "text", "position_shift")]


def test_every_indicator_gets_an_answer_element_the_touched_ones_theirs_the_others_the_first_change():
    every = answer_elements(OPS, every_indicator=True)
    assert list(every) == [i.id for i in INDICATORS]
    assert every["graphics_quality"] == "e-photo" and every["font_legibility"] == "e-head"
    assert every["layout_alignment"] == "e-head"          # the first operation that may affect it, not the first change
    assert every["color_harmony"] == every["graphics_relevance"] == "e-photo"   # untouched: the first change


def test_affected_only_names_just_the_indicators_an_operation_may_touch():
    affected = answer_elements(OPS)
    assert set(affected) == set(indicators_affected([{"op": op, "element_type": t} for _, t, op in OPS]))
    assert "color_harmony" not in affected and len(affected) < len(INDICATORS)
    assert answer_elements([], every_indicator=True) == {}   # an unperturbed design has no element to point at
