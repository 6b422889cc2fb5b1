"""The CritiqueCanvas chain's prompts: planner, domain annotators and verifier, rendered from its packaged templates."""

from __future__ import annotations

from assets.core.templates import PromptFolder, PromptTemplate, RenderedPrompt, pretty_json, rendered, repair_template
from assets.critique_canvas.logic.answers import DOMAINS, SCHEMAS, Dialogue, Plan, SchemaError

CRITIQUE_PROMPTS = PromptFolder("assets.critique_canvas.prompts", "critique")


def load_template(name: str) -> PromptTemplate:
    """The packaged template ``critique/<name>.txt`` (``repair`` is the core's shared one)."""
    return repair_template() if name == "repair" else CRITIQUE_PROMPTS.load(name)


def template_names() -> tuple[str, ...]:
    return tuple(sorted((*CRITIQUE_PROMPTS.names(), "repair")))


def annotator_template(domain: str) -> PromptTemplate:
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    return load_template(f"annotator_{domain}")


def planner_prompt(domain: str) -> RenderedPrompt:
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    return rendered(load_template("planner"), domain=domain)


def annotator_prompt(domain: str, plan: Plan) -> RenderedPrompt:
    return rendered(annotator_template(domain), plan_json=pretty_json(plan.as_dict()))


def verifier_prompt(domain: str, dialogue: Dialogue) -> RenderedPrompt:
    """Pairs are numbered 1..6 in the prompt; those numbers are what the verdicts refer to."""
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    numbered = {"pairs": [{"pair": i, **p} for i, p in enumerate(dialogue.as_dict()["pairs"], start=1)]}
    return rendered(load_template("verifier"), domain=domain, dialogue_json=pretty_json(numbered))


def repair_prompt(schema_name: str, invalid_answer: str, error: SchemaError | str) -> RenderedPrompt:
    if schema_name not in SCHEMAS:
        raise ValueError(f"unknown schema {schema_name!r}; expected one of {', '.join(SCHEMAS)}")
    return rendered(load_template("repair"), schema_name=schema_name, schema_json=pretty_json(SCHEMAS[schema_name]),
                     invalid_answer=invalid_answer, error=str(error))
