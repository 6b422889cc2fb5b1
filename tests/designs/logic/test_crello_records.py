import io
import json
import math
from pathlib import Path

import duckdb
import pytest
from PIL import Image

from assets.designs.logic.design_model import Design
from assets.designs.logic.crello_records import (
    REASON_CODES,
    DesignRecordError,
    class_labels_from_hf_metadata,
    design_from_record,
    design_to_record,
    detect_format,
    parse_color,
    read_design_folder,
    style_flag,
)
from assets.designs.parquet_source import parquet_class_labels, read_design_parquet
from sample.design_fixture import build_design_fixture
from warehouse.ids import sha256_hex


def _png(size=(4, 3), colour=(200, 10, 10, 255)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGBA", size, colour).save(buf, format="PNG")
    return buf.getvalue()


PNG_A = _png()
PNG_B = _png((2, 2), (0, 0, 255, 128))
BLOB_A = f"blob:{sha256_hex(PNG_A)}"
BLOB_B = f"blob:{sha256_hex(PNG_B)}"


def v5_record(**changes):
    """A small v5 record (400 x 300): background, half-transparent svg, text."""
    record = {
        "id": "d-v5", "canvas_width": 400, "canvas_height": 300, "length": 3,
        "type": ["ColoredBackground", "SvgElement", "TextElement"],
        "left": [0.0, -50.0, 40.0], "top": [0.0, 10.0, 200.0],
        "width": [400.0, 100.0, 320.0], "height": [300.0, 100.0, 40.0],
        "angle": [0.0, 270.0, 0.0], "opacity": [1.0, 0.5, 1.0],
        "color": [["rgba(1, 2, 3, 1)"], ["rgba(250, 251, 252, 0.5)"], []],
        "text_color": [[], [], ["rgba(9, 9, 9, 1)", "rgba(200, 0, 0, 1)", "rgba(200, 0, 0, 1)", "rgba(9, 9, 9, 1)"]],
        "text": ["", "", "Hi\nyo"], "font": ["", "", "Roboto"], "font_size": [0.0, 0.0, 30.0],
        "text_align": ["", "", "right"], "line_height": [1.0, 1.0, 1.25], "letter_spacing": [0.0, 0.0, 4.5],
        "capitalize": [False, False, True],
        "image": [{"bytes": PNG_A, "path": None}, {"bytes": PNG_B, "path": None}, None],
        "title": "Tiny", "keywords": ["a", "b"],
    }
    record.update(changes)
    return record


def v4_record(**changes):
    """A small v4 record (400 x 300 as string labels): normalised boxes, radians, 0-255 float colours."""
    record = {
        "id": "d-v4", "canvas_width": "400", "canvas_height": "300",
        "type": ["coloredBackground", "imageElement", "textElement"],
        "left": [0.0, 0.25, 0.1], "top": [0.0, 0.5, 0.1], "width": [1.0, 0.5, 0.8], "height": [1.0, 0.25, 0.2],
        "angle": [0.0, math.pi / 2, -math.pi / 6], "opacity": [1.0, 1.0, 1.0],
        "color": [[10.4, 20.6, 254.9], [0.0, 0.0, 0.0], [255.0, 255.0, 255.0]],
        "text": ["", "", "Fish &amp; Chips"], "font": ["", "", "Playfair Display"], "font_size": [0.0, 0.0, 24.0],
        "text_align": ["", "", "center"], "line_height": [1.0, 1.0, 1.2], "letter_spacing": [0.0, 0.0, 1.5],
        "capitalize": ["false", "false", "true"],
        "image": [PNG_A, PNG_A, PNG_B],
    }
    record.update(changes)
    return record


def reject(record, **options) -> DesignRecordError:
    with pytest.raises(DesignRecordError) as info:
        design_from_record(record, **options)
    assert info.value.reason_code in REASON_CODES
    return info.value


# --- mapping ----------------------------------------------------------------------------------------------


def test_v4_record_maps_to_pixels_degrees_and_canonical_values():
    design, layers = design_from_record(v4_record())
    assert design.source_format == "crello-v4"
    assert (design.design_id, design.canvas_width, design.canvas_height) == ("d-v4", 400, 300)
    bg, image, text = design.elements
    assert [e.type for e in design.elements] == ["background", "image", "text"]
    assert [e.element_id for e in design.elements] == ["e0", "e1", "e2"]
    assert bg.box == (0.0, 0.0, 400.0, 300.0) and bg.color == (10, 21, 255)  # rounded 0-255 floats
    # left 0.25*400, top 0.5*300, width 0.5*400, height 0.25*300; pi/2 rad = 90 degrees
    assert image.box == (100.0, 150.0, 200.0, 75.0) and image.angle == 90.0
    assert text.box == (40.0, 30.0, 320.0, 60.0) and text.angle == -30.0
    # font size, letter spacing and line height are not scaled (pixels / a multiple in both encodings)
    assert (text.font_size, text.letter_spacing, text.line_height) == (24.0, 1.5, 1.2)
    assert (text.text, text.font, text.text_align, text.capitalize) == ("Fish & Chips", "Playfair Display", "center", True)
    assert text.color == (255, 255, 255) and text.layer is None  # text layers are dropped by default
    assert bg.layer == image.layer == BLOB_A
    assert [(p.ref, p.data, p.element_index, p.width, p.height) for p in layers] == [(BLOB_A, PNG_A, 0, 4, 3)]


def test_v5_record_maps_colours_text_and_attributes():
    design, layers = design_from_record(v5_record())
    assert design.source_format == "crello-v5"
    bg, svg, text = design.elements
    assert bg.color == (1, 2, 3) and svg.color == (250, 251, 252)  # rgba() alpha ignored
    assert svg.box == (-50.0, 10.0, 100.0, 100.0) and svg.angle == -90.0 and svg.opacity == 0.5  # 270 -> -90
    # text colour: the most frequent per-character colour, first seen wins the 2:2 tie
    assert text.color == (9, 9, 9)
    assert (text.text, text.font, text.font_size, text.text_align) == ("Hi\nyo", "Roboto", 30.0, "right")
    assert (text.line_height, text.letter_spacing, text.capitalize) == (1.25, 4.5, True)
    # non-text elements get model defaults for text attributes, whatever filler the dataset has
    assert (bg.font, bg.font_size, bg.text, bg.text_align) == (None, None, None, "left")
    assert [p.ref for p in layers] == [BLOB_A, BLOB_B] and [p.element_index for p in layers] == [0, 1]
    assert design.attributes == {"title": "Tiny", "keywords": ["a", "b"]}
    assert Design.from_dict(json.loads(design.to_json())) == design


def test_types_match_case_insensitively_and_text_defaults_apply():
    record = v5_record(type=["coloredbackground", "SVGELEMENT", "textelement"], line_height=[None, None, None],
                       letter_spacing=None, capitalize=None, text_align=["", "", ""], font=["", "", ""])
    design, _ = design_from_record(record)
    text = design.elements[2]
    assert [e.type for e in design.elements] == ["background", "svg", "text"]
    assert (text.line_height, text.letter_spacing, text.capitalize, text.text_align, text.font) == (1.0, 0.0, False, "left", None)


def test_integer_labels_need_and_use_label_tables():
    labels = {"type": ["TextElement", "SvgElement", "ColoredBackground"], "text_align": ["", "left", "center"],
              "font": ["", "Oswald"], "format": ["Poster", "Instagram"]}
    record = v5_record(type=[2, 1, 0], text_align=[0, 0, 2], font=[0, 0, 1], format=1)
    design, _ = design_from_record(record, class_labels=labels)
    assert [e.type for e in design.elements] == ["background", "svg", "text"]
    assert (design.elements[2].text_align, design.elements[2].font) == ("center", "Oswald")
    assert design.attributes["format"] == "Instagram"
    error = reject(record)
    assert (error.reason_code, error.field, error.element) == ("unknown_label", "type", 0)
    error = reject(v5_record(type=[2, 1, 7]), class_labels=labels)
    assert (error.reason_code, error.element) == ("unknown_label", 2) and "outside the 3 labels" in error.detail


def test_canvas_sizes_from_class_labels_and_numeric_strings():
    labels = {"canvas_width": ["1080", "400"], "canvas_height": ["300"]}
    design, _ = design_from_record(v4_record(canvas_width=1, canvas_height=0), class_labels=labels)
    assert (design.canvas_width, design.canvas_height) == (400, 300)
    design, _ = design_from_record(v4_record(canvas_width=" 400 ", canvas_height=300.0))
    assert (design.canvas_width, design.canvas_height) == (400, 300)


def test_parse_color_forms():
    assert parse_color("rgba(52, 103, 151, 1)") == (52, 103, 151)
    assert parse_color("rgb(0,0,0)") == (0, 0, 0)
    assert parse_color("#0a0B0c") == (10, 11, 12) and parse_color("#fa0") == (255, 170, 0)
    assert parse_color([12.49, 12.5, 255.4]) == (12, 13, 255)  # 0-255 even as floats, half rounds up
    assert parse_color([1, 1, 1]) == (1, 1, 1)  # not read as 0-1 white
    assert parse_color(["rgba(1, 2, 3, 1)", "rgba(9, 9, 9, 1)"]) == (1, 2, 3)
    assert parse_color([]) is None and parse_color(None) is None
    for bad in ("red", "rgba(1, 2)", [1, 2], [300, 0, 0], [math.nan, 0, 0], {"r": 1}):
        with pytest.raises(ValueError):
            parse_color(bad)


def test_angles_are_normalised_and_rounded():
    record = v5_record(angle=[360.0, -190.0, 180.0])
    design, _ = design_from_record(record)
    assert [e.angle for e in design.elements] == [0.0, 170.0, 180.0]
    design, _ = design_from_record(v4_record(angle=[-math.pi, 2 * math.pi + 0.1, 1e-9]))
    assert [e.angle for e in design.elements] == [180.0, round(math.degrees(0.1), 4), 0.0]


# --- format detection -------------------------------------------------------------------------------------


def test_detect_format_geometry_rule_and_explicit_override():
    assert detect_format(v4_record()) == "crello-v4"
    assert detect_format(v5_record()) == "crello-v5"
    # within four canvas sizes -> v4 (an oversized v4 element still counts), beyond -> v5
    assert detect_format(v4_record(width=[1.0, 4.0, 0.8], left=[0.0, -3.5, 0.1])) == "crello-v4"
    assert detect_format(v4_record(width=[1.0, 4.5, 0.8])) == "crello-v5"
    # a record whose every element is under 4 px reads as v4 unless told otherwise
    tiny = v5_record(left=[0.0, 0.5, 0.5], top=[0.0, 0.0, 0.5], width=[3.0, 2.0, 3.0], height=[3.0, 1.0, 1.0],
                     angle=[0.0, 0.0, 0.0])
    auto, _ = design_from_record(tiny)
    forced, _ = design_from_record(tiny, fmt="crello-v5")
    assert auto.elements[1].box == (200.0, 0.0, 800.0, 300.0) and auto.source_format == "crello-v4"
    assert forced.elements[1].box == (0.5, 0.0, 2.0, 1.0) and forced.source_format == "crello-v5"
    with pytest.raises(ValueError, match="'v6'"):
        design_from_record(v5_record(), fmt="v6")


# --- errors -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, code, field, element",
    [
        ({"width": None}, "missing_field", "width", None),
        ({"id": None}, "missing_field", "id", None),
        ({"canvas_height": None}, "missing_field", "canvas_height", None),
        ({"left": [0.0, 1.0]}, "length_mismatch", "left", None),
        ({"text_align": ["", "left"]}, "length_mismatch", "text_align", None),
        ({"length": 4}, "length_mismatch", "length", None),
        ({"top": "0,10,200"}, "not_a_list", "top", None),
        ({"type": [], "left": [], "top": [], "width": [], "height": [], "length": 0, **{k: [] for k in (
            "angle", "opacity", "color", "text_color", "text", "font", "font_size", "text_align", "line_height",
            "letter_spacing", "capitalize", "image")}}, "no_elements", "type", None),
        ({"canvas_width": 0}, "bad_canvas", "canvas_width", None),
        ({"canvas_width": -400}, "bad_canvas", "canvas_width", None),
        ({"canvas_height": "tall"}, "bad_canvas", "canvas_height", None),
        ({"canvas_height": math.inf}, "bad_canvas", "canvas_height", None),
        ({"type": ["ColoredBackground", "VideoElement", "TextElement"]}, "unknown_type", "type", 1),
        ({"type": ["ColoredBackground", None, "TextElement"]}, "unknown_type", "type", 1),
        ({"left": [0.0, math.nan, 40.0]}, "bad_number", "left", 1),
        ({"angle": [0.0, math.inf, 0.0]}, "bad_number", "angle", 1),
        ({"top": [0.0, "10", 200.0]}, "bad_number", "top", 1),
        ({"width": [400.0, -100.0, 320.0]}, "bad_size", "width", 1),
        ({"height": [300.0, 100.0, 0.0]}, "bad_size", "height", 2),
        ({"height": [300.0, math.nan, 40.0]}, "bad_size", "height", 1),
        ({"left": [0.0, 400.0, 40.0]}, "box_outside_canvas", "left", 1),
        ({"top": [0.0, 10.0, -40.0]}, "box_outside_canvas", "top", 2),
        ({"opacity": [1.0, 1.5, 1.0]}, "bad_opacity", "opacity", 1),
        ({"opacity": [1.0, -0.2, 1.0]}, "bad_opacity", "opacity", 1),
        ({"color": [["rgba(white)"], [], []]}, "bad_color", "color", 0),
        ({"text_color": [[], [], ["nope"]]}, "bad_color", "text_color", 2),
        ({"text": ["", "", "   "]}, "text_missing", "text", 2),
        ({"text": ["", "", None]}, "text_missing", "text", 2),
        ({"font_size": [0.0, 0.0, 0.0]}, "bad_font_size", "font_size", 2),
        ({"font_size": [0.0, 0.0, None]}, "bad_font_size", "font_size", 2),
        ({"text_align": ["", "", "middle"]}, "bad_text_align", "text_align", 2),
        ({"line_height": [1.0, 1.0, 0.0]}, "bad_line_height", "line_height", 2),
        ({"capitalize": [False, False, "yes"]}, "bad_value", "capitalize", 2),
        ({"font_bold": [[], [], [True, "heavy", True, True, True]]}, "bad_value", "font_bold", 2),
        ({"font_italic": [[], [], 2]}, "bad_value", "font_italic", 2),
        ({"image": [{"bytes": PNG_A, "path": None}, None, None]}, "layer_missing", "image", 1),
        ({"image": [{"bytes": None, "path": None}, {"bytes": PNG_B}, None]}, "layer_missing", "image", 0),
        ({"image": [b"not a png", {"bytes": PNG_B}, None]}, "layer_undecodable", "image", 0),
        ({"image": [PNG_A[:50], {"bytes": PNG_B}, None]}, "layer_undecodable", "image", 0),
        ({"image": [PNG_A, "layers/1.png", None]}, "layer_missing", "image", 1),  # a path, no folder given
        ({"preview": b"garbage"}, "layer_undecodable", "preview", None),
    ],
)
def test_bad_records_name_reason_field_and_element(changes, code, field, element):
    error = reject(v5_record(**changes))
    assert (error.reason_code, error.field, error.element) == (code, field, element)
    if element is not None:
        assert error.detail.startswith(f"element {element}, field {field!r}: ")
    assert str(error).startswith(f"{code}: ")


def test_rotation_counts_for_the_outside_check():
    # 100 x 10 at left -80: its right end (x=20) is on the canvas; turned 90 degrees about its centre
    # (x=-30) it spans x -35..-25, entirely off the canvas
    upright = v5_record(left=[0.0, -80.0, 40.0], top=[0.0, 100.0, 200.0], width=[400.0, 100.0, 320.0],
                        height=[300.0, 10.0, 40.0], angle=[0.0, 0.0, 0.0])
    design_from_record(upright)
    error = reject(v5_record(**{**upright, "angle": [0.0, 90.0, 0.0]}))
    assert (error.reason_code, error.element) == ("box_outside_canvas", 1)
    # 60 x 100 at left -70 ends at x=-10 (off the canvas); turned 90 degrees it spans x -90..10 (on it)
    turned = v5_record(left=[0.0, -70.0, 40.0], top=[0.0, 0.0, 200.0], width=[400.0, 60.0, 320.0],
                       height=[300.0, 100.0, 40.0], angle=[0.0, 90.0, 0.0])
    design_from_record(turned)
    assert reject(v5_record(**{**turned, "angle": [0.0, 0.0, 0.0]})).reason_code == "box_outside_canvas"


def test_non_object_record_is_unreadable():
    assert reject(["not", "a", "record"]).reason_code == "unreadable_record"


def test_text_layers_are_kept_only_on_request():
    record = v5_record(image=[PNG_A, PNG_B, PNG_B])
    design, layers = design_from_record(record)
    assert design.elements[2].layer is None and len(layers) == 2
    design, layers = design_from_record(record, keep_text_layers=True)
    assert design.elements[2].layer == BLOB_B and [p.ref for p in layers] == [BLOB_A, BLOB_B]  # deduplicated


def test_design_to_record_round_trips_through_both_encodings():
    design, layers = design_from_record(v5_record())
    data = {p.ref: p.data for p in layers}
    for fmt in ("crello-v5", "crello-v4"):
        record = design_to_record(design, fmt, image_of=lambda i, e: {"bytes": data[e.layer], "path": None})
        again, _ = design_from_record(record)
        assert again.source_format == fmt
        assert again.elements == design.elements
        assert again.attributes == design.attributes
    v4 = design_to_record(design, "crello-v4")
    assert v4["canvas_width"] == "400" and v4["capitalize"] == ["false", "false", "true"]
    assert v4["type"] == ["coloredBackground", "svgElement", "textElement"]
    assert v4["width"][1] == pytest.approx(0.25) and v4["angle"][1] == pytest.approx(-math.pi / 2, abs=1e-7)
    v5 = design_to_record(design, "crello-v5")
    assert v5["text_color"][2] == ["rgba(9, 9, 9, 1)"] * 5 and v5["text_line"][2] == [0, 0, 1, 1, 1]
    assert v5["type"][2] == "TextElement" and v5["color"][2] == []


# --- bold / italic ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags, want",
    [
        ([True, True, False, True, False], True),   # 3 of 5: a majority
        ([True, False, True, False], False),        # 2 of 4: a tie is not bold
        ([True, False, False], False),               # 1 of 3
        ([1, 1, 0], True),                           # 0/1 integers count as booleans
        ([], False), (None, False),                  # nothing says bold
        (True, True), (False, False), ("true", True),  # one flag per element (the v4 extension)
    ],
)
def test_style_flag_majority_rule(flags, want):
    assert style_flag(flags) is want


def test_v5_bold_and_italic_come_from_the_per_character_majority():
    # "Hi\nyo" has 5 characters: 3 of 5 bold -> bold; 2 of 4 italic flags is a tie -> not italic
    record = v5_record(font_bold=[[], [], [True, True, True, False, False]],
                       font_italic=[[], [], [True, True, False, False]])
    text = design_from_record(record)[0].elements[2]
    assert (text.bold, text.italic) == (True, False)
    record = v5_record(font_bold=[[True], [True], [False] * 5], font_italic=[[], [], [True] * 5])
    design, _ = design_from_record(record)
    assert [(e.bold, e.italic) for e in design.elements] == [(False, False), (False, False), (False, True)]  # text only
    # a v5 record without the lists, and a genuine v4 record, have plain text
    assert not any(e.bold or e.italic for e in design_from_record(v5_record())[0].elements)
    assert not any(e.bold or e.italic for e in design_from_record(v4_record())[0].elements)


def test_bold_round_trips_through_both_encodings_and_the_model():
    design, layers = design_from_record(v5_record(font_bold=[[], [], [True] * 5], font_italic=[[], [], [True] * 5]))
    assert (design.elements[2].bold, design.elements[2].italic) == (True, True)
    data = {p.ref: p.data for p in layers}
    v5 = design_to_record(design, "crello-v5", image_of=lambda i, e: {"bytes": data[e.layer], "path": None})
    v4 = design_to_record(design, "crello-v4", image_of=lambda i, e: {"bytes": data[e.layer], "path": None})
    assert v5["font_bold"] == [[], [], [True] * 5] and v5["font_italic"] == [[], [], [True] * 5]
    assert v4["font_bold"] == v4["font_italic"] == [False, False, True]  # the v4 extension: one flag per element
    for record in (v5, v4):
        assert design_from_record(record)[0].elements == design.elements
    # v4 records of plain designs stay genuine v4 (no extension fields)
    assert "font_bold" not in design_to_record(design_from_record(v5_record())[0], "crello-v4")
    text = design.elements[2]
    assert text.to_dict()["bold"] is True and Design.from_dict(json.loads(design.to_json())) == design


def test_hf_metadata_label_tables():
    metadata = json.dumps({"info": {"features": {
        "type": {"feature": {"names": ["a", "b"], "_type": "ClassLabel"}, "_type": "Sequence"},
        "font": [{"names": ["x"], "_type": "ClassLabel"}],
        "text_align": {"feature": {"names": ["", "left"], "_type": "ClassLabel"}, "_type": "List"},
        "group": {"names": ["SM"], "_type": "ClassLabel"},
        "left": {"feature": {"dtype": "float32", "_type": "Value"}, "_type": "Sequence"},
    }}})
    assert class_labels_from_hf_metadata(metadata) == {
        "type": ("a", "b"), "font": ("x",), "text_align": ("", "left"), "group": ("SM",)}


# --- the fixture: folders ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("design_fixture")
    build_design_fixture(out)
    return out


@pytest.fixture(scope="module")
def expected(fixture_dir) -> dict:
    return json.loads((fixture_dir / "expected.json").read_text())


def assert_same_design(a: Design, b: Design) -> None:
    """Equal up to float tolerance: boxes within 0.5 px, angles within 0.01 degree."""
    assert (a.design_id, a.canvas_width, a.canvas_height, a.preview) == (b.design_id, b.canvas_width, b.canvas_height, b.preview)
    assert a.attributes == b.attributes
    assert len(a.elements) == len(b.elements)
    for x, y in zip(a.elements, b.elements, strict=True):
        assert all(abs(p - q) <= 0.5 for p, q in zip(x.box, y.box, strict=True)), (x.box, y.box)
        assert abs(x.angle - y.angle) <= 0.01
        assert x.opacity == pytest.approx(y.opacity, abs=1e-6)
        assert x.font_size == pytest.approx(y.font_size, abs=1e-3) if x.font_size else x.font_size == y.font_size
        for name in ("element_id", "type", "color", "text", "font", "text_align", "capitalize", "bold", "italic", "layer",
                     "effects"):
            assert getattr(x, name) == getattr(y, name), name
        assert x.line_height == pytest.approx(y.line_height, abs=1e-6)
        assert x.letter_spacing == pytest.approx(y.letter_spacing, abs=1e-6)


def test_fixture_v4_and_v5_folders_ingest_to_the_same_designs(fixture_dir, expected):
    v5 = list(read_design_folder(fixture_dir / "v5"))
    v4 = list(read_design_folder(fixture_dir / "v4"))
    assert [r.source for r in v5] == [f"{i}.json" for i in sorted(expected["designs"])]
    assert all(r.ok for r in v5 + v4), [(r.source, r.reason_code, r.detail) for r in v5 + v4 if not r.ok]
    for a, b in zip(v5, v4, strict=True):
        assert (a.design.source_format, b.design.source_format) == ("crello-v5", "crello-v4")
        assert_same_design(a.design, b.design)
        assert [p.ref for p in a.layers] == [p.ref for p in b.layers]  # the same layer files
        want = expected["designs"][a.design.design_id]
        assert [a.design.canvas_width, a.design.canvas_height] == want["canvas"]
        assert [e.type for e in a.design.elements] == want["types"]
        assert [e.text for e in a.design.elements if e.type == "text"] == want["texts"]
        assert [i for i, e in enumerate(a.design.elements) if e.angle] == want["rotated"]
        assert [i for i, e in enumerate(a.design.elements) if e.bold] == want["bold"]
        assert all(e.layer is None for e in a.design.elements if e.type == "text")
        assert a.design.preview is not None and a.design.preview in {p.ref for p in a.layers}


def test_fixture_broken_folder_rejects_each_record_and_keeps_going(fixture_dir, expected):
    reads = list(read_design_folder(fixture_dir / "broken"))
    assert {r.source: r.reason_code for r in reads} == expected["broken"]
    assert not any(r.ok for r in reads) and all(r.detail for r in reads)
    by_name = {r.source: r for r in reads}
    assert by_name["unknown_type.json"].detail.startswith("element 2, field 'type'")
    assert by_name["missing_layer.json"].detail.startswith("element 1, field 'image'")


def test_folder_layer_paths_ids_callbacks_and_roots(tmp_path, fixture_dir):
    folder = tmp_path / "designs"
    folder.mkdir()
    (tmp_path / "layers").mkdir()
    (tmp_path / "layers" / "a.png").write_bytes(PNG_A)
    (tmp_path / "layers" / "b.png").write_bytes(PNG_B)
    good = v5_record(image=["../layers/a.png", {"path": "../layers/b.png"}, None])
    del good["id"]
    (folder / "no-id.json").write_text(json.dumps(good))
    (folder / "escape.json").write_text(json.dumps(v5_record(image=["../../etc/passwd", PNG_B.hex(), None])))
    (folder / "absolute.json").write_text(json.dumps(v5_record(image=["/etc/hostname", "x", None])))
    (folder / "list.json").write_text("[1, 2]")
    (folder / "notes.txt").write_text("not a record")
    stored = []
    reads = list(read_design_folder(folder, on_layer=stored.append))
    assert [(r.source, r.reason_code) for r in reads] == [
        ("absolute.json", "layer_outside_root"), ("escape.json", "layer_outside_root"),
        ("list.json", "unreadable_record"), ("no-id.json", None)]
    design = reads[3].design
    assert design.design_id == "no-id" and reads[3].layers == ()  # layers went to the callback
    assert [p.ref for p in stored] == [BLOB_A, BLOB_B] and [p.data for p in stored] == [PNG_A, PNG_B]
    # path refs: absolute paths, nothing to store
    by_path = [r for r in read_design_folder(folder, layer_refs="path") if r.ok][0]
    assert by_path.design.elements[0].layer == (tmp_path / "layers" / "a.png").resolve().as_posix()
    assert by_path.layers == ()
    # a narrower root refuses the sibling layers folder
    narrow = [r for r in read_design_folder(folder, layer_root=folder) if r.source == "no-id.json"][0]
    assert narrow.reason_code == "layer_outside_root" and "element 0" in narrow.detail


# --- the fixture: parquet ---------------------------------------------------------------------------------


def test_fixture_parquet_streams_rows_with_labels_from_its_metadata(fixture_dir, expected):
    path = fixture_dir / "designs.parquet"
    labels = parquet_class_labels(path)
    assert labels["type"][:1] == ("ColoredBackground",) and "" in labels["text_align"]
    reads = list(read_design_parquet(path, batch_size=2))
    rows = expected["parquet"]["rows"]
    assert [r.source for r in reads] == [f"designs.parquet#row={n}" for n in range(len(rows))]
    for n, read in enumerate(reads):
        if n in expected["parquet"]["broken_rows"]:
            assert (read.ok, read.reason_code) == (False, rows[str(n)])
            assert read.detail.startswith("element 1, field 'image'")
        else:
            assert read.ok and read.design.design_id == rows[str(n)]
    by_json = {r.design.design_id: r for r in read_design_folder(fixture_dir / "v5")}
    for read in reads:
        if read.ok:
            reference = by_json[read.design.design_id]
            assert read.design.source_format == "crello-v5"
            assert_same_design(read.design, reference.design)  # float32 columns: within tolerance
            assert {p.ref: p.data for p in read.layers} == {p.ref: p.data for p in reference.layers}
            assert read.design.attributes["format"] == reference.design.attributes["format"]  # decoded label


def _write_parquet(path: Path, rows: list[tuple]) -> None:
    con = duckdb.connect()
    con.execute('CREATE TABLE t (id VARCHAR, canvas_width BIGINT, canvas_height BIGINT, type VARCHAR[], '
                '"left" DOUBLE[], top DOUBLE[], width DOUBLE[], height DOUBLE[], '
                'image STRUCT(bytes BLOB, path VARCHAR)[])')
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    con.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    con.close()


def test_parquet_bad_rows_keep_the_stream_going_with_row_locators(tmp_path):
    image = [{"bytes": PNG_A, "path": None}]

    def row(ident, **changes):
        values = {"id": ident, "w": 200, "h": 100, "type": ["imageElement"], "left": [10.0], "top": [10.0],
                  "width": [50.0], "height": [40.0], "image": image, **changes}
        return tuple(values.values())

    _write_parquet(tmp_path / "mixed.parquet", [
        row("ok-0"),
        row("short", left=[10.0, 20.0]),
        row("ok-2"),
        row("video", type=["videoElement"]),
        row("nocanvas", w=None),
        row("nolayer", image=[None]),
        row("path-layer", image=[{"bytes": None, "path": "layers/a.png"}]),
    ])
    (tmp_path / "layers").mkdir()
    (tmp_path / "layers" / "a.png").write_bytes(PNG_A)
    stored = []
    reads = list(read_design_parquet(tmp_path / "mixed.parquet", batch_size=2, on_layer=stored.append))
    assert [(r.source, r.reason_code) for r in reads] == [
        ("mixed.parquet#row=0", None),
        ("mixed.parquet#row=1", "length_mismatch"),
        ("mixed.parquet#row=2", None),
        ("mixed.parquet#row=3", "unknown_type"),
        ("mixed.parquet#row=4", "missing_field"),
        ("mixed.parquet#row=5", "layer_missing"),
        ("mixed.parquet#row=6", None),
    ]
    assert [r.design.design_id for r in reads if r.ok] == ["ok-0", "ok-2", "path-layer"]
    assert all(r.design.elements[0].layer == BLOB_A for r in reads if r.ok)
    assert len(stored) == 3 and {p.ref for p in stored} == {BLOB_A}  # only accepted rows' layers


def test_unreadable_parquet_is_one_rejection(tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    reads = list(read_design_parquet(path))
    assert [(r.source, r.reason_code) for r in reads] == [("broken.parquet", "unreadable_file")]


def test_explicit_labels_override_file_metadata(fixture_dir):
    path = fixture_dir / "designs.parquet"
    labels = dict(parquet_class_labels(path))
    labels["type"] = ("TextElement",) * len(labels["type"])
    first = next(read_design_parquet(path, class_labels=labels))
    assert first.reason_code == "text_missing"  # the background now reads as a text element without text


def test_verify_layers_off_checks_only_the_header():
    truncated = PNG_A[:50]  # header and size intact, pixel data cut
    assert reject(v5_record(image=[truncated, PNG_B, None])).reason_code == "layer_undecodable"
    design, layers = design_from_record(v5_record(image=[truncated, PNG_B, None]), verify_layers=False)
    assert design.elements[0].layer == f"blob:{sha256_hex(truncated)}" and (layers[0].width, layers[0].height) == (4, 3)


def test_sizes_beyond_any_real_design_are_rejected():
    assert reject(v5_record(canvas_width=10**9)).reason_code == "bad_canvas"
    assert reject(v5_record(left=[0.0, -1e300, 40.0], width=[400.0, 1e301, 320.0])).reason_code == "bad_size"
    assert reject(v4_record(angle=[1e308, 0.0, 0.0]), fmt="crello-v4").reason_code == "bad_number"  # degrees overflow
    assert reject(v4_record(width=[1e308, 0.5, 0.8]), fmt="crello-v4").reason_code == "bad_size"  # pixels overflow


def test_a_file_that_is_not_utf8_or_not_a_file_is_that_records_rejection(tmp_path):
    folder = tmp_path / "designs"
    folder.mkdir()
    (folder / "latin.json").write_bytes('{"id": "caf\xe9"}'.encode("latin-1"))
    (folder / "a-folder.json").mkdir()
    (folder / "bom.json").write_bytes(b"\xef\xbb\xbf" + b'{"id": "with-bom"}')  # read past its BOM, to its own problem
    reads = {r.source: r for r in read_design_folder(folder)}
    assert reads["latin.json"].reason_code == "bad_encoding" and "byte e9 at offset 11" in reads["latin.json"].detail
    assert (reads["a-folder.json"].reason_code, reads["a-folder.json"].detail) == ("unreadable_record", "not a regular file")
    assert reads["bom.json"].reason_code == "missing_field" and "canvas_width" in reads["bom.json"].detail
