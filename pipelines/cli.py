"""The commands of ``aesforge`` (the command line is read in ``pipelines/command.py``): run the pipeline headlessly
against a config file, query the warehouse, write releases, evaluate benchmarks, make the sample and the demo."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from pathlib import Path

from pipelines.config import REPO_ROOT, SAMPLE_CONFIG, ConfigError, config_path, load_config, pipeline_modules, warehouse_settings
from warehouse.db import Warehouse, WarehouseDamaged, WarehouseUnavailable, storage_failure
from warehouse.provenance_walk import provenance_rows

JOB_NAME = "full_rebuild_job"
CODE_LOCATION_MODULE = "pipelines.definitions"  # what workspace.yaml loads; `dagster dev` names the location after it
INSTANCE_SETTINGS = """\
# Written by aesforge for the instance it keeps beside the warehouse (edit freely; aesforge never overwrites it).
# No usage statistics leave this machine; runs, events and schedules stay in the default SQLite storage here.
telemetry:
  enabled: false
# Step processes print INFO and above (progress, warnings) and keep their DEBUG chatter ("Executing step ... in
# subprocess") out of the terminal; Dagster's own events are recorded whatever this level.
python_logs:
  python_log_level: INFO
"""
EARLIER_INSTANCE_SETTINGS = ("""\
# Written by aesforge for the instance it keeps beside the warehouse (edit freely; aesforge never overwrites it).
# No usage statistics leave this machine; runs, events and schedules stay in the default SQLite storage here.
telemetry:
  enabled: false
""",)
"""What earlier aesforge versions wrote: such a file is aesforge's, not the user's, and is brought up to date."""


def _use_config(path: str | None) -> tuple[Path, dict]:
    resolved = Path(path).expanduser().resolve() if path else config_path()
    os.environ["AESFORGE_CONFIG"] = str(resolved)  # step processes load the same file
    return resolved, load_config(resolved)


def _instance(warehouse_path: str):
    """A persistent Dagster instance: $DAGSTER_HOME, else a dagster_home folder beside the warehouse."""
    from dagster import DagsterInstance

    if not os.environ.get("DAGSTER_HOME"):
        home = Path(warehouse_path).parent / "dagster_home"
        home.mkdir(parents=True, exist_ok=True)
        os.environ["DAGSTER_HOME"] = str(home)
        settings = home / "dagster.yaml"
        # ours to write; a dagster.yaml someone put there (or edited) is theirs, left as it is
        if not settings.exists() or settings.read_text() in EARLIER_INSTANCE_SETTINGS:
            settings.write_text(INSTANCE_SETTINGS)
    return DagsterInstance.get()


def run_pipeline(config_file: str | None, select: list[str] | None, executor: str, log_level: str = "WARNING",
                 tags: dict[str, str] | None = None, job: str = JOB_NAME, force: bool = False,
                 partition: str | None = None) -> int:
    """Run ``job`` (or the ``select``ed assets of it) as a run of the code location, building only what is not up to
    date (``pipelines.rebuild_plan``) unless ``force``; 0 when it succeeded or had nothing to do. With ``partition``
    (a pool shard or a range ``A..B``), only the selection's partitioned assets, for those shards, in one run."""
    from assets.core.step import close_abandoned, run_process_tags

    path, config = _use_config(config_file)
    from pipelines.definitions import defs  # after _use_config: the code location loads the same file

    graph = defs.resolve_asset_graph()
    jobs = sorted(j.name for j in defs.resolve_all_job_defs() if not j.name.startswith("__"))
    if _refused("run", "job", job, jobs):
        return 2
    in_job = set(defs.resolve_job_def(job).asset_layer.selected_asset_keys)
    known = {key.to_user_string() for key in in_job}
    unknown = sorted({clause.strip("+*") for clause in select or []} - known)
    if unknown:
        print(f"unknown asset(s) in {job}: {', '.join(unknown)}; known: {', '.join(sorted(known))}", file=sys.stderr)
        return 2
    selected = (_selected(graph, select) & in_job) if select else in_job
    shard_tags: dict[str, str] = {}
    if partition is not None:
        try:
            selected, shard_tags = _shard_selection(graph, selected, partition)
        except ValueError as exc:
            print(exc, file=sys.stderr)
            return 2
    print(f"aesforge: {job} with {path}" + ("" if executor == "auto" else f" ({executor} executor)")
          + (f", pool shards {partition}" if shard_tags else ""))
    run_ids: list[str] = []
    failed: dict[str, str] = {}
    try:
        with _instance(config["warehouse"]["path"]) as instance:
            wh = _warehouse(config)
            wh.check()  # a damaged warehouse is refused before anything runs (exit 2, in main)
            close_abandoned(instance, wh, f"aesforge run (pid {os.getpid()})")
            reasons, outside, plan = _plan(defs, graph, selected, instance, wh.root, force or bool(shard_tags))
            if shard_tags:  # the plan is per asset, not per shard; a shard with nothing pending costs a query
                reasons = {key: f"pool shards {partition}" for key in reasons}
            for line in _outdated_upstream(graph, selected, outside):
                print(f"warning: {line}", file=sys.stderr)
            order = [key for key in graph.toposorted_asset_keys if key in selected]
            if not reasons:
                print(f"nothing to do: all {len(order)} selected assets are up to date (aesforge run --force builds them"
                      " anyway)")
            else:
                _print_plan(order, reasons)

                configured = config["executor"].get("kind", "multiprocess")  # a cluster or one process, as asked

                def execute(keys: list) -> tuple[str, dict[str, str]]:
                    chosen = executor if executor != "auto" else (
                        _auto_executor(len(keys), len(order)) if configured == "multiprocess" else configured)
                    if chosen != executor:
                        print(f"({chosen} executor)")
                    return _execute(job, keys, chosen, log_level, {**run_process_tags(), **(tags or {}), **shard_tags},
                                    instance)

                run_ids, failed = _build(graph, order, reasons, plan, execute)
        print_summary(config, run_ids)
    except WarehouseDamaged:
        raise
    except Exception as exc:  # only a warehouse or disk that is unusable as a whole ends here; anything else is a bug
        cause = storage_failure(exc)
        if cause is None:
            raise
        print(f"run {run_ids[-1] if run_ids else '(not started)'} FAILED: {cause}", file=sys.stderr)
        return 1
    if failed:
        print(f"run {run_ids[-1]} FAILED in step(s): {', '.join(failed)}", file=sys.stderr)
        for step, message in failed.items():
            print(f"  {step}: {message}", file=sys.stderr)
        return 1
    return 0


def _shard_selection(graph, selected: set, partition: str) -> tuple[set, dict[str, str]]:
    """The partitioned assets of ``selected`` and the run's tags for the pool shards ``partition`` names (``3`` or
    ``0..7``, one run); ``ValueError`` with the line to print when the shards or the selection do not fit."""
    from assets.image_pool.logic.shards import shard_keys
    from assets.image_pool.shards import shard_range_tags

    keys = shard_keys(partition)
    sharded = {key for key in selected if graph.get(key).partitions_def is not None}
    if not sharded:
        raise ValueError(f"--partition {partition}: the selection holds no partitioned asset (the pool's are"
                         " fetched_files, normalized_images and pool_candidates)")
    return sharded, shard_range_tags(keys)


def _plan(defs, graph, selected: set, instance, root: Path, force: bool):
    """Why each selected asset is built (all of them when ``force``); why each of their upstream assets left out of
    the selection is out of date (never built, changed code or inputs, or upstream of one that is); and the plan
    itself, to be made again as waves of the build finish."""
    from dagster import AssetSelection

    from assets.core.input_fingerprint import inputs_fingerprint
    from pipelines.rebuild_plan import last_builds, rebuild_reasons

    scope = AssetSelection.assets(*selected).upstream().resolve(graph)
    order = [key for key in graph.toposorted_asset_keys if key in scope]
    resources = defs.resources or {}
    fingerprints = {key: inputs_fingerprint({name: resources[name] for name in defs.resolve_assets_def(key).required_resource_keys
                                             if name in resources}, root) for key in order}
    parents = {key: graph.get(key).parent_keys for key in order}
    code_versions = {key: graph.get(key).code_version for key in order}
    partitions = {key: graph.get(key).partitions_def.get_partition_keys() for key in order
                  if graph.get(key).partitions_def is not None}

    def plan(keys: list, last: dict | None = None) -> dict:
        """Why each of ``keys`` (in dependency order) must be built, from ``last`` or the instance as it is now."""
        return rebuild_reasons(keys, parents, code_versions, fingerprints,
                               last if last is not None else last_builds(instance, order, partitions))

    last = last_builds(instance, order, partitions)
    outside = {key: reason for key, reason in plan(order, last).items() if key not in selected}
    inside = [key for key in order if key in selected]
    return ({key: "forced" for key in inside} if force else plan(inside, last)), outside, plan


def _build(graph, order: list, reasons: dict, plan, execute) -> tuple[list[str], dict[str, str]]:
    """Build ``reasons``' assets in waves, each one run (``execute``): first those with a reason of their own, then
    whatever the plan, made again from the new data versions, still finds out of date (a parent rebuilt with the
    same content leaves its readers alone). Each asset is built at most once; a failed wave ends the build. The
    runs' ids and the failed steps' messages."""
    from pipelines.rebuild_plan import first_wave

    parents = {key: graph.get(key).parent_keys for key in order}
    run_ids, done = [], set()
    while reasons:
        wave = first_wave(order, parents, reasons)
        if run_ids:
            print(f"then {len(wave)} more: " + ", ".join(f"{key.to_user_string()} ({reasons[key]})" for key in wave))
        run_id, failed = execute(wave)
        run_ids.append(run_id)
        done |= set(wave)
        if failed:
            return run_ids, failed
        pending = [key for key in order if key in reasons and key not in done]
        reasons = plan(pending)
        settled = [key.to_user_string() for key in pending if key not in reasons]
        if settled:
            print(f"up to date after all (what they read did not change): {', '.join(settled)}")
    return run_ids, {}


def _auto_executor(building: int, selected: int) -> str:
    """A process per step when most of the selection is built (independent branches then run side by side), one
    process otherwise: an incremental build is a few steps, most finding little to do, and a process per step
    would cost more in start-up (seconds of imports each) than the steps themselves."""
    return "multiprocess" if building * 2 > selected else "in_process"


def _print_plan(order: list, reasons: dict) -> None:
    """What will be built and why, one line per reason (a cold build is one line), and what is up to date."""
    by_reason: dict[str, list[str]] = {}
    for key in order:
        if key in reasons:
            by_reason.setdefault(reasons[key], []).append(key.to_user_string())
    print(f"building {len(reasons)} of {len(order)} assets:")
    for reason, names in by_reason.items():
        print(f"  {', '.join(names)}: {reason}")
    fresh = [key.to_user_string() for key in order if key not in reasons]
    if fresh:
        print(f"  up to date, not run: {', '.join(fresh)}")


def _execute(job: str, keys, executor: str, log_level: str, tags: dict[str, str], instance) -> tuple[str, dict[str, str]]:
    """Run ``keys`` of ``job`` as a run of the code location `dagster dev` shows (its origin, so the run is listed
    under the job and on the timeline), with the executor asked for; the run id and each failed step's message."""
    from dagster._core.definitions.reconstruct import ReconstructableRepository
    from dagster._core.execution.api import execute_run

    repository = ReconstructableRepository.for_module(CODE_LOCATION_MODULE, "defs", working_directory=str(REPO_ROOT))
    recon_job = repository.get_reconstructable_job(job)
    job_def = recon_job.get_definition()
    run_config = {"execution": {"config": {executor: {}}},
                  "loggers": {"console": {"config": {"log_level": log_level, "print_failures": False}}}}
    run = instance.create_run_for_job(  # the job's own tags first, as a launch from the UI has them (the pool's shards)
        job_def=job_def, run_config=run_config, tags={**job_def.tags, **tags}, asset_selection=frozenset(keys),
        remote_job_origin=_remote_origin(job), job_code_origin=recon_job.get_python_origin(),
    )
    result = execute_run(recon_job, run, instance, raise_on_error=False)
    failed = {event.step_key: _root_message(event.step_failure_data.error) for event in result.all_events
              if event.is_step_failure}
    if not result.success and not failed:
        failed = {"(run)": "see the Dagster event log"}
    return result.run_id, failed


def _remote_origin(job: str):
    """The origin `dagster dev` gives ``job`` when it loads workspace.yaml: location ``pipelines.definitions`` (the
    module), repository ``__repository__`` (a ``Definitions`` object's)."""
    from dagster._core.definitions.repository_definition import SINGLETON_REPOSITORY_NAME
    from dagster._core.remote_origin import (
        ManagedGrpcPythonEnvCodeLocationOrigin,
        RemoteJobOrigin,
        RemoteRepositoryOrigin,
    )
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

    target = LoadableTargetOrigin(executable_path=sys.executable, module_name=CODE_LOCATION_MODULE,
                                  working_directory=str(REPO_ROOT))
    location = ManagedGrpcPythonEnvCodeLocationOrigin(loadable_target_origin=target, location_name=CODE_LOCATION_MODULE)
    return RemoteJobOrigin(RemoteRepositoryOrigin(location, SINGLETON_REPOSITORY_NAME), job)


def _selected(graph, select: list[str]) -> set:
    """The asset keys ``select`` names, in Dagster's selection syntax: ``name``, ``+name`` (with its parents),
    ``++name`` / ``*name`` (two levels / all upstream), ``name+`` / ``name*`` (downstream)."""
    from dagster import AssetSelection

    keys: set = set()
    for clause in select:
        keys |= AssetSelection.from_string(clause).resolve(graph)
    return keys


def _outdated_upstream(graph, selected: set, outside: dict) -> list[str]:
    """Each selected asset that reads an out-of-date asset left out of the selection: the run would read stale or
    no data from it (an empty export), so say so and how to pull it in."""
    lines = []
    for key in sorted(selected):
        stale = sorted(parent for parent in graph.get(key).parent_keys if parent in outside)
        if stale:
            named = "; ".join(f"{parent.to_user_string()} ({outside[parent]})" for parent in stale)
            lines.append(f"{key.to_user_string()} reads {named}, left out of the selection: its output will be built"
                         f" from what is there now; select +{key.to_user_string()} to build it too")
    return lines


def _counts_line(summary: dict, width: int = 110) -> str:
    """A stage's numeric counts as ``name n, name n, ...`` cut to ``width`` characters (its notes stay in the
    warehouse's activity table and the Dagster UI)."""
    text = ", ".join(f"{name} {value}" for name, value in sorted(summary.items()) if isinstance(value, int))
    return text if len(text) <= width else text[: width - 3] + "..."


def _table(wh, title: str, sql: str) -> None:
    """Print a query's result under a title, or nothing when it has no rows."""
    frame = wh.query(sql)
    if not frame.empty:
        print(f"\n{title}:")
        print(frame.to_string(index=False))


def _root_message(error) -> str:
    """The innermost error's message: a Failure's description, not Dagster's wrapper text."""
    while error is not None and error.cause is not None:
        error = error.cause
    return error.message.strip() if error is not None else "no error recorded"


def _warehouse(config: dict) -> Warehouse:
    """The configured warehouse, as the assets open it: its root names local files, its blob root shows blobs."""
    settings = config["warehouse"]
    return Warehouse(settings["path"], settings.get("lock_timeout_s", 900.0), root=settings.get("project_root"),
                     blob_root=settings.get("blob_root"))


def print_summary(config: dict, run_ids: list[str]) -> None:
    """What the runs did (if any ran), then each pipeline's report (``assets/<package>/report.py``) in data-flow
    order: the same figures whether the build ran everything or found everything up to date."""
    import pandas as pd

    wh = _warehouse(config)
    pd.set_option("display.width", 200)
    pd.set_option("display.max_colwidth", 80)
    for run_id in run_ids:
        steps = wh.query("SELECT asset_key, status, summary FROM activity WHERE run_id = ? ORDER BY started_at", [run_id])
        print(f"\nrun {run_id}: what each stage did")
        for asset_key, status, summary in steps.itertuples(index=False):
            print(f"  {asset_key:<28} {status:<8} {_counts_line(json.loads(summary or '{}'))}")
    for report in sorted(pipeline_modules("report"), key=lambda module: module.REPORT_ORDER):
        for part in report.report(wh, config):  # a line to print, or a (title, SQL) table
            if isinstance(part, str):
                print(part)
            else:
                _table(wh, *part)
    _table(wh, "exported files (table export_file)", "SELECT dataset, path, n_rows FROM export_file ORDER BY dataset, path")
    print(f"\nwarehouse: {wh.path}")
    print(
        'query it:  aesforge sql "SELECT * FROM duplicate_drops"   (views: pool_images, duplicate_drops, pool_exclusions,'
        " pool_stage_counts, provenance(id), photocritique_selection_flow, photocritique_reference_set, photocritique_exclusions,"
        " critique_canvas_records, critique_audit_summary, design_question_records, design_answer_balance, poem_image_records,"
        " poem_model_table, poem_survey_exclusions, context_case_status, context_canvas_eval_records, context_canvas_gold_records)"
    )


def run_sql(config_file: str | None, sql: str) -> int:
    import duckdb
    import pandas as pd

    _, config = _use_config(config_file)
    wh = _warehouse(config)
    try:
        frame = wh.query(sql)
    except duckdb.Error as exc:
        print(f"SQL error: {exc}", file=sys.stderr)
        return 1
    with pd.option_context("display.width", 250, "display.max_columns", 50, "display.max_colwidth", 100, "display.max_rows", 500):
        print(frame.to_string(index=False) if not frame.empty else "(no rows)")
    return 0


def show_provenance(config_file: str | None, item: str, as_json: bool) -> int:
    """Where ``item`` came from, as a tree (or JSON): the rows of the warehouse's ``provenance`` macro, read by key
    (``warehouse.provenance_walk``), which stays fast however large the lineage tables grow."""
    from pipelines.provenance_tree import provenance_json, provenance_tree

    path = Path(config_file).expanduser().resolve() if config_file else config_path()
    with warehouse_settings(path).get_warehouse().transaction() as con:  # the warehouse section alone: no Dagster
        rows = provenance_rows(con, item)
    print(provenance_json(item, rows) if as_json else provenance_tree(item, rows))
    return 0 if rows else 1


RETRY_REASONS = ("gave_up", "internal_error")
"""Rejections a user may reset: ``gave_up`` (fetch: transient failures in fetch.max_attempt_runs runs) and
``internal_error`` (items the item loop quarantined after an unexpected exception)."""


def retry_rejected(config_file: str | None, reason: str, stage: str | None = None) -> int:
    """Make the items rejected for ``reason`` pending again, so the next run tries them afresh."""
    if reason not in RETRY_REASONS:
        print(f"aesforge retry: unknown reason {reason!r}; it resets: {', '.join(RETRY_REASONS)}", file=sys.stderr)
        return 2
    if stage and reason != "internal_error":
        print("aesforge retry: --stage goes with --reason internal_error (gave_up is the fetch stage's)", file=sys.stderr)
        return 2
    from assets.image_pool.collection import retry_gave_up
    from assets.core.item_loop import request_retry

    _, config = _use_config(config_file)
    path = Path(config["warehouse"]["path"])
    if not path.is_file():
        print(f"aesforge retry: no warehouse at {path}; nothing to retry", file=sys.stderr)
        return 2
    wh = _warehouse(config)
    n = retry_gave_up(wh) if reason == "gave_up" else request_retry(wh, stage)
    print(f"aesforge retry: {n} item(s) rejected as {reason}{f' in stage {stage}' if stage else ''} are pending again;"
          " the next run tries them")
    return 0


def make_sample(out: str) -> int:
    """Build the sample in a scratch folder beside ``out``, then sync it into ``out`` (``sample.sync``): unchanged
    files keep their bytes and times, so a second ``aesforge demo`` finds nothing to do."""
    import shutil
    import tempfile

    from sample.make_corpus import check_sample_folder
    from sample.sync import sync_tree

    target = Path(out).resolve()
    try:
        check_sample_folder(target)
    except FileExistsError as exc:
        print(f"aesforge sample: {exc}", file=sys.stderr)
        return 2
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        _build_sample(scratch)
        counts = sync_tree(scratch, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"sample written to {target}: {counts['written']} files written, {counts['kept']} unchanged,"
          f" {counts['removed']} removed")
    return 0


def _build_sample(out: Path) -> None:
    """Every fixture of the sample under ``out`` (each depends only on relative positions inside it)."""
    from sample.context_fixture import write_context_sample
    from sample.design_fixture import build_design_fixture
    from sample.make_corpus import build_corpus
    from sample.poem_fixture import write_poem_sample
    from sample.reddit_fixture import write_fixture

    summary = build_corpus(out)
    print(f"sample corpus: {json.dumps(summary.get('counts', {}), sort_keys=True)}")
    reddit = write_fixture(out / "reddit")
    print(f"sample Reddit archive: {json.dumps(reddit.get('counts', {k: v for k, v in reddit.items() if k != 'out_dir'}), sort_keys=True, default=str)}")
    designs = build_design_fixture(out / "designs")
    print(f"sample Crello designs: {len(designs['designs'])} designs (v4 and v5), {len(designs['broken'])} broken records")
    poems = write_poem_sample(out / "poetry")
    print(f"sample poems and fixture survey: {json.dumps(poems.get('counts', {}), sort_keys=True)}")
    cases = write_context_sample(out / "context", out)
    print(f"sample contextual-suitability cases: {json.dumps(cases.get('counts', {}), sort_keys=True)}")


def _refused(command: str, what: str, name: str, names: list[str]) -> bool:
    """Whether ``name`` is not one of ``names``; if so, says so in one line with the nearest name."""
    if name in names:
        return False
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    print(f"aesforge {command}: no {what} {name!r}{hint} (known: {', '.join(names)})", file=sys.stderr)
    return True


def release_names() -> list[str]:
    """Every dataset with a release asset (``<name>_release``), found in the definitions."""
    from pipelines.definitions import defs

    keys = [key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()]
    return sorted(key.removesuffix("_release") for key in keys if key.endswith("_release"))


def run_release(config_file: str | None, name: str, out: str | None, executor: str) -> int:
    """Write one dataset's release folder from what the warehouse holds now (``aesforge run`` builds the data)."""
    from assets.releases.release_asset import RELEASE_FOLDER_TAG

    _use_config(config_file)
    if _refused("release", "dataset", name, release_names()):
        return 2
    tags = {RELEASE_FOLDER_TAG: str(Path(out).expanduser().resolve())} if out else None
    code = run_pipeline(config_file, [f"{name}_release"], executor, tags=tags, force=True)
    if code == 0:
        _, config = _use_config(config_file)
        print_releases(config, [name], Path(out).expanduser().resolve() if out else None)
    return code


def benchmark_names() -> list[str]:
    """Every benchmark with an evaluation asset (``<name>_evaluation``), found in the definitions."""
    from pipelines.definitions import defs

    keys = (key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys())
    return sorted(key.removesuffix("_evaluation") for key in keys if key.endswith("_evaluation"))


def run_evaluation(config_file: str | None, benchmark: str, tags: dict[str, str], command: str) -> int:
    """Score one benchmark's release with one more predictions file or model run (``tags``), then print its
    leaderboard."""
    _use_config(config_file)
    if _refused(command, "benchmark", benchmark, benchmark_names()):
        return 2
    code = run_pipeline(config_file, [f"{benchmark}_evaluation"], "in_process", tags=tags, force=True)
    if code == 0:
        import pandas as pd

        _, config = _use_config(config_file)
        frame = _warehouse(config).query(
            "SELECT model, condition, metric, status, round(mean, 4) AS mean, round(ci_low, 4) AS ci_low,"
            " round(ci_high, 4) AS ci_high, n_items, reason FROM evaluation_leaderboard WHERE benchmark = ?"
            " AND NOT (metric LIKE '%:%' AND metric NOT LIKE 'f1:%' AND metric NOT LIKE 'aspect:%')"
            " ORDER BY metric, mean DESC NULLS LAST", [benchmark])
        pd.set_option("display.width", 200)
        pd.set_option("display.max_colwidth", 60)
        print(f"\nleaderboard of {benchmark} (view evaluation_leaderboard; per-indicator figures in the report):")
        print(frame.to_string(index=False))
    return code


def score_predictions(config_file: str | None, benchmark: str, predictions: str) -> int:
    from assets.evaluation.benchmark_scores import PREDICTIONS_TAG

    path = Path(predictions).expanduser().resolve()
    if not path.is_file():
        print(f"aesforge score: no predictions file at {path}", file=sys.stderr)
        return 2
    return run_evaluation(config_file, benchmark, {PREDICTIONS_TAG: str(path)}, "score")


def evaluate_model(config_file: str | None, benchmark: str, model: str, condition: str | None) -> int:
    from assets.evaluation.benchmark_scores import MODEL_RUN_TAG

    return run_evaluation(config_file, benchmark, {MODEL_RUN_TAG: json.dumps({"model": model, "condition": condition})},
                          "evaluate")


def print_releases(config: dict, names: list[str], folder: Path | None = None) -> None:
    """Where each release folder is, with its rows per config and split (from its ``release.json``)."""
    from assets.releases.settings import ReleaseSettings

    root = Path(ReleaseSettings(**config.get("releases", {})).out_dir)
    for name in names:
        where = folder or root / name
        try:
            manifest = json.loads((where / "release.json").read_text())
        except (OSError, ValueError):
            print(f"release {name}: not written (no release.json in {where})")
            continue
        rows = ", ".join(f"{part} {n}" for part, n in sorted(manifest["rows"].items())) or "no rows"
        print(f"release {name}: {where} ({rows}; {manifest['withheld_images']} image(s) without bytes by licence)")


def demo() -> int:
    """Generate the sample and run the whole pool on it with the bundled config."""
    import pandas as pd

    make_sample(str(SAMPLE_CONFIG.parent.parent / "data" / "sample"))
    code = run_pipeline(str(SAMPLE_CONFIG), None, "auto")
    if code == 0:
        _, config = _use_config(str(SAMPLE_CONFIG))
        wh = _warehouse(config)
        item = wh.scalar("SELECT pool_item_id FROM pool_images ORDER BY record_id LIMIT 1")
        if item:
            print(f"\nprovenance of one kept image ({item}):")
            with wh.transaction() as con:
                rows = provenance_rows(con, item)
            columns = ["depth", "entity_kind", "derived_as", "link", "asset_key", "run_id", "source_url", "license"]
            print(pd.DataFrame(rows, columns=columns).to_string(index=False))
        print("\nrelease folders (publishable as they are: card, croissant.json, ATTRIBUTION.csv, provenance.parquet):")
        print_releases(config, release_names())
    return code


def main(argv: list[str] | None = None) -> int:
    """The command line (read in ``pipelines.command``, which imports nothing heavy)."""
    from pipelines.command import main as command_main

    return command_main(argv)


def dispatch(args: argparse.Namespace) -> int:
    """Run one parsed command; user errors end with one line on stderr and exit 2."""
    try:
        if args.command == "sample":
            return make_sample(args.out)
        if args.command == "run":
            return run_pipeline(args.config, args.select, args.executor, args.log_level, job=args.job, force=args.force,
                                partition=args.partition)
        if args.command == "sql":
            return run_sql(args.config, args.query)
        if args.command == "release":
            return run_release(args.config, args.name, args.out, args.executor)
        if args.command == "score":
            return score_predictions(args.config, args.benchmark, args.predictions)
        if args.command == "evaluate":
            return evaluate_model(args.config, args.benchmark, args.model, args.condition)
        if args.command == "retry":
            return retry_rejected(args.config, args.reason, args.stage)
        if args.command == "provenance":
            return show_provenance(args.config, args.item_id, args.json)
        return demo()
    except ConfigError as exc:
        for line in str(exc).splitlines():  # one line per problem of the file
            print(f"config error: {line}", file=sys.stderr)
        return 2
    except FileExistsError as exc:  # `aesforge sample --out` at a folder holding other files
        print(f"aesforge: {exc}", file=sys.stderr)
        return 2
    except WarehouseUnavailable as exc:  # damaged: refused before anything ran (2); locked or disk full (1)
        print(f"aesforge: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, WarehouseDamaged) else 1


if __name__ == "__main__":
    sys.exit(main())
