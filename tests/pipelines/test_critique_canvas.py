"""CritiqueCanvas pairs built for real: a small pool, then planner → annotator → verifier through the offline
heuristic provider and through the real openai / google-genai SDKs against a loopback server."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assets.lib.critique_schema import DIMENSION_IDS
from tests.pipelines.critique_harness import built, critique_config, materialize
from tests.pipelines.pool_harness import run_pool
from tests.support.critique_model import remote_model
from tests.support.model_servers import MALFORMED_CONTENT, SLOW, InjectedFailure, ModelApiServer, wire_schema
from warehouse.db import Warehouse

OPENAI_KEY, GEMINI_KEY = "sk-loopback-never-stored", "gm-loopback-never-stored"


def _assert_complete_groups(wh: Warehouse, n_images: int) -> None:
    groups = wh.query("SELECT group_id, status, domain, plan FROM critique_group")
    assert len(groups) == n_images and set(groups["status"]) == {"complete"}
    for plan in groups["plan"]:
        dims = [d["dimension"] for d in json.loads(plan)]
        assert 1 <= len(dims) <= 5 and set(dims) <= set(DIMENSION_IDS)
    pairs = wh.query(
        "SELECT group_id, count(*) AS n, sum(improvement::INT) AS improvements, min(length(question)) AS q,"
        " min(length(answer)) AS a FROM critique_pair GROUP BY group_id"
    )
    assert set(pairs["n"]) == {6} and set(pairs["improvements"]) == {1} and pairs["q"].min() > 0 and pairs["a"].min() > 0


def test_heuristic_chain_covers_every_pool_image_and_reruns_without_calls(tmp_path):
    config, wh = built(tmp_path)
    _assert_complete_groups(wh, 4)
    checks = wh.query("SELECT check_name, passed FROM check_result WHERE asset_key IN ('critique_pairs', 'critique_splits')")
    assert len(checks) == 8 and checks["passed"].all()
    splits = wh.query("SELECT split, domain, count(*) AS n FROM critique_split GROUP BY ALL")
    assert splits["n"].sum() == 4 and set(splits["split"]) == {"train", "eval"}  # 1 eval group per domain at most
    calls = wh.query("SELECT provider, role, status, count(*) AS n FROM model_call GROUP BY ALL ORDER BY ALL")
    assert set(calls["provider"]) == {"heuristic"} and set(calls["status"]) == {"ok"}
    assert dict(zip(calls["role"], calls["n"])) == {"planner": 4, "annotator": 4, "verifier": 4}
    # Statements differ between images: the heuristic reads each image.
    answers = wh.query("SELECT group_id, string_agg(answer, ' ' ORDER BY pair_index) AS text FROM critique_pair GROUP BY ALL")
    assert answers["text"].nunique() == 4
    before = {t: wh.scalar(f"SELECT count(*) FROM {t}") for t in ("model_call", "critique_group", "critique_pair", "critique_split", "entity")}
    assert materialize(config, "critique_pairs", "critique_splits").success
    assert {t: wh.scalar(f"SELECT count(*) FROM {t}") for t in before} == before
    lineage = wh.query(
        "SELECT DISTINCT e.kind FROM was_derived_from d JOIN entity e ON e.entity_id = d.source_entity_id"
        " WHERE d.entity_id IN (SELECT group_id FROM critique_group)"
    )
    assert set(lineage["kind"]) == {"pool_item", "model_call"}


def _remote_roles(server: ModelApiServer, annotator: str = "openai") -> dict:
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


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("LOOP_OPENAI_KEY", OPENAI_KEY)
    monkeypatch.setenv("LOOP_GEMINI_KEY", GEMINI_KEY)


def test_real_sdks_through_failures_repairs_and_a_resumed_run(tmp_path, keys):
    failures = [
        InjectedFailure(429, match='"dialogue"', retry_after="0"),                       # retried, honouring Retry-After
        InjectedFailure(500, match='"verdicts"', times=1),                               # retried
        InjectedFailure(SLOW, match='"plan"', delay_s=3.0, times=1),                      # timeout, retried
        InjectedFailure(MALFORMED_CONTENT, match='"dialogue"', skip=1, content='{"pairs": [{"question": "Only one?"'),
        InjectedFailure(MALFORMED_CONTENT, match='"dialogue"', skip=1,                   # five pairs: wrong count
                        content=json.dumps({"pairs": [{"question": "q", "answer": "a", "dimension": None, "improvement": i == 0}
                                                      for i in range(5)]})),
        InjectedFailure(500, match='"verdicts"', skip=2, times=None),                    # the last verifier calls keep failing
    ]  # one image at a time below, so which request meets which failure is the same on every run
    with ModelApiServer(responder=remote_model, failures=failures, openai_key=OPENAI_KEY, gemini_key=GEMINI_KEY) as server:
        config, wh = built(tmp_path, models=_remote_roles(server), critique={"max_concurrency": 1})
        outcomes = [(r.outcome, wire_schema(r.body)[0]) for r in server.requests]
        assert {("429", "dialogue"), ("500", "verdicts"), ("slow", "plan")} <= set(outcomes)
        attempts = wh.query(
            "SELECT a.pool_item_id, a.status, a.retryable, j.reason_code FROM critique_attempt a"
            " LEFT JOIN rejection j ON j.entity_id = a.pool_item_id AND j.stage = 'critique'"
        )
        assert len(attempts) == 4  # nothing lost: every pool image has an outcome
        by_status = {status: group for status, group in attempts.groupby("status")}
        # The five-pair dialogue survived its repair attempt: rejected for good, with the schema's reason.
        assert set(by_status["rejected"]["reason_code"]) == {"wrong_pair_count"} and not by_status["rejected"]["retryable"].any()
        # The verifier's persistent 500s: failed, retryable, asked again on the next run.
        assert set(by_status["failed"]["reason_code"]) == {"http_error"} and by_status["failed"]["retryable"].all()
        assert wh.scalar("SELECT count(*) FROM model_call WHERE role = 'repair' AND repair_of IS NOT NULL") >= 1
        sent_before = len(server.requests)
        server.failures.clear()
        assert materialize(config, "critique_pairs", "critique_splits").success
        statuses = wh.query("SELECT status, count(*) AS n FROM critique_attempt GROUP BY ALL")
        assert dict(zip(statuses["status"], statuses["n"])) == {"complete": 3, "rejected": 1}
        _assert_complete_groups(wh, 3)
        # Only the failed verifier calls were sent again; everything else came from the call log.
        resent = server.requests[sent_before:]
        assert len(resent) == len(by_status["failed"]) and all(wire_schema(r.body)[0] == "verdicts" for r in resent)
    with duckdb_connect(wh) as con:
        dumped = " ".join(str(row) for row in con.execute("SELECT * FROM model_call").fetchall())
    assert OPENAI_KEY not in dumped and GEMINI_KEY not in dumped


def duckdb_connect(wh: Warehouse):
    import duckdb

    return duckdb.connect(str(wh.path), read_only=True)


def test_budget_stops_cleanly_and_the_next_run_repeats_no_call(tmp_path, keys):
    with ModelApiServer(responder=remote_model, openai_key=OPENAI_KEY, gemini_key=GEMINI_KEY) as server:
        config, wh = built(tmp_path, models=_remote_roles(server), critique={"max_calls": 5, "max_concurrency": 1})
        assert len(server.requests) == 5
        summary = json.loads(wh.scalar("SELECT summary FROM activity WHERE asset_key = 'critique_pairs'"))
        assert "budget" in summary["stopped"]
        done = wh.scalar("SELECT count(*) FROM critique_group WHERE status = 'complete'")
        assert done == 1
        path = Path(config)
        path.write_text(path.read_text().replace("max_calls: 5", "max_calls: null"))
        assert materialize(config, "critique_pairs", "critique_splits").success
        _assert_complete_groups(wh, 4)
        bodies = [json.dumps(r.body, sort_keys=True) for r in server.requests]
        assert len(bodies) == len(set(bodies)) == 12  # 4 images x 3 roles, each sent exactly once


def test_a_killed_run_resumes_without_repeating_a_logged_call(tmp_path, keys):
    """SIGKILL the chain mid-run (a real `aesforge run` process, one image at a time against a slow server), then
    resume: every call logged before the kill is answered from the log, and no row is duplicated."""
    with ModelApiServer(responder=remote_model, openai_key=OPENAI_KEY, gemini_key=GEMINI_KEY, latency_s=0.4) as server:
        config = critique_config(tmp_path, models=_remote_roles(server), critique={"max_concurrency": 1})
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
        logged = wh.scalar("SELECT count(*) FROM model_call WHERE status = 'ok'")
        assert 4 <= logged < 12  # some calls were logged, some were still to come
        sent_before = len(server.requests)
        assert materialize(config, "critique_pairs", "critique_splits").success
        # 4 images x 3 roles = 12 answers in all; the resumed run asked only for those not logged before the kill.
        assert len(server.requests) - sent_before == 12 - logged
    _assert_complete_groups(wh, 4)
    counts = wh.query(
        "SELECT (SELECT count(*) FROM model_call WHERE status = 'ok') AS calls,"
        " (SELECT count(DISTINCT cache_key) FROM model_call WHERE status = 'ok') AS keys,"
        " (SELECT count(*) FROM critique_pair) AS pairs, (SELECT count(*) FROM critique_attempt) AS attempts"
    ).iloc[0].to_dict()
    assert counts == {"calls": 12, "keys": 12, "pairs": 24, "attempts": 4}
