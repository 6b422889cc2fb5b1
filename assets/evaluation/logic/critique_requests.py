"""The requests that ask a model under test for its critiques, and how its answers are read.

A critique is free text: no JSON schema is sent, so a model answers as it would any user (the papers' protocol).
The schema name only tells the offline provider which answer function to use. An answer is taken as it came,
whitespace trimmed; an empty one is invalid (the call layer asks once more, then the item keeps its reason).
A JSON object with a ``critique`` field (what the offline critic returns) is read as that field. A multi-pass
condition asks all of an item's critiques in one call and reads them with ``parse_multi_critiques``.

A condition may name an image-grounding control after a ``+`` (``capped_plain+shuffled_image``,
``capped_plain+text_only``): the same prompt, shown another item's image or none (``logic/grounding.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from assets.core.templates import PromptFolder, PromptTemplate, render
from assets.evaluation.logic.benchmark_items import BenchmarkItem
from assets.evaluation.logic.grounding import CORRECT_IMAGE, GROUNDING_CONTROLS
from assets.evaluation.logic.multi_critiques import CRITIQUES_KEY, parse_multi_critiques
from assets.evaluation.logic.photocritique_conditions import CRITIQUES_PER_POST, DECODING, MULTI
from assets.evaluation.logic.photocritique_conditions import condition as photocritique_condition
from resources.models.types import ModelRequest

EVALUATION_PROMPTS = PromptFolder("assets.evaluation.prompts", "evaluation")
CRITIQUE_SCHEMA = "evaluation_critique"
CRITIQUES_SCHEMA = "evaluation_critiques"  # a multi-pass answer: {"critiques": [...]}
CRITIQUE_CANVAS_CONDITION = "instruction"  # the release's instruction as the user turn, nothing added
CRITIQUE_CANVAS_TOKENS = 256  # AesCanvas S2.4.1: deterministic decoding, at most 256 new tokens


@dataclass(frozen=True)
class CandidateCall:
    """What one benchmark asks of a model under one condition: its template, token budget and answers per item."""

    template: PromptTemplate
    max_output_tokens: int
    samples: int      # answers per item
    temperature: float
    top_p: float | None
    seed: int | None  # of call 0; call k uses seed + k (so a post's three single-pass critiques can differ)
    multi_pass: bool = False  # all ``samples`` answers in one call
    control: str = CORRECT_IMAGE  # which image the model is shown (logic/grounding.py)

    @property
    def calls_per_item(self) -> int:
        return 1 if self.multi_pass else self.samples

    def decoding(self) -> dict:
        """As an evaluation run records it."""
        return {"template": f"{self.template.id}@{self.template.sha256[:12]}", "max_output_tokens": self.max_output_tokens,
                "samples": self.samples, "calls_per_item": self.calls_per_item, "temperature": self.temperature,
                "top_p": self.top_p, "seed": self.seed, "control": self.control}


def candidate_call(benchmark: str, condition_name: str) -> CandidateCall:
    """The benchmark's template and budget for ``condition_name`` (``<condition>[+<control>]``; KeyError naming
    the known ones)."""
    base, _, control = condition_name.partition("+")
    control = control or CORRECT_IMAGE
    if control not in GROUNDING_CONTROLS:
        raise KeyError(f"no image control {control!r} (in {condition_name!r}); known: {', '.join(GROUNDING_CONTROLS)}")
    if benchmark == "photocritique":
        cond = photocritique_condition(base)
        return CandidateCall(EVALUATION_PROMPTS.load(cond.template), cond.max_new_tokens, CRITIQUES_PER_POST,
                             DECODING.temperature, DECODING.top_p, DECODING.seed, cond.passes == MULTI, control)
    if benchmark == "critique_canvas":
        if base != CRITIQUE_CANVAS_CONDITION:
            raise KeyError(f"critique_canvas has one condition, {CRITIQUE_CANVAS_CONDITION!r}, not {base!r}")
        return CandidateCall(EVALUATION_PROMPTS.load("critique_canvas_answer_v1"), CRITIQUE_CANVAS_TOKENS, 1, 0.0, None,
                             None, control=control)
    raise KeyError(f"no candidate prompt for benchmark {benchmark!r}")


def critique_request(call: CandidateCall, item: BenchmarkItem, index: int, image: bytes | None, mime: str | None,
                     image_sha256: str | None, model: str) -> ModelRequest:
    """Call ``index`` of an item (its sample, or the one call of a multi-pass condition), showing ``image`` (the
    item's, another's under a shuffled control, none for text only). The call's index and the image's sha256 are
    in the context, so the same prompt for another sample or image is another request, cached apart."""
    values = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in item.fields.items()}
    system, user = render(call.template, **values)
    return ModelRequest(role="candidate", model=model, system=system, user=user, image=image, image_mime=mime,
                        json_schema=None, schema_name=CRITIQUES_SCHEMA if call.multi_pass else CRITIQUE_SCHEMA,
                        temperature=call.temperature, max_output_tokens=call.max_output_tokens, top_p=call.top_p,
                        seed=None if call.seed is None else call.seed + index, template_id=call.template.id,
                        template_version=call.template.version,
                        context={"item": item.id, "sample": index, "image_sha256": image_sha256})


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


def parse_critiques(expected: int) -> Callable[[str], tuple[str, ...]]:
    """The reader of a multi-pass answer: exactly ``expected`` non-empty critiques, else ValueError with the
    problem as its reason code (the call layer asks once more, then the item keeps the reason)."""
    def parse(text: str) -> tuple[str, ...]:
        found = parse_multi_critiques(text, expected)
        if not found.ok:
            problem = ValueError(found.detail)
            problem.reason_code = found.problem
            raise problem
        return found.critiques

    return parse


MULTI_CRITIQUES_SHAPE = {"type": "object", "required": [CRITIQUES_KEY],
                         "properties": {CRITIQUES_KEY: {"type": "array", "items": {"type": "string"}}}}
"""What a multi-pass answer is asked to be again when the first did not read (the repair prompt shows it)."""
