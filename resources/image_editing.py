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
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Optional, Protocol

from PIL import Image, UnidentifiedImageError
from pydantic import Field, ValidationError

from resources.model_providers import (
    CONNECTION_ERROR,
    DEFAULT_KEY_ENV,
    HTTP_ERROR,
    INVALID_RESPONSE,
    OK,
    TIMEOUT,
    Answer,
    Failure,
    GeminiClient,
    OpenAIClient,
    RemoteClientsResource,
    RetryPolicy,
    api_key_from_env,
    gemini_answer,
    gemini_finish_reason,
    gemini_missing_reason,
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


class OpenAIImageEditor(OpenAIClient):
    """``client.images.edit`` through the ``openai`` SDK, for OpenAI or an OpenAI-compatible server
    (``base_url``). The image is uploaded as ``(source.<ext>, bytes, mime)`` with ``n=1``. ``transport``: as for
    ``OpenAIClient``."""

    def __init__(self, api_key: str, base_url: str | None = None, *, request_b64: bool = False, **transport: Any) -> None:
        super().__init__(api_key, base_url, transport)
        self.request_b64 = request_b64

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
        result = self._call(lambda: self._client.images.edit(**kwargs))
        if isinstance(result, Failure):
            return result
        # A 200 whose Content-Type is not JSON comes back from the SDK as a plain string.
        if not isinstance(result, self._openai.types.ImagesResponse):
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


class GeminiImageEditor(GeminiClient):
    """``generateContent`` through ``google-genai`` asking for IMAGE and TEXT output (Gemini API, or a gateway
    speaking it at ``base_url``). The source image goes as an inline part before the instruction. ``transport``:
    as for ``OpenAIClient``."""

    def __init__(self, api_key: str, base_url: str | None = None, *, api_version: str = "v1beta", **transport: Any) -> None:
        super().__init__(api_key, base_url, api_version, transport)

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
        response = self._call(lambda: self._client.models.generate_content(model=model, contents=contents, config=config))
        if isinstance(response, Failure):
            return response
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
        finish_reason = gemini_finish_reason(candidate)
        if image is None:
            reason = gemini_missing_reason(response, finish_reason)
            said = f"; text: {text}" if text else ""
            return Failure(NO_IMAGE, self._redact(f"answer holds no image ({reason}){said}"), retryable=False)
        checked = _checked_image(image.data, "returned image")
        if isinstance(checked, Failure):
            return checked
        return _Edited(checked[0], checked[1], gemini_answer(response, text, finish_reason))

    def _failure(self, exc: Exception) -> Failure | None:
        # An image part whose data is not base64 fails pydantic validation, like a reply cut off mid-JSON.
        if isinstance(exc, (json.JSONDecodeError, ValidationError)):
            return Failure(INVALID_RESPONSE, self._redact(f"reply is not a valid API object: {exc}"), retryable=True)
        return super()._failure(exc)


# --- Dagster resource -----------------------------------------------------------------------------------


class ImageEditorResource(RemoteClientsResource):
    """Which vendor and model make counterfactual edits, and how they are asked. The model has no real default
    (``MODEL_PLACEHOLDER``): edit models change often and differ in cost, so a run names one. The API key is
    named by environment variable (default ``OPENAI_API_KEY`` / ``GEMINI_API_KEY``), never given in config."""

    provider: Literal["openai", "gemini"] = "openai"
    model: str = Field(default=MODEL_PLACEHOLDER, description="Image-edit model name; must be set in run config")
    base_url: Optional[str] = Field(default=None, description="OpenAI-compatible or Gemini endpoint; None: the vendor's")
    api_key_env: Optional[str] = Field(default=None, description="Environment variable holding the API key")
    size: Optional[str] = Field(default=None, description="Output size in the vendor's terms; None: the model's default")
    request_b64: bool = Field(default=False, description="OpenAI-compatible servers only: send response_format=b64_json")

    def key_env(self) -> str:
        """The environment variable the key is read from."""
        return self.api_key_env or DEFAULT_KEY_ENV[self.provider]

    def editor(self) -> ImageEditor:
        """An editor for the configured vendor, its API key read from the environment now."""
        if not self.model.strip() or self.model == MODEL_PLACEHOLDER:
            raise ValueError("ImageEditorResource.model is not set: name the image-edit model in run configuration")
        api_key = api_key_from_env(self.key_env(), f"image edits use provider {self.provider!r}")
        if self.provider == "openai":
            return OpenAIImageEditor(api_key, self.base_url, request_b64=self.request_b64, **self.transport())
        return GeminiImageEditor(api_key, self.base_url, **self.transport())

    def request(self, image: bytes, mime: str, instruction: str, seed: int | None = None) -> EditRequest:
        """An ``EditRequest`` with the configured model and size."""
        return EditRequest(image=image, mime=mime, instruction=instruction, model=self.model, size=self.size, seed=seed)
