"""The offline answers to the CritiqueCanvas chain's schemas (``plan``, ``dialogue``, ``paragraphs``,
``verdicts``, ``pair_verdict``), from measurements of the image itself (``heuristic_critic``).

Why: the demo and the tests run the whole chain with no key and no network, through the same call layer as the
remote providers. The answers read the structured inputs the prompt was rendered from (``request.context``:
domain, plan, dialogue, pair), so they depend only on the image and those inputs, never on wording.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from assets.core.logic.image_measures import ImageMeasures, measure
from assets.critique_canvas.logic import heuristic_critic
from assets.critique_canvas.logic.answers import DOMAINS
from resources.models.heuristic import AnswerCache, OfflineAnswer, Refusal, opened_image, required_image
from resources.models.types import ModelRequest
from warehouse.ids import sha256_hex


class Measurements:
    """Measurements of request images, cached by sha256: the three roles of one image share them."""

    def __init__(self) -> None:
        self._cache: AnswerCache[str, ImageMeasures] = AnswerCache()

    def measures_for(self, image: bytes) -> ImageMeasures:
        """Measurements of the encoded image."""
        return self._cache.get(sha256_hex(image), partial(_measured, image))


def _measured(image: bytes) -> ImageMeasures:
    with opened_image(image) as decoded:
        return measure(decoded)


def critique_offline_answers() -> dict[str, OfflineAnswer]:
    """The chain's schemas, sharing one measurement cache."""
    measurements = Measurements()
    return {schema: partial(_answer, measurements, schema)
            for schema in ("plan", "dialogue", "paragraphs", "verdicts", "pair_verdict")}


def _answer(measurements: Measurements, schema: str, request: ModelRequest) -> dict[str, Any]:
    image = required_image(request)
    context = request.context or {}
    domain = context.get("domain")
    if domain not in DOMAINS:
        raise Refusal(f"request.context domain is {domain!r}; expected one of {', '.join(DOMAINS)}")
    measures = measurements.measures_for(image)
    if schema == "plan":
        return heuristic_critic.plan(measures, domain)
    if schema == "dialogue":
        return heuristic_critic.dialogue(measures, domain, _as_mapping(context.get("plan")))
    if schema == "paragraphs":
        count = context.get("count")
        if not isinstance(count, int) or count < 1:
            raise Refusal("a paragraphs request needs how many to write in request.context['count']")
        return heuristic_critic.paragraphs(measures, domain, _as_mapping(context.get("plan")), count)
    if schema == "pair_verdict":
        pair = _as_mapping(context.get("pair"))
        if pair is None:
            raise Refusal("a pair_verdict request needs the pair to judge in request.context['pair']")
        return heuristic_critic.pair_verdict(measures, domain, pair)
    dialogue = _as_mapping(context.get("dialogue"))
    if dialogue is None or not isinstance(dialogue.get("pairs"), list):
        raise Refusal("a verdicts request needs the dialogue to judge in request.context['dialogue']")
    return heuristic_critic.verdicts(measures, domain, dialogue)


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    """Context values are plain dicts, or the typed Plan / Dialogue values, which convert themselves."""
    if value is None or isinstance(value, Mapping):
        return value
    as_dict = getattr(value, "as_dict", None)
    return as_dict() if callable(as_dict) else None
