"""Every write of the poem-illustration tables (migration 0009): poems and their source reads, illustrations,
phase-1 items, the survey's files, responses, bad rows and exclusions, OCR and text labels, image scores, the
benchmark statistics, and the judge's scores and agreement.

The assets build the rows and record the lineage; here is what each table receives and how a new read or
computation replaces an old one, in one place, with the stored corpus read back the way every later stage needs it.
"""

import duckdb

from assets.poetry.logic.poems import Poem
from warehouse.db import insert_rows

_SURVEY_TABLES = ("poem_survey_response", "poem_survey_bad_row", "poem_survey_exclusion", "poem_survey_file")
_STATISTICS_TABLES = ("poem_agreement", "poem_model_score", "poem_rank_frequency")


def load_poems(con: duckdb.DuckDBPyConnection) -> dict[str, Poem]:
    """The stored corpus as ``Poem`` objects, by poem id."""
    rows = con.execute("SELECT poem_id, title, author, text, translation, themes, form, source, locator FROM poem"
                       " ORDER BY poem_id").fetchall()
    return {r[0]: Poem(poem_id=r[0], title=r[1], author=r[2], text=r[3], translation=r[4], themes=tuple(r[5]), form=r[6],
                       source=r[7], locator=r[8]) for r in rows}


def write_poems(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Poems read from the corpus, replacing the earlier content of the same corpus id."""
    insert_rows(con, "poem", rows, conflict="replace")


def write_source_reads(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """The outcome of each corpus record read (its poem, or why it was rejected), replacing an earlier read."""
    insert_rows(con, "poem_source_read", rows, conflict="replace")


def write_illustrations(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Illustrations (generated or stand-in), replacing the earlier image of the same poem and generator."""
    insert_rows(con, "poem_illustration", rows, conflict="replace")


def replace_phase1_items(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Every phase-1 item (true poem, distractors, seeded option order), replacing the last set."""
    con.execute("DELETE FROM poem_phase1_item")
    insert_rows(con, "poem_phase1_item", rows)


def clear_survey(con: duckdb.DuckDBPyConnection) -> None:
    """Every survey table, before a run rewrites them from all the exports and quality control."""
    for table in _SURVEY_TABLES:
        con.execute(f"DELETE FROM {table}")


def write_survey_responses(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Survey responses read from the exports, each marked kept or not by quality control."""
    insert_rows(con, "poem_survey_response", rows)


def write_survey_exclusions(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Quality control's exclusions of responses and annotators, with the reason and the settings."""
    insert_rows(con, "poem_survey_exclusion", rows)


def write_survey_bad_rows(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Malformed export rows, one per row and reason."""
    insert_rows(con, "poem_survey_bad_row", rows)


def write_survey_files(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """The exports read (content hash) with their counts of good and malformed rows."""
    insert_rows(con, "poem_survey_file", rows)


def write_ocr(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """OCR readings per item, image and engine settings, replacing an earlier reading of the same."""
    insert_rows(con, "poem_ocr", rows, conflict="replace")


def replace_text_labels(con: duckdb.DuckDBPyConnection, adjudications: list[dict], labels: list[dict]) -> None:
    """Every adjudication sheet row and every final text-integrity label, replacing the last ones."""
    con.execute("DELETE FROM poem_text_adjudication")
    insert_rows(con, "poem_text_adjudication", adjudications, conflict="replace")
    con.execute("DELETE FROM poem_text_label")
    insert_rows(con, "poem_text_label", labels)


def replace_image_scores(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Every illustration's rubric scores, replacing the last computation."""
    con.execute("DELETE FROM poem_image_score")
    insert_rows(con, "poem_image_score", rows)


def replace_benchmark_statistics(con: duckdb.DuckDBPyConnection, agreement: list[dict], model_scores: list[dict],
                                 rank_frequencies: list[dict]) -> None:
    """Agreement per dimension, per-model means and the bootstrap's rank shares, replacing the last figures as a whole."""
    for table in _STATISTICS_TABLES:
        con.execute(f"DELETE FROM {table}")
    insert_rows(con, "poem_agreement", agreement)
    insert_rows(con, "poem_model_score", model_scores)
    insert_rows(con, "poem_rank_frequency", rank_frequencies)


def write_judgements(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """The judge's scores per illustration, replacing its earlier judgement of the same item."""
    insert_rows(con, "poem_judgement", rows, conflict="replace")


def replace_judge_agreement(con: duckdb.DuckDBPyConnection, judge: str, rows: list[dict]) -> None:
    """One judge's agreement with people, overall and per dimension, replacing its last figures."""
    con.execute("DELETE FROM poem_judge_agreement WHERE judge = ?", [judge])
    insert_rows(con, "poem_judge_agreement", rows)
