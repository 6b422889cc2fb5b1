"""The offline answer to the poem rubric judge (``poem_rubric_scores``), from measurements of the illustration.

Why: the demo and the tests judge illustrations with no key and no network. Technical quality and style come
from the image's pixels (``rubric_judge.heuristic_judgement``); every dimension pixels cannot tell is null.
"""

from __future__ import annotations

from typing import Any

from assets.poetry.logic.rubric_judge import JUDGE_SCHEMA_NAME, heuristic_judgement
from resources.models.heuristic import OfflineAnswer, Refusal, opened_image, required_image
from resources.models.types import ModelRequest


def poem_offline_answers() -> dict[str, OfflineAnswer]:
    """The judge's one schema."""
    return {JUDGE_SCHEMA_NAME: _poem_judgement}


def _poem_judgement(request: ModelRequest) -> dict[str, Any]:
    image = required_image(request)
    poem_text = (request.context or {}).get("poem_text")
    if not isinstance(poem_text, str):
        raise Refusal("a poem judgement request needs the poem in request.context['poem_text']")
    with opened_image(image) as decoded:
        return heuristic_judgement(decoded.convert("RGB"), poem_text)
