"""Versioned prompt templates for the CritiqueCanvas chain (planner, domain annotators, verifier, repair).

Templates live as text files in the ``assets.prompts`` package (``critique/<name>.txt``) and are read through
importlib.resources, so an installed package finds them too. Each file has a small header (id, version, role)
above a ``---`` line, then a ``[system]`` and a ``[user]`` section with ``string.Template`` placeholders.
A template's sha256 is taken over the whole file, so an edit shows up as different provenance even when nobody
bumps ``version``.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from assets.lib.critique_schema import DOMAINS, SCHEMAS, Dialogue, Plan, SchemaError
from warehouse.ids import canonical_json, sha256_hex

TEMPLATE_PACKAGE = "assets.prompts"
TEMPLATE_FOLDER = "critique"
ROLES = ("planner", "annotator", "verifier", "repair")
_HEADER_KEYS = ("id", "version", "role")


class TemplateError(ValueError):
    """A template file that does not parse, or a render that lacks a value."""


@dataclass(frozen=True)
class PromptTemplate:
    id: str
    version: str
    role: str
    system: str
    user: str
    sha256: str

    @property
    def placeholders(self) -> frozenset[str]:
        return frozenset(string.Template(self.system).get_identifiers() + string.Template(self.user).get_identifiers())


def parse_template(content: bytes, source: str = "<template>") -> PromptTemplate:
    """Reads header and sections from a template file's bytes; ``source`` only names the file in errors."""
    text = content.decode("utf-8")
    head, sep, body = text.partition("\n---\n")
    if not sep:
        raise TemplateError(f"{source}: no '---' line after the header")
    header: dict[str, str] = {}
    for line in head.splitlines():
        key, colon, value = line.partition(":")
        if not colon or key.strip() not in _HEADER_KEYS:
            raise TemplateError(f"{source}: header line {line!r} is not one of {', '.join(_HEADER_KEYS)}")
        header[key.strip()] = value.strip()
    missing = [k for k in _HEADER_KEYS if not header.get(k)]
    if missing:
        raise TemplateError(f"{source}: header lacks {', '.join(missing)}")
    if header["role"] not in ROLES:
        raise TemplateError(f"{source}: role {header['role']!r} is not one of {', '.join(ROLES)}")

    lines = body.splitlines()
    markers = [i for i, line in enumerate(lines) if line.strip() in ("[system]", "[user]")]
    if [lines[i].strip() for i in markers] != ["[system]", "[user]"] or any(line.strip() for line in lines[:markers[0]]):
        raise TemplateError(f"{source}: body must be a [system] section followed by a [user] section")
    system = "\n".join(lines[markers[0] + 1:markers[1]]).strip()
    user = "\n".join(lines[markers[1] + 1:]).strip()
    for name, section in (("system", system), ("user", user)):
        if not section:
            raise TemplateError(f"{source}: [{name}] section is empty")
        if not string.Template(section).is_valid():
            raise TemplateError(f"{source}: [{name}] has a '$' that is not a placeholder (write '$$' for a dollar sign)")
    return PromptTemplate(id=header["id"], version=header["version"], role=header["role"], system=system, user=user,
                          sha256=sha256_hex(content))


def template_names(folder: str = TEMPLATE_FOLDER) -> tuple[str, ...]:
    entries = resources.files(TEMPLATE_PACKAGE).joinpath(folder)
    return tuple(sorted(entry.name.removesuffix(".txt") for entry in entries.iterdir() if entry.name.endswith(".txt")))


@lru_cache(maxsize=None)
def load_packaged_template(folder: str, name: str) -> PromptTemplate:
    """The packaged template ``<folder>/<name>.txt`` (folders under ``assets/prompts``: critique, design, poetry,
    context); its header id must be ``<folder>/<name>``."""
    names = template_names(folder)
    if name not in names:
        raise TemplateError(f"no {folder} prompt template {name!r}; available: {', '.join(names)}")
    source = f"{folder}/{name}.txt"
    template = parse_template(resources.files(TEMPLATE_PACKAGE).joinpath(source).read_bytes(), source)
    if template.id != f"{folder}/{name}":
        raise TemplateError(f"{source}: header id {template.id!r} does not match the file name")
    return template


def load_template(name: str) -> PromptTemplate:
    """The packaged template ``critique/<name>.txt``."""
    return load_packaged_template(TEMPLATE_FOLDER, name)


def render(template: PromptTemplate, **values: str) -> tuple[str, str]:
    """The (system, user) texts with every placeholder filled; a missing or non-text value is an error, not a gap."""
    missing = sorted(template.placeholders - values.keys())
    if missing:
        raise TemplateError(f"template {template.id} v{template.version} needs values for: "
                            + ", ".join(f"${m}" for m in missing))
    wrong = sorted(k for k in template.placeholders if not isinstance(values[k], str))
    if wrong:
        raise TemplateError(f"template {template.id}: values for {', '.join(wrong)} must be text")
    return string.Template(template.system).substitute(values), string.Template(template.user).substitute(values)


def annotator_template(domain: str) -> PromptTemplate:
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    return load_template(f"annotator_{domain}")


def prompt_hash(system: str, user: str) -> str:
    """Names the exact rendered prompt (both parts, unambiguously joined) for the call log and the cache key."""
    return sha256_hex(canonical_json({"system": system, "user": user}).encode("utf-8"))


# --- rendered prompts for each role -------------------------------------------------------------------------

@dataclass(frozen=True)
class RenderedPrompt:
    template: PromptTemplate
    system: str
    user: str

    @property
    def hash(self) -> str:
        return prompt_hash(self.system, self.user)


def _rendered(template: PromptTemplate, **values: str) -> RenderedPrompt:
    system, user = render(template, **values)
    return RenderedPrompt(template, system, user)


def _pretty(value: object) -> str:
    # Deterministic text, so the same inputs always render the same prompt (and hit the same cache entry).
    return json.dumps(value, indent=2, ensure_ascii=False)


def planner_prompt(domain: str) -> RenderedPrompt:
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    return _rendered(load_template("planner"), domain=domain)


def annotator_prompt(domain: str, plan: Plan) -> RenderedPrompt:
    return _rendered(annotator_template(domain), plan_json=_pretty(plan.as_dict()))


def verifier_prompt(domain: str, dialogue: Dialogue) -> RenderedPrompt:
    """Pairs are numbered 1..6 in the prompt; those numbers are what the verdicts refer to."""
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    numbered = {"pairs": [{"pair": i, **p} for i, p in enumerate(dialogue.as_dict()["pairs"], start=1)]}
    return _rendered(load_template("verifier"), domain=domain, dialogue_json=_pretty(numbered))


def repair_prompt(schema_name: str, invalid_answer: str, error: SchemaError | str) -> RenderedPrompt:
    if schema_name not in SCHEMAS:
        raise ValueError(f"unknown schema {schema_name!r}; expected one of {', '.join(SCHEMAS)}")
    return _rendered(load_template("repair"), schema_name=schema_name, schema_json=_pretty(SCHEMAS[schema_name]),
                     invalid_answer=invalid_answer, error=str(error))
