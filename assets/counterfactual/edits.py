"""Counterfactual image edits (AesCanvas "Culture-Grounded Counterfactual Sensitivity"): one decisive cue of a
pool image changed by an image-edit model, stored as a synthetic diagnostic derived from its source.

Pure logic: assets/counterfactual/logic/edit_pairs.py; the edit models: resources/image_editing.py. Each spec is edited
once per model; a transport failure is recorded and retried by the next run. Every row of the spec and check
sheets is one item of the item loop (assets/core/item_loop.py) with its own outcome. Outputs go to the blob store
and the ``counterfactual_edit`` table only: they never become pool members, so no export of natural
images can contain one.
"""

from collections.abc import Iterator
from pathlib import Path

from dagster import AssetExecutionContext, AssetKey, Failure, MaterializeResult, asset

from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, run_items
from assets.counterfactual.logic.edit_pairs import (
    SPEC_COLUMNS,
    CheckRowError,
    CheckTransitionError,
    SheetRow,
    SpecError,
    check_decision,
    check_rows,
    edit_prompt,
    edit_record,
    spec_of_row,
    spec_rows,
    transition,
)
from assets.counterfactual.settings import CounterfactualSettings
from assets.counterfactual.store import edited_spec_keys, record_check, stored_edit, write_edit
from assets.core.logic.textfiles import line_locator
from assets.core.step import Step, recorded_step
from resources.blob_store import BlobStoreResource
from resources.image_editing import MODEL_PLACEHOLDER, ImageEditorResource
from resources.warehouse import WarehouseResource
from warehouse.ids import canonical_json, digest_of, entity_id, sha256_file, sha256_hex
from warehouse.lineage import ActivityLog, Entity

EDIT_STAGE = "counterfactual_edit"
CHECK_STAGE = "counterfactual_check"


@asset(
    code_version="1",
    deps=[AssetKey("image_pool")],
    description="Counterfactual edits of pool images (one decisive cue changed) by the configured image-edit model,"
    " stored as synthetic diagnostics derived from their source, pending a manual check.",
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
            step.notes["skipped"] = "no image-edit model configured (image_editor.model); the specs were checked, none edited"
            _edit(step, store, None, image_editor, counterfactual)
        else:
            _edit(step, store, image_editor.editor(), image_editor, counterfactual)
        _apply_checks(step, counterfactual.checks)
    return MaterializeResult(metadata=step.summary())


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


def _edit(step: Step, store, editor, image_editor: ImageEditorResource, counterfactual: CounterfactualSettings) -> None:
    """Each spec row edited once per model (``editor`` None: checked only); a transport failure is retryable."""
    path = _sheet("specs", counterfactual.specs)
    labels = tuple(counterfactual.labels)
    model = (image_editor.provider, image_editor.model)
    with step.batch() as log:
        done = edited_spec_keys(log.con)

    def spec_entity(cells) -> str:
        return entity_id("counterfactual_spec", digest_of([[cells[c] for c in SPEC_COLUMNS], *model]))

    def edit(item: Item[SheetRow]) -> Outcome:
        if item.payload.problem:
            return Rejected(item.payload.problem[0], f"{item.locator}: {item.payload.problem[1]}")
        try:
            spec = spec_of_row(item.payload.cells, labels)
        except SpecError as exc:
            return Rejected(exc.reason_code, f"{item.locator}: {exc}")
        key = digest_of([spec.source_id, spec.decisive_cue, spec.instruction, spec.original_label, spec.intended_label, *model])
        if key in done:
            return Kept(None, count="already_edited")
        if editor is None:
            return Kept(None, count="specs_waiting_for_a_model")
        with step.batch() as log:
            source = log.con.execute(
                "SELECT i.normalized_sha256 FROM pool_images p JOIN image i USING (image_id) WHERE p.pool_item_id = ?",
                [spec.source_id]).fetchone()
        if source is None:
            return Rejected("unknown_source", f"{item.locator}: {spec.source_id} is not a kept pool item")
        response = editor.edit(image_editor.request(store.get_bytes(source[0]), "image/png", edit_prompt(spec),
                                                    counterfactual.seed))
        if not response.ok:
            return Rejected(response.status, f"{item.locator}: {response.error}", retryable=response.status not in ("no_image",))
        stored = store.put_bytes(response.image)
        record = edit_record(spec, source_sha256=source[0], output_sha256=stored.sha256, output_mime=response.mime,
                             provider=image_editor.provider, model=image_editor.model,
                             provider_model=response.provider_model, seed=counterfactual.seed, labels=labels)
        row = {**record.as_row(), "spec_key": key, "output_uri": stored.uri, "attempts": response.attempts,
               "latency_ms": response.latency_ms}
        row["history"] = canonical_json(row["history"])
        return Kept(row, count="edited")

    def write(log: ActivityLog, done_items: list[Done[SheetRow]]) -> None:
        log.unrejected(EDIT_STAGE, [d.item.key for d in done_items if d.kept])
        for row in (d.outcome.value for d in done_items if d.kept and d.outcome.value is not None):
            log.entities([Entity(row["record_id"], EDIT_STAGE, row["output_sha256"],
                                 {"synthetic": True, "cue": row["decisive_cue"], "model": row["model"]})])
            log.generated([row["record_id"]])
            log.used([row["source_id"]], "source_image")
            log.derived([(row["record_id"], row["source_id"], "counterfactual_of")])
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
