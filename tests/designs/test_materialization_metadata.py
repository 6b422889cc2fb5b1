"""What the design assets show in the Dagster UI, through a real run on the generated Crello sample: the export's
files as paths, the renders as a thumbnail sheet, the data version unchanged by a run with nothing to do."""

from pathlib import Path

from dagster import AssetKey, DagsterInstance, PathMetadataValue

from pipelines.config import load_config
from pipelines.definitions import build_definitions
from tests.support.pool_harness import write_config

ASSETS = ["design_records", "perturbed_designs", "design_renders", "design_review_sheet", "design_labels",
          "design_splits", "design_questions", "aeseval_export"]


def _materializations(config: Path) -> dict:
    job = build_definitions(load_config(config)).resolve_job_def("design_aesthetics_job")
    result = job.execute_in_process(instance=DagsterInstance.ephemeral(), raise_on_error=False,
                                    asset_selection=[AssetKey(a) for a in ASSETS])
    assert result.success, [e.message for e in result.all_events if e.is_failure]
    return {e.asset_key.to_user_string(): e.event_specific_data.materialization
            for e in result.get_asset_materialization_events()}


def test_export_files_are_paths_and_renders_have_thumbnails(tmp_path, fixture_dir):
    source, _ = fixture_dir
    config = write_config(tmp_path, {}, designs={"folders": [str(source / "v5")], "benchmark_fraction": 0.5,
                                                 "benchmark_labels": "labeller",
                                                 "perturb": {"seed": 2, "variants_per_design": 1}})
    first = _materializations(config)
    export = first["aeseval_export"].metadata
    files = {k: v for k, v in export.items() if isinstance(v, PathMetadataValue)}
    assert {"aeseval_benchmark.jsonl", "aeseval_train.jsonl"} <= set(files)
    assert all(Path(v.path).is_file() for v in files.values())
    assert export["dagster/row_count"].value == len(files)  # its export_file rows, one per file written
    renders = first["design_renders"].metadata
    assert renders["thumbnails"].md_str.startswith("![") and Path(renders["thumbnail_sheet"].path).is_file()

    again = _materializations(config)
    assert {k: m.tags["dagster/data_version"] for k, m in again.items()} == \
        {k: m.tags["dagster/data_version"] for k, m in first.items()}
    assert {k for k, v in again["aeseval_export"].metadata.items() if isinstance(v, PathMetadataValue)} == set(files)
