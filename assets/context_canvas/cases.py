"""Expert-authored contextual-suitability cases (ContextCanvas, S2.1.3) into the warehouse.

Parsing and validation live in assets/context_canvas/logic/case_records.py. Each case file is read once per content hash, record
by record through the item loop, so an unexpected error on one record (or its images) is that record's
``internal_error`` and the others are read. A case's images are copied into the blob store and linked to the pool
item with the same bytes when the pool holds one (ContextCanvas is drawn from the shared pool); a case whose image
cannot be read is rejected with its locator, like any malformed record. A file that cannot be read at all is kept
as a rejected ``case_source``; the step warns and reads the other files. A probe model's answer is stored apart,
for diagnostics only. Case files are named (in locators, record ids and rows) relative to the warehouse's root.
"""

import itertools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
from dagster import AssetExecutionContext, AssetKey, Failure, MaterializeResult, asset
from PIL import Image, UnidentifiedImageError

from assets.context_canvas.settings import ContextSettings
from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, run_items
from assets.context_canvas.logic.contact_sheet import contact_sheet
from assets.context_canvas.logic.case_records import CaseError, ContextCase, case_from_record, case_records
from assets.context_canvas.store import delete_cases, forget_case_file, write_case_reads, write_cases, write_probes
from assets.core.logic.normalized_pixels import normalized_png
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.warehouse import WarehouseResource
from warehouse.db import Warehouse
from warehouse.ids import digest_of, entity_id, sha256_file, sha256_hex
from warehouse.lineage import ActivityLog, Entity
from warehouse.rekey import located_renames, renamed_path

CASE_STAGE = "context_cases"
REKEY_SCOPE = "context_canvas"
POOL_PREFIX = "pool:"


@asset(
    metadata=writes("context_case", "context_case_image", "context_case_read", "context_contact_sheet", "context_case_probe", images="(SELECT min(ci.image_uri) FROM context_case_image ci WHERE ci.case_id = context_case.case_id)"),
    code_version="1",
    deps=[AssetKey("image_pool")],
    description="Contextual-suitability cases (images, scenario, question, options, gold, rationale, source basis,"
    " rights) from JSON or CSV; images stored and linked to their pool items; every rejected record keeps its reason.",
)
def context_cases(context: AssetExecutionContext, warehouse: WarehouseResource, blob_store: BlobStoreResource,
                  context_canvas: ContextSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    with recorded_step(context, wh, {"cases": [wh.name_of(path) for path in context_canvas.cases]}) as step:
        step.rekey(REKEY_SCOPE, _location_renames)  # a warehouse written before migration 0015, once
        for path in map(Path, context_canvas.cases):
            if not path.is_file():
                raise Failure(description=f"case file not found: {path}")
            sha = sha256_file(path)
            if step.read_before(path, sha):
                step.counts["files_unchanged"] += 1
                continue
            records = case_records(path)
            try:
                first = list(itertools.islice(records, 1))  # a whole-file problem shows before the first record
            except CaseError as exc:
                step.reject_input(CASE_STAGE, "case_source", path, sha, exc.reason_code, str(exc))
                with step.batch() as log:
                    step.remember_read(log, path, sha)
                step.notes.setdefault("unreadable_files", []).append(str(exc))
                context.log.warning(f"{exc}; the file is rejected and the other case files are read")
                continue
            _read_file(step, wh, store, path, sha, itertools.chain(first, records), context_canvas.contact_sheet_height)
    return step.result(store)


def _read_file(step: Step, wh: Warehouse, store: BlobStore, path: Path, sha: str, records, sheet_height: int) -> None:
    source = entity_id("case_source", sha)
    name = step.name_of(path)
    with step.batch() as log:
        log.entities([Entity(source, "case_source", sha, {"path": name})])
        log.used([source], "case_source")
        # A re-read file replaces everything its earlier version stored: a case it no longer holds (or holds in a
        # form now rejected) is gone.
        forget_case_file(log.con, Path(name))
    first_seen: dict[str, str] = {}

    def read(item: Item[Any]) -> Outcome:
        short, record, early = item.payload  # the file's own name in details, as its author knows it
        case = case_from_record(short, record, early, first_seen)
        if not isinstance(case, ContextCase):
            return Rejected(case.reason_code, f"{item.locator}: {case.detail}", value=(case.reason_code, case.detail))
        images = []
        for position, (reference, rights) in enumerate(zip(case.images, case.rights)):
            found = _image(wh, store, path.parent, reference)
            if isinstance(found, str):
                detail = f"image {position + 1} ({reference}): {found}"
                return Rejected("image_unreadable", f"{item.locator}: {detail}", value=("image_unreadable", detail))
            images.append({"case_id": case.case_id, "position": position, "reference": reference, "image_sha256": found[0],
                           "image_uri": found[1], "pool_item_id": found[2], "rights": json.dumps(rights.to_dict(), sort_keys=True)})
        case = replace(case, locator=item.locator)
        return Kept((case, images, _contact_sheet(store, case, images, sheet_height)), count="cases")

    def write(log: ActivityLog, done: list[Done[Any]]) -> None:
        kept = [d.outcome.value for d in done if d.kept]
        cases = [case for case, _, _ in kept]
        images = [image for _, mine, _ in kept for image in mine]
        sheets = [sheet for _, _, sheet in kept if sheet]
        entities = {c.case_id: entity_id("context_case", c.case_key) for c in cases}
        log.entities(Entity(entities[c.case_id], "context_case", c.case_key, {"case_id": c.case_id, "locator": c.locator})
                     for c in cases)
        log.generated(entities.values())
        log.derived((entities[c.case_id], source, "read_from") for c in cases)
        loose = [i for i in images if not i["pool_item_id"]]  # images the pool does not hold: their bytes are the entity
        log.entities(Entity(entity_id("file", i["image_sha256"]), "file", i["image_sha256"], {"reference": i["reference"]})
                     for i in loose)
        log.derived((entities[i["case_id"]], i["pool_item_id"] or entity_id("file", i["image_sha256"]), "shows") for i in images)
        delete_cases(log.con, list(entities))  # a case id read from another file before: this read replaces it
        log.unrejected(CASE_STAGE, [d.item.key for d in done if d.kept])
        write_cases(log.con, [{
            "case_id": c.case_id, "evaluation_id": c.evaluation_id, "entity_id": entities[c.case_id], "case_key": c.case_key,
            "record": json.dumps(_record(c), sort_keys=True, ensure_ascii=False), "n_images": len(c.images),
            "n_options": len(c.options), "gold": c.gold, "locator": c.locator, "activity_id": log.activity_id} for c in cases],
            images, [{**r, "activity_id": log.activity_id} for r in sheets])
        log.entities(Entity(entity_id("contact_sheet", r["sha256"]), "contact_sheet", r["sha256"], {"case_id": r["case_id"]})
                     for r in sheets)
        log.generated(entity_id("contact_sheet", r["sha256"]) for r in sheets)
        log.derived((entity_id("contact_sheet", r["sha256"]), entities[r["case_id"]], "side_by_side_of") for r in sheets)
        write_probes(log.con, [
            {"case_id": c.case_id, "model": c.probe.model, "answer": c.probe.answer, "note": c.probe.note,
             "activity_id": log.activity_id} for c in cases if c.probe is not None])
        rejected = [d for d in done if not d.kept]
        write_case_reads(log.con, [
            {"locator": c.locator, "file_sha256": sha, "case_id": c.case_id, "reason_code": None, "detail": None,
             "activity_id": log.activity_id} for c in cases] + [
            {"locator": d.item.locator, "file_sha256": sha, "case_id": None, "reason_code": d.outcome.value[0],
             "detail": d.outcome.value[1], "activity_id": log.activity_id} for d in rejected])
        log.entities(Entity(d.item.key, "case_record", attributes={"locator": d.item.locator}) for d in rejected)

    items = (Item(_record_id(_where(name, short)), _where(name, short), digest_of([short, record, early]), (short, record, early))
             for short, record, early in records)
    run_items(step, CASE_STAGE, items, read, write)
    with step.batch() as log:
        step.remember_read(log, path, sha)


def _where(name: str, locator: str) -> str:
    """The full locator of a record: the case file's name and the record's place in it (``#row=N`` / ``#record=N``)."""
    return f"{name}#{locator.split('#', 1)[1]}" if "#" in locator else f"{name}#{locator}"


def _record_id(locator: str) -> str:
    return entity_id("case_record", sha256_hex(locator.encode()))


def _location_renames(con: duckdb.DuckDBPyConnection, root: Path) -> dict[str, str]:
    """What this asset's rows written before migration 0015 become (``Step.rekey``): case files by their names,
    and the record ids derived from the locators."""
    locators = [row[0] for row in con.execute("SELECT locator FROM context_case_read UNION SELECT locator FROM context_case")
                .fetchall()]
    files = [row[0] for row in con.execute("SELECT attributes->>'path' FROM entity WHERE kind = 'case_source'").fetchall()]
    return {**{path: renamed_path(path, root) for path in files if path}, **located_renames(locators, root, _record_id)}


def _record(case: ContextCase) -> dict:
    """The validated case as stored (the probe is kept in its own table, never in the record)."""
    return {key: value for key, value in case.content().items() if key != "probe"}


def _image(log_wh: Warehouse, store: BlobStore, base: Path, reference: str) -> tuple[str, str, str | None] | str:
    """(sha256, uri, pool item id) of a case image, or what is wrong with the reference. A pool item's image is a
    PNG of its normalised pixels, encoded from its original file and stored now (the pool keeps no decoded copy)."""
    if reference.startswith(POOL_PREFIX):
        pool_item = reference[len(POOL_PREFIX):]
        found = log_wh.query("SELECT file_sha256 FROM pool_images WHERE pool_item_id = ?", [pool_item])
        if found.empty:
            return f"{pool_item} is not a kept pool item"
        stored = store.put_bytes(normalized_png(store.get_bytes(found.iloc[0, 0])))
        return stored.sha256, stored.uri, pool_item
    path = (base / reference).resolve()
    if not path.is_file():
        return "file not found"
    try:
        with Image.open(path) as image:
            image.load()
    except (UnidentifiedImageError, OSError) as exc:
        return f"not a readable image ({exc})"
    stored = store.put_file(path)
    pool = log_wh.query("SELECT m.pool_item_id FROM record_file f JOIN pool_member m USING (record_id)"
                        " WHERE f.file_sha256 = ? AND m.pool_item_id IS NOT NULL ORDER BY 1 LIMIT 1", [stored.sha256])
    return stored.sha256, stored.uri, None if pool.empty else pool.iloc[0, 0]


def _contact_sheet(store: BlobStore, case: ContextCase, images: list[dict], height: int) -> dict | None:
    """For a multi-image case, its images side by side under "Image 1", "Image 2", ... (for one-image models)."""
    if len(images) < 2:
        return None
    labels = [f"Image {n + 1}" for n in range(len(images))]
    stored = store.put_bytes(contact_sheet([store.get_bytes(i["image_sha256"]) for i in images], labels, height=height))
    return {"case_id": case.case_id, "sha256": stored.sha256, "uri": stored.uri, "labels": labels}
