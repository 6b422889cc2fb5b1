"""Counterfactual edit pairs: the spec of one edit, the prompt sent to the edit model, the stored result, its
manual check, and the pair-level figures.

After AesCanvas ("Culture-Grounded Counterfactual Sensitivity", S2.2.2 and S3.2.3): a source image whose
answer is decided by one visual cue is edited so that only that cue is swapped for one that fits the use
scenario, which should flip the intended answer (the paper builds 36 such No-to-Yes pairs with an image-edit
model, asks the edit to keep the medium, composition, palette, viewpoint and everything else, and checks
every edit by hand, regenerating the failures). The edited image is a *synthetic diagnostic*: it never
revises the source's own label and never joins an accuracy split, so every record says so (``synthetic``,
``kind``) and ``guard_natural`` stops one from slipping into an export of natural images.

The source is a pool item (``source_id`` = its id), or one image of a ContextCanvas case (``source_id`` = the
case's id, ``#<position>`` for another image than the first of a multi-image case), since the paper's pairs are
ContextCanvas cases whose scenario stays while the cue changes. An edit may also be made elsewhere (by hand, or by
a model run outside aesforge) and supplied as a file (``edited_image``); it is then recorded with provider
``supplied`` and model ``file`` and checked by hand like any other.

Specs and manual-check decisions come from CSV sheets written by people, read row by row (``sheet_rows``): each
row is one input with its own outcome, named by its line (the header is line 1), so one bad row never costs the
others. Nothing here calls a model or touches the warehouse.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from assets.core.logic.textfiles import BAD_HEADER, read_csv_records
from warehouse.ids import digest_of, entity_id

KIND = "counterfactual_edit"
DEFAULT_LABELS = ("No", "Yes")
PENDING, APPROVED, REJECTED = "pending", "approved", "rejected"
CHECK_STATES = (PENDING, APPROVED, REJECTED)
TRANSITIONS: Mapping[str, frozenset[str]] = {
    PENDING: frozenset({APPROVED, REJECTED}),
    # A later look may still find a second, unintended change in an approved edit.
    APPROVED: frozenset({REJECTED}),
    # Final: a failed edit is regenerated, and a new output is a new record (its id hashes the output).
    REJECTED: frozenset(),
}
PROMPT_VERSION = "cf-edit-v1"
SPEC_COLUMNS = ("source_id", "decisive_cue", "instruction", "original_label", "intended_label")
EDITED_IMAGE = "edited_image"  # the optional spec column: a file holding an edit made elsewhere
SUPPLIED_PROVIDER, SUPPLIED_MODEL = "supplied", "file"  # how a supplied edit is recorded
# A case reference: the ContextCanvas case id alphabet, then an optional 0-based image position.
CASE_REF = re.compile(r"([A-Za-z0-9._-]+)(?:#([0-9]+))?")
MAX_CUE_CHARS = 300
MAX_INSTRUCTION_CHARS = 4000
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


# --- the spec -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CounterfactualSpec:
    """One planned edit: in ``source_id``'s image, change ``decisive_cue`` as ``instruction`` says, so that the
    answer should move from ``original_label`` to ``intended_label`` (the use scenario stays the same)."""

    source_id: str
    decisive_cue: str
    instruction: str
    original_label: str
    intended_label: str


class SpecError(ValueError):
    """A spec that cannot be used; ``problems`` lists ``(field, what is wrong)``."""

    reason_code = "invalid_counterfactual_spec"

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(f"{name}: {text}" for name, text in self.problems))


def _clean(text: str | None) -> str:
    return " ".join((text or "").split())


def _check_labels(labels: Sequence[str]) -> tuple[str, ...]:
    cleaned = tuple(_clean(label) for label in labels)
    if len(cleaned) < 2 or any(not label for label in cleaned) or len({label.lower() for label in cleaned}) != len(cleaned):
        raise ValueError(f"labels must be at least two distinct non-empty names, not {list(labels)!r}")
    return cleaned


def _canonical_label(value: str, labels: tuple[str, ...]) -> str | None:
    by_lower = {label.lower(): label for label in labels}
    return by_lower.get(_clean(value).lower())


@dataclass(frozen=True)
class SourceRef:
    """What a spec's ``source_id`` names: a pool item (an id with a ``:``, ``pool_item:...``), or image
    ``position`` (0-based) of the ContextCanvas case ``case_id`` (``<case_id>`` or ``<case_id>#<position>``)."""

    pool_item_id: str | None = None
    case_id: str | None = None
    position: int = 0

    @property
    def source_id(self) -> str:
        """The one spelling of the reference: ``#0`` is the default and left out, so both name one edit."""
        if self.case_id is None:
            return self.pool_item_id or ""
        return self.case_id if self.position == 0 else f"{self.case_id}#{self.position}"


def _source_problem(source_id: str) -> str | None:
    if ":" in source_id or CASE_REF.fullmatch(source_id):
        return None
    return (f"{source_id!r} is neither a pool item id (pool_item:...) nor a case id ([A-Za-z0-9._-]+) with an "
            "optional #<image position>")


def source_ref(source_id: str) -> SourceRef:
    """The source ``source_id`` names; raises SpecError when it names none."""
    source_id = _clean(source_id)
    problem = _source_problem(source_id) if source_id else "is empty"
    if problem:
        raise SpecError([("source_id", problem)])
    if ":" in source_id:
        return SourceRef(pool_item_id=source_id)
    match = CASE_REF.fullmatch(source_id)
    assert match is not None
    return SourceRef(case_id=match.group(1), position=int(match.group(2) or 0))


def spec_problems(spec: CounterfactualSpec, labels: Sequence[str] = DEFAULT_LABELS) -> list[tuple[str, str]]:
    """Everything wrong with ``spec`` as ``(field, message)``; empty when it is usable."""
    allowed = _check_labels(labels)
    problems: list[tuple[str, str]] = []
    source = _clean(spec.source_id)
    if not source:
        problems.append(("source_id", "is empty"))
    elif problem := _source_problem(source):
        problems.append(("source_id", problem))
    cue, instruction = _clean(spec.decisive_cue), _clean(spec.instruction)
    if not cue:
        problems.append(("decisive_cue", "is empty (name the one visual cue the edit changes)"))
    elif len(cue) > MAX_CUE_CHARS:
        problems.append(("decisive_cue", f"has {len(cue)} characters; at most {MAX_CUE_CHARS} (name one cue, briefly)"))
    if not instruction:
        problems.append(("instruction", "is empty (say what the cue becomes)"))
    elif len(instruction) > MAX_INSTRUCTION_CHARS:
        problems.append(("instruction", f"has {len(instruction)} characters; at most {MAX_INSTRUCTION_CHARS}"))
    original = _canonical_label(spec.original_label, allowed)
    intended = _canonical_label(spec.intended_label, allowed)
    for name, value, canonical in (("original_label", spec.original_label, original), ("intended_label", spec.intended_label, intended)):
        if canonical is None:
            problems.append((name, f"{value!r} is not one of {', '.join(allowed)}"))
    if original is not None and original == intended:
        problems.append(("intended_label", f"equals original_label ({original}); a counterfactual edit must change the answer"))
    return problems


def validate_spec(spec: CounterfactualSpec, labels: Sequence[str] = DEFAULT_LABELS) -> CounterfactualSpec:
    """``spec`` with whitespace collapsed, the source spelled one way (``SourceRef.source_id``) and labels spelled
    as in ``labels``; raises SpecError naming every bad field."""
    problems = spec_problems(spec, labels)
    if problems:
        raise SpecError(problems)
    allowed = _check_labels(labels)
    return CounterfactualSpec(
        source_id=source_ref(spec.source_id).source_id,
        decisive_cue=_clean(spec.decisive_cue),
        instruction=_clean(spec.instruction),
        original_label=_canonical_label(spec.original_label, allowed) or "",
        intended_label=_canonical_label(spec.intended_label, allowed) or "",
    )


def _spec_value(spec: CounterfactualSpec) -> dict[str, str]:
    return {
        "source_id": spec.source_id,
        "decisive_cue": spec.decisive_cue,
        "instruction": spec.instruction,
        "original_label": spec.original_label,
        "intended_label": spec.intended_label,
    }


# --- the prompt -----------------------------------------------------------------------------------------


def edit_prompt(spec: CounterfactualSpec) -> str:
    """The instruction sent to the edit model (version ``PROMPT_VERSION``): change the named cue and nothing
    else. The labels and the use scenario are deliberately left out, so the model edits what it is told to
    rather than steering the whole picture towards a verdict."""
    cue, instruction = _clean(spec.decisive_cue), _clean(spec.instruction)
    if not cue or not instruction:
        raise SpecError([(name, "is empty") for name, value in (("decisive_cue", cue), ("instruction", instruction)) if not value])
    if instruction[-1] not in ".!?":
        instruction += "."
    return (
        "Edit this image so that exactly one thing in it changes.\n"
        f"The element to change: {cue}.\n"
        f"The change: {instruction}\n"
        "Everything the change does not name stays as it is: the framing and composition, the viewpoint, the "
        "medium and rendering style (photograph, painting, illustration or render), the colour palette and "
        "lighting, and the identity, face, pose and clothing of every person, animal and object not named above. "
        "Do not crop, extend or re-frame the picture, and add no text, captions, borders, logos or watermarks. "
        "The result should read as the same image with only the named element changed."
    )


# --- the result -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckEvent:
    """One manual-check decision, kept on the record so its history travels with it."""

    from_state: str
    to_state: str
    reviewer: str
    note: str


@dataclass(frozen=True)
class CounterfactualRecord:
    """An edited image as stored: derived from ``source_id`` (image ``source_sha256``; for a case, image
    ``image_position`` of ``case_id``), made by ``model`` from ``prompt`` (or supplied as ``supplied_file``); always
    ``synthetic`` and of kind ``counterfactual_edit`` (neither can be set otherwise). It joins the diagnostic only
    once ``manual_check`` is ``approved``."""

    record_id: str
    source_id: str
    source_sha256: str
    decisive_cue: str
    instruction: str
    original_label: str
    intended_label: str
    prompt: str
    prompt_version: str
    provider: str
    model: str
    provider_model: str | None
    seed: int | None
    output_sha256: str
    output_mime: str
    manual_check: str = PENDING
    checked_by: str | None = None
    check_note: str | None = None
    history: tuple[CheckEvent, ...] = ()
    case_id: str | None = None           # the ContextCanvas case whose image was edited (None: a pool item)
    image_position: int | None = None    # which of the case's images (0-based)
    supplied_file: str | None = None     # provider ``supplied``: the file the edit was read from, by its name
    synthetic: bool = field(default=True, init=False)
    kind: str = field(default=KIND, init=False)

    def __post_init__(self) -> None:
        if self.manual_check not in CHECK_STATES:
            raise ValueError(f"manual_check must be one of {CHECK_STATES}, not {self.manual_check!r}")

    @property
    def spec(self) -> CounterfactualSpec:
        return CounterfactualSpec(self.source_id, self.decisive_cue, self.instruction, self.original_label, self.intended_label)

    def as_row(self) -> dict[str, Any]:
        """A flat row for the warehouse (history as a list of dicts)."""
        row = {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "history"}
        row["history"] = [vars(event).copy() for event in self.history]
        return row


def counterfactual_id(source_sha256: str, spec: CounterfactualSpec, model: str, output_sha256: str) -> str:
    """Content-derived id: the same source bytes, spec, model and output bytes always give the same id, and a
    regenerated edit (new output) a new one."""
    return entity_id(
        KIND, digest_of({"source_sha256": source_sha256, "spec": _spec_value(spec), "model": model, "output_sha256": output_sha256})
    )


def edit_record(
    spec: CounterfactualSpec,
    *,
    source_sha256: str,
    output_sha256: str,
    output_mime: str,
    provider: str,
    model: str,
    provider_model: str | None = None,
    seed: int | None = None,
    labels: Sequence[str] = DEFAULT_LABELS,
    supplied_file: str | None = None,
) -> CounterfactualRecord:
    """The record of a finished edit, pending its manual check. The spec is validated (SpecError) and the
    prompt rebuilt from it, so the stored prompt is exactly the one ``edit_prompt`` sends (for a supplied edit:
    what it was asked to change). The case and image it edits follow from the spec's source."""
    spec = validate_spec(spec, labels)
    source = source_ref(spec.source_id)
    problems = [
        (name, f"{value!r} is not a lower-case hex sha256")
        for name, value in (("source_sha256", source_sha256), ("output_sha256", output_sha256))
        if not _SHA256.match(value or "")
    ]
    if source_sha256 == output_sha256 and not problems:
        problems.append(("output_sha256", "equals source_sha256: the edit returned the source unchanged"))
    if not (output_mime or "").startswith("image/"):
        problems.append(("output_mime", f"{output_mime!r} is not an image type"))
    if not _clean(model):
        problems.append(("model", "is empty"))
    if not _clean(provider):
        problems.append(("provider", "is empty"))
    if problems:
        raise SpecError(problems)
    return CounterfactualRecord(
        record_id=counterfactual_id(source_sha256, spec, model, output_sha256),
        source_id=spec.source_id,
        source_sha256=source_sha256,
        decisive_cue=spec.decisive_cue,
        instruction=spec.instruction,
        original_label=spec.original_label,
        intended_label=spec.intended_label,
        prompt=edit_prompt(spec),
        prompt_version=PROMPT_VERSION,
        provider=provider,
        model=model,
        provider_model=provider_model,
        seed=seed,
        output_sha256=output_sha256,
        output_mime=output_mime,
        case_id=source.case_id,
        image_position=None if source.case_id is None else source.position,
        supplied_file=supplied_file,
    )


class CheckTransitionError(ValueError):
    """A manual-check change the rules do not allow."""

    reason_code = "invalid_manual_check_transition"


def transition(record: CounterfactualRecord, to_state: str, *, reviewer: str, note: str = "") -> CounterfactualRecord:
    """``record`` with its manual check moved to ``to_state``.

    Rules: pending -> approved or rejected; approved -> rejected; rejected is final (regenerate the edit
    instead). Every decision names its reviewer, and a rejection says why (``note``). Asking for the state the
    record is already in returns it unchanged, so re-reading the same review sheet is harmless.
    """
    if to_state not in CHECK_STATES:
        raise CheckTransitionError(f"{record.record_id}: unknown manual_check state {to_state!r}; expected one of {CHECK_STATES}")
    if to_state == record.manual_check:
        return record
    if to_state not in TRANSITIONS[record.manual_check]:
        allowed = ", ".join(sorted(TRANSITIONS[record.manual_check])) or "none (final)"
        raise CheckTransitionError(
            f"{record.record_id}: manual_check cannot go from {record.manual_check} to {to_state} (allowed: {allowed})"
        )
    reviewer, note = _clean(reviewer), _clean(note)
    if not reviewer:
        raise CheckTransitionError(f"{record.record_id}: a manual-check decision needs the reviewer's name")
    if to_state == REJECTED and not note:
        raise CheckTransitionError(f"{record.record_id}: a rejection needs a note saying what is wrong with the edit")
    event = CheckEvent(record.manual_check, to_state, reviewer, note)
    return replace(record, manual_check=to_state, checked_by=reviewer, check_note=note or None, history=(*record.history, event))


class ExportMixError(ValueError):
    """A synthetic counterfactual edit reached an export of natural images."""

    reason_code = "synthetic_in_natural_export"


def guard_natural(rows: Iterable[Mapping[str, Any]], id_key: str = "id") -> Iterator[Mapping[str, Any]]:
    """Pass rows of a natural-image export through, raising ExportMixError at the first synthetic one (a row
    whose ``synthetic`` is true or whose ``kind`` is ``counterfactual_edit``). Streams: one row at a time."""
    for number, row in enumerate(rows, start=1):
        if row.get("synthetic") or row.get("kind") == KIND:
            raise ExportMixError(f"row {number} ({id_key}={row.get(id_key, row.get('record_id'))!r}) is a synthetic counterfactual edit")
        yield row


# --- pair-level figures ---------------------------------------------------------------------------------

CORRECT, REVERSE, UNCHANGED = "correct", "reverse", "unchanged"


def directional_update(spec: CounterfactualSpec, on_original: str, on_edit: str) -> str:
    """How one model's answers moved across a pair: ``correct`` (original_label on the source, intended_label on
    the edit: both right), ``reverse`` (intended_label on the source, original_label on the edit: moved the
    wrong way), ``unchanged`` otherwise."""
    original, edited = _clean(on_original).lower(), _clean(on_edit).lower()
    if original == spec.original_label.lower() and edited == spec.intended_label.lower():
        return CORRECT
    if original == spec.intended_label.lower() and edited == spec.original_label.lower():
        return REVERSE
    return UNCHANGED


@dataclass(frozen=True)
class PairFigures:
    """Per model over approved pairs: accuracy on the sources and on the edits, pair accuracy (both right),
    correct and reverse updates, and the net correct update 100 * (correct - reverse) / pairs (percent)."""

    pairs: int
    original_accuracy: float
    edited_accuracy: float
    pair_accuracy: float
    correct: int
    reverse: int
    net_correct_update: float


def pair_figures(answers: Iterable[tuple[CounterfactualSpec, str, str]]) -> PairFigures:
    """Figures from ``(spec, answer on the source, answer on the edit)`` per pair (streamed)."""
    pairs = right_original = right_edit = correct = reverse = 0
    for spec, on_original, on_edit in answers:
        pairs += 1
        right_original += _clean(on_original).lower() == spec.original_label.lower()
        right_edit += _clean(on_edit).lower() == spec.intended_label.lower()
        update = directional_update(spec, on_original, on_edit)
        correct += update == CORRECT
        reverse += update == REVERSE
    if pairs == 0:
        raise ValueError("pair_figures needs at least one pair")
    return PairFigures(
        pairs=pairs,
        original_accuracy=100.0 * right_original / pairs,
        edited_accuracy=100.0 * right_edit / pairs,
        pair_accuracy=100.0 * correct / pairs,
        correct=correct,
        reverse=reverse,
        net_correct_update=100.0 * (correct - reverse) / pairs,
    )


# --- the sheets ---------------------------------------------------------------------------------------

DUPLICATE_ID = "duplicate_id"
CHECK_COLUMNS = ("record_id", "decision", "reviewer", "note")
# Spellings a reviewer may type (any case), mapped to the manual_check state they move the record to.
CHECK_DECISIONS: Mapping[str, str] = {"approved": APPROVED, "approve": APPROVED, "rejected": REJECTED, "reject": REJECTED}


@dataclass(frozen=True)
class SheetRow:
    """One row of a spec or check sheet: its cells (stripped), or ``problem`` ``(reason_code, detail)`` when the
    row cannot be used as it stands; ``file_level`` when the problem is the whole sheet's (no row can be read)."""

    line: int
    cells: Mapping[str, str] | None = None
    problem: tuple[str, str] | None = None
    file_level: bool = False


def sheet_rows(
    path: Path,
    required: Sequence[str],
    duplicate_key: Callable[[Mapping[str, str]], Hashable | None],
    is_blank: Callable[[Mapping[str, str]], bool] = lambda cells: False,
) -> Iterator[SheetRow]:
    """The rows of a CSV sheet, decoded line by line (assets/core/logic/textfiles.py: a line that is not UTF-8, or a row
    with more or fewer cells than the header, is that row's problem and the others are read). A header without
    the ``required`` columns is one ``file_level`` ``bad_header`` row; a row ``is_blank`` calls blank (nothing
    filled in yet) is skipped; a row whose ``duplicate_key`` an earlier row had is ``duplicate_id`` naming that
    line (the first row wins; a key of None, say an empty id, is the row's own problem, not a repeat)."""
    seen: dict[Hashable, int] = {}
    for record in read_csv_records(path):
        if record.problem:
            yield SheetRow(record.line, problem=record.problem, file_level=record.file_level)
            if record.file_level:
                return
            continue
        missing = [column for column in required if column not in record.fields]
        if missing:
            yield SheetRow(record.line, problem=(BAD_HEADER, f"missing column(s) {', '.join(missing)}; the sheet needs"
                                                             f" {', '.join(required)}"), file_level=True)
            return
        cells = {name: (value or "").strip() for name, value in record.fields.items()}
        if not any(cells.values()) or is_blank(cells):
            continue
        key = duplicate_key(cells)
        earlier = record.line if key is None else seen.setdefault(key, record.line)
        if earlier != record.line:
            yield SheetRow(record.line, cells, (DUPLICATE_ID, f"line {record.line}: repeats line {earlier}; the first wins"))
            continue
        yield SheetRow(record.line, cells)


def spec_rows(path: Path) -> Iterator[SheetRow]:
    """The rows of a spec sheet (columns ``SPEC_COLUMNS``, the optional ``edited_image``, others ignored); the same
    source, cue and instruction twice is ``duplicate_id``."""
    def key(cells: Mapping[str, str]) -> tuple[str, ...] | None:
        source = _clean(cells["source_id"])
        if source and not _source_problem(source):
            source = source_ref(source).source_id  # ctx-1 and ctx-1#0 are one source
        parts = (source, _clean(cells["decisive_cue"]).lower(), _clean(cells["instruction"]).lower())
        return parts if all(parts) else None

    return sheet_rows(path, SPEC_COLUMNS, key)


def spec_of_row(cells: Mapping[str, str], labels: Sequence[str] = DEFAULT_LABELS) -> CounterfactualSpec:
    """The validated spec of one sheet row; raises SpecError naming every bad field."""
    return validate_spec(CounterfactualSpec(*(cells[column] for column in SPEC_COLUMNS)), labels)


@dataclass(frozen=True)
class PlannedEdit:
    """One usable spec row: the spec, the image it edits, and the file holding the edit when it was made elsewhere
    (``edited_image``, relative to the sheet's folder; None: the configured edit model makes it)."""

    spec: CounterfactualSpec
    source: SourceRef
    edited_image: str | None


def _path_problem(path: str) -> str | None:
    if "\\" in path:
        return f"{path!r} uses backslashes; write it with /"
    if path.startswith("/") or re.match(r"[A-Za-z]:", path) or "://" in path:
        return f"{path!r} is absolute or a URL; give a path relative to the spec sheet's folder"
    return None


def planned_edit(cells: Mapping[str, str], labels: Sequence[str] = DEFAULT_LABELS) -> PlannedEdit:
    """The validated plan of one sheet row (an ``edited_image`` cell is optional); raises SpecError naming every
    bad field."""
    spec = CounterfactualSpec(*(cells[column] for column in SPEC_COLUMNS))
    edited = (cells.get(EDITED_IMAGE) or "").strip() or None
    problems = spec_problems(spec, labels)
    if edited is not None and (problem := _path_problem(edited)):
        problems.append((EDITED_IMAGE, problem))
    if problems:
        raise SpecError(problems)
    spec = validate_spec(spec, labels)
    return PlannedEdit(spec, source_ref(spec.source_id), edited)


@dataclass(frozen=True)
class CheckDecision:
    """One row of a manual-check sheet: move ``record_id`` to ``decision`` (``approved`` or ``rejected``)."""

    row: int
    record_id: str
    decision: str
    reviewer: str
    note: str


class CheckRowError(ValueError):
    """A manual-check row that cannot be used; names every problem."""

    reason_code = "invalid_check"


def check_rows(path: Path) -> Iterator[SheetRow]:
    """The rows of a manual-check sheet (columns ``CHECK_COLUMNS``, others ignored). A row whose decision and
    note are both empty is not checked yet and is skipped (a sheet can go out with the record ids filled in).
    One record may appear once per sheet: a second row for it is ``duplicate_id``, since which one should win is
    for the reviewers to say."""
    return sheet_rows(path, CHECK_COLUMNS, lambda c: _clean(c["record_id"]) or None,
                      is_blank=lambda c: not c["decision"] and not c["note"])


def check_decision(line: int, cells: Mapping[str, str]) -> CheckDecision:
    """One check row as a decision: a counterfactual edit id, a decision (approved or rejected, any case; approve
    and reject also accepted), the reviewer's name, and for a rejection a note saying what is wrong (the rules
    ``transition`` applies, caught here so the whole sheet comes back in one round). Raises CheckRowError.
    Whether the record exists and the move is allowed from its current state is for the caller."""
    record_id, raw, reviewer, note = (_clean(cells[column]) for column in CHECK_COLUMNS)
    decision = CHECK_DECISIONS.get(raw.lower())
    bad = []
    if not record_id:
        bad.append("record_id is empty")
    elif not record_id.startswith(f"{KIND}:"):
        bad.append(f"record_id {record_id!r} is not a counterfactual edit id ({KIND}:...)")
    if decision is None:
        bad.append(f"decision {raw!r} is not approved or rejected (approve/reject also accepted)")
    if not reviewer:
        bad.append("reviewer is empty")
    if decision == REJECTED and not note:
        bad.append("a rejection needs a note saying what is wrong with the edit")
    if bad or decision is None:
        raise CheckRowError("; ".join(bad))
    return CheckDecision(line, record_id, decision, reviewer, note)
