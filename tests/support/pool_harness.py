"""Shared helpers for tests that materialize the image-pool job for real (in-process executor)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from dagster import AssetKey, DagsterInstance, ExecuteInProcessResult

from pipelines.config import build_resources, load_config
from pipelines.definitions import build_definitions
from warehouse.db import Warehouse

# Tables holding data and provenance edges; a re-run with unchanged inputs must leave them untouched.
DATA_TABLES = (
    "entity", "used", "was_generated_by", "was_derived_from", "rejection", "input_file_state", "source_record",
    "fetch_attempt", "file_blob", "record_file", "file_decode", "image", "pool_candidate", "image_signature",
    "clip_embedding", "match_scan", "duplicate_match", "model_filter_verdict", "pool_member", "step_input_state",
)


def write_config(folder: Path, pool: dict[str, Any], **sections: Any) -> Path:
    config = {
        "warehouse": {"path": "warehouse.duckdb"},
        "blob_store": {"root": "blobs"},
        "fetch": {"timeout_s": 2, "max_retries": 1, "backoff_s": 0.01, "max_backoff_s": 0.05},
        "pool": {"batch_size": 16, **pool},
        **sections,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "aesforge.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def run_pool(config_path: Path, select: list[str] | None = None) -> ExecuteInProcessResult:
    defs = build_definitions(load_config(config_path))
    job = defs.resolve_job_def("image_pool_job")
    return job.execute_in_process(
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
        asset_selection=[AssetKey(name) for name in select] if select else None,
    )


def warehouse_for(config_path: Path) -> Warehouse:
    """The warehouse as the config's assets see it: its root (names of local files) and its blob folder (the views'
    image paths) included."""
    return build_resources(load_config(config_path))["warehouse"].get_warehouse()


def snapshot(wh: Warehouse) -> dict[str, list[tuple]]:
    """Every row of every data table, sorted, for exact before/after comparisons."""
    out = {}
    with wh.transaction() as con:
        for table in DATA_TABLES:
            rows = con.execute(f"SELECT * FROM {table}").fetchall()
            out[table] = sorted(rows, key=repr)
    return out


def step_summaries(wh: Warehouse, run_id: str) -> dict[str, dict]:
    import json

    frame = wh.query("SELECT asset_key, summary FROM activity WHERE run_id = ?", [run_id])
    return {key: json.loads(summary or "{}") for key, summary in frame.itertuples(index=False)}
