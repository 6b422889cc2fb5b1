"""Image-edit providers behind one small interface (OpenAI images edit, Gemini image output).

Why: counterfactual pairs (AesCanvas, "Culture-Grounded Counterfactual Sensitivity") are made by asking an
image-edit model to swap one decisive cue in a source image. Like the text providers in
``resources.model_providers``, an editor takes an ``EditRequest`` and returns an ``EditResponse`` that records
status, attempts and latency instead of raising, so the asset can log every attempt and keep going. Transport
handling is *the same* ``RetryPolicy`` as the text providers (timeouts, connection errors, 408/429/5xx and
replies that are not an API object are retried with backoff or the server's ``Retry-After``; other 4xx are
final), and the SDKs' own retries are off so every attempt is counted there.

- ``OpenAIImageEditor``: ``images.edit`` through the ``openai`` SDK (a multipart upload of the image and the
  prompt). GPT Image models always answer with base64 (``b64_json``) and reject the legacy
  ``response_format`` parameter, so it is not sent unless ``request_b64=True`` (for OpenAI-compatible servers
  whose default is a URL). An answer that only gives a URL is not fetched: it is ``invalid_response``. The
  images API takes no seed: ``EditRequest.seed`` is not sent (the caller still records it).
- ``GeminiImageEditor``: ``generateContent`` through ``google-genai`` with ``response_modalities`` IMAGE and
  TEXT; the first inline image of the answer that is not a "thought" image is the result, the answer's text
  is kept beside it. The seed is sent; ``size`` may be an aspect ratio (``"3:2"``) or a size tier (``"2K"``).

Statuses: ``ok``, ``http_error``, ``timeout``, ``connection_error``, ``invalid_response`` (not an API object,
base64 that does not decode, bytes that are not an image, or a URL instead of data) and ``no_image`` (a
well-formed answer without an image: the model declined or only wrote text; not retried, since asking again
the same way tends to get the same answer). API keys live only inside the SDK client; they are never part of
a repr, a log line or an ``EditResponse.error``.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Optional, Protocol

from dagster import ConfigurableResource
from PIL import Image, UnidentifiedImageError
from pydantic import Field, ValidationError

from resources.model_providers import (
    CONNECTION_ERROR,
    DEFAULT_BACKOFF_S,
    DEFAULT_KEY_ENV,
    DEFAULT_MAX_BACKOFF_S,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    HTTP_ERROR,
    INVALID_RESPONSE,
    OK,
    TIMEOUT,
    Answer,
    Failure,
    RetryPolicy,
    _gemini_retry_delay,
    _Redactor,
    _require_key,
    is_retryable_status,
    retry_after_from_headers,
)

logger = logging.getLogger(__name__)

NO_IMAGE = "no_image"
EDIT_STATUSES = (OK, HTTP_ERROR, TIMEOUT, CONNECTION_ERROR, INVALID_RESPONSE, NO_IMAGE)
EDIT_PROVIDERS = ("openai", "gemini")
MODEL_PLACEHOLDER = "<configure-image-edit-model>"
"""The resource's default ``model``: not a model name. Set the edit model in run configuration (for example an
OpenAI GPT Image model or a Gemini image-output model); ``editor()`` refuses to build with the placeholder."""

_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}
_GEMINI_SIZE = re.compile(r"^(?P<ratio>\d+:\d+)$|^(?P<tier>\d+K)$")


@dataclass(frozen=True, repr=False)
class EditRequest:
    """One edit: the source image, what to change, and with which model. ``size`` is passed through to the
    vendor in its own terms (OpenAI ``"1024x1024"`` / ``"auto"``; Gemini an aspect ratio or ``"1K"``/``"2K"``);
    None leaves it to the model. ``seed`` goes to vendors that take one."""

    image: bytes
    mime: str
    instruction: str
    model: str
    size: str | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if not self.image:
            raise ValueError("EditRequest.image is empty")
        if not self.mime.startswith("image/"):
            raise ValueError(f"EditRequest.mime must be an image type, not {self.mime!r}")
        if not self.instruction.strip():
            raise ValueError("EditRequest.instruction is empty")
        if not self.model.strip():
            raise ValueError("EditRequest.model is empty")

    def __repr__(self) -> str:
        return (
            f"EditRequest(image=<{len(self.image)} bytes>, mime={self.mime!r}, instruction={self.instruction[:60]!r}, "
            f"model={self.model!r}, size={self.size!r}, seed={self.seed!r})"
        )


@dataclass(frozen=True, repr=False)
class EditResponse:
    """What came back. ``status`` other than ``ok`` means ``image`` is None and ``error`` says why; ``mime`` is
    read from the returned bytes (not trusted from the answer). ``text`` is the model's accompanying text
    (Gemini) or revised prompt (OpenAI models that report one). ``latency_ms`` covers retries and waits;
    ``provider_model`` is the model the server reported (the OpenAI images API reports none)."""

    image: bytes | None
    mime: str | None
    status: str
    error: str | None
    latency_ms: float
    attempts: int
    provider_model: str | None
    text: str | None
    input_tokens: int | None = None
    output_tokens: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK

    def __repr__(self) -> str:
        image = f"<{len(self.image)} bytes>" if self.image is not None else None
        return (
            f"EditResponse(status={self.status!r}, image={image}, mime={self.mime!r}, error={self.error!r}, "
            f"attempts={self.attempts}, latency_ms={self.latency_ms:.1f}, provider_model={self.provider_model!r})"
        )


class ImageEditor(Protocol):
    name: str

    def edit(self, request: EditRequest) -> EditResponse: ...


# --- shared pieces --------------------------------------------------------------------------------------


def image_mime(data: bytes) -> str | None:
    """The MIME type of ``data`` if Pillow can read it as an image (header and size checked), else None."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
            return Image.MIME.get(image.format or "")
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        return None


def _fully_decodes(data: bytes) -> bool:
    """Whether every pixel can be decoded (``verify`` alone misses a PNG cut off mid-stream)."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
        return True
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        return False


@dataclass(frozen=True)
class _Edited:
    """One attempt that produced an image."""

    image: bytes
    mime: str
    answer: Answer


def _checked_image(data: bytes, where: str) -> tuple[bytes, str] | Failure:
    mime = image_mime(data)
    if mime is None or not _fully_decodes(data):
        # A broken image from a working server is a malfunction like a 5xx: worth another try.
        return Failure(INVALID_RESPONSE, f"{where} is not a readable image ({len(data)} bytes)", retryable=True)
    return data, mime


def _run_edit(policy: RetryPolicy, attempt: Callable[[], _Edited | Failure], label: str) -> EditResponse:
    """``policy.run`` over ``attempt``; the image of the successful attempt is kept aside, since the shared
    policy only carries text."""
    kept: list[_Edited] = []

    def once() -> Answer | Failure:
        outcome = attempt()
        if isinstance(outcome, Failure):
            return outcome
        kept[:] = [outcome]
        return outcome.answer

    response = policy.run(once, label=label)
    edited = kept[0] if response.status == OK and kept else None
    return EditResponse(
        image=edited.image if edited else None,
        mime=edited.mime if edited else None,
        status=response.status,
        error=response.error,
        latency_ms=response.latency_ms,
        attempts=response.attempts,
        provider_model=response.provider_model,
        text=response.text or None,
        input_tokens=response.input_tokens,
        output_tokens=response.output_tokens,
    )


# --- OpenAI images edit ---------------------------------------------------------------------------------


class OpenAIImageEditor:
    """``client.images.edit`` through the ``openai`` SDK, for OpenAI or an OpenAI-compatible server
    (``base_url``). The image is uploaded as ``(source.<ext>, bytes, mime)`` with ``n=1``."""

    name = "openai"

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_s: float = DEFAULT_BACKOFF_S,
        max_backoff_s: float = DEFAULT_MAX_BACKOFF_S,
        request_b64: bool = False,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import openai

        self._openai = openai
        key = _require_key(api_key, self.name)
        self._redact = _Redactor(key)
        self.base_url = base_url
        self.request_b64 = request_b64
        self.policy = RetryPolicy(max_retries=max_retries, backoff_s=backoff_s, max_backoff_s=max_backoff_s, sleep=sleep)
        # max_retries=0: RetryPolicy owns retries, so every attempt is counted and logged once.
        self._client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout_s, max_retries=0)

    def __repr__(self) -> str:
        return f"OpenAIImageEditor(base_url={self.base_url!r}, request_b64={self.request_b64!r})"

    def edit(self, request: EditRequest) -> EditResponse:
        kwargs = self._edit_kwargs(request)
        return _run_edit(self.policy, lambda: self._attempt(kwargs), label=f"openai image edit {request.model}")

    def _edit_kwargs(self, request: EditRequest) -> dict[str, Any]:
        filename = f"source.{_EXTENSIONS.get(request.mime, 'png')}"
        kwargs: dict[str, Any] = {
            "model": request.model,
            "image": (filename, request.image, request.mime),
            "prompt": request.instruction,
            "n": 1,
        }
        if request.size:
            kwargs["size"] = request.size
        if self.request_b64:
            kwargs["response_format"] = "b64_json"
        return kwargs

    def _attempt(self, kwargs: Mapping[str, Any]) -> _Edited | Failure:
        openai = self._openai
        try:
            result = self._client.images.edit(**kwargs)
        except openai.APITimeoutError:
            return Failure(TIMEOUT, "request timed out", retryable=True)
        except openai.APIConnectionError as exc:
            return Failure(CONNECTION_ERROR, self._redact(f"connection failed: {exc.__cause__ or exc}"), retryable=True)
        except openai.APIStatusError as exc:
            detail = exc.body.get("message") if isinstance(exc.body, Mapping) else None
            return Failure(
                HTTP_ERROR,
                self._redact(f"HTTP {exc.status_code}: {detail or exc.message}"),
                retryable=is_retryable_status(exc.status_code),
                retry_after_s=retry_after_from_headers(exc.response.headers),
            )
        except (openai.APIResponseValidationError, json.JSONDecodeError) as exc:
            return Failure(INVALID_RESPONSE, self._redact(f"reply is not valid JSON: {exc}"), retryable=True)
        # A 200 whose Content-Type is not JSON comes back from the SDK as a plain string.
        if not isinstance(result, openai.types.ImagesResponse):
            return Failure(INVALID_RESPONSE, "reply is not an images response", retryable=True)
        first = result.data[0] if result.data else None
        if first is None or not first.b64_json:
            if first is not None and first.url:
                error = "answer gives an image URL, not base64 data (URLs are not fetched; see request_b64)"
                return Failure(INVALID_RESPONSE, error, retryable=False)
            return Failure(NO_IMAGE, "answer holds no image", retryable=False)
        try:
            data = base64.b64decode(first.b64_json, validate=True)
        except (binascii.Error, ValueError):
            return Failure(INVALID_RESPONSE, "b64_json is not valid base64", retryable=True)
        checked = _checked_image(data, "returned image")
        if isinstance(checked, Failure):
            return checked
        usage = result.usage
        answer = Answer(
            text=first.revised_prompt or "",
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
            finish_reason=None,
            provider_model=None,
        )
        return _Edited(checked[0], checked[1], answer)


# --- Gemini image output --------------------------------------------------------------------------------


class GeminiImageEditor:
    """``generateContent`` through ``google-genai`` asking for IMAGE and TEXT output (Gemini API, or a gateway
    speaking it at ``base_url``). The source image goes as an inline part before the instruction."""

    name = "gemini"

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_s: float = DEFAULT_BACKOFF_S,
        max_backoff_s: float = DEFAULT_MAX_BACKOFF_S,
        api_version: str = "v1beta",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import httpx2
        from google import genai
        from google.genai import errors, types

        self._types, self._errors, self._httpx = types, errors, httpx2
        key = _require_key(api_key, self.name)
        self._redact = _Redactor(key)
        self.base_url = base_url
        self.api_version = api_version
        self.policy = RetryPolicy(max_retries=max_retries, backoff_s=backoff_s, max_backoff_s=max_backoff_s, sleep=sleep)
        options = types.HttpOptions(
            base_url=base_url,
            api_version=api_version,
            timeout=max(1, round(timeout_s * 1000)),  # milliseconds
            retry_options=types.HttpRetryOptions(attempts=1),  # RetryPolicy owns retries
        )
        self._client = genai.Client(api_key=key, http_options=options)

    def __repr__(self) -> str:
        return f"GeminiImageEditor(base_url={self.base_url!r}, api_version={self.api_version!r})"

    def edit(self, request: EditRequest) -> EditResponse:
        contents, config = self._content_and_config(request)
        return _run_edit(
            self.policy, lambda: self._attempt(request.model, contents, config), label=f"gemini image edit {request.model}"
        )

    def _content_and_config(self, request: EditRequest) -> tuple[list[Any], Any]:
        types = self._types
        parts = [types.Part.from_bytes(data=request.image, mime_type=request.mime), types.Part.from_text(text=request.instruction)]
        settings: dict[str, Any] = {
            "response_modalities": ["IMAGE", "TEXT"],
            "seed": request.seed,
            "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
        }
        if request.size:
            match = _GEMINI_SIZE.match(request.size.strip())
            if match is None:
                raise ValueError(f"Gemini edit size must be an aspect ratio like '3:2' or a tier like '2K', not {request.size!r}")
            settings["image_config"] = types.ImageConfig(aspect_ratio=match["ratio"], image_size=match["tier"])
        return [types.Content(role="user", parts=parts)], types.GenerateContentConfig(**settings)

    def _attempt(self, model: str, contents: list[Any], config: Any) -> _Edited | Failure:
        try:
            response = self._client.models.generate_content(model=model, contents=contents, config=config)
        except self._errors.APIError as exc:
            headers = getattr(exc.response, "headers", None)
            retry_after = retry_after_from_headers(headers)
            return Failure(
                HTTP_ERROR,
                self._redact(f"HTTP {exc.code}: {exc.status or ''} {exc.message or ''}".strip()),
                retryable=is_retryable_status(exc.code),
                retry_after_s=retry_after if retry_after is not None else _gemini_retry_delay(exc.details),
            )
        except self._httpx.TimeoutException:
            return Failure(TIMEOUT, "request timed out", retryable=True)
        except self._httpx.TransportError as exc:
            return Failure(CONNECTION_ERROR, self._redact(f"connection failed: {exc}"), retryable=True)
        except (json.JSONDecodeError, ValidationError) as exc:
            return Failure(INVALID_RESPONSE, self._redact(f"reply is not a valid API object: {exc}"), retryable=True)
        candidate = response.candidates[0] if response.candidates else None
        parts = (candidate.content.parts if candidate is not None and candidate.content is not None else None) or []
        answer_parts = [part for part in parts if not part.thought]  # "thought" images are drafts, not the answer
        text = " ".join(part.text.strip() for part in answer_parts if part.text and part.text.strip())
        image = next(
            (
                part.inline_data
                for part in answer_parts
                if part.inline_data is not None and part.inline_data.data and (part.inline_data.mime_type or "").startswith("image/")
            ),
            None,
        )
        finish = candidate.finish_reason if candidate is not None else None
        finish_reason = str(getattr(finish, "value", finish)) if finish is not None else None
        if image is None:
            blocked = response.prompt_feedback.block_reason if response.prompt_feedback else None
            reason = f"blocked: {getattr(blocked, 'value', blocked)}" if blocked else f"finish_reason={finish_reason}"
            said = f"; text: {text}" if text else ""
            return Failure(NO_IMAGE, self._redact(f"answer holds no image ({reason}){said}"), retryable=False)
        checked = _checked_image(image.data, "returned image")
        if isinstance(checked, Failure):
            return checked
        usage = response.usage_metadata
        output_tokens = None
        if usage is not None and (usage.candidates_token_count is not None or usage.thoughts_token_count is not None):
            output_tokens = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
        answer = Answer(
            text=text,
            input_tokens=usage.prompt_token_count if usage else None,
            output_tokens=output_tokens,
            finish_reason=finish_reason,
            provider_model=response.model_version or None,
        )
        return _Edited(checked[0], checked[1], answer)


# --- Dagster resource -----------------------------------------------------------------------------------


class ImageEditorResource(ConfigurableResource):
    """Which vendor and model make counterfactual edits, and how they are asked. The model has no real default
    (``MODEL_PLACEHOLDER``): edit models change often and differ in cost, so a run names one. The API key is
    named by environment variable (default ``OPENAI_API_KEY`` / ``GEMINI_API_KEY``), never given in config."""

    provider: Literal["openai", "gemini"] = "openai"
    model: str = Field(default=MODEL_PLACEHOLDER, description="Image-edit model name; must be set in run config")
    base_url: Optional[str] = Field(default=None, description="OpenAI-compatible or Gemini endpoint; None: the vendor's")
    api_key_env: Optional[str] = Field(default=None, description="Environment variable holding the API key")
    size: Optional[str] = Field(default=None, description="Output size in the vendor's terms; None: the model's default")
    request_b64: bool = Field(default=False, description="OpenAI-compatible servers only: send response_format=b64_json")
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    backoff_s: float = DEFAULT_BACKOFF_S
    max_backoff_s: float = DEFAULT_MAX_BACKOFF_S

    def key_env(self) -> str:
        """The environment variable the key is read from."""
        return self.api_key_env or DEFAULT_KEY_ENV[self.provider]

    def editor(self) -> ImageEditor:
        """An editor for the configured vendor, its API key read from the environment now."""
        if not self.model.strip() or self.model == MODEL_PLACEHOLDER:
            raise ValueError("ImageEditorResource.model is not set: name the image-edit model in run configuration")
        env = self.key_env()
        api_key = os.environ.get(env, "").strip()
        if not api_key:
            raise ValueError(f"image edits use provider {self.provider!r}, but environment variable {env} is not set or empty")
        common: dict[str, Any] = {
            "api_key": api_key,
            "base_url": self.base_url,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "backoff_s": self.backoff_s,
            "max_backoff_s": self.max_backoff_s,
        }
        if self.provider == "openai":
            return OpenAIImageEditor(request_b64=self.request_b64, **common)
        return GeminiImageEditor(**common)

    def request(self, image: bytes, mime: str, instruction: str, seed: int | None = None) -> EditRequest:
        """An ``EditRequest`` with the configured model and size."""
        return EditRequest(image=image, mime=mime, instruction=instruction, model=self.model, size=self.size, seed=seed)
