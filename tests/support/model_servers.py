"""A loopback server that speaks the OpenAI Chat Completions and Gemini ``generateContent`` HTTP APIs.

Why: the model providers must be tested through the real ``openai`` and ``google-genai`` SDKs against the real
wire format, never against mocks and never against the internet. One server answers both APIs on 127.0.0.1:

- ``POST /v1/chat/completions`` (``Authorization: Bearer <key>``) answers a ``chat.completion`` object;
- ``POST /v1beta/models/{model}:generateContent`` (``x-goog-api-key: <key>``) answers a
  ``GenerateContentResponse`` (``candidates``, ``usageMetadata``, ``modelVersion``);
- ``POST /v1/images/edits`` (OpenAI images edit, a multipart form with the image file and the prompt) answers
  ``{"created": ..., "data": [{"b64_json": <PNG>}]}``, and a ``generateContent`` request whose
  ``responseModalities`` include ``IMAGE`` answers with an ``inlineData`` image part (Gemini image output).
  Both edits are computed from the uploaded image by a pluggable ``image_editor(image, prompt) -> PNG``
  (default ``invert_named_region``: inverts the half of the image the prompt names), never a canned picture;
- ``POST /v1/images/generations`` (OpenAI images generation, a JSON body with ``model``, ``prompt``, ``n``,
  ``size``...) answers the same shape, and so does a Gemini ``generateContent`` asking for ``IMAGE`` output
  with no input image. Both generations are computed from the prompt by a pluggable
  ``image_generator(prompt) -> PNG`` (default ``paint_prompt``: a 256x256 landscape-like gradient whose colours
  come from a digest of the prompt, with any ``[render text: ...]`` in the prompt drawn in DejaVu Sans so OCR
  tests have legible characters to find).

The answer text comes from a pluggable ``responder(request_json) -> str``, so a test can compute the model's
answer from what the client actually sent (the ``wire_*`` helpers read images, prompts and the requested
schema from either wire format). Failures can be injected per path, per body substring and per Nth matching
request: an HTTP status (429/5xx with ``Retry-After``), a reply slower than the client's timeout, a body that
is not JSON, a body cut off mid-JSON, and a well-formed reply whose *content* is malformed JSON (for the call
layer's repair path); for the image answers (edits and generations) also ``NO_IMAGE`` (a well-formed answer without an image), and
``MALFORMED_CONTENT`` there sends image data that does not decode as an image. Every request is recorded (path,
headers without credentials, JSON body or parsed multipart form); an optional fixed latency per request serves
the throughput benchmark. Requests to paths the server does not serve fail
the test when the ``with`` block ends.
"""

from __future__ import annotations

import base64
import email.policy
import functools
import hashlib
import io
import itertools
import json
import math
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email.parser import BytesParser
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from PIL import Image, ImageDraw, ImageFont, ImageOps

OPENAI = "openai"
GEMINI = "gemini"
OPENAI_IMAGES = "openai_images"
OPENAI_GENERATIONS = "openai_generations"
OPENAI_PATH = "/v1/chat/completions"
OPENAI_IMAGES_PATH = "/v1/images/edits"
OPENAI_GENERATIONS_PATH = "/v1/images/generations"
_GEMINI_PATH = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):generateContent$")
GEMINI_IMAGE_TOKENS = 258
"""Tokens the server charges per image (Gemini's figure for an image of up to 384 px a side)."""

SLOW = "slow"
"""Injected: answer normally, but only after ``delay_s`` (set it above the client's timeout)."""
NOT_JSON = "not_json"
"""Injected: 200 with an HTML error page (``Content-Type: text/html``), as a misbehaving proxy sends."""
TRUNCATED_BODY = "truncated_body"
"""Injected: 200 whose JSON body is cut off halfway (Content-Length matches what is sent)."""
MALFORMED_CONTENT = "malformed_content"
"""Injected: a well-formed API reply whose answer text is ``content`` (default: the responder's text cut in half);
on the image answers, image data that is not an image: ``content`` sent verbatim as the base64 field (so it can be
invalid base64), default the base64 of the edited PNG cut in half."""
NO_IMAGE = "no_image"
"""Injected (image answers only): a well-formed reply without an image: OpenAI ``"data": []``; Gemini a text part
only (``content``, default a refusal sentence), as a model that declines an edit or a generation answers."""

_SECRET_HEADERS = frozenset({"authorization", "x-goog-api-key", "api-key"})

Responder = Callable[[dict[str, Any]], str]
ImageEdit = Callable[[bytes, str], bytes]
"""``(uploaded image bytes, prompt) -> edited image bytes``: what the image-edit answers carry."""
ImageGenerate = Callable[[str], bytes]
"""``prompt -> generated image bytes``: what the image-generation answers carry."""
_OPENAI_APIS = (OPENAI, OPENAI_IMAGES, OPENAI_GENERATIONS)


def gemini_path(model: str) -> str:
    """The ``generateContent`` path for ``model`` (for ``InjectedFailure.path`` and ``requests_to``)."""
    return f"/v1beta/models/{model}:generateContent"


@dataclass
class InjectedFailure:
    """Make matching requests fail instead of being answered.

    A request matches when ``path`` (if set) equals its path and ``match`` (if set) occurs in its raw body
    (e.g. a schema name or a prompt fragment). The first ``skip`` matching requests are answered normally, the
    next ``times`` (``None``: all the rest) get ``response``: an HTTP status (sent with an API-style error body
    and, when set, ``Retry-After: retry_after``) or one of ``SLOW``, ``NOT_JSON``, ``TRUNCATED_BODY``,
    ``MALFORMED_CONTENT``, or (image answers only) ``NO_IMAGE``. ``retry_info_s`` adds a
    ``google.rpc.RetryInfo`` ``retryDelay`` to a Gemini error body (how the real Gemini API says when to come
    back); ``delay_s`` is how long ``SLOW`` waits. Failures are tried in list order and a request taken by one
    is not counted by the later ones.
    """

    response: int | str
    path: str | None = None
    match: str | None = None
    skip: int = 0
    times: int | None = 1
    retry_after: str | None = None
    retry_info_s: float | None = None
    delay_s: float = 0.0
    content: str | None = None
    seen: int = field(default=0, init=False)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it; credentials are left out of ``headers`` (``authorized`` says if they
    matched). ``outcome`` is ``"ok"``, the injected failure (status or kind), ``"unauthorized"``, or ``"unknown"`` /
    ``"bad_request"`` / ``"server_bug"`` for requests that also land in ``problems``."""

    api: str | None
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    authorized: bool
    outcome: str
    received_at: float


@dataclass
class _Reply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0

    @classmethod
    def json(cls, payload: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> _Reply:
        return cls(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})})


# --- reading either wire format -------------------------------------------------------------------------


def _b64decode_any(data: str) -> bytes:
    """Standard or URL-safe base64, padded or not (the Gemini API accepts all four; google-genai sends URL-safe)."""
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


def wire_api(body: Mapping[str, Any]) -> str:
    """Which API a request body belongs to (an images-edit form is recorded with its files under ``files``; an
    images-generation body has a ``prompt`` and no ``messages``)."""
    if "contents" in body:
        return GEMINI
    if "messages" in body:
        return OPENAI
    if "files" in body:
        return OPENAI_IMAGES
    return OPENAI_GENERATIONS if "prompt" in body else OPENAI


def wire_images(body: Mapping[str, Any]) -> list[tuple[str, bytes]]:
    """``(mime type, bytes)`` of every inline image in the request, in order."""
    images: list[tuple[str, bytes]] = []
    if wire_api(body) == OPENAI_GENERATIONS:
        return images
    if wire_api(body) == OPENAI_IMAGES:
        return [(file["content_type"], base64.b64decode(file["data"])) for file in body["files"] if file["field"].startswith("image")]
    if wire_api(body) == GEMINI:
        for content in body.get("contents", []):
            for part in content.get("parts", []):
                inline = part.get("inlineData") or part.get("inline_data")
                if inline:
                    images.append((inline.get("mimeType") or inline.get("mime_type"), _b64decode_any(inline["data"])))
        return images
    for message in body.get("messages", []):
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "image_url":
                header, _, data = part["image_url"]["url"].partition(",")
                if not header.startswith("data:") or not header.endswith(";base64"):
                    raise ValueError(f"image part is not a base64 data URL: {header[:40]!r}")
                images.append((header[len("data:") : -len(";base64")], base64.b64decode(data)))
    return images


def _texts(parts: Any) -> list[str]:
    if isinstance(parts, str):
        return [parts]
    return [part["text"] for part in parts or [] if isinstance(part, Mapping) and isinstance(part.get("text"), str)]


def wire_system(body: Mapping[str, Any]) -> str:
    """The system prompt (OpenAI ``system``/``developer`` messages, Gemini ``systemInstruction``)."""
    if wire_api(body) in (OPENAI_IMAGES, OPENAI_GENERATIONS):
        return ""
    if wire_api(body) == GEMINI:
        instruction = body.get("systemInstruction") or body.get("system_instruction") or {}
        return "\n".join(_texts(instruction.get("parts")))
    return "\n".join(
        text
        for message in body.get("messages", [])
        if message.get("role") in ("system", "developer")
        for text in _texts(message.get("content"))
    )


def wire_user_text(body: Mapping[str, Any]) -> str:
    """The text of the user turns (the ``prompt`` field of an images-edit form or images-generation body)."""
    if wire_api(body) in (OPENAI_IMAGES, OPENAI_GENERATIONS):
        return str(body.get("prompt", ""))
    if wire_api(body) == GEMINI:
        turns = [content for content in body.get("contents", []) if content.get("role", "user") == "user"]
        return "\n".join(text for content in turns for text in _texts(content.get("parts")))
    return "\n".join(
        text for message in body.get("messages", []) if message.get("role") == "user" for text in _texts(message.get("content"))
    )


def wire_schema(body: Mapping[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    """``(name, JSON schema)`` the client asked the answer to follow; Gemini carries the name as the schema's
    ``title``."""
    if wire_api(body) == GEMINI:
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        return (schema.get("title") if isinstance(schema, Mapping) else None), schema
    response_format = body.get("response_format") or {}
    if not isinstance(response_format, Mapping) or response_format.get("type") != "json_schema":
        return None, None
    spec = response_format.get("json_schema") or {}
    return spec.get("name"), spec.get("schema")


def echo_responder(body: dict[str, Any]) -> str:
    """Default answer: a JSON object saying what arrived (schema name, image count, image sizes)."""
    name, _ = wire_schema(body)
    images = wire_images(body)
    return json.dumps({"schema": name, "images": len(images), "image_bytes": [len(data) for _, data in images]})


def _approx_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def wire_wants_image(body: Mapping[str, Any]) -> bool:
    """Whether a Gemini request asks for image output (``IMAGE`` among ``responseModalities``)."""
    config = body.get("generationConfig") or body.get("generation_config") or {}
    modalities = config.get("responseModalities") or config.get("response_modalities") or []
    return any(str(modality).upper() == "IMAGE" for modality in modalities)


def parse_multipart_form(content_type: str, raw: bytes) -> dict[str, Any]:
    """A ``multipart/form-data`` body as the server records it: text fields by name (a repeated name keeps the
    last), and ``files``: one ``{"field", "filename", "content_type", "data"}`` per uploaded file, ``data`` in
    base64 so the record stays JSON. Raises ValueError when the body is not a multipart form."""
    if not content_type.lower().startswith("multipart/form-data") or "boundary=" not in content_type:
        raise ValueError(f"not a multipart form (Content-Type {content_type[:60]!r})")
    message = BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + raw
    )
    if not message.is_multipart():
        raise ValueError("multipart body has no parts")
    form: dict[str, Any] = {"files": []}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not name:
            raise ValueError("form part without a name")
        payload = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        if filename is None:
            form[str(name)] = payload.decode("utf-8")
            continue
        form["files"].append(
            {
                "field": str(name),
                "filename": filename,
                "content_type": part.get_content_type(),
                "data": base64.b64encode(payload).decode("ascii"),
            }
        )
    return form


_REGIONS = {
    "left half": lambda w, h: (0, 0, w // 2, h),
    "right half": lambda w, h: (w // 2, 0, w, h),
    "top half": lambda w, h: (0, 0, w, h // 2),
    "bottom half": lambda w, h: (0, h // 2, w, h),
}


def named_region(prompt: str, width: int, height: int) -> tuple[int, int, int, int]:
    """The box ``(left, top, right, bottom)`` a prompt names: the first of "left half", "right half", "top half",
    "bottom half" it mentions (case-insensitive), else the whole image."""
    lowered = prompt.lower()
    found = [(lowered.find(name), name) for name in _REGIONS if name in lowered]
    if not found:
        return (0, 0, width, height)
    return _REGIONS[min(found)[1]](width, height)


def invert_named_region(image: bytes, prompt: str) -> bytes:
    """Default edit: the uploaded image with the colours of the region the prompt names inverted (alpha kept),
    as PNG. Deterministic, and visibly computed from the input, so a test can check the exact pixels."""
    with Image.open(io.BytesIO(image)) as source:
        picture = source.convert("RGBA")
    box = named_region(prompt, *picture.size)
    region = picture.crop(box)
    red, green, blue, alpha = region.split()
    inverted = ImageOps.invert(Image.merge("RGB", (red, green, blue)))
    picture.paste(Image.merge("RGBA", (*inverted.split(), alpha)), box[:2])
    out = io.BytesIO()
    picture.save(out, format="PNG", optimize=False)
    return out.getvalue()


PAINT_SIZE = 256
"""Width and height of the pictures ``paint_prompt`` makes (whatever size was asked for)."""
RENDER_TEXT = re.compile(r"\[render text:\s*(?P<text>[^\]]*?)\s*\]", re.IGNORECASE)
"""The prompt marker ``[render text: ...]``: ``paint_prompt`` draws the text it holds, as a model that ignores
"no text in the image" would, so OCR checks have a positive case computed from the request."""


def prompt_palette(prompt: str) -> tuple[tuple[int, int, int], ...]:
    """Four colours from the SHA-256 of the prompt (UTF-8): sky top, horizon, far ridge, near ridge."""
    digest = hashlib.sha256(prompt.encode("utf-8")).digest()
    return tuple((digest[i], digest[i + 1], digest[i + 2]) for i in range(0, 12, 3))


def rendered_text(prompt: str) -> str | None:
    """The text of the first ``[render text: ...]`` marker in ``prompt`` (None when there is none or it is blank)."""
    match = RENDER_TEXT.search(prompt)
    return (match["text"] or None) if match else None


@functools.lru_cache(maxsize=32)
def _sans(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """DejaVu Sans at ``size`` px (Pillow finds it in the system font folders); Pillow's bundled font if absent."""
    try:
        return ImageFont.truetype("DejaVuSans.ttf", size)
    except OSError:
        return ImageFont.load_default(size=size)


def _draw_text(picture: Image.Image, text: str) -> None:
    """``text`` in dark letters on a light plate in the middle of ``picture``, at the largest size from 32 px
    down that fits the width with a margin."""
    draw = ImageDraw.Draw(picture)
    for size in range(32, 9, -2):
        font = _sans(size)
        left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
        if right - left <= picture.width - 24:
            break
    width, height = right - left, bottom - top
    x0, y0 = (picture.width - width) // 2, (picture.height - height) // 2
    draw.rectangle((x0 - 8, y0 - 8, x0 + width + 8, y0 + height + 8), fill=(250, 248, 240))
    draw.text((x0 - left, y0 - top), text, fill=(15, 15, 15), font=font)


def paint_prompt(prompt: str) -> bytes:
    """Default generation: a ``PAINT_SIZE`` square PNG computed from the prompt alone: a sky graded from one
    colour to another down to the horizon, a misty far ridge and a darker near ridge, their colours and the
    ridges' waves all taken from a digest of the prompt (``prompt_palette``); a ``[render text: ...]`` marker's
    text is drawn on top. Deterministic, so a test can recompute the exact bytes a client should receive, and
    different prompts give visibly different pictures."""
    top, horizon, far, near = (np.array(colour, dtype=np.float64) for colour in prompt_palette(prompt))
    waves = hashlib.sha256(b"ridges:" + prompt.encode("utf-8")).digest()
    size = PAINT_SIZE
    y = (np.arange(size, dtype=np.float64) / (size - 1))[:, None, None]
    x = np.arange(size, dtype=np.float64) / (size - 1)
    picture = np.broadcast_to(top * (1 - y) + horizon * y, (size, size, 3)).copy()
    far_line = 0.45 + 0.07 * np.sin(2 * np.pi * ((1 + waves[0] % 3) * x + waves[1] / 256))
    near_line = 0.68 + 0.09 * np.sin(2 * np.pi * ((1 + waves[2] % 2) * x + waves[3] / 256))
    rows = y[:, :, 0]
    haze = 0.5 * (1 - np.clip((rows - far_line) * 4, 0, 1))[:, :, None]  # the far ridge's top fades into the horizon
    picture = np.where((rows > far_line)[:, :, None], far * (1 - haze) + horizon * haze, picture)
    shade = (1 - 0.5 * np.clip(rows - near_line, 0, 1))[:, :, None]  # the near ridge darkens towards the bottom
    picture = np.where((rows > near_line)[:, :, None], near * shade, picture)
    image = Image.fromarray(np.clip(np.rint(picture), 0, 255).astype(np.uint8), "RGB")
    text = rendered_text(prompt)
    if text:
        _draw_text(image, text)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False)
    return out.getvalue()


# --- the server -----------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY, as real API servers set it: the status line and headers, then the body, go as separate writes,
    # and Nagle's algorithm would hold the body back until the client's delayed ACK (some 40 ms on Linux).
    disable_nagle_algorithm = True
    server: _HttpServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature fixed by the base class
        pass

    def do_GET(self) -> None:  # noqa: N802 - name fixed by BaseHTTPRequestHandler
        self._serve()

    def do_POST(self) -> None:  # noqa: N802 - name fixed by BaseHTTPRequestHandler
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        reply = self.server.app.answer(self.command, self.path, dict(self.headers.items()), raw)
        if reply.delay_s and self.server.app.stopping.wait(reply.delay_s):
            self.close_connection = True
            return
        try:
            self.send_response(reply.status)
            for name, value in {**reply.headers, "Content-Length": str(len(reply.body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (timeout): nothing to answer


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256

    def __init__(self, app: ModelApiServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.app = app


class ModelApiServer:
    """Loopback OpenAI + Gemini server; use as a context manager.

    ``openai_key`` / ``gemini_key`` are the only credentials accepted (otherwise 401 for OpenAI and 400
    ``INVALID_ARGUMENT`` for Gemini, as the real services answer). ``latency_s`` delays every answer (requests
    are served concurrently). ``model_suffix`` is appended to the requested model in the reported model name,
    so tests can tell the server's report from the request. ``image_editor`` computes the image-edit answers
    from the uploaded image and the prompt, ``image_generator`` the image-generation answers from the prompt;
    ``gemini_thought_images`` puts a "thought" text and draft image (for an edit the unedited upload, for a
    generation the picture of the prompt plus " (draft)") before a Gemini image answer, as thinking image
    models do.
    """

    def __init__(
        self,
        *,
        responder: Responder = echo_responder,
        failures: Sequence[InjectedFailure] = (),
        openai_key: str = "sk-loopback-openai",
        gemini_key: str = "loopback-gemini-key",
        latency_s: float = 0.0,
        model_suffix: str = "-loopback-001",
        image_editor: ImageEdit = invert_named_region,
        image_generator: ImageGenerate = paint_prompt,
        gemini_thought_images: bool = False,
    ) -> None:
        self.responder = responder
        self.image_editor = image_editor
        self.image_generator = image_generator
        self.gemini_thought_images = gemini_thought_images
        self.failures = list(failures)
        self.openai_key = openai_key
        self.gemini_key = gemini_key
        self.latency_s = latency_s
        self.model_suffix = model_suffix
        self.requests: list[RecordedRequest] = []
        self.problems: list[str] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base={self.base!r})"

    @property
    def base(self) -> str:
        """``http://127.0.0.1:<port>`` (no path)."""
        if self._server is None:
            raise RuntimeError("server is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def openai_base_url(self) -> str:
        """What to pass as the OpenAI client's ``base_url``."""
        return f"{self.base}/v1"

    @property
    def gemini_base_url(self) -> str:
        """What to pass as ``HttpOptions.base_url`` (the API version is added by the client)."""
        return f"{self.base}/"

    def __enter__(self) -> ModelApiServer:
        self._server = _HttpServer(self)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        self.stopping.set()
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        if exc_type is None and self.problems:
            raise AssertionError(f"ModelApiServer got requests it does not serve: {self.problems}")

    def requests_to(self, api: str) -> list[RecordedRequest]:
        """Recorded requests for ``api`` (``OPENAI`` / ``GEMINI`` / ``OPENAI_IMAGES`` / ``OPENAI_GENERATIONS``), in
        arrival order."""
        with self._lock:
            return [request for request in self.requests if request.api == api]

    # --- answering --------------------------------------------------------------------------------------

    def answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> _Reply:
        path = urlsplit(target).path
        lowered = {name.lower(): value for name, value in headers.items()}
        gemini = _GEMINI_PATH.match(path)
        openai_paths = {OPENAI_PATH: OPENAI, OPENAI_IMAGES_PATH: OPENAI_IMAGES, OPENAI_GENERATIONS_PATH: OPENAI_GENERATIONS}
        api = openai_paths.get(path) or (GEMINI if gemini else None)
        try:
            if api == OPENAI_IMAGES:
                body = parse_multipart_form(lowered.get("content-type", ""), raw)
            else:
                body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        authorized = (
            lowered.get("authorization") == f"Bearer {self.openai_key}"
            if api in _OPENAI_APIS
            else lowered.get("x-goog-api-key") == self.gemini_key
        )
        try:
            reply, outcome = self._route(method, api, path, gemini.group("model") if gemini else "", body, raw, authorized)
        except Exception as exc:  # a broken responder must fail the test, not look like a flaky server
            with self._lock:
                self.problems.append(f"{method} {path}: answering raised {exc!r}")
            reply, outcome = _Reply.json({"error": {"message": "test server error"}}, status=500), "server_bug"
        with self._lock:
            self.requests.append(
                RecordedRequest(
                    api=api,
                    method=method,
                    path=path,
                    headers={name: value for name, value in lowered.items() if name not in _SECRET_HEADERS},
                    body=body,
                    authorized=authorized,
                    outcome=outcome,
                    received_at=time.monotonic(),
                )
            )
        if self.latency_s:
            reply.delay_s += self.latency_s
        return reply

    def _route(
        self, method: str, api: str | None, path: str, model: str, body: Any, raw: bytes, authorized: bool
    ) -> tuple[_Reply, str]:
        if api is None or method != "POST":
            with self._lock:
                self.problems.append(f"{method} {path}")
            return _Reply.json({"error": {"message": f"no route for {method} {path}"}}, status=404), "unknown"
        if not isinstance(body, dict):
            what = "a multipart form" if api == OPENAI_IMAGES else "a JSON object"
            with self._lock:
                self.problems.append(f"{method} {path}: body is not {what}")
            return self._error(api, 400, f"request body is not {what}"), "bad_request"
        if not authorized:
            if api in _OPENAI_APIS:
                return self._error(api, 401, "Incorrect API key provided."), "unauthorized"
            return self._error(api, 400, "API key not valid. Please pass a valid API key."), "unauthorized"
        failure = self._take_failure(path, raw)
        model = model if api == GEMINI else str(body.get("model", ""))
        if api in (OPENAI_IMAGES, OPENAI_GENERATIONS) or (api == GEMINI and wire_wants_image(body)):
            return self._route_image(api, model, body, failure)
        if failure is None:
            return self._success(api, model, body, self.responder(body)), "ok"
        kind = failure.response
        if isinstance(kind, int):
            headers = {"Retry-After": failure.retry_after} if failure.retry_after is not None else {}
            return self._error(api, kind, f"injected {kind}", headers, failure.retry_info_s), str(kind)
        if kind == SLOW:
            reply = self._success(api, model, body, self.responder(body))
            reply.delay_s = failure.delay_s
            return reply, kind
        if kind == NOT_JSON:
            html = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
            return _Reply(200, html, {"Content-Type": "text/html; charset=utf-8"}), kind
        if kind == TRUNCATED_BODY:
            full = self._success(api, model, body, self.responder(body))
            return _Reply(200, full.body[: len(full.body) // 2], full.headers), kind
        if kind == MALFORMED_CONTENT:
            text = failure.content
            if text is None:
                answer = self.responder(body)
                text = answer[: len(answer) // 2]
            return self._success(api, model, body, text), kind
        raise ValueError(f"unknown injected failure {kind!r}")

    def _route_image(self, api: str, model: str, body: dict[str, Any], failure: InjectedFailure | None) -> tuple[_Reply, str]:
        """An image request: for an images edit or a Gemini request with an input image, the edit of the first
        uploaded image; for an images generation or a Gemini request without one, the picture of the prompt; or
        the injected failure."""
        images = wire_images(body)
        if api == OPENAI_IMAGES and not images:
            return self._error(api, 400, "an image edit needs an input image"), "bad_request"
        prompt = wire_user_text(body)
        if not prompt.strip():
            return self._error(api, 400, "the prompt is empty"), "bad_request"
        kind = failure.response if failure is not None else None
        if isinstance(kind, int):
            assert failure is not None
            headers = {"Retry-After": failure.retry_after} if failure.retry_after is not None else {}
            return self._error(api, kind, f"injected {kind}", headers, failure.retry_info_s), str(kind)
        if kind == NOT_JSON:
            html = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
            return _Reply(200, html, {"Content-Type": "text/html; charset=utf-8"}), kind
        if kind == NO_IMAGE:
            assert failure is not None
            refusal = failure.content or ("I cannot make this edit." if images else "I cannot make this image.")
            return self._image_success(api, model, body, None, refusal), kind
        made = self.image_editor(images[0][1], prompt) if images else self.image_generator(prompt)
        if kind == MALFORMED_CONTENT:
            assert failure is not None
            cut = base64.b64encode(made[: len(made) // 2]).decode("ascii")
            return self._image_success(api, model, body, failure.content if failure.content is not None else cut, None), kind
        said = ("Here is the edited image." if images else "Here is the image.") if api == GEMINI else None
        reply = self._image_success(api, model, body, made, said)
        if kind == TRUNCATED_BODY:
            return _Reply(200, reply.body[: len(reply.body) // 2], reply.headers), kind
        if kind == SLOW:
            assert failure is not None
            reply.delay_s = failure.delay_s
            return reply, kind
        if kind is not None:
            raise ValueError(f"unknown injected failure {kind!r}")
        return reply, "ok"

    def _image_success(
        self, api: str, model: str, body: dict[str, Any], image: bytes | str | None, text: str | None
    ) -> _Reply:
        """The answer carrying ``image`` (PNG bytes, or the base64 field verbatim; None: no image) and, for Gemini,
        ``text`` (and, with ``gemini_thought_images``, a "thought" draft first: the uploaded image for an edit,
        the picture of the prompt plus " (draft)" for a generation)."""
        text_tokens = _approx_tokens(wire_user_text(body))
        image_tokens = GEMINI_IMAGE_TOKENS * len(wire_images(body))
        prompt_tokens = text_tokens + image_tokens
        output_tokens = (GEMINI_IMAGE_TOKENS if image is not None else 0) + _approx_tokens(text or "")
        encoded = base64.b64encode(image).decode("ascii") if isinstance(image, bytes) else image
        if api in (OPENAI_IMAGES, OPENAI_GENERATIONS):
            return _Reply.json(
                {
                    "created": int(time.time()),
                    "data": [{"b64_json": encoded}] if encoded is not None else [],
                    "output_format": "png",
                    "usage": {
                        "input_tokens": prompt_tokens,
                        "input_tokens_details": {"image_tokens": image_tokens, "text_tokens": text_tokens},
                        "output_tokens": output_tokens,
                        "total_tokens": prompt_tokens + output_tokens,
                    },
                }
            )
        parts: list[dict[str, Any]] = []
        if self.gemini_thought_images:
            uploads = wire_images(body)
            draft_mime, draft = uploads[0] if uploads else ("image/png", self.image_generator(f"{wire_user_text(body)} (draft)"))
            parts += [
                {"text": "Planning the edit.", "thought": True},
                {"inlineData": {"mimeType": draft_mime, "data": base64.b64encode(draft).decode("ascii")}, "thought": True},
            ]
        if text:
            parts.append({"text": text})
        if encoded is not None:
            parts.append({"inlineData": {"mimeType": "image/png", "data": encoded}})
        return _Reply.json(
            {
                "candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {
                    "promptTokenCount": prompt_tokens,
                    "candidatesTokenCount": output_tokens,
                    "totalTokenCount": prompt_tokens + output_tokens,
                },
                "modelVersion": f"{model}{self.model_suffix}",
                "responseId": f"loopback-{next(self._ids)}",
            }
        )

    def _take_failure(self, path: str, raw: bytes) -> InjectedFailure | None:
        text = raw.decode("utf-8", "replace")
        with self._lock:
            for failure in self.failures:
                if failure.path is not None and failure.path != path:
                    continue
                if failure.match is not None and failure.match not in text:
                    continue
                failure.seen += 1
                if failure.seen <= failure.skip:
                    continue
                if failure.times is None or failure.seen <= failure.skip + failure.times:
                    return failure
        return None

    def _error(
        self, api: str, status: int, message: str, headers: Mapping[str, str] | None = None, retry_info_s: float | None = None
    ) -> _Reply:
        phrase = HTTPStatus(status).phrase.upper().replace(" ", "_") if status in HTTPStatus._value2member_map_ else "UNKNOWN"
        if api in _OPENAI_APIS:
            kind = "rate_limit_exceeded" if status == 429 else "server_error" if status >= 500 else "invalid_request_error"
            return _Reply.json({"error": {"message": message, "type": kind, "param": None, "code": None}}, status, headers)
        google_status = {400: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
        error: dict[str, Any] = {"code": status, "message": message, "status": google_status.get(status, phrase)}
        if retry_info_s is not None:
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_info_s:g}s"}]
        payload = {"error": error}
        return _Reply.json(payload, status, headers)

    def _success(self, api: str, model: str, body: dict[str, Any], text: str) -> _Reply:
        prompt_tokens = _approx_tokens(wire_system(body) + wire_user_text(body)) + GEMINI_IMAGE_TOKENS * len(wire_images(body))
        completion_tokens = max(1, _approx_tokens(text))
        reported = f"{model}{self.model_suffix}"
        if api == OPENAI:
            return _Reply.json(
                {
                    "id": f"chatcmpl-loopback-{next(self._ids)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": reported,
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None, "finish_reason": "stop"}
                    ],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "total_tokens": prompt_tokens + completion_tokens,
                    },
                }
            )
        return _Reply.json(
            {
                "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {
                    "promptTokenCount": prompt_tokens,
                    "candidatesTokenCount": completion_tokens,
                    "totalTokenCount": prompt_tokens + completion_tokens,
                },
                "modelVersion": reported,
                "responseId": f"loopback-{next(self._ids)}",
            }
        )


def outcomes(requests: Sequence[RecordedRequest]) -> list[str]:
    """The ``outcome`` of each request, for compact assertions."""
    return [request.outcome for request in requests]


def client_settings(sleeps: list[float] | None = None, **changes: object) -> dict[str, object]:
    """Transport keywords for a provider or editor under test: a short timeout and backoff and, with ``sleeps``,
    backoff waits recorded there instead of slept; ``changes`` override or add keywords."""
    settings: dict[str, object] = {"timeout_s": 5.0, "backoff_s": 0.01, "max_backoff_s": 5.0}
    if sleeps is not None:
        settings["sleep"] = sleeps.append
    return {**settings, **changes}
