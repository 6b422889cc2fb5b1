"""The whole image-pool job on the bundled sample corpus, materialized for real, twice."""

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from sample.make_corpus import build_corpus
from tests.support.pool_harness import run_pool, snapshot, step_summaries, warehouse_for, write_config
from warehouse.db import Warehouse


@dataclass
class SampleRuns:
    corpus: Path
    expected: dict
    wh: Warehouse
    first_run: str
    second_run: str
    before_rerun: dict
    after_rerun: dict


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory) -> SampleRuns:
    root = tmp_path_factory.mktemp("sample_pool")
    corpus = root / "sample"
    expected = build_corpus(corpus)
    config = write_config(
        root / "cfg",
        {
            "manifests": [str(corpus / name) for name in expected["manifests"]],
            "folders": [{"path": str(corpus / "inbox"), "provider": "test inbox", "license": "CC0-1.0", "redistribution": "allowed"}],
            "filters": {"license_allowlist": list(expected["allowed_licenses"])},
        },
    )
    first = run_pool(config)
    assert first.success
    wh = warehouse_for(config)
    before = snapshot(wh)
    second = run_pool(config)
    assert second.success
    return SampleRuns(corpus, expected, wh, first.run_id, second.run_id, before, snapshot(wh))


def _record_ids(runs: SampleRuns, relative: str) -> list[str]:
    locator = runs.wh.name_of(runs.corpus / relative)  # as the warehouse names it: relative to the config's folder
    return runs.wh.query("SELECT record_id FROM source_record WHERE locator = ?", [locator])["record_id"].tolist()


def test_every_planted_duplicate_is_dropped_with_cluster_method_and_distance(sample_runs):
    members = sample_runs.wh.query("SELECT * FROM pool_member").set_index("record_id")
    for planted in sample_runs.expected["duplicates"]:
        (copy,) = _record_ids(sample_runs, planted["copy"])
        (original,) = _record_ids(sample_runs, planted["original"])
        pair = members.loc[[copy, original]]
        assert pair.cluster_id.nunique() == 1, planted
        assert pair.is_representative.sum() == 1, planted
        dropped = pair[~pair.is_representative].iloc[0]
        assert dropped.match_method and dropped.match_distance is not None and dropped.matched_image_id
        if planted["transformation"] == "exact":
            assert dropped.match_method == "exact_bytes" and dropped.match_distance == 0
        else:
            assert dropped.match_method.startswith("perceptual:")
            assert pair.loc[original].is_representative, planted  # the best copy is the original
            assert pair.loc[original].representative_reason, planted
    drops = sample_runs.wh.query("SELECT * FROM duplicate_drops")
    assert len(drops) == len(sample_runs.expected["duplicates"])  # nothing else merged
    reasons = sample_runs.wh.query("SELECT detail FROM rejection WHERE stage = 'dedup'")["detail"]
    assert len(reasons) == len(drops) and reasons.str.contains("cluster:").all()
    links = sample_runs.wh.query("SELECT * FROM duplicate_link")
    assert set(links.decision) <= {"linked", "inside"} and not links.empty  # no look-alike was refused or merged
    assert len(links) >= sample_runs.wh.scalar("SELECT count(*) FROM duplicate_match")


def test_every_bad_file_is_rejected_with_its_reason_and_nothing_is_lost(sample_runs):
    exclusions = sample_runs.wh.query("SELECT locator, stage, reason_code FROM pool_exclusions WHERE stage <> 'dedup'")
    got = {sample_runs.wh.path_of(row.locator).relative_to(sample_runs.corpus.resolve()).as_posix(): row.reason_code
           for row in exclusions.itertuples()}
    want = {item["locator"]: item["kind"] for item in sample_runs.expected["rejections"]}
    assert got == want  # a latin-1 row is known by its line (additions.csv#line=3), the rest by their file
    assert {"bad_encoding", "duplicate_id", "too_small"} <= set(want.values())
    # every record is accounted for: kept, dropped as duplicate, or excluded with a reason
    n_records = sample_runs.wh.scalar("SELECT count(*) FROM source_record")
    n_members = sample_runs.wh.scalar("SELECT count(*) FROM pool_member")
    n_inputs = sum(sample_runs.expected["counts"]["manifest_rows"].values()) + len(sample_runs.expected["inbox"])
    assert n_records == n_members + len(want) == n_inputs


def test_kept_images_cover_three_domains_and_exif_is_applied(sample_runs):
    kept = sample_runs.wh.query("SELECT * FROM pool_images")
    assert set(kept.domain) == {"photography", "painting", "virtual"}
    (exif,) = sample_runs.expected["exif_orientation"]
    (record,) = _record_ids(sample_runs, exif["locator"])
    size = sample_runs.wh.query(
        "SELECT i.width, i.height, d.exif_orientation FROM record_file f JOIN file_decode d USING (file_sha256)"
        " JOIN image i USING (image_id) WHERE f.record_id = ?",
        [record],
    ).iloc[0]
    assert [size.width, size.height] == exif["upright_size"] and size.exif_orientation == exif["orientation"]


def test_provenance_returns_the_full_chain_for_every_kept_image(sample_runs):
    kept = sample_runs.wh.query("SELECT pool_item_id, record_id, source_url, license FROM pool_images")
    for item in kept.itertuples():
        chain = sample_runs.wh.query("SELECT * FROM provenance(?)", [item.pool_item_id])
        kinds = set(chain.entity_kind)
        assert {"pool_item", "image", "file", "source_record"} <= kinds and kinds & {"input_file", "source_folder"}
        source = chain[chain.entity_id == item.record_id].iloc[0]
        assert (source.source_url, source.license) == (item.source_url, item.license)
        generated = chain[chain.link == "generated"]
        assert set(generated.asset_key) >= {"source_records", "fetched_files", "normalized_images", "image_pool"}
        assert (generated.run_id == sample_runs.first_run).all() and generated.code_version.str.contains("aesforge").all()
        assert set(chain[chain.link.str.startswith("used")].asset_key) >= {"pool_candidates", "perceptual_duplicates"}


def test_rerun_adds_no_rows_and_does_no_work(sample_runs):
    assert sample_runs.after_rerun == sample_runs.before_rerun
    steps = step_summaries(sample_runs.wh, sample_runs.second_run)
    assert steps["source_records"] == {"manifests_unchanged": 2, "folder_files_unchanged": 6}
    assert steps["fetched_files"]["locators_pending"] == 0
    assert steps["normalized_images"]["files_pending"] == 0
    assert steps["pool_candidates"]["records_pending"] == 0
    assert "images_scanned" not in steps["perceptual_duplicates"]
    assert "unchanged" in steps["image_pool"]
    statuses = sample_runs.wh.query("SELECT DISTINCT status FROM activity")["status"].tolist()
    assert statuses == ["success"]


def test_quality_checks_passed_and_were_stored(sample_runs):
    results = sample_runs.wh.query("SELECT check_name, passed FROM check_result WHERE run_id = ?", [sample_runs.first_run])
    assert len(results) >= 10 and results.passed.all()
    assert {"one_kept_per_duplicate_cluster", "license_not_null", "domain_allowed"} <= set(results.check_name)


def test_clip_pass_reports_that_it_did_not_run(sample_runs):
    summary = step_summaries(sample_runs.wh, sample_runs.first_run)["clip_duplicates"]
    assert summary["clip_pass"] == "not run" and "pretrained" in summary["reason"]
    assert sample_runs.wh.scalar("SELECT count(*) FROM clip_embedding") == 0
    assert json.loads(sample_runs.wh.scalar("SELECT parameters FROM activity WHERE asset_key = 'clip_duplicates' LIMIT 1"))["threshold"] == 0.95
