"""The text-only shortcut probe (ContextCanvas anti-shortcut validity): each case asked without its image(s).

Why: a case should need its image. If a model answers well from the scenario, question and options alone, the
wording gives the answer away. The request goes through the provider layer like any other call (cached, logged,
one repair); the offline ``heuristic`` provider answers it with ``context_shortcuts.text_only_guess``, a word-
overlap and length detector computed from the same text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from assets.context_canvas.logic.case_records import ContextCase
from assets.core.templates import PromptFolder, render
from assets.core.logic.json_answers import SchemaError, extract_json_object
from assets.core.model_calls import CallSettings
from assets.core.model_calls import schema_repair_request
from resources.models.types import ModelRequest

TEXT_ONLY_SCHEMA_NAME = "context_text_only"
CONTEXT_PROMPTS = PromptFolder("assets.context_canvas.prompts", "context")
TEMPLATE_NAME = "text_only_v1"
TEXT_ONLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "reason": {"type": "string"}},
    "required": ["answer", "reason"],
    "additionalProperties": False,
}


class TextOnlyAnswerError(ValueError):
    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(detail)
        self.reason_code = reason_code


def build_text_only_request(case: ContextCase, settings: CallSettings) -> ModelRequest:
    """The case's model input without its images. ``context`` carries the same text for offline providers."""
    template = CONTEXT_PROMPTS.load(TEMPLATE_NAME)
    options = "\n".join(f"{o.option_id}: {o.text}" for o in case.options)
    proposed = f"Proposed assessment to evaluate: {case.proposed_assessment}" if case.proposed_assessment else ""
    system, user = render(template, scenario=case.scenario, question=case.question, options=options,
                          proposed_assessment=proposed)
    context = {"schema": TEXT_ONLY_SCHEMA_NAME, "case_id": case.case_id, "scenario": case.scenario,
               "proposed_assessment": case.proposed_assessment or "", "question": case.question,
               "options": [o.to_dict() for o in case.options]}
    return ModelRequest(role=template.role, model=settings.model, system=system, user=user, image=None, image_mime=None,
                        json_schema=TEXT_ONLY_SCHEMA, schema_name=TEXT_ONLY_SCHEMA_NAME, temperature=settings.temperature,
                        max_output_tokens=settings.max_output_tokens, template_id=template.id,
                        template_version=template.version, context=context)


def repair_request(original: ModelRequest, invalid_answer: str, problem: str) -> ModelRequest:
    """The shared repair prompt for a text-only answer: same model and schema, still no image."""
    return schema_repair_request(original, invalid_answer, problem, TEXT_ONLY_SCHEMA)


def answer_parser(case: ContextCase) -> Callable[[str], str]:
    """A parser returning the option id the answer names (case-insensitive); anything else is invalid."""

    def parse(text: str) -> str:
        try:
            obj = extract_json_object(text)
        except SchemaError as exc:
            raise TextOnlyAnswerError("invalid_json", exc.detail) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("answer"), str):
            raise TextOnlyAnswerError("missing_field", "the answer needs a text field 'answer'")
        option = case.resolve_answer(obj["answer"])
        if option is None:
            raise TextOnlyAnswerError("invalid_option", f"answer {obj['answer'][:40]!r} is not one of {', '.join(case.option_ids)}")
        return option

    return parse
