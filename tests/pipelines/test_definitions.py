"""The code location as `dagster dev` and the scheduler see it: graph, checks, schedule, sensor."""

import importlib
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from dagster import AssetKey, DagsterInstance, RunRequest, SkipReason, build_schedule_context, build_sensor_context

from assets.image_pool.settings import PoolSettings
from pipelines.config import SAMPLE_CONFIG, load_config
from pipelines.definitions import build_definitions, pipeline_definitions
from assets.image_pool.definitions import weekly_image_pool_rebuild
from assets.image_pool.manifest_sensor import manifest_change_sensor

REPO = Path(__file__).resolve().parents[2]
PIPELINES = pipeline_definitions()
ASSETS = {name: {key.to_user_string() for a in defs.assets for key in a.keys} for name, defs in PIPELINES.items()}
POOL_ASSETS, PHOTOCRITIQUE_ASSETS, CRITIQUE_CANVAS_ASSETS = ASSETS["image_pool"], ASSETS["photocritique"], ASSETS["critique_canvas"]
DESIGN_ASSETS, POETRY_ASSETS, CONTEXT_ASSETS = ASSETS["designs"], ASSETS["poetry"], ASSETS["context_canvas"]
RELEASE_ASSETS, EVALUATION_ASSETS = ASSETS["releases"], ASSETS["evaluation"]


def test_each_pipeline_package_owns_its_assets_under_its_group():
    """Every asset of the code location comes from exactly one pipeline package and carries that package's group."""
    assert set(PIPELINES) == {"context_canvas", "counterfactual", "critique_canvas", "designs", "image_pool", "photocritique",
                              "poetry", "releases", "evaluation"}
    owners = [name for name, keys in ASSETS.items() for _ in keys]
    assert len(owners) == len({key for keys in ASSETS.values() for key in keys})
    graph = build_definitions(load_config(SAMPLE_CONFIG)).resolve_asset_graph()
    for name, defs in PIPELINES.items():
        group = importlib.import_module(f"assets.{name}.definitions").GROUP
        assert {graph.get(AssetKey(key)).group_name for key in ASSETS[name]} == {group}, name
    assert {"image_pool", "critique_pairs", "aeseval_export", "poem_scores", "context_cases", "photocritique_references",
            "counterfactual_edits"} <= {key for keys in ASSETS.values() for key in keys}


def test_asset_graph_checks_and_lineage():
    defs = build_definitions(load_config(SAMPLE_CONFIG))
    graph = defs.resolve_asset_graph()
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} == (POOL_ASSETS | PHOTOCRITIQUE_ASSETS | CRITIQUE_CANVAS_ASSETS
                                                                     | DESIGN_ASSETS | POETRY_ASSETS | CONTEXT_ASSETS
                                                                     | {"counterfactual_edits"} | RELEASE_ASSETS
                                                                     | EVALUATION_ASSETS)
    # one release per dataset, each after the stage its rows come from
    assert {f"{name}_release" for name in ("photocritique", "critique_canvas", "context_canvas", "aeseval",
                                           "poem_benchmark")} <= RELEASE_ASSETS
    assert AssetKey("photocritique_references") in graph.get(AssetKey("photocritique_release")).parent_keys
    # each benchmark is evaluated on its release, by a job of its own
    for name in ("photocritique", "critique_canvas"):
        assert graph.get(AssetKey(f"{name}_evaluation")).parent_keys == {AssetKey(f"{name}_release")}
        assert {n.name for n in defs.resolve_job_def(f"{name}_evaluation_job").graph.nodes} == {f"{name}_evaluation"}
    assert graph.get(AssetKey("image_pool")).parent_keys == {
        AssetKey("pool_candidates"), AssetKey("perceptual_duplicates"), AssetKey("clip_duplicates"),
        AssetKey("model_filter_verdicts"),
    }
    assert graph.get(AssetKey("model_filter_verdicts")).parent_keys == {AssetKey("clip_duplicates")}
    checks = {c.name: c for c in graph.asset_check_keys}
    assert {"one_kept_per_duplicate_cluster", "record_ids_unique"} <= set(checks)
    job = defs.resolve_job_def("image_pool_job")
    assert {node.name for node in job.graph.nodes} - {"image_pool_contract", "source_records_contract"} == POOL_ASSETS
    # Reddit post images enter the pool like any source; the references wait for the pool's decisions.
    assert AssetKey("reddit_post_images") in graph.get(AssetKey("fetched_files")).parent_keys
    assert {AssetKey("image_pool"), AssetKey("reddit_comments")} <= graph.get(AssetKey("photocritique_references")).parent_keys
    assert {"references_per_kept_post", "no_reference_by_submitter", "post_image_in_pool"} <= set(checks)
    canvas_job = defs.resolve_job_def("critique_canvas_job")
    assert {node.name for node in canvas_job.graph.nodes} >= POOL_ASSETS | CRITIQUE_CANVAS_ASSETS
    assert graph.get(AssetKey("critique_canvas_export")).parent_keys == {AssetKey("critique_splits"), AssetKey("critique_audit_report")}
    critique_job = defs.resolve_job_def("photocritique_job")
    assert {node.name for node in critique_job.graph.nodes} >= POOL_ASSETS | PHOTOCRITIQUE_ASSETS
    # The poem benchmark never pulls in the pool (its stand-ins are files; its generated images join the pool's
    # next run), so running it cannot trigger a pool rebuild; ContextCanvas cases wait for the pool.
    poetry_job = defs.resolve_job_def("poetry_benchmark_job")
    assert {node.name for node in poetry_job.graph.nodes if not node.name.endswith("_contract")} == POETRY_ASSETS
    context_job = defs.resolve_job_def("context_canvas_job")
    assert {node.name for node in context_job.graph.nodes} >= POOL_ASSETS | CONTEXT_ASSETS
    assert {"three_distinct_distractors", "na_never_averaged_in", "scores_in_unit_interval", "gold_option_among_options",
            "retained_cases_pass_all_criteria", "no_probe_output_in_exports"} <= set(checks)


def test_workspace_loads_with_the_dagster_cli(tmp_path):
    """`dagster dev` reads workspace.yaml; the same loader must accept it."""
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All code locations passed validation" in done.stdout + done.stderr


def test_weekly_schedule_requests_a_full_pool_run():
    context = build_schedule_context(scheduled_execution_time=datetime(2026, 11, 30, 3, tzinfo=timezone.utc))
    requests = weekly_image_pool_rebuild.evaluate_tick(context).run_requests
    assert len(requests) == 1 and weekly_image_pool_rebuild.job_name == "image_pool_job"
    assert weekly_image_pool_rebuild.cron_schedule == "0 3 * * 1"


def test_sensor_fires_only_when_manifest_content_changes(tmp_path):
    manifest = tmp_path / "m.csv"
    manifest.write_text("locator,license,domain\na.png,CC0-1.0,painting\n")
    pool = PoolSettings(manifests=[str(manifest)])
    with DagsterInstance.ephemeral() as instance:
        first = build_sensor_context(instance=instance, resources={"pool": pool})
        request = manifest_change_sensor(first)
        assert isinstance(request, RunRequest)
        unchanged = build_sensor_context(instance=instance, cursor=first.cursor, resources={"pool": pool})
        assert isinstance(manifest_change_sensor(unchanged), SkipReason)
        os.utime(manifest, ns=(1, 1))  # touched, same content: still nothing to do
        touched = build_sensor_context(instance=instance, cursor=unchanged.cursor, resources={"pool": pool})
        assert isinstance(manifest_change_sensor(touched), SkipReason)
        manifest.write_text(manifest.read_text() + "b.png,CC0-1.0,virtual\n")
        changed = build_sensor_context(instance=instance, cursor=touched.cursor, resources={"pool": pool})
        second = manifest_change_sensor(changed)
        assert isinstance(second, RunRequest) and second.run_key != request.run_key
        assert second.tags["aesforge/changed_manifests"] == str(manifest)
