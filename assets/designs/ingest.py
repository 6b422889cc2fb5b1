"""Crello-format graphic designs into the warehouse (pure parsing: assets/designs/logic/crello_records.py).

Each source (a folder of per-design JSON, or a Parquet export) is read again only when its content changed.
Every JSON file and every Parquet row is one item of the item loop (assets/core/item_loop.py): it becomes a design
(layers in the blob store, referenced as ``blob:<sha256>``) or a rejection with its locator and reason, and an
unexpected exception on one record is that record's ``internal_error`` while the others are read. Writes are
batched and keyed by content, so a crash mid-source re-reads that source without duplicating a row. Locators name
the source by its name relative to the warehouse's root (``<folder>/<file>.json``, ``<folder>/<row source>``).
"""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import duckdb
from dagster import AssetExecutionContext, Failure, MaterializeResult, asset

from assets.designs.settings import DesignSettings
from assets.designs.store import write_source_designs
from assets.core.item_loop import Done, Item, Kept, Rejected, run_items
from assets.designs.logic.crello_records import LayerPayload, design_json_names, read_design_file
from assets.designs.parquet_source import ParquetRow, parquet_rows
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.warehouse import WarehouseResource
from warehouse.ids import digest_of, entity_id, sha256_file, sha256_hex
from warehouse.lineage import ActivityLog, Entity
from warehouse.rekey import located_renames, renamed_path

DESIGN_STAGE = "design_records"
REKEY_SCOPE = "designs"


def design_entity_id(design_json: str) -> str:
    return entity_id("design", sha256_hex(design_json.encode("utf-8")))


def record_entity_id(locator: str) -> str:
    """The entity a source record's outcome is about, before (or without) a design: its locator's digest."""
    return entity_id("design_record", sha256_hex(locator.encode()))


def _location_renames(con: duckdb.DuckDBPyConnection, root: Path) -> dict[str, str]:
    """What this asset's rows written before migration 0015 become (``Step.rekey``): design folders and files by
    their names, and the record ids derived from the locators."""
    locators = [row[0] for row in con.execute("SELECT locator FROM design_source_read").fetchall()]
    sources = [row[0] for row in con.execute("SELECT attributes->>'path' FROM entity WHERE kind = 'design_source'").fetchall()]
    return {**{path: renamed_path(path, root) for path in sources if path},
            **located_renames(locators, root, record_entity_id)}


@dataclass(frozen=True)
class _Source:
    path: Path
    name: str                   # the path's name relative to the warehouse's root
    kind: str                   # folder | parquet
    files: dict[Path, str]      # file → content digest; they decide whether the source is read again

    @property
    def digest(self) -> str:
        return sha256_hex("\n".join(f"{f.name}:{sha}" for f, sha in self.files.items()).encode())


def _file_digest(path: Path) -> str:
    """A file's sha256; a folder named ``*.json`` or an unreadable file gets a marker, and its item says why."""
    try:
        return sha256_file(path)
    except OSError as exc:
        return f"unreadable:{type(exc).__name__}"


def _sources(settings: DesignSettings, step: Step) -> Iterator[_Source]:
    for folder in map(Path, settings.folders):
        if not folder.is_dir():
            raise Failure(description=f"design folder not found: {folder}")
        yield _Source(folder, step.name_of(folder), "folder",
                      {folder / n: _file_digest(folder / n) for n in design_json_names(folder)})
    for file in map(Path, settings.parquet):
        if not file.is_file():
            raise Failure(description=f"design Parquet file not found: {file}")
        yield _Source(file, step.name_of(file), "parquet", {file: sha256_file(file)})


@asset(
    metadata=writes("design", where="NOT is_perturbed"),
    code_version="1",
    description="Crello v4/v5 records (JSON folders or Parquet exports) as canonical designs with their layers in"
    " the blob store; every rejected record keeps its locator and reason.",
)
def design_records(
    context: AssetExecutionContext, warehouse: WarehouseResource, blob_store: BlobStoreResource, designs: DesignSettings
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    params = {"folders": [wh.name_of(f) for f in designs.folders], "parquet": [wh.name_of(f) for f in designs.parquet],
              "format": designs.format}
    with recorded_step(context, wh, params) as step:
        step.rekey(REKEY_SCOPE, _location_renames)  # a warehouse written before migration 0015, once
        for source in _sources(designs, step):
            if step.read_before(source.path, source.digest):
                step.counts["sources_unchanged"] += 1
                continue
            _read_source(step, store, source, designs)
    return step.result()


def _items(source: _Source, settings: DesignSettings) -> Iterator[Item]:
    """One item per JSON file of a folder, or per row of a Parquet file (read lazily, a few rows at a time)."""
    if source.kind == "folder":
        for file, sha in source.files.items():
            locator = f"{source.name}/{file.name}"
            yield Item(record_entity_id(locator), locator, sha, file)
        return
    file_sha = source.files[source.path]
    for row in parquet_rows(source.path, fmt=settings.format):
        locator = str(PurePosixPath(source.name).parent / row.source)
        yield Item(record_entity_id(locator), locator, digest_of([file_sha, row.source]), row)


def _read_source(step: Step, store: BlobStore, source: _Source, settings: DesignSettings) -> None:
    def keep_layer(payload: LayerPayload) -> None:
        stored = store.put_bytes(payload.data)
        if f"blob:{stored.sha256}" != payload.ref:
            raise Failure(description=f"layer ref {payload.ref} does not match its bytes ({stored.sha256})")

    def read(item: Item) -> Kept | Rejected:
        """One record parsed, its layers stored once it is valid."""
        payload = item.payload
        got = (payload.parse(keep_layer) if isinstance(payload, ParquetRow)
               else read_design_file(payload, fmt=settings.format, on_layer=keep_layer))
        if got.design is None:
            return Rejected(got.reason_code, f"{item.locator}: {got.detail}", value=got.detail)
        return Kept(got.design, count="designs")

    source_entity = entity_id("design_source", source.digest)

    def write(log: ActivityLog, done: list[Done]) -> None:
        _write(log, source, source_entity, done)

    run_items(step, DESIGN_STAGE, _items(source, settings), read, write, batch_size=settings.batch_size)
    with step.batch() as log:  # the source is done: an unchanged copy is not read again
        step.remember_read(log, source.path, source.digest)


def _write(log: ActivityLog, source: _Source, source_entity: str, done: list[Done]) -> None:
    rows, reads, entities, rejected = [], [], [], []
    for d in done:
        locator = d.item.locator
        if isinstance(d.outcome, Rejected):
            reads.append({"locator": locator, "file_sha256": source.digest, "design_id": None,
                          "reason_code": d.outcome.reason_code, "detail": d.outcome.value})
            rejected.append(Entity(d.item.key, "design_record", attributes={"locator": locator}))
            continue
        design = d.outcome.value
        record = design.to_json()
        design_id = design_entity_id(record)
        reads.append({"locator": locator, "file_sha256": source.digest, "design_id": design_id, "reason_code": None,
                      "detail": None})
        entities.append(Entity(design_id, "design", sha256_hex(record.encode()),
                               {"source_design_id": design.design_id, "locator": locator}))
        rows.append({"design_id": design_id, "source_design_id": design.design_id, "base_design_id": design_id,
                     "is_perturbed": False, "source_format": design.source_format,
                     "canvas_width": design.canvas_width, "canvas_height": design.canvas_height,
                     "n_elements": len(design.elements), "record": record})
    log.entities([Entity(source_entity, "design_source", source.digest, {"path": source.name})])
    log.used([source_entity], "design_source")
    log.entities(entities)
    log.generated(e.entity_id for e in entities)
    log.derived((e.entity_id, source_entity, "read_from") for e in entities)
    write_source_designs(log.con, [{**r, "activity_id": log.activity_id} for r in rows],
                         [{**r, "activity_id": log.activity_id} for r in reads])
    log.entities(rejected)
