"""The AesEval-style benchmark and training files, from the documented view ``design_question_records``."""

from pathlib import Path

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.designs.questions import BENCHMARK, TRAIN, design_questions
from assets.designs.reasoning import design_reasoning_paths
from assets.designs.settings import DesignSettings
from assets.core.exports import Contents, ExportFile, publish
from assets.core.step import recorded_step
from resources.warehouse import WarehouseResource


def _split_query(split: str) -> str:
    return f"SELECT * FROM design_question_records WHERE split = '{split}' ORDER BY design_id, indicator, format"


@asset(
    code_version="1",
    deps=[design_questions, design_reasoning_paths],
    description="aeseval_benchmark.{jsonl,parquet} and aeseval_train.jsonl: one question per record (render path,"
    " indicator, format, prompt, choices, answer, provenance); natural designs only.",
)
def aeseval_export(context: AssetExecutionContext, warehouse: WarehouseResource, designs: DesignSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    out = Path(designs.export_dir)
    designs_in = "SELECT DISTINCT design_id FROM design_question_records WHERE split = '{split}' ORDER BY 1"
    files = [
        ExportFile(out / "aeseval_benchmark.jsonl", _split_query(BENCHMARK), "json", designs_in.format(split=BENCHMARK)),
        ExportFile(out / "aeseval_benchmark.parquet", _split_query(BENCHMARK), "parquet", designs_in.format(split=BENCHMARK)),
        ExportFile(out / "aeseval_train.jsonl", _split_query(TRAIN), "json", designs_in.format(split=TRAIN)),
    ]
    contents = Contents("SELECT DISTINCT design_id FROM design_question_records ORDER BY 1", role="design",
                        fingerprint_query="SELECT count(*), sum(hash(id, image_sha256, answer, split, reasoning))"
                        " FROM design_question_records")
    with recorded_step(context, wh, {"export_dir": str(out)}) as step:
        publish(step, "aeseval", files, contents)
    return MaterializeResult(metadata=step.summary())
