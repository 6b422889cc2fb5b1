"""The offline ``heuristic`` provider: a dispatcher from schema name to the answer function a pipeline gives it.

Why: the demo and the tests must run every model step with no key and no network, through the same call layer
(cache, logging, validation) as the remote providers. What to answer is the pipeline's business (it owns the
schema), so this provider knows no pipeline: each asset that asks for a provider passes its pipeline's
``OfflineAnswers``, and a request whose schema is not among them is refused. An answer function reads the
structured inputs the prompt was rendered from (``request.context``) and the image, never the prompt's wording,
and raises ``Refusal`` rather than invent an answer; the provider returns the refusal as ``invalid_response``.
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from PIL import Image, UnidentifiedImageError

from resources.models.types import EVALUATION_ROLES, INVALID_RESPONSE, OK, ROLES, ModelRequest, ModelResponse

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

OfflineAnswer = Callable[[ModelRequest], Mapping[str, Any]]
"""The JSON answer to one request of a schema, or a ``Refusal``."""
OfflineAnswers = Callable[[], Mapping[str, OfflineAnswer]]
"""A pipeline's answer set: called once per provider, so that the functions it returns may share caches."""

_ANSWERED_ROLES = (*ROLES, "repair", *EVALUATION_ROLES)
_CACHE_SIZE = 1024


class Refusal(Exception):
    """A request an answer function cannot answer; the message becomes the response's error."""


class HeuristicProvider:
    """Answers each request with ``answers[request.schema_name]`` (repairs carry their original's schema, so they
    get the same answer)."""

    name = "heuristic"

    def __init__(self, answers: Mapping[str, OfflineAnswer], model: str = "heuristic-v1") -> None:
        self.model = model
        self.answers = dict(answers)

    def __repr__(self) -> str:
        return f"HeuristicProvider(model={self.model!r})"

    def complete(self, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        try:
            text = json.dumps(self._answer(request), ensure_ascii=False)
        except Refusal as exc:
            return self._response("", INVALID_RESPONSE, str(exc), started)
        return self._response(text, OK, None, started)

    def _answer(self, request: ModelRequest) -> Mapping[str, Any]:
        if request.role not in _ANSWERED_ROLES:
            raise Refusal(f"unknown role {request.role!r}; the heuristic provider answers {', '.join(_ANSWERED_ROLES)}")
        answer = self.answers.get(request.schema_name or "")
        if answer is None:
            raise Refusal(f"role {request.role!r} with schema {request.schema_name!r}: expected schema "
                          f"{_alternatives(list(self.answers))}")
        return answer(request)

    def _response(self, text: str, status: str, error: str | None, started: float) -> ModelResponse:
        return ModelResponse(text=text, input_tokens=None, output_tokens=None,
                             finish_reason="stop" if status == OK else None,
                             latency_ms=(time.perf_counter() - started) * 1000.0, attempts=1, status=status, error=error,
                             provider_model=self.model)


def _alternatives(names: list[str]) -> str:
    """``a, b or c``."""
    return " or ".join(filter(None, (", ".join(names[:-1]), names[-1]))) if names else "(none given)"


class AnswerCache(Generic[K, V]):
    """The last 1,024 values an answer function computed, by key, for the life of its answer set: the requests of
    one item's roles arrive one after another, often from concurrent workers, so they share one computation."""

    def __init__(self) -> None:
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, compute: Callable[[], V]) -> V:
        """The cached value of ``key``, else ``compute()`` (not under the lock, so a slow one blocks no other key)."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = compute()
        with self._lock:
            self._values[key] = value
            while len(self._values) > _CACHE_SIZE:
                self._values.popitem(last=False)
        return value


def required_image(request: ModelRequest) -> bytes:
    """The request's encoded image, which the heuristic answers are measured from."""
    if not request.image:
        raise Refusal("the heuristic provider needs the image: the request carries none")
    return request.image


@contextmanager
def opened_image(data: bytes) -> Iterator[Image.Image]:
    """The encoded image, opened; a decoding error within the block (Pillow decodes lazily) is a ``Refusal``."""
    try:
        with Image.open(io.BytesIO(data)) as decoded:
            yield decoded
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise Refusal(f"the request image could not be decoded: {exc}") from None
