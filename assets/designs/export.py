"""The AesEval-style benchmark and training files, from the documented view ``design_question_records``.

Each split is written as JSON lines and as Parquet: the rows and columns are the same, and every column has one
type in every row (views 050_design_aesthetics.sql). Parquet carries those types with it, so a column that holds
no value in a small run (no reasoning in the benchmark) still reads as its declared type; a JSON reader given
the Parquet file's schema reads the JSON lines to the same table. A split with no questions gets no files.
"""

from pathlib import Path

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.designs.logic.splits import SPLITS
from assets.designs.questions import design_questions
from assets.designs.reasoning import design_reasoning_paths
from assets.designs.settings import DesignSettings
from assets.core.exports import Contents, ExportFile, publish
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.warehouse import WarehouseResource

FILE_FORMATS = (("jsonl", "json"), ("parquet", "parquet"))  # file suffix, DuckDB COPY format


def _split_query(split: str) -> str:
    return f"SELECT * FROM design_question_records WHERE split = '{split}' ORDER BY design_id, indicator, format, question_id"


def aeseval_files(out: Path) -> list[ExportFile]:
    """Every AesEval file: each split in each format, each derived from the designs its questions ask about."""
    designs_in = "SELECT DISTINCT design_id FROM design_question_records WHERE split = '{split}' ORDER BY 1"
    return [ExportFile(out / f"aeseval_{split}.{suffix}", _split_query(split), copy_format, designs_in.format(split=split))
            for split in SPLITS for suffix, copy_format in FILE_FORMATS]


@asset(
    metadata=writes("export_file", where="dataset = 'aeseval'"),
    code_version="2",
    deps=[design_questions, design_reasoning_paths],
    description="aeseval_benchmark.{jsonl,parquet} and aeseval_train.{jsonl,parquet}: one question per record (render,"
    " indicator, format, question, options, answer, the design's metadata JSON, provenance; reasoning paths for"
    " training); natural designs only; a split without questions is not written.",
)
def aeseval_export(context: AssetExecutionContext, warehouse: WarehouseResource, designs: DesignSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    out = Path(designs.export_dir)
    contents = Contents("SELECT DISTINCT design_id FROM design_question_records ORDER BY 1", role="design",
                        fingerprint_query="SELECT count(*), sum(hash(question_id, image_sha256, answer, split, metadata,"
                        " reasoning)) FROM design_question_records")
    with recorded_step(context, wh, {"export_dir": str(out)}) as step:
        publish(step, "aeseval", aeseval_files(out), contents)
    return step.result()
