"""Counterfactual image edits (AesCanvas "Culture-Grounded Counterfactual Sensitivity"): one decisive cue of a
pool image changed by an image-edit model, stored as a synthetic diagnostic derived from its source.

Pure logic: assets/lib/counterfactual.py; the edit models: resources/image_editing.py. Each spec is edited
once per model; a transport failure is recorded and retried by the next run. Outputs go to the blob store
and the ``counterfactual_edit`` table only: they never become pool members, so no export of natural
images can contain one.
"""

import json
from pathlib import Path
from typing import Optional

from dagster import AssetExecutionContext, ConfigurableResource, Failure, MaterializeResult, asset
from pydantic import Field

from assets.lib.counterfactual import (
    DEFAULT_LABELS,
    CheckEvent,
    CheckSheetError,
    CheckTransitionError,
    CounterfactualRecord,
    SpecSheetError,
    edit_prompt,
    edit_record,
    parse_checks,
    parse_specs,
    transition,
)
from assets.lib.sheets import read_sheet_file
from assets.pool import image_pool
from assets.step import Step, recorded_step
from resources.blob_store import BlobStoreResource
from resources.image_editing import MODEL_PLACEHOLDER, ImageEditorResource
from resources.warehouse import WarehouseResource
from warehouse.db import insert_rows
from warehouse.ids import canonical_json, digest_of
from warehouse.lineage import Entity

EDIT_STAGE = "counterfactual_edit"


class CounterfactualSettings(ConfigurableResource):
    """Which edits to make: a CSV of specs (source_id = a pool item id, decisive_cue, instruction,
    original_label, intended_label)."""

    specs: Optional[str] = Field(default=None, description="CSV of edit specs; None: no edits")
    checks: Optional[str] = Field(default=None, description="CSV of manual-check decisions (record_id, decision, reviewer, note)")
    labels: list[str] = Field(default_factory=lambda: list(DEFAULT_LABELS), description="Allowed labels")
    seed: Optional[int] = Field(default=None, description="Sent to models that take one")


@asset(
    group_name="counterfactual",
    code_version="1",
    deps=[image_pool],
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
            _apply_checks(step, counterfactual.checks)
            return MaterializeResult(metadata=step.summary())
        path = Path(counterfactual.specs)
        try:
            specs = read_sheet_file(path, lambda stream, name: parse_specs(stream, name, tuple(counterfactual.labels)),
                                    SpecSheetError)
        except (OSError, SpecSheetError) as exc:
            raise Failure(description=f"counterfactual specs: {exc}") from exc
        if image_editor.model == MODEL_PLACEHOLDER:
            step.notes["skipped"] = f"{len(specs)} spec(s) read; no image-edit model configured (image_editor.model)"
            _apply_checks(step, counterfactual.checks)
            return MaterializeResult(metadata=step.summary())
        editor = image_editor.editor()
        for spec in specs:
            key = digest_of([spec.source_id, spec.decisive_cue, spec.instruction, spec.original_label, spec.intended_label,
                             image_editor.provider, image_editor.model])
            with step.batch() as log:
                done = log.con.execute("SELECT 1 FROM counterfactual_edit WHERE spec_key = ?", [key]).fetchone()
                source = log.con.execute(
                    "SELECT i.normalized_sha256 FROM pool_images p JOIN image i USING (image_id) WHERE p.pool_item_id = ?",
                    [spec.source_id]).fetchone()
            if done:
                step.counts["already_edited"] += 1
                continue
            if source is None:
                with step.batch() as log:
                    log.rejected(EDIT_STAGE, [(key, "unknown_source", f"{spec.source_id} is not a kept pool item")])
                step.counts["rejected:unknown_source"] += 1
                continue
            response = editor.edit(image_editor.request(store.get_bytes(source[0]), "image/png", edit_prompt(spec),
                                                        counterfactual.seed))
            if not response.ok:
                with step.batch() as log:
                    log.rejected(EDIT_STAGE, [(key, response.status, response.error)],
                                 retryable=response.status not in ("no_image",))
                step.counts[f"failed:{response.status}"] += 1
                continue
            stored = store.put_bytes(response.image)
            record = edit_record(spec, source_sha256=source[0], output_sha256=stored.sha256, output_mime=response.mime,
                                 provider=image_editor.provider, model=image_editor.model,
                                 provider_model=response.provider_model, seed=counterfactual.seed,
                                 labels=tuple(counterfactual.labels))
            row = record.as_row()
            row["history"] = canonical_json(row["history"])
            with step.batch() as log:
                log.entities([Entity(record.record_id, EDIT_STAGE, stored.sha256,
                                     {"synthetic": True, "cue": spec.decisive_cue, "model": image_editor.model})])
                log.generated([record.record_id])
                log.used([spec.source_id], "source_image")
                log.derived([(record.record_id, spec.source_id, "counterfactual_of")])
                log.unrejected(EDIT_STAGE, [key])
                insert_rows(log.con, "counterfactual_edit", [{**row, "spec_key": key, "output_uri": stored.uri,
                                                              "attempts": response.attempts, "latency_ms": response.latency_ms,
                                                              "activity_id": log.activity_id}])
            step.counts["edited"] += 1
        _apply_checks(step, counterfactual.checks)
    return MaterializeResult(metadata=step.summary())


def _apply_checks(step: Step, checks: str | None) -> None:
    """Move edits through their manual check (pending → approved / rejected; approved → rejected) as the check
    sheet says; every decision is kept in the record's history. Bad rows fail the run, naming them, after the
    valid decisions are stored."""
    if not checks:
        return
    path = Path(checks)
    try:
        decisions = read_sheet_file(path, parse_checks, CheckSheetError)
    except (OSError, CheckSheetError) as exc:
        raise Failure(description=f"counterfactual checks: {exc}") from exc
    problems = []
    for decision in decisions:
        with step.batch() as log:
            row = log.con.execute("SELECT * FROM counterfactual_edit WHERE record_id = ?", [decision.record_id]).fetchdf()
            if row.empty:
                problems.append(f"row {decision.row}: no counterfactual edit {decision.record_id!r}")
                continue
            record = _record(row.iloc[0].to_dict())
            try:
                updated = transition(record, decision.decision, reviewer=decision.reviewer, note=decision.note)
            except CheckTransitionError as exc:
                problems.append(f"row {decision.row}: {exc}")
                continue
            if updated is record:
                continue
            log.con.execute(
                "UPDATE counterfactual_edit SET manual_check = ?, checked_by = ?, check_note = ?, history = ? WHERE record_id = ?",
                [updated.manual_check, updated.checked_by, updated.check_note,
                 canonical_json([vars(e) for e in updated.history]), updated.record_id])
            step.counts[f"checked:{updated.manual_check}"] += 1
    if problems:
        raise Failure(description=f"counterfactual check sheet {path.name}: " + "; ".join(problems))


def _record(row: dict) -> CounterfactualRecord:
    fields = {name: row[name] for name in CounterfactualRecord.__dataclass_fields__ if name in row and name not in ("synthetic", "kind", "history")}
    fields["seed"] = None if fields.get("seed") is None or fields["seed"] != fields["seed"] else int(fields["seed"])
    return CounterfactualRecord(**fields, history=tuple(CheckEvent(**e) for e in json.loads(row["history"])))
