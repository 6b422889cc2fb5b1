"""A real `aesforge run` process SIGKILLed mid-run, for the kill-and-resume tests of the model-calling assets: the
run asks a slow loopback server one request at a time, and is killed once the server has seen a few requests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.core.test_model_call_shards import durable_answers
from tests.support.model_servers import ModelApiServer
from warehouse.db import Warehouse


def kill_mid_run(config: Path, select: str, server: ModelApiServer, after_requests: int, folder: Path) -> None:
    """Start `aesforge run --select <select>` on ``config`` (in-process executor, a Dagster home under ``folder``)
    and SIGKILL its process group once ``server`` has received ``after_requests`` requests; the run must still be
    going then (killed mid-run, not finished)."""
    (folder / "dagster_home").mkdir(exist_ok=True)
    env = {**os.environ, "DAGSTER_HOME": str(folder / "dagster_home")}
    env.pop("AESFORGE_CONFIG", None)
    command = [str(Path(sys.executable).parent / "aesforge"), "run", "--config", str(config), "--select", select,
               "--executor", "in_process"]
    log = folder / "killed_run.log"
    with log.open("w") as output:
        worker = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 180
        while len(server.requests) < after_requests and worker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert worker.poll() is None, log.read_text()[-3000:]
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    assert worker.returncode == -signal.SIGKILL


def logged_answers(wh: Warehouse) -> int:
    """Answers that outlive the kill: committed, or durable in the dead run's call shard (the next run commits them)."""
    return len(durable_answers(wh))


def call_log_counts(wh: Warehouse) -> dict[str, int]:
    """Answers logged, their distinct cache keys and call ids, and leases left: equal counts mean no call was logged
    twice, and no lease outlives the resumed run."""
    return wh.query(
        "SELECT (SELECT count(*) FROM model_call WHERE status = 'ok') AS answers,"
        " (SELECT count(DISTINCT cache_key) FROM model_call WHERE status = 'ok') AS keys,"
        " (SELECT count(DISTINCT call_id) FROM model_call) AS ids, (SELECT count(*) FROM model_call) AS calls,"
        " (SELECT count(*) FROM model_call_lease) AS leases").iloc[0].to_dict()
