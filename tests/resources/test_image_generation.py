"""Text-to-image generation through the real ``openai`` and ``google-genai`` SDKs against the loopback server
(tests/support/model_servers.py), whose picture is computed from the prompt (``paint_prompt``): what goes on the
wire (prompt, model, size), that the bytes that come back are exactly the server's picture of that prompt, how
429/500, answers without an image and broken images are retried or not, and the configuration of named
generators (``ImageGeneratorsResource``), its validation and its API keys, which never show up anywhere."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from dagster import DagsterResourceFunctionError, asset, build_init_resource_context, materialize
from PIL import Image

from resources.image_editing import (
    HTTP_ERROR,
    INVALID_RESPONSE,
    MODEL_PLACEHOLDER,
    NO_IMAGE,
    OK,
    GeminiImageEditor,
    GeminiImageModel,
    GenerateRequest,
    ImageGeneratorConfig,
    ImageGeneratorsResource,
    OpenAIImageEditor,
    OpenAIImageModel,
)
from tests.support.model_servers import (
    GEMINI,
    MALFORMED_CONTENT,
    OPENAI_GENERATIONS,
    OPENAI_GENERATIONS_PATH,
    PAINT_SIZE,
    InjectedFailure,
    ModelApiServer,
    client_settings,
    gemini_path,
    outcomes,
    paint_prompt,
    prompt_palette,
    rendered_text,
    wire_api,
    wire_images,
    wire_user_text,
)
from tests.support.model_servers import NO_IMAGE as INJECT_NO_IMAGE

OPENAI_KEY = "sk-gen-0123456789abcdef-SECRET"
GEMINI_KEY = "AIzaGen-0123456789-SECRET"
APIS = (OPENAI_GENERATIONS, GEMINI)
PROMPT = "Moonlight before my bed, frost on the ground; ink-wash landscape, no text (床前明月光)."
MODEL = "image-model"


def _server(**kwargs: object) -> ModelApiServer:
    return ModelApiServer(openai_key=OPENAI_KEY, gemini_key=GEMINI_KEY, **kwargs)  # type: ignore[arg-type]


def _client(api: str, server: ModelApiServer, *, sleeps: list[float] | None = None, **kwargs: object):
    settings = client_settings(sleeps, **kwargs)
    if api == OPENAI_GENERATIONS:
        return OpenAIImageEditor(OPENAI_KEY, base_url=server.openai_base_url, **settings)  # type: ignore[arg-type]
    return GeminiImageEditor(GEMINI_KEY, base_url=server.gemini_base_url, **settings)  # type: ignore[arg-type]


def _path(api: str, model: str = MODEL) -> str:
    return OPENAI_GENERATIONS_PATH if api == OPENAI_GENERATIONS else gemini_path(model)


def _request(prompt: str = PROMPT, **changes: object) -> GenerateRequest:
    fields: dict[str, object] = {"prompt": prompt, "model": MODEL, **changes}
    return GenerateRequest(**fields)  # type: ignore[arg-type]


def _pixels(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data)).convert("RGB")


# --- the server's picture -------------------------------------------------------------------------------


def test_the_server_paints_the_prompt_deterministically() -> None:
    picture = paint_prompt(PROMPT)
    assert picture == paint_prompt(PROMPT) and picture != paint_prompt(PROMPT + " ")
    image = _pixels(picture)
    assert image.size == (PAINT_SIZE, PAINT_SIZE) == (256, 256)
    assert image.getpixel((0, 0)) == prompt_palette(PROMPT)[0]  # the top row is the sky's first colour
    assert len(set(image.getdata())) > 50  # a gradient, not a flat fill


def test_a_render_text_marker_draws_its_text_on_a_plate() -> None:
    marked = "A lone sail on the river [render text: SPRING 2024]"
    assert rendered_text(marked) == "SPRING 2024"
    assert rendered_text("[Render Text:  two words ]") == "two words"
    assert rendered_text("no marker") is None and rendered_text("[render text: ]") is None
    plate = (250, 248, 240)
    with_text, without = _pixels(paint_prompt(marked)).getdata(), _pixels(paint_prompt("A lone sail on the river")).getdata()
    assert list(with_text).count(plate) > 2000  # the light plate behind the letters
    assert (15, 15, 15) in set(with_text)  # the letters themselves
    assert plate not in set(without)


# --- successful generations, per wire format ------------------------------------------------------------


def test_openai_generation_sends_the_prompt_and_returns_the_servers_picture() -> None:
    with _server() as server:
        response = _client(OPENAI_GENERATIONS, server).generate(_request(size="1024x1024", seed=7))
    assert response.status == OK and response.ok and response.error is None and response.attempts == 1
    assert response.image == paint_prompt(PROMPT) and response.mime == "image/png"
    assert _pixels(response.image).size == (256, 256)
    assert response.provider_model is None  # the images API reports no model
    assert response.output_tokens == 258 and response.input_tokens == -(-len(PROMPT) // 4)
    [sent] = server.requests_to(OPENAI_GENERATIONS)
    assert sent.authorized and sent.method == "POST" and sent.path == "/v1/images/generations"
    assert sent.headers["content-type"] == "application/json"
    # Exactly these fields: no response_format (GPT Image models reject it) and no seed (the API takes none).
    assert sent.body == {"model": MODEL, "prompt": PROMPT, "n": 1, "size": "1024x1024"}
    assert wire_api(sent.body) == OPENAI_GENERATIONS and wire_user_text(sent.body) == PROMPT and wire_images(sent.body) == []


def test_openai_generation_without_size_and_with_request_b64() -> None:
    with _server() as server:
        response = _client(OPENAI_GENERATIONS, server, request_b64=True).generate(_request())
    assert response.status == OK
    sent = server.requests_to(OPENAI_GENERATIONS)[0].body
    assert sent == {"model": MODEL, "prompt": PROMPT, "n": 1, "response_format": "b64_json"}


def test_gemini_generation_sends_only_the_prompt_and_returns_the_servers_picture() -> None:
    with _server() as server:
        response = _client(GEMINI, server).generate(_request(model="gemini-image", size="3:2", seed=11))
    assert response.status == OK and response.attempts == 1
    assert response.image == paint_prompt(PROMPT) and response.mime == "image/png"
    assert response.text == "Here is the image."
    assert response.provider_model == "gemini-image-loopback-001"
    assert response.output_tokens == 258 + 5  # the image plus the approximate tokens of its text
    [sent] = server.requests_to(GEMINI)
    assert sent.path == gemini_path("gemini-image") and sent.authorized
    assert sent.body is not None
    assert sent.body["contents"] == [{"role": "user", "parts": [{"text": PROMPT}]}]  # no input image
    config = sent.body["generationConfig"]
    assert config["responseModalities"] == ["IMAGE", "TEXT"]
    assert config["seed"] == 11 and config["imageConfig"] == {"aspectRatio": "3:2"}


def test_gemini_size_tier_and_a_size_it_does_not_take() -> None:
    with _server() as server:
        client = _client(GEMINI, server)
        assert client.generate(_request(size="2K")).status == OK
        with pytest.raises(ValueError, match="'1024x1024'"):
            client.generate(_request(size="1024x1024"))
    assert server.requests_to(GEMINI)[0].body["generationConfig"]["imageConfig"] == {"imageSize": "2K"}
    assert "seed" not in server.requests_to(GEMINI)[0].body["generationConfig"]  # None is not sent
    assert len(server.requests) == 1  # the bad size never reached the wire


def test_gemini_generation_skips_the_thought_draft() -> None:
    with _server(gemini_thought_images=True) as server:
        response = _client(GEMINI, server).generate(_request())
    assert response.status == OK and response.image == paint_prompt(PROMPT)
    assert response.image != paint_prompt(f"{PROMPT} (draft)")  # what the thought part carried
    assert response.text == "Here is the image."


def test_both_vendors_return_the_same_picture_for_the_same_prompt() -> None:
    with _server() as server:
        images = [_client(api, server).generate(_request()).image for api in APIS]
    assert images[0] == images[1] == paint_prompt(PROMPT)


# --- failures, both vendors -----------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_429_with_retry_after_then_success(api: str) -> None:
    failure = InjectedFailure(429, path=_path(api), retry_after="2")
    sleeps: list[float] = []
    with _server(failures=[failure]) as server:
        response = _client(api, server, sleeps=sleeps).generate(_request())
    assert response.status == OK and response.attempts == 2 and response.image == paint_prompt(PROMPT)
    assert sleeps == [2.0]  # the server's Retry-After, not the backoff
    assert outcomes(server.requests_to(api)) == ["429", "ok"]
    first, second = (request.body for request in server.requests_to(api))
    assert first == second  # the retry asks the same question


@pytest.mark.parametrize("api", APIS)
def test_500_is_retried_until_success_and_gives_up_after_max_retries(api: str) -> None:
    sleeps: list[float] = []
    with _server(failures=[InjectedFailure(500, path=_path(api), times=2)]) as server:
        response = _client(api, server, sleeps=sleeps).generate(_request())
    assert response.status == OK and response.attempts == 3 and len(sleeps) == 2
    assert outcomes(server.requests_to(api)) == ["500", "500", "ok"]
    with _server(failures=[InjectedFailure(500, path=_path(api), times=None)]) as server:
        response = _client(api, server, sleeps=[], max_retries=2).generate(_request())
    assert response.status == HTTP_ERROR and response.attempts == 3 and response.image is None
    assert "HTTP 500" in (response.error or "")


@pytest.mark.parametrize("api", APIS)
def test_answer_without_an_image_is_no_image_and_not_retried(api: str) -> None:
    failure = InjectedFailure(INJECT_NO_IMAGE, path=_path(api), times=None, content="I will not paint this poem.")
    with _server(failures=[failure]) as server:
        response = _client(api, server, sleeps=[]).generate(_request())
    assert response.status == NO_IMAGE and response.attempts == 1 and response.image is None and response.mime is None
    assert "no image" in (response.error or "")
    if api == GEMINI:
        assert "I will not paint this poem." in (response.error or "")
    assert len(server.requests_to(api)) == 1


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("content", [None, "@@ not base64 @@"])
def test_broken_image_data_is_retried(api: str, content: str | None) -> None:
    # None: the server's PNG cut in half (decodes as base64, not as an image); otherwise not even base64.
    once = InjectedFailure(MALFORMED_CONTENT, path=_path(api), content=content)
    with _server(failures=[once]) as server:
        response = _client(api, server, sleeps=[]).generate(_request())
    assert response.status == OK and response.attempts == 2 and response.image == paint_prompt(PROMPT)
    always = InjectedFailure(MALFORMED_CONTENT, path=_path(api), content=content, times=None)
    with _server(failures=[always]) as server:
        response = _client(api, server, sleeps=[], max_retries=1).generate(_request())
    assert response.status == INVALID_RESPONSE and response.attempts == 2 and response.image is None and response.error


# --- the request ----------------------------------------------------------------------------------------


def test_generate_request_validation_and_repr() -> None:
    with pytest.raises(ValueError, match="prompt is empty"):
        _request(prompt=" \n")
    with pytest.raises(ValueError, match="model is empty"):
        _request(model="")
    with pytest.raises(ValueError, match="placeholder"):
        _request(model=MODEL_PLACEHOLDER)
    with pytest.raises(ValueError, match="size is blank"):
        _request(size=" ")
    with pytest.raises(ValueError, match="must be an integer"):
        _request(seed=True)
    with pytest.raises(ValueError, match="32-bit"):
        _request(seed=2**31)
    assert _request(seed=2**31 - 1).seed == 2**31 - 1
    long = _request(prompt="x" * 500, seed=3)
    assert repr(long) == f"GenerateRequest(prompt={'x' * 60!r} (500 chars), model='image-model', size=None, seed=3)"
    with pytest.raises(AttributeError):
        long.prompt = "changed"  # type: ignore[misc]
    assert OpenAIImageModel is OpenAIImageEditor and GeminiImageModel is GeminiImageEditor


# --- configured generators ------------------------------------------------------------------------------


def _generators(server: ModelApiServer) -> list[dict[str, object]]:
    return [
        {"name": "gpt", "provider": "openai", "model": "gpt-image-x", "base_url": server.openai_base_url, "size": "1024x1024"},
        {"name": "nano.v2", "provider": "gemini", "model": "gemini-image-x", "base_url": server.gemini_base_url,
         "api_key_env": "MY_GEMINI_KEY", "size": "1:1"},
    ]


def test_generator_config_validation() -> None:
    for name in ("gpt/1", "gpt 1", "", "poem@gpt", "画"):
        with pytest.raises(ValueError, match="may only contain letters, digits"):
            ImageGeneratorConfig(name=name, model="m")
    with pytest.raises(ValueError, match="model is not set"):
        ImageGeneratorConfig(name="gpt", model=MODEL_PLACEHOLDER)
    with pytest.raises(ValueError, match="'3:2' is not 'auto' or 'WIDTHxHEIGHT'"):
        ImageGeneratorConfig(name="gpt", model="m", size="3:2")
    with pytest.raises(ValueError, match="'1024x1024' is not an aspect ratio"):
        ImageGeneratorConfig(name="nano", provider="gemini", model="m", size="1024x1024")
    with pytest.raises(ValueError, match="request_b64 applies to provider 'openai' only"):
        ImageGeneratorConfig(name="nano", provider="gemini", model="m", request_b64=True)
    config = ImageGeneratorConfig(name="stand-in_1.a", model="m", size="auto")
    assert config.key_env() == "OPENAI_API_KEY" and config.request(PROMPT, seed=4) == GenerateRequest(PROMPT, "m", "auto", 4)


def test_resource_rejects_duplicate_names_and_unknown_generators() -> None:
    one = {"name": "gpt", "model": "m"}
    with pytest.raises(ValueError, match="duplicate generator names: 'gpt'"):
        ImageGeneratorsResource(generators=[one, one])
    with pytest.raises(ValueError, match=r"'GPT' \(same as 'gpt'\)"):
        ImageGeneratorsResource(generators=[one, {"name": "GPT", "model": "m"}])
    resource = ImageGeneratorsResource(generators=[one, {"name": "nano", "provider": "gemini", "model": "g"}])
    assert resource.names() == ["gpt", "nano"]
    with pytest.raises(ValueError, match=r"no image generator named 'dalle' \(configured: 'gpt', 'nano'\)"):
        resource.client("dalle")
    with pytest.raises(ValueError, match=r"configured: none"):
        ImageGeneratorsResource().generator("gpt")


def test_resource_builds_each_client_with_the_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("MY_GEMINI_KEY", GEMINI_KEY)
    with _server() as server:
        resource = ImageGeneratorsResource(generators=_generators(server), max_retries=1, backoff_s=0.01, timeout_s=5)
        gpt, gpt_client = resource.client("gpt")
        nano, nano_client = resource.client("nano.v2")
        assert isinstance(gpt_client, OpenAIImageEditor) and gpt_client.policy.max_retries == 1
        assert isinstance(nano_client, GeminiImageEditor) and nano.key_env() == "MY_GEMINI_KEY"
        responses = [gpt_client.generate(gpt.request(PROMPT)), nano_client.generate(nano.request(PROMPT, seed=9))]
    assert [response.status for response in responses] == [OK, OK]
    assert responses[0].image == responses[1].image == paint_prompt(PROMPT)
    assert server.requests_to(OPENAI_GENERATIONS)[0].body["model"] == "gpt-image-x"
    assert server.requests_to(OPENAI_GENERATIONS)[0].body["size"] == "1024x1024"
    [gemini] = server.requests_to(GEMINI)
    assert gemini.path == gemini_path("gemini-image-x")
    config = gemini.body["generationConfig"]
    assert config["imageConfig"] == {"aspectRatio": "1:1"} and config["seed"] == 9
    monkeypatch.delenv("MY_GEMINI_KEY")
    with pytest.raises(ValueError, match="generator 'nano.v2' uses provider 'gemini', but environment variable MY_GEMINI_KEY"):
        resource.client("nano.v2")


def test_the_key_never_appears_in_reprs_errors_or_logs(monkeypatch: pytest.MonkeyPatch, logs: Callable[[], str]) -> None:
    wrong = "sk-wrong-key-0123456789-SECRET"  # the server rejects it, so the error path is exercised too
    monkeypatch.setenv("OPENAI_API_KEY", wrong)
    monkeypatch.setenv("MY_GEMINI_KEY", wrong)
    with _server() as server:
        resource = ImageGeneratorsResource(generators=_generators(server), max_retries=0)
        seen: list[str] = [repr(resource), str(resource)]
        for name in resource.names():
            config, client = resource.client(name)
            response = client.generate(config.request(PROMPT))
            assert response.status == HTTP_ERROR and response.attempts == 1  # 401 / 400: final at once
            seen += [repr(config), repr(client), str(client), repr(response), response.error or ""]
    assert "HTTP 401" in seen[6] and "API key not valid" in seen[-1]
    assert not [request for request in server.requests if request.authorized]
    assert all(wrong not in text for text in seen)
    assert wrong not in logs()
    assert all(wrong not in str(request.headers) for request in server.requests)


def test_a_list_of_generators_comes_from_dagster_run_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("MY_GEMINI_KEY", GEMINI_KEY)
    results: list[tuple[str, str, str, bool]] = []

    @asset
    def illustrate(image_generators: ImageGeneratorsResource) -> None:
        for name in image_generators.names():
            config, client = image_generators.client(name)
            response = client.generate(config.request(f"{PROMPT} by {name}"))
            expected = paint_prompt(f"{PROMPT} by {name}")
            results.append((name, type(config).__name__, response.status, response.image == expected))

    with _server() as server:
        run_config = {"resources": {"image_generators": {"config": {"generators": _generators(server), "timeout_s": 5}}}}
        result = materialize([illustrate], resources={"image_generators": ImageGeneratorsResource()}, run_config=run_config)
        assert result.success
        assert results == [("gpt", "ImageGeneratorConfig", OK, True), ("nano.v2", "ImageGeneratorConfig", OK, True)]
        assert [request.body["prompt"] for request in server.requests_to(OPENAI_GENERATIONS)] == [f"{PROMPT} by gpt"]

        # The same checks run when Dagster builds the resource from run config: a duplicate name stops the run.
        duplicated = {"generators": [_generators(server)[0], {**_generators(server)[1], "name": "gpt"}]}
        with pytest.raises(DagsterResourceFunctionError) as failed:
            materialize(
                [illustrate],
                resources={"image_generators": ImageGeneratorsResource()},
                run_config={"resources": {"image_generators": {"config": duplicated}}},
            )
        assert isinstance(failed.value.__cause__, ValueError)
        assert "duplicate generator names: 'gpt'" in str(failed.value.__cause__)
    assert len(results) == 2  # the failed run never reached the asset

    built = ImageGeneratorsResource.from_resource_context(
        build_init_resource_context(config={"generators": [{"name": "stand-in-1", "model": "m", "provider": "gemini"}]})
    )
    assert built.names() == ["stand-in-1"] and built.generator("stand-in-1").provider == "gemini"
