"""Writes one release folder: Parquet shards per config and split with images embedded, ``ATTRIBUTION.csv``,
``provenance.parquet``, the card and ``croissant.json``; records it in the warehouse.

A dataset's module describes its release as a :class:`ReleaseSpec` (SQL over the warehouse's views); this module
owns everything else, so every release has the same layout and the same guarantees:

- **Streaming**: rows leave DuckDB in Arrow batches and go to the shard being written; a shard is closed when it
  passes ``shard_max_bytes``. Images are read from the blob store one row group at a time.
- **Pool images encoded at export**: the pool keeps originals only and names an image by its pixel digest
  (``image.pixel_sha256``); the views and the leakage guard work in those names. A released pool image is published
  as a PNG of its normalised pixels, encoded from its original here (deterministic: the same original gives the same
  bytes, those the pool stored as its derivative before issue 18) and stored in the blob store, and in every file
  the release writes its pixel digest becomes the PNG's sha256, so a row's image has the sha256 the row names.
- **Byte-identical**: rows ordered by each table's key; fixed row groups and Parquet settings; no timestamps, run or
  activity ids or absolute paths in any file except ``release.json`` (build date and run, kept apart on purpose).
- **Licence-aware**: an image whose redistribution is withheld is written as null; its row keeps the sha256 column
  and ``ATTRIBUTION.csv`` its source URL.
- **Atomic**: the folder is built beside the target and swapped in, so a reader never sees half a release.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from assets.core.exports import record_export
from assets.core.logic.normalized_pixels import normalized_png
from assets.core.step import Step
from assets.releases.logic.card import CardFacts, ConfigCard, render_card
from assets.releases.logic.croissant import RecordSetFiles, ResponsibleAI, croissant
from assets.releases.logic.features import card_features, hf_features, plain_schema
from resources.blob_store import BlobStore
from resources.image_formats import DecodeFailure, recognised_format
from warehouse.db import registered
from warehouse.ids import canonical_json, digest_of, entity_id, sha256_file
from warehouse.lineage import Entity

ROW_GROUP_ROWS = 64
"""Rows per Parquet row group: small enough that a group of embedded images stays a few MB."""
PARQUET_SETTINGS = {"compression": "zstd", "compression_level": 3, "version": "2.6", "use_dictionary": True,
                    "write_statistics": True, "data_page_version": "1.0"}
TRAINING_SPLITS = frozenset({"train"})
"""Splits the leakage guard (``assets/releases/leakage.py``) guards: their rows leave out every image listed in
``release_exclusion`` for the dataset and split, i.e. another benchmark's held-out image or a duplicate of one."""
EXTENSIONS = {"jpeg": "jpg", "png": "png", "webp": "webp", "gif": "gif", "tiff": "tif", "bmp": "bmp"}


@dataclass(frozen=True)
class ReleaseTable:
    """One config: a query per split (over the warehouse's views), ordered by ``key`` when written. Columns named
    in ``images`` hold an image's sha256 (or a list of them) and are written as the ``datasets`` Image feature.
    A training split (``TRAINING_SPLITS``) of a table with images must have an ``image_sha256`` column: the
    leakage guard filters on it."""

    config: str
    description: str
    key: str
    splits: Mapping[str, str]
    images: tuple[str, ...] = ()
    columns: Mapping[str, str] = field(default_factory=dict)
    default: bool = False


@dataclass(frozen=True)
class ReleaseSpec:
    """What a dataset releases and what its card says about it.

    ``images_query`` gives one row per released image: image_sha256, source_url, creator, license, provider,
    redistribution. ``rows_query`` gives one row per released row: config, split, row_id, entity_id (the warehouse
    entity its lineage starts from). ``composition_query`` gives (split, domain or kind, rows). ``left_out_query``
    (optional) gives (config, reason, rows) for rows a config's own rules leave out after every stage kept them,
    shown with the selection and counted in the step's summary.
    """

    dataset: str
    pretty_name: str
    summary: str
    tables: tuple[ReleaseTable, ...]
    images_query: str
    rows_query: str
    composition_query: str
    assets: tuple[str, ...]
    stages: tuple[str, ...]
    task_categories: tuple[str, ...]
    citations: tuple[str, ...]
    limitations: tuple[str, ...]
    rai: ResponsibleAI
    extra_sections: tuple[tuple[str, str], ...] = ()
    left_out_query: str | None = None


@dataclass
class ReleaseSummary:
    folder: Path
    files: dict[str, str]  # relative path -> sha256
    rows: dict[str, int]  # config/split -> rows
    withheld_images: int
    written: bool


def _q(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _in_list(values: Sequence[str]) -> str:
    return "(" + ", ".join(_q(v) for v in values) + ")" if values else "(NULL)"


def _is_withheld(values: Sequence[str]) -> str:
    """SQL that is true for a row whose ``redistribution`` is withheld (never NULL, even for an empty list)."""
    return f"coalesce(redistribution IN {_in_list(list(values))}, false)" if values else "false"


def guarded(dataset: str, table: "ReleaseTable", split: str, query: str) -> str:
    """``query`` (a split's rows, with an ``image_sha256`` column) without the images the guard excluded."""
    if split not in TRAINING_SPLITS or not table.images:
        return query
    return (f"SELECT * FROM ({query}) AS g WHERE g.image_sha256 NOT IN (SELECT x.image_sha256 FROM release_exclusion x"
            f" WHERE x.dataset = {_q(dataset)} AND x.split = {_q(split)})")


def released_rows(spec: "ReleaseSpec") -> str:
    """The spec's lineage roots less the rows the guard left out of training splits."""
    left_out = [
        f"SELECT {_q(table.config)} AS config, {_q(split)} AS split, CAST(q.{table.key} AS VARCHAR) AS row_id"
        f" FROM ({query}) AS q WHERE q.image_sha256 IN (SELECT x.image_sha256 FROM release_exclusion x"
        f" WHERE x.dataset = {_q(spec.dataset)} AND x.split = {_q(split)})"
        for table in spec.tables if table.images for split, query in table.splits.items() if split in TRAINING_SPLITS
    ]
    if not left_out:
        return spec.rows_query
    return (f"SELECT r.* FROM ({spec.rows_query}) AS r ANTI JOIN ({' UNION ALL '.join(left_out)}) AS x"
            " ON x.config = r.config AND x.split = r.split AND x.row_id = r.row_id")


class _ShardWriter:
    """The shards of one config and split: ``<split>-NNNNN-of-NNNNN.parquet`` once the count is known."""

    def __init__(self, folder: Path, split: str, schema: pa.Schema, features: dict[str, Any], max_bytes: int) -> None:
        self.folder, self.split, self.max_bytes = folder, split, max_bytes
        self.schema = schema.with_metadata({"huggingface": canonical_json({"info": {"features": features}})})
        self.parts: list[Path] = []
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None

    def write(self, table: pa.Table) -> None:
        if self._writer is None:
            part = self.folder / f".{self.split}-{len(self.parts):05d}.partial"
            self.parts.append(part)
            self._writer = pq.ParquetWriter(part, self.schema, **PARQUET_SETTINGS)
        self._writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
        self.rows += table.num_rows
        if self.parts[-1].stat().st_size >= self.max_bytes:
            self._close()

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def finish(self) -> list[Path]:
        self._close()
        named = []
        for i, part in enumerate(self.parts):
            target = self.folder / f"{self.split}-{i:05d}-of-{len(self.parts):05d}.parquet"
            os.replace(part, target)
            named.append(target)
        return named


def _image_value(store: BlobStore, sha256: str | None, withheld: set[str], copy_to: Path | None) -> Any:
    if sha256 is None or sha256 in withheld:
        return None
    data = store.get_bytes(sha256)
    try:
        ext = EXTENSIONS.get(recognised_format(data), "bin")
    except DecodeFailure:
        ext = "bin"
    path = f"images/{sha256[:2]}/{sha256}.{ext}"
    if copy_to is not None:
        target = copy_to / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return {"bytes": None, "path": path}
    return {"bytes": data, "path": path}


def _rows_in_groups(reader: pa.RecordBatchReader) -> Iterator[pa.Table]:
    """The reader's rows re-cut into groups of exactly ``ROW_GROUP_ROWS`` (the last shorter): DuckDB's batch
    boundaries are its own, the file's must not depend on them."""
    pending: list[pa.RecordBatch] = []
    held = 0
    for batch in reader:
        pending.append(batch)
        held += batch.num_rows
        while held >= ROW_GROUP_ROWS:
            table = pa.Table.from_batches(pending, schema=reader.schema)
            yield table.slice(0, ROW_GROUP_ROWS)
            rest = table.slice(ROW_GROUP_ROWS)
            pending, held = rest.to_batches(), rest.num_rows
    if held:
        yield pa.Table.from_batches(pending, schema=reader.schema)


def publish_pool_images(con: duckdb.DuckDBPyConnection, store: BlobStore, images_query: str) -> dict[str, str]:
    """Pixel digest -> sha256 of the published PNG, for every pool image among the release's images (``images_query``,
    view ``image_file``), each PNG encoded from its original and put in the blob store."""
    rows = con.execute(f"SELECT f.pixel_sha256, f.file_sha256 FROM image_file f WHERE f.pixel_sha256 IN"
                       f" (SELECT i.image_sha256 FROM ({images_query}) AS i) ORDER BY 1").fetchall()
    return {pixel: store.put_bytes(normalized_png(store.get_bytes(file))).sha256 for pixel, file in rows}


def _published_names(table: pa.Table, published: Mapping[str, str]) -> pa.Table:
    """``table`` with every pool image's pixel digest that a string column (or a list of strings) holds whole replaced
    by its published PNG's sha256."""
    if not published:
        return table
    columns = []
    for f, column in zip(table.schema, table.columns):
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type):
            column = pa.array([published.get(v, v) for v in column.to_pylist()], f.type)
        elif pa.types.is_list(f.type) and pa.types.is_string(f.type.value_type):
            column = pa.array([None if v is None else [published.get(x, x) for x in v] for v in column.to_pylist()], f.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=table.schema)


def _converted(table: pa.Table, schema: pa.Schema, images: tuple[str, ...], store: BlobStore, withheld: set[str],
               copy_to: Path | None) -> pa.Table:
    columns = []
    for f in schema:
        column = table.column(f.name)
        if f.name in images:
            values = column.to_pylist()
            if pa.types.is_list(f.type):
                values = [None if v is None else [_image_value(store, s, withheld, copy_to) for s in v] for v in values]
            else:
                values = [_image_value(store, s, withheld, copy_to) for s in values]
            columns.append(pa.array(values, f.type))
        else:
            source = column.type
            if isinstance(source, pa.ExtensionType):
                column = pa.chunked_array([c.storage for c in column.chunks], source.storage_type)
            columns.append(column.cast(f.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _write_split(con: duckdb.DuckDBPyConnection, query: str, key: str, table: ReleaseTable, split: str, folder: Path,
                 store: BlobStore, withheld: set[str], max_bytes: int, copy_to: Path | None,
                 published: Mapping[str, str]) -> tuple[pa.Schema, list[Path], int]:
    reader = con.sql(f"SELECT * FROM ({query}) AS q ORDER BY q.{key}").to_arrow_reader(ROW_GROUP_ROWS)
    schema = plain_schema(reader.schema, table.images)
    if copy_to is not None:  # copied images: the column is the file's relative path
        schema = pa.schema([pa.field(f.name, pa.list_(pa.string()) if pa.types.is_list(f.type) else pa.string())
                            if f.name in table.images else f for f in schema])
    features = hf_features(schema, () if copy_to is not None else table.images)
    writer = _ShardWriter(folder, split, schema, features, max_bytes)
    for group in _rows_in_groups(reader):
        group = _published_names(group, published)
        if copy_to is not None:
            image_schema = plain_schema(reader.schema, table.images)
            converted = _converted(group, image_schema, table.images, store, withheld, copy_to)
            converted = pa.Table.from_arrays(
                [_paths_only(converted.column(f.name)) if f.name in table.images else converted.column(f.name)
                 for f in schema], schema=schema)
        else:
            converted = _converted(group, schema, table.images, store, withheld, None)
        writer.write(converted)
    return schema, writer.finish(), writer.rows


def _paths_only(column: pa.ChunkedArray) -> pa.Array:
    def path(v: Any) -> Any:
        return None if v is None else [path(x) for x in v] if isinstance(v, list) else v["path"]
    values = [path(v) for v in column.to_pylist()]
    return pa.array(values, pa.list_(pa.string()) if pa.types.is_list(column.type) else pa.string())


def _write_arrow(con: duckdb.DuckDBPyConnection, query: str, path: Path) -> int:
    """A query's rows (already ordered) as one Parquet file with the release's fixed settings."""
    reader = con.sql(query).to_arrow_reader(ROW_GROUP_ROWS)
    schema = plain_schema(reader.schema, ())
    n = 0
    with pq.ParquetWriter(path, schema, **PARQUET_SETTINGS) as writer:
        for group in _rows_in_groups(reader):
            writer.write_table(_converted(group, schema, (), None, set(), None), row_group_size=ROW_GROUP_ROWS * 16)
            n += group.num_rows
    return n


PROVENANCE_QUERY = """
WITH RECURSIVE roots AS ({rows}),
chain(config, split, row_id, entity_id, depth, relation) AS (
    SELECT config, split, row_id, entity_id, 0, CAST(NULL AS VARCHAR) FROM roots
    UNION
    SELECT c.config, c.split, c.row_id, d.source_entity_id, c.depth + 1, d.relation
    FROM chain c JOIN was_derived_from d ON d.entity_id = c.entity_id WHERE c.depth < 32
),
ancestors AS (
    SELECT config, split, row_id, entity_id, min(depth) AS depth, arg_min(relation, depth) AS relation
    FROM chain GROUP BY ALL
)
SELECT DISTINCT c.config, c.split, c.row_id, CAST(c.depth AS INTEGER) AS depth, c.entity_id, e.kind AS entity_kind,
       c.relation AS derived_as,
       CASE WHEN g.activity_id IS NULL THEN 'external input' ELSE 'generated' END AS link,
       a.asset_key, a.code_version, release_portable(CAST(a.parameters AS VARCHAR)) AS parameters,
       (SELECT list(w.agent_id ORDER BY w.agent_id) FROM was_associated_with w WHERE w.activity_id = g.activity_id) AS agents,
       r.source_url, r.license, r.creator, r.provider, r.redistribution
FROM ancestors c
JOIN entity e ON e.entity_id = c.entity_id
LEFT JOIN was_generated_by g ON g.entity_id = c.entity_id
LEFT JOIN activity a ON a.activity_id = g.activity_id
LEFT JOIN source_record r ON r.record_id = c.entity_id
ORDER BY ALL
"""
"""Per released row, every ancestor and the activity that generated it, without run ids, activity ids or times."""


def portable_parameters(parameters: str | None, name_of: Callable[[str], str]) -> str | None:
    """A step's parameters (canonical JSON) with every absolute path named as the warehouse names files (relative to
    its root), so neither the card nor ``provenance.parquet`` says where the project sits."""
    if parameters is None:
        return None

    def portable(value: Any) -> Any:
        if isinstance(value, str) and os.path.isabs(value):
            return name_of(value)
        if isinstance(value, dict):
            return {k: portable(v) for k, v in value.items()}
        if isinstance(value, list):
            return [portable(v) for v in value]
        return value

    return canonical_json(portable(json.loads(parameters)))


@contextmanager
def _portable_function(con: duckdb.DuckDBPyConnection, name_of: Callable[[str], str]) -> Iterator[None]:
    """``release_portable(parameters)`` in SQL for the duration of one release's queries."""
    con.create_function("release_portable", lambda text: portable_parameters(text, name_of), ["VARCHAR"], "VARCHAR",
                        null_handling="special")
    try:
        yield
    finally:
        con.remove_function("release_portable")


def release_fingerprint(con: duckdb.DuckDBPyConnection, spec: ReleaseSpec, settings: Mapping[str, Any]) -> str:
    """What the folder would be made of: every split's rows, the images' rights, the settings."""
    parts: list[Any] = [settings, repr(spec)]
    for table in spec.tables:
        for split, query in table.splits.items():
            parts.append(con.execute(f"SELECT count(*), bit_xor(hash(q)) FROM ({guarded(spec.dataset, table, split, query)}) AS q").fetchall())
    parts.append(con.execute(f"SELECT count(*), bit_xor(hash(q)) FROM ({spec.images_query}) AS q").fetchall())
    parts.append(_left_out(con, spec))
    parts.append(con.execute(f"SELECT count(*), bit_xor(hash(q)) FROM ({PROVENANCE_QUERY.format(rows=released_rows(spec))}) AS q").fetchall())
    return digest_of([str(p) for p in parts])


def write_release(step: Step, store: BlobStore, spec: ReleaseSpec, out: Path, *, withheld_values: Sequence[str],
                  images: str, shard_max_bytes: int, version: str) -> ReleaseSummary:
    """Build the folder ``out`` (replacing an older one) unless it already holds exactly this release."""
    settings = {"withhold_images": sorted(withheld_values), "images": images, "shard_max_bytes": shard_max_bytes}
    manifest = out / "release.json"
    name_of = step.warehouse.name_of
    with step.batch() as log:
        with _portable_function(log.con, name_of):
            fingerprint = release_fingerprint(log.con, spec, settings)
        last = step.last_inputs(log.con)
    if last == fingerprint and _intact(out):
        step.notes["unchanged"] = f"{out} already holds this release"
        step.files["folder"] = out
        recorded = json.loads(manifest.read_text())
        return ReleaseSummary(out, recorded["files"], recorded["rows"], recorded["withheld_images"], False)

    building = out.with_name(f".{out.name}.partial")
    shutil.rmtree(building, ignore_errors=True)
    (building / "data").mkdir(parents=True)
    copy_to = building if images == "copy" else None
    rows: dict[str, int] = {}
    configs: list[ConfigCard] = []
    record_sets: list[RecordSetFiles] = []
    with step.batch() as log, _portable_function(log.con, name_of):
        con = log.con
        published = publish_pool_images(con, store, spec.images_query)
        withheld = {published.get(r[0], r[0]) for r in con.execute(
            f"SELECT image_sha256 FROM ({spec.images_query}) WHERE {_is_withheld(withheld_values)}").fetchall()}
        for table in spec.tables:
            folder = building / "data" / table.config
            folder.mkdir(parents=True)
            splits: dict[str, tuple[int, int, int]] = {}
            schema = None
            for split, query in table.splits.items():
                split_schema, shards, n = _write_split(con, guarded(spec.dataset, table, split, query), table.key, table, split, folder, store, withheld,
                                                       shard_max_bytes, copy_to, published)
                if n == 0:  # an empty split is not written (and not announced)
                    for shard in shards:
                        shard.unlink()
                    continue
                schema = split_schema
                rows[f"{table.config}/{split}"] = n
                splits[split] = (n, sum(s.stat().st_size for s in shards), len(shards))
            if schema is None:
                folder.rmdir()
                continue
            shown_images = () if copy_to is not None else table.images
            configs.append(ConfigCard(table.config, table.description, card_features(schema, shown_images), splits,
                                      table.default))
            record_sets.append(RecordSetFiles(table.config, table.description, schema, shown_images, table.key,
                                              tuple(splits), table.columns))
        attribution = (
            f"SELECT coalesce(p.published, i.image_sha256) AS image_sha256, source_url,"
            f" coalesce(creator, 'unknown') AS creator, license, provider, redistribution,"
            f" NOT {_is_withheld(withheld_values)} AS bytes_included"
            f" FROM ({spec.images_query}) AS i LEFT JOIN _release_published p ON p.pixel = i.image_sha256 ORDER BY 1")
        names = pd.DataFrame({"pixel": list(published), "published": list(published.values())}, dtype="string")
        with registered(con, "_release_published", names):
            con.execute(f"COPY ({attribution}) TO {_q(str(building / 'ATTRIBUTION.csv'))} (FORMAT csv, HEADER)")
        n_provenance = _write_arrow(con, PROVENANCE_QUERY.format(rows=released_rows(spec)), building / "provenance.parquet")
        left_out = _left_out(con, spec)
        facts = _card_facts(con, spec, configs, withheld_values, left_out)
    (building / "README.md").write_text(render_card(facts), encoding="utf-8")
    licences = sorted({lic for lic, _, _, _ in facts.licences if lic})
    document = croissant(name=spec.dataset, description=spec.summary, licenses=licences, version=version,
                         cite_as=spec.citations[0] if spec.citations else spec.pretty_name,
                         url=f"https://huggingface.co/datasets/{spec.dataset}", record_sets=record_sets, rai=spec.rai)
    (building / "croissant.json").write_text(json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                                             encoding="utf-8")
    files = {str(p.relative_to(building)): sha256_file(p) for p in sorted(building.rglob("*")) if p.is_file()}
    summary = ReleaseSummary(out, files, rows, len(withheld), True)
    with step.batch() as log:
        built_at, run_id = log.con.execute("SELECT started_at, run_id FROM activity WHERE activity_id = ?",
                                           [step.activity_id]).fetchone()
    manifest_doc = {"dataset": spec.dataset, "built_at": built_at.isoformat(), "run_id": run_id,
                    "activity_id": step.activity_id, "version": version, "settings": settings, "files": files,
                    "rows": rows, "provenance_rows": n_provenance, "withheld_images": len(withheld)}
    (building / "release.json").write_text(json.dumps(manifest_doc, indent=1, sort_keys=True) + "\n")
    _swap(building, out)
    _record(step, spec, out, files, rows, fingerprint)
    step.counts.update({f"left_out:{config}:{reason}": n for config, reason, n in left_out})
    return summary


def _intact(out: Path) -> bool:
    """Whether ``out`` holds every file its ``release.json`` lists, unchanged."""
    try:
        files = json.loads((out / "release.json").read_text())["files"]
    except (OSError, ValueError, KeyError):
        return False
    return all((out / rel).is_file() and sha256_file(out / rel) == sha for rel, sha in files.items())


def _swap(building: Path, out: Path) -> None:
    old = out.with_name(f".{out.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        os.replace(out, old)
    os.replace(building, out)
    shutil.rmtree(old, ignore_errors=True)


def _record(step: Step, spec: ReleaseSpec, out: Path, files: Mapping[str, str], rows: Mapping[str, int],
            fingerprint: str) -> None:
    """The release as an entity derived from every released row's entity, and each file as an export of it."""
    release_id = entity_id("release", digest_of([spec.dataset, dict(files)]))
    with step.batch() as log:
        sources = [r[0] for r in log.con.execute(f"SELECT DISTINCT entity_id FROM ({released_rows(spec)}) ORDER BY 1").fetchall()]
        log.used(sources, f"{spec.dataset}_row")
        log.entities([Entity(release_id, "release", digest_of(dict(files)), {"dataset": spec.dataset, "rows": dict(rows)})])
        log.generated([release_id])
        log.derived((release_id, source, "contains") for source in sources)
        for rel in files:
            if rel.startswith("images/"):
                continue
            kind = rel.rsplit(".", 1)[-1]
            n = pq.ParquetFile(out / rel).metadata.num_rows if kind == "parquet" else 0  # the shard's own rows, from its footer
            record_export(step, log, f"{spec.dataset}_release", out / rel, kind, n, [release_id], "part_of")
        step.remember_inputs(log, fingerprint)
    step.counts.update({f"rows:{key}": n for key, n in rows.items()})
    step.files["folder"] = out


def _card_facts(con: duckdb.DuckDBPyConnection, spec: ReleaseSpec, configs: list[ConfigCard],
                withheld_values: Sequence[str], left_out: list[tuple[str, str, int]]) -> CardFacts:
    assets = _in_list(list(spec.assets))
    stages = con.execute(
        f"SELECT asset_key, arg_max(code_version, started_at), release_portable(arg_max(CAST(parameters AS VARCHAR), started_at))"
        f" FROM activity WHERE status = 'success' AND asset_key IN {assets} GROUP BY asset_key ORDER BY asset_key").fetchall()
    selection = con.execute(
        f"SELECT stage, reason_code, count(*) FROM rejection WHERE stage IN {_in_list(list(spec.stages))}"
        f" GROUP BY ALL ORDER BY ALL").fetchall()
    kept = [("released", f"{c.config}/{split}", rows) for c in configs for split, (rows, _, _) in c.splits.items()]
    composition = con.execute(f"SELECT * FROM ({spec.composition_query}) ORDER BY ALL").fetchall()
    licences = con.execute(
        f"SELECT coalesce(license, 'unknown'), redistribution, count(*),"
        f" count(*) FILTER (WHERE {_is_withheld(withheld_values)})"
        f" FROM ({spec.images_query}) GROUP BY ALL ORDER BY ALL").fetchall()
    excluded = _excluded(con, spec.dataset)
    return CardFacts(
        dataset=spec.dataset, pretty_name=spec.pretty_name, summary=spec.summary,
        license=_overall_licence([lic for lic, _, _, _ in licences]), task_categories=spec.task_categories,
        configs=configs, stages=[(a, v, p) for a, v, p in stages], selection=[*selection, *((f"left out of {c}", r, n) for c, r, n in left_out), *kept],
        composition=composition, licences=licences, withheld=list(withheld_values), excluded=excluded,
        limitations=spec.limitations, citations=spec.citations, extra_sections=spec.extra_sections)


def _left_out(con: duckdb.DuckDBPyConnection, spec: ReleaseSpec) -> list[tuple[str, str, int]]:
    """(config, reason, rows) the spec's own rules leave out (none without a ``left_out_query``)."""
    if spec.left_out_query is None:
        return []
    return [(c, r, int(n)) for c, r, n in con.execute(f"SELECT * FROM ({spec.left_out_query}) ORDER BY ALL").fetchall()]


def _excluded(con: duckdb.DuckDBPyConnection, dataset: str) -> list[tuple[str, str, int]]:
    """What the leakage guard removed from this dataset's training splits."""
    return con.execute("SELECT split, reason, count(DISTINCT image_sha256) FROM release_exclusion WHERE dataset = ?"
                       " GROUP BY ALL ORDER BY ALL", [dataset]).fetchall()


SPDX = {"CC0-1.0": "cc0-1.0", "CC-BY-4.0": "cc-by-4.0", "CC-BY-SA-4.0": "cc-by-sa-4.0", "MIT": "mit",
        "Apache-2.0": "apache-2.0", "CC-BY-NC-4.0": "cc-by-nc-4.0"}


def _overall_licence(licences: list[str]) -> str:
    """The Hub's licence id when every image shares one licence it knows, else ``other`` (the card explains)."""
    distinct = set(licences)
    return SPDX.get(next(iter(distinct)), "other") if len(distinct) == 1 else "other"
