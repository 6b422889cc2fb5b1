"""The offline answer to ContextCanvas's text-only probe (``context_text_only``): the word-overlap shortcut
detector (``shortcuts.text_only_guess``) over the case's wording.

Why: the demo and the tests run the probe with no key and no network; the answer is computed from the scenario,
question and options in ``request.context``, never from the prompt's wording.
"""

from __future__ import annotations

from typing import Any

from assets.context_canvas.logic.case_records import CaseOption
from assets.context_canvas.logic.shortcuts import text_only_guess
from assets.context_canvas.logic.text_only import TEXT_ONLY_SCHEMA_NAME
from resources.models.heuristic import OfflineAnswer, Refusal
from resources.models.types import ModelRequest


def context_offline_answers() -> dict[str, OfflineAnswer]:
    """The probe's one schema."""
    return {TEXT_ONLY_SCHEMA_NAME: _text_only_answer}


def _text_only_answer(request: ModelRequest) -> dict[str, Any]:
    context = request.context or {}
    options = context.get("options")
    if not isinstance(options, list) or not options:
        raise Refusal("a text-only request needs the case's options in request.context['options']")
    scenario = f"{context.get('scenario', '')} {context.get('proposed_assessment', '')}"
    choice = text_only_guess(scenario, str(context.get("question", "")),
                             [CaseOption(str(o["option_id"]), str(o["text"])) for o in options])
    return {"answer": choice, "reason": "the option sharing the most words with the scenario and question (ties: the"
            " longer option), read without the image"}
