"""Fault isolation in the photocritique stages, for real: an exception injected into the per-item function of
``reddit_post_images`` for one post becomes that post's ``internal_error``; the step and the job succeed, the
other posts are done, an unchanged re-run does not try the post again, and a changed post is tried again."""

import json
from pathlib import Path

import zstandard

import assets.photocritique.post_images as post_images
from assets.photocritique.post_images import candidate_entity
from sample.reddit_fixture import build_fixture
from tests.support.pool_harness import step_summaries, write_config
from tests.photocritique.test_assets import _photocritique_section, _run, outcome
from warehouse.db import Warehouse


def test_an_exception_on_one_post_is_quarantined_and_retried_only_when_the_post_changes(
    tmp_path: Path, archive: Path, expected: dict, monkeypatch
) -> None:
    victim = sorted(expected["kept"])[0]
    real = post_images.resolve_images
    calls: list[str] = []

    def resolve(post, gallery_items=1):
        calls.append(post.post_id)
        if post.post_id == victim:
            raise RuntimeError(f"injected failure for {post.post_id}")
        return real(post, gallery_items)

    dumps = [str(archive / "dumps" / "monthly"), str(archive / "dumps" / "subreddit")]
    pool = {"filters": {"license_allowlist": ["reddit-user-content"]}}
    config = write_config(tmp_path, pool, photocritique=_photocritique_section(archive, expected, dumps=dumps))
    wh = Warehouse(tmp_path / "warehouse.duckdb")

    monkeypatch.setattr(post_images, "resolve_images", resolve)
    first = _run(config)
    assert first.success, [e.message for e in first.all_events if e.is_failure]
    [(entity, detail)] = wh.query("SELECT entity_id, detail FROM rejection WHERE reason_code = 'internal_error'").itertuples(index=False)
    assert entity == candidate_entity(victim)
    assert detail.startswith(f"{victim}: RuntimeError: injected failure for {victim}")
    assert "photocritique.test_item_loop.resolve" in detail and "traceback " in detail
    assert wh.scalar("SELECT stage FROM item_quarantine") == "reddit_post_images"
    got = outcome(wh)
    assert got["kept"] == {k: v for k, v in expected["kept"].items() if k != victim}  # the others are done
    assert wh.scalar("SELECT count(*) FROM reddit_image_resolution") == len(calls) - 1

    calls.clear()
    second = _run(config)
    assert second.success and calls == []  # not tried again while neither the post nor the code changed
    assert step_summaries(wh, second.run_id)["reddit_post_images"]["quarantined"] == 1

    # A newer copy of the post with another score is a changed input: the post is tried again.
    latest = next(p for p in build_fixture().posts if p["id"] == victim)
    newer = {**latest, "score": latest["score"] + 1, "retrieved_on": latest["retrieved_on"] + 3600}
    extra = tmp_path / "rescan"
    extra.mkdir()
    (extra / "RS_2019-05.zst").write_bytes(zstandard.ZstdCompressor().compress(json.dumps(newer).encode() + b"\n"))
    write_config(tmp_path, pool, photocritique=_photocritique_section(archive, expected, dumps=[*dumps, str(extra)]))
    monkeypatch.setattr(post_images, "resolve_images", real)
    third = _run(config)
    assert third.success
    assert wh.scalar("SELECT count(*) FROM item_quarantine") == 0
    assert wh.scalar("SELECT count(*) FROM rejection WHERE reason_code = 'internal_error'") == 0
    assert outcome(wh)["kept"] == expected["kept"]
