"""The requests that ask a model under test for its critiques, and how its answers are read.

A critique is free text: no JSON schema is sent, so a model answers as it would any user (the papers' protocol).
The schema name only tells the offline provider which answer function to use. An answer is taken as it came,
whitespace trimmed; an empty one is invalid (the call layer asks once more, then the item keeps its reason).
A JSON object with a ``critique`` field (what the offline critic returns) is read as that field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assets.core.templates import PromptFolder, PromptTemplate, render
from assets.evaluation.logic.benchmark_items import BenchmarkItem
from assets.evaluation.logic.photocritique_conditions import DECODING
from assets.evaluation.logic.photocritique_conditions import condition as photocritique_condition
from resources.models.types import ModelRequest

EVALUATION_PROMPTS = PromptFolder("assets.evaluation.prompts", "evaluation")
CRITIQUE_SCHEMA = "evaluation_critique"
CRITIQUE_CANVAS_CONDITION = "instruction"  # the release's instruction as the user turn, nothing added
CRITIQUE_CANVAS_TOKENS = 256  # AesCanvas S2.4.1: deterministic decoding, at most 256 new tokens


@dataclass(frozen=True)
class CandidateCall:
    """What one benchmark asks of a model under one condition: its template, token budget and answers per item."""

    template: PromptTemplate
    max_output_tokens: int
    samples: int
    temperature: float
    top_p: float | None
    seed: int | None  # of sample 0; sample k uses seed + k (so a post's three critiques can differ)

    def decoding(self) -> dict:
        """As an evaluation run records it."""
        return {"template": f"{self.template.id}@{self.template.sha256[:12]}", "max_output_tokens": self.max_output_tokens,
                "samples": self.samples, "temperature": self.temperature, "top_p": self.top_p, "seed": self.seed}


def candidate_call(benchmark: str, condition_name: str) -> CandidateCall:
    """The benchmark's template and budget for ``condition_name`` (KeyError naming the known ones)."""
    if benchmark == "photocritique":
        cond = photocritique_condition(condition_name)
        if cond.passes != "single":
            raise KeyError(f"photocritique condition {condition_name!r} asks three critiques in one answer; only"
                           " single-pass conditions are run so far")
        return CandidateCall(EVALUATION_PROMPTS.load(cond.template), cond.max_new_tokens, cond.calls_per_post,
                             DECODING.temperature, DECODING.top_p, DECODING.seed)
    if benchmark == "critique_canvas":
        if condition_name != CRITIQUE_CANVAS_CONDITION:
            raise KeyError(f"critique_canvas has one condition, {CRITIQUE_CANVAS_CONDITION!r}, not {condition_name!r}")
        return CandidateCall(EVALUATION_PROMPTS.load("critique_canvas_answer_v1"), CRITIQUE_CANVAS_TOKENS, 1, 0.0, None, None)
    raise KeyError(f"no candidate prompt for benchmark {benchmark!r}")


def critique_request(call: CandidateCall, item: BenchmarkItem, sample: int, image: bytes, mime: str, role: str,
                     model: str) -> ModelRequest:
    """One request for sample ``sample`` of an item, asked of the provider layer's ``role`` (the sample is in the
    context, so identical prompts for different samples are different requests, cached apart)."""
    values = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in item.fields.items()}
    system, user = render(call.template, **values)
    return ModelRequest(role=role, model=model, system=system, user=user, image=image, image_mime=mime,
                        json_schema=None, schema_name=CRITIQUE_SCHEMA, temperature=call.temperature,
                        max_output_tokens=call.max_output_tokens, top_p=call.top_p,
                        seed=None if call.seed is None else call.seed + sample, template_id=call.template.id,
                        template_version=call.template.version,
                        context={"item": item.id, "sample": sample, "image_sha256": item.images[0].sha256})


def parse_critique(text: str) -> str:
    """The critique in an answer; ValueError for an empty one."""
    answer = text.strip()
    if answer.startswith("{"):
        try:
            decoded: Any = json.loads(answer)
        except ValueError:
            decoded = None
        if isinstance(decoded, Mapping) and isinstance(decoded.get("critique"), str):
            answer = decoded["critique"].strip()
    if not answer:
        raise ValueError("the answer is empty")
    return answer
