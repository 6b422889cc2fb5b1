"""Expert review of contextual-suitability cases: the seven retention criteria, review sheets, retention decisions.

After ContextCanvas (seed paper 000, "ContextCanvas Construction and Review", S2.1.3, S2.3.1): every candidate
case is checked by several reviewers against seven criteria and kept only when all seven hold; borderline cases
go to the panel, whose adjudication is final. A development-time probe model may flag a case for a closer
look, but a model's failure never decides retention, so nothing here reads probe answers.

The review sheet is CSV because reviewers work in spreadsheets; rows are numbered as a spreadsheet shows them
(header = row 1). It is read whole or not at all (one bad row rejects the sheet, and the error lists every bad
row), so a half-read sheet never flips a case. Columns: ``case_id``, ``reviewer``, one column per criterion
holding pass or fail (yes/no, y/n, 1/0 also accepted), optional ``final`` (yes on the panel's adjudication row)
and ``note``; any other column (the blank sheet also shows the scenario, question, options and gold) is ignored.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from assets.core.logic import sheets
from assets.context_canvas.logic.case_records import ContextCase


@dataclass(frozen=True)
class Criterion:
    key: str
    name: str
    definition: str  # our own one-line wording of what must hold for the case to stay


CRITERIA: tuple[Criterion, ...] = (
    Criterion("aesthetic_centrality", "Aesthetic centrality",
              "The question is about the image as a visual choice for a use, not about facts it happens to show."),
    Criterion("context_dependence", "Context dependence",
              "The stated purpose, audience or convention changes the verdict; how good the image looks cannot "
              "settle it alone."),
    Criterion("visual_necessity", "Visual necessity",
              "Someone who only read the scenario, question and options could not answer; the image must be seen."),
    Criterion("decisive_evidence", "Decisive evidence",
              "A specific cultural, historical, narrative or functional fact tied to what is visible moves the answer."),
    Criterion("scenario_naturalness", "Scenario naturalness",
              "The use described is one a designer, curator, editor or communicator could really face."),
    Criterion("answerability", "Answerability",
              "Exactly one option can be defended from what is visible plus the stated context."),
    Criterion("anti_shortcut_validity", "Anti-shortcut validity",
              "Neither the wording, nor option lengths, nor the usual share of Yes answers gives the answer away."),
)
CRITERION_KEYS = tuple(c.key for c in CRITERIA)

RETAINED, REJECTED, NEEDS_ADJUDICATION, UNREVIEWED = "retained", "rejected", "needs_adjudication", "unreviewed"
STATUSES = (RETAINED, REJECTED, NEEDS_ADJUDICATION, UNREVIEWED)

PASS_VALUES = {"pass": True, "yes": True, "y": True, "1": True, "true": True,
               "fail": False, "no": False, "n": False, "0": False, "false": False}
FINAL_VALUES = {"yes": True, "y": True, "1": True, "true": True, "final": True,
                "": False, "no": False, "n": False, "0": False, "false": False}
REQUIRED_COLUMNS = ("case_id", "reviewer", *CRITERION_KEYS)
SHEET_COLUMNS = ("case_id", "images", "scenario", "question", "proposed_assessment", "options", "gold", "gold_text",
                 "reviewer", *CRITERION_KEYS, "final", "note")


class ReviewSheetError(sheets.SheetError):
    """A returned case review sheet that cannot be read; names the sheet and every offending row."""

    reason_code = "malformed_case_review_sheet"
    prefix = "case review sheet"


@dataclass(frozen=True)
class CaseReview:
    """One reviewer's verdicts on one case (or, with ``final``, the panel's adjudication)."""

    case_id: str
    reviewer: str
    passed: tuple[bool, ...]   # one per criterion, in CRITERIA order
    final: bool
    note: str
    sheet: str
    row: int

    def __post_init__(self) -> None:
        if len(self.passed) != len(CRITERIA):
            raise ValueError(f"a case review needs {len(CRITERIA)} verdicts, got {len(self.passed)}")

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(key for key, ok in zip(CRITERION_KEYS, self.passed) if not ok)

    @property
    def passed_all(self) -> bool:
        return all(self.passed)

    def verdicts(self) -> dict[str, bool]:
        return dict(zip(CRITERION_KEYS, self.passed))


def _norm(name: str) -> str:
    return " ".join(name.split()).casefold()


def _unfilled(cells: dict[str, str]) -> bool:
    """Not reviewed yet: no verdict and no final mark (a prefilled case id or reviewer alone is not a review)."""
    return not any(cells[key] for key in CRITERION_KEYS) and not cells.get("final", "")


def parse_reviews(stream: TextIO, sheet: str, known_cases: Collection[str]) -> tuple[list[CaseReview], int]:
    """The reviews in a returned sheet, and how many rows were left blank (not reviewed yet).

    ``known_cases`` holds the case ids under review (a set, or a mapping keyed by case id). Every filled row
    needs a known case, a reviewer and all seven verdicts. A reviewer reviews a case once; a case has at most
    one final row. Reviewer names compare case- and space-insensitively ("Ana" = "ana ").
    """
    reader = sheets.SheetReader(stream, sheet, REQUIRED_COLUMNS, ReviewSheetError, needs="a case review sheet",
                                trailing_empty_cells_ok=True, is_blank=_unfilled)
    reviews: list[CaseReview] = []
    for row_number, cells in reader:
        case_id, reviewer = cells["case_id"], cells["reviewer"]
        problems: list[str] = []
        if not case_id:
            problems.append("case_id is empty")
        elif case_id not in known_cases:
            problems.append(f"case_id {case_id!r} is not a case under review")
        if not reviewer:
            problems.append("reviewer is empty")
        passed: list[bool] = []
        for key in CRITERION_KEYS:
            value = PASS_VALUES.get(cells[key].lower())
            if value is None:
                shown = repr(cells[key]) if cells[key] else "empty"
                problems.append(f"{key} is {shown}; write pass or fail (yes/no, y/n, 1/0 also accepted)")
            else:
                passed.append(value)
        final = FINAL_VALUES.get(cells.get("final", "").lower())
        if final is None:
            problems.append(f"final is {cells['final']!r}; write yes on the panel's adjudication row, else leave it empty")
        if problems:
            reader.problem(row_number, "; ".join(problems))
            continue
        assert final is not None
        if final:
            earlier = reader.earlier_row(("final", case_id), row_number)
            if earlier is not None:
                reader.problem(row_number, f"case {case_id} already has a final (adjudication) row on row {earlier}")
                continue
        else:
            earlier = reader.earlier_row(("review", case_id, _norm(reviewer)), row_number)
            if earlier is not None:
                reader.problem(row_number, f"reviewer {reviewer!r} already reviewed case {case_id} on row {earlier}")
                continue
        reviews.append(CaseReview(case_id, reviewer, tuple(passed), final, cells.get("note", ""), sheet, row_number))
    reader.finish()
    return reviews, reader.blank


@dataclass(frozen=True)
class Retention:
    status: str                          # retained | rejected | needs_adjudication | unreviewed
    failed_criteria: tuple[str, ...]     # rejected: the failing criteria; needs_adjudication: the split ones
    reasons: list[str] = field(default_factory=list)
    reviewers: tuple[str, ...] = ()      # who reviewed, in sheet order (the panel row's reviewer included)

    @property
    def retained(self) -> bool:
        return self.status == RETAINED


def retention(reviews_of_one_case: Sequence[CaseReview], min_reviewers: int = 2) -> Retention:
    """Whether one case stays in the benchmark, and why.

    - A ``final`` row (the panel's adjudication) decides alone: retained when it passes all seven criteria,
      else rejected for the ones it fails.
    - Otherwise, with fewer than ``min_reviewers`` reviewers the case is ``unreviewed`` (still pending; the
      reasons say what the reviews so far found): one person's view neither keeps nor drops a case.
    - With enough reviewers: ``retained`` when every reviewer passed all seven; ``rejected`` when some criterion
      was failed by every reviewer (the reasons name the criteria and the reviewers); else
      ``needs_adjudication``, naming each criterion the reviewers split on and who failed it.
    """
    if min_reviewers < 1:
        raise ValueError("min_reviewers must be at least 1")
    reviews = list(reviews_of_one_case)
    if len({r.case_id for r in reviews}) > 1:
        raise ValueError(f"retention() takes the reviews of one case, got cases {sorted({r.case_id for r in reviews})}")
    reviewers = tuple(dict.fromkeys(r.reviewer for r in reviews))
    finals = [r for r in reviews if r.final]
    if len(finals) > 1:
        raise ValueError(f"case {finals[0].case_id} has {len(finals)} final rows (rows {[r.row for r in finals]})")
    if finals:
        panel = finals[0]
        where = f"panel adjudication by {panel.reviewer} (row {panel.row})"
        if panel.passed_all:
            return Retention(RETAINED, (), [f"{where}: all seven criteria pass"], reviewers)
        return Retention(REJECTED, panel.failed, [f"{where}: fails {key}" for key in panel.failed], reviewers)
    if not reviews:
        return Retention(UNREVIEWED, (), ["no review yet"], reviewers)
    failed_by = {key: [r.reviewer for r in reviews if key in r.failed] for key in CRITERION_KEYS}
    if len(reviews) < min_reviewers:
        so_far = [f"{key} failed by {', '.join(who)}" for key, who in failed_by.items() if who]
        return Retention(UNREVIEWED, (), [f"{len(reviews)} of {min_reviewers} required reviews"] + so_far, reviewers)
    everyone = [key for key, who in failed_by.items() if len(who) == len(reviews)]
    split = [key for key, who in failed_by.items() if 0 < len(who) < len(reviews)]
    if everyone:
        reasons = [f"{key} failed by every reviewer ({', '.join(failed_by[key])})" for key in everyone]
        reasons += [f"also split on {key}: failed by {', '.join(failed_by[key])}" for key in split]
        return Retention(REJECTED, tuple(everyone), reasons, reviewers)
    if split:
        reasons = [
            f"{key}: failed by {', '.join(failed_by[key])}, passed by "
            f"{', '.join(r.reviewer for r in reviews if key not in r.failed)}"
            for key in split
        ]
        return Retention(NEEDS_ADJUDICATION, tuple(split), reasons, reviewers)
    return Retention(RETAINED, (), [f"all seven criteria passed by {len(reviews)} reviewers ({', '.join(reviewers)})"],
                     reviewers)


def retentions(case_ids: Iterable[str], reviews: Iterable[CaseReview], min_reviewers: int = 2) -> dict[str, Retention]:
    """``retention`` for every case id given (a case nobody reviewed is ``unreviewed``), in the order given."""
    by_case: dict[str, list[CaseReview]] = {}
    for review in reviews:
        by_case.setdefault(review.case_id, []).append(review)
    return {case_id: retention(by_case.get(case_id, []), min_reviewers) for case_id in case_ids}


def review_sheet_rows(cases: Iterable[ContextCase], reviewers: Sequence[str] = ()) -> list[dict[str, str]]:
    """Rows of a blank review sheet (keys: SHEET_COLUMNS), one per case, or one per case and reviewer when
    ``reviewers`` are given. The case's text is shown for reading; only the columns the parser needs count."""
    rows = []
    for case in cases:
        for reviewer in reviewers or ("",):
            row = {
                "case_id": case.case_id,
                "images": "; ".join(case.images),
                "scenario": case.scenario,
                "question": case.question,
                "proposed_assessment": case.proposed_assessment or "",
                "options": " | ".join(f"{o.option_id}={o.text}" for o in case.options),
                "gold": case.gold,
                "gold_text": case.gold_text,
                "reviewer": reviewer,
                "final": "",
                "note": "",
            }
            row.update({key: "" for key in CRITERION_KEYS})
            rows.append({name: row[name] for name in SHEET_COLUMNS})
    return rows
