"""Text integrity per illustration (TangPoetryBench appendix E): an offline OCR pass flags machine-readable
characters (the poem's own text leaking in, or other characters), and people's adjudication sheets override it.

The final label is stored with its source (``ocr`` or ``adjudicated``). OCR results are keyed by image bytes
and engine settings, so a re-run reads no image twice; each image is one item of the item loop, so an unexpected
error on one image is its ``internal_error`` and the others are read; adjudication sheets are read whole or not at all, and a
malformed one fails the run naming its rows after the OCR results are stored.
"""

import json
from collections import defaultdict
from pathlib import Path

from dagster import AssetExecutionContext, Failure, MaterializeResult, asset

from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, run_items
from assets.core.logic.sheets import SheetError, read_sheet_file
from assets.poetry.logic.text_labels import TextAdjudicationSheetError, TextFinding, classify, final_label, parse_adjudications
from assets.poetry.illustrations import poem_illustrations
from assets.poetry.settings import PoetrySettings
from assets.poetry.store import replace_text_labels, write_ocr
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.blob_store import BlobStoreResource
from resources.ocr import OcrError, OcrResource
from resources.warehouse import WarehouseResource
from warehouse.ids import canonical_json, digest_of, entity_id, sha256_file
from warehouse.lineage import Entity

TEXT_STAGE = "poem_text_integrity"


def _engine_key(ocr: OcrResource, engine) -> str:
    """What decides an OCR reading: the engine, its version and model files, and the settings; a change re-reads."""
    return canonical_json({"engine": engine.name, "version": engine.engine_version, "models": list(engine.model_ids),
                           "settings": ocr.model_dump()})


@asset(
    metadata=writes("poem_text_label", "poem_ocr", "poem_text_adjudication"),
    code_version="1",
    deps=[poem_illustrations],
    description="Offline OCR of every illustration (leaked poem text or other recognisable characters), overridden by"
    " adjudication sheets; the final text-integrity label per image with its source.",
)
def poem_text_integrity(
    context: AssetExecutionContext,
    warehouse: WarehouseResource,
    blob_store: BlobStoreResource,
    ocr: OcrResource,
    poetry: PoetrySettings,
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    with recorded_step(context, wh, {"ocr": ocr.model_dump(), "adjudication": poetry.adjudication}) as step:
        engine = ocr.engine()
        engine_key = _engine_key(ocr, engine)
        with step.batch() as log:
            pending = log.con.execute(
                "SELECT i.item_id, i.image_sha256, i.entity_id, p.title, p.author, p.text, coalesce(p.translation, '')"
                " FROM poem_illustration i JOIN poem p USING (poem_id)"
                " WHERE NOT EXISTS (SELECT 1 FROM poem_ocr o WHERE o.item_id = i.item_id AND o.image_sha256 = i.image_sha256"
                "   AND o.engine = ?) ORDER BY i.item_id", [engine_key]).fetchall()

        def read(item: Item[tuple]) -> Outcome:
            """One image read once; its finding classified against the poem of every item that shows it."""
            sha, shown = item.payload
            try:
                result = engine.read(store.get_bytes(sha))
            except OcrError as exc:
                return Rejected(exc.reason_code, f"{item.locator}: {exc}")
            lines = json.dumps([{"text": line.text, "score": line.score, "box": line.box} for line in result.lines],
                               ensure_ascii=False)
            rows = []
            for item_id, *texts in shown:
                finding = classify(result.lines, texts)
                rows.append({"item_id": item_id, "image_sha256": sha, "engine": engine_key, "lines": lines,
                             "issue": finding.issue, "label": finding.label, "detail": finding.detail})
            return Kept(rows, count="images_read")

        def write(log, done: list[Done[tuple]]) -> None:
            rows = [row for d in done if d.kept for row in d.outcome.value]
            write_ocr(log.con, [{**r, "activity_id": log.activity_id} for r in rows])
            for r in rows:
                step.counts[f"ocr:{r['issue']}"] += 1

        by_image: dict[tuple[str, str], list[tuple]] = defaultdict(list)
        for item_id, sha, entity, *texts in pending:
            by_image[(sha, entity)].append((item_id, *texts))
        # One item per image to read (the illustration's entity is what a failed reading rejects).
        images = (Item(entity, ", ".join(i[0] for i in shown), digest_of([sha, engine_key]), (sha, shown))
                  for (sha, entity), shown in by_image.items())
        run_items(step, TEXT_STAGE, images, read, write, batch_size=poetry.batch_size)
        _label(step, poetry, engine_key)
    return step.result()


def _label(step, poetry: PoetrySettings, engine_key: str) -> None:
    """Final labels from the OCR findings and every adjudication sheet (re-read each run: they are small)."""
    with step.batch() as log:
        items = log.con.execute("SELECT i.item_id, i.entity_id, o.issue, o.label, o.detail FROM poem_illustration i"
                                " LEFT JOIN poem_ocr o ON o.item_id = i.item_id AND o.image_sha256 = i.image_sha256"
                                " AND o.engine = ? ORDER BY i.item_id", [engine_key]).fetchall()
    known = {i[0] for i in items}
    adjudications, problems, rejected = defaultdict(list), [], []
    rows = []
    for path in map(Path, poetry.adjudication):
        if not path.is_file():
            problems.append(f"{path}: not found")
            continue
        try:
            parsed = read_sheet_file(path, lambda stream, name: parse_adjudications(stream, name, known),
                                     TextAdjudicationSheetError)
        except SheetError as exc:
            problems.append(str(exc))
            rejected.append((entity_id("adjudication_sheet", sha256_file(path)), str(path), exc))
            continue
        for a in parsed:
            adjudications[a.item_id].append(a)
            rows.append({"sheet": str(path), "row_number": a.row, "item_id": a.item_id, "reviewer": a.reviewer,
                         "text_issue": a.text_issue, "issue": a.issue, "note": a.note})
    labels = []
    for item_id, _, issue, label, detail in items:
        finding = None if issue is None else TextFinding(label, issue, detail or "", "")
        final = final_label(finding, adjudications.get(item_id, []))
        if final is None:
            continue
        labels.append({"item_id": item_id, "label": final.label, "issue": final.issue, "source": final.source,
                       "detail": final.detail})
        step.counts[f"label:{final.source}:{'ok' if final.label == 1.0 else 'issue'}"] += 1
    with step.batch() as log:
        replace_text_labels(log.con, [{**r, "activity_id": log.activity_id} for r in rows],
                            [{**r, "activity_id": log.activity_id} for r in labels])
        log.entities(Entity(sheet, "adjudication_sheet", sheet.split(":", 1)[1], {"path": path}) for sheet, path, _ in rejected)
        log.rejected(TEXT_STAGE, [(sheet, exc.reason_code, str(exc)) for sheet, _, exc in rejected])
    if problems:
        raise Failure(description="text adjudication: " + " | ".join(problems))
