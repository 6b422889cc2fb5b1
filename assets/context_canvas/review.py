"""Review of contextual-suitability cases against the seven retention criteria (ContextCanvas S2.1.3, S2.3.1).

Pure logic: assets/context_canvas/logic/retention.py. The stage writes a blank review sheet (one row per case, the case's
text shown for reading), reads every new or changed returned sheet whole or not at all, and decides each case:
retained only when every criterion holds (unanimous reviewers, or the panel's ``final`` row), rejected or sent to
adjudication with the criteria and reviewers named. Sheets go through the item loop, one sheet file per item. A
malformed sheet fails the run naming its rows, after the good sheets are stored; it keeps failing until it is
fixed or removed.
"""

import csv
import json
from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, Failure, MaterializeResult, asset

from assets.context_canvas.cases import context_cases
from assets.context_canvas.settings import ContextSettings
from assets.core.exports import ExportFile, export_names, write_file
from assets.context_canvas.logic.case_records import ContextCase
from assets.context_canvas.logic.retention import (
    CRITERION_KEYS,
    SHEET_COLUMNS,
    CaseReview,
    ReviewSheetError,
    parse_reviews,
    retentions,
    review_sheet_rows,
)
from assets.context_canvas.store import record_review_sheet, replace_retentions, stored_cases
from assets.core.logic.sheets import SheetError, read_sheet_file
from assets.core.returned_sheets import ingest_sheets
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from resources.warehouse import WarehouseResource
from warehouse.db import registered
from warehouse.ids import entity_id
from warehouse.lineage import ActivityLog

REVIEW_STAGE = "context_case_review"


@asset(
    metadata=writes("context_review", "context_retention", "context_review_sheet"),
    code_version="1",
    deps=[context_cases],
    description="The case review sheet for the panel, the returned sheets read whole or not at all, and each case"
    " retained only when all seven criteria hold (else rejected or awaiting adjudication, with reasons).",
)
def context_case_review(context: AssetExecutionContext, warehouse: WarehouseResource, context_canvas: ContextSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    params = {"min_reviewers": context_canvas.min_reviewers, "returned_dir": wh.name_of(context_canvas.returned_dir)}
    with recorded_step(context, wh, params) as step:
        with step.batch() as log:
            cases = stored_cases(log.con)
        _write_blank_sheet(step, cases, Path(context_canvas.sheet_dir) / "context_review_sheet.csv")
        problems = _ingest(step, Path(context_canvas.returned_dir), {c.case_id for c in cases})
        with step.batch() as log:
            reviews = [CaseReview(case_id, reviewer, tuple(json.loads(criteria)[k] for k in CRITERION_KEYS), final, note or "",
                                  sheet, row)
                       for case_id, reviewer, criteria, final, note, sheet, row in log.con.execute(
                           "SELECT case_id, reviewer, criteria, final, note, sheet, row_number FROM context_review"
                           " ORDER BY sheet, row_number").fetchall()]
            decided = retentions([c.case_id for c in cases], reviews, context_canvas.min_reviewers)
            replace_retentions(log.con, [
                {"case_id": case_id, "status": r.status, "failed_criteria": list(r.failed_criteria),
                 "reasons": json.dumps(r.reasons, ensure_ascii=False), "reviewers": list(r.reviewers),
                 "activity_id": log.activity_id} for case_id, r in decided.items()])
            ids = {c.case_id: entity_id("context_case", c.case_key) for c in cases}
            log.rejected(REVIEW_STAGE, [(ids[case_id], r.status, "; ".join(r.reasons)) for case_id, r in decided.items()
                                        if r.status in ("rejected", "needs_adjudication")])
            log.unrejected(REVIEW_STAGE, [ids[case_id] for case_id, r in decided.items() if r.retained])
        for r in decided.values():
            step.counts[f"cases:{r.status}"] += 1
        if problems:
            raise Failure(description="malformed case review sheet(s); the other sheets were stored. Fix the rows named"
                          " and run again:\n" + "\n".join(problems))
    return step.result()


def _write_blank_sheet(step: Step, cases: list[ContextCase], target: Path) -> None:
    """Write the blank sheet through the shared export writer (recorded as an export file) when its rows changed;
    an unchanged one keeps its record, by name."""
    frame = pd.DataFrame(review_sheet_rows(cases), columns=list(SHEET_COLUMNS))
    if target.is_file():
        with target.open(encoding="utf-8", newline="") as stream:
            if list(csv.DictReader(stream)) == frame.to_dict("records"):
                with step.batch() as log:
                    export_names(step, log, [target])
                return
    with step.batch() as log, registered(log.con, "_review_sheet", frame):
        write_file(step, log, "context_review_sheet", ExportFile(target, "SELECT * FROM _review_sheet", "csv"),
                   [entity_id("context_case", c.case_key) for c in cases], "lists")
    step.files["review_sheet"] = target


def _ingest(step: Step, returned: Path, known_cases: set[str]) -> list[str]:
    """Store each new or changed sheet whole, or record why not; returns the problems of every bad sheet present."""
    with step.batch() as log:
        known = {path: (sha, status, problems) for path, sha, status, problems in
                 log.con.execute("SELECT path, sha256, status, problems FROM context_review_sheet").fetchall()}

    def read(path: Path) -> tuple[list[CaseReview], int]:
        return read_sheet_file(path, lambda stream, name: parse_reviews(stream, name, known_cases), ReviewSheetError)

    def record(log: ActivityLog, name: str, sha: str, reviews: list[CaseReview], _blank: int, error: SheetError | None) -> None:
        _record_sheet(log, name, sha, reviews, error)
        step.counts["reviews_read"] += len(reviews)

    return ingest_sheets(step, REVIEW_STAGE, "case_review_sheet", returned, known, read, record, "sheets_read")


def _record_sheet(log: ActivityLog, name: str, sha: str, reviews: list[CaseReview], error: SheetError | None) -> None:
    """The sheet's reviews (replacing those of its earlier content) and its status, under its name."""
    record_review_sheet(log.con, name, [
        {"sheet": name, "row_number": r.row, "case_id": r.case_id, "reviewer": r.reviewer,
         "criteria": json.dumps(r.verdicts(), sort_keys=True), "final": r.final, "note": r.note or None,
         "activity_id": log.activity_id} for r in reviews],
        {"path": name, "sha256": sha, "status": "rejected" if error else "read",
         "problems": str(error) if error else None, "activity_id": log.activity_id})
