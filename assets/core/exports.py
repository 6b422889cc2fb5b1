"""Published dataset files: streamed from a warehouse query, swapped in atomically, recorded as entities.

Each file is an entity named by its content hash, derived from the entities it contains, and listed in
``export_file``. A file is rewritten only when what it would contain changed, or when the copy on disk is
no longer what was written (edited or deleted by hand). A published file whose query has no rows is not
written (an empty JSON-lines file is no dataset to its readers): an earlier copy is removed with its
``export_file`` row, and the step's notes say so.

A file is recorded by its name (relative to the warehouse's root, ``Step.name_of``), so a moved project finds its
exports again. A row of a warehouse written before names were used names its file by the absolute path: it is
renamed when the file is next looked up or written, so no row names the file twice.
"""

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from assets.core.step import Step
from warehouse import rekey
from warehouse.db import insert_rows
from warehouse.ids import digest_of, entity_id, sha256_file
from warehouse.lineage import ActivityLog, Entity

FORMATS = {"parquet": "parquet", "json": "jsonl", "csv": "csv"}  # DuckDB COPY format -> what export_file records


@dataclass(frozen=True)
class ExportFile:
    path: Path
    query: str   # a SELECT; DuckDB streams it to the file, so no export is held in memory
    format: str  # parquet | json (one object per line) | csv (with header)
    contains_query: str | None = None  # what this file is derived from, when it holds only part of the export

    @property
    def kind(self) -> str:
        return FORMATS[self.format]


@dataclass(frozen=True)
class Contents:
    """What the files are made from: the entities they are derived from, and a fingerprint of anything
    else that shapes their rows (a split, an audit verdict) without changing those entities."""

    entities_query: str
    role: str
    relation: str = "contains"
    fingerprint_query: str | None = None


def publish(step: Step, dataset: str, files: Sequence[ExportFile], contents: Contents) -> bool:
    """Write ``files`` unless nothing changed; True when they were (re)written."""
    with step.batch() as log:
        _, inputs = _state(step, log, files, contents)
        names = export_names(step, log, [f.path for f in files])
        written = dict(log.con.execute("SELECT path, sha256 FROM export_file").fetchall())
        last = step.last_inputs(log.con)
    if last == inputs and all(_as_published(f, written.get(name)) for f, name in zip(files, names)):
        step.notes["unchanged"] = "same contents as the last export, files on disk unchanged"
        step.files.update((f.path.name, f.path) for f in files if f.path.is_file())
        return False
    with step.batch() as log:
        sources, inputs = _state(step, log, files, contents)  # read again with the write, in one transaction
        log.used(sources, contents.role)
        for file in files:
            n_rows = _copy(log, file)
            step.counts[f"rows:{file.path.name}"] = n_rows
            if n_rows == 0:
                _withdraw(step, log, file)  # under its name: an old row was renamed by the lookup above
                step.notes[file.path.name] = "no rows: not written"
                continue
            held = sources if file.contains_query is None else [r[0] for r in log.con.execute(file.contains_query).fetchall()]
            _swap_in(file)
            record_export(step, log, dataset, file.path, file.kind, n_rows, held, contents.relation)
            step.files[file.path.name] = file.path
        step.remember_inputs(log, inputs)
    return True


def _as_published(file: ExportFile, written_sha: str | None) -> bool:
    """The file on disk is the one last written (``written_sha``), or still absent when none is recorded (it was
    left out for having no rows)."""
    if written_sha is None:
        return not file.path.exists()
    return file.path.is_file() and written_sha == sha256_file(file.path)


def _state(step: Step, log: ActivityLog, files: Sequence[ExportFile], contents: Contents) -> tuple[list[str], str]:
    """The entities the files are made from, and a digest of them and of the files (by name: a moved project's
    exports are unchanged)."""
    sources = [row[0] for row in log.con.execute(contents.entities_query).fetchall()]
    fingerprint = list(log.con.execute(contents.fingerprint_query).fetchall()[0]) if contents.fingerprint_query else None
    described = [[step.name_of(f.path), f.format, f.query, f.contains_query] for f in files]
    return sources, digest_of([sources, fingerprint, described])


def write_file(step: Step, log: ActivityLog, dataset: str, file: ExportFile, sources: Sequence[str],
               relation: str) -> tuple[str, int]:
    """Stream one file out of the warehouse, swap it in, record it; returns its entity id and row count."""
    n_rows = _copy(log, file)
    _swap_in(file)
    return record_export(step, log, dataset, file.path, file.kind, n_rows, sources, relation), n_rows


def _partial(file: ExportFile) -> Path:
    return file.path.with_name(f".{file.path.name}.partial")


def _copy(log: ActivityLog, file: ExportFile) -> int:
    """Stream the query's rows into a partial copy beside the file; returns the row count."""
    file.path.parent.mkdir(parents=True, exist_ok=True)
    options = "FORMAT csv, HEADER" if file.format == "csv" else f"FORMAT {file.format}"
    ((n_rows,),) = log.con.execute(f"COPY ({file.query}) TO '{_sql_path(_partial(file))}' ({options})").fetchall()
    return n_rows


def _swap_in(file: ExportFile) -> None:
    os.replace(_partial(file), file.path)


def _withdraw(step: Step, log: ActivityLog, file: ExportFile) -> None:
    """A file with no rows: neither its partial copy nor an earlier version stays, nor its export_file row."""
    _partial(file).unlink()
    file.path.unlink(missing_ok=True)
    log.con.execute("DELETE FROM export_file WHERE path = ?", [step.name_of(file.path)])


def export_names(step: Step, log: ActivityLog, paths: Sequence[Path]) -> list[str]:
    """The files' names in ``export_file``. Rows that a warehouse written before names were used holds under
    absolute paths are renamed first, in every table (``warehouse.rekey.rename``: the files' entities too), once,
    so that none is left beside the row a new write adds (a caller that keeps an unchanged file calls it for that)."""
    names = [step.name_of(path) for path in paths]
    old = {str(path): name for path, name in zip(paths, names) if str(path) != name}
    found = log.con.execute("SELECT path FROM export_file WHERE list_contains(?, path)", [list(old)]).fetchall()
    if found:
        rekey.rename(log.con, {path: old[path] for path, in found}, step.warehouse.root)
    return names


def record_export(step: Step, log: ActivityLog, dataset: str, path: Path, kind: str, n_rows: int,
                  sources: Sequence[str], relation: str) -> str:
    """Record a written file, by its name, as an ``export_file`` entity derived from ``sources`` (replacing the
    file's earlier row); returns its entity id."""
    (name,) = export_names(step, log, [path])
    sha = sha256_file(path)
    export_entity = entity_id("export_file", sha)
    log.entities([Entity(export_entity, "export_file", sha, {"path": name, "format": kind, "dataset": dataset})])
    log.generated([export_entity])
    log.derived((export_entity, source, relation) for source in sources)
    row = {"path": name, "entity_id": export_entity, "format": kind, "n_rows": n_rows,
           "sha256": sha, "dataset": dataset, "activity_id": log.activity_id}
    insert_rows(log.con, "export_file", [row], conflict="replace")
    return export_entity


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")
