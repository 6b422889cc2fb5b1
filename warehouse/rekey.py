"""Re-keying a warehouse written when local files were named by absolute paths (before migration 0015;
photocritique's rows before 0017).

Migration 0015 turns blob URIs into references in SQL, but it cannot name a file relative to the project's root:
the root is the config's folder, which only a run knows, and the ids built from those names are hashes of
canonical JSON that only the code deriving them reproduces. So the migration lists the scopes that hold such
rows in ``location_rekey``, and the first run of each scope's reading asset re-keys it, in one transaction of
its own activity (``Step.rekey``): the scope says which old values become which new ones (paths to names, and
the ids derived from them, each id checked to be what the old fields derive), and ``rename`` rewrites them in
every text column of every table, whole values and inside longer text (JSON attributes, details, lists). A copy
of the warehouse is kept before the migration (``warehouse.db.copy_before_migration``).

Not re-derived: ids that later stages built from a re-keyed id (a critique group from a pool item): they keep their
old digest, with the re-keyed ids they point at rewritten; and model calls keep the ids they were logged with.
The pool breaks a tie between copies of one image by the smallest record id, so once records are re-keyed the
next pool decision may keep another copy, as a fresh build would: the first decision's pool items stay as
history, and a stage that linked one (a context case showing that image) keeps the link until its input changes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping

import duckdb
import pandas as pd

from warehouse.db import registered
from warehouse.ids import file_name, file_path

_NOT_RENAMED = ("schema_migration", "location_rekey")
_CANDIDATE = ":[0-9a-f]{64}|/"  # what an id or a path looks like: rows without it hold nothing to rename
_ID = re.compile(r"(?<![\w:-])[a-z][a-z0-9_]*:[0-9a-f]{64}(?!\w)")


def pending(con: duckdb.DuckDBPyConnection, scope: str) -> bool:
    """Whether ``scope`` still holds rows written before migration 0015 that no run has re-keyed."""
    return bool(con.execute("SELECT 1 FROM location_rekey WHERE scope = ? AND activity_id IS NULL", [scope]).fetchall())


def finish(con: duckdb.DuckDBPyConnection, scope: str, activity_id: str, renamed: int) -> None:
    con.execute("UPDATE location_rekey SET activity_id = ?, renamed = ?, done_at = now() WHERE scope = ?",
                [activity_id, renamed, scope])


def renamed_path(value: str, root: str | os.PathLike[str]) -> str:
    """An absolute path written before 0015 as it is named now (``file_name``), the part after a ``#`` (a line,
    a record) kept; anything else (a URL, a reference, a name) as it is."""
    path, mark, place = value.partition("#")
    return file_name(path, root) + mark + place if os.path.isabs(path) else value


def old_spellings(value: str, root: str | os.PathLike[str]) -> list[str]:
    """How a stored path may have been written before 0015: as it reads now, or, when another scope's re-key has
    renamed it already (the paths under a renamed folder are renamed in every table), the absolute path its name
    stands for. A scope derives its old ids from whichever spelling reproduces them."""
    path, mark, place = value.partition("#")
    if not path or os.path.isabs(path) or "://" in path or path.startswith("blob:"):
        return [value]
    return [value, f"{file_path(path, root)}{mark}{place}"]


def located_renames(locators: Iterable[str], root: str | os.PathLike[str], record_id: Callable[[str], str]) -> dict[str, str]:
    """For locators ``<path>[#place]`` written before 0015: each path's and each locator's new name, and the new id
    of the record ``record_id`` derives from a locator."""
    renames: dict[str, str] = {}
    for locator in set(locators):
        for old in old_spellings(locator, root):
            new = renamed_path(old, root)
            if new != old:
                renames.update({old: new, locator: new, old.partition("#")[0]: new.partition("#")[0],
                                record_id(old): record_id(new)})
    return renames


def _folders(renames: Mapping[str, str], root: str | os.PathLike[str]) -> dict[str, str]:
    """The folders of the renamed absolute paths, and their names: every path in or under one is renamed with it
    (a file's name is its folder's name and its own), so text is searched for a few folders, not every file."""
    parents = {os.path.dirname(key.partition("#")[0]) for key in renames if os.path.isabs(key.partition("#")[0])}
    return {folder: name for folder in parents if folder != os.path.dirname(folder)
            and (name := file_name(folder, root)) != folder}


def _in_folders(folders: Mapping[str, str]) -> Callable[[str], str] | None:
    """A function renaming every path in or under ``folders`` within a text: a folder as a whole token, not inside
    a longer name, nor the path of a ``file://`` URI (whole values are renamed by the mapping itself)."""
    if not folders:
        return None
    alternatives = "|".join(re.escape(folder) for folder in sorted(folders, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w/.:-])({alternatives})(?:(/)|(?![\w.-]))")

    def renamed(match: re.Match[str]) -> str:
        name, slash = folders[match.group(1)], match.group(2) or ""
        return ("" if slash else ".") if name == "." else name + slash  # a file in the root itself is its own name

    return lambda text: pattern.sub(renamed, text)


def _text_columns(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    return con.execute(
        "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE NOT internal AND table_name NOT IN"
        f" ({', '.join('?' for _ in _NOT_RENAMED)}) AND data_type IN ('VARCHAR', 'JSON', 'VARCHAR[]')"
        " AND table_name IN (SELECT table_name FROM duckdb_tables()) ORDER BY table_name, column_index",
        list(_NOT_RENAMED)).fetchall()


def rename(con: duckdb.DuckDBPyConnection, renames: Mapping[str, str], root: str | os.PathLike[str]) -> int:
    """Replace every key of ``renames`` by its value in every text column of every table: whole values, ids
    (``kind:<sha256>``) wherever they appear (in JSON, details, list items), and absolute paths inside longer text
    under the folders of the renamed ones, named relative to ``root``. Returns how many stored values changed."""
    renames = {old: new for old, new in renames.items() if old != new}
    if not renames:
        return 0
    in_folders = _in_folders(_folders(renames, root))

    def new_text(text: str) -> str:
        if text in renames:
            return renames[text]
        text = _ID.sub(lambda match: renames.get(match.group(0), match.group(0)), text)
        return in_folders(text) if in_folders else text

    # a value renamed as a whole that looks like neither an id nor a path (a bare digest) is looked for as it is
    bare = pd.DataFrame({"old": sorted(old for old in renames if not re.search(_CANDIDATE, old))}, dtype=object)
    with registered(con, "_aesforge_bare", bare):
        return _rename_columns(con, new_text, whole_values=not bare.empty)


def _rename_columns(con: duckdb.DuckDBPyConnection, new_text: Callable[[str], str], whole_values: bool) -> int:
    changed = 0
    for table, column, kind in _text_columns(con):
        listed = kind.endswith("[]")
        text = f'CAST("{column}" AS VARCHAR)' if kind == "JSON" else f'"{column}"'
        where = (f"len(list_filter({text}, lambda x: regexp_matches(x, '{_CANDIDATE}'))) > 0" if listed
                 else f"regexp_matches({text}, '{_CANDIDATE}')")
        if whole_values and not listed:
            where += f" OR {text} IN (SELECT old FROM _aesforge_bare)"
        values = [row[0] for row in con.execute(f'SELECT DISTINCT {text} FROM "{table}" WHERE {where}').fetchall()]
        pairs = [(value, [new_text(item) for item in value] if listed else new_text(value)) for value in values]
        pairs = [(old, new) for old, new in pairs if old != new]
        if not pairs:
            continue
        frame = pd.DataFrame({"old": [old for old, _ in pairs], "new": [new for _, new in pairs]})
        with registered(con, "_aesforge_renamed", frame):
            ((n,),) = con.execute(f'UPDATE "{table}" SET "{column}" = r.new FROM _aesforge_renamed r'
                                  f" WHERE {text} = r.old").fetchall()
        changed += n
    return changed
