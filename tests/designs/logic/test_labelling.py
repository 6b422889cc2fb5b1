"""Model labelling of designs: templates, requests, answer parsing with box citations, and the offline answers."""

import base64
import hashlib
import io
import json
from importlib import resources

import numpy as np
import pytest
from PIL import Image, ImageDraw

from assets.designs.logic import labelling as dl
from assets.designs.logic.judge import judge
from assets.designs.logic.design_model import Design, Element
from assets.core.model_calls import REJECTED, VALID, CallBudget, ModelCaller, RateLimiter, StoredCall
from resources.model_providers import OpenAIProvider
from resources.models.types import OK, ModelRequest, ModelResponse

W, H = 400, 300
SECRET = "sk-test-DESIGN-LABEL-SECRET-0123456789"
DESIGN = Design("d-1", W, H, (
    Element("bg", "background", 0, 0, W, H, color=(255, 255, 255)),
    Element("head", "text", 40, 30, 200, 40, color=(128, 128, 128), text="SUMMER SALE", font="Roboto Bold", font_size=36),
    Element("body", "text", 40, 100, 300, 20, color=(0, 0, 0), text="All week long", font_size=16),
    Element("badge", "svg", 300, 200, 80, 20, angle=90, color=(200, 40, 40)),   # bounds 330,170 .. 350,250
    Element("strip", "image", 350, 260, 100, 30),                               # runs 50 px past the right edge
))
DEFINITION = "Text must stand out clearly from whatever lies behind it."
SETTINGS = dl.CallSettings(model="vision-model-x", temperature=0.0, max_output_tokens=512)


def png(color=(250, 250, 250), size=(W, H)) -> bytes:
    image = Image.new("RGB", size, color)
    ImageDraw.Draw(image).rectangle([40, 30, 240, 70], fill=(140, 140, 140))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def label_request(**kw):
    args = dict(design=DESIGN, image=png(), image_mime="image/png", indicator="color_contrast", definition=DEFINITION,
                examples=[dl.LabelledExample(True, "Grey headline on a grey photo is hard to read.", (10, 10, 200, 60)),
                          dl.LabelledExample(False, "Dark text on a pale band reads easily.")],
                prior_boxes=[(40, 30, 240, 70)], settings=SETTINGS)
    args.update(kw)
    return dl.build_label_request(**args)


# --- templates ------------------------------------------------------------------------------------------------------


def test_templates_load_with_id_version_role_and_content_hash():
    assert dl.template_names() == ("labeller", "reasoning")
    expected = {
        "labeller": {"indicator", "definition", "canvas_width", "canvas_height", "image_note", "elements", "examples", "prior"},
        "reasoning": {"indicator", "definition", "canvas_width", "canvas_height", "elements", "task", "candidates",
                      "regions", "verdict"},
    }
    for name, placeholders in expected.items():
        template = dl.load_design_template(name)
        assert (template.id, template.version, template.role) == (f"design/{name}", "1", "annotator")
        assert template.placeholders == placeholders
        on_disk = resources.files("assets.designs.prompts").joinpath(f"{name}.txt").read_bytes()
        assert template.sha256 == hashlib.sha256(on_disk).hexdigest()
    assert dl.labelling_digest() == dl.labelling_digest()


# --- label requests ---------------------------------------------------------------------------------------------


def test_label_request_carries_schema_template_image_examples_and_prior():
    request = label_request()
    assert request.json_schema == dl.LABEL_SCHEMA and request.schema_name == "design_label"
    assert set(request.json_schema["required"]) == {"flawed", "reason", "box"}
    assert (request.template_id, request.template_version, request.role) == ("design/labeller", "1", "annotator")
    assert request.image == png() and request.image_mime == "image/png"
    assert (request.model, request.temperature, request.max_output_tokens) == ("vision-model-x", 0.0, 512)
    assert DEFINITION in request.user and "color_contrast" in request.user
    assert "1. Judged flawed: Grey headline on a grey photo is hard to read. Edited element box: [10, 10, 200, 60]." in request.user
    assert "2. Judged not flawed: Dark text on a pale band reads easily." in request.user
    assert "Hint: the element(s) [40, 30, 240, 70] (head) were edited" in request.user
    # The element table gives every visible element's citable box: rotated bounds, clipped to the canvas.
    assert '- head: text [40, 30, 240, 70] "SUMMER SALE" (font Roboto Bold, 36 px, colour #808080)' in request.user
    assert "- badge: svg [330, 170, 350, 250], rotated 90 deg" in request.user
    assert "- strip: image [350, 260, 400, 290]" in request.user
    assert request.context["template_sha256"] == dl.load_design_template("labeller").sha256
    assert request.context["prior_element_ids"] == ["head"] and request.context["design"]["design_id"] == "d-1"
    assert "$" not in request.system + request.user  # every placeholder filled


def test_label_request_is_deterministic_and_the_api_key_never_appears(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    first, second = label_request(), label_request()
    assert first == second
    reasoning = dl.build_reasoning_request(DESIGN, png(), "image/png", "color_contrast", DEFINITION, "judgment", "flawed",
                                           [(40, 30, 240, 70)], SETTINGS)
    for request in (first, reasoning, dl.repair_request(first, "{}", "missing_field: answer has no 'flawed'")):
        assert SECRET not in repr(request)
        assert SECRET not in json.dumps(request.context) + request.system + request.user
    # What the OpenAI provider would send: the image bytes as a data URL, the schema, and no key in the body.
    provider = OpenAIProvider(api_key=SECRET, json_mode="schema")
    body = provider._create_kwargs(first)
    wire = json.dumps(body)
    assert SECRET not in wire and SECRET not in repr(provider)
    url = body["messages"][1]["content"][0]["image_url"]["url"]
    assert base64.b64decode(url.split(",", 1)[1]) == png()
    assert body["response_format"]["json_schema"]["schema"] == dl.LABEL_SCHEMA


def test_example_images_go_on_one_sheet_with_the_design_unscaled_at_the_origin():
    example = dl.LabelledExample(False, "Fine.", image=png((20, 120, 40), (300, 300)), design_id="d-9")
    request = label_request(examples=[dl.LabelledExample(True, "Too pale."), example])
    assert request.image_mime == "image/png" and request.image != png()
    sheet = np.asarray(Image.open(io.BytesIO(request.image)).convert("RGB"))
    target = np.asarray(Image.open(io.BytesIO(png())).convert("RGB"))
    assert sheet.shape[1] > W and (sheet[:H, :W] == target).all()
    assert "panel 1 on the right" in request.user and "sheet" in request.user
    assert "design to judge is the large panel at the top-left" in request.user
    assert request.image == label_request(examples=[dl.LabelledExample(True, "Too pale."), example]).image
    assert "bytes>" in repr(example) and "image=b" not in repr(example)


def test_a_prior_box_that_names_no_element_is_refused():
    with pytest.raises(dl.DesignLabelError) as info:
        label_request(prior_boxes=[(0, 0, 50, 50)])
    assert info.value.reason_code == "box_not_in_design" and "prior_boxes[0]" in str(info.value)
    # A rotated element's unrotated box (as a perturbation log records it) is shown as the element list shows it.
    rotated = label_request(prior_boxes=[(300, 200, 380, 220)])
    assert "Hint: the element(s) [330, 170, 350, 250] (badge) were edited" in rotated.user
    assert rotated.context["prior_boxes"] == [[330.0, 170.0, 350.0, 250.0]]
    no_prior = label_request(prior_boxes=[])
    assert "Hint: no edited element is known" in no_prior.user


# --- reasoning requests -----------------------------------------------------------------------------------------------


def test_reasoning_request_lists_task_regions_candidates_and_verdict():
    request = dl.build_reasoning_request(
        DESIGN, png(), "image/png", "layout_alignment", "Edges that should line up do.", "selection", "flawed",
        regions=[(40, 30, 240, 70), (40, 100, 340, 120)], settings=SETTINGS,
        candidates=[(40, 100, 340, 120), (40, 30, 240, 70), (330, 170, 350, 250), None])
    assert request.json_schema == dl.REASONING_SCHEMA and request.schema_name == "design_reasoning"
    assert (request.template_id, request.template_version) == ("design/reasoning", "1")
    assert request.image == png()
    assert "Kind of question: selection" in request.user and "Verdict: flawed" in request.user
    assert "A. [40, 100, 340, 120] (body)\nB. [40, 30, 240, 70] (head)\nC. [330, 170, 350, 250] (badge)\n" \
           "D. None (no region has the problem)" in request.user
    assert "- [40, 30, 240, 70] (head)\n- [40, 100, 340, 120] (body)" in request.user
    assert request.context["region_element_ids"] == ["head", "body"] and request.context["verdict"] == "flawed"
    judgment = dl.build_reasoning_request(DESIGN, png(), "image/png", "layout_alignment", "x", "judgment", "good",
                                          regions=[(40, 30, 240, 70)], settings=SETTINGS)
    assert "Candidate regions" not in judgment.user


def test_reasoning_request_rejects_unknown_task_verdict_and_missing_regions():
    args = (DESIGN, png(), "image/png", "layout_alignment", "x")
    with pytest.raises(ValueError, match="task"):
        dl.build_reasoning_request(*args, "ranking", "flawed", [(40, 30, 240, 70)], SETTINGS)
    with pytest.raises(ValueError, match="verdict"):
        dl.build_reasoning_request(*args, "judgment", "bad", [(40, 30, 240, 70)], SETTINGS)
    with pytest.raises(ValueError, match="region"):
        dl.build_reasoning_request(*args, "judgment", "good", [], SETTINGS)
    with pytest.raises(ValueError, match="candidate"):
        dl.build_reasoning_request(*args, "selection", "good", [(40, 30, 240, 70)], SETTINGS)


def test_repair_request_reuses_the_shared_repair_template_with_the_design_schema():
    original = label_request()
    repair = dl.repair_request(original, '{"flawed": "yes"}', "wrong_type: answer.flawed is \"yes\"")
    assert (repair.role, repair.template_id, repair.schema_name) == ("repair", "critique/repair", "design_label")
    assert repair.image == original.image and repair.json_schema == dl.LABEL_SCHEMA
    assert '"design_label"' in repair.user and '{"flawed": "yes"}' in repair.user
    assert repair.context["repairs"] == "design/labeller"


# --- parse_label ----------------------------------------------------------------------------------------------------


def test_label_answers_that_hold_up():
    label = dl.parse_label('{"flawed": true, "reason": "Grey on grey.", "box": [40, 30, 240, 70]}', DESIGN)
    assert label == dl.Label(True, "Grey on grey.", (40.0, 30.0, 240.0, 70.0), "head")
    fenced = 'Here it is:\n```json\n{"flawed": false, "reason": "Reads well.", "box": null}\n```'
    assert dl.parse_label(fenced, DESIGN) == dl.Label(False, "Reads well.", None, None)
    # Without a design only the shape is checked.
    assert dl.parse_label('{"flawed": true, "reason": "x", "box": [1, 1, 2, 2]}').element_id is None


@pytest.mark.parametrize("answer, code", [
    ("The design looks fine to me.", "invalid_json"),
    ('{"flawed": true, "reason": "Grey', "invalid_json"),
    ('{"reason": "x", "box": null}', "missing_field"),
    ('{"flawed": true, "box": null}', "missing_field"),
    ('{"flawed": true, "reason": "x"}', "missing_field"),
    ('{"flawed": "yes", "reason": "x", "box": null}', "wrong_type"),
    ('{"flawed": 1, "reason": "x", "box": null}', "wrong_type"),
    ('{"flawed": true, "reason": 5, "box": null}', "wrong_type"),
    ('{"flawed": true, "reason": "  ", "box": null}', "empty_text"),
    ('{"flawed": true, "reason": "x", "box": [40, 30, 240]}', "invalid_box"),
    ('{"flawed": true, "reason": "x", "box": [240, 30, 40, 70]}', "invalid_box"),
    ('{"flawed": true, "reason": "x", "box": "40,30,240,70"}', "invalid_box"),
    ('{"flawed": true, "reason": "x", "box": [40, 30, true, 70]}', "invalid_box"),
    ('{"flawed": false, "reason": "x", "box": [40, 30, 240, 70]}', "inconsistent_box"),
    ('{"flawed": true, "reason": "x", "box": [350, 260, 450, 290]}', "box_outside_canvas"),
    ('{"flawed": true, "reason": "x", "box": [-20, 30, 240, 70]}', "box_outside_canvas"),
    ('{"flawed": true, "reason": "x", "box": [100, 100, 200, 200]}', "box_not_in_design"),
])
def test_label_answers_that_do_not_hold_up_name_their_reason(answer, code):
    with pytest.raises(dl.DesignLabelError) as info:
        dl.parse_label(answer, DESIGN)
    assert info.value.reason_code == code and code in dl.REASON_CODES
    assert isinstance(info.value, ValueError)


def test_cited_boxes_match_within_the_tolerance():
    def cite(box, **kw):
        return dl.parse_label(json.dumps({"flawed": True, "reason": "x", "box": box}), DESIGN, **kw).element_id

    assert cite([43, 27, 244, 74]) == "head"           # every coordinate within 4 px
    assert cite([44, 30, 240, 70]) == "head"           # exactly at the tolerance
    with pytest.raises(dl.DesignLabelError, match=r"nearest: head, 4.5 px off") as info:
        cite([44.5, 30, 240, 70])
    assert info.value.reason_code == "box_not_in_design"
    assert cite([44.5, 30, 240, 70], tolerance=5) == "head"
    # A rotated element answers to its rotated bounds and to its unrotated box; an element running off the
    # canvas to its visible part.
    assert cite([330, 170, 350, 250]) == "badge" and cite([300, 200, 380, 220]) == "badge"
    assert cite([350, 260, 400, 290]) == "strip"
    # Boxes may spill over the canvas edge only by the tolerance.
    assert cite([350, 260, 403, 290]) == "strip"


# --- parse_reasoning ------------------------------------------------------------------------------------------------


def path(*steps, verdict="flawed"):
    return json.dumps({"steps": [{"claim": c, "element_box": b} for c, b in steps], "verdict": verdict})


GOOD_PATH = path(("The layout is a left-aligned column.", None),
                 ("The headline is mid grey on white.", [40, 30, 240, 70]),
                 ("The body copy is black and reads easily.", [41, 99, 340, 121]))


def test_reasoning_path_that_holds_up_names_the_cited_elements():
    parsed = dl.parse_reasoning(GOOD_PATH, DESIGN, expected_verdict="flawed", required_boxes=[(40, 30, 240, 70)])
    assert parsed.verdict == "flawed" and parsed.cited_element_ids == ("head", "body")
    assert [s.element_id for s in parsed.steps] == [None, "head", "body"]
    assert parsed.as_dict()["steps"][2]["element_box"] == [41.0, 99.0, 340.0, 121.0]
    assert dl.parse_reasoning(path(("ok", [40, 30, 240, 70]), verdict=" Good "), DESIGN).verdict == "good"


@pytest.mark.parametrize("answer, code, where", [
    ("no json here", "invalid_json", ""),
    ('{"verdict": "flawed"}', "missing_field", "'steps'"),
    ('{"steps": {"claim": "x"}, "verdict": "flawed"}', "wrong_type", "answer.steps"),
    ('{"steps": [], "verdict": "flawed"}', "no_steps", ""),
    ('{"steps": ["the headline"], "verdict": "flawed"}', "wrong_type", "steps[0]"),
    ('{"steps": [{"claim": "x", "element_box": [40, 30, 240, 70]}, {"claim": "y"}], "verdict": "flawed"}',
     "missing_field", "steps[1]"),
    (path(("x", [40, 30, 240, 70]), ("", None)), "empty_text", "steps[1].claim"),
    (path(("x", [40, 30, 240, 70]), ("y", [0, 0, 10])), "invalid_box", "steps[1].element_box"),
    (path(("x", [40, 30, 240, 70]), ("y", [0, 0, 10, 10]), ("z", None)), "box_not_in_design", "steps[1].element_box"),
    (path(("x", [40, 30, 240, 70]), ("y", [300, 250, 420, 300])), "box_outside_canvas", "steps[1].element_box"),
    (path(("x", None), ("y", None)), "no_citation", ""),
    (path(("x", [40, 30, 240, 70]), verdict="unclear"), "invalid_verdict", ""),
    ('{"steps": [{"claim": "x", "element_box": [40, 30, 240, 70]}]}', "missing_field", "'verdict'"),
])
def test_reasoning_paths_that_do_not_hold_up_name_their_reason_and_step(answer, code, where):
    with pytest.raises(dl.DesignLabelError) as info:
        dl.parse_reasoning(answer, DESIGN)
    assert info.value.reason_code == code
    assert where in str(info.value)


def test_reasoning_must_cite_the_regions_asked_about_and_keep_the_given_verdict():
    only_body = path(("The body copy is black.", [40, 100, 340, 120]))
    with pytest.raises(dl.DesignLabelError) as info:
        dl.parse_reasoning(only_body, DESIGN, required_boxes=[(40, 30, 240, 70)])
    assert info.value.reason_code == "focus_not_cited" and "head" in str(info.value)
    with pytest.raises(dl.DesignLabelError) as info:
        dl.parse_reasoning(GOOD_PATH, DESIGN, expected_verdict="good")
    assert info.value.reason_code == "verdict_mismatch"


# --- through the call layer -------------------------------------------------------------------------------------------


class MemoryStore:
    def __init__(self):
        self.rows, self.by_key = [], {}

    def cached(self, key):
        return self.by_key.get(key)

    def record(self, row):
        call_id = f"call-{len(self.rows)}"
        self.rows.append(row)
        if row["status"] == OK:
            self.by_key[row["cache_key"]] = StoredCall(call_id, _response(row["response_text"]))
        return call_id


def _response(text):
    return ModelResponse(text=text, input_tokens=10, output_tokens=5, finish_reason="stop", latency_ms=1.0, attempts=1,
                         status=OK, error=None, provider_model="vision-model-x")


class ScriptedProvider:
    name = "scripted"

    def __init__(self, answers):
        self.answers, self.requests = list(answers), []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return _response(self.answers.pop(0))


def caller(provider, store):
    return ModelCaller("scripted", provider, store, CallBudget(), RateLimiter(None), dl.repair_request)


def test_a_box_not_in_the_design_is_repaired_once_through_the_caller():
    provider = ScriptedProvider(['{"flawed": true, "reason": "Pale headline.", "box": [0, 0, 50, 50]}',
                                 '{"flawed": true, "reason": "Pale headline.", "box": [40, 30, 240, 70]}'])
    store = MemoryStore()
    outcome = caller(provider, store).call(label_request(), dl.label_parser(DESIGN), item_id="d-1/color_contrast")
    assert outcome.status == VALID and outcome.value.element_id == "head" and outcome.requests_sent == 2
    repair = provider.requests[1]
    assert repair.template_id == "critique/repair" and "box_not_in_design" in repair.user
    assert [row["template_id"] for row in store.rows] == ["design/labeller", "critique/repair"]


def test_a_path_still_invalid_after_repair_is_rejected_with_its_reason():
    uncited = path(("The headline is grey.", None))
    provider = ScriptedProvider([uncited, uncited])
    request = dl.build_reasoning_request(DESIGN, png(), "image/png", "color_contrast", DEFINITION, "judgment", "flawed",
                                         [(40, 30, 240, 70)], SETTINGS)
    outcome = caller(provider, MemoryStore()).call(request, dl.reasoning_parser(DESIGN, "flawed", [(40, 30, 240, 70)]))
    assert outcome.status == REJECTED and outcome.reason_code == "no_citation"


# --- the offline path -----------------------------------------------------------------------------------------------


def test_judge_answers_parse_as_model_answers_would():
    design = Design("d-2", W, H, DESIGN.elements[:3]).with_element(1, color=(170, 170, 170))
    image = Image.new("RGB", (W, H), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    for x in range(44, 236, 24):  # glyph-like strokes of the pale headline and of the black body copy
        draw.rectangle([x, 34, x + 8, 66], fill=(170, 170, 170))
    for x in range(44, 330, 12):
        draw.rectangle([x, 103, x + 4, 117], fill=(0, 0, 0))
    judgement = judge(design, image, "color_contrast")
    # #aaa on white: L .402 -> 1.05 / .452 = 2.32:1, below the 3:1 even 36 px bold text needs; black body is 21:1.
    assert judgement.flawed and judgement.boxes == ("head",)
    label = dl.parse_label(json.dumps(dl.label_from_judgement(judgement, design)), design)
    assert label.flawed and label.element_id == "head" and "2.32:1" in label.reason
    reasoning = dl.parse_reasoning(json.dumps(dl.reasoning_from_judgement(judgement, design)), design,
                                   expected_verdict="flawed", required_boxes=[(40, 30, 240, 70)])
    assert reasoning.cited_element_ids == ("head",) and reasoning.verdict == "flawed"
    assert reasoning.steps[-1].claim == "So the design breaks the color_contrast indicator."


# --- the regions each reasoning task discusses ----------------------------------------------------------------------


def test_judgment_discusses_the_labelled_region_and_localisation_every_visible_perturbed_one():
    regions, candidates = dl.reasoning_regions(DESIGN, "color_contrast", DEFINITION, "judgment", True, "head",
                                               ["badge", "head"], 0, "pixels")
    assert regions == [dl.element_box(DESIGN, "head")] and candidates is None
    regions, candidates = dl.reasoning_regions(DESIGN, "color_contrast", DEFINITION, "localisation", True, "head",
                                               ["badge", "head"], 0, "pixels")
    assert regions == [dl.element_box(DESIGN, "head"), dl.element_box(DESIGN, "badge")] and candidates is None


@pytest.mark.parametrize("flawed", [True, False])
def test_selection_discusses_the_question_candidates_in_the_question_order(flawed):
    from assets.designs.logic.question_formats import question_input_from_design, region_selection_question

    regions, candidates = dl.reasoning_regions(DESIGN, "color_contrast", DEFINITION, "selection", flawed, "head",
                                               ["head"], 7, "normalised")
    question = region_selection_question(question_input_from_design(DESIGN, "color_contrast", DEFINITION, ["head"], flawed,
                                                                    "head"), 7, "normalised")
    assert candidates == [None if e is None else dl.element_box(DESIGN, e) for e in question.choice_elements]
    assert len(candidates) == 4 and candidates.count(None) == 1 and regions == [c for c in candidates if c is not None]
    if flawed:  # the perturbed region is among them, with the others the question offers
        assert dl.element_box(DESIGN, "head") in regions
    request = dl.build_reasoning_request(DESIGN, png(), "image/png", "color_contrast", DEFINITION, "selection",
                                         "flawed" if flawed else "good", regions, SETTINGS, candidates)
    assert request.context["region_element_ids"] == [e for e in question.choice_elements if e is not None]


def test_selection_of_a_design_without_enough_candidates_is_refused_with_the_question_reason():
    small = Design("d-2", W, H, (Element("bg", "background", 0, 0, W, H), Element("head", "text", 40, 30, 200, 40, text="A")))
    with pytest.raises(dl.DesignLabelError, match="too_few_elements"):
        dl.reasoning_regions(small, "color_contrast", DEFINITION, "selection", True, "head", ["head"], 0, "pixels")
