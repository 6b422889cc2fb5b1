"""CritiqueCanvas pairs built for real: a small pool, then planner → annotator → verifier through the offline
heuristic provider and through the real openai / google-genai SDKs against a loopback server (a killed run and two
runs at once, in real processes, are in test_critique_processes.py)."""

import json
from pathlib import Path

from tests.critique_canvas.test_processes import DIALOGUE_ONE_VERIFIER_CALL
from tests.support.critique_harness import GEMINI_KEY, OPENAI_KEY, assert_complete_groups, built, materialize, remote_roles
from tests.support.critique_model import remote_model
from tests.support.model_servers import MALFORMED_CONTENT, SLOW, InjectedFailure, ModelApiServer, wire_schema
from warehouse.db import Warehouse


def test_heuristic_chain_covers_every_pool_image_and_reruns_without_calls(tmp_path):
    config, wh = built(tmp_path)
    assert_complete_groups(wh, 4)
    checks = wh.query("SELECT check_name, passed FROM check_result WHERE asset_key IN ('critique_pairs', 'critique_splits')")
    assert len(checks) == 8 and checks["passed"].all()
    splits = wh.query("SELECT split, domain, count(*) AS n FROM critique_split GROUP BY ALL")
    assert splits["n"].sum() == 4 and set(splits["split"]) == {"train", "eval"}  # 1 eval group per domain at most
    calls = wh.query("SELECT provider, role, status, count(*) AS n FROM model_call GROUP BY ALL ORDER BY ALL")
    assert set(calls["provider"]) == {"heuristic"} and set(calls["status"]) == {"ok"}
    # The dialogue and four paragraph instructions per image (two annotator calls), each of the ten pairs verified
    # in its own call, its decision and reasons kept with the pair.
    assert dict(zip(calls["role"], calls["n"])) == {"planner": 4, "annotator": 8, "verifier": 40}
    turns = wh.query("SELECT group_id, count(*) AS n, max(pair_index) AS last FROM critique_pair GROUP BY ALL")
    assert set(turns["n"]) == set(turns["last"]) == {10}
    verdicts = [json.loads(a) for a in wh.query("SELECT attributes FROM entity WHERE kind = 'critique_pair'")["attributes"]]
    assert {v["kind"] for v in verdicts} == {"dialogue", "paragraph"}
    assert all(v["verifier"]["reason"] and set(v["verifier"]["criteria"]) == {
        "instruction_consistency", "visual_grounding", "response_quality"} for v in verdicts)
    assert all((v["verifier"]["decision"] == "accept") == v["accepted"] for v in verdicts)
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
        config, wh = built(tmp_path, models=remote_roles(server), critique={"max_concurrency": 1, **DIALOGUE_ONE_VERIFIER_CALL})
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
        assert_complete_groups(wh, 3)
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
        config, wh = built(tmp_path, models=remote_roles(server),
                           critique={"max_calls": 5, "max_concurrency": 1, **DIALOGUE_ONE_VERIFIER_CALL})
        assert len(server.requests) == 5
        summary = json.loads(wh.scalar("SELECT summary FROM activity WHERE asset_key = 'critique_pairs'"))
        assert "budget" in summary["critique_stopped"]
        done = wh.scalar("SELECT count(*) FROM critique_group WHERE status = 'complete'")
        assert done == 1
        path = Path(config)
        path.write_text(path.read_text().replace("max_calls: 5", "max_calls: null"))
        assert materialize(config, "critique_pairs", "critique_splits").success
        assert_complete_groups(wh, 4)
        bodies = [json.dumps(r.body, sort_keys=True) for r in server.requests]
        assert len(bodies) == len(set(bodies)) == 12  # 4 images x 3 roles, each sent exactly once


def test_the_other_readings_one_verifier_call_for_the_dialogue_alone_and_eval_counted_in_groups(tmp_path):
    _, wh = built(tmp_path / "paper", critique={"eval_per_domain": 2})
    # Two photography groups of about ten samples each: two samples of quota are filled by the first group.
    assert wh.scalar("SELECT count(*) FROM critique_split WHERE split = 'eval' AND domain = 'photography'") == 1
    _, wh = built(tmp_path / "before", critique={"eval_per_domain": 2, "eval_unit": "groups", **DIALOGUE_ONE_VERIFIER_CALL})
    calls = wh.query("SELECT role, count(*) AS n FROM model_call GROUP BY ALL")
    assert dict(zip(calls["role"], calls["n"])) == {"planner": 4, "annotator": 4, "verifier": 4}
    assert set(wh.query("SELECT count(*) AS n FROM critique_pair GROUP BY group_id")["n"]) == {6}
    attributes = [json.loads(a) for a in wh.query("SELECT attributes FROM entity WHERE kind = 'critique_pair'")["attributes"]]
    assert all("verifier" not in a and a["kind"] == "dialogue" for a in attributes)
    assert wh.scalar("SELECT count(*) FROM critique_split WHERE split = 'eval' AND domain = 'photography'") == 2
