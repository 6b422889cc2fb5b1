"""Every write of the ContextCanvas tables (migration 0009): cases and their reads, reviews, retention, shortcut report.

The assets build the rows and record the lineage; here is what each table receives and how a new read or decision
replaces an old one, in one place, with the stored cases read back the way every later stage needs them.
"""

import json
from pathlib import Path

import duckdb
from dagster import Failure

from assets.context_canvas.logic.case_records import ContextCase, validate_case
from warehouse.db import insert_rows

_CASE_TABLES = ("context_case", "context_case_image", "context_case_probe", "context_contact_sheet")


def stored_cases(con: duckdb.DuckDBPyConnection) -> list[ContextCase]:
    """The stored cases, validated again from their records (the record is the validated content)."""
    cases = []
    for record, locator in con.execute("SELECT record, locator FROM context_case ORDER BY case_id").fetchall():
        case = validate_case(json.loads(record), locator)
        if not isinstance(case, ContextCase):
            raise Failure(description=f"stored case at {locator} no longer validates: {case.message}")
        cases.append(case)
    return cases


def delete_cases(con: duckdb.DuckDBPyConnection, case_ids: list[str]) -> None:
    """Cases with their images, probe answers and contact sheets, before a read replaces them."""
    if case_ids:
        for table in _CASE_TABLES:
            con.execute(f"DELETE FROM {table} WHERE case_id IN (SELECT unnest(?::VARCHAR[]))", [sorted(case_ids)])


def forget_case_file(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Everything an earlier version of a case file stored: its cases and the outcome of each of its records."""
    earlier = [r[0] for r in con.execute("SELECT case_id FROM context_case WHERE starts_with(locator, ?)",
                                         [f"{path}#"]).fetchall()]
    delete_cases(con, earlier)
    con.execute("DELETE FROM context_case_read WHERE starts_with(locator, ?)", [f"{path}#"])


def write_cases(con: duckdb.DuckDBPyConnection, cases: list[dict], images: list[dict], sheets: list[dict]) -> None:
    """Kept cases, each image of theirs, and the contact sheet of each multi-image case."""
    insert_rows(con, "context_case", cases)
    insert_rows(con, "context_case_image", images)
    insert_rows(con, "context_contact_sheet", sheets)


def write_probes(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Probe models' answers to cases, kept apart for diagnostics only."""
    insert_rows(con, "context_case_probe", rows)


def write_case_reads(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """The outcome of each case record read: its case id, or why it was rejected."""
    insert_rows(con, "context_case_read", rows, conflict="replace")


def record_review_sheet(con: duckdb.DuckDBPyConnection, path: str, reviews: list[dict], sheet: dict) -> None:
    """A returned review sheet's reviews, replacing those of its earlier content, then the sheet's status."""
    con.execute("DELETE FROM context_review WHERE sheet = ?", [path])
    insert_rows(con, "context_review", reviews, conflict="replace")
    insert_rows(con, "context_review_sheet", [sheet], conflict="replace")


def replace_retentions(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Every case's retention decision, replacing the last ones."""
    con.execute("DELETE FROM context_retention")
    insert_rows(con, "context_retention", rows)


def write_text_only_answers(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Answers given to cases without their images (none for an invalid answer), per answerer."""
    insert_rows(con, "context_text_only_answer", rows, conflict="replace")


def drop_answers_of_gone_cases(con: duckdb.DuckDBPyConnection, answerer: str) -> None:
    """An answerer's text-only answers to cases no longer stored."""
    con.execute("DELETE FROM context_text_only_answer WHERE answerer = ? AND case_id NOT IN"
                " (SELECT case_id FROM context_case)", [answerer])


def write_shortcut_report(con: duckdb.DuckDBPyConnection, row: dict) -> None:
    """An answerer's anti-shortcut figures, replacing its last report."""
    insert_rows(con, "context_shortcut_report", [row], conflict="replace")
