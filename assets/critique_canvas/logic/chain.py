"""The CritiqueCanvas chain for one image: planner → domain-conditioned annotator → verifier.

Each role has its own provider and model (as in the paper: one model plans, another writes, an
independent one judges). Every call goes through a ``ModelCaller`` (cache, budget, rate limit, log,
one repair of an invalid answer); this module only decides what to ask and what the answers mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from assets.critique_canvas.logic.prompts import (
    RenderedPrompt,
    annotator_prompt,
    annotator_template,
    load_template,
    planner_prompt,
    repair_prompt,
    verifier_prompt,
)
from assets.critique_canvas.logic.answers import (
    DIALOGUE_SCHEMA,
    DOMAINS,
    PLAN_SCHEMA,
    VERDICTS_SCHEMA,
    Dialogue,
    Plan,
    Verdict,
    parse_dialogue,
    parse_plan,
    parse_verdicts,
)
from assets.core.model_calls import VALID, CallOutcome, ModelCaller
from resources.models.types import ModelRequest
from warehouse.ids import digest_of

ROLES = ("planner", "annotator", "verifier")
COMPLETE = "complete"
REJECTED = "rejected"  # an answer did not validate even after its repair: final for this configuration
FAILED = "failed"  # a transport failure: asked again on the next run


@dataclass(frozen=True)
class RoleSettings:
    """What a role is asked with; part of the chain's identity (a change is a new chain configuration)."""

    provider: str
    model: str
    base_url: str | None = None
    temperature: float = 0.2
    max_output_tokens: int = 2048

    @property
    def endpoint(self) -> str:
        """The provider as the cache knows it: two OpenAI-compatible servers with one model name are not one."""
        return self.provider + (f"@{self.base_url}" if self.base_url else "")


@dataclass(frozen=True)
class ChainResult:
    status: str
    reason_code: str | None = None
    detail: str | None = None
    failed_role: str | None = None
    plan: Plan | None = None
    dialogue: Dialogue | None = None
    verdicts: tuple[Verdict, ...] | None = None
    calls: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    requests_sent: int = 0

    @property
    def retryable(self) -> bool:
        return self.status == FAILED


def chain_digest(roles: Mapping[str, RoleSettings]) -> str:
    """Identity of a chain configuration: providers, models, parameters and the templates' content."""
    templates = [load_template(name).sha256 for name in ("planner", "verifier", "repair")]
    templates += [annotator_template(domain).sha256 for domain in DOMAINS]
    return digest_of([{role: roles[role].__dict__ for role in ROLES}, templates])


def repair_request(original: ModelRequest, invalid_answer: str, problem: str) -> ModelRequest:
    """Ask the same provider and model to turn an invalid answer into a valid object of the same schema."""
    prompt = repair_prompt(original.schema_name or "", invalid_answer, problem)
    return _request("repair", original, prompt)


def _request(role: str, like: ModelRequest, prompt: RenderedPrompt) -> ModelRequest:
    return ModelRequest(
        role=role,
        model=like.model,
        system=prompt.system,
        user=prompt.user,
        image=like.image,
        image_mime=like.image_mime,
        json_schema=like.json_schema,
        schema_name=like.schema_name,
        temperature=like.temperature,
        max_output_tokens=like.max_output_tokens,
        template_id=prompt.template.id,
        template_version=prompt.template.version,
        context={**like.context, "repairs": like.role},
    )


def _role_request(
    role: str, settings: RoleSettings, prompt: RenderedPrompt, image: bytes, mime: str, schema: dict, schema_name: str,
    context: Mapping[str, object],
) -> ModelRequest:
    return ModelRequest(
        role=role,
        model=settings.model,
        system=prompt.system,
        user=prompt.user,
        image=image,
        image_mime=mime,
        json_schema=schema,
        schema_name=schema_name,
        temperature=settings.temperature,
        max_output_tokens=settings.max_output_tokens,
        template_id=prompt.template.id,
        template_version=prompt.template.version,
        context=context,
    )


def run_chain(
    image: bytes,
    mime: str,
    domain: str,
    callers: Mapping[str, ModelCaller],
    roles: Mapping[str, RoleSettings],
    item_id: str,
) -> ChainResult:
    """Plan, write and judge one image; stops at the first role whose answer is unusable, saying why."""
    calls: dict[str, tuple[str, ...]] = {}
    sent = 0

    def stopped(role: str, outcome: CallOutcome) -> ChainResult:
        status = REJECTED if outcome.status == "rejected" else FAILED
        return ChainResult(status, outcome.reason_code or outcome.status, outcome.detail, role, plan, dialogue, None, calls, sent)

    plan = dialogue = None
    prompt = planner_prompt(domain)
    request = _role_request("planner", roles["planner"], prompt, image, mime, PLAN_SCHEMA, "plan", {"domain": domain})
    outcome = callers["planner"].call(request, parse_plan, item_id)
    calls["planner"], sent = outcome.call_ids, sent + outcome.requests_sent
    if outcome.status != VALID:
        return stopped("planner", outcome)
    plan = outcome.value

    context = {"domain": domain, "plan": plan.as_dict()}
    prompt = annotator_prompt(domain, plan)
    request = _role_request("annotator", roles["annotator"], prompt, image, mime, DIALOGUE_SCHEMA, "dialogue", context)
    outcome = callers["annotator"].call(request, parse_dialogue, item_id)
    calls["annotator"], sent = outcome.call_ids, sent + outcome.requests_sent
    if outcome.status != VALID:
        return stopped("annotator", outcome)
    dialogue = outcome.value

    context = {"domain": domain, "plan": plan.as_dict(), "dialogue": dialogue.as_dict()}
    prompt = verifier_prompt(domain, dialogue)
    request = _role_request("verifier", roles["verifier"], prompt, image, mime, VERDICTS_SCHEMA, "verdicts", context)
    outcome = callers["verifier"].call(request, lambda text: parse_verdicts(text, len(dialogue.pairs)), item_id)
    calls["verifier"], sent = outcome.call_ids, sent + outcome.requests_sent
    if outcome.status != VALID:
        return stopped("verifier", outcome)
    return ChainResult(COMPLETE, None, None, None, plan, dialogue, tuple(outcome.value), calls, sent)
