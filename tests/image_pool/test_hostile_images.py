"""Hostile image files through the real image-pool job: every case gets exactly one outcome with the expected reason,
the good images around them are kept, and a second run does no work and adds no rows."""

from tests.support.pool_harness import run_pool, snapshot, step_summaries, warehouse_for, write_config
from tests.image_pool.test_resume import WITHOUT_CLIP
from tests.support.hostile.images import KEPT, write_folder_cases, write_image_cases, write_manifest

POOL_STAGES = ("source", "fetch", "decode", "filter", "dedup")


def _outcomes(wh) -> dict[str, list[str]]:
    """Every record's outcomes, by title: its rejection rows (``stage:reason``) and ``kept`` when it is in the pool."""
    outcomes: dict[str, list[str]] = {}
    for title, stage, reason in wh.query(
        "SELECT r.title, x.stage, x.reason_code FROM pool_exclusions x JOIN source_record r USING (record_id)"
    ).itertuples(index=False):
        outcomes.setdefault(title, []).append(f"{stage}:{reason}")
    for (title,) in wh.query("SELECT title FROM pool_images").itertuples(index=False):
        outcomes.setdefault(title, []).append(KEPT)
    return outcomes


def test_every_hostile_image_gets_one_outcome_and_a_rerun_adds_nothing(tmp_path):
    cases = write_image_cases(tmp_path / "cases")
    manifest = write_manifest(tmp_path / "cases.jsonl", tmp_path / "cases", cases)
    folder_cases = write_folder_cases(tmp_path / "inbox")
    config = write_config(tmp_path / "cfg", {
        "manifests": [str(manifest)],
        "folders": [{"path": str(tmp_path / "inbox"), "provider": "hostile", "license": "CC0-1.0", "domain": "photography"}],
        # the cases' pixels are random noise, which the low-quality rules rightly call noisy: this test is about
        # what each container and path gives, so those rules are off here (tests/image_pool/test_clarity_filter.py)
        "filters": {"min_side": 32, "clarity": {"domains": []}},
    })
    first = run_pool(config, WITHOUT_CLIP)
    assert first.success, [str(e.event_specific_data.error) for e in first.all_events if e.is_step_failure]
    wh = warehouse_for(config)

    expected = {c.name: [c.expected] for c in cases}
    expected |= {c.filename.rsplit("/", 1)[-1].rsplit(".", 1)[0]: [c.expected] for c in folder_cases}  # folder titles are stems
    assert _outcomes(wh) == expected
    assert wh.scalar("SELECT count(*) FROM rejection WHERE reason_code = 'internal_error'") == 0
    assert all(stage in POOL_STAGES for stage in wh.query("SELECT DISTINCT stage FROM rejection")["stage"])

    details = dict(wh.query("SELECT r.title, x.detail FROM pool_exclusions x JOIN source_record r USING (record_id)")
                   .itertuples(index=False))
    assert "max_pixels = 100000000" in details["bomb_from_header"] and "100000x100000" in details["bomb_from_header"]
    assert details["svg"].endswith("SVG (vector) image, which is not decoded")
    assert "(1 px" not in details["one_by_one"] and "1x1" in details["one_by_one"]
    frames = dict(wh.query(
        "SELECT r.title, d.frame_count FROM file_decode d JOIN record_file f ON f.file_sha256 = d.file_sha256"
        " JOIN source_record r USING (record_id) WHERE d.image_id IS NOT NULL").itertuples(index=False))
    assert {c.name: frames[c.name] for c in cases if c.frames} == {c.name: c.frames for c in cases if c.frames}
    assert frames["good_png"] == 1
    assert wh.scalar("SELECT count(*) FROM file_decode WHERE image_id IS NOT NULL AND frame_used <> 0") == 0

    before = snapshot(wh)
    second = run_pool(config, WITHOUT_CLIP)
    assert second.success and snapshot(wh) == before
    summaries = step_summaries(wh, second.run_id)
    assert summaries["normalized_images"]["files_pending"] == 0
    assert summaries["pool_candidates"]["records_pending"] == 0
