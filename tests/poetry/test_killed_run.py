"""The poem judge across a SIGKILLed `aesforge run`: answers that arrived before the kill (committed, or durable in
the dead run's call shard) are re-used by the resumed run, never asked again, and no judgement or call is stored
twice."""

import json

from assets.core.model_call_store import shard_directory
from assets.poetry.logic.rubric import DIMENSIONS
from tests.poetry.test_assets import CHAIN, OPENAI_KEY, _ok, _run, _write_config, sample  # noqa: F401 - the fixture
from tests.support.killed_runs import call_log_counts, kill_mid_run, logged_answers
from tests.support.model_servers import ModelApiServer
from warehouse.db import Warehouse


def first_options(body: dict) -> str:
    """A valid rubric answer whatever the image: every dimension's first option."""
    return json.dumps({"scores": {d.key: {"option": d.options[0].letter, "reason": "the first option"} for d in DIMENSIONS}})


def test_a_killed_judge_run_resumes_without_repeating_a_logged_call(tmp_path, sample, monkeypatch):  # noqa: F811
    monkeypatch.setenv("LOOP_JUDGE_KEY", OPENAI_KEY)
    with ModelApiServer(responder=first_options, openai_key=OPENAI_KEY, latency_s=0.3) as server:
        models = {"annotator": {"provider": "openai", "model": "loop-judge-1", "base_url": server.openai_base_url,
                                "api_key_env": "LOOP_JUDGE_KEY"}, "timeout_s": 5, "max_retries": 1, "backoff_s": 0.01}
        config = _write_config(tmp_path, {"corpus": [str(sample["poems"])], "stand_in_folder": str(sample["paintings"]),
                                          "surveys": [str(sample["survey"])], "judge_max_concurrency": 1}, models=models)
        _ok(_run(config, [a for a in CHAIN if a not in ("poem_judge_scores", "poetry_benchmark_export")]))
        assert server.requests == []
        wh = Warehouse(tmp_path / "warehouse.duckdb")
        items = wh.scalar("SELECT count(*) FROM poem_illustration")
        # One image at a time: the sixth request is sent once the fifth answer is durable.
        kill_mid_run(config, "poem_judge_scores", server, 6, tmp_path)
        logged = logged_answers(wh)
        assert 5 <= logged < items  # some answers were logged, some were still to come
        sent_before = len(server.requests)
        _ok(_run(config, ["poem_judge_scores"]))
        assert len(server.requests) - sent_before == items - logged  # only the unlogged images were asked
    assert call_log_counts(wh) == {"answers": items, "keys": items, "ids": items, "calls": items, "leases": 0}
    judged = wh.query("SELECT item_id, call_ids FROM poem_judgement")
    assert len(judged) == judged["item_id"].nunique() == items
    assert {c for ids in judged["call_ids"] for c in ids} == set(wh.query("SELECT call_id FROM model_call")["call_id"])
    assert list(shard_directory(wh).glob("*.jsonl")) == []  # the dead run's shard is committed and gone
