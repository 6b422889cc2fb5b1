"""Shared helpers for tests that build CritiqueCanvas for real: a four-image pool over the three domains and
in-process materializations of chosen critique assets."""

import json
from pathlib import Path

import numpy as np
import yaml
from dagster import AssetKey, DagsterInstance, ExecuteInProcessResult
from PIL import Image

from assets.critique_canvas.logic.answers import DIMENSION_IDS
from pipelines.config import load_config
from pipelines.definitions import build_definitions
from tests.support.pool_harness import run_pool, write_config
from tests.support.model_servers import ModelApiServer
from warehouse.db import Warehouse


def pool_folder(root: Path) -> Path:
    """Four distinct images over the three domains (a subfolder named after a domain sets it)."""
    rng = np.random.default_rng(7)
    for domain, name, base in (("photography", "dusk", 40), ("photography", "noon", 210), ("painting", "field", 120), ("virtual", "city", 90)):
        folder = root / "images" / domain
        folder.mkdir(parents=True, exist_ok=True)
        noise = rng.normal(0, 35, (240, 320, 3))
        gradient = np.linspace(-60, 60, 320)[None, :, None]
        pixels = np.clip(base + noise + gradient, 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(folder / f"{name}.png")
    return root / "images"


def critique_config(folder: Path, models: dict | None = None, critique: dict | None = None) -> Path:
    # the images are noise over a gradient, which the low-quality rules rightly call noisy: off for these tests
    pool = {"folders": [{"path": str(pool_folder(folder)), "license": "CC0-1.0", "provider": "test"}],
            "filters": {"clarity": {"domains": []}}}
    sections = {"critique": {"max_concurrency": 3, "eval_per_domain": 1, **(critique or {})}}
    if models:
        sections["models"] = models
    return write_config(folder, pool, **sections)


def materialize(config: Path, *assets: str) -> ExecuteInProcessResult:
    defs = build_definitions(load_config(config))
    job = defs.resolve_job_def("full_rebuild_job")
    return job.execute_in_process(
        instance=DagsterInstance.ephemeral(), raise_on_error=False, asset_selection=[AssetKey(a) for a in assets],
    )


def evaluated_runs(folder: Path, benchmark: str, models: list[str | dict]) -> tuple[Path, Warehouse]:
    """``<benchmark>_evaluation`` materialized on ``folder/releases`` with a model run per entry of ``models`` (a
    role or a baseline, or a dict of the run's other settings with its ``model``); asserts it succeeded. Returns
    the config and the warehouse."""
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump({
        "warehouse": {"path": "warehouse.duckdb"}, "blob_store": {"root": "blobs"},
        "evaluation": {"releases_dir": "releases", "bootstrap_resamples": 200,
                       "runs": [{"benchmark": benchmark, **(m if isinstance(m, dict) else {"model": m})} for m in models]}}))
    result = materialize(config, f"{benchmark}_evaluation")
    assert result.success, failures(result)
    return config, Warehouse(folder / "warehouse.duckdb", root=folder)


def built(folder: Path, *assets: str, **kwargs) -> tuple[Path, Warehouse]:
    """The pool, then ``assets`` (default: the chain and the split) with the heuristic or given models."""
    config = critique_config(folder, **kwargs)
    assert run_pool(config).success
    result = materialize(config, *(assets or ("critique_pairs", "critique_splits")))
    assert result.success, failures(result)
    return config, Warehouse(folder / "warehouse.duckdb")


def failures(result: ExecuteInProcessResult) -> list[str]:
    """What a failed run said, as the Dagster UI shows it (step failure messages with their error text)."""
    out = []
    for event in result.all_events:
        if event.is_step_failure:
            error = event.step_failure_data.error
            out.append(f"{event.message} {error.message if error else ''}")
    return out


OPENAI_KEY, GEMINI_KEY = "sk-loopback-never-stored", "gm-loopback-never-stored"


def assert_complete_groups(wh: Warehouse, n_images: int) -> None:
    groups = wh.query("SELECT group_id, status, domain, plan FROM critique_group")
    assert len(groups) == n_images and set(groups["status"]) == {"complete"}
    for plan in groups["plan"]:
        dims = [d["dimension"] for d in json.loads(plan)]
        assert 1 <= len(dims) <= 5 and set(dims) <= set(DIMENSION_IDS)
    pairs = wh.query(
        "SELECT group_id, count(*) FILTER (WHERE pair_index <= 6) AS n, sum(improvement::INT) AS improvements,"
        " min(length(question)) AS q,"
        " min(length(answer)) AS a FROM critique_pair GROUP BY group_id"
    )
    assert set(pairs["n"]) == {6} and set(pairs["improvements"]) == {1} and pairs["q"].min() > 0 and pairs["a"].min() > 0


def remote_roles(server: ModelApiServer, annotator: str = "openai") -> dict:
    openai_role = {"provider": "openai", "model": "loop-vision-1", "base_url": server.openai_base_url, "api_key_env": "LOOP_OPENAI_KEY"}
    gemini_role = {"provider": "gemini", "model": "loop-gemini-1", "base_url": server.gemini_base_url, "api_key_env": "LOOP_GEMINI_KEY"}
    return {
        "planner": gemini_role,
        "annotator": openai_role if annotator == "openai" else gemini_role,
        "verifier": openai_role,
        "timeout_s": 2,
        "max_retries": 2,
        "backoff_s": 0.01,
        "max_backoff_s": 0.2,
    }
