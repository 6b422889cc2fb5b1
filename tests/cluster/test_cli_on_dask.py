"""`aesforge run` honours the config's executor section: with ``kind: dask`` and no scheduler, each run starts a
local Dask cluster and its steps run there, recorded in the default (SQLite) instance beside the warehouse."""

import os
import subprocess
import sys
from pathlib import Path

from sample import synth
from tests.support.pool_harness import warehouse_for, write_config

AESFORGE = str(Path(sys.executable).parent / "aesforge")


def test_aesforge_run_uses_the_configured_dask_executor(tmp_path):
    folder = tmp_path / "images"
    folder.mkdir()
    for i in range(3):
        synth.render_painting(500 + i, (320, 256)).save(folder / f"p{i}.png")
    config = write_config(tmp_path / "cfg", {"folders": [{"path": str(folder), "provider": "t", "license": "CC0-1.0",
                                                        "domain": "painting"}]},
                          executor={"kind": "dask", "dask": {"n_workers": 1}})
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster_home")}
    env.pop("AESFORGE_CONFIG", None)
    (tmp_path / "dagster_home").mkdir()

    run = subprocess.run([AESFORGE, "run", "--config", str(config), "--select", "source_records", "fetched_files"],
                         capture_output=True, text=True, timeout=600, env=env)

    assert run.returncode == 0, run.stdout + run.stderr
    assert "(dask executor)" in run.stdout  # not the multiprocess executor that --executor auto picks otherwise
    wh = warehouse_for(config)
    assert wh.query("SELECT asset_key, status FROM activity ORDER BY asset_key").values.tolist() == [
        ["fetched_files", "success"], ["source_records", "success"]]
    assert wh.scalar("SELECT count(*) FROM file_blob") == 3
