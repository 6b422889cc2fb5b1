"""The CritiqueCanvas chain for one image: planner → domain-conditioned annotator → verifier.

Each role has its own provider and model (as in the paper: one model plans, another writes, an
independent one judges). The annotator writes the six-pair dialogue and, beside it, Fig. S1's single-turn
paragraph instructions (``ChainOptions.paragraphs``); the verifier judges each pair in its own call, as S2.2.1's
verification prompt does (``verifier="per_pair"``), or every pair in one call (``"batch"``). Every call goes
through a ``ModelCaller`` (cache, budget, rate limit, log, one repair of an invalid answer); this module only
decides what to ask and what the answers mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from assets.critique_canvas.logic.prompts import (
    RenderedPrompt,
    annotator_prompt,
    annotator_template,
    load_template,
    pair_verifier_prompt,
    paragraphs_prompt,
    planner_prompt,
    repair_prompt,
    verifier_prompt,
)
from assets.critique_canvas.logic.answers import (
    DIALOGUE_SCHEMA,
    DOMAINS,
    PAIR_VERDICT_SCHEMA,
    PARAGRAPHS_SCHEMA,
    PLAN_SCHEMA,
    VERDICTS_SCHEMA,
    Dialogue,
    Paragraphs,
    Plan,
    Verdict,
    parse_dialogue,
    parse_pair_verdict,
    parse_paragraphs,
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


VERIFIER_MODES = ("per_pair", "batch")


@dataclass(frozen=True)
class ChainOptions:
    """What the chain builds beyond its roles; part of its identity too."""

    paragraphs: int = 4           # single-turn paragraph instructions beside the six-pair dialogue (0: none)
    verifier: str = "per_pair"    # per_pair: one call per pair, with a decision and reasons; batch: one call for all

    def __post_init__(self) -> None:
        if self.verifier not in VERIFIER_MODES:
            raise ValueError(f"verifier must be one of {', '.join(VERIFIER_MODES)}, not {self.verifier!r}")
        if self.paragraphs < 0:
            raise ValueError(f"paragraphs must be at least 0, not {self.paragraphs}")


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
    paragraphs: Paragraphs | None = None

    @property
    def retryable(self) -> bool:
        return self.status == FAILED


def chain_digest(roles: Mapping[str, RoleSettings], options: ChainOptions = ChainOptions()) -> str:
    """Identity of a chain configuration: providers, models, parameters, options and the templates' content."""
    templates = [load_template(name).sha256 for name in ("planner", "verifier", "verifier_pair", "annotator_paragraphs",
                                                         "repair")]
    templates += [annotator_template(domain).sha256 for domain in DOMAINS]
    return digest_of([{role: roles[role].__dict__ for role in ROLES}, options.__dict__, templates])


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
    options: ChainOptions = ChainOptions(),
) -> ChainResult:
    """Plan, write and judge one image; stops at the first call whose answer is unusable, saying why."""
    calls: dict[str, tuple[str, ...]] = {}
    sent = 0
    plan = dialogue = paragraphs = None

    def ask(role: str, prompt: RenderedPrompt, schema: dict, schema_name: str, context: Mapping[str, object], parse):
        nonlocal sent
        request = _role_request(role, roles[role], prompt, image, mime, schema, schema_name, context)
        outcome = callers[role].call(request, parse, item_id)
        calls[role], sent = calls.get(role, ()) + tuple(outcome.call_ids), sent + outcome.requests_sent
        return outcome

    def stopped(role: str, outcome: CallOutcome) -> ChainResult:
        status = REJECTED if outcome.status == "rejected" else FAILED
        return ChainResult(status, outcome.reason_code or outcome.status, outcome.detail, role, plan, dialogue, None, calls,
                           sent, paragraphs)

    outcome = ask("planner", planner_prompt(domain), PLAN_SCHEMA, "plan", {"domain": domain}, parse_plan)
    if outcome.status != VALID:
        return stopped("planner", outcome)
    plan = outcome.value

    context = {"domain": domain, "plan": plan.as_dict()}
    outcome = ask("annotator", annotator_prompt(domain, plan), DIALOGUE_SCHEMA, "dialogue", context, parse_dialogue)
    if outcome.status != VALID:
        return stopped("annotator", outcome)
    dialogue = outcome.value
    pairs = dialogue.as_dict()["pairs"]
    if options.paragraphs:
        outcome = ask("annotator", paragraphs_prompt(domain, plan, options.paragraphs), PARAGRAPHS_SCHEMA, "paragraphs",
                      {**context, "count": options.paragraphs}, lambda text: parse_paragraphs(text, options.paragraphs))
        if outcome.status != VALID:
            return stopped("annotator", outcome)
        paragraphs = outcome.value
        pairs += [{"question": p.instruction, "answer": p.response, "dimension": p.dimension, "improvement": False}
                  for p in paragraphs.items]

    context = {**context, "dialogue": {"pairs": pairs}}
    verdicts: list[Verdict] = []
    if options.verifier == "batch":
        outcome = ask("verifier", verifier_prompt(domain, pairs), VERDICTS_SCHEMA, "verdicts", context,
                      lambda text: parse_verdicts(text, len(pairs)))
        if outcome.status != VALID:
            return stopped("verifier", outcome)
        verdicts = outcome.value
    for number, pair in enumerate(pairs if options.verifier == "per_pair" else (), start=1):
        outcome = ask("verifier", pair_verifier_prompt(domain, pair["question"], pair["answer"]), PAIR_VERDICT_SCHEMA,
                      "pair_verdict", {"domain": domain, "pair": pair, "pair_number": number},
                      lambda text, number=number: parse_pair_verdict(text, number))
        if outcome.status != VALID:
            return stopped("verifier", outcome)
        verdicts.append(outcome.value)
    return ChainResult(COMPLETE, None, None, None, plan, dialogue, tuple(verdicts), calls, sent, paragraphs)
