"""What a materialization shows in the Dagster UI, and the data version it reports, read from what the asset wrote.

**Declaring the output.** Each asset names the warehouse relations it writes in its own decorator,
``@asset(metadata=writes("pool_images", "pool_member", images="file_sha256"))``, primary first. The declaration sits
beside the code that writes the rows, shows in the catalog as the asset's ``dagster/table_name``, and is read back from
the loaded definitions both by the step (``recorded_step`` hands it to ``Step``) and by the tests, so there is no
second list to keep in step with the assets. ``where`` narrows every declared relation to the asset's own rows where
several assets share a table (exports and releases in ``export_file``, the evaluations in their leaderboard).

**The data version** is a digest of every declared relation's rows, computed in DuckDB by one aggregate each
(``logic.previews.digest_query``) over the columns that describe the data: activity and run ids, process ids,
durations and ``*_at`` clock times are left out. A run that writes the same rows, or skips because nothing changed,
reports the same version; one changed row changes it. Dagster compares these versions to mark downstream assets stale.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import duckdb
from dagster import DataVersion, MetadataValue, TableColumn, TableSchema
from dagster._core.definitions.metadata import TableMetadataSet  # the dagster/* table keys; not re-exported in 1.13

from assets.core.logic.files import write_if_changed
from assets.core.logic.previews import (
    PREVIEW_ROWS,
    column_comments,
    digest_query,
    is_run_column,
    markdown_table,
    sample_query,
    small_sheet,
    thumbnail_sheet,
)
from resources.blob_store import REF_PREFIX, BlobNotFound, BlobStore
from warehouse.db import Warehouse, migrations
from warehouse.ids import digest_of

OUTPUT_KEY = "aesforge/output"
SHEET_IMAGES = 12
INLINE_SHEET_BYTES = 45_000  # a base64 data URI of at most 60 KB, small enough for the UI's metadata panel
SHEET_SIDE = 256  # tile size of the full sheet written beside the warehouse


@dataclass(frozen=True)
class Output:
    """The warehouse relations an asset writes (``tables[0]`` is its primary output), the filter (an SQL condition)
    that picks its own rows from shared ones, and, for an output with images, an SQL expression over a row of the
    primary relation giving its image's blob (``blob:<sha256>`` or the sha256; usually just a column name)."""

    tables: tuple[str, ...]
    where: str | None = None
    images: str | None = None

    @property
    def primary(self) -> str:
        return self.tables[0]


def writes(primary: str, *others: str, where: str | None = None, images: str | None = None) -> dict[str, Any]:
    """The ``@asset`` metadata declaring what the asset writes (see the module docstring)."""
    output = Output((primary, *others), where, images)
    return {**TableMetadataSet(table_name=primary), OUTPUT_KEY: MetadataValue.json(asdict(output))}


def declared_output(asset_key: str, metadata: Mapping[str, Any]) -> Output:
    """The output an asset's definition metadata declares; ``ValueError`` naming the asset when it declares none."""
    if OUTPUT_KEY not in metadata:
        raise ValueError(f"asset {asset_key} declares no warehouse output: add metadata=writes(...) to its decorator")
    value = metadata[OUTPUT_KEY]
    data = getattr(value, "data", value)
    return Output(tuple(data["tables"]), data.get("where"), data.get("images"))


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str | None = None


@lru_cache(maxsize=1)
def _comments() -> dict[tuple[str, str], str]:
    found: dict[tuple[str, str], str] = {}
    for _, _, sql in migrations():
        found.update(column_comments(sql))
    return found


def columns_of(con: duckdb.DuckDBPyConnection, relation: str) -> list[Column]:
    """The columns of a table or view as DuckDB has them, with the migrations' comments as descriptions."""
    rows = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'main' AND table_name = ?"
        " ORDER BY ordinal_position", [relation]).fetchall()
    if not rows:
        raise LookupError(f"the warehouse has no table or view named {relation}")
    comments = _comments()
    return [Column(name, kind, comments.get((relation, name))) for name, kind in rows]


def table_schema(columns: Sequence[Column]) -> TableSchema:
    return TableSchema(columns=[TableColumn(c.name, c.type, c.description) for c in columns])


def content_digests(con: duckdb.DuckDBPyConnection, output: Output) -> list[tuple[str, list[str], int, str]]:
    """Per declared relation: the columns digested, its row count and the sum of its row digests."""
    parts = []
    for relation in output.tables:
        kept = [c.name for c in columns_of(con, relation) if not is_run_column(c.name)]
        n, total = con.execute(digest_query(relation, kept, output.where)).fetchone()
        parts.append((relation, kept, n, str(total)))  # the sum as text: JSON has no 128-bit integers
    return parts


@dataclass(frozen=True)
class Described:
    metadata: dict[str, Any]
    data_version: DataVersion


def describe(warehouse: Warehouse, output: Output, asset_key: str, store: BlobStore | None = None) -> Described:
    """Row count, column schema, a sample-row preview and the data version of the primary output; for an output with
    images (``store`` must then be given), a thumbnail sheet of the sample inline and the full sheet's path."""
    if output.images is not None and store is None:
        raise ValueError(f"{asset_key} declares images in {output.images}: pass the blob store to read them")
    with warehouse.transaction() as con:
        columns = columns_of(con, output.primary)
        shown = [c.name for c in columns if not is_run_column(c.name)]
        digests = content_digests(con, output)
        sample = con.execute(sample_query(output.primary, shown, output.where, SHEET_IMAGES, output.images)).fetchall()
    row_count = digests[0][2]
    metadata: dict[str, Any] = {
        **TableMetadataSet(row_count=row_count, column_schema=table_schema(columns)),
        "preview": MetadataValue.md(f"First {min(PREVIEW_ROWS, len(sample))} of {row_count} rows of `{output.primary}`"
                                    f" (ordered by every column)\n\n" + markdown_table(shown, [row[:len(shown)] for row in sample[:PREVIEW_ROWS]])),
    }
    if output.images is not None and sample:
        metadata.update(_sheets(store, [row[-1] for row in sample], warehouse, asset_key))
    return Described(metadata, DataVersion(digest_of(digests)[:32]))


def _sheets(store: BlobStore, refs: Sequence[str | None], warehouse: Warehouse, asset_key: str) -> dict[str, Any]:
    """The sample's images as an inline sheet (a PNG data URI in Markdown) and a full-size sheet file."""
    images = []
    for ref in dict.fromkeys(r for r in refs if r):
        try:
            images.append(store.get_bytes(ref[len(REF_PREFIX):] if ref.startswith(REF_PREFIX) else ref))
        except BlobNotFound:
            continue
    if not images:
        return {}
    inline = base64.b64encode(small_sheet(images, INLINE_SHEET_BYTES)).decode("ascii")
    path = warehouse.path.parent / "previews" / f"{asset_key.replace('/', '__')}.png"
    write_if_changed(path, thumbnail_sheet(images, SHEET_SIDE))
    return {"thumbnails": MetadataValue.md(f"![{len(images)} sample images](data:image/png;base64,{inline})"),
            "thumbnail_sheet": MetadataValue.path(str(path))}
