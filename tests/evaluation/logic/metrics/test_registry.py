"""The registry builds exactly the metrics asked for and refuses names and settings it does not know."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from assets.evaluation.logic.metrics.registry import METRICS, build_metrics, setting_keys

REPO = Path(__file__).resolve().parents[4]


def test_every_metric_is_registered_under_its_own_name():
    assert list(METRICS) == ["rouge_l", "bleu", "meteor", "sbert", "bertscore", "bleurt", "clip_score"]
    assert all(metric.name == name for name, metric in METRICS.items())
    assert [name for name, metric in METRICS.items() if metric.needs_image] == ["clip_score"]


def test_builds_the_enabled_metrics_in_registry_order():
    metrics = build_metrics({"meteor": {}, "bleu": {"enabled": True, "tokenize": "intl"},
                             "rouge_l": {"enabled": False}})
    assert [metric.name for metric in metrics] == ["bleu", "meteor"]
    assert metrics[0].parameters()["tokenize"] == "intl"
    assert build_metrics({}) == []


def test_every_metric_takes_the_shared_settings_but_only_a_learned_one_a_model_path():
    shared = {"enabled": True, "model_path": None, "device": "auto", "batch_size": 32}
    assert [metric.name for metric in build_metrics({name: shared for name in METRICS})] == list(METRICS)
    with pytest.raises(ValueError, match="meteor: has no model, so model_path must be unset"):
        build_metrics({"meteor": {"model_path": "/models/wordnet"}})


def test_learned_metrics_take_their_weights_settings(tmp_path: Path):
    (metric,) = build_metrics({"bertscore": {"model_path": str(tmp_path), "device": "cpu", "batch_size": 8,
                                             "model_type": "roberta-large", "rescale": False}})
    assert metric.batch_size == 8 and metric.parameters()["weights"] == str(tmp_path)
    assert set(setting_keys(METRICS["clip_score"])) == {
        "model_path", "device", "batch_size", "cache_dir", "model_name", "weight", "floor_at_zero"
    }


def test_an_unknown_metric_name_is_refused_with_a_suggestion():
    with pytest.raises(ValueError, match=r"unknown metric 'bluert'; did you mean 'bleurt'\?"):
        build_metrics({"bluert": {}})
    with pytest.raises(ValueError, match=r"unknown metric 'accuracy' \(known: bertscore, bleu,"):
        build_metrics({"accuracy": {}})


def test_an_unknown_setting_is_refused_with_a_suggestion_even_when_disabled():
    with pytest.raises(ValueError, match=r"unknown setting 'modle_path' for metric 'sbert'; did you mean 'model_path'"):
        build_metrics({"sbert": {"enabled": False, "modle_path": "/models/mpnet"}})
    with pytest.raises(ValueError, match=r"unknown setting 'devise' for metric 'rouge_l'; did you mean 'device'\? "
                                         r"\(known: batch_size, device, enabled, model_path\)"):
        build_metrics({"rouge_l": {"devise": "cpu"}})
    with pytest.raises(ValueError, match="bleu: enabled must be true or false"):
        build_metrics({"bleu": {"enabled": "yes"}})


def test_importing_the_registry_loads_no_ml_framework():
    """Building or listing metrics must stay cheap; torch and friends load only when a learned metric is used."""
    code = ("import sys, assets.evaluation.logic.metrics.registry as r; r.build_metrics({'bleu': {}, 'sbert': {}});"
            "print(sorted(m for m in ('torch', 'transformers', 'open_clip', 'bert_score', 'dagster', 'duckdb')"
            " if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
