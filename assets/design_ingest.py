"""Crello-format graphic designs into the warehouse (pure parsing: assets/lib/design_records.py).

Each source file is read once per content hash; every record becomes a design (layers in the blob store,
referenced as ``blob:<sha256>``) or a rejection with its locator and reason. Writes are batched and keyed
by content, so a crash mid-file re-reads that file without duplicating a row.
"""

from collections.abc import Iterator
from pathlib import Path

from dagster import AssetExecutionContext, Failure, MaterializeResult, asset

from assets.design_settings import DesignSettings
from assets.lib.design_records import DesignRead, LayerPayload, read_design_folder, read_design_parquet
from assets.step import Step, recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.warehouse import WarehouseResource
from warehouse.db import insert_rows
from warehouse.ids import entity_id, sha256_file, sha256_hex
from warehouse.lineage import Entity

DESIGN_STAGE = "design_records"


def design_entity_id(design_json: str) -> str:
    return entity_id("design", sha256_hex(design_json.encode("utf-8")))


def _sources(settings: DesignSettings) -> Iterator[tuple[Path, str, list[Path]]]:
    """(source, kind, files whose hashes decide whether it is read again)."""
    for folder in map(Path, settings.folders):
        if not folder.is_dir():
            raise Failure(description=f"design folder not found: {folder}")
        yield folder, "folder", sorted(folder.glob("*.json"))
    for file in map(Path, settings.parquet):
        if not file.is_file():
            raise Failure(description=f"design Parquet file not found: {file}")
        yield file, "parquet", [file]


@asset(
    group_name="design_aesthetics",
    code_version="1",
    description="Crello v4/v5 records (JSON folders or Parquet exports) as canonical designs with their layers in"
    " the blob store; every rejected record keeps its locator and reason.",
)
def design_records(
    context: AssetExecutionContext, warehouse: WarehouseResource, blob_store: BlobStoreResource, designs: DesignSettings
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    params = {"folders": designs.folders, "parquet": designs.parquet, "format": designs.format}
    with recorded_step(context, wh, params) as step:
        for source, kind, files in _sources(designs):
            digest = sha256_hex("\n".join(f"{f.name}:{sha256_file(f)}" for f in files).encode())
            if step.read_before(source, digest):
                step.counts["sources_unchanged"] += 1
                continue
            _read_source(step, store, source, kind, digest, designs)
    return MaterializeResult(metadata=step.summary())


def _read_source(step: Step, store: BlobStore, source: Path, kind: str, digest: str, settings: DesignSettings) -> None:
    def keep_layer(payload: LayerPayload) -> None:
        stored = store.put_bytes(payload.data)
        if f"blob:{stored.sha256}" != payload.ref:
            raise Failure(description=f"layer ref {payload.ref} does not match its bytes ({stored.sha256})")

    reads = (read_design_folder(source, fmt=settings.format, on_layer=keep_layer) if kind == "folder"
             else read_design_parquet(source, fmt=settings.format, on_layer=keep_layer))
    source_entity = entity_id("design_source", digest)
    batch: list[DesignRead] = []
    for item in reads:
        batch.append(item)
        if len(batch) >= settings.batch_size:
            _write(step, source, source_entity, digest, batch)
            batch = []
    _write(step, source, source_entity, digest, batch)
    with step.batch() as log:  # the source is done: an unchanged copy is not read again
        step.remember_read(log, source, digest)


def _write(step: Step, source: Path, source_entity: str, digest: str, batch: list[DesignRead]) -> None:
    if not batch:
        return
    rows, reads, entities, rejections = [], [], [], []
    for item in batch:
        locator = f"{source}/{item.source}" if source.is_dir() else f"{source.parent}/{item.source}"
        if item.design is None:
            reads.append({"locator": locator, "file_sha256": digest, "design_id": None, "reason_code": item.reason_code,
                          "detail": item.detail})
            rejections.append((entity_id("design_record", sha256_hex(locator.encode())), item.reason_code, f"{locator}: {item.detail}"))
            continue
        record = item.design.to_json()
        design_id = design_entity_id(record)
        reads.append({"locator": locator, "file_sha256": digest, "design_id": design_id, "reason_code": None, "detail": None})
        entities.append(Entity(design_id, "design", sha256_hex(record.encode()),
                               {"source_design_id": item.design.design_id, "locator": locator}))
        rows.append({"design_id": design_id, "source_design_id": item.design.design_id, "base_design_id": design_id,
                     "is_perturbed": False, "source_format": item.design.source_format,
                     "canvas_width": item.design.canvas_width, "canvas_height": item.design.canvas_height,
                     "n_elements": len(item.design.elements), "record": record})
    with step.batch() as log:
        log.entities([Entity(source_entity, "design_source", digest, {"path": str(source)})])
        log.used([source_entity], "design_source")
        log.entities(entities)
        log.generated(e.entity_id for e in entities)
        log.derived((e.entity_id, source_entity, "read_from") for e in entities)
        insert_rows(log.con, "design", [{**r, "activity_id": log.activity_id} for r in rows])
        insert_rows(log.con, "design_source_read", [{**r, "activity_id": log.activity_id} for r in reads], conflict="replace")
        log.entities(Entity(e, "design_record", attributes={"locator": d.split(": ", 1)[0]}) for e, _, d in rejections)
        log.rejected(DESIGN_STAGE, rejections)
    step.counts["designs"] += len(rows)
    for _, code, _ in rejections:
        step.counts[f"rejected:{code}"] += 1
