"""The image editors, through the real ``openai`` and ``google-genai`` SDKs, against the loopback server
(tests/support/model_servers.py), whose edit is computed from the upload: the colours of the half of the image
the prompt names are inverted. What goes on the wire, what comes back, and how answers without a usable image
are reported without raising. Transport failures (retries, timeouts, refused connections, replies that are not
an API object, the API key kept out of errors and logs) are tested for the editors and the text providers
together in tests/resources/test_model_providers.py, since both share ``Transport`` and ``RetryPolicy``."""

from __future__ import annotations

import io

import pytest
from dagster import asset, materialize
from PIL import Image

from resources.image_editing import (
    INVALID_RESPONSE,
    MODEL_PLACEHOLDER,
    NO_IMAGE,
    OK,
    EditRequest,
    GeminiImageEditor,
    ImageEditorResource,
    OpenAIImageEditor,
    image_mime,
)
from tests.support.model_servers import (
    GEMINI,
    MALFORMED_CONTENT,
    OPENAI_IMAGES,
    OPENAI_IMAGES_PATH,
    InjectedFailure,
    ModelApiServer,
    client_settings,
    gemini_path,
    named_region,
    wire_images,
    wire_user_text,
)
from tests.support.model_servers import NO_IMAGE as INJECT_NO_IMAGE

OPENAI_KEY = "sk-edit-0123456789abcdef-SECRET"
GEMINI_KEY = "AIzaEdit-0123456789-SECRET"
EDITORS = (OPENAI_IMAGES, GEMINI)
RED, BLUE = (200, 40, 40), (10, 20, 250)


def _two_colour_png(width: int = 8, height: int = 4) -> bytes:
    """Left half red, right half blue."""
    image = Image.new("RGB", (width, height), RED)
    image.paste(BLUE, (width // 2, 0, width, height))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


SOURCE = _two_colour_png()


def _request(model: str = "edit-model", instruction: str = "Swap the lantern in the left half for a lamp.", **changes: object) -> EditRequest:
    fields: dict[str, object] = {"image": SOURCE, "mime": "image/png", "instruction": instruction, "model": model}
    fields.update(changes)
    return EditRequest(**fields)  # type: ignore[arg-type]


def _server(**kwargs: object) -> ModelApiServer:
    return ModelApiServer(openai_key=OPENAI_KEY, gemini_key=GEMINI_KEY, **kwargs)  # type: ignore[arg-type]


def _editor(api: str, server: ModelApiServer, *, sleeps: list[float] | None = None, **kwargs: object):
    settings = client_settings(sleeps, **kwargs)
    if api == OPENAI_IMAGES:
        return OpenAIImageEditor(OPENAI_KEY, base_url=server.openai_base_url, **settings)  # type: ignore[arg-type]
    return GeminiImageEditor(GEMINI_KEY, base_url=server.gemini_base_url, **settings)  # type: ignore[arg-type]


def _path(api: str, model: str = "edit-model") -> str:
    return OPENAI_IMAGES_PATH if api == OPENAI_IMAGES else gemini_path(model)


def _pixels(data: bytes) -> list[tuple[int, int, int]]:
    return list(Image.open(io.BytesIO(data)).convert("RGB").getdata())


# --- successful edits, per wire format ------------------------------------------------------------------


def test_openai_uploads_the_image_and_prompt_and_returns_the_computed_edit() -> None:
    with _server() as server:
        response = _editor(OPENAI_IMAGES, server).edit(
            _request(instruction="Swap the lantern in the left half for a paper lamp (纸灯, décor).", size="1024x1024", seed=7)
        )
    assert response.status == OK and response.ok and response.error is None and response.attempts == 1
    assert response.mime == "image/png" and response.image is not None
    # The left half (x 0-3) was red (200, 40, 40) and is now inverted to (55, 215, 215); the right half is untouched.
    pixels = _pixels(response.image)
    assert pixels[0] == (55, 215, 215) and pixels[3] == (55, 215, 215)
    assert pixels[4] == BLUE and pixels[7] == BLUE
    assert response.provider_model is None  # the images API reports no model
    assert "bytes>" in repr(response)  # the image is summarised, not dumped
    assert response.input_tokens is not None and response.output_tokens == 258
    [sent] = server.requests_to(OPENAI_IMAGES)
    assert sent.authorized and sent.path == "/v1/images/edits"
    assert sent.headers["content-type"].startswith("multipart/form-data; boundary=")
    body = sent.body
    assert body is not None
    assert {key: value for key, value in body.items() if key != "files"} == {
        "model": "edit-model",
        "prompt": "Swap the lantern in the left half for a paper lamp (纸灯, décor).",  # UTF-8 form field
        "n": "1",
        "size": "1024x1024",
    }  # no response_format (GPT Image models reject it) and no seed (the images API takes none)
    assert [(file["field"], file["filename"], file["content_type"]) for file in body["files"]] == [
        ("image", "source.png", "image/png")
    ]
    assert wire_images(body) == [("image/png", SOURCE)]


def test_openai_request_b64_for_compatible_servers() -> None:
    with _server() as server:
        response = _editor(OPENAI_IMAGES, server, request_b64=True).edit(_request())
    assert response.status == OK
    assert server.requests_to(OPENAI_IMAGES)[0].body["response_format"] == "b64_json"


def test_gemini_asks_for_image_output_and_returns_the_computed_edit() -> None:
    with _server() as server:
        response = _editor(GEMINI, server).edit(
            _request(model="gemini-edit", instruction="Replace the banner in the right half.", seed=11, size="3:2")
        )
    assert response.status == OK and response.attempts == 1
    assert response.mime == "image/png" and response.image is not None
    pixels = _pixels(response.image)
    assert pixels[0] == RED and pixels[3] == RED
    assert pixels[4] == (245, 235, 5) and pixels[7] == (245, 235, 5)  # blue (10, 20, 250) inverted
    assert response.text == "Here is the edited image."
    assert response.provider_model == "gemini-edit-loopback-001"
    [sent] = server.requests_to(GEMINI)
    assert sent.path == gemini_path("gemini-edit") and sent.authorized
    body = sent.body
    assert body is not None
    [content] = body["contents"]
    assert "inlineData" in content["parts"][0] and content["parts"][1] == {"text": "Replace the banner in the right half."}
    assert wire_images(body) == [("image/png", SOURCE)]
    config = body["generationConfig"]
    assert config["responseModalities"] == ["IMAGE", "TEXT"]
    assert config["seed"] == 11 and config["imageConfig"] == {"aspectRatio": "3:2"}


def test_gemini_size_tier_and_bad_size() -> None:
    with _server() as server:
        editor = _editor(GEMINI, server)
        assert editor.edit(_request(size="2K")).status == OK
        with pytest.raises(ValueError, match="'1024x1024'"):
            editor.edit(_request(size="1024x1024"))
    assert server.requests_to(GEMINI)[0].body["generationConfig"]["imageConfig"] == {"imageSize": "2K"}
    assert len(server.requests) == 1  # the bad size never reached the wire


def test_gemini_skips_thought_images_and_thought_text() -> None:
    # Thinking image models may send a draft image marked as a thought before the answer; the draft here is
    # the unedited upload, so taking it would return the source.
    with _server(gemini_thought_images=True) as server:
        response = _editor(GEMINI, server).edit(_request(instruction="Change the top half."))
    assert response.status == OK and response.image is not None
    pixels = Image.open(io.BytesIO(response.image)).convert("RGB")
    assert pixels.getpixel((0, 0)) == (55, 215, 215) and pixels.getpixel((0, 3)) == RED
    assert response.text == "Here is the edited image."
    sent = server.requests_to(GEMINI)[0].body  # the request itself is ordinary
    assert sent is not None and wire_user_text(sent) == "Change the top half."


def test_the_whole_image_is_edited_when_the_prompt_names_no_half() -> None:
    assert named_region("make it dusk", 8, 4) == (0, 0, 8, 4)
    assert named_region("the RIGHT HALF, then the left half", 8, 4) == (4, 0, 8, 4)  # the first one named
    with _server() as server:
        response = _editor(OPENAI_IMAGES, server).edit(_request(instruction="Make it dusk."))
    assert set(_pixels(response.image)) == {(55, 215, 215), (245, 235, 5)}


def test_jpeg_sources_are_uploaded_as_jpeg() -> None:
    out = io.BytesIO()
    Image.new("RGB", (6, 6), (0, 0, 0)).save(out, format="JPEG")
    with _server() as server:
        response = _editor(OPENAI_IMAGES, server).edit(_request(image=out.getvalue(), mime="image/jpeg"))
    assert response.status == OK and response.mime == "image/png"
    [file] = server.requests_to(OPENAI_IMAGES)[0].body["files"]
    assert (file["filename"], file["content_type"]) == ("source.jpg", "image/jpeg")
    assert set(_pixels(response.image)) >= {(255, 255, 255)}  # black inverted


# --- answers without a usable image, both editors -------------------------------------------------------


@pytest.mark.parametrize("api", EDITORS)
@pytest.mark.parametrize("content", [None, "@@ not base64 @@"])
def test_image_data_that_is_not_an_image_is_invalid_response(api: str, content: str | None) -> None:
    # None: the edited PNG cut in half (decodes as base64, not as an image); otherwise not even base64.
    failure = InjectedFailure(MALFORMED_CONTENT, path=_path(api), content=content, times=None)
    with _server(failures=[failure]) as server:
        response = _editor(api, server, sleeps=[], max_retries=1).edit(_request())
    assert response.status == INVALID_RESPONSE and response.attempts == 2 and response.image is None
    assert response.error


@pytest.mark.parametrize("api", EDITORS)
def test_answer_without_an_image_is_no_image_and_not_retried(api: str) -> None:
    failure = InjectedFailure(INJECT_NO_IMAGE, path=_path(api), times=None, content="I will not edit this picture.")
    with _server(failures=[failure]) as server:
        response = _editor(api, server, sleeps=[]).edit(_request())
    assert response.status == NO_IMAGE and response.attempts == 1 and response.image is None and response.mime is None
    assert "no image" in (response.error or "")
    if api == GEMINI:
        assert "I will not edit this picture." in (response.error or "")


# --- requests and helpers -------------------------------------------------------------------------------


def test_edit_request_validation() -> None:
    with pytest.raises(ValueError, match="image is empty"):
        _request(image=b"")
    with pytest.raises(ValueError, match="'text/plain'"):
        _request(mime="text/plain")
    with pytest.raises(ValueError, match="instruction is empty"):
        _request(instruction="  ")
    with pytest.raises(ValueError, match="model is empty"):
        _request(model="")
    assert "bytes>" in repr(_request()) and str(len(SOURCE)) in repr(_request())


def test_image_mime_reads_the_bytes() -> None:
    assert image_mime(SOURCE) == "image/png"
    out = io.BytesIO()
    Image.new("RGB", (3, 3)).save(out, format="JPEG")
    assert image_mime(out.getvalue()) == "image/jpeg"
    assert image_mime(b"not an image") is None


# --- the Dagster resource -------------------------------------------------------------------------------


def test_resource_builds_each_editor_from_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("MY_GEMINI_KEY", GEMINI_KEY)
    with _server() as server:
        openai_resource = ImageEditorResource(
            provider="openai", model="gpt-edit", base_url=server.openai_base_url, size="auto", max_retries=1, backoff_s=0.01
        )
        gemini_resource = ImageEditorResource(
            provider="gemini", model="gem-edit", base_url=server.gemini_base_url, api_key_env="MY_GEMINI_KEY", timeout_s=5
        )
        openai_editor, gemini_editor = openai_resource.editor(), gemini_resource.editor()
        assert isinstance(openai_editor, OpenAIImageEditor) and openai_editor.policy.max_retries == 1
        assert isinstance(gemini_editor, GeminiImageEditor)
        first = openai_editor.edit(openai_resource.request(SOURCE, "image/png", "Change the left half.", seed=3))
        second = gemini_editor.edit(gemini_resource.request(SOURCE, "image/png", "Change the left half."))
    assert first.status == OK and second.status == OK
    assert first.image == second.image  # the same computed edit through either wire format
    assert server.requests_to(OPENAI_IMAGES)[0].body["size"] == "auto"
    assert server.requests_to(GEMINI)[0].path == gemini_path("gem-edit")
    assert OPENAI_KEY not in repr(openai_resource) and GEMINI_KEY not in repr(gemini_resource)


def test_resource_refuses_the_placeholder_model_and_a_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    assert ImageEditorResource().model == MODEL_PLACEHOLDER
    with pytest.raises(ValueError, match="model is not set"):
        ImageEditorResource().editor()
    with pytest.raises(ValueError, match="GEMINI_API_KEY"):
        ImageEditorResource(provider="gemini", model="gem-edit").editor()


def test_resource_takes_its_config_from_a_dagster_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    results: list[str] = []

    @asset
    def edit_probe(image_editor: ImageEditorResource) -> None:
        response = image_editor.editor().edit(image_editor.request(SOURCE, "image/png", "Change the bottom half."))
        results.append(response.status)

    with _server() as server:
        config = {"provider": "gemini", "model": "run-model", "base_url": server.gemini_base_url, "timeout_s": 5}
        result = materialize(
            [edit_probe],
            resources={"image_editor": ImageEditorResource()},
            run_config={"resources": {"image_editor": {"config": config}}},
        )
    assert result.success and results == [OK]
    assert server.requests_to(GEMINI)[0].path == gemini_path("run-model")


# --- a counterfactual pair end to end -------------------------------------------------------------------


@pytest.mark.parametrize("api", EDITORS)
def test_a_counterfactual_spec_becomes_a_pending_synthetic_record(api: str) -> None:
    from assets.counterfactual.logic.edit_pairs import PENDING, CounterfactualSpec, edit_prompt, edit_record
    from warehouse.ids import sha256_hex

    spec = CounterfactualSpec("ctx-7", "the red lantern in the left half", "replace it with a white paper lamp", "No", "Yes")
    with _server() as server:
        editor = _editor(api, server)
        responses = [editor.edit(_request(instruction=edit_prompt(spec), seed=1)) for _ in range(2)]
    assert wire_user_text(server.requests[0].body) == edit_prompt(spec)
    assert all(response.status == OK for response in responses)
    assert responses[0].image == responses[1].image != SOURCE
    assert _pixels(responses[0].image)[0] == (55, 215, 215)  # the left half changed, as the cue says
    records = [
        edit_record(
            spec,
            source_sha256=sha256_hex(SOURCE),
            output_sha256=sha256_hex(response.image),
            output_mime=response.mime,
            provider=editor.name,
            model="edit-model",
            provider_model=response.provider_model,
            seed=1,
        )
        for response in responses
    ]
    assert records[0] == records[1]  # same source, spec, model and output: same record
    assert records[0].synthetic and records[0].manual_check == PENDING and records[0].source_id == "ctx-7"
