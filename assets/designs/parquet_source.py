"""Crello Parquet exports read row by row, through DuckDB's Parquet reader (a file reader here, not the warehouse).

It lives apart from the pure record parsing (``logic/crello_records.py``) because it needs DuckDB, which ``logic/``
may not import; each row is still parsed there (``ParquetRow.parse``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assets.designs.logic.crello_records import (
    DesignRead,
    LayerPayload,
    class_labels_from_hf_metadata,
    read_design_record,
)


def parquet_class_labels(path: Path) -> dict[str, tuple[str, ...]]:
    """Label tables from a Parquet file's ``huggingface`` key-value metadata ({} when there is none)."""
    import duckdb

    con = duckdb.connect()
    try:
        rows = con.execute("SELECT key, value FROM parquet_kv_metadata(?)", [str(path)]).fetchall()
    finally:
        con.close()
    for key, value in rows:
        if bytes(key) == b"huggingface":
            try:
                return class_labels_from_hf_metadata(bytes(value))
            except (ValueError, AttributeError):
                return {}
    return {}


@dataclass(frozen=True)
class ParquetRow:
    """One row of a Parquet export as read, not yet parsed (``parse`` does that), or ``failure`` when the file,
    or the rest of it, could not be read."""

    source: str                 # "file.parquet#row=12" (0-based row of the file), or the file name
    row: int | None = None
    record: Mapping[str, Any] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    failure: DesignRead | None = None

    def parse(self, on_layer: Callable[[LayerPayload], None] | None = None) -> DesignRead:
        return self.failure or read_design_record(self.source, self.record, on_layer, **self.options)


def parquet_rows(
    path: Path,
    *,
    fmt: str = "auto",
    class_labels: Mapping[str, Sequence[str]] | None = None,
    layer_root: Path | None = None,
    keep_text_layers: bool = False,
    verify_layers: bool = True,
    batch_size: int = 16,
) -> Iterator[ParquetRow]:
    """Rows of a Crello Parquet export streamed through DuckDB ``batch_size`` rows at a time (one thread,
    no file cache: memory stays bounded by a row group, not the file). Integer labels are decoded with
    ``class_labels``, else with the file's own Hugging Face metadata. Image structs give their ``bytes``,
    or a ``path`` resolved next to the file inside ``layer_root``. A file that cannot be opened or scanned
    further ends the stream with one ``unreadable_file`` row."""
    import duckdb

    path = Path(path)
    labels = dict(class_labels) if class_labels is not None else None
    con = duckdb.connect()
    try:
        con.execute("SET threads=1")
        try:
            con.execute("SET enable_external_file_cache=false")
        except duckdb.Error:
            pass
        try:
            if labels is None:
                labels = parquet_class_labels(path)
            cursor = con.execute("SELECT * FROM read_parquet(?, file_row_number=true)", [str(path)])
            columns = [d[0] for d in cursor.description]
        except duckdb.Error as exc:
            yield ParquetRow(path.name, failure=DesignRead(source=path.name, reason_code="unreadable_file",
                                                           detail=f"{type(exc).__name__}: {exc}"[:300]))
            return
        base = path.resolve().parent
        options = dict(fmt=fmt, class_labels=labels, design_id=None, base_dir=base,
                       layer_root=Path(layer_root) if layer_root is not None else base, layer_refs="blob",
                       keep_text_layers=keep_text_layers, verify_layers=verify_layers)
        next_row = 0
        while True:
            try:
                rows = cursor.fetchmany(batch_size)
            except duckdb.Error as exc:
                source = f"{path.name}#row={next_row}"
                yield ParquetRow(source, next_row, failure=DesignRead(source=source, reason_code="unreadable_file",
                                                                      detail=f"{type(exc).__name__}: {exc}"[:300]))
                return
            if not rows:
                return
            for row in rows:
                record = dict(zip(columns, row))
                row_number = int(record.pop("file_row_number"))
                next_row = row_number + 1
                yield ParquetRow(f"{path.name}#row={row_number}", row_number, record, options)
    finally:
        con.close()


def read_design_parquet(
    path: Path,
    *,
    on_layer: Callable[[LayerPayload], None] | None = None,
    **options: Any,
) -> Iterator[DesignRead]:
    """Every row of a Parquet export (``parquet_rows``, which takes the options) as a design or a rejection
    located ``<file>#row=<n>``."""
    for row in parquet_rows(path, **options):
        yield row.parse(on_layer)
