"""Expert-authored contextual-suitability cases (ContextCanvas, S2.1.3) into the warehouse.

Parsing and validation live in assets/lib/context_cases.py. Each case file is read once per content hash. A
case's images are copied into the blob store and linked to the pool item with the same bytes when the pool holds
one (ContextCanvas is drawn from the shared pool); a case whose image cannot be read is rejected with its locator,
like any malformed record. A probe model's answer is stored apart, for diagnostics only.
"""

import json
from dataclasses import replace
from pathlib import Path

from dagster import AssetExecutionContext, Failure, MaterializeResult, asset
from PIL import Image, UnidentifiedImageError

from assets.context_settings import ContextSettings
from assets.lib.contact_sheet import contact_sheet
from assets.lib.context_cases import CaseError, ContextCase, read_cases
from assets.pool import image_pool
from assets.step import recorded_step
from resources.blob_store import BlobStoreResource
from resources.warehouse import WarehouseResource
from warehouse.db import insert_rows
from warehouse.ids import entity_id, sha256_file, sha256_hex
from warehouse.lineage import Entity

CASE_STAGE = "context_cases"
POOL_PREFIX = "pool:"


@asset(
    group_name="context_canvas",
    code_version="1",
    deps=[image_pool],
    description="Contextual-suitability cases (images, scenario, question, options, gold, rationale, source basis,"
    " rights) from JSON or CSV; images stored and linked to their pool items; every rejected record keeps its reason.",
)
def context_cases(context: AssetExecutionContext, warehouse: WarehouseResource, blob_store: BlobStoreResource,
                  context_canvas: ContextSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    with recorded_step(context, wh, {"cases": context_canvas.cases}) as step:
        unreadable = []
        for path in map(Path, context_canvas.cases):
            if not path.is_file():
                raise Failure(description=f"case file not found: {path}")
            sha = sha256_file(path)
            if step.read_before(path, sha):
                step.counts["files_unchanged"] += 1
                continue
            try:
                reads = list(read_cases(path))
            except CaseError as exc:
                step.reject_input(CASE_STAGE, "case_source", path, sha, exc.reason_code, str(exc))
                unreadable.append(str(exc))
                continue
            source = entity_id("case_source", sha)
            cases, images, rejected = [], [], []
            for read in reads:
                if not isinstance(read, ContextCase):
                    rejected.append((_where(path, read.locator), read.reason_code, read.detail))
                    continue
                read = replace(read, locator=_where(path, read.locator))
                stored, problem = [], None
                for position, (reference, rights) in enumerate(zip(read.images, read.rights)):
                    found = _image(log_wh=wh, store=store, base=path.parent, reference=reference)
                    if isinstance(found, str):
                        problem = f"image {position + 1} ({reference}): {found}"
                        break
                    stored.append({"case_id": read.case_id, "position": position, "reference": reference,
                                   "image_sha256": found[0], "image_uri": found[1], "pool_item_id": found[2],
                                   "rights": json.dumps(rights.to_dict(), sort_keys=True)})
                if problem:
                    rejected.append((read.locator, "image_unreadable", problem))
                    continue
                cases.append(read)
                images.extend(stored)
            with step.batch() as log:
                log.entities([Entity(source, "case_source", sha, {"path": str(path)})])
                log.used([source], "case_source")
                entities = {c.case_id: entity_id("context_case", c.case_key) for c in cases}
                log.entities(Entity(entities[c.case_id], "context_case", c.case_key, {"case_id": c.case_id, "locator": c.locator})
                             for c in cases)
                log.generated(entities.values())
                log.derived((entities[c.case_id], source, "read_from") for c in cases)
                loose = [i for i in images if not i["pool_item_id"]]  # images the pool does not hold: their bytes are the entity
                log.entities(Entity(entity_id("file", i["image_sha256"]), "file", i["image_sha256"], {"reference": i["reference"]})
                             for i in loose)
                log.derived((entities[i["case_id"]], i["pool_item_id"] or entity_id("file", i["image_sha256"]), "shows")
                            for i in images)
                # A re-read file replaces everything its earlier version stored: a case it no longer holds (or holds
                # in a form now rejected) is gone, and a record rejected before but valid now loses its rejection.
                earlier = [r[0] for r in log.con.execute("SELECT case_id FROM context_case WHERE starts_with(locator, ?)",
                                                         [f"{path}#"]).fetchall()]
                ids = sorted({c.case_id for c in cases} | set(earlier))
                for table in ("context_case", "context_case_image", "context_case_probe", "context_contact_sheet"):
                    log.con.execute(f"DELETE FROM {table} WHERE case_id IN (SELECT unnest(?::VARCHAR[]))", [ids])
                log.con.execute("DELETE FROM context_case_read WHERE starts_with(locator, ?)", [f"{path}#"])
                log.unrejected(CASE_STAGE, [_record_id(c.locator) for c in cases])
                insert_rows(log.con, "context_case", [{
                    "case_id": c.case_id, "evaluation_id": c.evaluation_id, "entity_id": entities[c.case_id],
                    "case_key": c.case_key, "record": json.dumps(_record(c), sort_keys=True, ensure_ascii=False),
                    "n_images": len(c.images), "n_options": len(c.options), "gold": c.gold, "locator": c.locator,
                    "activity_id": log.activity_id} for c in cases])
                insert_rows(log.con, "context_case_image", images)
                sheets = _contact_sheets(store, cases, images, context_canvas.contact_sheet_height)
                insert_rows(log.con, "context_contact_sheet", [{**r, "activity_id": log.activity_id} for r in sheets])
                log.entities(Entity(entity_id("contact_sheet", r["sha256"]), "contact_sheet", r["sha256"], {"case_id": r["case_id"]})
                             for r in sheets)
                log.generated(entity_id("contact_sheet", r["sha256"]) for r in sheets)
                log.derived((entity_id("contact_sheet", r["sha256"]), entities[r["case_id"]], "side_by_side_of") for r in sheets)
                insert_rows(log.con, "context_case_probe", [
                    {"case_id": c.case_id, "model": c.probe.model, "answer": c.probe.answer, "note": c.probe.note,
                     "activity_id": log.activity_id} for c in cases if c.probe is not None])
                reads_rows = [{"locator": c.locator, "file_sha256": sha, "case_id": c.case_id, "reason_code": None,
                               "detail": None, "activity_id": log.activity_id} for c in cases]
                reads_rows += [{"locator": loc, "file_sha256": sha, "case_id": None, "reason_code": code, "detail": detail,
                                "activity_id": log.activity_id} for loc, code, detail in rejected]
                insert_rows(log.con, "context_case_read", reads_rows, conflict="replace")
                record_ids = {loc: _record_id(loc) for loc, _, _ in rejected}
                log.entities(Entity(record_ids[loc], "case_record", attributes={"locator": loc}) for loc, _, _ in rejected)
                log.rejected(CASE_STAGE, [(record_ids[loc], code, f"{loc}: {detail}") for loc, code, detail in rejected])
                step.remember_read(log, path, sha)
            step.counts["cases"] += len(cases)
            for _, code, _ in rejected:
                step.counts[f"rejected:{code}"] += 1
        if unreadable:
            raise Failure(description="unreadable case file(s); the others were read: " + " | ".join(unreadable))
    return MaterializeResult(metadata=step.summary())


def _where(path: Path, locator: str) -> str:
    """The full locator of a record: the case file's path and the record's place in it (``#row=N`` / ``#record=N``)."""
    return f"{path}#{locator.split('#', 1)[1]}" if "#" in locator else f"{path}#{locator}"


def _record_id(locator: str) -> str:
    return entity_id("case_record", sha256_hex(locator.encode()))


def _record(case: ContextCase) -> dict:
    """The validated case as stored (the probe is kept in its own table, never in the record)."""
    return {key: value for key, value in case.content().items() if key != "probe"}


def _image(log_wh, store, base: Path, reference: str) -> tuple[str, str, str | None] | str:
    """(sha256, uri, pool item id) of a case image, or what is wrong with the reference."""
    if reference.startswith(POOL_PREFIX):
        pool_item = reference[len(POOL_PREFIX):]
        found = log_wh.query("SELECT i.normalized_sha256, i.normalized_uri FROM pool_images p JOIN image i USING (image_id)"
                             " WHERE p.pool_item_id = ?", [pool_item])
        if found.empty:
            return f"{pool_item} is not a kept pool item"
        return found.iloc[0, 0], found.iloc[0, 1], pool_item
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


def _contact_sheets(store, cases: list[ContextCase], images: list[dict], height: int) -> list[dict]:
    """For each multi-image case, its images side by side under "Image 1", "Image 2", ... (for one-image models)."""
    out = []
    for case in cases:
        mine = sorted((i for i in images if i["case_id"] == case.case_id), key=lambda i: i["position"])
        if len(mine) < 2:
            continue
        labels = [f"Image {n + 1}" for n in range(len(mine))]
        stored = store.put_bytes(contact_sheet([store.get_bytes(i["image_sha256"]) for i in mine], labels, height=height))
        out.append({"case_id": case.case_id, "sha256": stored.sha256, "uri": stored.uri, "labels": labels})
    return out
