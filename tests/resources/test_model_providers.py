"""The OpenAI and Gemini providers, through the real ``openai`` and ``google-genai`` SDKs, against a loopback
server that speaks both HTTP APIs (tests/support/model_servers.py): what goes on the wire, what comes back,
and how every transport failure is retried or reported without raising and without leaking the API key. The
transport tests run for the image editors too (resources/image_editing.py), which share ``Transport``, the
failure mapping and ``RetryPolicy`` with the text providers."""

from __future__ import annotations

import io
import json
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
import requests
from dagster import asset, materialize
from PIL import Image

from resources.image_editing import EditRequest, GeminiImageEditor, OpenAIImageEditor
from resources.model_providers import (
    GeminiProvider,
    ModelProvidersResource,
    OpenAIProvider,
    RoleConfig,
    fit_image,
    retry_after_from_headers,
)
from resources.models.types import CONNECTION_ERROR, HTTP_ERROR, INVALID_RESPONSE, OK, ROLES, TIMEOUT, ModelRequest
from tests.support.model_servers import (
    GEMINI,
    MALFORMED_CONTENT,
    NOT_JSON,
    OPENAI,
    OPENAI_IMAGES,
    OPENAI_IMAGES_PATH,
    OPENAI_PATH,
    SLOW,
    TRUNCATED_BODY,
    InjectedFailure,
    ModelApiServer,
    client_settings,
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


def _no_offline_answers() -> dict:
    """No offline answers: these roles are remote providers, or the test asks nothing of the heuristic one."""
    return {}


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


EDIT = EditRequest(image=IMAGE, mime="image/png", instruction="Invert the left half.", model="vision-model")


def _server(**kwargs: object) -> ModelApiServer:
    return ModelApiServer(openai_key=OPENAI_KEY, gemini_key=GEMINI_KEY, **kwargs)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Client:
    """One kind of remote client as the transport tests drive it: ``make`` builds it (a text provider, or an
    image editor when ``edits``); ``api`` is what the loopback server records its requests under."""

    make: Callable[..., Any]
    api: str
    edits: bool = False

    @property
    def key(self) -> str:
        return GEMINI_KEY if self.api == GEMINI else OPENAI_KEY

    @property
    def path(self) -> str:
        """The path its requests go to (model ``vision-model``), for ``InjectedFailure.path``."""
        return {OPENAI: OPENAI_PATH, OPENAI_IMAGES: OPENAI_IMAGES_PATH}.get(self.api) or gemini_path("vision-model")

    def build(self, server: Any, *, sleeps: list[float] | None = None, **changes: object) -> Any:
        """One pointed at ``server`` (anything with the server's base URLs), with ``client_settings``."""
        base_url = server.gemini_base_url if self.api == GEMINI else server.openai_base_url
        return self.make(self.key, base_url=base_url, **client_settings(sleeps, **changes))

    def send(self, client: Any) -> Any:
        """One call with the standard request: ``complete`` for a provider, ``edit`` for an editor."""
        return client.edit(EDIT) if self.edits else client.complete(_request())

    def answered(self, response: Any) -> bool:
        """Whether ``response`` carries the answer: text, or an edited image."""
        return response.image is not None if self.edits else response.text != ""


TEXT = {OPENAI: Client(OpenAIProvider, OPENAI), GEMINI: Client(GeminiProvider, GEMINI)}
CLIENTS = [
    pytest.param(TEXT[OPENAI], id="openai-text"),
    pytest.param(TEXT[GEMINI], id="gemini-text"),
    pytest.param(Client(OpenAIImageEditor, OPENAI_IMAGES, edits=True), id="openai-edit"),
    pytest.param(Client(GeminiImageEditor, GEMINI, edits=True), id="gemini-edit"),
]
GEMINI_CLIENTS = [param for param in CLIENTS if param.values[0].api == GEMINI]


def _provider(api: str, server: ModelApiServer, *, sleeps: list[float] | None = None, **kwargs: object) -> Any:
    """A text provider of kind ``api`` pointed at ``server``; ``sleeps`` (when given) records backoff waits
    instead of sleeping them."""
    return TEXT[api].build(server, sleeps=sleeps, **kwargs)


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


# --- retries and failures, every remote client (text providers and image editors) ------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_429_with_retry_after_is_waited_out_then_succeeds(client: Client) -> None:
    failure = InjectedFailure(429, path=client.path, retry_after="0.5")
    with _server(failures=[failure]) as server:
        response = client.send(client.build(server))
    assert response.status == OK and response.attempts == 2 and client.answered(response)
    first, second = server.requests_to(client.api)
    assert outcomes([first, second]) == ["429", "ok"]
    assert 0.45 <= second.received_at - first.received_at < 1.5  # waited Retry-After, not the 0.01 s backoff
    assert response.latency_ms >= 450


@pytest.mark.parametrize("client", GEMINI_CLIENTS)
def test_gemini_honours_retry_info_in_the_error_body(client: Client) -> None:
    failure = InjectedFailure(429, path=client.path, retry_info_s=2.5)
    sleeps: list[float] = []
    with _server(failures=[failure]) as server:
        response = client.send(client.build(server, sleeps=sleeps))
    assert response.status == OK and response.attempts == 2
    assert sleeps == [2.5]


@pytest.mark.parametrize("client", CLIENTS)
def test_persistent_500_gives_http_error_after_max_retries(client: Client, logs: Callable[[], str]) -> None:
    sleeps: list[float] = []
    with _server(failures=[InjectedFailure(500, path=client.path, times=None)]) as server:
        response = client.send(client.build(server, sleeps=sleeps, max_retries=3, backoff_s=0.5, max_backoff_s=10))
    assert response.status == HTTP_ERROR and response.attempts == 4 and not client.answered(response)
    assert response.error is not None and "500" in response.error
    assert outcomes(server.requests_to(client.api)) == ["500"] * 4
    # Exponential backoff with up to one backoff_s of jitter.
    assert len(sleeps) == 3
    for retry, delay in enumerate(sleeps, start=1):
        base = 0.5 * 2 ** (retry - 1)
        assert base <= delay <= base + 0.5
    assert "failed after 4 attempt(s)" in logs()


@pytest.mark.parametrize("client", CLIENTS)
def test_two_500s_then_success(client: Client) -> None:
    with _server(failures=[InjectedFailure(500, path=client.path, times=2)]) as server:
        response = client.send(client.build(server, sleeps=[]))
    assert response.status == OK and response.attempts == 3 and client.answered(response)


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("status", [400, 404])
def test_client_errors_are_not_retried(client: Client, status: int) -> None:
    with _server(failures=[InjectedFailure(status, path=client.path, times=None)]) as server:
        response = client.send(client.build(server, sleeps=[]))
    assert response.status == HTTP_ERROR and response.attempts == 1
    assert str(status) in (response.error or "")
    assert len(server.requests) == 1


@pytest.mark.parametrize("client", CLIENTS)
def test_408_is_retried(client: Client) -> None:
    with _server(failures=[InjectedFailure(408, path=client.path)]) as server:
        response = client.send(client.build(server, sleeps=[]))
    assert response.status == OK and response.attempts == 2


@pytest.mark.parametrize("client", CLIENTS)
def test_slow_server_times_out(client: Client) -> None:
    failure = InjectedFailure(SLOW, path=client.path, times=None, delay_s=3.0)
    with _server(failures=[failure]) as server:
        response = client.send(client.build(server, sleeps=[], timeout_s=0.3, max_retries=1))
    assert response.status == TIMEOUT and response.attempts == 2 and not client.answered(response)
    assert len(server.requests) == 2


@pytest.mark.parametrize("client", CLIENTS)
def test_slow_once_then_answers(client: Client) -> None:
    failure = InjectedFailure(SLOW, path=client.path, delay_s=3.0)
    with _server(failures=[failure]) as server:
        response = client.send(client.build(server, sleeps=[], timeout_s=0.3))
    assert response.status == OK and response.attempts == 2


@pytest.mark.parametrize("client", CLIENTS)
def test_connection_refused(client: Client) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{probe.getsockname()[1]}"
    nothing_listens = SimpleNamespace(openai_base_url=f"{base}/v1", gemini_base_url=f"{base}/")
    sleeps: list[float] = []
    response = client.send(client.build(nothing_listens, sleeps=sleeps, timeout_s=2.0, max_retries=2))
    assert response.status == CONNECTION_ERROR and response.attempts == 3 and len(sleeps) == 2


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("kind", [NOT_JSON, TRUNCATED_BODY])
def test_reply_that_is_not_an_api_object_is_invalid_response_and_retried(client: Client, kind: str) -> None:
    # A 200 whose body is an HTML page or JSON cut off halfway is a server malfunction like a 5xx: status
    # invalid_response (not http_error), retried like any other transport failure.
    with _server(failures=[InjectedFailure(kind, path=client.path, times=None)]) as server:
        response = client.send(client.build(server, sleeps=[], max_retries=2))
    assert response.status == INVALID_RESPONSE and response.attempts == 3 and not client.answered(response)
    with _server(failures=[InjectedFailure(kind, path=client.path)]) as server:
        response = client.send(client.build(server, sleeps=[]))
    assert response.status == OK and response.attempts == 2


@pytest.mark.parametrize("api", PROVIDERS)
def test_malformed_answer_text_is_passed_through_for_the_call_layer(api: str) -> None:
    failure = InjectedFailure(MALFORMED_CONTENT, path=TEXT[api].path, content='{"dimensions": [{"dimension": "col')
    with _server(failures=[failure]) as server:
        response = _provider(api, server).complete(_request())
    assert response.status == OK and response.attempts == 1
    assert response.text == '{"dimensions": [{"dimension": "col'


@pytest.mark.parametrize("api", PROVIDERS)
def test_failures_can_target_one_request_by_body_and_position(api: str) -> None:
    failure = InjectedFailure(500, path=TEXT[api].path, match="verdicts", skip=1, times=1)
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


@pytest.mark.parametrize("client", CLIENTS)
def test_api_key_never_in_repr_errors_or_logs(client: Client, logs: Callable[[], str]) -> None:
    failures = [InjectedFailure(500, path=client.path, times=2), InjectedFailure(NOT_JSON, path=client.path, times=2)]
    with ModelApiServer(openai_key="other-openai", gemini_key="other-gemini") as wrong_key:
        rejected = client.send(client.build(wrong_key, sleeps=[]))
    with _server(failures=failures) as server:
        built = client.build(server, sleeps=[], max_retries=1)
        responses = [client.send(built) for _ in range(3)]
    assert rejected.status == HTTP_ERROR and rejected.attempts == 1  # a bad key is a 4xx: never retried
    assert [response.status for response in responses] == [HTTP_ERROR, INVALID_RESPONSE, OK]
    assert client.key not in repr(built) and client.key not in str(built)
    for response in [rejected, *responses]:
        assert client.key not in repr(response) and client.key not in (response.error or "")
    assert all(client.key not in str(request.headers) for request in server.requests)
    text = logs()
    assert "attempt" in text  # the retries were logged ...
    assert client.key not in text  # ... without the key


@pytest.mark.parametrize("client", CLIENTS)
def test_empty_key_is_refused_without_echoing_it(client: Client) -> None:
    for blank in ("", "   "):
        with pytest.raises(ValueError, match="non-empty API key"):
            client.make(blank)


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
        planner, annotator, verifier = (resource.provider_for(role, offline=_no_offline_answers) for role in ROLES)
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
        answers.append(model_providers.provider_for("annotator", offline=_no_offline_answers).complete(_request(model="g-annot")).text)

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
        resource.provider_for("planner", offline=_no_offline_answers)
    with pytest.raises(ValueError, match="EMPTY_KEY"):
        resource.provider_for("verifier", offline=_no_offline_answers)
    with pytest.raises(ValueError, match="unknown role"):
        resource.provider_for("critic", offline=_no_offline_answers)


def test_resource_defaults_to_the_offline_heuristic_provider() -> None:
    resource = ModelProvidersResource()
    assert {resource.provider_for(role, offline=_no_offline_answers).name for role in ROLES} == {"heuristic"}


def test_retry_after_header_forms() -> None:
    assert retry_after_from_headers({"retry-after": "3"}) == 3.0
    assert retry_after_from_headers({"retry-after": "1.5"}) == 1.5
    assert retry_after_from_headers({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_from_headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # a past date
    assert retry_after_from_headers({"retry-after": "soon"}) is None
    assert retry_after_from_headers({"retry-after": "-4"}) is None
    assert retry_after_from_headers(None) is None


def test_named_configurations_are_asked_by_name_beside_the_roles() -> None:
    resource = ModelProvidersResource(configs={"gpt-small": RoleConfig(provider="openai", model="gpt-small-1")})
    assert resource.role("gpt-small").model == "gpt-small-1"
    assert resource.role("judge").provider == "heuristic"
    with pytest.raises(ValueError, match="roles: planner, annotator, verifier, judge; named configurations: gpt-small"):
        resource.role("gpt-large")
