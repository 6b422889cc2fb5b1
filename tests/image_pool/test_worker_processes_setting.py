"""``pool.worker_processes``: the pool's decode and duplicate-verification stages start that many worker processes
(real materializations), the item loop's commits are timed in the step's ``commit_seconds`` note, and a bad value
is one config error line (exit 2 from the CLI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from assets.image_pool import normalization, perceptual_dedup
from pipelines.config import ConfigError, build_resources, load_config
from sample import synth
from tests.support.pool_harness import run_pool, step_summaries, warehouse_for, write_config

AESFORGE = str(Path(sys.executable).parent / "aesforge")
STAGES = ["source_records", "fetched_files", "normalized_images", "pool_candidates", "perceptual_duplicates"]


def _folder(tmp_path: Path) -> list[dict]:
    """Three photographs and a resized, recompressed copy of the first: one pair for the verifier."""
    images = tmp_path / "images"
    images.mkdir()
    for seed in range(3):
        synth.render_photo(seed, (640, 480)).save(images / f"photo{seed}.png")
    (images / "copy0.jpg").write_bytes(synth.recompressed(synth.resized(synth.render_photo(0, (640, 480)), 0.7), 75))
    return [{"path": str(images), "license": "CC0-1.0", "domain": "photography"}]


def test_the_pool_stages_start_the_configured_worker_processes_and_time_their_commits(tmp_path, monkeypatch):
    monkeypatch.setattr(normalization, "WORKER_PROCESSES_FROM", 1)  # decoded in worker processes
    monkeypatch.setattr(perceptual_dedup, "VERIFY_PROCESSES_FROM", 1)  # pairs verified in worker processes
    config = write_config(tmp_path / "cfg", {"folders": _folder(tmp_path), "worker_processes": 1})
    result = run_pool(config, STAGES)
    assert result.success
    summaries = step_summaries(warehouse_for(config), result.run_id)
    assert summaries["normalized_images"]["decode_processes"] == 1
    assert summaries["perceptual_duplicates"]["verify_processes"] == 1
    assert summaries["perceptual_duplicates"]["pairs"] >= 1
    for step in ("fetched_files", "normalized_images", "perceptual_duplicates"):  # each wrote batches in the item loop
        assert 0 < summaries[step]["commit_seconds"] < 60


def test_unset_is_one_process_per_core(tmp_path):
    config = write_config(tmp_path / "cfg", {})
    assert build_resources(load_config(config))["pool"].worker_process_count() == (os.cpu_count() or 2)
    three = write_config(tmp_path / "cfg", {"worker_processes": 3})
    assert build_resources(load_config(three))["pool"].worker_process_count() == 3


BAD_VALUES = [
    ("pool:\n  worker_processes: 0\n", "2:21: pool.worker_processes: Input should be greater than or equal to 1 (got 0)"),
    ("pool:\n  worker_processes: many\n",
     "2:21: pool.worker_processes: Input should be a valid integer, unable to parse string as an integer (got 'many')"),
    ("pool:\n  worker_process: 2\n", "2:3: pool: unknown key 'worker_process'; did you mean 'worker_processes'?"),
]


@pytest.mark.parametrize(("text", "expected"), BAD_VALUES, ids=["zero", "not_a_number", "misspelt"])
def test_a_bad_value_is_one_line_naming_the_key(tmp_path, text, expected):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(bad)
    assert str(raised.value) == f"{bad}:{expected}"


def test_aesforge_run_exits_2_with_one_line_on_a_bad_value(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_VALUES[0][0], encoding="utf-8")
    environment = {key: value for key, value in os.environ.items() if key != "AESFORGE_CONFIG"}
    run = subprocess.run([AESFORGE, "run", "--config", str(bad), "--job", "image_pool_job"], capture_output=True,
                         text=True, timeout=120, env={**environment, "DAGSTER_HOME": str(tmp_path / "home")})
    assert (run.returncode, run.stderr.splitlines(), run.stdout) == (2, [f"config error: {bad}:{BAD_VALUES[0][1]}"], "")
