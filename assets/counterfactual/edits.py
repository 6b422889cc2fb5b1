"""Counterfactual image edits (AesCanvas "Culture-Grounded Counterfactual Sensitivity"): one decisive cue of a
source image changed, stored as a synthetic diagnostic derived from its source.

A source is a pool item, or an image of a ContextCanvas case, read through the view ``context_case_images`` (the
paper's pairs keep a case's scenario and change its cue, so a case's approved edits are released with it). The
edit is made by the configured image-edit model (resources/image_editing.py), or was made elsewhere and is supplied
as a file the spec names (provider ``supplied``, model ``file``, the file by its name relative to the warehouse's
root). Pure logic: assets/counterfactual/logic/edit_pairs.py. Each spec is edited once per model (a supplied file
once per content); a transport failure is recorded and retried by the next run. Every row of the spec and check
sheets is one item of the item loop (assets/core/item_loop.py) with its own outcome. Outputs go to the blob store
and the ``counterfactual_edit`` table only: they never become pool members, so no export of natural images can
contain one.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dagster import AssetExecutionContext, AssetKey, Failure, MaterializeResult, asset
from PIL import Image

from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, run_items
from assets.counterfactual.logic.edit_pairs import (
    EDITED_IMAGE,
    SPEC_COLUMNS,
    SUPPLIED_MODEL,
    SUPPLIED_PROVIDER,
    CheckRowError,
    CheckTransitionError,
    SheetRow,
    SourceRef,
    SpecError,
    check_decision,
    check_rows,
    edit_prompt,
    edit_record,
    planned_edit,
    spec_rows,
    transition,
)
from assets.counterfactual.settings import CounterfactualSettings
from assets.counterfactual.store import edited_spec_keys, record_check, stored_edit, write_edit
from assets.core.logic.normalized_pixels import normalized_png
from assets.core.logic.textfiles import line_locator
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.image_editing import MODEL_PLACEHOLDER, ImageEditorResource
from resources.image_formats import DECODER_ERRORS, DecodeFailure, decode_failure, open_image
from resources.warehouse import WarehouseResource
from warehouse.ids import canonical_json, digest_of, entity_id, sha256_file, sha256_hex
from warehouse.lineage import ActivityLog, Entity

EDIT_STAGE = "counterfactual_edit"
CHECK_STAGE = "counterfactual_check"


@asset(
    metadata=writes("counterfactual_edit", images="output_uri"),
    code_version="2",
    deps=[AssetKey("image_pool"), AssetKey("context_cases")],
    description="Counterfactual edits of pool images or ContextCanvas case images (one decisive cue changed) by the"
    " configured image-edit model or supplied as files, stored as synthetic diagnostics derived from their source,"
    " pending a manual check.",
)
def counterfactual_edits(
    context: AssetExecutionContext,
    warehouse: WarehouseResource,
    blob_store: BlobStoreResource,
    image_editor: ImageEditorResource,
    counterfactual: CounterfactualSettings,
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    params = {"specs": counterfactual.specs, "provider": image_editor.provider, "model": image_editor.model}
    with recorded_step(context, wh, params) as step:
        if not counterfactual.specs:
            step.notes["skipped"] = "no counterfactual.specs configured"
        elif image_editor.model == MODEL_PLACEHOLDER:
            step.notes["no_model"] = ("no image-edit model configured (image_editor.model): the specs were checked and"
                                      " supplied edits read; none was sent to a model")
            _edit(step, store, None, image_editor, counterfactual)
        else:
            _edit(step, store, image_editor.editor(), image_editor, counterfactual)
        _apply_checks(step, counterfactual.checks)
    return step.result(store)


def _sheet(option: str, value: str) -> Path:
    path = Path(value)
    if not path.is_file():
        raise Failure(description=f"counterfactual.{option}: {path} is not a file")
    return path


def _row_items(step: Step, stage: str, kind: str, path: Path, rows: Iterator[SheetRow], content_key) -> Iterator[Item[SheetRow]]:
    """One item per sheet row: a usable row is keyed by ``content_key`` of its cells, a row with a problem by its
    line. A sheet that cannot be read at all (no header, not text) is rejected as an input file."""
    sha = sha256_file(path)
    for row in rows:
        locator = line_locator(path, row.line)
        if row.file_level:
            step.reject_input(stage, kind, path, sha, row.problem[0], f"{path}: {row.problem[1]}")
            return
        if row.problem:
            yield Item(entity_id(f"{kind}_row", sha256_hex(locator.encode())), locator, digest_of(row.problem), row)
        else:
            yield Item(content_key(row.cells), locator, digest_of(dict(row.cells)), row)


@dataclass(frozen=True)
class _Source:
    """The image a spec edits, as stored: its bytes' sha256, its entity, and for a case image the case's entity."""

    sha256: str
    entity: str
    case_entity: str | None = None


def _source(step: Step, store: BlobStore, ref: SourceRef) -> _Source | tuple[str, str]:
    """The stored image ``ref`` names, or (reason code, detail) when there is none. A pool item's is a PNG of its
    normalised pixels, encoded from its original file and stored now (the pool keeps no decoded copy)."""
    with step.batch() as log:
        if ref.pool_item_id is not None:
            found = log.con.execute("SELECT file_sha256 FROM pool_images WHERE pool_item_id = ?",
                                    [ref.pool_item_id]).fetchone()
        else:
            images = log.con.execute("SELECT position, image_sha256, pool_item_id, case_entity_id FROM context_case_images"
                                     " WHERE case_id = ? ORDER BY position", [ref.case_id]).fetchall()
    if ref.pool_item_id is not None:
        if found is None:
            return "unknown_source", f"{ref.pool_item_id} is not a kept pool item"
        return _Source(store.put_bytes(normalized_png(store.get_bytes(found[0]))).sha256, ref.pool_item_id)
    if not images:
        return "unknown_case", f"{ref.case_id} is not a stored ContextCanvas case"
    by_position = {position: rest for position, *rest in images}
    if ref.position not in by_position:
        return ("unknown_case_image", f"case {ref.case_id} has {len(images)} image(s) (positions 0-{len(images) - 1});"
                                      f" there is no image {ref.position}")
    sha, pool_item, case_entity = by_position[ref.position]
    # The image's entity as the case recorded it: its pool item, else the file's bytes.
    return _Source(sha, pool_item or entity_id("file", sha), case_entity)


def _supplied(path: Path) -> tuple[bytes, str] | tuple[str, str]:
    """A supplied edit's bytes and MIME type, or (reason code, what is wrong) when the file is no usable image."""
    if not path.is_file():
        return "edited_image_missing", "file not found"
    data = path.read_bytes()
    try:
        with open_image(data) as image:
            fmt = image.format
            try:
                image.load()
            except DECODER_ERRORS as exc:
                raise decode_failure(fmt, exc, "data") from exc
    except DecodeFailure as failure:
        return "edited_image_unreadable", f"not a readable image ({failure.reason_code}: {failure.detail})"
    return data, Image.MIME.get(fmt, f"image/{fmt.lower()}")


def _edit(step: Step, store, editor, image_editor: ImageEditorResource, counterfactual: CounterfactualSettings) -> None:
    """Each spec row edited once per model (``editor`` None: checked only, unless its edit is supplied as a file); a
    transport failure is retryable."""
    path = _sheet("specs", counterfactual.specs)
    labels = tuple(counterfactual.labels)
    model = (image_editor.provider, image_editor.model)
    with step.batch() as log:
        done = edited_spec_keys(log.con)

    def spec_entity(cells) -> str:
        made_by = [SUPPLIED_PROVIDER, SUPPLIED_MODEL, cells[EDITED_IMAGE]] if cells.get(EDITED_IMAGE) else model
        return entity_id("counterfactual_spec", digest_of([[cells[c] for c in SPEC_COLUMNS], *made_by]))

    def edit(item: Item[SheetRow]) -> Outcome:
        if item.payload.problem:
            return Rejected(item.payload.problem[0], f"{item.locator}: {item.payload.problem[1]}")
        try:
            plan = planned_edit(item.payload.cells, labels)
        except SpecError as exc:
            return Rejected(exc.reason_code, f"{item.locator}: {exc}")
        spec, supplied, name = plan.spec, None, None
        made_by: list[str] = list(model)
        if plan.edited_image is not None:
            name = step.name_of(path.parent / plan.edited_image)
            supplied = _supplied(path.parent / plan.edited_image)
            if isinstance(supplied[0], str):
                return Rejected(supplied[0], f"{item.locator}: {EDITED_IMAGE} {name}: {supplied[1]}")
            # A file replaced by a new edit is a new edit (and a new record), so its content is part of the key.
            made_by = [SUPPLIED_PROVIDER, SUPPLIED_MODEL, name, sha256_hex(supplied[0])]
        key = digest_of([spec.source_id, spec.decisive_cue, spec.instruction, spec.original_label, spec.intended_label,
                         *made_by])
        if key in done:
            return Kept(None, count="already_edited")
        source = _source(step, store, plan.source)
        if isinstance(source, tuple):
            return Rejected(source[0], f"{item.locator}: {source[1]}")
        if supplied is not None:
            output, mime, provider, model_name, provider_model, attempts, latency = (
                supplied[0], supplied[1], SUPPLIED_PROVIDER, SUPPLIED_MODEL, None, 0, 0.0)
        elif editor is None:
            return Kept(None, count="specs_waiting_for_a_model")
        else:
            response = editor.edit(image_editor.request(store.get_bytes(source.sha256), "image/png", edit_prompt(spec),
                                                        counterfactual.seed))
            if not response.ok:
                return Rejected(response.status, f"{item.locator}: {response.error}",
                                retryable=response.status not in ("no_image",))
            output, mime, provider, model_name, provider_model, attempts, latency = (
                response.image, response.mime, image_editor.provider, image_editor.model, response.provider_model,
                response.attempts, response.latency_ms)
        try:
            record = edit_record(spec, source_sha256=source.sha256, output_sha256=sha256_hex(output), output_mime=mime,
                                 provider=provider, model=model_name, provider_model=provider_model,
                                 seed=None if supplied is not None else counterfactual.seed, labels=labels,
                                 supplied_file=name)
        except SpecError as exc:  # an answer that is no edit: the source's own bytes, or not an image type
            return Rejected(exc.reason_code, f"{item.locator}: {exc}")
        stored = store.put_bytes(output)
        row = {**record.as_row(), "spec_key": key, "output_uri": stored.uri, "attempts": attempts, "latency_ms": latency}
        row["history"] = canonical_json(row["history"])
        return Kept((row, source), count="edited")

    def write(log: ActivityLog, done_items: list[Done[SheetRow]]) -> None:
        log.unrejected(EDIT_STAGE, [d.item.key for d in done_items if d.kept])
        for row, source in (d.outcome.value for d in done_items if d.kept and d.outcome.value is not None):
            record_id = row["record_id"]
            attributes = {"synthetic": True, "cue": row["decisive_cue"], "model": row["model"]}
            if row["case_id"] is not None:
                attributes.update(case_id=row["case_id"], image_position=row["image_position"])
            log.entities([Entity(record_id, EDIT_STAGE, row["output_sha256"], attributes)])
            log.generated([record_id])
            log.used([source.entity], "source_image")
            log.derived([(record_id, source.entity, "counterfactual_of")])
            if source.case_entity is not None:
                log.used([source.case_entity], "source_case")
                log.derived([(record_id, source.case_entity, "edit_of_case")])
            if row["supplied_file"] is not None:
                supplied = entity_id("file", row["output_sha256"])
                log.entities([Entity(supplied, "file", row["output_sha256"], {"path": row["supplied_file"]})])
                log.used([supplied], "supplied_edit")
                log.derived([(record_id, supplied, "read_from")])
            write_edit(log.con, {**row, "activity_id": log.activity_id})

    items = _row_items(step, EDIT_STAGE, "counterfactual_specs", path, spec_rows(path), spec_entity)
    run_items(step, EDIT_STAGE, items, edit, write, batch_size=1)


def _apply_checks(step: Step, checks: str | None) -> None:
    """Move edits through their manual check (pending → approved / rejected; approved → rejected) as the check
    sheet says; every decision is kept in the record's history. A row that cannot be applied (malformed, no such
    edit, a move the rules forbid) is that row's rejection; the other rows are applied."""
    if not checks:
        return
    path = _sheet("checks", checks)

    def check(item: Item[SheetRow]) -> Outcome:
        if item.payload.problem:
            return Rejected(item.payload.problem[0], f"{item.locator}: {item.payload.problem[1]}")
        try:
            decision = check_decision(item.payload.line, item.payload.cells)
        except CheckRowError as exc:
            return Rejected(exc.reason_code, f"{item.locator}: {exc}")
        with step.batch() as log:
            record = stored_edit(log.con, decision.record_id)
        if record is None:
            return Rejected("unknown_record", f"{item.locator}: no counterfactual edit {decision.record_id!r}")
        try:
            updated = transition(record, decision.decision, reviewer=decision.reviewer, note=decision.note)
        except CheckTransitionError as exc:
            return Rejected(exc.reason_code, f"{item.locator}: {exc}")
        if updated is record:
            return Kept(None, count="checks_already_applied")
        return Kept(updated, count=f"checked:{updated.manual_check}")

    def write(log: ActivityLog, done: list[Done[SheetRow]]) -> None:
        log.unrejected(CHECK_STAGE, [d.item.key for d in done if d.kept])
        for updated in (d.outcome.value for d in done if d.kept and d.outcome.value is not None):
            record_check(log.con, updated)

    def row_entity(cells) -> str:
        return entity_id("counterfactual_check", digest_of([str(path), dict(cells)]))

    run_items(step, CHECK_STAGE, _row_items(step, CHECK_STAGE, "counterfactual_checks", path, check_rows(path), row_entity),
              check, write, batch_size=1)
