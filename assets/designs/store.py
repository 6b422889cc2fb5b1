"""Every write of the design tables (migration 0008): designs and their source reads, variants and their operation
log, renders, review items, sheets, votes and agreement, labels, splits, questions and reasoning paths.

The assets build the rows and record the lineage; here is what each table receives and how a new read or decision
replaces an old one, in one place.
"""

import duckdb
import pandas as pd

from warehouse.db import insert_rows, registered


def write_source_designs(con: duckdb.DuckDBPyConnection, designs: list[dict], reads: list[dict]) -> None:
    """A source batch's original designs, then the outcome of each record read (its design, or why it was rejected)."""
    insert_rows(con, "design", designs)
    insert_rows(con, "design_source_read", reads, conflict="replace")


def write_variants(con: duckdb.DuckDBPyConnection, designs: list[dict], ops: list[dict], variants: list[dict]) -> None:
    """Perturbed designs and their operation log, then every variant tried (its design, or why none was made)."""
    insert_rows(con, "design", designs)
    insert_rows(con, "design_perturbation_op", ops)
    insert_rows(con, "design_variant", variants, conflict="replace")


def write_renders(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Each design's PNG under one renderer version, replacing an earlier render by the same version."""
    insert_rows(con, "design_render", rows, conflict="replace")


def replace_review_items(con: duckdb.DuckDBPyConnection, design_ids: list[str], rows: list[dict]) -> tuple[int, int]:
    """These designs' review items become ``rows`` (a perturbed design's render and one indicator each): new ones
    are added, an item no longer asked about goes with its label (a changed ``indicators`` setting); an item's
    votes stay in ``design_review_vote``. Returns (added, dropped)."""
    keep = pd.DataFrame({"item_id": [r["item_id"] for r in rows]}, dtype=str)
    with registered(con, "_designs", pd.DataFrame({"design_id": design_ids}, dtype=str)), registered(con, "_keep", keep):
        dropped = con.execute(
            "SELECT design_id, indicator FROM design_review_item WHERE design_id IN (SELECT design_id FROM _designs)"
            " AND item_id NOT IN (SELECT item_id FROM _keep)").fetchall()
        (known,), = con.execute("SELECT count(*) FROM design_review_item WHERE item_id IN (SELECT item_id FROM _keep)"
                                ).fetchall()
        if dropped:
            con.execute("DELETE FROM design_label WHERE (design_id, indicator) IN (SELECT design_id, indicator FROM"
                        " design_review_item WHERE design_id IN (SELECT design_id FROM _designs) AND item_id NOT IN"
                        " (SELECT item_id FROM _keep))")
            con.execute("DELETE FROM design_review_item WHERE design_id IN (SELECT design_id FROM _designs)"
                        " AND item_id NOT IN (SELECT item_id FROM _keep)")
    insert_rows(con, "design_review_item", rows)
    return len(rows) - known, len(dropped)


def record_review_sheet(con: duckdb.DuckDBPyConnection, path: str, votes: list[dict], sheet: dict) -> None:
    """A returned sheet's votes, replacing those of its earlier content, then the sheet's status."""
    con.execute("DELETE FROM design_review_vote WHERE sheet_path = ?", [path])
    insert_rows(con, "design_review_vote", votes, conflict="replace")
    insert_rows(con, "design_review_sheet", [sheet], conflict="replace")


def replace_agreement(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Per indicator, how far annotators agree, replacing the last figures."""
    con.execute("DELETE FROM design_review_agreement")
    insert_rows(con, "design_review_agreement", rows)


def write_labels(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Review items' labels (people's majority or a labeller's verdict), replacing an item's earlier label."""
    insert_rows(con, "design_label", rows, conflict="replace")


def drop_labels(con: duckdb.DuckDBPyConnection, keys: list[list[str]]) -> None:
    """The labels of these (design, indicator) items, which are now unlabelled (a benchmark label a machine gave)."""
    if keys:
        frame = pd.DataFrame({"design_id": [k[0] for k in keys], "indicator": [k[1] for k in keys]}, dtype=str)
        with registered(con, "_drop", frame):
            con.execute("DELETE FROM design_label WHERE (design_id, indicator) IN (SELECT design_id, indicator FROM _drop)")


def drop_splits_of_other_seeds(con: duckdb.DuckDBPyConnection, seed: int) -> None:
    """Every split, when any was dealt with another seed: a new seed re-deals every base design."""
    stale = con.execute("SELECT count(*) FROM design_split WHERE seed <> ?", [seed]).fetchone()[0]
    if stale:
        con.execute("DELETE FROM design_split")


def write_splits(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Newly dealt base designs, each on the benchmark or the training side."""
    insert_rows(con, "design_split", rows)


def replace_questions(con: duckdb.DuckDBPyConnection, labels: list[tuple[str, str]], rows: list[dict]) -> None:
    """The questions asked of these (design, indicator) labels, replacing every earlier question of theirs."""
    keys = pd.DataFrame({"design_id": [design_id for design_id, _ in labels], "indicator": [name for _, name in labels]})
    with registered(con, "_page", keys):
        con.execute("DELETE FROM design_question WHERE (design_id, indicator) IN (SELECT design_id, indicator FROM _page)")
    insert_rows(con, "design_question", rows, conflict="replace")


def drop_questions_without_label(con: duckdb.DuckDBPyConnection) -> int:
    """The questions of (design, indicator) items that no longer have a label (held out, or no longer asked about);
    returns how many went."""
    (dropped,), = con.execute("DELETE FROM design_question WHERE (design_id, indicator) NOT IN"
                              " (SELECT design_id, indicator FROM design_label)").fetchall()
    return dropped


def write_reasoning_paths(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Validated reasoning paths, replacing an earlier path for the same item, task and verdict."""
    insert_rows(con, "design_reasoning", rows, conflict="replace")
