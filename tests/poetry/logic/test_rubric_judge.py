import dataclasses
import json

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter

from assets.core.model_calls import CallSettings
from assets.poetry.logic.rubric_judge import (
    EMPTY_REASON,
    INVALID_JSON,
    INVALID_OPTION,
    JUDGE_SCHEMA,
    JUDGE_SCHEMA_NAME,
    MISSING_DIMENSION,
    MISSING_FIELD,
    UNKNOWN_DIMENSION,
    WRONG_TYPE,
    JudgeAnswerError,
    build_judge_request,
    heuristic_judgement,
    judge_digest,
    noise_sigma,
    parse_judgement,
    repair_request,
    rubric_text,
)
from assets.poetry.logic.rubric import DIMENSION_KEYS, RUBRIC_VERSION
from assets.poetry.logic.poems import Poem

POEM = Poem("tang-001", "静夜思", "李白", "床前明月光，\n疑是地上霜。", "Moonlight at\n my bed.", (), None, None, "p#record=0")
SETTINGS = CallSettings(model="judge-model", temperature=0.0, max_output_tokens=1500)


def answer(**overrides: object) -> dict:
    scores = {key: {"option": "a", "reason": f"{key} looks fine."} for key in DIMENSION_KEYS}
    for key, option in overrides.items():
        scores[key] = {"option": option, "reason": "Seen in the image."}
    return {"scores": scores}


def test_schema_requires_every_dimension_with_its_own_letters_or_null():
    dims = JUDGE_SCHEMA["properties"]["scores"]
    assert dims["required"] == list(DIMENSION_KEYS) and dims["additionalProperties"] is False
    scene = dims["properties"]["scene_consistency"]["properties"]["option"]["anyOf"]
    assert scene == [{"type": "string", "enum": ["a", "b", "d", "c", "e"]}, {"type": "null"}]
    assert dims["properties"]["text_integrity"]["properties"]["option"]["anyOf"][0]["enum"] == ["a", "b"]


def test_request_carries_poem_rubric_image_and_context():
    request = build_judge_request(POEM, b"png-bytes", "image/png", "tang-001@gpt", SETTINGS)
    assert (request.role, request.model, request.schema_name, request.json_schema) == (
        "annotator", "judge-model", JUDGE_SCHEMA_NAME, JUDGE_SCHEMA)
    assert (request.template_id, request.template_version) == ("poetry/judge_v1", "1")
    assert (request.image, request.image_mime, request.temperature, request.max_output_tokens) == (
        b"png-bytes", "image/png", 0.0, 1500)
    assert '"静夜思" by 李白' in request.user and "床前明月光，\n疑是地上霜。" in request.user
    assert "(In English: Moonlight at my bed.)" in request.user
    assert rubric_text() in request.user and RUBRIC_VERSION in request.user
    assert "null" in request.system and "not applicable" in request.system
    assert request.context["schema"] == JUDGE_SCHEMA_NAME
    assert {k: request.context[k] for k in ("item_id", "poem_id", "poem_text")} == {
        "item_id": "tang-001@gpt", "poem_id": "tang-001", "poem_text": POEM.text}
    with pytest.raises(ValueError, match="needs the image"):
        build_judge_request(POEM, b"", "image/png", "tang-001@gpt", SETTINGS)


def test_rubric_text_spells_out_out_of_order_letters_and_not_applicable_options():
    text = rubric_text()
    assert all(f". {key} (" in text for key in DIMENSION_KEYS)
    assert "d = mentioned in the poem but not shown [score 0.33]" in text
    assert "c = contradicts the poem [score 0]" in text
    assert "e = the poem sets no scene [not applicable: leaves this dimension out of the score]" in text
    assert "c = none expected and none shown [not applicable" in text
    assert "f = none expected, a jarring one added [score 0]" in text


def test_parse_maps_letters_to_rubric_scores_and_null_to_none():
    text = "Here you go:\n```json\n" + json.dumps(answer(scene_consistency="d", cultural_coherence="D",
                                                         emotional_resonance="c", overall_impression="B",
                                                         ai_plausibility=None, safety=" b ")) + "\n```"
    judged = parse_judgement(text)
    assert judged.scores == {"safety": 0.5, "technical_quality": 1.0, "ai_plausibility": None, "text_integrity": 1.0,
                             "scene_consistency": 0.33, "cultural_coherence": None, "artistic_style": 1.0,
                             "core_imagery": 1.0, "emotional_resonance": None, "overall_impression": 0.75}
    assert judged.options["cultural_coherence"] == "d" and judged.options["ai_plausibility"] is None
    assert judged.reasons["safety"] == "Seen in the image."
    assert judged.as_dict()["scene_consistency"] == {"option": "d", "score": 0.33, "reason": "Seen in the image."}


def _broken(mutate) -> str:
    value = answer()
    mutate(value)
    return json.dumps(value)


@pytest.mark.parametrize("text, code, message", [
    ("no json here", INVALID_JSON, "no JSON object"),
    ('{"scores": {"safety": ', INVALID_JSON, "does not parse"),
    ("{}", MISSING_FIELD, "no 'scores'"),
    ('{"scores": []}', WRONG_TYPE, "answer.scores is list"),
    (_broken(lambda v: v["scores"].update(beauty={"option": "a", "reason": "x"})), UNKNOWN_DIMENSION, "'beauty'"),
    (_broken(lambda v: v["scores"].pop("core_imagery")), MISSING_DIMENSION, "lacks core_imagery"),
    (_broken(lambda v: v["scores"].update(safety="a")), WRONG_TYPE, "scores.safety is str"),
    (_broken(lambda v: v["scores"]["safety"].pop("reason")), MISSING_FIELD, "scores.safety has no 'reason'"),
    (_broken(lambda v: v["scores"]["safety"].update(reason="  ")), EMPTY_REASON, "scores.safety.reason is empty"),
    (_broken(lambda v: v["scores"]["safety"].update(reason=3)), WRONG_TYPE, "reason is int"),
    (_broken(lambda v: v["scores"]["scene_consistency"].update(option="f")), INVALID_OPTION,
     'scores.scene_consistency.option is "f", not one of a, b, d, c, e or null'),
    (_broken(lambda v: v["scores"]["text_integrity"].update(option=1)), INVALID_OPTION, "not one of a, b or null"),
])
def test_parse_rejects_with_reason_codes(text, code, message):
    with pytest.raises(JudgeAnswerError) as info:
        parse_judgement(text)
    assert info.value.reason_code == code
    assert message in str(info.value)


def test_repair_request_keeps_model_image_schema_and_context():
    original = build_judge_request(POEM, b"png-bytes", "image/png", "tang-001@gpt", SETTINGS)
    repair = repair_request(original, '{"scores": {}}', "missing_dimension: answer.scores lacks safety")
    assert (repair.role, repair.model, repair.image, repair.schema_name) == ("repair", "judge-model", b"png-bytes",
                                                                               JUDGE_SCHEMA_NAME)
    assert repair.template_id == "critique/repair" and "lacks safety" in repair.user and JUDGE_SCHEMA_NAME in repair.user
    assert repair.context["repairs"] == "poetry/judge_v1" and repair.context["item_id"] == "tang-001@gpt"
    with pytest.raises(ValueError, match="not a judge request"):
        repair_request(dataclasses.replace(original, schema_name="plan"), "x", "y")


def test_judge_digest_is_stable():
    assert judge_digest() == judge_digest() and len(judge_digest()) == 64


# --- the offline judge ------------------------------------------------------------------------------------------------


def ink_painting(size: int = 640) -> Image.Image:
    """Dark ink strokes on a warm, light paper tone."""
    image = Image.new("RGB", (size, size), (236, 230, 214))
    draw = ImageDraw.Draw(image)
    rng = np.random.default_rng(3)
    for _ in range(40):
        x, y = (int(v) for v in rng.integers(0, size - 140, 2))
        draw.line([(x, y), (x + 130, y + int(rng.integers(-40, 40)))], fill=(35, 33, 30), width=5)
    return image


def offline(image: Image.Image) -> dict:
    result = heuristic_judgement(image, POEM.text)
    parse_judgement(json.dumps(result))  # always a valid answer
    return result["scores"]


def test_clean_ink_painting_rates_technically_clear_and_stylistically_suitable():
    scores = offline(ink_painting())
    assert scores["technical_quality"]["option"] == "a"
    assert scores["technical_quality"]["reason"].startswith("Measured clean rendering: edge crispness")
    assert scores["artistic_style"]["option"] == "a" and "mean saturation 0.09" in scores["artistic_style"]["reason"]
    for key in DIMENSION_KEYS:
        if key not in ("technical_quality", "artistic_style"):
            assert scores[key]["option"] is None and scores[key]["reason"].startswith("Not judged offline")


def test_technical_quality_flags_blur_noise_and_resolution():
    soft = offline(ink_painting().filter(ImageFilter.GaussianBlur(3)))["technical_quality"]
    assert soft["option"] == "b" and "soft edges" in soft["reason"]
    smeared = offline(ink_painting().filter(ImageFilter.GaussianBlur(12)))["technical_quality"]
    assert smeared["option"] == "c" and "blurred edges" in smeared["reason"]
    rng = np.random.default_rng(0)
    pixels = np.asarray(ink_painting(), dtype=np.float64) + rng.normal(0.0, 12.0, (640, 640, 1))
    noisy = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    assert 8.0 <= noise_sigma(noisy) < 16.0
    assert offline(noisy)["technical_quality"]["option"] == "b"
    tiny = offline(ink_painting().resize((200, 200)))["technical_quality"]
    assert tiny["option"] == "c" and "very low resolution (200x200 px" in tiny["reason"]
    blank = offline(Image.new("RGB", (600, 600), (250, 250, 250)))
    assert blank["technical_quality"]["option"] == "c" and "almost one tone" in blank["technical_quality"]["reason"]
    assert blank["artistic_style"]["option"] is None


def test_noise_estimate_is_zero_on_planar_images_and_tracks_added_noise():
    ramp = Image.fromarray(np.tile(np.linspace(0, 255, 256), (256, 1)).astype(np.uint8)).convert("RGB")
    assert noise_sigma(ramp) < 0.5
    rng = np.random.default_rng(1)
    flat = np.full((256, 256, 3), 128.0) + rng.normal(0.0, 10.0, (256, 256, 1))
    assert noise_sigma(Image.fromarray(np.clip(flat, 0, 255).astype(np.uint8))) == pytest.approx(10.0, abs=1.0)


def test_style_reads_the_palette():
    neon = Image.new("RGB", (512, 512), (255, 0, 200))
    ImageDraw.Draw(neon).rectangle([100, 100, 300, 300], fill=(0, 255, 0))
    assert offline(neon)["artistic_style"]["option"] == "c"
    dark = Image.new("RGB", (512, 512), (30, 30, 34))
    ImageDraw.Draw(dark).rectangle([100, 100, 300, 300], fill=(200, 190, 170))
    assert offline(dark)["artistic_style"]["option"] == "b"
    middling = Image.new("RGB", (512, 512), (150, 120, 100))
    ImageDraw.Draw(middling).rectangle([100, 100, 300, 300], fill=(40, 40, 40))
    style = offline(middling)["artistic_style"]
    assert style["option"] is None and "neither confirms nor rules out" in style["reason"]
