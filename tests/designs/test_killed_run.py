"""Model labelling of design review items across a SIGKILLed `aesforge run`: answers that arrived before the kill
(committed, or durable in the dead run's call shard) are re-used by the resumed run, never asked again, and no
label or call is stored twice."""

from assets.core.model_call_store import shard_directory
from tests.designs.test_assets import LABEL_ASSETS, _run
from tests.support.design_model import remote_design_labeller
from tests.support.killed_runs import call_log_counts, kill_mid_run, logged_answers
from tests.support.model_servers import ModelApiServer
from tests.support.pool_harness import write_config
from warehouse.db import Warehouse


def test_a_killed_labelling_run_resumes_without_repeating_a_logged_call(tmp_path, fixture_dir, monkeypatch):
    source, _ = fixture_dir
    monkeypatch.setenv("LOOP_LABEL_KEY", "sk-loopback-label")
    with ModelApiServer(responder=remote_design_labeller, openai_key="sk-loopback-label", latency_s=0.3) as server:
        models = {"annotator": {"provider": "openai", "model": "loop-labeller-1", "base_url": server.openai_base_url,
                                "api_key_env": "LOOP_LABEL_KEY"}, "timeout_s": 5, "max_retries": 1, "backoff_s": 0.01}
        config = write_config(tmp_path, {}, models=models, designs={
            "folders": [str(source / "v5")], "perturb": {"seed": 4, "variants_per_design": 1}, "labeller": "model",
            "benchmark_labels": "labeller", "batch_size": 4, "max_concurrency": 1})
        result = _run(config, [a for a in LABEL_ASSETS if a != "design_labels"])
        assert result.success, [e.message for e in result.all_events if e.is_failure]
        assert server.requests == []
        wh = Warehouse(tmp_path / "warehouse.duckdb")
        items = wh.scalar("SELECT count(*) FROM design_review_item")  # one request each: the labeller never needs a repair
        # One design at a time, its indicators one after another: the sixth request follows the fifth durable answer.
        kill_mid_run(config, "design_labels", server, 6, tmp_path)
        logged = logged_answers(wh)
        assert 5 <= logged < items  # some answers were logged, some were still to come
        sent_before = len(server.requests)
        result = _run(config, ["design_labels"])
        assert result.success, [e.message for e in result.all_events if e.is_failure]
        assert len(server.requests) - sent_before == items - logged  # only the unlogged items were asked
    assert call_log_counts(wh) == {"answers": items, "keys": items, "ids": items, "calls": items, "leases": 0}
    labels = wh.query("SELECT design_id, indicator, source FROM design_label")
    assert len(labels) == len(labels.drop_duplicates(["design_id", "indicator"])) == items
    assert set(labels["source"]) == {"model"}
    assert list(shard_directory(wh).glob("*.jsonl")) == []  # the dead run's shard is committed and gone
