"""What photocritique's rows written before migration 0017 become (``Step.rekey``, scope ``photocritique``).

Until then Reddit ingestion named dump files and id lists by their absolute paths, and derived from them the
ids of sources, observations, problems, scans and id-list lines. Each id is re-derived from its row's stored
fields with the old name first: only an id the fields reproduce is renamed, so a row of unknown derivation keeps
its id (and its text is still renamed). A scan's key derived from the file's size and mtime too: it is renamed
when the file is still there unchanged, otherwise the file is scanned once more under its new key, which adds
nothing (observations are keyed by their content and place).
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from assets.photocritique.logic import reddit_ids as ids
from warehouse.ids import entity_id
from warehouse.rekey import old_spellings, renamed_path

REKEY_SCOPE = "photocritique"
_LOCAL_KINDS = ("dump", "id_list")  # the source kinds named by a local path; the APIs by their URLs


def location_renames(con: duckdb.DuckDBPyConnection, root: Path) -> dict[str, str]:
    renames: dict[str, str] = {}

    def spellings(locator: str) -> list[tuple[str, str]]:
        """(old, new) for each way ``locator`` may have been written whose name changes now."""
        pairs = [(old, renamed_path(old, root)) for old in old_spellings(locator, root)]
        return [(old, new) for old, new in pairs if old != new]

    def rename_path(locator: str) -> list[tuple[str, str]]:
        pairs = spellings(locator)
        renames.update({locator: new for _, new in pairs[:1]})
        renames.update(pairs)
        return pairs

    for table, kind in (("reddit_post_observation", "reddit_post"), ("reddit_comment_observation", "reddit_comment")):
        rows = con.execute(f"SELECT observation_id, source_kind, source_locator, line_no, byte_offset, entity_id,"
                           f" retrieved_at FROM {table} WHERE source_kind IN {_LOCAL_KINDS}").fetchall()
        for obs_id, source_kind, locator, line_no, offset, content, retrieved_at in rows:
            digest = content.partition(":")[2]
            for old, new in rename_path(locator):
                if ids.observation_id(kind, source_kind, old, line_no, offset, digest, retrieved_at) == obs_id:
                    renames[obs_id] = ids.observation_id(kind, source_kind, new, line_no, offset, digest, retrieved_at)
                    renames[ids.source_entity_id(source_kind, old)] = ids.source_entity_id(source_kind, new)
                    if offset is not None:
                        renames[ids.dump_line_key(old, offset)] = ids.dump_line_key(new, offset)
    problems = con.execute("SELECT problem_id, source_kind, locator, line_no, byte_offset, scope, reason_code, item_id"
                           f" FROM reddit_source_problem WHERE source_kind IN {_LOCAL_KINDS}").fetchall()
    for problem_id, source_kind, locator, line_no, offset, scope, reason, item_id in problems:
        for old, new in rename_path(locator):
            if ids.problem_digest(source_kind, old, line_no, offset, scope, reason, item_id) == problem_id:
                renames[problem_id] = ids.problem_digest(source_kind, new, line_no, offset, scope, reason, item_id)
                # the loop's key of the same problem, as it was met (``ObservationWriter.item``)
                old_key = ids.problem_digest(source_kind, old, line_no, offset, "any", reason, item_id)
                renames[entity_id("reddit_source_problem", old_key)] = entity_id(
                    "reddit_source_problem", ids.problem_digest(source_kind, new, line_no, offset, "any", reason, item_id))
                if source_kind == "id_list" and line_no is not None:
                    renames[ids.id_list_line_key(old, line_no)] = ids.id_list_line_key(new, line_no)
    for list_file, line_no in con.execute("SELECT list_file, line_no FROM reddit_candidate WHERE list_file IS NOT NULL"
                                          ).fetchall():
        for old, new in rename_path(list_file):
            renames[ids.id_list_line_key(old, line_no)] = ids.id_list_line_key(new, line_no)
    for key, locator, scope, target in con.execute("SELECT scan_key, locator, scope, target_digest FROM reddit_dump_scan"
                                                   ).fetchall():
        for old, new in rename_path(locator):
            renamed = _renamed_scan_key(key, old, new, scope, target)
            if renamed is not None:
                renames[key] = renamed
    return renames


def _renamed_scan_key(key: str, old: str, new: str, scope: str, target: str) -> str | None:
    """The scan's new key, when the old one is what the old code derived: from the resolved path, size and
    mtime of a file that is still there, or from the path of one that could not be read."""
    if ids.scan_key(old, scope, target) == key:
        return ids.scan_key(new, scope, target)
    path = Path(old)
    try:
        if ids.scan_key(ids.file_fingerprint(os.fspath(path.resolve()), path), scope, target) == key:
            return ids.scan_key(ids.file_fingerprint(new, path), scope, target)
    except OSError:  # gone or unreadable: scanned again under its new key
        pass
    return None
