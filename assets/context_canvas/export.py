"""The ContextCanvas files: evaluation records (model input only) apart from the answer key.

``context_canvas_eval.jsonl`` holds, per retained case, exactly what a model is given: image path(s), a labelled
contact sheet for multi-image cases, scenario, proposed assessment, question and options, and the neutral and
evidence descriptions that stand in for the image under the description conditions. ``context_canvas_gold.jsonl``
holds the gold option, its text, the source-grounded rationale, source basis and every image's provenance and
rights, joined on the same id. Probe-model output is in neither (it stays in ``context_case_probe``).
"""

from pathlib import Path

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.context_canvas.review import context_case_review
from assets.context_canvas.settings import ContextSettings
from assets.core.exports import Contents, ExportFile, publish
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.warehouse import WarehouseResource


@asset(
    metadata=writes("export_file", where="dataset = 'context_canvas'"),
    code_version="1",
    deps=[context_case_review],
    description="context_canvas_eval.jsonl (model input only) and context_canvas_gold.jsonl (gold, rationale, source"
    " basis, rights) for the retained cases; probe output never exported.",
)
def context_canvas_export(context: AssetExecutionContext, warehouse: WarehouseResource, context_canvas: ContextSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    out = Path(context_canvas.export_dir)
    files = [
        ExportFile(out / "context_canvas_eval.jsonl", "SELECT * FROM context_canvas_eval_records ORDER BY id", "json"),
        ExportFile(out / "context_canvas_gold.jsonl", "SELECT * FROM context_canvas_gold_records ORDER BY id", "json"),
    ]
    contents = Contents("SELECT c.entity_id FROM context_case c JOIN context_retention r USING (case_id)"
                        " WHERE r.status = 'retained' ORDER BY 1", role="context_case")
    with recorded_step(context, wh, {"export_dir": str(out)}) as step:
        publish(step, "context_canvas", files, contents)
    return step.result()
