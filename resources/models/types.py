"""What every model provider takes and returns, and the statuses a call can end in.

Why here, apart from the providers: the stages' pure logic builds ``ModelRequest``s and the call layer caches
``ModelResponse``s, and neither should import Dagster or a vendor SDK to do so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

OK = "ok"
HTTP_ERROR = "http_error"
TIMEOUT = "timeout"
CONNECTION_ERROR = "connection_error"
INVALID_RESPONSE = "invalid_response"

DEFAULT_TIMEOUT_S = 180.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_BACKOFF_S = 1.0
DEFAULT_MAX_BACKOFF_S = 60.0
ROLES = ("planner", "annotator", "verifier")
EVALUATION_ROLES = ("candidate", "judge")
"""What an evaluation request is: an answer of the model under test, or a judgement of answers."""


@dataclass(frozen=True)
class ModelRequest:
    """One model call, fully described (the call layer hashes it for the cache); ``context`` holds the
    structured inputs the prompt was rendered from, for offline providers, and is never sent to remote APIs."""

    role: str
    model: str
    system: str
    user: str
    image: bytes | None
    image_mime: str | None
    json_schema: dict | None
    schema_name: str | None
    temperature: float = 0.2
    max_output_tokens: int = 2048
    top_p: float | None = None  # nucleus sampling; None: the provider's default (and not part of the cache key)
    seed: int | None = None  # sampling seed where the provider takes one; None: none sent
    template_id: str = ""
    template_version: str = ""
    context: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelResponse:
    """What came back; ``status`` other than ``OK`` means ``text`` is empty and ``error`` says why.
    ``latency_ms`` covers the whole call, retries and waits included."""

    text: str
    input_tokens: int | None
    output_tokens: int | None
    finish_reason: str | None
    latency_ms: float
    attempts: int
    status: str
    error: str | None
    provider_model: str | None


class ModelProvider(Protocol):
    name: str

    def complete(self, request: ModelRequest) -> ModelResponse: ...
