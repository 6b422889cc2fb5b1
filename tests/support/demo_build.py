"""The demo, built from scratch in a folder of the test's choosing: the bundled config copied to
``<root>/config/sample.yaml``, the sample generated under ``<root>/data/sample``, every asset run in process.

Used where only the whole chain shows a property: releases of every dataset, and identical bytes from two folders.
The CLI runs in a subprocess of its own: the code location is built once per process from the config it first
sees, so a second demo in this process would otherwise run against the first one's warehouse.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from pipelines.config import SAMPLE_CONFIG

AESFORGE = str(Path(sys.executable).parent / "aesforge")


def build_demo(root: Path) -> Path:
    """Build the demo under ``root``; returns its config file."""
    config = root / "config" / "sample.yaml"
    config.parent.mkdir(parents=True)
    shutil.copy(SAMPLE_CONFIG, config)
    env = {key: value for key, value in os.environ.items() if key not in ("AESFORGE_CONFIG", "DAGSTER_HOME")}
    for command in (["sample", "--out", str(root / "data" / "sample")],
                    ["run", "--config", str(config), "--executor", "in_process"]):
        done = subprocess.run([AESFORGE, *command], capture_output=True, text=True, env=env, timeout=1200)
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return config
