"""Poem-illustration survey exports: reading the rows, and the quality control that decides which ones count.

After TangPoetryBench (section 3, appendix D): each annotator sees one image, first picks which of four poems it
illustrates (phase 1, recognizability), then, with the true poem shown, answers the ten rubric questions of
``assets/poetry/logic/rubric.py`` with the option letters of the survey (phase 2). Quality control drops responses
answered too fast, annotators who answer too fast as a rule, annotators who gave the same answers to everything,
annotators whose phase-1 picks are too rarely right, and responses whose holistic answer contradicts their own
dimension answers. The text-integrity column is optional: its final label comes from OCR or adjudication.

Unlike review sheets, a survey export is not read all-or-nothing: thousands of independent people filled it in,
so one bad row says nothing about the others. ``survey_row`` checks one row on its own (its response, or every
reason it is bad), so a caller can take each row as its own item; ``parse_survey`` runs it over a whole export and
returns the good rows and every bad row with a reason code.
Rows are numbered as a spreadsheet shows them (the header is row 1).
"""

from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from assets.core.logic import sheets
from assets.poetry.logic.rubric import DIMENSION_KEYS, HOLISTIC, TEXT_INTEGRITY, RubricError, dimension
from warehouse.ids import digest_of, entity_id

PHASE1_LETTERS = ("A", "B", "C", "D")
GROUPS = ("expert", "crowd")
# The people's own rubric answers: the dimensions the constant-answer screen compares. Text integrity is left out,
# since an export may fill its column from OCR or adjudication rather than from the annotator.
RATED_DIMENSIONS = tuple(k for k in DIMENSION_KEYS if k != TEXT_INTEGRITY)
SURVEY_COLUMNS = ("annotator_id", "item_id", "phase1_choice", *RATED_DIMENSIONS, "seconds")
GROUP_COLUMN = "annotator_group"  # optional
TEXT_COLUMN = TEXT_INTEGRITY       # optional: the final text label comes from OCR or adjudication
IMAGE_COLUMN = "image_sha256"      # optional: the image the annotator saw, passed through from the item sheet
_SHA256 = re.compile(r"[0-9a-f]{64}")

# Row problems (reason codes stored with each rejected row).
MISSING_VALUE = "missing_value"          # a required cell is empty (annotator, item, phase 1, a dimension, seconds)
UNKNOWN_ITEM = "unknown_item"            # item_id is not one of the survey's items
INVALID_OPTION = "invalid_option"        # a dimension cell holds a letter that dimension does not offer
INVALID_PHASE1 = "invalid_phase1"        # phase1_choice is not A-D
INVALID_SECONDS = "invalid_seconds"      # seconds is not a finite number >= 0
INVALID_GROUP = "invalid_group"          # annotator_group is given but is neither expert nor crowd
DUPLICATE_RESPONSE = "duplicate_response"  # the same annotator answered the same item on an earlier row
EXTRA_CELLS = "extra_cells"              # more cells than the header: an unquoted comma shifted the row
INVALID_IMAGE = "invalid_image_sha256"   # image_sha256 is given but is not a sha256 in hex

# Quality-control reason codes.
TOO_FAST = "too_fast"
TOO_FAST_ANNOTATOR = "too_fast_annotator"
HOLISTIC_INCONSISTENT = "holistic_inconsistent"
STALE_IMAGE = "stale_image"              # the response rates an image the item no longer shows (it was regenerated)
CONSTANT_ANSWERS = "constant_answers"
LOW_PHASE1_ACCURACY = "low_phase1_accuracy"
ANNOTATOR_EXCLUDED = "annotator_excluded"

RowProblem = tuple[int, str, str]  # (spreadsheet row, reason code, message)


class SurveyError(sheets.SheetError):
    """A survey export that cannot be used: a whole-sheet problem (raised at once), or the bad rows of a parse."""

    reason_code = "malformed_survey"
    prefix = "survey"


@dataclass(frozen=True)
class SurveyResponse:
    """One annotator's answers for one illustration item (one row of the export)."""

    row: int
    annotator_id: str
    item_id: str
    phase1_choice: str          # upper-case letter A-D
    phase1_correct: bool
    answers: dict[str, str]     # dimension key -> lower-case option letter; text_integrity only when the export has it
    seconds: float
    annotator_group: str | None  # expert | crowd | None when the export does not say
    image_sha256: str | None = None  # the image rated, when the export passes the item sheet's column through

    @property
    def response_id(self) -> str:
        """Content-derived: ``survey_response:`` + the digest of (annotator_id, item_id), the pair the export holds at
        most once; it is the response's entity id in the warehouse."""
        return entity_id("survey_response", digest_of([self.annotator_id, self.item_id]))

    def scores(self) -> dict[str, float | None]:
        """Each dimension's score in [0, 1], or None where the annotator marked it not applicable."""
        return {key: dimension(key).score(letter) for key, letter in self.answers.items()}

    def as_dict(self) -> dict[str, Any]:
        return {"response_id": self.response_id, "row": self.row, "annotator_id": self.annotator_id,
                "item_id": self.item_id, "phase1_choice": self.phase1_choice, "phase1_correct": self.phase1_correct,
                "answers": dict(self.answers), "scores": self.scores(), "seconds": self.seconds,
                "annotator_group": self.annotator_group, "image_sha256": self.image_sha256}


@dataclass(frozen=True)
class SurveyParse:
    """The good rows of an export, and every bad row with its reason (a row may have several problems)."""

    responses: list[SurveyResponse]
    problems: list[RowProblem]
    sheet: str = ""
    blank: int = 0  # empty rows, skipped

    def error(self) -> SurveyError | None:
        """A SurveyError naming every bad row, or None when there is none."""
        if not self.problems:
            return None
        return SurveyError(self.sheet, [(row, f"{message} [{reason}]") for row, reason, message in self.problems])

    def raise_for_problems(self) -> None:
        error = self.error()
        if error is not None:
            raise error

    def as_dict(self) -> dict[str, Any]:
        return {"sheet": self.sheet, "blank": self.blank, "responses": [r.as_dict() for r in self.responses],
                "problems": [{"row": row, "reason_code": reason, "message": message}
                             for row, reason, message in self.problems]}


@dataclass(frozen=True)
class SurveyRow:
    """One non-blank row of an export as read, before its meaning is checked. ``earlier_row`` is the row that
    already gave the same (annotator, item), found while reading so the per-row check stays pure."""

    row: int
    cells: dict[str, str]
    earlier_row: int | None = None


@dataclass(frozen=True)
class SurveySheet:
    """An export's rows; ``problems`` are the rows the reader left out (more cells than the header)."""

    rows: list[SurveyRow]
    has_group: bool
    has_image: bool
    problems: list[RowProblem]
    blank: int = 0


def read_survey_rows(stream: TextIO, sheet: str) -> SurveySheet:
    """The rows of a survey export (see SURVEY_COLUMNS, optional ``text_integrity``, ``annotator_group`` and
    ``image_sha256``).

    A missing column raises SurveyError at once (no row can be read without it). A second row for the same
    (annotator, item) carries the first one's number, whichever of the two is otherwise fine: the export does
    not say which one the annotator meant.
    """
    reader = sheets.SheetReader(stream, sheet, SURVEY_COLUMNS, SurveyError, needs="a survey export")
    rows = []
    for row, cells in reader:
        annotator, item = cells["annotator_id"], cells["item_id"]
        rows.append(SurveyRow(row, cells, reader.earlier_row((annotator, item), row) if annotator and item else None))
    # SheetReader's own findings (rows wider than the header) carry no code; they are the one kind it reports.
    return SurveySheet(rows, GROUP_COLUMN in reader.header, IMAGE_COLUMN in reader.header,
                       [(row or 1, EXTRA_CELLS, text) for row, text in reader.problems], reader.blank)


def survey_row(row: int, cells: Mapping[str, str], answer_key: Mapping[str, str], has_group: bool, has_image: bool,
               earlier_row: int | None) -> SurveyResponse | list[tuple[str, str]]:
    """Check one row's meaning: its response, or every ``(reason, message)`` it has, in column order.

    ``answer_key`` maps each item id of the survey to the letter of its true poem among the phase-1 options
    (either case); ``earlier_row`` is the row that already answered the same (annotator, item), if any.
    """
    found: list[tuple[str, str]] = []
    annotator, item = cells["annotator_id"], cells["item_id"]
    for column in ("annotator_id", "item_id"):
        if not cells[column]:
            found.append((MISSING_VALUE, f"{column} is empty"))
    if item and item not in answer_key:
        found.append((UNKNOWN_ITEM, f"item_id {item!r} is not an item of this survey"))
    phase1 = cells["phase1_choice"].upper()
    if not phase1:
        found.append((MISSING_VALUE, "phase1_choice is empty"))
    elif phase1 not in PHASE1_LETTERS:
        found.append((INVALID_PHASE1, f"phase1_choice {cells['phase1_choice']!r} is not one of {', '.join(PHASE1_LETTERS)}"))
    answers: dict[str, str] = {}
    for dim_key in DIMENSION_KEYS:
        if dim_key not in cells:  # the optional text-integrity column
            continue
        letter = cells[dim_key].lower()
        if not letter:
            found.append((MISSING_VALUE, f"{dim_key} is empty"))
            continue
        try:
            dimension(dim_key).option(letter)
        except RubricError:
            allowed = ", ".join(o.letter for o in dimension(dim_key).options)
            found.append((INVALID_OPTION, f"{dim_key} {cells[dim_key]!r} is not an option (allowed: {allowed})"))
            continue
        answers[dim_key] = letter
    seconds = _seconds(cells["seconds"], found)
    group = cells[GROUP_COLUMN].lower() if has_group else ""
    if group and group not in GROUPS:
        found.append((INVALID_GROUP, f"{GROUP_COLUMN} {cells[GROUP_COLUMN]!r} is not one of {', '.join(GROUPS)}"))
    image = cells[IMAGE_COLUMN].lower() if has_image else ""
    if image and not _SHA256.fullmatch(image):
        found.append((INVALID_IMAGE, f"{IMAGE_COLUMN} {cells[IMAGE_COLUMN][:20]!r} is not a sha256 in hex"))
    if earlier_row is not None:
        # the row numbers find the pair; the annotator's id is not repeated (it is stored only as a pseudonym)
        found.append((DUPLICATE_RESPONSE, f"this row's annotator already answered item {item!r} on row {earlier_row}"))
    if found:
        return found
    assert seconds is not None
    correct = phase1 == answer_key[item].strip().upper()
    return SurveyResponse(row, annotator, item, phase1, correct, answers, seconds, group or None, image or None)


def parse_survey(stream: TextIO, sheet: str, answer_key: Mapping[str, str]) -> SurveyParse:
    """Read and check a whole survey export (``read_survey_rows``, then ``survey_row`` on each row): a bad row
    is left out of ``responses`` and listed in ``problems`` with every reason it has."""
    read = read_survey_rows(stream, sheet)
    responses: list[SurveyResponse] = []
    problems: list[RowProblem] = []
    for line in read.rows:
        checked = survey_row(line.row, line.cells, answer_key, read.has_group, read.has_image, line.earlier_row)
        if isinstance(checked, SurveyResponse):
            responses.append(checked)
        else:
            problems.extend((line.row, reason, message) for reason, message in checked)
    problems.extend(read.problems)
    problems.sort(key=lambda p: p[0])  # stable: a row's problems stay in column order
    return SurveyParse(responses, problems, sheet, read.blank)


def _seconds(cell: str, found: list[tuple[str, str]]) -> float | None:
    if not cell:
        found.append((MISSING_VALUE, "seconds is empty"))
        return None
    try:
        value = float(cell)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        found.append((INVALID_SECONDS, f"seconds {cell!r} is not a non-negative number"))
        return None
    return value


# --- quality control ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QcParams:
    """Quality-control thresholds (the paper names the checks, not their values; these defaults are ours).

    - ``min_seconds`` (15.0): a response answered faster than this cannot have read the poem and ten questions;
      the response is dropped (``too_fast``).
    - ``min_median_seconds`` (20.0): an annotator whose median response time is below this skims as a rule, even
      when no single response is under ``min_seconds``; the annotator is excluded (``too_fast_annotator``).
    - ``constant_min_responses`` (4): an annotator with at least this many responses who gave the same letters on
      every rated dimension (``RATED_DIMENSIONS``: text integrity may be filled from OCR or adjudication, so it is
      not compared) in every one of them is not looking at the images (``constant_answers``). Fewer
      responses than this can agree by chance (several good images in a row).
    - ``phase1_min_accuracy`` (0.5) with ``phase1_min_items`` (4): an annotator with at least that many responses
      whose phase-1 picks are right less often than the floor is excluded (``low_phase1_accuracy``); picking at
      random among four poems is right 25% of the time.
    - ``max_holistic_gap`` (0.5): a response whose overall-impression score is further than this from the mean
      of its other applicable dimension scores contradicts itself (``holistic_inconsistent``); compared with
      a 1e-9 tolerance so a gap of exactly the limit is kept despite float rounding.
    """

    min_seconds: float = 15.0
    min_median_seconds: float = 20.0
    constant_min_responses: int = 4
    phase1_min_accuracy: float = 0.5
    phase1_min_items: int = 4
    max_holistic_gap: float = 0.5

    def __post_init__(self) -> None:
        if not (math.isfinite(self.min_seconds) and self.min_seconds >= 0):
            raise ValueError(f"min_seconds must be a number >= 0, not {self.min_seconds!r}")
        if not (math.isfinite(self.min_median_seconds) and self.min_median_seconds >= 0):
            raise ValueError(f"min_median_seconds must be a number >= 0, not {self.min_median_seconds!r}")
        if self.constant_min_responses < 2:
            raise ValueError(f"constant_min_responses must be >= 2, not {self.constant_min_responses!r}")
        if not 0 <= self.phase1_min_accuracy <= 1:
            raise ValueError(f"phase1_min_accuracy must be in [0, 1], not {self.phase1_min_accuracy!r}")
        if self.phase1_min_items < 1:
            raise ValueError(f"phase1_min_items must be >= 1, not {self.phase1_min_items!r}")
        if not 0 <= self.max_holistic_gap <= 1:
            raise ValueError(f"max_holistic_gap must be in [0, 1], not {self.max_holistic_gap!r}")

    def as_dict(self) -> dict[str, Any]:
        return {"min_seconds": self.min_seconds, "min_median_seconds": self.min_median_seconds,
                "constant_min_responses": self.constant_min_responses,
                "phase1_min_accuracy": self.phase1_min_accuracy, "phase1_min_items": self.phase1_min_items,
                "max_holistic_gap": self.max_holistic_gap}


@dataclass(frozen=True)
class Exclusion:
    level: str          # "response" | "annotator"
    subject: str        # response_id or annotator_id
    reason_code: str
    detail: str         # the numbers behind the decision

    def as_dict(self) -> dict[str, Any]:
        return {"level": self.level, "subject": self.subject, "reason_code": self.reason_code, "detail": self.detail}


@dataclass(frozen=True)
class QcResult:
    kept: list[SurveyResponse]
    exclusions: list[Exclusion] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"kept": [r.response_id for r in self.kept], "exclusions": [e.as_dict() for e in self.exclusions]}


def holistic_gap(response: SurveyResponse) -> tuple[float, float, int]:
    """(gap, mean of the other applicable dimension scores, how many) for one response's holistic answer."""
    scores = response.scores()
    overall = scores[HOLISTIC]
    others = [s for k, s in scores.items() if k != HOLISTIC and s is not None]
    if overall is None or not others:
        return 0.0, math.nan, len(others)
    mean = sum(others) / len(others)
    return abs(overall - mean), mean, len(others)


def quality_control(responses: Iterable[SurveyResponse], params: QcParams | None = None,
                    current_images: Mapping[str, str] | None = None) -> QcResult:
    """Keep the responses that pass every check; record one exclusion per dropped response and per annotator.

    Annotator checks (median response time, constant answers, phase-1 accuracy) run over all of an annotator's
    responses, fast or not;
    an excluded annotator's responses are each dropped as ``annotator_excluded`` naming the annotator's reason.
    Otherwise a response is dropped for the first of ``stale_image``, ``too_fast``, ``holistic_inconsistent`` it
    fails (the detail mentions the others too). ``stale_image``: the response names the image it rated
    (``image_sha256``) and ``current_images`` (item id -> the image the item shows now) says the item has since
    been given another image; a response that names no image is taken to rate the current one. Output order: annotator exclusions by annotator id, then response
    exclusions and kept responses in input order.
    """
    params = params or QcParams()
    by_annotator: dict[str, list[SurveyResponse]] = defaultdict(list)
    order: list[SurveyResponse] = []
    for response in responses:
        by_annotator[response.annotator_id].append(response)
        order.append(response)
    annotator_reason: dict[str, tuple[str, str]] = {}
    for annotator in sorted(by_annotator):
        findings = _annotator_findings(by_annotator[annotator], params)
        if findings:
            reason = findings[0][0]
            annotator_reason[annotator] = (reason, "; ".join(detail for _, detail in findings))
    exclusions = [Exclusion("annotator", a, reason, detail) for a, (reason, detail) in annotator_reason.items()]
    kept: list[SurveyResponse] = []
    for response in order:
        if response.annotator_id in annotator_reason:
            reason, _ = annotator_reason[response.annotator_id]
            exclusions.append(Exclusion("response", response.response_id, ANNOTATOR_EXCLUDED,
                                        f"annotator {response.annotator_id!r} excluded: {reason}"))
            continue
        findings = _response_findings(response, params, (current_images or {}).get(response.item_id))
        if findings:
            exclusions.append(Exclusion("response", response.response_id, findings[0][0],
                                        "; ".join(detail for _, detail in findings)))
            continue
        kept.append(response)
    return QcResult(kept, exclusions)


def _annotator_findings(mine: list[SurveyResponse], params: QcParams) -> list[tuple[str, str]]:
    findings: list[tuple[str, str]] = []
    n = len(mine)
    median = statistics.median(r.seconds for r in mine)
    if median < params.min_median_seconds:
        findings.append((TOO_FAST_ANNOTATOR, f"median response time {median} s over {n} responses"
                                             f" < {params.min_median_seconds} s"))
    if n >= params.constant_min_responses:
        first = tuple(mine[0].answers.get(k) for k in RATED_DIMENSIONS)
        if all(tuple(r.answers.get(k) for k in RATED_DIMENSIONS) == first for r in mine[1:]):
            findings.append((CONSTANT_ANSWERS, f"the same answers on the {len(RATED_DIMENSIONS)} rated dimensions"
                                               f" ({''.join(str(a) for a in first)}) in all {n} responses"))
    if n >= params.phase1_min_items:
        correct = sum(r.phase1_correct for r in mine)
        accuracy = correct / n
        if accuracy < params.phase1_min_accuracy:
            findings.append((LOW_PHASE1_ACCURACY,
                             f"phase-1 accuracy {accuracy:.3f} ({correct}/{n}) < {params.phase1_min_accuracy}"))
    return findings


def _response_findings(response: SurveyResponse, params: QcParams, current_image: str | None) -> list[tuple[str, str]]:
    findings: list[tuple[str, str]] = []
    if response.image_sha256 and current_image and response.image_sha256 != current_image:
        findings.append((STALE_IMAGE, f"rated image {response.image_sha256[:12]}, the item now shows {current_image[:12]}"))
    if response.seconds < params.min_seconds:
        findings.append((TOO_FAST, f"{response.seconds} s < {params.min_seconds} s"))
    gap, mean, n_others = holistic_gap(response)
    if gap > params.max_holistic_gap + 1e-9:
        overall = response.scores()[HOLISTIC]
        findings.append((HOLISTIC_INCONSISTENT, f"overall impression {overall} vs mean {mean:.3f} of {n_others} other "
                                                f"dimensions: gap {gap:.3f} > {params.max_holistic_gap}"))
    return findings
