"""The design-labelling schemas' offline answers through the heuristic provider: real renders, real request builders,
real parsers."""

import io
import json

import pytest
from PIL import Image

from assets.designs.logic import labelling as dl
from assets.designs.logic.judge import judge
from assets.designs.logic.design_model import Design, Element
from assets.designs.logic.offline_answers import design_offline_answers
from assets.designs.logic.render import render_design, to_png_bytes
from resources.models.heuristic import HeuristicProvider
from resources.models.types import INVALID_RESPONSE, OK, ModelRequest

W, H = 320, 200
DARK, LIGHT = (20, 20, 20), (225, 225, 225)
SETTINGS = dl.CallSettings(model="heuristic-v1")
CONTRAST = "Text should stand out from what lies behind it: enough luminance difference to read it at a glance."


def no_layers(reference):
    raise AssertionError(f"these designs have no layers, yet {reference!r} was asked for")


def poster(title_colour, design_id="d-poster"):
    """A white card with a 28 px headline (large text: needs 3:1) and an 18 px dark body line (needs 4.5:1)."""
    return Design(design_id, W, H, (
        Element("bg", "background", 0, 0, W, H, color=(255, 255, 255)),
        Element("title", "text", 20, 30, 280, 40, color=title_colour, text="Summer sale now", font="Roboto",
                font_size=28),
        Element("body", "text", 20, 110, 280, 30, color=(30, 30, 30), text="All shoes half price", font="Roboto",
                font_size=18),
    ))


def fresh_provider(model="heuristic-v1"):
    """A provider with its own judgement cache, so no answer comes from another test's request."""
    return HeuristicProvider(design_offline_answers(), model=model)


def png(design, scale=1.0):
    return to_png_bytes(render_design(design, no_layers, scale=scale).image)


def label_request(design, image, examples=(), indicator="color_contrast"):
    return dl.build_label_request(design, image, "image/png", indicator, CONTRAST, list(examples), [], SETTINGS)


def reasoning_request(design, verdict, regions, task="judgment", candidates=None, indicator="color_contrast"):
    return dl.build_reasoning_request(design, png(design), "image/png", indicator, CONTRAST, task, verdict, regions,
                                      SETTINGS, candidates)


@pytest.fixture(scope="module")
def designs():
    return {"low": poster(LIGHT, "d-low"), "high": poster(DARK, "d-high")}


# --- labels ------------------------------------------------------------------------------------------------------


def test_label_flags_the_low_contrast_headline_and_passes_the_high_contrast_one(designs):
    provider = fresh_provider()
    low, high = designs["low"], designs["high"]

    answer = provider.complete(label_request(low, png(low)))
    assert (answer.status, answer.error, answer.provider_model) == (OK, None, "heuristic-v1")
    assert answer.input_tokens is None and answer.output_tokens is None  # as for the critique schemas
    label = dl.parse_label(answer.text, low)
    # #e1e1e1 on white: L = ((225/255 + .055) / 1.055) ** 2.4 = .7529; (1 + .05) / (.7529 + .05) = 1.31, under 3:1.
    assert label.flawed and label.element_id == "title" and "1.31:1" in label.reason
    assert label.box == dl.element_box(low, "title")

    answer = provider.complete(label_request(high, png(high)))
    label = dl.parse_label(answer.text, high)
    assert answer.status == OK and not label.flawed and label.box is None
    # The weakest text is the 18 px body (#1e1e1e on white, 16.67:1 against the 4.5:1 it needs).
    assert "16.67:1" in label.reason


def test_label_is_the_judges_own_answer_and_deterministic(designs):
    low = designs["low"]
    request = label_request(low, png(low))
    first = fresh_provider().complete(request).text
    assert first == fresh_provider().complete(request).text
    provider = fresh_provider()
    assert provider.complete(request).text == provider.complete(request).text == first  # cached path too
    render = render_design(low, no_layers).image
    assert json.loads(first) == dl.label_from_judgement(judge(low, render, "color_contrast"), low)


@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_a_few_shot_sheet_is_cropped_back_to_the_design_panel(designs, scale):
    low, high = designs["low"], designs["high"]
    examples = [dl.LabelledExample(True, "The headline fades into the card.", image=png(low), design_id="d-low"),
                dl.LabelledExample(False, "Everything reads.", image=png(high), design_id="d-high")]
    image = png(low, scale)
    request = label_request(low, image, examples)
    with Image.open(io.BytesIO(request.image)) as sheet:
        assert sheet.width > W * scale  # the example column really is there
    plain = fresh_provider().complete(label_request(low, image))
    answer = fresh_provider().complete(request)
    assert answer.status == OK, answer.error
    assert answer.text == plain.text and dl.parse_label(answer.text, low).element_id == "title"
    # The high-contrast design on a sheet whose examples include the low-contrast one is still judged good.
    assert not dl.parse_label(fresh_provider().complete(label_request(high, png(high, scale), examples)).text).flawed


# --- reasoning paths ---------------------------------------------------------------------------------------------


def test_reasoning_cites_the_flawed_headline_and_holds_up_in_the_parser(designs):
    low = designs["low"]
    regions = [dl.element_box(low, "title")]
    answer = fresh_provider().complete(reasoning_request(low, "flawed", regions))
    assert answer.status == OK, answer.error
    path = dl.parse_reasoning(answer.text, low, expected_verdict="flawed", required_boxes=regions)
    assert path.verdict == "flawed" and path.cited_element_ids == ("title",)
    assert "1.31:1" in path.steps[0].claim and path.steps[-1].box is None  # closing step: the whole design


def test_a_good_path_also_covers_the_regions_asked_about(designs):
    high = designs["high"]
    regions = [dl.element_box(high, "title")]
    answer = fresh_provider().complete(reasoning_request(high, "good", regions))
    path = dl.parse_reasoning(answer.text, high, expected_verdict="good", required_boxes=regions)
    # The judge's own claim is about the weakest text (body); the asked-about headline gets its own step.
    assert [s.element_id for s in path.steps] == ["body", "title", None]
    assert path.steps[1].claim == "The color_contrast measurement flags nothing at element title."


def test_selection_path_cites_only_existing_boxes(designs):
    low = designs["low"]
    title, body = dl.element_box(low, "title"), dl.element_box(low, "body")
    answer = fresh_provider().complete(reasoning_request(low, "flawed", [title, body], "selection",
                                                            [body, title, None]))
    path = dl.parse_reasoning(answer.text, low, expected_verdict="flawed", required_boxes=[title])
    assert [s.element_id for s in path.steps] == ["title", "body", None]
    assert "not among those the color_contrast measurement flags" in path.steps[1].claim


@pytest.mark.parametrize(("which", "requested", "measured"), [("low", "good", "flawed"), ("high", "flawed", "good")])
def test_a_requested_verdict_against_the_measurement_is_refused(designs, which, requested, measured):
    design = designs[which]
    answer = fresh_provider().complete(reasoning_request(design, requested, [dl.element_box(design, "title")]))
    assert answer.status == INVALID_RESPONSE and answer.text == ""
    assert f"requested verdict is {requested!r} but the heuristic judge measured {measured!r}" in answer.error


def test_many_flawed_texts_stay_within_eight_steps():
    lines = tuple(Element(f"t{i}", "text", 10, 10 + 18 * i, 300, 16, color=(235, 235, 235), text=f"Line {i}",
                          font="Roboto", font_size=12) for i in range(10))
    design = Design("d-many", W, H, (Element("bg", "background", 0, 0, W, H, color=(255, 255, 255)), *lines))
    regions = [dl.element_box(design, "t9")]
    answer = fresh_provider().complete(reasoning_request(design, "flawed", regions))
    path = dl.parse_reasoning(answer.text, design, expected_verdict="flawed", required_boxes=regions)
    assert len(path.steps) == 8 and "t9" in path.cited_element_ids and path.steps[-1].box is None


def test_a_repair_request_gets_the_same_answer(designs):
    low = designs["low"]
    original = reasoning_request(low, "flawed", [dl.element_box(low, "title")])
    repair = dl.repair_request(original, "{}", "missing_field: answer has no 'steps'")
    provider = fresh_provider()
    assert repair.role == "repair" and provider.complete(repair).text == provider.complete(original).text


# --- refusals ----------------------------------------------------------------------------------------------------


def design_request(target, schema_name="design_label", image=None, /, **context):
    """A hand-made request: ``context`` exactly as given (the builders would refuse most of these)."""
    return ModelRequest(role="annotator", model="heuristic-v1", system="(ignored)", user="(ignored)",
                        image=image if image is not None else png(target), image_mime="image/png", json_schema=None,
                        schema_name=schema_name, context=context)


def test_unknown_schemas_are_still_refused(designs):
    low = designs["low"]
    answer = fresh_provider().complete(design_request(low, "design_caption", design=low.to_dict(),
                                                         indicator="color_contrast"))
    assert answer.status == INVALID_RESPONSE and answer.text == ""
    assert "expected schema design_label or design_reasoning" in answer.error


@pytest.mark.parametrize(("build", "message"), [
    (lambda d: label_request(d, png(d), indicator="color_psychology"), "gives no verdict (not measurable"),
    (lambda d: design_request(d, indicator="color_contrast"), "needs the design record"),
    (lambda d: design_request(d, design={"canvas_width": 3}, indicator="color_contrast"), "is not a design record"),
    (lambda d: design_request(d, design=d.to_dict()), "needs the indicator"),
    (lambda d: design_request(d, design=d.to_dict(), indicator="colour_magic"), "unknown_indicator"),
    (lambda d: design_request(d, "design_label", b"not a png", design=d.to_dict(), indicator="color_contrast"),
     "could not be decoded"),
    (lambda d: design_request(d, "design_label", to_png_bytes(Image.new("RGB", (100, 100))), design=d.to_dict(),
                              indicator="color_contrast"), "render_size"),
    (lambda d: design_request(d, "design_label", png(d), design=d.to_dict(), indicator="color_contrast",
                              examples=[{"has_image": True}]), "is not an example sheet"),
    (lambda d: design_request(d, "design_reasoning", design=d.to_dict(), indicator="color_contrast", verdict="meh"),
     "expected one of flawed, good"),
])
def test_design_requests_it_cannot_answer_are_refused_with_the_reason(designs, build, message):
    answer = fresh_provider("heuristic-test").complete(build(designs["low"]))
    assert answer.status == INVALID_RESPONSE and answer.text == "" and answer.provider_model == "heuristic-test"
    assert message in answer.error
