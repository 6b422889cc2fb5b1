"""Every write of the releases' tables (migration 0016), and the read the release writers make of them.

``release_exclusion`` holds the leakage guard's last decision: one row per training image (dataset, split,
image sha256 as the split's rows carry it) that is, or duplicates, an image another dataset holds out.
"""

import duckdb

from warehouse.db import insert_rows


def replace_exclusions(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """The guard's decision, replacing the last one whole (an overlap that went away frees its image)."""
    con.execute("DELETE FROM release_exclusion")
    insert_rows(con, "release_exclusion", rows)


def excluded_images(con: duckdb.DuckDBPyConnection, dataset: str, split: str) -> set[str]:
    """The image sha256s whose rows ``dataset``'s ``split`` must leave out (e.g. ``critique_canvas``, ``train``)."""
    rows = con.execute("SELECT image_sha256 FROM release_exclusion WHERE dataset = ? AND split = ?", [dataset, split])
    return {sha for (sha,) in rows.fetchall()}
