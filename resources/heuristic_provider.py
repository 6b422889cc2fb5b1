"""The offline ``heuristic`` provider: answers every CritiqueCanvas role from measurements of the image itself.

Why: the demo and the tests must run the whole chain with no key and no network, through the same call layer
(cache, logging, validation) as the remote providers. It ignores the prompt text and reads the structured inputs
the prompt was rendered from (``request.context``: domain, plan, dialogue), so its answers depend only on the
image and those inputs, never on wording.
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from PIL import Image, UnidentifiedImageError

from assets.lib import heuristic_critic
from assets.lib.critique_schema import DOMAINS
from assets.lib.image_measures import ImageMeasures, measure
from resources.model_providers import INVALID_RESPONSE, OK, ModelRequest, ModelResponse
from warehouse.ids import sha256_hex

_ROLE_SCHEMA = {"planner": "plan", "annotator": "dialogue", "verifier": "verdicts", "repair": None}
_CACHE_SIZE = 1024


class _Refusal(Exception):
    """A request this provider cannot answer; the message becomes the response's error."""


class HeuristicProvider:
    name = "heuristic"

    def __init__(self, model: str = "heuristic-v1") -> None:
        self.model = model
        # The three roles of one image arrive one after another, often from concurrent workers: measure once.
        self._measures: OrderedDict[str, ImageMeasures] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HeuristicProvider(model={self.model!r})"

    def complete(self, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        try:
            text = json.dumps(self._answer(request), ensure_ascii=False)
        except _Refusal as exc:
            return self._response("", INVALID_RESPONSE, str(exc), started)
        return self._response(text, OK, None, started)

    def measures_for(self, image: bytes) -> ImageMeasures:
        """Measurements of the encoded image, cached by its sha256 for the life of this provider."""
        digest = sha256_hex(image)
        with self._lock:
            if digest in self._measures:
                self._measures.move_to_end(digest)
                return self._measures[digest]
        try:
            with Image.open(io.BytesIO(image)) as decoded:
                measured = measure(decoded)
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
            raise _Refusal(f"the request image could not be decoded: {exc}") from None
        with self._lock:
            self._measures[digest] = measured
            while len(self._measures) > _CACHE_SIZE:
                self._measures.popitem(last=False)
        return measured

    def _answer(self, request: ModelRequest) -> dict[str, Any]:
        if request.role not in _ROLE_SCHEMA:
            raise _Refusal(f"unknown role {request.role!r}; the heuristic provider answers "
                           f"{', '.join(_ROLE_SCHEMA)}")
        schema = request.schema_name or _ROLE_SCHEMA[request.role]
        if schema not in ("plan", "dialogue", "verdicts"):
            raise _Refusal(f"role {request.role!r} with schema {schema!r}: expected schema plan, dialogue or verdicts")
        if not request.image:
            raise _Refusal("the heuristic provider needs the image: the request carries none")
        context = request.context or {}
        domain = context.get("domain")
        if domain not in DOMAINS:
            raise _Refusal(f"request.context domain is {domain!r}; expected one of {', '.join(DOMAINS)}")
        measures = self.measures_for(request.image)
        if schema == "plan":
            return heuristic_critic.plan(measures, domain)
        if schema == "dialogue":
            return heuristic_critic.dialogue(measures, domain, _as_mapping(context.get("plan")))
        dialogue = _as_mapping(context.get("dialogue"))
        if dialogue is None or not isinstance(dialogue.get("pairs"), list):
            raise _Refusal("a verdicts request needs the dialogue to judge in request.context['dialogue']")
        return heuristic_critic.verdicts(measures, domain, dialogue)

    def _response(self, text: str, status: str, error: str | None, started: float) -> ModelResponse:
        return ModelResponse(text=text, input_tokens=None, output_tokens=None,
                             finish_reason="stop" if status == OK else None,
                             latency_ms=(time.perf_counter() - started) * 1000.0, attempts=1, status=status, error=error,
                             provider_model=self.model)


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    """Context values are plain dicts, or the typed Plan / Dialogue values, which convert themselves."""
    if value is None or isinstance(value, Mapping):
        return value
    as_dict = getattr(value, "as_dict", None)
    return as_dict() if callable(as_dict) else None
