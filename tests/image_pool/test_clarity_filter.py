"""The low-quality filter through real pool materializations: a blurred and a noised photograph are rejected
with their measured values, a flat painting is not judged until its domain is, and a changed rule re-judges."""

import numpy as np
from PIL import ImageFilter

from assets.image_pool import normalization
from sample import synth
from tests.support.pool_harness import run_pool, step_summaries, warehouse_for, write_config

STAGES = ["source_records", "fetched_files", "normalized_images", "pool_candidates"]


def _folders(tmp_path):
    photos, paintings = tmp_path / "photos", tmp_path / "paintings"
    photos.mkdir()
    paintings.mkdir()
    for seed in range(3):
        synth.render_photo(seed, (640, 480)).save(photos / f"sharp{seed}.png")
    synth.render_photo(10, (640, 480)).filter(ImageFilter.GaussianBlur(10)).save(photos / "blurred.png")
    noised = np.asarray(synth.render_photo(11, (640, 480)), dtype=np.float32)
    noised += np.random.default_rng(0).normal(0, 30, noised.shape)
    synth.Image.fromarray(np.clip(noised, 0, 255).astype(np.uint8)).save(photos / "noised.png")
    synth.render_painting(12, (640, 480)).filter(ImageFilter.GaussianBlur(10)).save(paintings / "soft.png")
    return [{"path": str(photos), "license": "CC0-1.0", "domain": "photography"},
            {"path": str(paintings), "license": "CC0-1.0", "domain": "painting"}]


def _decisions(config):
    rows = warehouse_for(config).query(
        "SELECT r.title, c.eligible, j.reason_code, j.detail FROM pool_candidate c JOIN source_record r USING (record_id)"
        " LEFT JOIN rejection j ON j.entity_id = c.record_id AND j.stage = 'filter' ORDER BY r.title")
    return {row.title: (bool(row.eligible), row.reason_code, row.detail) for row in rows.itertuples(index=False)}


def test_blurred_and_noised_photographs_are_rejected_with_their_measures_and_domains_switch_the_rules(tmp_path, monkeypatch):
    folders = _folders(tmp_path)
    config = write_config(tmp_path / "cfg", {"folders": folders})
    monkeypatch.setattr(normalization, "WORKER_PROCESSES_FROM", 1)  # decoded and measured in worker processes
    result = run_pool(config, STAGES)
    assert result.success
    assert step_summaries(warehouse_for(config), result.run_id)["normalized_images"]["decode_processes"] >= 1
    decided = _decisions(config)
    assert {name for name, (eligible, _, _) in decided.items() if eligible} == {"sharp0", "sharp1", "sharp2", "soft"}
    assert decided["blurred"][1] == "blurred" and decided["blurred"][2].startswith("sharpness 0.0")
    assert decided["noised"][1] == "noisy" and "above max_noise_sigma 9.0" in decided["noised"][2]
    measured = warehouse_for(config).query("SELECT count(*) AS n FROM file_decode WHERE sharpness IS NOT NULL"
                                           " AND noise_sigma IS NOT NULL AND shadows_crushed IS NOT NULL").n[0]
    assert measured == 6

    judged = write_config(tmp_path / "cfg", {"folders": folders,
                                             "filters": {"clarity": {"domains": ["photography", "painting"]}}})
    assert run_pool(judged, STAGES).success
    assert _decisions(judged)["soft"][:2] == (False, "blurred")

    lenient = write_config(tmp_path / "cfg", {"folders": folders, "filters": {"clarity": {"min_sharpness": None,
                                                                                         "max_noise_sigma": None}}})
    assert run_pool(lenient, STAGES).success
    assert all(eligible for eligible, _, _ in _decisions(lenient).values())
