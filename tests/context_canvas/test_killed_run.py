"""ContextCanvas's text-only answers across a SIGKILLed `aesforge run`: answers that arrived before the kill
(committed, or durable in the dead run's call shard) are re-used by the resumed run, never asked again, and no
answer or call is stored twice."""

from tests.context_canvas.test_assets import KEY, text_only_responder
from tests.support.context_harness import context_project
from tests.support.critique_harness import failures, materialize
from tests.support.killed_runs import call_log_counts, kill_mid_run, logged_answers
from tests.support.model_servers import ModelApiServer
from warehouse.db import Warehouse
from assets.core.model_call_store import shard_directory


def test_a_killed_text_only_run_resumes_without_repeating_a_logged_call(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOP_CONTEXT_KEY", KEY)
    with ModelApiServer(responder=text_only_responder, openai_key=KEY, latency_s=0.4) as server:
        models = {"annotator": {"provider": "openai", "model": "loop-text-1", "base_url": server.openai_base_url,
                                "api_key_env": "LOOP_CONTEXT_KEY"}, "timeout_s": 5, "max_retries": 1, "backoff_s": 0.01}
        project = context_project(tmp_path, models=models)
        assert materialize(project.config, "context_cases").success
        # One case at a time: the fifth request is sent once the fourth answer is durable.
        kill_mid_run(project.config, "context_shortcut_report", server, 5, tmp_path)
        wh = Warehouse(tmp_path / "warehouse.duckdb")
        logged = logged_answers(wh)
        assert 4 <= logged < 10  # some answers were logged, some were still to come
        sent_before = len(server.requests)
        result = materialize(project.config, "context_shortcut_report")
        assert result.success, failures(result)
        # 8 cases + the repairs of ctx-s04 and ctx-s05 = 10 answers; the resumed run asked only the unlogged ones.
        assert len(server.requests) - sent_before == 10 - logged
    assert call_log_counts(wh) == {"answers": 10, "keys": 10, "ids": 10, "calls": 10, "leases": 0}
    answers = wh.query("SELECT case_id, answer FROM context_text_only_answer")
    assert len(answers) == answers["case_id"].nunique() == 8
    assert list(shard_directory(wh).glob("*.jsonl")) == []  # the dead run's shard is committed and gone
