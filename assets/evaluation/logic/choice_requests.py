"""The requests that ask a model under test about the closed-answer benchmarks, under each prompt condition.

- ContextCanvas and its counterfactual pairs (``000_*`` S2.2.2, S2.4.1): the case's scenario, question and options,
  the answer asked as one JSON object (option id, reason, confidence; only the id is graded), deterministic
  decoding, at most 256 new tokens. Conditions (Table S9): ``image`` (the case's image, several as one labelled
  contact sheet), ``text_only`` (question and options alone), ``neutral`` (an identity- and verdict-free
  description of the visible content instead of the image) and ``evidence`` (the description with the decisive
  cue made explicit). A counterfactual pair is asked twice, call 0 showing the original and call 1 the edit.
- AesEval (``003_*`` §5.1): the release's question with the design's JSON metadata and its render; the input
  ablations drop the image (``no_image``), the indicator's explanation (``no_explanation``) or the metadata
  (``no_metadata``).
- The poem benchmark (``001_*`` §5): the rubric-conditioned judge prompt of the poetry pipeline, unchanged, so a
  model is judged here exactly as the pipeline's own judge asks.

A condition that needs what an item lacks (a description, an explanation to drop) does not apply to it: the item
is left out of that condition's scores, with the reason, rather than counted wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from assets.context_canvas.logic.case_records import CaseOption
from assets.core.model_calls import CallSettings
from assets.core.templates import render
from assets.evaluation.logic.aeseval_answers import has_explanation, strip_explanation
from assets.evaluation.logic.benchmark_items import BenchmarkItem
from assets.evaluation.logic.critique_requests import EVALUATION_PROMPTS, CandidateCall
from assets.evaluation.logic.grounding import CORRECT_IMAGE, TEXT_ONLY
from assets.poetry.logic.poems import Poem
from assets.poetry.logic.rubric_judge import build_judge_request, load_judge_template
from resources.models.types import ModelRequest

CONTEXT_SCHEMA = "evaluation_context_choice"
AESEVAL_SCHEMA = "evaluation_aeseval_answer"
CHOICE_TOKENS = 256  # AesCanvas S2.4.1: deterministic decoding, at most 256 new tokens (used for AesEval too)
POEM_JUDGE_TOKENS = 1024  # ten dimensions, each an option and a one-line reason
CONTEXT_ANSWER_SHAPE: Mapping[str, Any] = {
    "type": "object", "required": ["answer", "reason", "confidence"], "additionalProperties": False,
    "properties": {"answer": {"type": "string"}, "reason": {"type": "string"},
                   "confidence": {"type": "string", "enum": ["low", "medium", "high"]}}}

IMAGE, TEXT, NEUTRAL, EVIDENCE = "image", "text_only", "neutral", "evidence"
FULL, NO_IMAGE, NO_EXPLANATION, NO_METADATA = "full", "no_image", "no_explanation", "no_metadata"
RUBRIC = "rubric"
CONDITIONS: Mapping[str, tuple[str, ...]] = {
    "context_canvas": (IMAGE, TEXT, NEUTRAL, EVIDENCE),
    "counterfactual": (IMAGE,),
    "aeseval": (FULL, NO_IMAGE, NO_EXPLANATION, NO_METADATA),
    "poem_benchmark": (RUBRIC,),
}
"""Each closed-answer benchmark's prompt conditions, its primary one first."""
DESCRIPTION_FIELD = {NEUTRAL: "neutral_description", EVIDENCE: "evidence_description"}
NO_DESCRIPTION = "no_description"
NO_EXPLANATION_MARKER = "no_explanation_marker"

_VISUAL = {
    IMAGE: ("Look at the attached image, then make the judgement.", ""),
    TEXT: ("No image is given: judge from the text alone.", ""),
    NEUTRAL: ("No image is given: a description of what it shows stands in for it.", "Description of the visual: {}"),
    EVIDENCE: ("No image is given: a description of what it shows stands in for it.", "Description of the visual: {}"),
}


def choice_call(benchmark: str, condition: str) -> CandidateCall:
    """The template and budget of ``condition`` (KeyError naming the known conditions)."""
    known = CONDITIONS[benchmark]
    if condition not in known:
        raise KeyError(f"{benchmark} has no condition {condition!r}; conditions: {', '.join(known)}")
    if benchmark == "poem_benchmark":
        return CandidateCall(load_judge_template(), POEM_JUDGE_TOKENS, 1, 0.0, None, None)
    shown = TEXT_ONLY if condition in (TEXT, NEUTRAL, EVIDENCE, NO_IMAGE) else CORRECT_IMAGE
    if benchmark == "aeseval":
        return CandidateCall(EVALUATION_PROMPTS.load("aeseval_answer_v1"), CHOICE_TOKENS, 1, 0.0, None, None, control=shown)
    samples = 2 if benchmark == "counterfactual" else 1  # call 0: the original, call 1: the edit
    return CandidateCall(EVALUATION_PROMPTS.load("context_canvas_choice_v1"), CHOICE_TOKENS, samples, 0.0, None, None,
                         control=shown)


def condition_problem(benchmark: str, condition: str, item: BenchmarkItem) -> tuple[str, str] | None:
    """(reason code, detail) when ``condition`` does not apply to ``item``; None when it does."""
    if condition in DESCRIPTION_FIELD and not (item.fields.get(DESCRIPTION_FIELD[condition]) or "").strip():
        return NO_DESCRIPTION, f"the case has no {DESCRIPTION_FIELD[condition]}, which the {condition} condition shows"
    if benchmark == "aeseval" and condition == NO_EXPLANATION and not has_explanation(item.fields["question"]):
        return NO_EXPLANATION_MARKER, "the question has no indicator explanation to leave out"
    return None


def options_of(item: BenchmarkItem) -> list[CaseOption]:
    """The item's options as (id, text) pairs."""
    return [CaseOption(o["id"], o["text"]) for o in item.fields.get("options") or []]


def choice_request(call: CandidateCall, benchmark: str, condition: str, item: BenchmarkItem, index: int,
                   image: bytes | None, mime: str | None, image_sha256: str | None, model: str) -> ModelRequest:
    """Call ``index`` of ``item`` under ``condition``, showing ``image`` (None under the conditions without one)."""
    if benchmark == "poem_benchmark":
        return _poem_request(item, image, mime, model)
    if benchmark == "aeseval":
        values, schema, context = _aeseval_values(item, condition, image is not None)
    else:
        values, schema, context = _context_values(item, condition)
    system, user = render(call.template, **values)
    return ModelRequest(role="candidate", model=model, system=system, user=user, image=image, image_mime=mime,
                        json_schema=CONTEXT_ANSWER_SHAPE if schema == CONTEXT_SCHEMA else None, schema_name=schema,
                        temperature=call.temperature, max_output_tokens=call.max_output_tokens, top_p=call.top_p,
                        seed=call.seed, template_id=call.template.id, template_version=call.template.version,
                        context={**context, "item": item.id, "sample": index, "condition": condition,
                                 "image_sha256": image_sha256})


def _context_values(item: BenchmarkItem, condition: str) -> tuple[dict[str, str], str, dict[str, Any]]:
    instruction, block = _VISUAL[condition]
    description = (item.fields.get(DESCRIPTION_FIELD[condition]) or "").strip() if condition in DESCRIPTION_FIELD else ""
    proposed = (item.fields.get("proposed_assessment") or "").strip()
    options = options_of(item)
    values = {"visual_instruction": instruction, "visual_block": block.format(description) if block else "",
              "scenario": item.fields["scenario"], "proposed_block": f"Proposed assessment: {proposed}\n" if proposed else "",
              "question": item.fields["question"], "options": "\n".join(f"{o.option_id}. {o.text}" for o in options)}
    context = {"scenario": item.fields["scenario"] + (f" {proposed}" if proposed else ""), "question": item.fields["question"],
               "options": [[o.option_id, o.text] for o in options], "description": description or None}
    return values, CONTEXT_SCHEMA, context


def _aeseval_values(item: BenchmarkItem, condition: str, with_image: bool) -> tuple[dict[str, str], str, dict[str, Any]]:
    question = item.fields["question"]
    if condition == NO_EXPLANATION:
        question = strip_explanation(question)
    metadata = "" if condition == NO_METADATA else item.fields["metadata"]
    image_line = ("The design is attached as an image." if with_image
                  else "No image of the design is given; judge from its elements as JSON.")
    metadata_block = (f"The design's elements as JSON (canvas size in pixels; each element's position, size, type,"
                      f" colour and text):\n{metadata}\n" if metadata else "")
    values = {"image_line": image_line, "metadata_block": metadata_block, "question": question}
    context = {"format": item.fields["format"], "indicator": item.fields["indicator"], "metadata": metadata,
               "options": [o["text"] for o in item.fields.get("options") or []], "box_units": item.fields["box_units"]}
    return values, AESEVAL_SCHEMA, context


def _poem_request(item: BenchmarkItem, image: bytes | None, mime: str | None, model: str) -> ModelRequest:
    f = item.fields
    poem = Poem(poem_id=f["poem_id"], title=f["title"], author=f["author"], text=f["text"], translation=f.get("translation"),
                themes=(), form=None, source=None, locator=f"release:{f['poem_id']}")
    return build_judge_request(poem, image or b"", mime or "image/png", item.id, CallSettings(model, 0.0, POEM_JUDGE_TOKENS))


def answer_reason(text: str) -> str | None:
    """The reason a JSON answer gives (kept for the grounding audit; it never changes the grade)."""
    try:
        decoded = json.loads(text.strip())
    except ValueError:
        return None
    reason = decoded.get("reason") if isinstance(decoded, dict) else None
    return reason.strip() if isinstance(reason, str) and reason.strip() else None
