"""Every write of the evaluation tables (migration 0018), and the reads the evaluation assets make of them.

A run's rows are keyed by its ``run_key``; predictions by (run, item, sample), so a resumed run adds only what it
had not answered; scores, metric statuses and summaries are replaced per run, so a re-score leaves no stale row.
"""

from collections.abc import Iterable, Mapping

import duckdb

from warehouse.db import insert_rows


def record_run(con: duckdb.DuckDBPyConnection, row: Mapping) -> None:
    insert_rows(con, "evaluation_run", [row], conflict="replace")


def write_predictions(con: duckdb.DuckDBPyConnection, rows: Iterable[Mapping]) -> int:
    """New predictions of a run (an (item, sample) already answered keeps its first answer)."""
    return insert_rows(con, "evaluation_prediction", list(rows))


def replace_predictions(con: duckdb.DuckDBPyConnection, run_key: str, rows: list[Mapping]) -> None:
    """A run computed whole each time (the CLIPScore baseline): its predictions replaced by ``rows``."""
    con.execute("DELETE FROM evaluation_prediction WHERE run_key = ?", [run_key])
    insert_rows(con, "evaluation_prediction", rows)


def answered(con: duckdb.DuckDBPyConnection, run_key: str) -> set[tuple[str, int]]:
    """The (item, sample) pairs a run has answered."""
    return {(item, sample) for item, sample in con.execute(
        "SELECT item_id, sample FROM evaluation_prediction WHERE run_key = ?", [run_key]).fetchall()}


def replace_scores(con: duckdb.DuckDBPyConnection, run_key: str, metrics: list[Mapping], scores: Iterable[Mapping],
                   summary: list[Mapping]) -> None:
    """A run's whole scoring: each metric's status, the per-item scores and the summary, replacing the last one."""
    for table in ("evaluation_metric", "evaluation_score", "evaluation_summary"):
        con.execute(f"DELETE FROM {table} WHERE run_key = ?", [run_key])
    insert_rows(con, "evaluation_metric", metrics)
    insert_rows(con, "evaluation_score", list(scores))
    insert_rows(con, "evaluation_summary", summary)


def replace_comparisons(con: duckdb.DuckDBPyConnection, run_keys: list[str], rows: list[Mapping]) -> None:
    """The paired comparisons among ``run_keys``, replacing the earlier ones between them."""
    con.execute("DELETE FROM evaluation_comparison WHERE list_contains(?, run_a) AND list_contains(?, run_b)",
                [run_keys, run_keys])
    insert_rows(con, "evaluation_comparison", rows)


def retire_file_runs(con: duckdb.DuckDBPyConnection, file_name: str, sha256: str) -> int:
    """Drop the runs an earlier content of the predictions file ``file_name`` fed (their entities stay in the
    lineage as history), so the leaderboard shows what the file holds now. Returns how many runs went."""
    stale = [key for key, in con.execute("SELECT run_key FROM evaluation_run WHERE predictions_file = ?"
                                         " AND predictions_sha256 <> ?", [file_name, sha256]).fetchall()]
    con.execute("DELETE FROM evaluation_prediction WHERE list_contains(?, run_key)", [stale])
    con.execute("DELETE FROM evaluation_judgement WHERE list_contains(?, run_key)", [stale])
    con.execute("DELETE FROM evaluation_answer WHERE list_contains(?, run_key)", [stale])
    con.execute("DELETE FROM evaluation_metric WHERE list_contains(?, run_key)", [stale])
    con.execute("DELETE FROM evaluation_score WHERE list_contains(?, run_key)", [stale])
    con.execute("DELETE FROM evaluation_summary WHERE list_contains(?, run_key)", [stale])
    con.execute("DELETE FROM evaluation_run WHERE list_contains(?, run_key)", [stale])
    con.execute("DELETE FROM evaluation_comparison WHERE list_contains(?, run_a) OR list_contains(?, run_b)", [stale, stale])
    return len(stale)


def replace_answers(con: duckdb.DuckDBPyConnection, run_key: str, rows: list[Mapping]) -> None:
    """How a closed-answer run's answers were read, replacing the last reading."""
    con.execute("DELETE FROM evaluation_answer WHERE run_key = ?", [run_key])
    insert_rows(con, "evaluation_answer", rows)


def record_grounding_rows(con: duckdb.DuckDBPyConnection, rows: list[Mapping]) -> None:
    """The correct answers a blank grounding sheet lists (a row listed before keeps its first sheet)."""
    insert_rows(con, "evaluation_grounding_row", rows)


def clear_grounding_ratings(con: duckdb.DuckDBPyConnection, benchmark: str) -> None:
    """Before the returned grounding sheets are read again: they are the whole truth of the ratings."""
    con.execute("DELETE FROM evaluation_grounding_rating WHERE row_id IN (SELECT row_id FROM evaluation_grounding_row"
                " WHERE benchmark = ?)", [benchmark])


def write_grounding_ratings(con: duckdb.DuckDBPyConnection, rows: list[Mapping]) -> None:
    insert_rows(con, "evaluation_grounding_rating", rows)


def write_judgements(con: duckdb.DuckDBPyConnection, rows: list[Mapping]) -> None:
    """A judge's rows of one batch of judgements (a judgement judged again replaces its rows)."""
    insert_rows(con, "evaluation_judgement", rows, conflict="replace")


def record_similarity_pairs(con: duckdb.DuckDBPyConnection, rows: list[Mapping]) -> None:
    """The model–human pairs a blank similarity sheet lists (a pair listed before keeps its first sheet)."""
    insert_rows(con, "evaluation_similarity_pair", rows)


def clear_similarity_ratings(con: duckdb.DuckDBPyConnection, benchmark: str) -> None:
    """Before the returned sheets are read again: the table holds what they say now."""
    con.execute("DELETE FROM evaluation_similarity_rating WHERE benchmark = ?", [benchmark])


def write_similarity_ratings(con: duckdb.DuckDBPyConnection, rows: list[Mapping]) -> None:
    insert_rows(con, "evaluation_similarity_rating", rows)
