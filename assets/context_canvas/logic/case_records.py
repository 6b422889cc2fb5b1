"""Contextual-suitability cases (after ContextCanvas, seed paper 000, S2.1.3-S2.1.4): reading and validating them.

A case puts one or more images in a use scenario (an exhibition, a poster, a brochure, ...) and asks a closed-form
question about whether the image is the right visual choice there. Experts write the cases; this module reads
their files, checks every record and hands back typed ``ContextCase`` objects, or a ``CaseRejection`` that names
the record and says what is wrong, so one bad record never costs the others.

What a case holds, and who may see it: the image(s), the scenario, the question, an optional proposed assessment
the model must judge for itself, and the fixed options are the model's input (``ContextCase.model_input``). The
gold option, the source-grounded rationale, the source basis, the per-image provenance and rights, and any
development-time probe answer are the answer key (``ContextCase.answer_key``) and never reach a model.

Files (the format follows the suffix; both are read as a stream, a record at a time):

``.json``: a list of case objects, or ``{"cases": [...]}`` (other top-level keys are skipped)::

    {"case_id": "ctx-001",                       # [A-Za-z0-9._-]+, unique in the file
     "images": ["../images/a.png"],              # or one string; a path relative to the case file, or "pool:<id>"
     "scenario": "...", "question": "...",
     "proposed_assessment": "..." | null,        # optional: a curator's/designer's claim the model must judge
     "neutral_description": "..." | null,        # optional: the visible content, free of identities and verdicts
     "evidence_description": "..." | null,       # optional: the same with the decisive visible cue made explicit
     "options": [{"option_id": "A", "text": "Yes"}, {"option_id": "B", "text": "No"}],   # or {"A": "Yes", ...}
     "gold": "B", "gold_text": "No",             # gold_text optional; when given it must be the gold option's text
     "rationale": "...", "source_basis": "...",
     "rights": [{"title": "...", "creator": "...", "provider": "...", "url": "...",
                 "license_note": "...", "redistribution": "allowed" | "restricted" | "unknown"}],  # one per image
     "probe": {"model": "...", "answer": "A", "note": "..."} | null}                 # optional, development only

``.csv`` (header on row 1; extra columns ignored): ``case_id``, ``images`` (``;``-separated), ``scenario``,
``question``, ``options`` (``A=Yes|B=No``), ``gold``, ``rationale``, ``source_basis``, and the rights columns
``title``, ``creator``, ``provider``, ``url``, ``license_note``, ``redistribution``, each ``;``-separated with one
part per image (an empty ``creator`` cell means every creator is unknown); optional ``gold_text``,
``proposed_assessment``, ``neutral_description``, ``evidence_description``, ``probe_model``, ``probe_answer``,
``probe_note``. Texts holding ``;`` or ``|`` need the JSON form (the description cells excepted: they are not split).

The two descriptions stand in for the image in the paper's description conditions (Table S9): ``neutral`` says what
is visible without naming who made it or judging it, ``evidence`` says the same with the decisive visible cue made
explicit. Both are optional, and at most ``MAX_DESCRIPTION_CHARS`` characters.

Locators name records the way a person finds them: ``cases.csv#line=4`` is the line the row starts on (header =
line 1), ``cases.json#record=2`` the 0-based index in the list (``jq '.[2]'`` or ``jq '.cases[2]'``). Every CSV
line is decoded on its own, so a line that is not UTF-8 or a ragged row is that row's rejection; a JSON file
that breaks part-way keeps the records before the break and the rest is one rejection where it broke.

Rules worth knowing: a missing creator stays ``"unknown"`` (never inferred, S2.1.4); option ids, the gold and the
probe answer compare case-insensitively and are stored as the option's own id; a case has 2 or 3 options (the
paper's binary and three-way questions); on binary cases the option with id ``A`` (else the first one) is the
canonical Yes/target class, as the paper's scorer treats it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from assets.core.logic import sheets
from assets.core.logic.textfiles import BAD_ENCODING, INVALID_JSON, Utf8Text, read_csv_table
from warehouse.ids import digest_of

REDISTRIBUTION = ("allowed", "restricted", "unknown")
UNKNOWN_CREATOR = "unknown"
POOL_PREFIX = "pool:"
YES_OPTION_ID = "A"  # the canonical Yes / target-aligned class on binary cases (paper S2.3.3)
MIN_OPTIONS, MAX_OPTIONS = 2, 3
ID_PATTERN = re.compile(r"[A-Za-z0-9._-]+")
OPTION_ID_PATTERN = re.compile(r"[A-Za-z0-9]{1,8}")
RIGHTS_FIELDS = ("title", "creator", "provider", "url", "license_note", "redistribution")
REQUIRED_RIGHTS = ("title", "provider", "url", "license_note")

CSV_REQUIRED = ("case_id", "images", "scenario", "question", "options", "gold", "rationale", "source_basis",
                *RIGHTS_FIELDS)
DESCRIPTION_FIELDS = ("neutral_description", "evidence_description")
MAX_DESCRIPTION_CHARS = 4000  # a paragraph or two; longer is a pasted document, not a description of one picture
CSV_OPTIONAL = ("gold_text", "proposed_assessment", *DESCRIPTION_FIELDS, "probe_model", "probe_answer", "probe_note")
CSV_COLUMNS = CSV_REQUIRED[:8] + ("gold_text", "proposed_assessment", *DESCRIPTION_FIELDS) + RIGHTS_FIELDS + CSV_OPTIONAL[4:]
LIST_SEPARATOR, OPTION_SEPARATOR = ";", "|"

# reason codes of a rejected record (the first problem found names the rejection; every problem is in the message)
REASON_CODES = (
    "not_an_object",         # a JSON record that is not an object
    "missing_field",         # a required field is absent or empty
    "bad_field",             # a field of the wrong type (a number where text belongs, ...)
    "field_too_long",        # a description over MAX_DESCRIPTION_CHARS characters
    "bad_case_id",           # case_id outside [A-Za-z0-9._-]+
    "duplicate_case_id",     # a case_id already read from this file (the first one is kept)
    "bad_image_ref",         # an absolute path, a backslash path, an empty or malformed pool reference
    "duplicate_image",       # the same image twice in one case
    "option_count",          # fewer than 2 or more than 3 options
    "bad_option",            # an option without id or text, a malformed CSV option cell
    "duplicate_option_id",   # two options with one id (case-insensitive)
    "duplicate_option_text", # two options with one text: no unique answer
    "gold_not_option",       # the gold is not one of the option ids
    "gold_text_mismatch",    # gold_text differs from the gold option's text
    "rights_count",          # not exactly one rights entry per image
    "missing_rights_field",  # a rights entry without title, provider, url or license note
    "bad_redistribution",    # redistribution outside allowed | restricted | unknown
    "bad_probe",             # a probe without model or answer
    "probe_not_option",      # the probe's answer is not one of the options
    "bad_encoding",          # a CSV line, or the rest of a JSON file, that is not UTF-8
    "ragged_row",            # a CSV row with more or fewer cells than the header (an unquoted comma)
    "invalid_json",          # the JSON breaks after some records: the rest of the file is not read
)


class CaseFileError(sheets.SheetError):
    """A case file that cannot be read on (not JSON, wrong top-level shape, missing CSV columns, broken syntax).

    Records already yielded stay valid; the message names the file and where reading stopped.
    """

    reason_code = "malformed_case_file"
    prefix = "case file"


CaseError = CaseFileError  # the name the warehouse asset imports


@dataclass(frozen=True)
class ImageRights:
    """Provenance and rights of one image (S2.1.4): kept with the answer key, never shown to a model."""

    title: str
    creator: str            # "unknown" when the source does not say; never inferred
    provider: str
    url: str
    license_note: str
    redistribution: str     # allowed | restricted | unknown

    def to_dict(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in RIGHTS_FIELDS}


@dataclass(frozen=True)
class CaseOption:
    option_id: str
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"option_id": self.option_id, "text": self.text}


@dataclass(frozen=True)
class Probe:
    """A development-time model's answer, kept to spot trivial or shortcut-prone cases; never an inclusion rule
    and never part of exported model input."""

    model: str
    answer: str  # an option id of the case
    note: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"model": self.model, "answer": self.answer, "note": self.note}


@dataclass(frozen=True)
class ContextCase:
    case_id: str
    images: tuple[str, ...]          # paths relative to the case file, or "pool:<pool_item_id>"
    scenario: str
    question: str
    options: tuple[CaseOption, ...]
    gold: str                        # an option_id
    gold_text: str
    rationale: str
    source_basis: str
    rights: tuple[ImageRights, ...]  # one per image, same order
    probe: Probe | None
    proposed_assessment: str | None
    locator: str                     # where the record was read ("cases.csv#row=4"); not part of the content
    neutral_description: str | None = None   # the visible content, free of identities and verdicts
    evidence_description: str | None = None  # the same, the decisive visible cue named

    @property
    def option_ids(self) -> tuple[str, ...]:
        return tuple(option.option_id for option in self.options)

    @property
    def is_binary(self) -> bool:
        return len(self.options) == 2

    def option_text(self, option_id: str) -> str:
        for option in self.options:
            if option.option_id == option_id:
                return option.text
        raise KeyError(f"case {self.case_id}: no option {option_id!r} (options: {', '.join(self.option_ids)})")

    def resolve_answer(self, answer: str | None) -> str | None:
        """The option id an answer names (case-insensitive, surrounding space ignored), or None when it names none."""
        return _match_option(self.option_ids, answer)

    @property
    def yes_option_id(self) -> str | None:
        """On a binary case, the canonical Yes/target option: id ``A`` when present, else the first option."""
        if not self.is_binary:
            return None
        return self.resolve_answer(YES_OPTION_ID) or self.options[0].option_id

    def content(self) -> dict[str, Any]:
        """Everything the case says (the locator aside): what ``case_key`` hashes and what a store keeps."""
        return {
            "case_id": self.case_id,
            "images": list(self.images),
            "scenario": self.scenario,
            "question": self.question,
            "proposed_assessment": self.proposed_assessment,
            "options": [option.to_dict() for option in self.options],
            "gold": self.gold,
            "gold_text": self.gold_text,
            "rationale": self.rationale,
            "source_basis": self.source_basis,
            "rights": [rights.to_dict() for rights in self.rights],
            "probe": self.probe.to_dict() if self.probe else None,
            # Only when given: a case without descriptions keeps the content, so the key, it had before they existed.
            **{name: getattr(self, name) for name in DESCRIPTION_FIELDS if getattr(self, name) is not None},
        }

    @cached_property
    def case_key(self) -> str:
        """Content digest of the whole case: any edit (a rationale typo fixed, a rights note) gives a new key,
        so a stored review or figure can say exactly which version it was about."""
        return digest_of(["context-case", self.content()])

    def _model_content(self) -> dict[str, Any]:
        return {
            "images": list(self.images),
            "scenario": self.scenario,
            "question": self.question,
            "proposed_assessment": self.proposed_assessment,
            "options": [option.to_dict() for option in self.options],
        }

    @cached_property
    def evaluation_id(self) -> str:
        """Stable id of the evaluation record: ``ctx-`` + 20 hex digits of the digest of the case_id and exactly
        what the model sees (image references, scenario, question, proposed assessment, options).

        Why this content and no more: a prediction answers the model input, so the id changes when that input
        changes (old predictions then match nothing) and stays put when only the answer key is edited (a
        clarified rationale keeps earlier predictions scorable). The gold is left out on purpose: with two
        options and the input exported, hashing the gold in would let anyone recover it by trying both ids.
        Image references are hashed as written; the exporter records image bytes' digests alongside.
        """
        return "ctx-" + digest_of(["context-case-eval", self.case_id, self._model_content()])[:20]

    def model_input(self) -> dict[str, Any]:
        """The evaluation record a model receives: image(s), scenario, question, proposed assessment, options.

        The scenario travels with the question because the question alone ("is it suitable?") cannot be
        answered without the use it asks about (the paper's evaluator sends the record's question or scenario).
        Gold, rationale, provenance and probe output are absent by construction.
        """
        return {"evaluation_id": self.evaluation_id, **self._model_content()}

    def answer_key(self) -> dict[str, Any]:
        """Everything kept away from models, keyed by the same evaluation_id."""
        return {
            "evaluation_id": self.evaluation_id,
            "case_id": self.case_id,
            "case_key": self.case_key,
            "gold": self.gold,
            "gold_text": self.gold_text,
            "rationale": self.rationale,
            "source_basis": self.source_basis,
            "rights": [rights.to_dict() for rights in self.rights],
            "probe": self.probe.to_dict() if self.probe else None,
        }


@dataclass(frozen=True)
class CaseRejection:
    """A record that is not a valid case: where it is, its case_id when readable, and every problem found."""

    locator: str
    case_id: str | None
    reason_code: str                           # the first problem's code (one of REASON_CODES)
    problems: tuple[tuple[str, str], ...]      # (reason_code, what is wrong), in the order found

    @property
    def detail(self) -> str:
        """Every problem, without the locator (for a store that keeps the locator in its own column)."""
        return "; ".join(text for _, text in self.problems)

    @property
    def message(self) -> str:
        who = f" (case {self.case_id})" if self.case_id else ""
        return f"{self.locator}{who}: {self.detail}"


# --- image references --------------------------------------------------------------------------------------


def is_pool_ref(ref: str) -> bool:
    return ref.startswith(POOL_PREFIX)


def resolve_image(ref: str, case_dir: str | os.PathLike[str]) -> tuple[str, str]:
    """Where an image reference points: ``("pool", pool_item_id)`` or ``("file", path)`` with the path joined to
    the case file's folder (not normalised: ``..`` is kept so the caller sees what the author wrote)."""
    if is_pool_ref(ref):
        return "pool", ref[len(POOL_PREFIX):]
    return "file", (Path(case_dir) / PurePosixPath(ref)).as_posix()


def _image_problem(ref: str) -> str | None:
    if not ref:
        return "an image reference is empty"
    if is_pool_ref(ref):
        item = ref[len(POOL_PREFIX):]
        return None if ID_PATTERN.fullmatch(item) else f"pool reference {ref!r} needs pool:<item id> ([A-Za-z0-9._-]+)"
    if "\\" in ref:
        return f"image path {ref!r} uses backslashes; write it with /"
    if ref.startswith("/") or re.match(r"[A-Za-z]:", ref) or "://" in ref:
        return f"image path {ref!r} is absolute or a URL; give a path relative to the case file or pool:<id>"
    return None


# --- validation --------------------------------------------------------------------------------------------


def _match_option(option_ids: Sequence[str], answer: str | None) -> str | None:
    if answer is None:
        return None
    wanted = str(answer).strip().casefold()
    for option_id in option_ids:
        if option_id.casefold() == wanted:
            return option_id
    return None


class _Problems:
    def __init__(self) -> None:
        self.found: list[tuple[str, str]] = []

    def add(self, code: str, text: str) -> None:
        self.found.append((code, text))


def _text(raw: Mapping[str, Any], key: str, problems: _Problems, *, required: bool = True, where: str = "") -> str:
    value = raw.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            problems.add("missing_field", f"{where}{key} is missing or empty")
        return ""
    if not isinstance(value, str):
        problems.add("bad_field", f"{where}{key} must be text, not {type(value).__name__}")
        return ""
    return value.strip()


def _description(raw: Mapping[str, Any], key: str, problems: _Problems) -> str | None:
    """An optional description: text, trimmed, at most ``MAX_DESCRIPTION_CHARS`` characters; None when absent."""
    text = _text(raw, key, problems, required=False)
    if len(text) > MAX_DESCRIPTION_CHARS:
        problems.add("field_too_long", f"{key} has {len(text)} characters; at most {MAX_DESCRIPTION_CHARS}")
    return text or None


def _options(raw: Any, problems: _Problems) -> list[CaseOption]:
    if raw is None or raw == [] or raw == {} or raw == "":
        problems.add("missing_field", "options is missing or empty")
        return []
    if isinstance(raw, Mapping):
        entries: list[Any] = [{"option_id": key, "text": value} for key, value in raw.items()]
    elif isinstance(raw, list):
        entries = raw
    else:
        problems.add("bad_field", f"options must be a list of {{option_id, text}} or an object, not {type(raw).__name__}")
        return []
    options: list[CaseOption] = []
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, Mapping):
            problems.add("bad_option", f"option {number} is not an object with option_id and text")
            continue
        option_id = entry.get("option_id", entry.get("id"))
        text = entry.get("text")
        option_id = option_id.strip() if isinstance(option_id, str) else option_id
        text = text.strip() if isinstance(text, str) else text
        if not isinstance(option_id, str) or not OPTION_ID_PATTERN.fullmatch(option_id):
            problems.add("bad_option", f"option {number} has id {option_id!r}; ids are 1-8 letters or digits")
            continue
        if not isinstance(text, str) or not text:
            problems.add("bad_option", f"option {option_id} has no text")
            continue
        options.append(CaseOption(option_id, text))
    if not MIN_OPTIONS <= len(entries) <= MAX_OPTIONS:
        problems.add("option_count", f"{len(entries)} option(s); a case has {MIN_OPTIONS} or {MAX_OPTIONS}")
    seen_ids: dict[str, str] = {}
    seen_texts: dict[str, str] = {}
    for option in options:
        key = option.option_id.casefold()
        if key in seen_ids:
            problems.add("duplicate_option_id", f"option id {option.option_id!r} appears twice")
        seen_ids[key] = option.option_id
        text_key = " ".join(option.text.split()).casefold()
        if text_key in seen_texts:
            problems.add("duplicate_option_text",
                         f"options {seen_texts[text_key]} and {option.option_id} have the same text {option.text!r}")
        seen_texts[text_key] = option.option_id
    return options


def _images(raw: Any, problems: _Problems) -> list[str]:
    if isinstance(raw, str):
        raw = [raw] if raw.strip() else []
    if raw is None or raw == []:
        problems.add("missing_field", "images is missing or empty")
        return []
    if not isinstance(raw, list) or not all(isinstance(ref, str) for ref in raw):
        problems.add("bad_field", "images must be a list of paths or pool:<id> references")
        return []
    refs = [ref.strip() for ref in raw]
    for ref in refs:
        problem = _image_problem(ref)
        if problem:
            problems.add("bad_image_ref", problem)
    for ref in sorted({ref for ref in refs if refs.count(ref) > 1}):
        problems.add("duplicate_image", f"image {ref!r} appears more than once")
    return refs


def _rights(raw: Any, n_images: int, problems: _Problems) -> list[ImageRights]:
    if raw is None or raw == []:
        if n_images:  # without images the images problem says it all
            problems.add("missing_field", "rights is missing or empty (one entry per image)")
        return []
    if not isinstance(raw, list):
        problems.add("bad_field", f"rights must be a list with one entry per image, not {type(raw).__name__}")
        return []
    if n_images and len(raw) != n_images:
        problems.add("rights_count", f"{len(raw)} rights entr{'y' if len(raw) == 1 else 'ies'} for {n_images} image(s)")
    rights: list[ImageRights] = []
    for number, entry in enumerate(raw, start=1):
        if not isinstance(entry, Mapping):
            problems.add("bad_field", f"rights entry {number} is not an object")
            continue
        where = f"rights entry {number}: "
        local = _Problems()
        values = {name: _text(entry, name, local, where=where) for name in REQUIRED_RIGHTS}
        for code, text in local.found:
            problems.add("missing_rights_field" if code == "missing_field" else code, text)
        creator = _text(entry, "creator", problems, required=False, where=where) or UNKNOWN_CREATOR
        redistribution = entry.get("redistribution")
        normalised = redistribution.strip().lower() if isinstance(redistribution, str) else None
        if normalised not in REDISTRIBUTION:
            problems.add("bad_redistribution",
                         f"{where}redistribution {redistribution!r} is not one of {', '.join(REDISTRIBUTION)}")
            continue
        if not local.found:
            rights.append(ImageRights(values["title"], creator, values["provider"], values["url"],
                                      values["license_note"], normalised))
    return rights


def _probe(raw: Any, option_ids: Sequence[str], problems: _Problems) -> Probe | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        problems.add("bad_probe", f"probe must be an object with model and answer, not {type(raw).__name__}")
        return None
    local = _Problems()
    model = _text(raw, "model", local, where="probe ")
    answer = _text(raw, "answer", local, where="probe ")
    note = _text(raw, "note", local, required=False, where="probe ")
    for _, text in local.found:
        problems.add("bad_probe", text)
    if local.found:
        return None
    matched = _match_option(option_ids, answer)
    if matched is None:
        if option_ids:
            problems.add("probe_not_option", f"probe answer {answer!r} is not an option ({', '.join(option_ids)})")
        return None
    return Probe(model, matched, note)


def validate_case(raw: Any, locator: str, reported: Collection[str] = ()) -> ContextCase | CaseRejection:
    """One record (a JSON object, or a CSV row already split into lists) as a case, or its rejection.

    ``reported`` names fields whose problems the caller has already recorded (a CSV cell that did not split),
    so an empty result there is not reported a second time as missing.
    """
    if not isinstance(raw, Mapping):
        return CaseRejection(locator, None, "not_an_object",
                             (("not_an_object", f"a case record must be an object, not {type(raw).__name__}"),))
    problems = _Problems()
    case_id = _text(raw, "case_id", problems)
    if case_id and not ID_PATTERN.fullmatch(case_id):
        problems.add("bad_case_id", f"case_id {case_id!r} may only hold letters, digits, '.', '_' and '-'")
    images = _images(raw.get("images"), problems)
    scenario = _text(raw, "scenario", problems)
    question = _text(raw, "question", problems)
    proposed = _text(raw, "proposed_assessment", problems, required=False) or None
    descriptions = {name: _description(raw, name, problems) for name in DESCRIPTION_FIELDS}
    options = [] if "options" in reported and not raw.get("options") else _options(raw.get("options"), problems)
    option_ids = [option.option_id for option in options]
    gold_raw = _text(raw, "gold", problems)
    gold = _match_option(option_ids, gold_raw) if gold_raw else None
    if gold_raw and gold is None and options:
        problems.add("gold_not_option", f"gold {gold_raw!r} is not an option ({', '.join(option_ids)})")
    gold_text = _text(raw, "gold_text", problems, required=False)
    if gold is not None:
        expected = next(option.text for option in options if option.option_id == gold)
        if gold_text and " ".join(gold_text.split()).casefold() != " ".join(expected.split()).casefold():
            problems.add("gold_text_mismatch", f"gold_text {gold_text!r} is not the text of option {gold} ({expected!r})")
        gold_text = expected
    rationale = _text(raw, "rationale", problems)
    source_basis = _text(raw, "source_basis", problems)
    rights = [] if "rights" in reported else _rights(raw.get("rights"), len(images), problems)
    probe = _probe(raw.get("probe"), option_ids, problems)
    if problems.found:
        readable_id = case_id if case_id and ID_PATTERN.fullmatch(case_id) else None
        return CaseRejection(locator, readable_id, problems.found[0][0], tuple(problems.found))
    assert gold is not None
    return ContextCase(case_id, tuple(images), scenario, question, tuple(options), gold, gold_text, rationale,
                       source_basis, tuple(rights), probe, proposed, locator, **descriptions)


# --- CSV -------------------------------------------------------------------------------------------------------


def _split(cell: str, separator: str = LIST_SEPARATOR) -> list[str]:
    return [part.strip() for part in cell.split(separator)] if cell.strip() else []


def _csv_record(cells: Mapping[str, str]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """A CSV row in the JSON record's shape, and the problems only the CSV form can have."""
    problems: list[tuple[str, str]] = []
    options: list[dict[str, str]] = []
    for part in _split(cells["options"], OPTION_SEPARATOR):
        option_id, equals, text = part.partition("=")
        if not equals:
            problems.append(("bad_option", f"option {part!r} is not written as id=text (e.g. A=Yes|B=No)"))
            continue
        options.append({"option_id": option_id.strip(), "text": text.strip()})
    images = _split(cells["images"])
    columns = {name: _split(cells[name]) for name in RIGHTS_FIELDS}
    if not columns["creator"]:
        columns["creator"] = [""] * len(images)  # an empty creator cell: every creator unknown
    rights: list[dict[str, str]] = []
    if images:
        wrong = [f"{name} has {len(parts)} part(s)" for name, parts in columns.items() if len(parts) != len(images)]
        if wrong:
            problems.append(("rights_count", f"{len(images)} image(s) but {', '.join(wrong)} "
                                             f"(one ';'-separated part per image)"))
        else:
            rights = [{name: columns[name][i] for name in RIGHTS_FIELDS} for i in range(len(images))]
    probe: dict[str, str] | None = None
    if any(cells.get(name, "") for name in ("probe_model", "probe_answer", "probe_note")):
        probe = {"model": cells.get("probe_model", ""), "answer": cells.get("probe_answer", ""),
                 "note": cells.get("probe_note", "")}
    record = {
        "case_id": cells["case_id"], "images": images, "scenario": cells["scenario"], "question": cells["question"],
        "proposed_assessment": cells.get("proposed_assessment", ""), "options": options,
        **{name: cells.get(name, "") for name in DESCRIPTION_FIELDS},
        "gold": cells["gold"], "gold_text": cells.get("gold_text", ""), "rationale": cells["rationale"],
        "source_basis": cells["source_basis"], "rights": rights, "probe": probe,
    }
    return record, problems


_FIELD_OF = {"bad_option": "options", "rights_count": "rights"}


def _csv_cases(path: Path, name: str) -> Iterator[tuple[str, Any, list[tuple[str, str]]]]:
    """Each row decoded on its own (``assets/core/logic/textfiles.py``): a line that is not UTF-8 (``bad_encoding``) or a
    row with more or fewer cells than the header (``ragged_row``) is that row's rejection."""
    for record in read_csv_table(path, CSV_REQUIRED):
        if record.file_level:
            raise CaseFileError(name, [(None, record.problem[1])])
        locator = f"{name}#line={record.line}"
        if record.problem:
            yield locator, None, [record.problem]
            continue
        record_value, problems = _csv_record({key: value.strip() for key, value in record.fields.items()})
        yield locator, record_value, problems


# --- JSON (streaming) --------------------------------------------------------------------------------------

_CHUNK = 1 << 16
_DECODER = json.JSONDecoder()


class _JsonStream:
    """Just enough of a streaming JSON reader for ``[record, ...]`` and ``{"cases": [record, ...], ...}``: one
    record is decoded at a time, so memory follows the largest record, not the file."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self.stream, self.name = stream, name
        self.buf, self.pos, self.eof = "", 0, False
        self.lines_dropped = 0

    def _more(self, size: int | None = None) -> bool:
        if self.eof:
            return False
        chunk = self.stream.read(size or _CHUNK)
        if not chunk:
            self.eof = True
            return False
        if self.pos > _CHUNK:
            self.lines_dropped += self.buf.count("\n", 0, self.pos)
            self.buf, self.pos = self.buf[self.pos:], 0
        self.buf += chunk
        return True

    def line(self, pos: int | None = None) -> int:
        return self.lines_dropped + self.buf.count("\n", 0, self.pos if pos is None else pos) + 1

    def fail(self, text: str) -> CaseFileError:
        return CaseFileError(self.name, [(None, text)])

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end), without consuming it."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def expect(self, allowed: str, what: str) -> str:
        char = self.peek()
        if not char or char not in allowed:
            found = repr(char) if char else "the end of the file"
            raise self.fail(f"expected {what} at line {self.line()}, found {found}")
        self.pos += 1
        return char

    def value(self, what: str) -> Any:
        self.peek()
        size = _CHUNK
        while True:  # decode from the buffer; on a record cut by the chunk end, read on and retry
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                # only an error at the buffer's end (or an open string) can be a record cut short by the chunk;
                # anything earlier is a real syntax error, reported without reading the rest of the file
                cut_short = exc.pos >= len(self.buf) - 6 or exc.msg.startswith("Unterminated")
                if cut_short and self._more(size):
                    size *= 2  # a long record: read ahead faster so re-parsing stays linear-ish
                    continue
                raise self.fail(f"{what} does not parse: {exc.msg} at line {self.line(exc.pos)}") from None
            if end == len(self.buf) and self._more(size):
                continue  # a bare number may go on in the next chunk
            self.pos = end
            return value

    def array(self, what: str) -> Iterator[Any]:
        self.expect("[", f"'[' opening {what}")
        if self.peek() == "]":
            self.pos += 1
            return
        index = 0
        while True:
            yield self.value(f"record {index}")
            index += 1
            if self.expect(",]", f"',' or ']' after record {index - 1}") == "]":
                return

    def records(self) -> Iterator[Any]:
        first = self.peek()
        if first == "[":
            yield from self.array("the case list")
        elif first == "{":
            self.pos += 1
            found = False
            if self.peek() == "}":
                self.pos += 1
            else:
                while True:
                    if self.peek() != '"':
                        raise self.fail(f"expected a key in the top-level object at line {self.line()}")
                    key = self.value("a top-level key")
                    self.expect(":", f"':' after key {key!r}")
                    if key == "cases" and not found:
                        found = True
                        if self.peek() != "[":
                            raise self.fail(f"'cases' must be a list (line {self.line()})")
                        yield from self.array("'cases'")
                    else:
                        self.value(f"the value of {key!r}")
                    if self.expect(",}", "',' or '}' in the top-level object") == "}":
                        break
            if not found:
                raise self.fail("the top-level object has no 'cases' list")
        else:
            raise self.fail("expected a list of cases or an object with a 'cases' list"
                            + ("" if first else " (the file is empty)"))
        if self.peek():
            raise self.fail(f"unexpected text after the cases at line {self.line()}")


# --- reading ---------------------------------------------------------------------------------------------------


def case_records(path: str | os.PathLike[str]) -> Iterator[tuple[str, Any, list[tuple[str, str]]]]:
    """The raw records of a ``.json`` or ``.csv`` case file, streamed, as ``(locator, record, problems)``: a
    record is None when the reader itself could not use it (``problems`` says why). Raises CaseFileError before
    the first record for a file that cannot be read at all."""
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in ("json", "csv"):
        raise CaseFileError(path.name, [(None, f"unknown case file type {path.suffix!r}; use .json or .csv")])
    if suffix == "csv":
        yield from _csv_cases(path, path.name)
        return
    with path.open("rb") as handle:
        yield from _json_cases(Utf8Text(handle), path.name)


def _json_cases(stream: TextIO, name: str) -> Iterator[tuple[str, Any, list[tuple[str, str]]]]:
    """The JSON records; JSON cannot be resynchronised, so when the file breaks after some records (bad syntax,
    a byte that is not UTF-8) those stay read and the rest is one rejection at the record where it broke. A
    break before the first record is the whole file's CaseFileError."""
    index = 0
    try:
        for record in _JsonStream(stream, name).records():
            yield f"{name}#record={index}", record, []
            index += 1
    except (CaseFileError, UnicodeDecodeError, RecursionError) as exc:
        if isinstance(exc, CaseFileError):
            code, text = INVALID_JSON, "; ".join(problem for _, problem in exc.problems)
        elif isinstance(exc, UnicodeDecodeError):
            code, text = BAD_ENCODING, f"byte {exc.object[exc.start:exc.start + 1].hex()} is not UTF-8 ({exc.reason})"
        else:
            code, text = INVALID_JSON, f"record {index} is nested too deeply to read"
        if not index:
            raise exc if isinstance(exc, CaseFileError) else CaseFileError(name, [(None, text)]) from None
        yield f"{name}#record={index}", None, [(code, f"{text}; record {index} and everything after it is not read")]


def case_from_record(locator: str, record: Any, early: list[tuple[str, str]],
                     first_seen: dict[str, str]) -> ContextCase | CaseRejection:
    """One raw record as a case or its rejection. A later record reusing a case_id is rejected
    (``duplicate_case_id`` names where the first one is); ``first_seen`` (case_id -> locator) is updated."""
    if record is None:
        return CaseRejection(locator, None, early[0][0], tuple(early))
    reported = {_FIELD_OF.get(code, "") for code, _ in early}
    result = validate_case(record, locator, reported)
    if early:
        problems = tuple(early) + (result.problems if isinstance(result, CaseRejection) else ())
        return CaseRejection(locator, result.case_id, problems[0][0], problems)
    if isinstance(result, ContextCase):
        earlier = first_seen.get(result.case_id)
        if earlier is not None:
            text = f"case_id {result.case_id!r} was already read at {earlier}"
            return CaseRejection(locator, result.case_id, "duplicate_case_id", (("duplicate_case_id", text),))
        first_seen[result.case_id] = locator
    return result


def iter_cases(stream: TextIO, name: str) -> Iterator[ContextCase | CaseRejection]:
    """The cases of an open JSON case text, one at a time; ``name`` goes into every locator."""
    first_seen: dict[str, str] = {}
    for locator, record, early in _json_cases(stream, name):
        yield case_from_record(locator, record, early, first_seen)


def read_cases(path: str | os.PathLike[str]) -> Iterator[ContextCase | CaseRejection]:
    """The cases of a ``.json`` or ``.csv`` file, streamed; see the module docstring for both layouts."""
    first_seen: dict[str, str] = {}
    for locator, record, early in case_records(path):
        yield case_from_record(locator, record, early, first_seen)


def cases_csv_text(cases: Sequence[ContextCase]) -> str:
    """The cases as a case CSV (the inverse of reading one), e.g. to hand a JSON case file to spreadsheet
    editors. Texts holding ``;`` or ``|`` cannot round-trip through CSV and raise ValueError."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for case in cases:
        listed = [*case.images, *(getattr(r, name) for r in case.rights for name in RIGHTS_FIELDS)]
        if any(LIST_SEPARATOR in value for value in listed) or any(OPTION_SEPARATOR in o.text for o in case.options):
            raise ValueError(f"case {case.case_id}: a value holds ';' or '|' and needs the JSON form")
        row = {
            "case_id": case.case_id, "images": LIST_SEPARATOR.join(case.images), "scenario": case.scenario,
            "question": case.question, "options": OPTION_SEPARATOR.join(f"{o.option_id}={o.text}" for o in case.options),
            "gold": case.gold, "gold_text": case.gold_text, "proposed_assessment": case.proposed_assessment or "",
            **{name: getattr(case, name) or "" for name in DESCRIPTION_FIELDS},
            "rationale": case.rationale, "source_basis": case.source_basis,
            "probe_model": case.probe.model if case.probe else "", "probe_answer": case.probe.answer if case.probe else "",
            "probe_note": case.probe.note if case.probe else "",
        }
        for name in RIGHTS_FIELDS:
            row[name] = LIST_SEPARATOR.join(getattr(r, name) for r in case.rights)
        writer.writerow(row)
    return buffer.getvalue()
