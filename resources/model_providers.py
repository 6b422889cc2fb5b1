"""Multimodal model providers behind one small call interface (OpenAI-compatible, Gemini, offline heuristic).

Why: the CritiqueCanvas chain must not care which vendor answers a role, and model calls are the slowest,
flakiest part of the pipeline. Every provider takes a ``ModelRequest`` and returns a ``ModelResponse`` that
records status, attempts, latency and token counts instead of raising, so the call layer can log, cache and
repair uniformly. Parsing and validating the returned JSON is the call layer's job, not the provider's.

Transport policy (one ``RetryPolicy`` for every remote provider): a per-request timeout; at most
``max_retries`` retries of timeouts, connection errors, 408, 429, 5xx and replies that are not a parsable API
object, waiting exponential backoff with jitter or, when the server says so, its ``Retry-After``; any other
4xx is final at once. The SDKs' own retries are switched off so every attempt is counted here.

- ``OpenAIProvider``: Chat Completions through the ``openai`` SDK. With ``base_url`` it serves any
  OpenAI-compatible server (vLLM, Ollama, LM Studio, OpenRouter, ...). ``json_mode="schema"`` sends
  ``response_format={"type": "json_schema", ...}`` (OpenAI, vLLM, Ollama, LM Studio and OpenRouter accept it);
  ``"object"`` sends ``{"type": "json_object"}`` for servers that only know JSON mode (OpenAI then requires the
  word "JSON" in the prompt); ``"none"`` sends no response format and relies on the prompt.
- ``GeminiProvider``: ``generateContent`` through ``google-genai`` with the schema as ``responseJsonSchema``.
- ``heuristic``: the offline dispatcher in ``resources.models.heuristic``, answering with the asking pipeline's
  ``OfflineAnswers``.

API keys are read from the environment by ``ModelProvidersResource`` when a provider is built; they live only
inside the SDK client and are never part of a repr, a log line or a ``ModelResponse.error``.
"""

from __future__ import annotations

import base64
import functools
import io
import json
import logging
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Optional, TypeVar

from dagster import Config, ConfigurableResource
from PIL import Image
from pydantic import Field

from resources.fetching import parse_retry_after, retry_delay_s
from resources.models.heuristic import HeuristicProvider, OfflineAnswers
from resources.models.types import (
    CONNECTION_ERROR,
    DEFAULT_BACKOFF_S,
    DEFAULT_MAX_BACKOFF_S,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    HTTP_ERROR,
    INVALID_RESPONSE,
    OK,
    ROLES,
    TIMEOUT,
    ModelProvider,
    ModelRequest,
    ModelResponse,
)
from warehouse.redaction import redact_text, redact_url

logger = logging.getLogger(__name__)
T = TypeVar("T")

JSON_MODES = ("schema", "object", "none")
DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY"}
_ERROR_CHARS = 300


# --- retry policy shared by the remote providers --------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One attempt that produced model text."""

    text: str
    input_tokens: int | None
    output_tokens: int | None
    finish_reason: str | None
    provider_model: str | None


@dataclass(frozen=True)
class Failure:
    """One attempt that did not; ``retryable`` decides whether the policy tries again."""

    status: str
    error: str
    retryable: bool
    retry_after_s: float | None = None


def is_retryable_status(code: int) -> bool:
    """408, 429 and 5xx are worth another try; any other 4xx will fail the same way again."""
    return code in (408, 429) or 500 <= code <= 599


def retry_after_from_headers(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms`` (OpenAI) or ``Retry-After`` (seconds, possibly
    fractional, or an HTTP date); None when absent or unusable."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            value = float(millis) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    raw = headers.get("retry-after")
    try:
        seconds = float(raw) if raw else math.nan
    except ValueError:
        return parse_retry_after(raw)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff plus jitter, honouring the server's Retry-After (capped at
    ``max_backoff_s``)."""

    max_retries: int = DEFAULT_MAX_RETRIES
    backoff_s: float = DEFAULT_BACKOFF_S
    max_backoff_s: float = DEFAULT_MAX_BACKOFF_S
    sleep: Callable[[float], None] = time.sleep

    def run(self, attempt: Callable[[], Answer | Failure], *, label: str) -> ModelResponse:
        """Call ``attempt`` until it answers, fails for good, or retries run out; never raises for transport
        problems (``attempt`` turns those into ``Failure``s)."""
        started = time.monotonic()
        attempts = 0
        while True:
            attempts += 1
            outcome = attempt()
            if isinstance(outcome, Answer):
                return ModelResponse(
                    text=outcome.text,
                    input_tokens=outcome.input_tokens,
                    output_tokens=outcome.output_tokens,
                    finish_reason=outcome.finish_reason,
                    latency_ms=(time.monotonic() - started) * 1000.0,
                    attempts=attempts,
                    status=OK,
                    error=None,
                    provider_model=outcome.provider_model,
                )
            if not outcome.retryable or attempts > self.max_retries:
                logger.warning("%s failed after %d attempt(s): %s", label, attempts, outcome.error)
                return ModelResponse(
                    text="",
                    input_tokens=None,
                    output_tokens=None,
                    finish_reason=None,
                    latency_ms=(time.monotonic() - started) * 1000.0,
                    attempts=attempts,
                    status=outcome.status,
                    error=outcome.error,
                    provider_model=None,
                )
            delay = retry_delay_s(
                attempts, backoff_s=self.backoff_s, max_backoff_s=self.max_backoff_s, retry_after_s=outcome.retry_after_s
            )
            logger.info("%s attempt %d: %s; retrying in %.2f s", label, attempts, outcome.error, delay)
            self.sleep(delay)


def call_or_failure(call: Callable[[], T], failure_of: Callable[[Exception], Failure | None]) -> T | Failure:
    """``call()``, or the ``Failure`` its exception stands for (``openai_failure``, ``gemini_failure``); an
    exception no mapping knows is a bug, not a transport problem, and propagates."""
    try:
        return call()
    except Exception as exc:
        failure = failure_of(exc)
        if failure is None:
            raise
        return failure


class _Redactor:
    """Removes one secret from text that is about to be stored or logged."""

    __slots__ = ("_secret",)

    def __init__(self, secret: str) -> None:
        self._secret = secret

    def __repr__(self) -> str:
        return "_Redactor(<redacted>)"

    def __call__(self, text: str) -> str:
        text = redact_text(" ".join(text.split()))  # a key in the endpoint URL, too
        if self._secret:
            text = text.replace(self._secret, "<redacted>")
        return text[:_ERROR_CHARS]


@dataclass(repr=False)
class Transport:
    """Key, endpoint, timeout and retry settings of one remote client (``OpenAIClient``, ``GeminiClient``), from
    which it builds its SDK client, key redactor and ``RetryPolicy``. Only used while a client is built:
    afterwards the key lives inside the SDK client alone."""

    vendor: str
    api_key: str
    base_url: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    backoff_s: float = DEFAULT_BACKOFF_S
    max_backoff_s: float = DEFAULT_MAX_BACKOFF_S
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        if not self.api_key or not self.api_key.strip():
            raise ValueError(f"{self.vendor} provider needs a non-empty API key")
        self.api_key = self.api_key.strip()

    def policy(self) -> RetryPolicy:
        return RetryPolicy(
            max_retries=self.max_retries, backoff_s=self.backoff_s, max_backoff_s=self.max_backoff_s, sleep=self.sleep
        )

    def redactor(self) -> _Redactor:
        return _Redactor(self.api_key)


# --- images ---------------------------------------------------------------------------------------------


def fit_image(data: bytes, mime: str | None, max_side: int | None) -> tuple[bytes, str | None]:
    """The image scaled down so that its longer side is at most ``max_side`` (unchanged when it already fits
    or no limit is set). PNG stays PNG; anything else is re-encoded as JPEG (quality 90). Deterministic, so
    the same input always sends the same bytes."""
    if not max_side:
        return data, mime
    with Image.open(io.BytesIO(data)) as image:
        if max(image.size) <= max_side:
            return data, mime
        scale = max_side / max(image.size)
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        png = (image.format or "").upper() == "PNG"
        resized = image.convert("RGBA" if png and "A" in image.getbands() else "RGB").resize(size, Image.Resampling.LANCZOS)
    out = io.BytesIO()
    if png:
        resized.save(out, format="PNG", optimize=False)
        return out.getvalue(), "image/png"
    resized.save(out, format="JPEG", quality=90)
    return out.getvalue(), "image/jpeg"


def _check_json_mode(json_mode: str) -> str:
    if json_mode not in JSON_MODES:
        raise ValueError(f"json_mode must be one of {JSON_MODES}, not {json_mode!r}")
    return json_mode


# --- OpenAI and OpenAI-compatible servers ---------------------------------------------------------------


def openai_failure(exc: Exception, openai: Any, redact: Callable[[str], str]) -> Failure | None:
    """The ``Failure`` an ``openai`` SDK exception stands for (``openai`` is the SDK module); None for any other
    exception. Shared by the text provider and the image editor, so both retry and report alike."""
    if isinstance(exc, openai.APITimeoutError):
        return Failure(TIMEOUT, "request timed out", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        return Failure(CONNECTION_ERROR, redact(f"connection failed: {exc.__cause__ or exc}"), retryable=True)
    if isinstance(exc, openai.APIStatusError):
        detail = exc.body.get("message") if isinstance(exc.body, Mapping) else None
        return Failure(
            HTTP_ERROR,
            redact(f"HTTP {exc.status_code}: {detail or exc.message}"),
            retryable=is_retryable_status(exc.status_code),
            retry_after_s=retry_after_from_headers(exc.response.headers),
        )
    if isinstance(exc, (openai.APIResponseValidationError, json.JSONDecodeError)):
        return Failure(INVALID_RESPONSE, redact(f"reply is not valid JSON: {exc}"), retryable=True)
    return None


class OpenAIClient:
    """What the OpenAI text provider and image editor share: the ``openai`` SDK client for OpenAI or any
    OpenAI-compatible server (``base_url``), the key redactor, the ``RetryPolicy``, and ``_call``, which turns
    the SDK's exceptions into ``Failure``s. ``transport``: the other ``Transport`` settings (``timeout_s``,
    ``max_retries``, ``backoff_s``, ``max_backoff_s``, ``sleep``)."""

    name = "openai"

    def __init__(self, api_key: str, base_url: str | None, transport: Mapping[str, Any]) -> None:
        # The SDKs are imported when a client is built, so modules that only need the types stay light.
        import openai

        settings = Transport(self.name, api_key, base_url, **transport)
        self._openai = openai
        # max_retries=0: the SDK would otherwise retry on its own, hiding attempts from our log and budget.
        self._client = openai.OpenAI(api_key=settings.api_key, base_url=base_url, timeout=settings.timeout_s, max_retries=0)
        self._redact, self.policy = settings.redactor(), settings.policy()
        self.base_url = redact_url(base_url) if base_url else base_url  # for repr and logs; the client has the real one

    def _call(self, call: Callable[[], T]) -> T | Failure:
        return call_or_failure(call, lambda exc: openai_failure(exc, self._openai, self._redact))


class OpenAIProvider(OpenAIClient):
    """Chat Completions through the ``openai`` SDK, for OpenAI or any OpenAI-compatible server (``base_url``).

    The image goes as a base64 ``data:`` URL part before the user text; the system prompt as a ``system``
    message. The output limit is sent as ``max_completion_tokens`` to OpenAI itself (newer models reject
    ``max_tokens``) and as ``max_tokens`` to other servers (the field every compatible server knows); pass
    ``token_limit_field`` to override. ``transport``: as for ``OpenAIClient``.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        *,
        image_max_side: int | None = None,
        json_mode: str = "schema",
        token_limit_field: str | None = None,
        **transport: Any,
    ) -> None:
        super().__init__(api_key, base_url, transport)
        self.json_mode = _check_json_mode(json_mode)
        self.image_max_side = image_max_side
        self.token_limit_field = token_limit_field or ("max_tokens" if base_url else "max_completion_tokens")

    def __repr__(self) -> str:
        return f"OpenAIProvider(base_url={self.base_url!r}, json_mode={self.json_mode!r})"

    def complete(self, request: ModelRequest) -> ModelResponse:
        kwargs = self._create_kwargs(request)
        return self.policy.run(lambda: self._attempt(kwargs), label=f"openai {request.model} ({request.role})")

    def _create_kwargs(self, request: ModelRequest) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if request.image is not None:
            image, mime = fit_image(request.image, request.image_mime, self.image_max_side)
            encoded = base64.b64encode(image).decode("ascii")
            content.append({"type": "image_url", "image_url": {"url": f"data:{mime or 'image/jpeg'};base64,{encoded}"}})
        content.append({"type": "text", "text": request.user})
        messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
        messages.append({"role": "user", "content": content})
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "temperature": request.temperature,
            self.token_limit_field: request.max_output_tokens,
        }
        kwargs.update({name: value for name, value in (("top_p", request.top_p), ("seed", request.seed)) if value is not None})
        if request.json_schema is not None and self.json_mode == "schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name or "answer", "schema": request.json_schema, "strict": False},
            }
        elif request.json_schema is not None and self.json_mode == "object":
            kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    def _attempt(self, kwargs: Mapping[str, Any]) -> Answer | Failure:
        # The SDK's documented ``post`` sends the body as built: ``chat.completions.create`` would first walk it
        # against its typed parameters (the image's base64 text, the answer schema), a quarter of the client's
        # CPU per request, to send the same JSON.
        completion = self._call(lambda: self._client.post("/chat/completions", body=kwargs,
                                                          cast_to=self._openai.types.chat.ChatCompletion))
        if isinstance(completion, Failure):
            return completion
        # A 200 whose Content-Type is not JSON comes back from the SDK as a plain string.
        if not isinstance(completion, self._openai.types.chat.ChatCompletion) or not completion.choices:
            return Failure(INVALID_RESPONSE, "reply is not a chat completion with choices", retryable=True)
        choice = completion.choices[0]
        message = choice.message
        if message is None or not message.content:
            refusal = f"; refusal: {message.refusal}" if message is not None and message.refusal else ""
            error = self._redact(f"no answer text (finish_reason={choice.finish_reason}){refusal}")
            return Failure(INVALID_RESPONSE, error, retryable=False)
        usage = completion.usage
        return Answer(
            text=message.content,
            input_tokens=usage.prompt_tokens if usage else None,
            output_tokens=usage.completion_tokens if usage else None,
            finish_reason=choice.finish_reason,
            provider_model=completion.model or None,
        )


# --- Gemini ---------------------------------------------------------------------------------------------


def _gemini_retry_delay(details: Any) -> float | None:
    """Seconds from a ``google.rpc.RetryInfo`` entry (``"retryDelay": "37s"``) in a Gemini error body, which is
    how the Gemini API says when to come back after a 429."""
    error = details.get("error", details) if isinstance(details, Mapping) else None
    for entry in (error or {}).get("details") or []:
        if isinstance(entry, Mapping) and str(entry.get("@type", "")).endswith("google.rpc.RetryInfo"):
            delay = str(entry.get("retryDelay", "")).removesuffix("s")
            try:
                seconds = float(delay)
            except ValueError:
                return None
            return seconds if math.isfinite(seconds) and seconds >= 0 else None
    return None


def gemini_failure(exc: Exception, errors: Any, httpx: Any, redact: Callable[[str], str]) -> Failure | None:
    """The ``Failure`` a ``google-genai`` call's exception stands for (``errors``: ``google.genai.errors``,
    ``httpx``: the HTTP library it runs on); None for any other exception. Shared by the text provider and the
    image editor, so both retry and report alike."""
    if isinstance(exc, errors.APIError):
        retry_after = retry_after_from_headers(getattr(exc.response, "headers", None))
        return Failure(
            HTTP_ERROR,
            redact(f"HTTP {exc.code}: {exc.status or ''} {exc.message or ''}".strip()),
            retryable=is_retryable_status(exc.code),
            retry_after_s=retry_after if retry_after is not None else _gemini_retry_delay(exc.details),
        )
    if isinstance(exc, httpx.TimeoutException):
        return Failure(TIMEOUT, "request timed out", retryable=True)
    if isinstance(exc, httpx.TransportError):
        return Failure(CONNECTION_ERROR, redact(f"connection failed: {exc}"), retryable=True)
    if isinstance(exc, json.JSONDecodeError):
        return Failure(INVALID_RESPONSE, redact(f"reply is not valid JSON: {exc}"), retryable=True)
    return None


def gemini_finish_reason(candidate: Any) -> str | None:
    """A Gemini candidate's finish reason as plain text (None when there is no candidate or reason)."""
    finish = candidate.finish_reason if candidate is not None else None
    return str(getattr(finish, "value", finish)) if finish is not None else None


def gemini_missing_reason(response: Any, finish_reason: str | None) -> str:
    """Why a Gemini reply holds no answer: the prompt's block reason when it was blocked, else the finish reason."""
    blocked = response.prompt_feedback.block_reason if response.prompt_feedback else None
    return f"blocked: {getattr(blocked, 'value', blocked)}" if blocked else f"finish_reason={finish_reason}"


def gemini_answer(response: Any, text: str, finish_reason: str | None) -> Answer:
    """``text`` with the reply's token counts and model version; output tokens include thinking tokens, which
    are billed as output."""
    usage = response.usage_metadata
    output_tokens = None
    if usage is not None and (usage.candidates_token_count is not None or usage.thoughts_token_count is not None):
        output_tokens = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
    return Answer(
        text=text,
        input_tokens=usage.prompt_token_count if usage else None,
        output_tokens=output_tokens,
        finish_reason=finish_reason,
        provider_model=response.model_version or None,
    )


class GeminiClient:
    """What the Gemini text provider and image editor share: the ``google-genai`` client for the Gemini API or a
    gateway speaking it at ``base_url``, the key redactor, the ``RetryPolicy``, and ``_call``, which turns the
    SDK's exceptions into ``Failure``s (``_failure``). ``transport`` as for ``OpenAIClient``."""

    name = "gemini"

    def __init__(self, api_key: str, base_url: str | None, api_version: str, transport: Mapping[str, Any]) -> None:
        import httpx2
        from google import genai
        from google.genai import errors, types

        settings = Transport(self.name, api_key, base_url, **transport)
        self._types, self._errors, self._httpx = types, errors, httpx2
        options = types.HttpOptions(
            base_url=base_url,
            api_version=api_version,
            timeout=max(1, round(settings.timeout_s * 1000)),  # milliseconds
            # attempts=1: one try per call; RetryPolicy owns retries so every attempt is counted.
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        self._client = genai.Client(api_key=settings.api_key, http_options=options)
        self._redact, self.policy = settings.redactor(), settings.policy()
        self.base_url = redact_url(base_url) if base_url else base_url  # for repr and logs; the client has the real one
        self.api_version = api_version

    def _call(self, call: Callable[[], T]) -> T | Failure:
        return call_or_failure(call, self._failure)

    def _failure(self, exc: Exception) -> Failure | None:
        return gemini_failure(exc, self._errors, self._httpx, self._redact)


class GeminiProvider(GeminiClient):
    """``generateContent`` through ``google-genai`` (Gemini API, or a gateway speaking it at ``base_url``).

    The image goes as an inline part before the user text, the system prompt as ``system_instruction`` and
    the schema natively as ``response_json_schema`` (with the schema name as its ``title``). Output tokens
    include thinking tokens, which are billed as output. ``transport`` as for ``OpenAIClient``.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        *,
        image_max_side: int | None = None,
        json_mode: str = "schema",
        api_version: str = "v1beta",
        **transport: Any,
    ) -> None:
        super().__init__(api_key, base_url, api_version, transport)
        self.json_mode = _check_json_mode(json_mode)
        self.image_max_side = image_max_side

    def __repr__(self) -> str:
        return f"GeminiProvider(base_url={self.base_url!r}, api_version={self.api_version!r}, json_mode={self.json_mode!r})"

    def complete(self, request: ModelRequest) -> ModelResponse:
        contents, config = self._content_and_config(request)
        return self.policy.run(
            lambda: self._attempt(request.model, contents, config), label=f"gemini {request.model} ({request.role})"
        )

    def _content_and_config(self, request: ModelRequest) -> tuple[list[Any], Any]:
        types = self._types
        parts = []
        if request.image is not None:
            image, mime = fit_image(request.image, request.image_mime, self.image_max_side)
            parts.append(types.Part.from_bytes(data=image, mime_type=mime or "image/jpeg"))
        parts.append(types.Part.from_text(text=request.user))
        settings: dict[str, Any] = {
            "system_instruction": request.system or None,
            "temperature": request.temperature,
            "max_output_tokens": request.max_output_tokens,
            # No tools are ever passed; switching automatic function calling off also silences its per-call log.
            "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
        }
        settings.update({name: value for name, value in (("top_p", request.top_p), ("seed", request.seed)) if value is not None})
        if request.json_schema is not None and self.json_mode in ("schema", "object"):
            settings["response_mime_type"] = "application/json"
        if request.json_schema is not None and self.json_mode == "schema":
            schema = dict(request.json_schema)
            if request.schema_name and "title" not in schema:
                schema["title"] = request.schema_name
            settings["response_json_schema"] = schema
        return [types.Content(role="user", parts=parts)], types.GenerateContentConfig(**settings)

    def _attempt(self, model: str, contents: list[Any], config: Any) -> Answer | Failure:
        response = self._call(lambda: self._client.models.generate_content(model=model, contents=contents, config=config))
        if isinstance(response, Failure):
            return response
        text = response.text
        finish_reason = gemini_finish_reason(response.candidates[0] if response.candidates else None)
        if not text:
            reason = gemini_missing_reason(response, finish_reason)
            return Failure(INVALID_RESPONSE, self._redact(f"no answer text ({reason})"), retryable=False)
        return gemini_answer(response, text, finish_reason)


# --- Dagster resource -----------------------------------------------------------------------------------


class RoleConfig(Config):
    """Which provider and model answer one role, and how it is asked. The API key is named by environment
    variable (default ``OPENAI_API_KEY`` / ``GEMINI_API_KEY``), never given in configuration."""

    provider: Literal["openai", "gemini", "heuristic"] = "heuristic"
    model: str = "heuristic-v1"
    base_url: Optional[str] = Field(default=None, description="OpenAI-compatible or Gemini endpoint; None: the vendor's")
    api_key_env: Optional[str] = Field(default=None, description="Environment variable holding the API key")
    temperature: float = 0.2
    max_output_tokens: int = 2048
    json_mode: Literal["schema", "object", "none"] = "schema"
    image_max_side: int = 1024

    def key_env(self) -> str | None:
        """The environment variable this role's key is read from (None for the heuristic provider)."""
        return self.api_key_env or DEFAULT_KEY_ENV.get(self.provider)


def api_key_from_env(env: str, needed_by: str) -> str:
    """The API key in environment variable ``env``, read when a client is built so it never sits in config;
    ``needed_by`` opens the error when it is missing (the key is never echoed)."""
    api_key = os.environ.get(env, "").strip()
    if not api_key:
        raise ValueError(f"{needed_by}, but environment variable {env} is not set or empty")
    return api_key


class RemoteClientsResource(ConfigurableResource):
    """The transport settings of a resource that builds remote clients (text providers, image editors): one set
    of fields, so every such resource is configured the same way."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    backoff_s: float = DEFAULT_BACKOFF_S
    max_backoff_s: float = DEFAULT_MAX_BACKOFF_S

    def transport(self) -> dict[str, Any]:
        """These settings as ``Transport`` keywords, for a provider or editor constructor."""
        return {name: getattr(self, name) for name in ("timeout_s", "max_retries", "backoff_s", "max_backoff_s")}


class ModelProvidersResource(RemoteClientsResource):
    """Per-role providers (planner, annotator, verifier), as in the paper: each role may use a different
    vendor and model. Transport settings are shared by all roles."""

    planner: RoleConfig = Field(default_factory=RoleConfig)
    annotator: RoleConfig = Field(default_factory=RoleConfig)
    verifier: RoleConfig = Field(default_factory=RoleConfig)
    judge: RoleConfig = Field(default_factory=RoleConfig, description="The evaluations' judge (preference,"
                              " similarity, critique quality)")
    configs: dict[str, RoleConfig] = Field(default_factory=dict, description="Named model configurations an"
                                           " evaluation can ask by name (aesforge evaluate --model NAME), beside the roles")

    def role(self, role: str) -> RoleConfig:
        """A role's settings, or a named configuration's (ValueError naming both kinds when it is neither)."""
        if role in (*ROLES, "judge"):
            return getattr(self, role)
        if role in self.configs:
            return self.configs[role]
        named = f"; named configurations: {', '.join(sorted(self.configs))}" if self.configs else ""
        raise ValueError(f"unknown role or model configuration {role!r}; roles: {', '.join((*ROLES, 'judge'))}{named}")

    def provider_for(self, role: str, *, offline: OfflineAnswers) -> ModelProvider:
        """A provider for ``role``, its API key read from the environment now (never stored in config);
        ``offline``: the asking pipeline's answers, for a role configured with the heuristic provider."""
        config = self.role(role)
        if config.provider == "heuristic":
            return _shared_heuristic(config.model, offline)
        api_key = api_key_from_env(config.key_env() or "", f"{role} uses provider {config.provider!r}")
        provider = OpenAIProvider if config.provider == "openai" else GeminiProvider
        return provider(
            api_key, config.base_url, image_max_side=config.image_max_side, json_mode=config.json_mode, **self.transport()
        )


@functools.lru_cache(maxsize=8)
def _shared_heuristic(model: str, offline: OfflineAnswers) -> ModelProvider:
    """One heuristic provider per model name and answer set in a process, so the roles share its answers' caches."""
    return HeuristicProvider(offline(), model=model)
