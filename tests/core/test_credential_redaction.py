"""A key in a model's ``base_url`` (userinfo and ``?key=``) reaches the server but nothing that is logged, stored
or exported: the warehouse's every text column, the run's output, the Dagster instance and the export files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb

from tests.support.critique_harness import critique_config
from tests.support.critique_model import remote_model
from tests.support.model_servers import ModelApiServer

SECRET = "SECRETKEY123"
GEMINI_KEY = "gm-loopback-never-stored"
AESFORGE = str(Path(sys.executable).parent / "aesforge")
ASSETS = ["source_records", "fetched_files", "normalized_images", "pool_candidates", "perceptual_duplicates",
          "clip_duplicates", "image_pool", "critique_pairs", "critique_splits", "critique_canvas_export"]


def _text_columns(path: Path) -> list[tuple[str, str]]:
    with duckdb.connect(str(path), read_only=True) as con:
        columns = con.execute(
            "SELECT c.table_name, c.column_name FROM information_schema.columns c JOIN information_schema.tables t"
            " USING (table_schema, table_name) WHERE t.table_type = 'BASE TABLE' AND c.data_type IN ('VARCHAR', 'JSON')"
        ).fetchall()
        return [(f"{table}.{column}", value) for table, column in columns
                for (value,) in con.execute(f'SELECT "{column}"::VARCHAR FROM "{table}" WHERE "{column}" IS NOT NULL').fetchall()]


def test_a_key_in_base_url_is_never_logged_stored_or_exported(tmp_path):
    with ModelApiServer(responder=remote_model, gemini_key=GEMINI_KEY) as server:
        port = server.base.rsplit(":", 1)[1]
        # google-genai sends the request to this URL as given (the openai SDK cannot: it turns the userinfo into
        # Basic auth and appends its paths after the query), so the key really travels and still is not kept.
        base_url = f"http://user:{SECRET}@127.0.0.1:{port}/?key={SECRET}"
        role = {"provider": "gemini", "model": "loop-gemini-1", "base_url": base_url, "api_key_env": "LOOP_GEMINI_KEY"}
        config = critique_config(tmp_path, models={"planner": role, "annotator": role, "verifier": role, "timeout_s": 10},
                                 critique={"max_concurrency": 2})
        (tmp_path / "dagster_home").mkdir()
        env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster_home"), "LOOP_GEMINI_KEY": GEMINI_KEY}
        env.pop("AESFORGE_CONFIG", None)
        run = subprocess.run([AESFORGE, "run", "--config", str(config), "--executor", "in_process", "--log-level", "DEBUG",
                              "--select", *ASSETS], capture_output=True, text=True, timeout=900, env=env)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
        assert server.requests  # the calls went out through the URL with the key in it

    warehouse = tmp_path / "warehouse.duckdb"
    stored = _text_columns(warehouse)
    providers = {value for column, value in stored if column == "model_call.provider"}
    assert providers == {f"gemini@http://REDACTED@127.0.0.1:{port}/?key=REDACTED"}
    assert any(column == "critique_pair.answer" for column, _ in stored)  # the chain really produced pairs
    assert [column for column, value in stored if SECRET in value] == []
    assert SECRET not in run.stdout and SECRET not in run.stderr
    exports = [p for p in tmp_path.rglob("*") if p.is_file() and "exports" in p.parts]
    assert any(p.name == "critique_canvas.jsonl" and p.stat().st_size for p in exports)
    # every file the run wrote: exports, blobs, the Dagster instance's run and event storage, the warehouse itself
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != config]
    assert [str(p) for p in written if SECRET.encode() in p.read_bytes()] == []
