"""Every write of the photocritique tables (migration 0003): candidates, source copies and problems, merged posts
and comments, post images, decisions and references.

The assets build the rows and record the lineage; here is what each table receives and how a new row replaces
an old one, in one place. Every function writes in the caller's transaction.
"""

import duckdb
import pandas as pd

from warehouse.db import insert_rows, registered
from warehouse.lineage import utcnow


def write_candidates(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Candidate post ids read from an id list, with the file and line they came from."""
    insert_rows(con, "reddit_candidate", rows)


def add_window_candidates(
    con: duckdb.DuckDBPyConnection, activity_id: str, subreddit: str, start_utc: int, end_utc: int
) -> None:
    """Every observed post of the subreddit created in [start_utc, end_utc), as a candidate without a list file."""
    con.execute(
        "INSERT OR IGNORE INTO reddit_candidate SELECT DISTINCT post_id, NULL, NULL, ?, now() FROM reddit_post_observation"
        " WHERE lower(record->>'subreddit') = lower(?) AND CAST(record->>'created_utc' AS BIGINT) >= ?"
        " AND CAST(record->>'created_utc' AS BIGINT) < ?",
        [activity_id, subreddit, start_utc, end_utc],
    )


def write_source_problems(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """What a source could not deliver (bad lines, HTTP failures, ids never found), each with its reason."""
    insert_rows(con, "reddit_source_problem", rows)


def write_fetch_done(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Posts (or comment trees) an HTTP source has answered, so a rerun does not ask for them again."""
    insert_rows(con, "reddit_fetch_done", rows)


def write_observations(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict]) -> None:
    """Normalized copies of posts or comments (``table``: their observation table), with where each was read."""
    insert_rows(con, table, rows)


def save_dump_scan(
    con: duckdb.DuckDBPyConnection, *, scan_key: str, locator: str, scope: str, target_digest: str, status: str,
    offset: int, matched: int, problems: int, activity_id: str,
) -> None:
    """A dump file's scan checkpoint, inserted or moved on: offsets only grow, counts add up."""
    con.execute(
        "INSERT INTO reddit_dump_scan VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scan_key) DO UPDATE SET"
        " status = excluded.status, resume_offset = greatest(reddit_dump_scan.resume_offset, excluded.resume_offset),"
        " lines_matched = reddit_dump_scan.lines_matched + excluded.lines_matched,"
        " problems = reddit_dump_scan.problems + excluded.problems, activity_id = excluded.activity_id,"
        " updated_at = excluded.updated_at",
        [scan_key, locator, scope, target_digest, status, offset, matched, problems, activity_id, utcnow()],
    )


def queue_merges(con: duckdb.DuckDBPyConnection, scope: str, key: str, obs_table: str, table: str) -> None:
    """The keys whose observation count differs from their merged row's (``table``), queued for merging."""
    con.execute(
        f"INSERT OR IGNORE INTO reddit_merge_queue SELECT ?, o.{key} FROM {obs_table} o"
        f" LEFT JOIN {table} m USING ({key}) GROUP BY o.{key}, m.n_observations"
        " HAVING m.n_observations IS NULL OR count(*) <> m.n_observations",
        [scope],
    )


def write_merged(con: duckdb.DuckDBPyConnection, scope: str, table: str, rows: list[dict], item_ids: list[str]) -> None:
    """Merged posts or comments replacing their earlier merge, then their keys taken off the merge queue."""
    insert_rows(con, table, rows, conflict="replace")
    with registered(con, "_merged", pd.DataFrame({"item_id": item_ids})):
        con.execute("DELETE FROM reddit_merge_queue WHERE scope = ? AND item_id IN (SELECT item_id FROM _merged)", [scope])


def replace_post_images(
    con: duckdb.DuckDBPyConnection, post_ids: list[str], images: list[dict], resolutions: list[dict]
) -> None:
    """Posts' image candidates, replacing those of an earlier resolution, and each post's resolution summary."""
    with registered(con, "_posts", pd.DataFrame({"post_id": post_ids})):
        con.execute("DELETE FROM reddit_post_image WHERE post_id IN (SELECT post_id FROM _posts)")
        insert_rows(con, "reddit_post_image", images)
        insert_rows(con, "reddit_image_resolution", resolutions, conflict="replace")


def clear_references(con: duckdb.DuckDBPyConnection, post_ids: list[str]) -> None:
    """The references of posts about to be decided again (a post excluded now keeps none)."""
    with registered(con, "_page", pd.DataFrame({"post_id": post_ids})):
        con.execute("DELETE FROM photocritique_reference WHERE post_id IN (SELECT post_id FROM _page)")


def write_post_decisions(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Each candidate post's decision (kept or excluded with a reason), replacing the last one."""
    insert_rows(con, "photocritique_post_decision", rows, conflict="replace")


def write_comment_decisions(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Each comment's decision (reference with its rank, or excluded with a reason), replacing the last one."""
    insert_rows(con, "photocritique_comment_decision", rows, conflict="replace")


def write_references(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """A kept post's ranked references, with the comment text and score they quote."""
    insert_rows(con, "photocritique_reference", rows, conflict="replace")
