"""The CritiqueCanvas files: full records with provenance, and the compact conversation form per split.

Rows come from the documented view ``critique_canvas_records`` (verifier-accepted pairs of complete,
split groups, minus those the human audit rejected), so what SQL users see is what the files hold.
"""

from pathlib import Path

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.critique_canvas.audit import critique_audit_report
from assets.critique_canvas.settings import CritiqueSettings
from assets.critique_canvas.splits import critique_splits
from assets.core.exports import Contents, ExportFile, publish
from assets.critique_canvas.logic.group_split import EVAL, TRAIN
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.warehouse import WarehouseResource

RECORDS = "SELECT * FROM critique_canvas_records ORDER BY split, conversation_group, turn"


def compact_query(split: str) -> str:
    """One human–assistant exchange per record, as LLaVA-style trainers read it; metadata stays out of model input."""
    return (
        "SELECT id, image, llava_conversation(instruction, response) AS conversations"
        f" FROM critique_canvas_records WHERE split = '{split}' ORDER BY conversation_group, turn"
    )


def critique_files(out_dir: Path) -> list[ExportFile]:
    groups = "SELECT DISTINCT conversation_group FROM critique_canvas_records WHERE split = '{split}' ORDER BY 1"
    return [
        ExportFile(out_dir / "critique_canvas.parquet", RECORDS, "parquet"),
        ExportFile(out_dir / "critique_canvas.jsonl", RECORDS, "json"),
        *(
            ExportFile(out_dir / f"critique_canvas_{split}.conversations.jsonl", compact_query(split), "json",
                       contains_query=groups.format(split=split))
            for split in (TRAIN, EVAL)
        ),
    ]


@asset(
    metadata=writes("export_file", where="dataset = 'critique_canvas'"),
    code_version="1",
    deps=[critique_splits, critique_audit_report],
    description="CritiqueCanvas as Parquet and JSONL (id, image, domain, selected dimensions, instruction, response,"
    " conversation group, split, provenance) and the compact {id, image, conversations} form per split.",
)
def critique_canvas_export(context: AssetExecutionContext, warehouse: WarehouseResource, critique: CritiqueSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    out_dir = Path(critique.export_dir)
    contents = Contents(
        "SELECT DISTINCT conversation_group FROM critique_canvas_records ORDER BY 1",
        role="critique_group",
        relation="contains_pairs_of",
        fingerprint_query="SELECT count(*), sum(hash(id, split, image, image_sha256, provenance)) FROM critique_canvas_records",
    )
    with recorded_step(context, wh, {"export_dir": str(out_dir)}) as step:
        publish(step, "critique_canvas", critique_files(out_dir), contents)
    return step.result()
