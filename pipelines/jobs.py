"""Jobs, the weekly rebuild schedule and the manifest-change sensor."""

import json
from pathlib import Path

from dagster import (
    AssetSelection,
    RunRequest,
    ScheduleDefinition,
    SensorEvaluationContext,
    SkipReason,
    define_asset_job,
    sensor,
)

from assets.settings import PoolSettings
from warehouse.ids import digest_of, sha256_file

image_pool_job = define_asset_job(
    name="image_pool_job",
    selection=AssetSelection.groups("image_pool"),
    description="Collect, normalise, filter and de-duplicate the shared image pool; unchanged inputs are skipped.",
)

photocritique_job = define_asset_job(
    name="photocritique_job",
    selection=AssetSelection.groups("photocritique").upstream(),
    description="Rebuild the r/photocritique reference set: posts and comments, their images through the pool,"
    " the benchmark's filters, the ranked references and the export.",
)

critique_canvas_job = define_asset_job(
    name="critique_canvas_job",
    selection=AssetSelection.groups("critique_canvas").upstream(),
    description="Build CritiqueCanvas: the pool, the planner → annotator → verifier chain (cached: only new images"
    " cost model calls), the split, the audit sample and report, and the export. Not scheduled: it spends API budget.",
)

design_aesthetics_job = define_asset_job(
    name="design_aesthetics_job",
    selection=AssetSelection.groups("design_aesthetics").upstream(),
    description="AesEval-style designs: read Crello records, perturb them (seeded, logged), render every design, review"
    " sheets and labels (human majority, else the heuristic judge), split by base design, questions, export.",
)

poetry_benchmark_job = define_asset_job(
    name="poetry_benchmark_job",
    selection=AssetSelection.groups("poetry_benchmark"),
    description="TangPoetryBench-style poem illustrations: corpus, one image per poem and text-to-image model (or stand-ins),"
    " phase-1 items, survey QC, OCR text integrity, rubric scores, agreement, per-model table, bootstrap, rubric judge, export.",
)

context_canvas_job = define_asset_job(
    name="context_canvas_job",
    selection=AssetSelection.groups("context_canvas").upstream(),
    description="ContextCanvas-style cases: expert-authored records over pool images, the seven-criterion review, the"
    " anti-shortcut report, and the export (model input apart from gold labels and provenance).",
)

full_rebuild_job = define_asset_job(
    name="full_rebuild_job",
    selection=AssetSelection.all(),
    description="Every asset of the code location, in dependency order; unchanged inputs are skipped.",
)

weekly_image_pool_rebuild = ScheduleDefinition(
    name="weekly_image_pool_rebuild",
    job=image_pool_job,
    cron_schedule="0 3 * * 1",
    execution_timezone="UTC",
    description="Full rebuild every Monday 03:00 UTC: re-reads every source, does no work for inputs already processed.",
)


weekly_photocritique_rebuild = ScheduleDefinition(
    name="weekly_photocritique_rebuild",
    job=photocritique_job,
    cron_schedule="0 4 * * 1",
    execution_timezone="UTC",
    description="Every Monday 04:00 UTC: asks HTTP sources again only for posts that failed, rescans only changed dumps.",
)


def manifest_fingerprints(paths: list[str], previous: dict[str, list]) -> dict[str, list]:
    """{path: [size, mtime_ns, sha256]}; a file whose size and mtime are unchanged is not re-hashed."""
    current: dict[str, list] = {}
    for name in paths:
        path = Path(name)
        if not path.is_file():
            continue
        stat = path.stat()
        known = previous.get(name)
        if known and known[:2] == [stat.st_size, stat.st_mtime_ns]:
            current[name] = known
        else:
            current[name] = [stat.st_size, stat.st_mtime_ns, sha256_file(path)]
    return current


@sensor(job=image_pool_job, minimum_interval_seconds=60, description="Starts the pool job when a configured manifest's content changes.")
def manifest_change_sensor(context: SensorEvaluationContext, pool: PoolSettings):
    previous = json.loads(context.cursor) if context.cursor else {}
    current = manifest_fingerprints(pool.manifests, previous)
    context.update_cursor(json.dumps(current, sort_keys=True))
    contents = {path: entry[2] for path, entry in current.items()}
    if contents == {path: entry[2] for path, entry in previous.items()}:
        return SkipReason("no configured manifest changed")
    changed = sorted(p for p in contents if (previous.get(p) or [None] * 3)[2] != contents[p])
    return RunRequest(run_key=digest_of(contents), tags={"aesforge/changed_manifests": ",".join(changed)[:200]})
