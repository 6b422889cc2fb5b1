"""The OpenAI and Gemini providers, through the real ``openai`` and ``google-genai`` SDKs, against a loopback
server that speaks both HTTP APIs (tests/support/model_servers.py): what goes on the wire, what comes back,
and how every transport failure is retried or reported without raising and without leaking the API key."""

from __future__ import annotations

import io
import json
import logging
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from dagster import asset, materialize
from PIL import Image

from resources.model_providers import (
    CONNECTION_ERROR,
    HTTP_ERROR,
    INVALID_RESPONSE,
    OK,
    TIMEOUT,
    GeminiProvider,
    ModelProvidersResource,
    ModelRequest,
    OpenAIProvider,
    RoleConfig,
    fit_image,
    retry_after_from_headers,
)
from tests.support.model_servers import (
    GEMINI,
    MALFORMED_CONTENT,
    NOT_JSON,
    OPENAI,
    OPENAI_PATH,
    SLOW,
    TRUNCATED_BODY,
    InjectedFailure,
    ModelApiServer,
    gemini_path,
    outcomes,
    wire_images,
    wire_schema,
    wire_system,
    wire_user_text,
)

OPENAI_KEY = "sk-test-0123456789abcdef-SECRET"
GEMINI_KEY = "AIzaTest-0123456789-SECRET"
PLAN_SCHEMA = {
    "type": "object",
    "properties": {"dimensions": {"type": "array", "items": {"type": "object"}}},
    "required": ["dimensions"],
}
PROVIDERS = (OPENAI, GEMINI)


def _png(width: int, height: int, color: tuple[int, int, int] = (200, 40, 40)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format="PNG")
    return out.getvalue()


IMAGE = _png(48, 32)


def _request(model: str = "vision-model", **changes: object) -> ModelRequest:
    fields: dict[str, object] = {
        "role": "planner",
        "model": model,
        "system": "You plan aesthetic critiques.",
        "user": "Pick the dimensions worth discussing for this image.",
        "image": IMAGE,
        "image_mime": "image/png",
        "json_schema": PLAN_SCHEMA,
        "schema_name": "plan",
        "temperature": 0.3,
        "max_output_tokens": 512,
    }
    fields.update(changes)
    return ModelRequest(**fields)  # type: ignore[arg-type]


def _server(**kwargs: object) -> ModelApiServer:
    return ModelApiServer(openai_key=OPENAI_KEY, gemini_key=GEMINI_KEY, **kwargs)  # type: ignore[arg-type]


def _provider(api: str, server: ModelApiServer, *, sleeps: list[float] | None = None, **kwargs: object):
    """A provider of kind ``api`` pointed at ``server``; ``sleeps`` (when given) records backoff waits instead of
    sleeping them."""
    settings: dict[str, object] = {"timeout_s": 5.0, "backoff_s": 0.01, "max_backoff_s": 5.0}
    if sleeps is not None:
        settings["sleep"] = sleeps.append
    settings.update(kwargs)
    if api == OPENAI:
        return OpenAIProvider(OPENAI_KEY, base_url=server.openai_base_url, **settings)  # type: ignore[arg-type]
    return GeminiProvider(GEMINI_KEY, base_url=server.gemini_base_url, **settings)  # type: ignore[arg-type]


def _path(api: str, model: str = "vision-model") -> str:
    return OPENAI_PATH if api == OPENAI else gemini_path(model)


@pytest.fixture
def logs() -> Iterator[Callable[[], str]]:
    """Everything logged at any level while the test runs (SDK debug logs included)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield stream.getvalue
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


# --- the happy path, per wire format --------------------------------------------------------------------


def test_openai_sends_image_schema_and_system_prompt_and_reads_usage() -> None:
    with _server(responder=lambda body: '{"dimensions": []}') as server:
        response = _provider(OPENAI, server).complete(_request())
    assert response.status == OK and response.error is None and response.attempts == 1
    assert response.text == '{"dimensions": []}'
    assert response.finish_reason == "stop"
    assert response.provider_model == "vision-model-loopback-001"
    [sent] = server.requests_to(OPENAI)
    body = sent.body
    assert sent.authorized and body is not None
    assert body["model"] == "vision-model"
    assert body["messages"][0] == {"role": "system", "content": "You plan aesthetic critiques."}
    user = body["messages"][1]
    assert user["role"] == "user"
    assert [part["type"] for part in user["content"]] == ["image_url", "text"]
    assert user["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert wire_images(body) == [("image/png", IMAGE)]
    assert wire_user_text(body) == "Pick the dimensions worth discussing for this image."
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "plan", "schema": PLAN_SCHEMA, "strict": False},
    }
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 512  # a custom base_url gets the field every compatible server knows
    # Token counts are the server's usage figures, not estimates of our own.
    prompt_chars = len(wire_system(body) + wire_user_text(body))
    assert response.input_tokens == -(-prompt_chars // 4) + 258
    assert response.output_tokens == -(-len(response.text) // 4)


def test_gemini_sends_image_schema_and_system_instruction_and_reads_usage_metadata() -> None:
    with _server(responder=lambda body: '{"dimensions": []}') as server:
        response = _provider(GEMINI, server).complete(_request(model="gemini-test"))
    assert response.status == OK and response.attempts == 1
    assert response.text == '{"dimensions": []}'
    assert response.finish_reason == "STOP"
    assert response.provider_model == "gemini-test-loopback-001"
    [sent] = server.requests_to(GEMINI)
    assert sent.path == "/v1beta/models/gemini-test:generateContent"
    assert sent.authorized
    body = sent.body
    assert body is not None
    assert wire_images(body) == [("image/png", IMAGE)]
    [content] = body["contents"]
    assert content["role"] == "user"
    assert "inlineData" in content["parts"][0] and content["parts"][1] == {"text": _request().user}
    assert wire_system(body) == "You plan aesthetic critiques."
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == {**PLAN_SCHEMA, "title": "plan"}
    assert wire_schema(body) == ("plan", {**PLAN_SCHEMA, "title": "plan"})
    assert config["temperature"] == 0.3 and config["maxOutputTokens"] == 512
    prompt_chars = len(wire_system(body) + wire_user_text(body))
    assert response.input_tokens == -(-prompt_chars // 4) + 258
    assert response.output_tokens == -(-len(response.text) // 4)


def test_openai_json_modes_for_servers_without_schema_support() -> None:
    with _server() as server:
        _provider(OPENAI, server, json_mode="object").complete(_request())
        _provider(OPENAI, server, json_mode="none").complete(_request())
        _provider(OPENAI, server).complete(_request(json_schema=None, schema_name=None))
    object_mode, no_format, free_text = (request.body for request in server.requests_to(OPENAI))
    assert object_mode["response_format"] == {"type": "json_object"}
    assert "response_format" not in no_format and "response_format" not in free_text


def test_gemini_json_modes() -> None:
    with _server() as server:
        _provider(GEMINI, server, json_mode="object").complete(_request())
        _provider(GEMINI, server, json_mode="none").complete(_request())
    object_mode, no_format = (request.body["generationConfig"] for request in server.requests_to(GEMINI))
    assert object_mode["responseMimeType"] == "application/json" and "responseJsonSchema" not in object_mode
    assert "responseMimeType" not in no_format and "responseJsonSchema" not in no_format


@pytest.mark.parametrize("api", PROVIDERS)
def test_images_larger_than_the_configured_side_are_scaled_down_before_sending(api: str) -> None:
    big = _png(400, 100)
    with _server() as server:
        response = _provider(api, server, image_max_side=64).complete(_request(image=big))
    assert response.status == OK
    [(mime, sent)] = wire_images(server.requests[0].body)
    assert mime == "image/png"
    assert Image.open(io.BytesIO(sent)).size == (64, 16)


def test_fit_image_keeps_small_images_and_reencodes_large_jpegs() -> None:
    assert fit_image(IMAGE, "image/png", 1024) == (IMAGE, "image/png")
    assert fit_image(IMAGE, "image/png", None) == (IMAGE, "image/png")
    out = io.BytesIO()
    Image.new("RGB", (300, 600), (10, 120, 200)).save(out, format="JPEG")
    data, mime = fit_image(out.getvalue(), "image/jpeg", 150)
    assert mime == "image/jpeg" and Image.open(io.BytesIO(data)).size == (75, 150)
    assert fit_image(out.getvalue(), "image/jpeg", 150) == (data, mime)  # deterministic: same bytes each time


# --- retries and failures, both providers ---------------------------------------------------------------


@pytest.mark.parametrize("api", PROVIDERS)
def test_429_with_retry_after_is_waited_out_then_succeeds(api: str) -> None:
    failure = InjectedFailure(429, path=_path(api), retry_after="1")
    with _server(failures=[failure]) as server:
        response = _provider(api, server).complete(_request())
    assert response.status == OK and response.attempts == 2
    first, second = server.requests_to(api)
    assert outcomes([first, second]) == ["429", "ok"]
    assert 0.95 <= second.received_at - first.received_at < 2.0  # waited Retry-After, not the 0.01 s backoff
    assert response.latency_ms >= 950


def test_gemini_honours_retry_info_in_the_error_body() -> None:
    failure = InjectedFailure(429, path=gemini_path("vision-model"), retry_info_s=2.5)
    sleeps: list[float] = []
    with _server(failures=[failure]) as server:
        response = _provider(GEMINI, server, sleeps=sleeps).complete(_request())
    assert response.status == OK and response.attempts == 2
    assert sleeps == [2.5]


@pytest.mark.parametrize("api", PROVIDERS)
def test_persistent_500_gives_http_error_after_max_retries(api: str, logs: Callable[[], str]) -> None:
    sleeps: list[float] = []
    with _server(failures=[InjectedFailure(500, path=_path(api), times=None)]) as server:
        response = _provider(api, server, sleeps=sleeps, max_retries=3, backoff_s=0.5, max_backoff_s=10).complete(_request())
    assert response.status == HTTP_ERROR and response.attempts == 4 and response.text == ""
    assert response.error is not None and "500" in response.error
    assert outcomes(server.requests_to(api)) == ["500"] * 4
    # Exponential backoff with up to one backoff_s of jitter.
    assert len(sleeps) == 3
    for retry, delay in enumerate(sleeps, start=1):
        base = 0.5 * 2 ** (retry - 1)
        assert base <= delay <= base + 0.5
    assert "failed after 4 attempt(s)" in logs()


@pytest.mark.parametrize("api", PROVIDERS)
def test_two_500s_then_success(api: str) -> None:
    with _server(failures=[InjectedFailure(500, path=_path(api), times=2)]) as server:
        response = _provider(api, server, sleeps=[]).complete(_request())
    assert response.status == OK and response.attempts == 3


@pytest.mark.parametrize("api", PROVIDERS)
@pytest.mark.parametrize("status", [400, 404])
def test_client_errors_are_not_retried(api: str, status: int) -> None:
    with _server(failures=[InjectedFailure(status, path=_path(api), times=None)]) as server:
        response = _provider(api, server, sleeps=[]).complete(_request())
    assert response.status == HTTP_ERROR and response.attempts == 1
    assert str(status) in (response.error or "")
    assert len(server.requests) == 1


@pytest.mark.parametrize("api", PROVIDERS)
def test_408_is_retried(api: str) -> None:
    with _server(failures=[InjectedFailure(408, path=_path(api))]) as server:
        response = _provider(api, server, sleeps=[]).complete(_request())
    assert response.status == OK and response.attempts == 2


@pytest.mark.parametrize("api", PROVIDERS)
def test_slow_server_times_out(api: str) -> None:
    failure = InjectedFailure(SLOW, path=_path(api), times=None, delay_s=3.0)
    with _server(failures=[failure]) as server:
        response = _provider(api, server, sleeps=[], timeout_s=0.3, max_retries=1).complete(_request())
    assert response.status == TIMEOUT and response.attempts == 2
    assert len(server.requests) == 2


@pytest.mark.parametrize("api", PROVIDERS)
def test_slow_once_then_answers(api: str) -> None:
    failure = InjectedFailure(SLOW, path=_path(api), delay_s=3.0)
    with _server(failures=[failure]) as server:
        response = _provider(api, server, sleeps=[], timeout_s=0.3).complete(_request())
    assert response.status == OK and response.attempts == 2


@pytest.mark.parametrize("api", PROVIDERS)
def test_connection_refused(api: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps: list[float] = []
    base = f"http://127.0.0.1:{port}"
    settings = {"timeout_s": 2.0, "max_retries": 2, "backoff_s": 0.01, "sleep": sleeps.append}
    provider = (
        OpenAIProvider(OPENAI_KEY, base_url=f"{base}/v1", **settings)  # type: ignore[arg-type]
        if api == OPENAI
        else GeminiProvider(GEMINI_KEY, base_url=f"{base}/", **settings)  # type: ignore[arg-type]
    )
    response = provider.complete(_request())
    assert response.status == CONNECTION_ERROR and response.attempts == 3 and len(sleeps) == 2


@pytest.mark.parametrize("api", PROVIDERS)
@pytest.mark.parametrize("kind", [NOT_JSON, TRUNCATED_BODY])
def test_reply_that_is_not_an_api_object_is_invalid_response_and_retried(api: str, kind: str) -> None:
    # A 200 whose body is an HTML page or JSON cut off halfway is a server malfunction like a 5xx: status
    # invalid_response (not http_error), retried like any other transport failure.
    with _server(failures=[InjectedFailure(kind, path=_path(api), times=None)]) as server:
        response = _provider(api, server, sleeps=[], max_retries=2).complete(_request())
    assert response.status == INVALID_RESPONSE and response.attempts == 3 and response.text == ""
    with _server(failures=[InjectedFailure(kind, path=_path(api))]) as server:
        response = _provider(api, server, sleeps=[]).complete(_request())
    assert response.status == OK and response.attempts == 2


@pytest.mark.parametrize("api", PROVIDERS)
def test_malformed_answer_text_is_passed_through_for_the_call_layer(api: str) -> None:
    failure = InjectedFailure(MALFORMED_CONTENT, path=_path(api), content='{"dimensions": [{"dimension": "col')
    with _server(failures=[failure]) as server:
        response = _provider(api, server).complete(_request())
    assert response.status == OK and response.attempts == 1
    assert response.text == '{"dimensions": [{"dimension": "col'


@pytest.mark.parametrize("api", PROVIDERS)
def test_failures_can_target_one_request_by_body_and_position(api: str) -> None:
    failure = InjectedFailure(500, path=_path(api), match="verdicts", skip=1, times=1)
    with _server(failures=[failure]) as server:
        provider = _provider(api, server, sleeps=[])
        statuses = [
            provider.complete(_request(schema_name=name)).attempts for name in ("plan", "verdicts", "plan", "verdicts")
        ]
    assert statuses == [1, 1, 1, 2]  # only the second request mentioning "verdicts" failed


# --- the loopback server itself -----------------------------------------------------------------------


@pytest.mark.parametrize("api", PROVIDERS)
def test_server_serves_concurrent_requests_with_a_fixed_latency(api: str) -> None:
    with _server(latency_s=0.4) as server:
        provider = _provider(api, server)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=8) as pool:
            responses = list(pool.map(lambda n: provider.complete(_request(schema_name=f"s{n}")), range(8)))
        elapsed = time.monotonic() - started
    assert all(response.status == OK for response in responses)
    assert [json.loads(response.text)["schema"] for response in responses] == [f"s{n}" for n in range(8)]
    assert 0.4 <= elapsed < 2.0  # about one latency for all eight; one after another would take 3.2 s
    assert all(response.latency_ms >= 400 for response in responses)


def test_server_fails_the_test_on_paths_it_does_not_serve() -> None:
    with pytest.raises(AssertionError, match="/v1/completions"):
        with _server() as server:
            reply = requests.post(f"{server.base}/v1/completions", json={"prompt": "hi"}, timeout=5)
            assert reply.status_code == 404


# --- secrets --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", PROVIDERS)
def test_api_key_never_in_repr_errors_or_logs(api: str, logs: Callable[[], str]) -> None:
    key = OPENAI_KEY if api == OPENAI else GEMINI_KEY
    failures = [InjectedFailure(500, path=_path(api), times=2), InjectedFailure(NOT_JSON, path=_path(api), times=2)]
    with ModelApiServer(openai_key="other-openai", gemini_key="other-gemini") as wrong_key:
        rejected = _provider(api, wrong_key, sleeps=[]).complete(_request())
    with _server(failures=failures) as server:
        provider = _provider(api, server, sleeps=[], max_retries=1)
        responses = [provider.complete(_request()) for _ in range(3)]
    assert rejected.status == HTTP_ERROR and rejected.attempts == 1  # a bad key is a 4xx: never retried
    assert [response.status for response in responses] == [HTTP_ERROR, INVALID_RESPONSE, OK]
    assert key not in repr(provider) and key not in str(provider)
    for response in [rejected, *responses]:
        assert key not in repr(response)
    assert all(key not in str(request.headers) for request in server.requests)
    text = logs()
    assert "attempt" in text  # the retries were logged ...
    assert key not in text  # ... without the key


# --- the Dagster resource -------------------------------------------------------------------------------


def test_resource_builds_each_role_from_its_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("MY_GEMINI_KEY", GEMINI_KEY)
    with _server() as server:
        resource = ModelProvidersResource(
            planner=RoleConfig(provider="openai", model="planner-model", base_url=server.openai_base_url, json_mode="object"),
            annotator=RoleConfig(
                provider="gemini", model="annotator-model", base_url=server.gemini_base_url, api_key_env="MY_GEMINI_KEY"
            ),
            verifier=RoleConfig(provider="openai", model="verifier-model", base_url=server.openai_base_url, image_max_side=16),
            timeout_s=5,
            max_retries=1,
            backoff_s=0.01,
        )
        planner, annotator, verifier = (resource.provider_for(role) for role in ("planner", "annotator", "verifier"))
        assert isinstance(planner, OpenAIProvider) and planner.json_mode == "object"
        assert isinstance(annotator, GeminiProvider) and annotator.policy.max_retries == 1
        assert isinstance(verifier, OpenAIProvider) and verifier.image_max_side == 16
        assert planner.complete(_request(model="planner-model")).status == OK
        assert annotator.complete(_request(model="annotator-model")).status == OK
        assert verifier.complete(_request(model="verifier-model")).status == OK
    openai_bodies = [request.body for request in server.requests_to(OPENAI)]
    assert openai_bodies[0]["response_format"] == {"type": "json_object"}
    assert Image.open(io.BytesIO(wire_images(openai_bodies[1])[0][1])).size == (16, 11)
    assert server.requests_to(GEMINI)[0].path == gemini_path("annotator-model")
    assert OPENAI_KEY not in repr(resource) and GEMINI_KEY not in repr(resource)


def test_resource_takes_roles_from_dagster_run_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    answers: list[str] = []

    @asset
    def critique_probe(model_providers: ModelProvidersResource) -> None:
        answers.append(model_providers.provider_for("annotator").complete(_request(model="g-annot")).text)

    with _server(responder=lambda body: '{"pairs": []}') as server:
        annotator = {"provider": "gemini", "model": "g-annot", "base_url": server.gemini_base_url}
        result = materialize(
            [critique_probe],
            resources={"model_providers": ModelProvidersResource()},
            run_config={"resources": {"model_providers": {"config": {"annotator": annotator, "timeout_s": 5}}}},
        )
    assert result.success and answers == ['{"pairs": []}']
    assert server.requests_to(GEMINI)[0].path == gemini_path("g-annot")


def test_resource_reports_a_missing_key_by_variable_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("EMPTY_KEY", "  ")
    resource = ModelProvidersResource(
        planner=RoleConfig(provider="gemini", model="g"),
        verifier=RoleConfig(provider="openai", model="o", api_key_env="EMPTY_KEY"),
    )
    with pytest.raises(ValueError, match="GEMINI_API_KEY"):
        resource.provider_for("planner")
    with pytest.raises(ValueError, match="EMPTY_KEY"):
        resource.provider_for("verifier")
    with pytest.raises(ValueError, match="unknown role"):
        resource.provider_for("critic")


def test_resource_defaults_to_the_offline_heuristic_provider() -> None:
    pytest.importorskip("resources.heuristic_provider")
    resource = ModelProvidersResource()
    assert {resource.provider_for(role).name for role in ("planner", "annotator", "verifier")} == {"heuristic"}


def test_retry_after_header_forms() -> None:
    assert retry_after_from_headers({"retry-after": "3"}) == 3.0
    assert retry_after_from_headers({"retry-after": "1.5"}) == 1.5
    assert retry_after_from_headers({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_from_headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # a past date
    assert retry_after_from_headers({"retry-after": "soon"}) is None
    assert retry_after_from_headers({"retry-after": "-4"}) is None
    assert retry_after_from_headers(None) is None
