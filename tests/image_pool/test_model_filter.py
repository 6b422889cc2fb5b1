"""Model-based pool filters through real materializations: heads built here over the pool's own (random-init) CLIP
embeddings reject exactly the images they score outside the band, with the score; the pool leaves them out; a
changed or removed filter re-judges; and with no filter or no CLIP weights the stage says it did not run."""

import numpy as np
import pytest
import torch

from assets.image_pool.model_filter import scored_items
from assets.image_pool.report import report
from resources.score_heads import ScoreHead
from sample import synth
from tests.support.pool_harness import run_pool, step_summaries, warehouse_for, write_config

CLIP = {"model_name": "ViT-S-32", "allow_random_init": True, "batch_size": 4, "device": "cpu", "decode_workers": 0}
NO_PERCEPTUAL = {"phash_radius": 0, "dhash_radius": 0, "mirror_radius": 0, "window_radius": 0, "rotation_radius": 0,
                 "min_correlation": 1.01, "min_texture_correlation": 1.01}
STAGES = ["source_records", "fetched_files", "normalized_images", "pool_candidates", "clip_duplicates",
          "model_filter_verdicts", "image_pool"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    for i in range(6):
        synth.render_painting(200 + i, (320, 256)).save(folder / f"p{i}.png")
    return folder


def _config(tmp_path, folder, model_filters=None, clip=CLIP):
    pool = {"folders": [{"path": str(folder), "provider": "t", "license": "CC0-1.0", "domain": "painting"}],
            "dedup": {"clip_threshold": 0.9999, "perceptual": NO_PERCEPTUAL}}
    if model_filters is not None:
        pool["model_filters"] = model_filters
    return write_config(tmp_path / "cfg", pool, clip=clip)


def _embedding(wh, title):
    return np.array(wh.query("SELECT e.embedding FROM clip_embedding e JOIN pool_candidate c USING (image_id)"
                             " JOIN source_record r USING (record_id) WHERE r.title = ?", [title]).embedding[0], np.float32)


def _similarity_head(path, direction, fmt):
    """A head whose score is the cosine similarity to one image's embedding (times ``direction``)."""
    layer = torch.nn.Linear(len(direction), 1)
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(direction)[None])
        layer.bias.zero_()
    if fmt == "linear_chain":
        torch.save(layer.state_dict(), path)
    else:
        torch.jit.save(torch.jit.script(layer), path)
    return str(path)


def _failure(result) -> str:
    """The failed step's error messages, the cause chain included."""
    error = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error
    messages = []
    while error is not None:
        messages.append(error.message)
        error = error.cause
    return "\n".join(messages)


def _state(wh):
    verdicts = wh.query("SELECT r.title, v.filter_name, v.passed, v.score FROM model_filter_verdict v"
                        " JOIN source_record r USING (record_id) ORDER BY ALL")
    rejections = wh.query("SELECT r.title, j.stage, j.reason_code, j.detail FROM rejection j"
                          " JOIN source_record r ON r.record_id = j.entity_id WHERE j.stage LIKE 'model_filter%' ORDER BY ALL")
    pool = set(wh.query("SELECT r.title FROM pool_member m JOIN source_record r USING (record_id)").title)
    return verdicts, rejections, pool


def test_heads_reject_the_images_they_score_outside_the_band_and_the_pool_leaves_them_out(tmp_path, folder):
    config = _config(tmp_path, folder)
    result = run_pool(config, STAGES)
    assert result.success
    wh = warehouse_for(config)
    summary = step_summaries(wh, result.run_id)["model_filter_verdicts"]
    assert summary == {"model_filters": "not run", "reason": "no model filter is configured (pool.model_filters)"}
    assert len(_state(wh)[2]) == 6

    unsafe, plain = _embedding(wh, "p1"), _embedding(wh, "p4")
    filters = [
        {"name": "safety", "weights": _similarity_head(tmp_path / "safety.pt", unsafe, "torchscript"), "format": "torchscript",
         "reject_above": 0.999, "reason": "unsafe_content"},
        {"name": "aesthetic", "weights": _similarity_head(tmp_path / "aesthetic.pth", -plain, "linear_chain"),
         "format": "linear_chain", "reject_below": -0.999, "reason": "low_aesthetic_score"},
    ]
    config = _config(tmp_path, folder, filters)
    result = run_pool(config, STAGES)
    assert result.success
    verdicts, rejections, pool = _state(wh)
    assert len(verdicts) == 12 and verdicts.score.notna().all()
    assert sorted(verdicts[~verdicts.passed].title + "/" + verdicts[~verdicts.passed].filter_name) == ["p1/safety", "p4/aesthetic"]
    assert list(rejections.title) == ["p1", "p4"]
    assert list(rejections.stage) == ["model_filter:safety", "model_filter:aesthetic"]
    assert list(rejections.reason_code) == ["unsafe_content", "low_aesthetic_score"]
    assert rejections.detail[0].startswith("safety score 1.0000 above 0.999 (head sha256:")
    assert rejections.detail[1].startswith("aesthetic score -1.0000 below -0.999 (head sha256:")
    assert "embeddings ViT-S-32@random-init(seed=0)" in rejections.detail[0]
    assert pool == {"p0", "p2", "p3", "p5"}
    exclusions = wh.query("SELECT stage, reason_code FROM pool_exclusions WHERE stage LIKE 'model_filter%' ORDER BY ALL")
    assert len(exclusions) == 2
    counts = dict(wh.query("SELECT stage, n FROM pool_stage_counts").itertuples(index=False))
    assert counts["rejected by a model filter"] == 2 and counts["kept"] == 4
    agents = set(wh.query("SELECT agent_id FROM was_associated_with w JOIN activity a USING (activity_id)"
                          " WHERE a.asset_key = 'model_filter_verdicts' AND a.run_id = ?", [result.run_id]).agent_id)
    assert {a.split("@")[0] for a in agents if a.startswith("model:")} == {"model:score_head/safety", "model:score_head/aesthetic"}
    summary = step_summaries(wh, result.run_id)["model_filter_verdicts"]
    assert summary["model_filters"] == "ran" and set(summary["heads"]) == {"safety", "aesthetic"}
    assert summary["safety:passed"] == 5 and summary["rejected:unsafe_content"] == 1
    assert summary["aesthetic:passed"] == 5 and summary["rejected:low_aesthetic_score"] == 1

    # Unchanged: nothing is judged again.
    result = run_pool(config, STAGES)
    summary = step_summaries(wh, result.run_id)["model_filter_verdicts"]
    assert summary["model_filters"] == "ran" and not [k for k in summary if ":" in k]

    # A looser safety bound re-judges under the new rule; dropping the aesthetic filter withdraws its verdicts.
    filters[0]["reject_above"] = 1.5
    config = _config(tmp_path, folder, filters[:1])
    assert run_pool(config, STAGES).success
    verdicts, rejections, pool = _state(wh)
    assert len(verdicts) == 6 and verdicts.passed.all() and set(verdicts.filter_name) == {"safety"}
    assert rejections.empty and len(pool) == 6


def test_a_head_for_another_embedding_size_fails_the_step_in_one_line(tmp_path, folder):
    head = _similarity_head(tmp_path / "wide.pt", np.ones(768, np.float32), "torchscript")
    config = _config(tmp_path, folder, [{"name": "aesthetic", "weights": head, "format": "torchscript",
                                         "reject_below": 0.0, "reason": "low_aesthetic_score"}])
    result = run_pool(config, STAGES)
    assert not result.success
    assert "pool.model_filters[0] (aesthetic): wide.pt does not take embeddings of 384 values: RuntimeError: mat1" in _failure(result)


def test_without_clip_weights_the_filters_are_reported_not_run_unless_required(tmp_path, folder):
    head = _similarity_head(tmp_path / "head.pt", np.ones(384, np.float32), "torchscript")
    spec = {"name": "safety", "weights": head, "format": "torchscript", "reject_above": 0.5, "reason": "unsafe_content"}
    config = _config(tmp_path, folder, [spec], clip={})
    result = run_pool(config, STAGES)
    assert result.success
    notes = step_summaries(warehouse_for(config), result.run_id)["model_filter_verdicts"]
    assert notes["model_filters"] == "not run" and "no CLIP weights are configured" in notes["reason"]
    assert len(_state(warehouse_for(config))[2]) == 6
    title, sql = [part for part in report(warehouse_for(config), {}) if "did not run" in part[0]][0]
    reasons = dict(warehouse_for(config).query(sql).itertuples(index=False))
    assert set(reasons) == {"clip_duplicates", "model_filter_verdicts"}
    assert reasons["model_filter_verdicts"].startswith("the filters read CLIP embeddings: no CLIP weights are configured")

    config = _config(tmp_path, folder, [{**spec, "required": True}], clip={})
    result = run_pool(config, STAGES)
    assert not result.success
    assert "model filter 'safety' is required but cannot run: no CLIP weights are configured" in _failure(result)


def test_scored_items_give_each_record_its_score_none_without_embedding_and_a_failing_page_its_fault():
    head = ScoreHead("0" * 64, "test", 2, forward=lambda block: block[:, 0] - block[:, 1])
    page = [("r1", "i1", "a.png", [3.0, 1.0]), ("r2", "i2", "b.png", None), ("r3", "i3", "c.png", [0.0, 0.5])]
    items = list(scored_items(iter([page]), head))
    assert [(i.key, i.locator, i.payload) for i in items] == [("r1", "a.png", ("i1", 2.0)), ("r2", "b.png", ("i2", None)),
                                                              ("r3", "c.png", ("i3", -0.5))]

    def broken(block):
        raise FloatingPointError("head overflowed")

    items = list(scored_items(iter([page]), ScoreHead("0" * 64, "test", 2, forward=broken)))
    assert isinstance(items[0].payload[1], FloatingPointError) and items[1].payload == ("i2", None)
