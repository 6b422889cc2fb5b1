"""The cross-benchmark leakage guard and CritiqueCanvas's admission rule, on warehouses built by the real pipeline.

One module-scoped world: the synthetic r/photocritique archive (its post photos enter the pool as ``reddit``
records), one poem illustrated by a text-to-image model on the loopback server (a ``generated`` pool record), four
folder images; then the pool, the photocritique references, CritiqueCanvas through the offline heuristic (every
group in train) and the guard.

1. Admission: by default no photocritique photo and no generated illustration is critiqued, each left out with its
   reason; admitting the two source types critiques them; an unknown source type is a config error.
2. Headline: an exact copy and an upscaled near-copy of two photocritique photos, dropped into the pool folder, are
   critiqued into the train split; the blocking check fails naming both until the guard runs again, which excludes
   them (exact_duplicate, perceptual_duplicate) and lets the check pass.
3. The overlap view on planted rows for the datasets the world does not build (AesEval renders matched by bytes,
   ContextCanvas cases, poem stand-ins, CritiqueCanvas eval).
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from dagster import (AssetCheckKey, AssetKey, AssetSelection, DagsterInstance, Definitions, ExecuteInProcessResult,
                     define_asset_job)
from PIL import Image, ImageEnhance

from assets.image_pool.shards import WHOLE_POOL
from assets.releases.report import report
from assets.releases.store import excluded_images
from pipelines.config import ConfigError, load_config
from pipelines.definitions import build_definitions
from resources.blob_store import BlobStoreResource
from tests.support.critique_harness import failures, materialize, pool_folder
from tests.support.model_servers import ModelApiServer
from tests.support.pool_harness import write_config
from warehouse.db import Warehouse, insert_rows

OPENAI_KEY = "sk-loopback-leakage-never-stored"
GUARD = "release_leakage_guard"
CHECK = AssetCheckKey(AssetKey(GUARD), "no_benchmark_leakage")
ALL_SOURCE_TYPES = ["manifest", "folder", "reddit", "generated"]
POEM = {"poem_id": "p-moon", "title": "Quiet Night Thoughts", "author": "Li Bai", "text": "床前明月光，\n疑是地上霜。",
        "translation": "Moonlight lies pale at the foot of my bed", "themes": ["night"], "form": "quatrain", "source": "test"}


def _config(folder: Path, archive: Path, expected: dict, generator_url: str | None = None, **critique) -> Path:
    """The world's config; with ``generator_url``, the loopback text-to-image model that illustrates the poem."""
    mirror = archive / "images"
    pool = {"folders": [{"path": str(folder / "images"), "license": "CC0-1.0", "provider": "test", "redistribution": "allowed"}],
            "filters": {"license_allowlist": ["CC0-1.0", "reddit-user-content"],
                        "clarity": {"domains": []}}}  # pool_folder's images are noise: the low-quality rules would drop them
    photocritique = {
        "id_lists": [str(archive / "ids" / "test_ids.txt")], "dumps": [str(archive / "dumps" / "monthly"),
                                                                     str(archive / "dumps" / "subreddit")],
        "username_salt": expected["salt"], "local_images": {"path": str(archive / "images_by_post"), "pattern": "{post_id}.*"},
        "url_rewrite": {f"https://{host}/": str(mirror / host)
                        for host in ("i.redd.it", "preview.redd.it", "i.imgur.com", "external-preview.redd.it")},
        "export_dir": "exports/photocritique"}
    poetry = {"corpus": [str(folder / "poems.json")], "survey_dir": "survey", "export_dir": "exports/poetry",
              "generated_license": "CC0-1.0", "generated_redistribution": "allowed"}
    generators = {"generators": [{"name": "gpt", "provider": "openai", "model": "loop-image-1", "base_url": generator_url,
                                  "api_key_env": "LOOP_LEAKAGE_OPENAI_KEY"}], "max_retries": 1, "timeout_s": 5}
    return write_config(folder, pool, photocritique=photocritique, poetry=poetry,
                        **({"image_generators": generators} if generator_url else {}),
                        critique={"max_concurrency": 2, "eval_per_domain": 0, **critique})


def _selected(config: Path, selection: AssetSelection) -> ExecuteInProcessResult:
    job = define_asset_job("selected_here", selection=selection, tags=WHOLE_POOL)  # every shard of the pool
    defs = Definitions.merge(build_definitions(load_config(config)), Definitions(jobs=[job]))
    return defs.resolve_job_def("selected_here").execute_in_process(instance=DagsterInstance.ephemeral(), raise_on_error=False)


def _check_only(config: Path) -> ExecuteInProcessResult:
    """The blocking check alone, as a scheduler would run it between guard runs."""
    return _selected(config, AssetSelection.checks(CHECK))


def _pool_and_photocritique(config: Path) -> ExecuteInProcessResult:
    """The photocritique job (the pool and everything it needs) less the pool's contract, whose source_url_not_null
    fails on every generated illustration (the poetry stage gives them no source URL)."""
    job = AssetSelection.groups("photocritique").upstream() - AssetSelection.checks_for_assets(AssetKey("image_pool"))
    return _selected(config, job)


def _check_outcome(result: ExecuteInProcessResult) -> tuple[bool, str]:
    (evaluation,) = [e for e in result.get_asset_check_evaluations() if e.check_name == CHECK.name]
    return evaluation.passed, evaluation.metadata["unexpected_sample"].value


@pytest.fixture(scope="module")
def world(tmp_path_factory, archive: Path, expected: dict) -> Path:
    folder = tmp_path_factory.mktemp("leakage")
    pool_folder(folder)
    (folder / "poems.json").write_text(json.dumps([POEM], ensure_ascii=False), encoding="utf-8")
    with pytest.MonkeyPatch.context() as env, ModelApiServer(openai_key=OPENAI_KEY) as server:
        env.setenv("LOOP_LEAKAGE_OPENAI_KEY", OPENAI_KEY)
        generated = materialize(_config(folder, archive, expected, server.openai_base_url), "poem_corpus", "poem_illustrations")
        assert generated.success, failures(generated)
    config = _config(folder, archive, expected)
    photocritique = _pool_and_photocritique(config)  # the pool, with the post photos and the illustration
    assert photocritique.success, failures(photocritique)
    built = materialize(config, "critique_pairs", "critique_splits", GUARD)
    assert built.success, failures(built)
    return config


def _wh(config: Path) -> Warehouse:
    return Warehouse(config.parent / "warehouse.duckdb")


def _critiqued_source_types(wh: Warehouse) -> dict[str, int]:
    return dict(wh.query("SELECT r.source_type, count(*) AS n FROM critique_group g JOIN pool_member m"
                         " ON m.pool_item_id = g.pool_item_id JOIN source_record r ON r.record_id = m.record_id"
                         " GROUP BY ALL").itertuples(index=False))


def _benchmark_pool_items(wh: Warehouse) -> set[str]:
    return set(wh.query("SELECT p.pool_item_id FROM pool_images p JOIN source_record r USING (record_id)"
                        " WHERE r.source_type IN ('reddit', 'generated')")["pool_item_id"])


# --- 1. admission ------------------------------------------------------------------------------------------------


def test_benchmark_images_are_left_out_of_critique_pairs_by_default_each_with_its_reason(world: Path):
    wh = _wh(world)
    benchmark = _benchmark_pool_items(wh)
    sources = dict(wh.query("SELECT r.source_type, count(*) AS n FROM pool_images p JOIN source_record r USING (record_id)"
                            " GROUP BY ALL").itertuples(index=False))
    assert sources["reddit"] > 0 and sources["generated"] == 1 and sources["folder"] >= 4
    assert _critiqued_source_types(wh) == {"folder": sources["folder"]}
    left_out = wh.query("SELECT entity_id, reason_code, detail FROM rejection WHERE stage = 'critique_admission'")
    assert set(left_out["entity_id"]) == benchmark and set(left_out["reason_code"]) == {"source_type_not_admitted"}
    for pool_item_id, detail in zip(left_out["entity_id"], left_out["detail"]):
        assert detail.startswith(pool_item_id) and ("'reddit'" in detail or "'generated'" in detail)
    summary = json.loads(wh.scalar("SELECT summary FROM activity WHERE asset_key = 'critique_pairs'"
                                   " ORDER BY started_at DESC LIMIT 1"))
    assert summary["images_not_admitted:reddit"] == sources["reddit"] and summary["images_not_admitted:generated"] == 1


def test_admitted_source_types_are_critiqued_and_their_rejections_withdrawn(world: Path, tmp_path: Path, archive: Path,
                                                                           expected: dict):
    copy = tmp_path / "admitted"
    copy.mkdir()
    for name in ("warehouse.duckdb", "blobs"):
        (shutil.copytree if (world.parent / name).is_dir() else shutil.copy)(world.parent / name, copy / name)
    config = _config(copy, archive, expected, source_types=ALL_SOURCE_TYPES)
    result = materialize(config, "critique_pairs")
    assert result.success, failures(result)
    wh = _wh(config)
    benchmark = _benchmark_pool_items(wh)
    critiqued = set(wh.query("SELECT pool_item_id FROM critique_group")["pool_item_id"])
    assert benchmark and benchmark <= critiqued
    assert {"folder", "reddit", "generated"} == set(_critiqued_source_types(wh))
    assert wh.scalar("SELECT count(*) FROM rejection WHERE stage = 'critique_admission'") == 0
    summary = json.loads(wh.scalar("SELECT summary FROM activity WHERE asset_key = 'critique_pairs' AND status = 'success'"
                                   " ORDER BY started_at DESC LIMIT 1"))
    assert not any(key.startswith("images_not_admitted") for key in summary)
    assert summary["images_pending"] == len(benchmark)  # the folder images were critiqued before


def test_an_unknown_source_type_is_a_config_error(tmp_path: Path):
    config = write_config(tmp_path, {}, critique={"source_types": ["folder", "photocritique"]})
    with pytest.raises(ConfigError, match="'photocritique' is not a pool source type; use one of manifest, folder, reddit"):
        load_config(config)


# --- 2. the guard and its blocking check -----------------------------------------------------------------------


def _plant(config: Path) -> dict[str, tuple[str, str]]:
    """An exact copy of one photocritique photo and an upscaled, slightly brighter copy of another, in the pool
    folder; returns {"exact" | "near": (planted file name, the copied photo's pool item)}."""
    photos = _wh(config).query(
        "SELECT DISTINCT p.pool_item_id, f.file_sha256 FROM release_split_images s JOIN pool_member m USING (cluster_id)"
        " JOIN pool_images p ON p.pool_item_id = m.pool_item_id JOIN source_record r ON r.record_id = p.record_id"
        " JOIN record_file f ON f.record_id = p.record_id"
        " WHERE s.dataset = 'photocritique' AND r.source_type = 'reddit' ORDER BY p.pool_item_id LIMIT 2")
    (copied, copied_sha), (upscaled, upscaled_sha) = photos.itertuples(index=False)
    store = BlobStoreResource(root=str(config.parent / "blobs")).get_store()
    target = config.parent / "images" / "photography"
    exact = store.get_bytes(copied_sha)
    exact_name = f"planted_exact.{Image.open(io.BytesIO(exact)).format.lower()}"
    (target / exact_name).write_bytes(exact)
    image = Image.open(io.BytesIO(store.get_bytes(upscaled_sha))).convert("RGB")
    image = ImageEnhance.Brightness(image.resize((image.width * 5 // 4, image.height * 5 // 4), Image.Resampling.LANCZOS))
    image.enhance(1.03).save(target / "planted_near.png")
    return {"exact": (exact_name, copied), "near": ("planted_near.png", upscaled)}


def test_planted_copies_in_the_train_split_fail_the_check_until_the_guard_excludes_them(world: Path):
    wh = _wh(world)
    # The world as built: CritiqueCanvas trains on the folder images only; nothing overlaps, the check passed.
    assert wh.scalar("SELECT count(*) FROM release_exclusion") == 0
    assert list(wh.query("SELECT passed FROM check_result WHERE check_name = 'no_benchmark_leakage'")["passed"]) == [True]

    planted = _plant(world)
    assert _pool_and_photocritique(world).success
    rebuilt = materialize(world, "critique_pairs", "critique_splits")
    assert rebuilt.success, failures(rebuilt)
    trained = wh.query(
        "SELECT split_part(r.locator, '/', -1) AS name, i.pixel_sha256 AS sha FROM critique_split s"
        " JOIN critique_group g USING (group_id) JOIN pool_images p ON p.pool_item_id = g.pool_item_id"
        " JOIN source_record r ON r.record_id = p.record_id JOIN image i ON i.image_id = p.image_id WHERE s.split = 'train'")
    names = {name: kind for kind, (name, _) in planted.items()}
    sha_of = {names[name]: sha for name, sha in trained.itertuples(index=False) if name in names}
    assert set(sha_of) == {"exact", "near"}  # both copies are kept pool images, critiqued into train

    # Planted after the guard ran: the check alone sees both overlaps and names them.
    passed, named = _check_outcome(_check_only(world))
    assert not passed
    assert all(f"critique_canvas/train image {sha} overlaps photocritique/test" in named for sha in sha_of.values())

    guarded = materialize(world, GUARD)
    assert guarded.success, failures(guarded)
    assert _check_outcome(guarded) == (True, "-")
    rows = wh.query("SELECT * FROM release_exclusion ORDER BY reason")
    assert list(rows["reason"]) == ["exact_duplicate", "perceptual_duplicate"]
    assert dict(zip(rows["reason"], rows["image_sha256"])) == {"exact_duplicate": sha_of["exact"],
                                                               "perceptual_duplicate": sha_of["near"]}
    assert set(rows["dataset"]) == {"critique_canvas"} and set(rows["held_dataset"]) == {"photocritique"}
    exact, near = rows.itertuples(index=False)
    post_of = dict(wh.query("SELECT post_id, record_id FROM reddit_post_image").itertuples(index=False))
    assert exact.held_item_id in post_of and near.held_item_id in post_of
    assert "identical bytes (exact_bytes)" in exact.detail and "perceptual" in near.detail
    for row in (exact, near):
        assert row.detail.startswith("critique_canvas/train pool_item:") and f"photocritique/test {row.held_item_id}" in row.detail
    assert _excluded(wh) == set(sha_of.values())

    # Provenance: each exclusion is an entity generated by the guard, derived from both images' items.
    lineage = wh.query("SELECT d.relation, e.kind FROM was_derived_from d JOIN entity e ON e.entity_id = d.source_entity_id"
                       " WHERE d.entity_id IN (SELECT entity_id FROM release_exclusion)")
    assert sorted(lineage.itertuples(index=False)) == [("collides_with", "reddit_post"), ("collides_with", "reddit_post"),
                                                       ("excludes", "pool_item"), ("excludes", "pool_item")]
    summary = json.loads(wh.scalar("SELECT summary FROM activity WHERE asset_key = ? ORDER BY started_at DESC LIMIT 1", [GUARD]))
    assert summary["excluded:critique_canvas/train:exact_duplicate"] == 1
    assert summary["excluded:critique_canvas/train:perceptual_duplicate"] == 1
    tables = {title: wh.query(sql) for title, sql in report(wh, {})}
    assert [list(t["images"]) for title, t in tables.items() if "images" in t] == [[1, 1]]

    # Nothing changed: the guard decides nothing new and the table keeps its rows.
    again = materialize(world, GUARD)
    assert again.success and json.loads(
        wh.scalar("SELECT summary FROM activity WHERE asset_key = ? ORDER BY started_at DESC LIMIT 1", [GUARD]))["unchanged"]
    assert wh.query("SELECT * FROM release_exclusion ORDER BY reason").equals(rows)


def _excluded(wh: Warehouse) -> set[str]:
    with wh.transaction() as con:
        return excluded_images(con, "critique_canvas", "train")


# --- 3. every held-out dataset, on planted rows ----------------------------------------------------------------


def _pool_image(con, name: str, cluster: str, rep: str | None = None, hop: tuple[str, str] | None = None) -> None:
    """Pool image ``name`` (file sha f-<name>, pixel sha px-<name>) as record rec-<name> of ``cluster``; kept when
    ``rep`` is None, else dropped, joining through ``hop`` (next image, method) or as an exact copy of ``rep``."""
    insert_rows(con, "image", [{"image_id": f"img-{name}", "pixel_sha256": f"px-{name}", "width": 300, "height": 200,
                                "pixel_std": 30.0, "activity_id": "a"}])
    insert_rows(con, "file_decode", [{"file_sha256": f"f-{name}", "image_id": f"img-{name}", "activity_id": "a"}])
    insert_rows(con, "record_file", [{"record_id": f"rec-{name}", "file_sha256": f"f-{name}", "activity_id": "a"}])
    matched, method = hop or ((f"img-{rep}", "exact_pixels") if rep else (None, None))
    insert_rows(con, "pool_member", [{
        "record_id": f"rec-{name}", "pool_item_id": None if rep else f"pool_item:{name}", "image_id": f"img-{name}",
        "cluster_id": cluster, "cluster_size": 1, "is_representative": rep is None,
        "representative_record_id": f"rec-{rep or name}", "matched_image_id": matched, "match_method": method,
        "match_distance": None if rep is None else 0.0, "domain": "painting", "activity_id": "a"}])
    if hop:
        a, b = sorted([f"img-{name}", hop[0]])
        insert_rows(con, "duplicate_match", [{"image_a": a, "image_b": b, "method": hop[1], "distance": 0.01, "activity_id": "a"}])


def _critique(con, name: str, split: str) -> None:
    insert_rows(con, "critique_group", [{"group_id": f"g-{name}", "pool_item_id": f"pool_item:{name}", "image_id": f"img-{name}",
                                         "domain": "painting", "chain_digest": "c", "status": "complete", "activity_id": "a",
                                         "decided_at": "2026-12-01 00:00:00+00"}])
    insert_rows(con, "critique_split", [{"group_id": f"g-{name}", "split": split, "cluster_id": "-", "domain": "painting",
                                         "seed": 0, "eval_per_domain": 1, "activity_id": "a"}])


def _design(con, name: str, split: str, png_sha256: str) -> None:
    insert_rows(con, "design", [{"design_id": f"design:{name}", "source_design_id": name, "base_design_id": f"design:{name}",
                                 "is_perturbed": False, "source_format": "crello", "canvas_width": 100, "canvas_height": 100,
                                 "n_elements": 1, "record": "{}", "activity_id": "a"}])
    insert_rows(con, "design_split", [{"base_design_id": f"design:{name}", "split": split, "seed": 0, "activity_id": "a"}])
    insert_rows(con, "design_render", [{"design_id": f"design:{name}", "renderer_version": "r1", "png_sha256": png_sha256,
                                        "png_uri": f"blob:{png_sha256}", "render_id": f"render:{name}", "width": 100,
                                        "height": 100, "fonts": "[]", "warnings": "[]", "activity_id": "a"}])


def _case_image(con, case_id: str, image_sha256: str, pool_item_id: str | None) -> None:
    insert_rows(con, "context_case", [{"case_id": case_id, "evaluation_id": f"eval-{case_id}", "entity_id": f"context_case:{case_id}",
                                       "case_key": case_id, "record": "{}", "n_images": 1, "n_options": 2, "gold": "A",
                                       "locator": f"cases.json#record={case_id}", "activity_id": "a"}])
    insert_rows(con, "context_case_image", [{"case_id": case_id, "position": 0, "reference": "x", "image_sha256": image_sha256,
                                             "image_uri": f"blob:{image_sha256}", "pool_item_id": pool_item_id, "rights": "{}"}])


def _stand_in(con, item_id: str, image_sha256: str) -> None:
    insert_rows(con, "poem_illustration", [{"item_id": item_id, "poem_id": "p", "generator": "stand-in-1", "kind": "stand_in",
                                            "settings_digest": "s", "entity_id": f"illustration:{item_id}",
                                            "image_sha256": image_sha256, "image_uri": f"blob:{image_sha256}", "mime": "image/png",
                                            "width": 300, "height": 200, "activity_id": "a"}])


def test_each_held_out_dataset_excludes_its_training_copies_with_the_evidence(tmp_path: Path):
    config = write_config(tmp_path, {})
    with _wh(config).transaction() as con:
        # CritiqueCanvas train: pool item a, shown by a ContextCanvas case through its pool reference.
        _pool_image(con, "a", "cluster:A")
        _critique(con, "a", "train")
        _case_image(con, "case-pool", "png-of-a", "pool_item:a")  # a PNG of a's pixels, stored for the case
        # CritiqueCanvas train: pool item b; a stand-in illustration has the bytes of c, which joined b's cluster
        # through d (c -clip-> d -perceptual-> b): no direct match between b and c.
        _pool_image(con, "b", "cluster:B")
        _pool_image(con, "d", "cluster:B", rep="b", hop=("img-b", "perceptual:phash"))
        _pool_image(con, "c", "cluster:B", rep="b", hop=("img-d", "clip:vit-b-32"))
        _critique(con, "b", "train")
        _stand_in(con, "p@stand-in-1", "f-c")
        # CritiqueCanvas eval: pool item e, whose file an AesEval train render repeats byte for byte.
        _pool_image(con, "e", "cluster:E")
        _critique(con, "e", "eval")
        _design(con, "render-of-e", "train", "f-e")
        # AesEval train renders the pool never saw: one repeated by a case file, one by a stand-in, one by an
        # AesEval benchmark render (the same dataset: not leakage), one by nothing.
        _design(con, "shown-in-case", "train", "png-1")
        _case_image(con, "case-file", "png-1", None)
        _design(con, "shown-as-stand-in", "train", "png-2")
        _stand_in(con, "q@stand-in-2", "png-2")
        _design(con, "train-twin", "train", "png-3")
        _design(con, "benchmark-twin", "benchmark", "png-3")
        _design(con, "alone", "train", "png-4")

    assert not _check_outcome(_check_only(config))[0]
    result = materialize(config, GUARD)
    assert result.success, failures(result)
    assert _check_outcome(result) == (True, "-")
    rows = {(r.dataset, r.image_sha256): r for r in _wh(config).query("SELECT * FROM release_exclusion").itertuples(index=False)}
    assert {key: (r.held_dataset, r.held_split, r.held_item_id, r.reason) for key, r in rows.items()} == {
        ("critique_canvas", "px-a"): ("context_canvas", "eval", "case-pool#image=1", "same_image"),
        ("critique_canvas", "px-b"): ("poem_benchmark", "test", "p@stand-in-1", "clip_duplicate"),
        ("aeseval", "f-e"): ("critique_canvas", "eval", "pool_item:e", "same_image"),
        ("aeseval", "png-1"): ("context_canvas", "eval", "case-file#image=1", "same_image"),
        ("aeseval", "png-2"): ("poem_benchmark", "test", "q@stand-in-2", "same_image"),
    }
    assert rows[("critique_canvas", "px-b")].detail.endswith(
        "duplicate cluster cluster:B through img-c clip:vit-b-32 img-d, img-d perceptual:phash img-b")
    assert {r.split for r in rows.values()} == {"train"} and {r.n_held_out for r in rows.values()} == {1}
