"""Versioned prompt templates, packaged beside the pipeline that uses them and read through importlib.resources.

Each pipeline keeps its templates as text files in its own ``prompts`` package (a :class:`PromptFolder`), so an
installed wheel finds them too. Each file has a small header (id, version, role) above a ``---`` line, then a
``[system]`` and a ``[user]`` section with ``string.Template`` placeholders. A template's sha256 is taken over the
whole file, so an edit shows up as different provenance even when nobody bumps ``version``.

Template ids keep the prefix they were first published under (``critique/repair`` lives here, in the core, because
every pipeline's repair request uses it), so cached calls and the version digests built from ids stay valid.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from warehouse.ids import canonical_json, sha256_hex

ROLES = ("planner", "annotator", "verifier", "repair", "candidate", "judge")  # the last two: evaluation (model under test, judge)
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


@dataclass(frozen=True)
class PromptFolder:
    """A pipeline's packaged templates: the package holding the ``<name>.txt`` files and the prefix of their ids
    (a file's header id must be ``<prefix>/<name>``)."""

    package: str
    prefix: str

    def names(self) -> tuple[str, ...]:
        entries = resources.files(self.package)
        return tuple(sorted(entry.name.removesuffix(".txt") for entry in entries.iterdir() if entry.name.endswith(".txt")))

    def load(self, name: str) -> PromptTemplate:
        return _load(self, name)


@lru_cache(maxsize=None)
def _load(folder: PromptFolder, name: str) -> PromptTemplate:
    names = folder.names()
    if name not in names:
        raise TemplateError(f"no {folder.prefix} prompt template {name!r}; available: {', '.join(names)}")
    source = f"{folder.prefix}/{name}.txt"
    template = parse_template(resources.files(folder.package).joinpath(f"{name}.txt").read_bytes(), source)
    if template.id != f"{folder.prefix}/{name}":
        raise TemplateError(f"{source}: header id {template.id!r} does not match the file name")
    return template


CORE_PROMPTS = PromptFolder("assets.core.prompts", "critique")


def repair_template() -> PromptTemplate:
    """The shared repair prompt (``critique/repair``): an answer that failed its schema, asked for again."""
    return CORE_PROMPTS.load("repair")


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


def rendered(template: PromptTemplate, **values: str) -> RenderedPrompt:
    system, user = render(template, **values)
    return RenderedPrompt(template, system, user)


def pretty_json(value: object) -> str:
    # Deterministic text, so the same inputs always render the same prompt (and hit the same cache entry).
    return json.dumps(value, indent=2, ensure_ascii=False)
