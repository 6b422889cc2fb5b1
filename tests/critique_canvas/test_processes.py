"""CritiqueCanvas across real `aesforge run` processes: a SIGKILLed run resumed without repeating a logged call,
and two runs at once on one config paying for each call once (kept apart from test_critique_canvas.py so the
two slow process tests run on their own xdist worker)."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from tests.core.test_model_call_shards import durable_answers
from tests.support.critique_harness import GEMINI_KEY, OPENAI_KEY, assert_complete_groups, critique_config, materialize, remote_roles
from tests.support.pool_harness import run_pool
from tests.support.critique_model import remote_model
from tests.support.model_servers import ModelApiServer
from warehouse.db import Warehouse


DIALOGUE_ONE_VERIFIER_CALL = {"paragraphs": 0, "verifier": "batch"}
"""Three calls per image (the options' other readings), so the process tests count 4 images x 3 roles."""


def test_a_killed_run_resumes_without_repeating_a_logged_call(tmp_path, keys):
    """SIGKILL the chain mid-run (a real `aesforge run` process, one image at a time against a slow server), then
    resume: every call logged before the kill (committed, or durable in the run's call shard, which the resumed run
    commits first) is answered from the log, and no row is duplicated."""
    with ModelApiServer(responder=remote_model, openai_key=OPENAI_KEY, gemini_key=GEMINI_KEY, latency_s=0.4) as server:
        config = critique_config(tmp_path, models=remote_roles(server), critique={"max_concurrency": 1, **DIALOGUE_ONE_VERIFIER_CALL})
        assert run_pool(config).success
        env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster_home")}
        (tmp_path / "dagster_home").mkdir()
        command = [str(Path(sys.executable).parent / "aesforge"), "run", "--config", str(config),
                   "--select", "critique_pairs", "--executor", "in_process"]
        worker = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 240
        while len(server.requests) < 5 and worker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
        assert worker.returncode == -signal.SIGKILL  # killed mid-run, not finished
        wh = Warehouse(tmp_path / "warehouse.duckdb")
        logged = len(durable_answers(wh))  # committed, or fsynced to the dead run's call shard
        assert 4 <= logged < 12  # some calls were logged, some were still to come
        sent_before = len(server.requests)
        assert materialize(config, "critique_pairs", "critique_splits").success
        # 4 images x 3 roles = 12 answers in all; the resumed run asked only for those not logged before the kill.
        assert len(server.requests) - sent_before == 12 - logged
    assert_complete_groups(wh, 4)
    counts = wh.query(
        "SELECT (SELECT count(*) FROM model_call WHERE status = 'ok') AS calls,"
        " (SELECT count(DISTINCT cache_key) FROM model_call WHERE status = 'ok') AS keys,"
        " (SELECT count(*) FROM critique_pair) AS pairs, (SELECT count(*) FROM critique_attempt) AS attempts"
    ).iloc[0].to_dict()
    assert counts == {"calls": 12, "keys": 12, "pairs": 24, "attempts": 4}


# Two `aesforge run`s at once on one config: both real CLI processes (one with Dagster's multiprocess executor, whose
# step runs in a process of its own, one in-process). The server holds every answer until both chain steps are
# under way, so the second run meets the first one's claims rather than its logged answers.
def _running_chain_steps(wh: Warehouse) -> int:
    return wh.scalar("SELECT count(*) FROM activity WHERE asset_key = 'critique_pairs' AND status = 'running'")


def test_two_runs_at_once_request_every_cache_key_once(tmp_path, keys):
    gate = threading.Event()

    def held_answer(body: dict) -> str:
        gate.wait(120)
        return remote_model(body)

    with ModelApiServer(responder=held_answer, openai_key=OPENAI_KEY, gemini_key=GEMINI_KEY) as server:
        # A long client timeout: a held answer must not time out and be asked again.
        config = critique_config(tmp_path, models={**remote_roles(server), "timeout_s": 120},
                                 critique={"max_concurrency": 2, **DIALOGUE_ONE_VERIFIER_CALL})
        assert run_pool(config).success
        wh = Warehouse(tmp_path / "warehouse.duckdb")
        aesforge = str(Path(sys.executable).parent / "aesforge")
        runs = []
        for executor in ("multiprocess", "in_process"):
            # A Dagster home each: two first runs on one fresh home race in Dagster's own SQLite set-up.
            (tmp_path / f"dagster_home_{executor}").mkdir()
            env = {**os.environ, "DAGSTER_HOME": str(tmp_path / f"dagster_home_{executor}")}
            runs.append(subprocess.Popen(
                [aesforge, "run", "--config", str(config), "--select", "critique_pairs", "--executor", executor],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        try:
            deadline = time.monotonic() + 180
            while _running_chain_steps(wh) < 2 and time.monotonic() < deadline and all(r.poll() is None for r in runs):
                time.sleep(0.1)
            overlapped = _running_chain_steps(wh) == 2
            gate.set()
            outputs = [r.communicate(timeout=300)[0] for r in runs]
        finally:
            gate.set()
            for r in runs:
                if r.poll() is None:
                    r.kill()
        assert [r.returncode for r in runs] == [0, 0], "\n\n".join(o[-3000:] for o in outputs)
        assert overlapped, "both chain steps should be running before any answer is given"
        sent = Counter(json.dumps(r.body, sort_keys=True) for r in server.requests)
    # 4 images x 3 roles: every distinct request (model, prompt, image, schema) reached the server exactly once.
    assert len(sent) == 12 and set(sent.values()) == {1}
    statuses = wh.query("SELECT status, count(*) AS n FROM activity WHERE asset_key = 'critique_pairs' GROUP BY ALL")
    assert dict(zip(statuses["status"], statuses["n"])) == {"success": 2}
    counts = wh.query(
        "SELECT (SELECT count(*) FROM model_call) AS calls, (SELECT count(DISTINCT cache_key) FROM model_call) AS keys,"
        " (SELECT count(*) FROM model_call_lease) AS leases, (SELECT count(*) FROM critique_attempt) AS attempts,"
        " (SELECT count(*) FROM critique_group WHERE status = 'complete') AS groups,"
        " (SELECT count(*) FROM critique_pair) AS pairs"
    ).iloc[0].to_dict()
    assert counts == {"calls": 12, "keys": 12, "leases": 0, "attempts": 4, "groups": 4, "pairs": 24}
