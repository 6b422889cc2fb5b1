"""Every write of the CritiqueCanvas tables (migrations 0005-0007): groups, pairs and attempts, the split, the audit.

The assets build the rows and record the lineage; here is what each table receives and how a new decision
replaces an old one, in one place.
"""

import duckdb

from warehouse.db import insert_rows


def write_group(con: duckdb.DuckDBPyConnection, row: dict) -> None:
    """One image's critique group: the chain's status, plan and calls per role, replacing an earlier decision."""
    insert_rows(con, "critique_group", [row], conflict="replace")


def write_pairs(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """A complete group's instruction–response pairs, each with the verifier's verdict."""
    insert_rows(con, "critique_pair", rows, conflict="replace")


def write_attempt(con: duckdb.DuckDBPyConnection, row: dict) -> None:
    """An image's attempt under one chain configuration (a retryable one is tried again)."""
    insert_rows(con, "critique_attempt", [row], conflict="replace")


def replace_splits(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """The train / eval side of every complete group, replacing the last split decision."""
    con.execute("DELETE FROM critique_split")
    insert_rows(con, "critique_split", rows)


def write_audit_sample(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """A round's frozen sample of pairs, in sheet order."""
    insert_rows(con, "critique_audit_sample", rows)


def write_audit_round(con: duckdb.DuckDBPyConnection, row: dict) -> None:
    """A drawn round: its sampling settings, how many pairs it drew from and took, and its blank sheet."""
    insert_rows(con, "critique_audit_round", [row])


def set_round_sheet(con: duckdb.DuckDBPyConnection, audit_round: str, sheet_path: str, sheet_entity_id: str) -> None:
    """The blank sheet of a drawn round, written again after it was lost."""
    con.execute("UPDATE critique_audit_round SET sheet_path = ?, sheet_entity_id = ? WHERE audit_round = ?",
                [sheet_path, sheet_entity_id, audit_round])


def record_audit_sheet(con: duckdb.DuckDBPyConnection, path: str, reviews: list[dict], sheet: dict) -> None:
    """A returned sheet's reviews, replacing those of its earlier content, then the sheet's status."""
    con.execute("DELETE FROM critique_audit_review WHERE sheet_path = ?", [path])
    insert_rows(con, "critique_audit_review", reviews)
    insert_rows(con, "critique_audit_sheet", [sheet], conflict="replace")


def replace_audit_results(con: duckdb.DuckDBPyConnection, decisions: list[dict], figures: list[dict]) -> None:
    """Every sampled pair's verdict and every round's figures, replacing the last report's."""
    con.execute("DELETE FROM critique_audit_decision")
    insert_rows(con, "critique_audit_decision", decisions)
    con.execute("DELETE FROM critique_audit_figure")
    insert_rows(con, "critique_audit_figure", figures)
