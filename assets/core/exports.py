"""Published dataset files: streamed from a warehouse query, swapped in atomically, recorded as entities.

Each file is an entity named by its content hash, derived from the entities it contains, and listed in
``export_file``. A file is rewritten only when what it would contain changed, or when the copy on disk is
no longer what was written (edited or deleted by hand). A published file whose query has no rows is not
written (an empty JSON-lines file is no dataset to its readers): an earlier copy is removed with its
``export_file`` row, and the step's notes say so.
"""

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from assets.core.step import Step
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
        _, inputs = _state(log, files, contents)
        written = dict(log.con.execute("SELECT path, sha256 FROM export_file").fetchall())
        last = step.last_inputs(log.con)
    if last == inputs and all(_as_published(f, written) for f in files):
        step.notes["unchanged"] = "same contents as the last export, files on disk unchanged"
        return False
    with step.batch() as log:
        sources, inputs = _state(log, files, contents)  # read again with the write, in one transaction
        log.used(sources, contents.role)
        for file in files:
            n_rows = _copy(log, file)
            step.counts[f"rows:{file.path.name}"] = n_rows
            if n_rows == 0:
                _withdraw(log, file)
                step.notes[file.path.name] = "no rows: not written"
                continue
            held = sources if file.contains_query is None else [r[0] for r in log.con.execute(file.contains_query).fetchall()]
            _swap_in(file)
            record_export(log, dataset, file.path, file.kind, n_rows, held, contents.relation)
            step.notes[file.path.name] = str(file.path)
        step.remember_inputs(log, inputs)
    return True


def _as_published(file: ExportFile, written: dict[str, str]) -> bool:
    """The file on disk is the one last written or, when it was left out for having no rows, still absent."""
    if str(file.path) not in written:
        return not file.path.exists()
    return file.path.is_file() and written[str(file.path)] == sha256_file(file.path)


def _state(log: ActivityLog, files: Sequence[ExportFile], contents: Contents) -> tuple[list[str], str]:
    sources = [row[0] for row in log.con.execute(contents.entities_query).fetchall()]
    fingerprint = list(log.con.execute(contents.fingerprint_query).fetchall()[0]) if contents.fingerprint_query else None
    return sources, digest_of([sources, fingerprint, [[str(f.path), f.format, f.query, f.contains_query] for f in files]])


def write_file(log: ActivityLog, dataset: str, file: ExportFile, sources: Sequence[str], relation: str) -> tuple[str, int]:
    """Stream one file out of the warehouse, swap it in, record it; returns its entity id and row count."""
    n_rows = _copy(log, file)
    _swap_in(file)
    return record_export(log, dataset, file.path, file.kind, n_rows, sources, relation), n_rows


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


def _withdraw(log: ActivityLog, file: ExportFile) -> None:
    """A file with no rows: neither its partial copy nor an earlier version stays, nor its export_file row."""
    _partial(file).unlink()
    file.path.unlink(missing_ok=True)
    log.con.execute("DELETE FROM export_file WHERE path = ?", [str(file.path)])


def record_export(log: ActivityLog, dataset: str, path: Path, kind: str, n_rows: int, sources: Sequence[str],
                  relation: str) -> str:
    """Record a written file as an ``export_file`` entity derived from ``sources``; returns its entity id."""
    sha = sha256_file(path)
    export_entity = entity_id("export_file", sha)
    log.entities([Entity(export_entity, "export_file", sha, {"path": str(path), "format": kind, "dataset": dataset})])
    log.generated([export_entity])
    log.derived((export_entity, source, relation) for source in sources)
    row = {"path": str(path), "entity_id": export_entity, "format": kind, "n_rows": n_rows,
           "sha256": sha, "dataset": dataset, "activity_id": log.activity_id}
    insert_rows(log.con, "export_file", [row], conflict="replace")
    return export_entity


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")
