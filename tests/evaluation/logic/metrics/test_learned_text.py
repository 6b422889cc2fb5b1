"""SBERT-cos, BERTScore and BLEURT on tiny random models saved to disk, on CPU, without any download."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assets.evaluation.logic.metrics.base import MetricUnavailable
from assets.evaluation.logic.metrics.bertscore import BertScore
from assets.evaluation.logic.metrics.bleurt import Bleurt
from assets.evaluation.logic.metrics.sbert import SbertCosine

CANDIDATES = ["warm light on the painting", "the cat and the dog", "", "soft colour", "sharp image of a cold sky"]
REFERENCES = ["warm light on the painting", "a cold sky", "the sky", "   ", "the composition of the image is sharp"]
LONG_TEXT = " ".join(["the warm light of the sky"] * 40)  # far beyond the tiny models' 64 positions


@pytest.fixture
def metrics(tiny_sbert: Path, tiny_roberta: Path, tiny_bleurt: Path) -> dict[str, object]:
    return {
        "sbert": SbertCosine(model_path=str(tiny_sbert), device="cpu"),
        # the tiny RoBERTa stands in for roberta-large: its baseline file, at the tiny model's last layer.
        "bertscore": BertScore(model_path=str(tiny_roberta), model_type="roberta-large", num_layers=2, device="cpu"),
        "bleurt": Bleurt(model_path=str(tiny_bleurt), device="cpu", batch_size=2, max_length=64),
    }


@pytest.mark.parametrize("name", ["sbert", "bertscore", "bleurt"])
def test_scores_are_one_per_pair_and_deterministic(metrics, name):
    metric = metrics[name]
    assert metric.unavailable() is None
    first = metric.score(CANDIDATES + [LONG_TEXT], REFERENCES + [LONG_TEXT])
    assert len(first) == len(CANDIDATES) + 1 and all(isinstance(s, float) for s in first)
    assert metric.score(CANDIDATES + [LONG_TEXT], REFERENCES + [LONG_TEXT]) == pytest.approx(first, abs=1e-6)
    assert metric.score(CANDIDATES[1:2], REFERENCES[1:2]) == pytest.approx(first[1:2], abs=1e-5)  # batching aside
    assert metric.score([], []) == []


@pytest.mark.parametrize("name", ["sbert", "bertscore"])
def test_cosine_metrics_score_identical_text_highest_and_blank_text_zero(metrics, name):
    scores = metrics[name].score(CANDIDATES, REFERENCES)
    assert scores[0] == pytest.approx(1.0, abs=1e-5)
    assert scores[1] < scores[0] and scores[4] < scores[0]
    assert scores[2:4] == [0.0, 0.0]


@pytest.mark.parametrize(("name", "weights_dir"), [("sbert", "tiny-sbert"), ("bertscore", "tiny-roberta"),
                                                   ("bleurt", "tiny-bleurt")])
def test_parameters_name_the_weights_and_are_json(metrics, name, weights_dir):
    parameters = metrics[name].parameters()
    json.dumps(parameters)
    assert Path(parameters["weights"]).name.startswith(weights_dir)
    assert metrics[name].version().endswith(";scoring=1") and "torch==" in metrics[name].version()


def test_bertscore_rescales_with_the_shipped_baseline(tiny_roberta: Path):
    rescaled = BertScore(model_path=str(tiny_roberta), model_type="roberta-large", num_layers=2, device="cpu")
    raw = BertScore(model_path=str(tiny_roberta), num_layers=2, rescale=False, device="cpu")
    assert rescaled.parameters()["baseline"] == "en/roberta-large.tsv" and rescaled.parameters()["num_layers"] == 2
    assert raw.parameters()["rescale"] is False and raw.parameters()["baseline"] is None
    pairs = (CANDIDATES[1:2] + CANDIDATES[4:], REFERENCES[1:2] + REFERENCES[4:])
    assert all(r < u for r, u in zip(rescaled.score(*pairs), raw.score(*pairs)))  # rescaling subtracts a baseline > 0


def test_bertscore_defaults_are_the_papers():
    parameters = BertScore().parameters()
    assert parameters["model"] == "roberta-large" and parameters["num_layers"] == 17
    assert parameters["rescale"] is True and parameters["idf"] is False and parameters["measure"] == "F1"


def test_bertscore_on_unnamed_local_weights_needs_a_layer_and_a_baseline_choice(tiny_roberta: Path):
    no_layer = BertScore(model_path=str(tiny_roberta), rescale=False, device="cpu")
    assert "no default layer" in no_layer.unavailable() and "num_layers" in no_layer.unavailable()
    no_baseline = BertScore(model_path=str(tiny_roberta), num_layers=2, device="cpu")
    assert "no rescale baseline" in no_baseline.unavailable() and "rescale to false" in no_baseline.unavailable()
    with pytest.raises(MetricUnavailable, match="no rescale baseline"):
        no_baseline.score(["a"], ["b"])


@pytest.mark.parametrize("metric_class", [SbertCosine, BertScore, Bleurt], ids=lambda c: c.name)
def test_missing_weights_make_the_metric_unavailable(metric_class, tmp_path: Path):
    metric = metric_class(model_path=str(tmp_path / "absent"), device="cpu")
    reason = metric.unavailable()
    assert reason.startswith(f"{metric.name}: no weights at {tmp_path / 'absent'}")
    assert f"evaluation.metrics.{metric.name}.model_path" in reason
    assert metric.parameters()["weights"] is None
    with pytest.raises(MetricUnavailable, match="no weights at"):
        metric.score(["a"], ["b"])


@pytest.mark.parametrize("metric_class", [SbertCosine, BertScore], ids=lambda c: c.name)
def test_a_default_model_absent_from_the_cache_is_named(metric_class, tmp_path: Path):
    metric = metric_class(cache_dir=str(tmp_path), device="cpu")
    assert f"{metric.model_source!r} is neither a local path nor a model in the Hugging Face cache" in (
        metric.unavailable()
    )


def test_bleurt_has_no_default_and_refuses_checkpoints_transformers_cannot_load(tmp_path: Path, tiny_bert: Path):
    assert "no weights configured (set evaluation.metrics.bleurt.model_path" in Bleurt().unavailable()
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bleurt"}), encoding="utf-8")
    reason = Bleurt(model_path=str(tmp_path)).unavailable()
    assert "model_type 'bleurt'" in reason and "cannot load as a sequence classifier" in reason
    assert "has 2 labels" in Bleurt(model_path=str(tiny_bert)).unavailable()  # a BertModel config: 2 labels


def test_a_failed_load_makes_the_metric_unavailable(tmp_path: Path, tiny_sbert: Path):
    broken = tmp_path / "broken"
    shutil.copytree(tiny_sbert, broken)
    (broken / "model.safetensors").write_bytes(b"truncated")
    metric = SbertCosine(model_path=str(broken), device="cpu")
    with pytest.raises(MetricUnavailable, match="could not load"):
        metric.score(["a"], ["b"])
    assert metric.unavailable().startswith(f"sbert: could not load {broken}")


def test_a_gpu_that_is_not_there_makes_the_metric_unavailable(tiny_sbert: Path):
    assert "device 'cuda:63' requested" in SbertCosine(model_path=str(tiny_sbert), device="cuda:63").unavailable()


@pytest.mark.parametrize("settings", [{"device": "gpu"}, {"batch_size": 0}, {"batch_size": True}])
def test_bad_settings_fail_at_construction(settings):
    with pytest.raises(ValueError, match="sbert: "):
        SbertCosine(**settings)


# the pairs with no blank side, as (candidates, references)
SCORED = tuple(list(side) for side in zip(*[(c, r) for c, r in zip(CANDIDATES, REFERENCES) if c.strip() and r.strip()]))


def test_sbert_is_the_cosine_of_sentence_transformers_embeddings(tiny_sbert: Path):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(tiny_sbert), device="cpu")
    cands, refs = (model.encode(side, normalize_embeddings=True) for side in SCORED)
    expected = (cands * refs).sum(axis=1)
    assert SbertCosine(model_path=str(tiny_sbert), device="cpu").score(*SCORED) == pytest.approx(expected, abs=1e-6)


def test_bertscore_is_bert_scores_f1(tiny_roberta: Path):
    import bert_score

    baseline = Path(bert_score.__file__).parent / "rescale_baseline" / "en" / "roberta-large.tsv"
    _, _, expected = bert_score.score(SCORED[0], SCORED[1], model_type=str(tiny_roberta), num_layers=2, lang="en",
                                      rescale_with_baseline=True, baseline_path=str(baseline), device="cpu")
    metric = BertScore(model_path=str(tiny_roberta), model_type="roberta-large", num_layers=2, device="cpu")
    assert metric.score(*SCORED) == pytest.approx(expected.tolist(), abs=1e-6)


def test_bleurt_is_the_checkpoints_logit_on_reference_then_candidate(tiny_bleurt: Path):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bleurt)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_bleurt).eval()
    with torch.inference_mode():
        expected = [model(**tokenizer(ref, cand, return_tensors="pt")).logits[0, 0].item()
                    for cand, ref in zip(*SCORED)]
    metric = Bleurt(model_path=str(tiny_bleurt), device="cpu")
    assert metric.score(*SCORED) == pytest.approx(expected, abs=1e-5)
    assert metric.score(SCORED[1], SCORED[0]) != pytest.approx(expected, abs=1e-5)  # the order is BLEURT's
