"""Crash mid-run, resume, S3 blobs and the CLIP pass, each through real materializations."""

import boto3
import pytest

from assets.image_pool import normalization
from assets.image_pool.logic.images import measure_file
from assets.image_pool.normalization import normalize_file
from resources.blob_store import LocalBlobStore
from sample import synth
from tests.support.pool_harness import run_pool, snapshot, step_summaries, warehouse_for, write_config


@pytest.fixture
def small_folder(tmp_path):
    folder = tmp_path / "images"
    folder.mkdir()
    for i in range(10):
        synth.render_painting(100 + i, (320, 256)).save(folder / f"p{i:02d}.png")
    synth.resized(synth.render_painting(100, (320, 256)), 0.8).save(folder / "p00_small.png")
    return folder


def _folder_config(tmp_path, folder, dedup=None, **sections):
    pool = {"folders": [{"path": str(folder), "provider": "t", "license": "CC0-1.0", "domain": "painting"}], "batch_size": 3}
    return write_config(tmp_path / "cfg", {**pool, "dedup": dedup or {}}, **sections)


# The pool's stages but CLIP, for tests about the others (unconfigured CLIP still costs a torch import per run).
WITHOUT_CLIP = ["source_records", "fetched_files", "normalized_images", "pool_candidates", "perceptual_duplicates", "image_pool"]


def _blob_shas(config) -> list[str]:
    return warehouse_for(config).query("SELECT sha256 FROM file_blob ORDER BY sha256")["sha256"].tolist()


def test_crash_mid_step_resumes_without_repeating_work_or_duplicating_rows(tmp_path, small_folder, monkeypatch):
    config = _folder_config(tmp_path, small_folder)
    assert run_pool(config, ["source_records", "fetched_files"]).success
    wh = warehouse_for(config)
    shas = _blob_shas(config)
    store = LocalBlobStore(tmp_path / "cfg" / "blobs")
    fatal = store.get_bytes(shas[7])  # batches of 3: the third batch dies, two are committed

    def out_of_memory(data, max_pixels):
        if data == fatal:
            raise MemoryError("decoding needs more memory than the machine has")  # a whole-step cause
        return measure_file(data, max_pixels)

    with monkeypatch.context() as patch:
        patch.setattr(normalization, "measure_file", out_of_memory)
        crashed = run_pool(config)
    assert not crashed.success
    assert wh.scalar("SELECT count(*) FROM file_decode") == 6
    assert wh.scalar("SELECT status FROM activity WHERE asset_key = 'normalized_images'") == "failed"
    assert wh.scalar("SELECT count(*) FROM item_quarantine") == 0

    resumed = run_pool(config)
    assert resumed.success
    summary = step_summaries(wh, resumed.run_id)["normalized_images"]
    assert summary["files_pending"] == len(shas) - 6  # finished batches were not decoded again
    decoded_by = wh.query("SELECT activity_id, count(*) AS n FROM file_decode GROUP BY ALL ORDER BY n")["n"].tolist()
    assert decoded_by == [len(shas) - 6, 6]
    assert wh.scalar("SELECT count(*) FROM file_decode") == len(shas)
    assert wh.scalar("SELECT count(*) FROM duplicate_drops") == 1
    before = snapshot(wh)
    assert run_pool(config).success and snapshot(wh) == before


def test_an_exception_on_one_file_is_internal_error_quarantined_until_its_content_changes(tmp_path, small_folder, monkeypatch):
    config = _folder_config(tmp_path, small_folder)
    assert run_pool(config, ["source_records", "fetched_files"]).success
    wh = warehouse_for(config)
    shas = _blob_shas(config)
    bad = wh.scalar("SELECT f.file_sha256 FROM record_file f JOIN source_record r USING (record_id) WHERE r.title = 'p03'")
    calls = []

    def flaky_decoder(store, item, max_pixels, cpu=None):
        calls.append(item.payload)
        if item.payload == bad:
            raise ValueError("injected: image (1, 1) is too small for a perceptual signature")
        return normalize_file(store, item, max_pixels, cpu)

    monkeypatch.setattr(normalization, "normalize_file", flaky_decoder)
    first = run_pool(config, WITHOUT_CLIP)
    assert first.success
    code, detail = wh.query("SELECT reason_code, detail FROM rejection WHERE entity_id = ?", [f"file:{bad}"]).iloc[0]
    assert code == "internal_error"
    assert "ValueError: injected" in detail and "p03.png" in detail and "flaky_decoder" in detail and "traceback " in detail
    assert wh.scalar("SELECT count(*) FROM file_decode") == len(shas) - 1  # every other file was decoded
    assert wh.scalar("SELECT count(*) FROM pool_images") == 9  # p03 is missing; p00_small is p00's duplicate
    assert step_summaries(wh, first.run_id)["normalized_images"]["rejected:internal_error"] == 1

    calls.clear()
    before = snapshot(wh)
    again = run_pool(config, WITHOUT_CLIP)
    assert again.success and bad not in calls and snapshot(wh) == before  # quarantined: not retried
    assert step_summaries(wh, again.run_id)["normalized_images"]["quarantined"] == 1

    synth.render_painting(303, (320, 256)).save(small_folder / "p03.png")  # the record's file now has other content
    changed = run_pool(config, WITHOUT_CLIP)
    assert changed.success
    new = wh.scalar("SELECT f.file_sha256 FROM record_file f JOIN source_record r USING (record_id)"
                    " WHERE r.title = 'p03' AND f.file_sha256 <> ?", [bad])
    assert new in calls and wh.scalar("SELECT image_id FROM file_decode WHERE file_sha256 = ?", [new]) is not None
    assert wh.scalar("SELECT count(*) FROM pool_images WHERE title = 'p03'") == 1


def test_a_blob_lost_from_the_store_is_retried_until_it_is_back(tmp_path, small_folder):
    config = _folder_config(tmp_path, small_folder)
    assert run_pool(config, ["source_records", "fetched_files"]).success
    wh = warehouse_for(config)
    shas = _blob_shas(config)
    hidden = LocalBlobStore(tmp_path / "cfg" / "blobs").path(shas[4])
    kept_aside = hidden.read_bytes()
    hidden.unlink()

    assert run_pool(config, WITHOUT_CLIP).success  # one lost file does not stop the others
    assert wh.scalar("SELECT count(*) FROM file_decode") == len(shas) - 1
    code, retryable = wh.query("SELECT reason_code, retryable FROM rejection WHERE entity_id = ?", [f"file:{shas[4]}"]).iloc[0]
    assert (code, bool(retryable)) == ("blob_missing", True)

    hidden.write_bytes(kept_aside)
    assert run_pool(config, WITHOUT_CLIP).success
    assert wh.scalar("SELECT count(*) FROM file_decode") == len(shas)
    assert wh.scalar("SELECT count(*) FROM rejection WHERE stage = 'decode'") == 0


def test_missing_source_fails_clearly_after_the_others_are_collected(tmp_path, small_folder):
    config = write_config(
        tmp_path / "cfg",
        {
            "manifests": [str(tmp_path / "typo.csv")],
            "folders": [{"path": str(small_folder), "provider": "t", "license": "CC0-1.0", "domain": "painting"}],
        },
    )
    result = run_pool(config)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key == "source_records" and "typo.csv" in str(failure.event_specific_data.error)
    wh = warehouse_for(config)
    assert wh.scalar("SELECT count(*) FROM source_record") == 11
    assert "typo.csv" in wh.scalar("SELECT summary FROM activity WHERE asset_key = 'source_records'")


def test_blob_store_on_s3(tmp_path, small_folder, s3_server):
    bucket = "aesforge-pool-test"
    boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name=s3_server.region_name).create_bucket(Bucket=bucket)
    config = _folder_config(
        tmp_path,
        small_folder,
        blob_store={"s3_bucket": bucket, "s3_prefix": "pool", "s3": {"endpoint_url": s3_server.endpoint_url, "region_name": s3_server.region_name}},
    )
    assert run_pool(config).success
    wh = warehouse_for(config)
    uris = wh.query("SELECT blob_uri FROM file_blob")["blob_uri"]  # the originals only: no decoded copy is stored
    assert uris.str.startswith("blob:").all()  # the same store-relative references as a local store's
    listed = boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name=s3_server.region_name).list_objects_v2(Bucket=bucket)
    assert {o["Key"] for o in listed["Contents"]} == {f"pool/{u[5:7]}/{u[5:]}" for u in uris}
    assert wh.blob_root is None  # the views have no local folder to show an S3 blob in
    assert not (tmp_path / "cfg" / "blobs").exists()


def test_clip_pass_at_random_init_clusters_exact_and_resized_copies(tmp_path, small_folder):
    # the perceptual stage is switched off here (radius 0, impossible correlation) so CLIP alone must find the copy
    no_perceptual = {"phash_radius": 0, "dhash_radius": 0, "mirror_radius": 0, "window_radius": 0, "rotation_radius": 0, "min_correlation": 1.01,
                     "min_texture_correlation": 1.01}
    config = _folder_config(
        tmp_path,
        small_folder,
        dedup={"clip_threshold": 0.97, "perceptual": no_perceptual},
        clip={"model_name": "ViT-S-32", "allow_random_init": True, "batch_size": 4, "device": "cpu"},
    )
    assert run_pool(config).success
    wh = warehouse_for(config)
    assert wh.scalar("SELECT count(*) FROM clip_embedding") == 11
    norms = wh.query("SELECT list_sum(list_transform(embedding, lambda x: x * x)) AS n FROM clip_embedding")["n"]
    assert ((norms - 1).abs() < 1e-4).all()
    drops = wh.query("SELECT locator, representative_locator, match_method FROM duplicate_drops")
    assert len(drops) == 1 and drops.match_method[0].startswith("clip:ViT-S-32@random-init")
    assert {drops.locator[0].rsplit("/", 1)[-1], drops.representative_locator[0].rsplit("/", 1)[-1]} == {"p00.png", "p00_small.png"}
    agents = wh.query("SELECT w.agent_id FROM was_associated_with w JOIN activity a USING (activity_id) WHERE a.asset_key = 'clip_duplicates'")
    assert agents.agent_id.str.startswith("model:open_clip/ViT-S-32").any()


def test_signatures_of_an_older_version_are_made_again_from_the_originals(tmp_path, small_folder):
    """A warehouse signed by an older signature version: the perceptual step re-signs every image from its original
    file before matching, so the stored rows equal a fresh run's and the planted copy is still found."""
    config = _folder_config(tmp_path, small_folder)
    assert run_pool(config, WITHOUT_CLIP).success
    wh = warehouse_for(config)
    fresh = wh.query("SELECT * EXCLUDE (activity_id) FROM image_signature ORDER BY image_id")
    with wh.transaction() as con:
        con.execute("UPDATE image_signature SET signature_version = signature_version - 1, phash = 0, dhash = 0")
        con.execute("DELETE FROM match_scan")
        con.execute("DELETE FROM duplicate_match")
    rerun = run_pool(config, WITHOUT_CLIP)
    assert rerun.success
    summary = step_summaries(wh, rerun.run_id)["perceptual_duplicates"]
    assert summary["signatures_outdated"] == len(fresh) and summary["signatures_remade"] == len(fresh)
    assert wh.query("SELECT * EXCLUDE (activity_id) FROM image_signature ORDER BY image_id").equals(fresh)
    assert wh.scalar("SELECT count(*) FROM duplicate_match") == 1  # p00 and its resized copy
    again = run_pool(config, WITHOUT_CLIP)
    assert "signatures_outdated" not in step_summaries(wh, again.run_id)["perceptual_duplicates"]
