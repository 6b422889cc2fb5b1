"""The CritiqueCanvas chain's prompts: planner, domain annotators, the paragraph annotator and the verifier (all
pairs at once, or one pair at a time), rendered from its packaged templates."""

from __future__ import annotations

from assets.core.templates import PromptFolder, PromptTemplate, RenderedPrompt, pretty_json, rendered, repair_template
from assets.critique_canvas.logic.answers import DOMAINS, SCHEMAS, Plan, SchemaError

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
    return rendered(load_template("planner"), domain=_known(domain))


def annotator_prompt(domain: str, plan: Plan) -> RenderedPrompt:
    return rendered(annotator_template(domain), plan_json=pretty_json(plan.as_dict()))


def _known(domain: str) -> str:
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    return domain


def paragraphs_prompt(domain: str, plan: Plan, count: int) -> RenderedPrompt:
    """Fig. S1's single-turn instructions: a broad appreciation, then paragraphs that each keep to one planned
    dimension."""
    return rendered(load_template("annotator_paragraphs"), domain=_known(domain), plan_json=pretty_json(plan.as_dict()),
                    count=str(count))


def verifier_prompt(domain: str, pairs: list[dict]) -> RenderedPrompt:
    """Every pair at once (``verifier: batch``), numbered 1.. in the prompt; those numbers are what the verdicts
    refer to."""
    numbered = {"pairs": [{"pair": i, **p} for i, p in enumerate(pairs, start=1)]}
    return rendered(load_template("verifier"), domain=_known(domain), dialogue_json=pretty_json(numbered),
                    n_pairs=str(len(pairs)))


def pair_verifier_prompt(domain: str, instruction: str, response: str) -> RenderedPrompt:
    """One record, judged on its own (S2.2.1's verification prompt: the image, the instruction, the response)."""
    return rendered(load_template("verifier_pair"), domain=_known(domain), instruction=instruction, response=response)


def repair_prompt(schema_name: str, invalid_answer: str, error: SchemaError | str) -> RenderedPrompt:
    if schema_name not in SCHEMAS:
        raise ValueError(f"unknown schema {schema_name!r}; expected one of {', '.join(SCHEMAS)}")
    return rendered(load_template("repair"), schema_name=schema_name, schema_json=pretty_json(SCHEMAS[schema_name]),
                     invalid_answer=invalid_answer, error=str(error))
