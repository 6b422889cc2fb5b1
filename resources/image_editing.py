"""Image models behind one small interface: edits and text-to-image generation (OpenAI images API, Gemini
image output).

Why: counterfactual pairs (AesCanvas, "Culture-Grounded Counterfactual Sensitivity") are made by asking an
image-edit model to swap one decisive cue in a source image, and poem illustrations (TangPoetryBench, section
3) are generated from a prompt by each configured text-to-image model. Both are methods of the same clients
(``edit(EditRequest)``, ``generate(GenerateRequest)``), not twin classes: one transport, one retry policy, one
way of reading an image answer and one failure vocabulary. Like the text providers in
``resources.model_providers``, a call returns an ``EditResponse`` that records status, attempts and latency
instead of raising, so an asset can log every attempt and keep going. Transport handling is *the same*
``RetryPolicy`` as the text providers (timeouts, connection errors, 408/429/5xx and replies that are not an API
object are retried with backoff or the server's ``Retry-After``; other 4xx are final), and the SDKs' own
retries are off so every attempt is counted there.

- ``OpenAIImageEditor``: ``images.edit`` (a multipart upload of the image and the prompt) and
  ``images.generate`` (a JSON body with the prompt) through the ``openai`` SDK, always ``n=1``. GPT Image
  models always answer with base64 (``b64_json``) and reject the legacy ``response_format`` parameter, so it
  is not sent unless ``request_b64=True`` (for OpenAI-compatible servers whose default is a URL). An answer
  that only gives a URL is not fetched: it is ``invalid_response``. The images API takes no seed: a request's
  ``seed`` is not sent (the caller still records it).
- ``GeminiImageEditor``: ``generateContent`` through ``google-genai`` with ``response_modalities`` IMAGE and
  TEXT; an edit sends the image then the instruction, a generation the prompt alone. The first inline image
  of the answer that is not a "thought" image is the result, the answer's text is kept beside it. The seed is
  sent; ``size`` may be an aspect ratio (``"3:2"``) or a size tier (``"2K"``).

``ImageGeneratorsResource`` configures any number of named generators (``ImageGeneratorConfig``), the name
being the label in illustration item ids (``f"{poem_id}@{name}"``).

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
from typing import Any, Literal, Optional, Protocol, Union

from dagster import Config
from PIL import Image, UnidentifiedImageError
from pydantic import Field, ValidationError, field_validator, model_validator

from resources.model_providers import (
    DEFAULT_KEY_ENV,
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
from resources.models.types import CONNECTION_ERROR, HTTP_ERROR, INVALID_RESPONSE, OK, TIMEOUT

logger = logging.getLogger(__name__)

NO_IMAGE = "no_image"
EDIT_STATUSES = (OK, HTTP_ERROR, TIMEOUT, CONNECTION_ERROR, INVALID_RESPONSE, NO_IMAGE)
EDIT_PROVIDERS = ("openai", "gemini")
IMAGE_PROVIDERS = EDIT_PROVIDERS
"""Vendors that edit and generate images (the same two clients do both)."""
MODEL_PLACEHOLDER = "<configure-image-edit-model>"
"""The resource's default ``model``: not a model name. Set the edit model in run configuration (for example an
OpenAI GPT Image model or a Gemini image-output model); ``editor()`` refuses to build with the placeholder."""
GENERATOR_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
"""What a generator label may contain: it becomes part of illustration item ids (``poem_id@label``)."""
SEED_RANGE = (-(2**31), 2**31 - 1)
"""Seeds a generation may carry: Gemini's ``seed`` is a 32-bit integer (derive seeds modulo 2**31)."""

_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}
_GEMINI_SIZE = re.compile(r"^(?P<ratio>\d+:\d+)$|^(?P<tier>\d+K)$")
_OPENAI_SIZE = re.compile(r"^(auto|\d+x\d+)$")


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
class GenerateRequest:
    """One text-to-image generation: the prompt and the model. ``size`` is in the vendor's terms, as for
    ``EditRequest`` (None: the model's default); ``seed`` goes to vendors that take one (Gemini) and must fit
    ``SEED_RANGE``. Validated on construction, so a bad request never reaches the wire; the repr shortens the
    prompt (requests carry no secrets, but prompts can be long)."""

    prompt: str
    model: str
    size: str | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise ValueError("GenerateRequest.prompt is empty")
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError("GenerateRequest.model is empty")
        if self.model == MODEL_PLACEHOLDER:
            raise ValueError("GenerateRequest.model is the placeholder: name the image model in configuration")
        if self.size is not None and (not isinstance(self.size, str) or not self.size.strip()):
            raise ValueError("GenerateRequest.size is blank: pass None for the model's default size")
        if self.seed is not None:
            if isinstance(self.seed, bool) or not isinstance(self.seed, int):
                raise ValueError(f"GenerateRequest.seed must be an integer, not {type(self.seed).__name__}")
            if not SEED_RANGE[0] <= self.seed <= SEED_RANGE[1]:
                raise ValueError(f"GenerateRequest.seed {self.seed} is outside the 32-bit range vendors accept")

    def __repr__(self) -> str:
        return (
            f"GenerateRequest(prompt={self.prompt[:60]!r} ({len(self.prompt)} chars), model={self.model!r}, "
            f"size={self.size!r}, seed={self.seed!r})"
        )


@dataclass(frozen=True, repr=False)
class EditResponse:
    """What came back from an edit or a generation. ``status`` other than ``ok`` means ``image`` is None and
    ``error`` says why; ``mime`` is read from the returned bytes (not trusted from the answer). ``text`` is the
    model's accompanying text (Gemini) or revised prompt (OpenAI models that report one). ``latency_ms`` covers
    retries and waits; ``provider_model`` is the model the server reported (the OpenAI images API reports
    none)."""

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


ImageResponse = EditResponse
"""Neutral name for what ``edit`` and ``generate`` both return."""


class ImageEditor(Protocol):
    name: str

    def edit(self, request: EditRequest) -> EditResponse: ...


class ImageGenerator(Protocol):
    name: str

    def generate(self, request: GenerateRequest) -> EditResponse: ...


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
class _Made:
    """One attempt that produced an image (an edit or a generation)."""

    image: bytes
    mime: str
    answer: Answer


def _checked_image(data: bytes, where: str) -> tuple[bytes, str] | Failure:
    mime = image_mime(data)
    if mime is None or not _fully_decodes(data):
        # A broken image from a working server is a malfunction like a 5xx: worth another try.
        return Failure(INVALID_RESPONSE, f"{where} is not a readable image ({len(data)} bytes)", retryable=True)
    return data, mime


def _run_image_call(policy: RetryPolicy, attempt: Callable[[], _Made | Failure], label: str) -> EditResponse:
    """``policy.run`` over ``attempt``; the image of the successful attempt is kept aside, since the shared
    policy only carries text."""
    kept: list[_Made] = []

    def once() -> Answer | Failure:
        outcome = attempt()
        if isinstance(outcome, Failure):
            return outcome
        kept[:] = [outcome]
        return outcome.answer

    response = policy.run(once, label=label)
    made = kept[0] if response.status == OK and kept else None
    return EditResponse(
        image=made.image if made else None,
        mime=made.mime if made else None,
        status=response.status,
        error=response.error,
        latency_ms=response.latency_ms,
        attempts=response.attempts,
        provider_model=response.provider_model,
        text=response.text or None,
        input_tokens=response.input_tokens,
        output_tokens=response.output_tokens,
    )


def gemini_image_config(types: Any, size: str) -> Any:
    """``size`` as a Gemini ``ImageConfig``: an aspect ratio (``"3:2"``) or a size tier (``"2K"``); anything
    else (an OpenAI-style ``"1024x1024"``) is a ValueError before any request is sent."""
    match = _GEMINI_SIZE.match(size.strip())
    if match is None:
        raise ValueError(f"Gemini image size must be an aspect ratio like '3:2' or a tier like '2K', not {size!r}")
    return types.ImageConfig(aspect_ratio=match["ratio"], image_size=match["tier"])


# --- OpenAI images edit and generation ------------------------------------------------------------------


class OpenAIImageEditor(OpenAIClient):
    """``client.images.edit`` and ``client.images.generate`` through the ``openai`` SDK, for OpenAI or an
    OpenAI-compatible server (``base_url``). An edit uploads the image as ``(source.<ext>, bytes, mime)``; both
    ask for ``n=1`` and read the answer the same way. ``transport``: as for ``OpenAIClient``."""

    def __init__(self, api_key: str, base_url: str | None = None, *, request_b64: bool = False, **transport: Any) -> None:
        super().__init__(api_key, base_url, transport)
        self.request_b64 = request_b64

    def __repr__(self) -> str:
        return f"OpenAIImageEditor(base_url={self.base_url!r}, request_b64={self.request_b64!r})"

    def edit(self, request: EditRequest) -> EditResponse:
        kwargs = self._edit_kwargs(request)
        return self._run(lambda: self._client.images.edit(**kwargs), label=f"openai image edit {request.model}")

    def generate(self, request: GenerateRequest) -> EditResponse:
        """One image from ``request.prompt`` (``images.generate``); the seed is not sent (the API takes none)."""
        kwargs = self._common_kwargs(request.model, request.prompt, request.size)
        return self._run(lambda: self._client.images.generate(**kwargs), label=f"openai image generation {request.model}")

    def _common_kwargs(self, model: str, prompt: str, size: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": model, "prompt": prompt, "n": 1}
        if size:
            kwargs["size"] = size
        if self.request_b64:
            kwargs["response_format"] = "b64_json"
        return kwargs

    def _edit_kwargs(self, request: EditRequest) -> dict[str, Any]:
        filename = f"source.{_EXTENSIONS.get(request.mime, 'png')}"
        kwargs = self._common_kwargs(request.model, request.instruction, request.size)
        kwargs["image"] = (filename, request.image, request.mime)
        return kwargs

    def _run(self, call: Callable[[], Any], *, label: str) -> EditResponse:
        return _run_image_call(self.policy, lambda: self._attempt(call), label)

    def _attempt(self, call: Callable[[], Any]) -> _Made | Failure:
        result = self._call(call)
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
        return _Made(checked[0], checked[1], answer)


# --- Gemini image output --------------------------------------------------------------------------------


class GeminiImageEditor(GeminiClient):
    """``generateContent`` through ``google-genai`` asking for IMAGE and TEXT output (Gemini API, or a gateway
    speaking it at ``base_url``). An edit sends the source image as an inline part before the instruction; a
    generation sends the prompt as the only part. ``transport``: as for ``OpenAIClient``."""

    def __init__(self, api_key: str, base_url: str | None = None, *, api_version: str = "v1beta", **transport: Any) -> None:
        super().__init__(api_key, base_url, api_version, transport)

    def __repr__(self) -> str:
        return f"GeminiImageEditor(base_url={self.base_url!r}, api_version={self.api_version!r})"

    def edit(self, request: EditRequest) -> EditResponse:
        types = self._types
        parts = [
            types.Part.from_bytes(data=request.image, mime_type=request.mime),
            types.Part.from_text(text=request.instruction),
        ]
        return self._run(request.model, parts, request.size, request.seed, label=f"gemini image edit {request.model}")

    def generate(self, request: GenerateRequest) -> EditResponse:
        """One image from ``request.prompt`` alone; seed and size as for an edit."""
        parts = [self._types.Part.from_text(text=request.prompt)]
        return self._run(request.model, parts, request.size, request.seed, label=f"gemini image generation {request.model}")

    def _run(self, model: str, parts: list[Any], size: str | None, seed: int | None, *, label: str) -> EditResponse:
        contents, config = self._content_and_config(parts, size, seed)
        return _run_image_call(self.policy, lambda: self._attempt(model, contents, config), label)

    def _content_and_config(self, parts: list[Any], size: str | None, seed: int | None) -> tuple[list[Any], Any]:
        types = self._types
        settings: dict[str, Any] = {
            "response_modalities": ["IMAGE", "TEXT"],
            "seed": seed,
            "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
        }
        if size:
            settings["image_config"] = gemini_image_config(types, size)
        return [types.Content(role="user", parts=parts)], types.GenerateContentConfig(**settings)

    def _attempt(self, model: str, contents: list[Any], config: Any) -> _Made | Failure:
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
        return _Made(checked[0], checked[1], gemini_answer(response, text, finish_reason))

    def _failure(self, exc: Exception) -> Failure | None:
        # An image part whose data is not base64 fails pydantic validation, like a reply cut off mid-JSON.
        if isinstance(exc, (json.JSONDecodeError, ValidationError)):
            return Failure(INVALID_RESPONSE, self._redact(f"reply is not a valid API object: {exc}"), retryable=True)
        return super()._failure(exc)


OpenAIImageModel = OpenAIImageEditor
"""Neutral alias: the class edits and generates."""
GeminiImageModel = GeminiImageEditor
"""Neutral alias: the class edits and generates."""
ImageModelClient = Union[OpenAIImageEditor, GeminiImageEditor]


def _image_client(
    provider: str, api_key: str, base_url: str | None, request_b64: bool, transport: Mapping[str, Any]
) -> ImageModelClient:
    if provider == "openai":
        return OpenAIImageEditor(api_key, base_url, request_b64=request_b64, **transport)
    return GeminiImageEditor(api_key, base_url, **transport)


# --- Dagster resources ----------------------------------------------------------------------------------


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
        return _image_client(self.provider, api_key, self.base_url, self.request_b64, self.transport())

    def request(self, image: bytes, mime: str, instruction: str, seed: int | None = None) -> EditRequest:
        """An ``EditRequest`` with the configured model and size."""
        return EditRequest(image=image, mime=mime, instruction=instruction, model=self.model, size=self.size, seed=seed)


class ImageGeneratorConfig(Config):
    """One configured text-to-image generator. ``name`` is the label in illustration item ids
    (``f"{poem_id}@{name}"``), so it is restricted to ``[A-Za-z0-9._-]+``; ``model`` is required (no default:
    image models change often and a run must say which one made its pictures). The API key is named by
    environment variable (default ``OPENAI_API_KEY`` / ``GEMINI_API_KEY``) and read only when a client is built.
    ``size`` is checked against the vendor's vocabulary here, so a typo fails at run start, not per image."""

    name: str = Field(description="Label used in illustration item ids (poem_id@name): letters, digits, '.', '_', '-'")
    provider: Literal["openai", "gemini"] = Field(default="openai", description="Image API the model is reached through")
    model: str = Field(description="Image model name sent to the API (recorded with every image)")
    base_url: Optional[str] = Field(default=None, description="OpenAI-compatible or Gemini endpoint; None: the vendor's")
    api_key_env: Optional[str] = Field(default=None, description="Environment variable holding the API key")
    size: Optional[str] = Field(
        default=None, description="OpenAI 'auto' or 'WxH'; Gemini an aspect ratio ('3:2') or tier ('2K'); None: default"
    )
    request_b64: bool = Field(default=False, description="OpenAI-compatible servers only: send response_format=b64_json")

    @field_validator("name")
    @classmethod
    def _name_is_a_label(cls, name: str) -> str:
        if not GENERATOR_NAME.match(name):
            raise ValueError(f"generator name {name!r} may only contain letters, digits, '.', '_' and '-'")
        return name

    @field_validator("model")
    @classmethod
    def _model_is_named(cls, model: str) -> str:
        if not model.strip() or model == MODEL_PLACEHOLDER:
            raise ValueError("generator model is not set: name the image model")
        return model

    @model_validator(mode="after")
    def _size_fits_the_vendor(self) -> ImageGeneratorConfig:
        if self.size is not None:
            pattern = _OPENAI_SIZE if self.provider == "openai" else _GEMINI_SIZE
            if not pattern.match(self.size.strip()):
                expected = "'auto' or 'WIDTHxHEIGHT'" if self.provider == "openai" else "an aspect ratio like '3:2' or a tier"
                raise ValueError(f"generator {self.name!r}: size {self.size!r} is not {expected} for provider {self.provider!r}")
        if self.request_b64 and self.provider != "openai":
            raise ValueError(f"generator {self.name!r}: request_b64 applies to provider 'openai' only")
        return self

    def key_env(self) -> str:
        """The environment variable this generator's key is read from."""
        return self.api_key_env or DEFAULT_KEY_ENV[self.provider]

    def request(self, prompt: str, seed: int | None = None) -> GenerateRequest:
        """A ``GenerateRequest`` with this generator's model and size."""
        return GenerateRequest(prompt=prompt, model=self.model, size=self.size, seed=seed)


class ImageGeneratorsResource(RemoteClientsResource):
    """The text-to-image generators a run illustrates with (each poem x each generator), plus the transport
    settings they share. Empty by default: without a configured generator the caller says so and falls back
    to stand-in illustrations. Names must be distinct (compared case-insensitively, since ``gpt`` and ``GPT``
    would be indistinguishable in reports and on case-insensitive file systems)."""

    generators: list[ImageGeneratorConfig] = Field(default=[], description="Configured generators, in report order")

    @model_validator(mode="after")
    def _names_are_distinct(self) -> ImageGeneratorsResource:
        seen: dict[str, str] = {}
        duplicates: list[str] = []
        for generator in self.generators:
            folded = generator.name.casefold()
            if folded in seen:
                duplicates.append(f"{generator.name!r} (same as {seen[folded]!r})")
            else:
                seen[folded] = generator.name
        if duplicates:
            raise ValueError(f"ImageGeneratorsResource.generators: duplicate generator names: {', '.join(duplicates)}")
        return self

    def names(self) -> list[str]:
        """The configured labels, in configuration order."""
        return [generator.name for generator in self.generators]

    def generator(self, name: str) -> ImageGeneratorConfig:
        """The configuration of generator ``name``; ValueError naming the configured ones when it is unknown."""
        for generator in self.generators:
            if generator.name == name:
                return generator
        configured = ", ".join(repr(label) for label in self.names()) or "none"
        raise ValueError(f"no image generator named {name!r} (configured: {configured})")

    def client(self, name: str) -> tuple[ImageGeneratorConfig, ImageModelClient]:
        """Generator ``name``'s configuration and a client for it, its API key read from the environment now."""
        generator = self.generator(name)
        api_key = api_key_from_env(generator.key_env(), f"image generator {name!r} uses provider {generator.provider!r}")
        return generator, _image_client(generator.provider, api_key, generator.base_url, generator.request_b64, self.transport())
