"""Per benchmark, one asset that scores it: the configured predictions files are read row by row (each row kept as
a prediction entity derived from its benchmark item and the file, or rejected with its reason), every run of the
benchmark is scored with the metrics that can run here, the human agreement baseline is scored the same way, and
the leaderboard (mean with a bootstrap 95 % interval per run and metric) is stored and shown.

The benchmark is read from its release folder (``evaluation.releases_dir/<dataset>``): an evaluation scores what
was published, and names the release by the digest of its data files.
"""


import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from pathlib import Path

from dagster import AssetExecutionContext, AssetKey, Failure, MaterializeResult, MetadataValue, asset

from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, run_items
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step, unrecorded_result
from assets.evaluation.evaluation_report import write_reports
from assets.evaluation.judging import MetricStatus, judge_scores, read_similarity_sheets, write_similarity_sheet
from assets.evaluation.choice_report import closed_sections
from assets.evaluation.grounding_audit import read_grounding_sheets, write_grounding_sheet
from assets.evaluation.logic.benchmark_items import (LAYOUTS, BenchmarkItem, BenchmarkLayout, ItemImage, NoItems, Release,
                                                     ReleaseError, iter_items, open_release)
from assets.evaluation.logic.choice_scoring import COMPARED, POEM_AGGREGATES, is_breakdown, metric_names, score_run
from assets.evaluation.logic.poem_judging import held_out_poems
from assets.evaluation.logic.run_aggregates import Aggregate
from assets.evaluation.logic.metrics.base import Metric
from assets.evaluation.logic.metrics.registry import build_metrics
from assets.evaluation.logic.run_identity import item_entity_id, prediction_entity_id, run_key, run_row
from assets.evaluation.logic.predictions_file import Prediction, RowProblem, read_predictions
from assets.evaluation.logic.predictions_file import write_predictions as write_predictions_file
from assets.evaluation.logic.item_statistics import DESCRIPTIVE, STATISTICS, STATISTICS_PARAMETERS, STATISTICS_VERSION
from assets.evaluation.logic.scoring import ItemScore, human_baseline, score_items
from assets.evaluation.logic.statistics import bonferroni, bootstrap_ci, mcnemar_exact, paired_bootstrap, paired_t_test
from assets.evaluation.logic.text_stats import word_count
from assets.evaluation.model_runs import CHOICE_BENCHMARKS, PRIMARY_CONDITION, ask_model
from assets.evaluation.settings import EvaluationSettings, ModelRun
from assets.evaluation.store import (record_run, replace_answers, replace_comparisons, replace_predictions, replace_scores,
                                     retire_file_runs, write_predictions)
from resources.blob_store import BlobStore, BlobStoreResource
from resources.model_providers import ModelProvidersResource
from resources.warehouse import WarehouseResource
from warehouse.ids import digest_of, entity_id, sha256_file, sha256_hex
from warehouse.lineage import ActivityLog, Entity

PREDICTIONS_TAG = "aesforge/predictions_file"
"""A run tag naming one more predictions file to score in this run (``aesforge score``)."""
MODEL_RUN_TAG = "aesforge/model_run"
"""A run tag holding one more model run as JSON ({model, condition}) for this run (``aesforge evaluate``)."""
UNKNOWN_ITEM = "unknown_item"
TASK_MISMATCH = "task_mismatch"
HUMAN = "human"
CLIP_CONDITION = "clip_score"  # the poem benchmark's CLIPScore baseline: a metric as a scalar judge
CHOICE_SCORING_VERSION = "choice-scoring-v1"


def _import_file(step: Step, layout: BenchmarkLayout, release: Release, path: Path, items: dict[str, BenchmarkItem]) -> set[str]:
    """Every row of one predictions file: a prediction of the run its model and condition name, or a rejection
    (stage ``<benchmark>_predictions``) with the row's reason. Returns the runs the file fed."""
    name, sha = step.name_of(path), sha256_file(path)
    file_entity = entity_id("predictions_file", sha)
    runs: dict[tuple[str, str], str] = {}

    def rows() -> Iterator[Item]:
        for locator, parsed in read_predictions(path, name):
            row_digest = digest_of([sha, locator])
            yield Item(entity_id("prediction_row", row_digest), locator, row_digest, parsed)

    def check(item: Item) -> Outcome:
        parsed = item.payload
        if isinstance(parsed, RowProblem):
            return Rejected(parsed.reason_code, parsed.detail)
        if parsed.task != layout.task:
            return Rejected(TASK_MISMATCH, f"{item.locator}: task {parsed.task!r}, this benchmark's is {layout.task!r}")
        if parsed.id not in items:
            return Rejected(UNKNOWN_ITEM, f"{item.locator}: {parsed.id!r} is not an item of {layout.dataset}/{layout.split}"
                            f" in the release {release.digest[:12]}")
        return Kept(parsed, count="predictions_read")

    def write(log: ActivityLog, done: list[Done]) -> None:
        log.entities([Entity(file_entity, "predictions_file", sha, {"path": name, "benchmark": layout.name})])
        log.used([file_entity], "predictions_file")
        rows_out, entities, edges = [], [], []
        for d in done:
            if not d.kept:
                continue
            p: Prediction = d.outcome.value
            group = (p.model, p.condition)
            if group not in runs:
                runs[group] = run_key(layout.name, release, "predictions_file", p.model, p.condition, {}, 0, sha)
                record_run(log.con, run_row(layout, release, runs[group], "predictions_file", p.model, p.condition, {}, 0,
                                             name, sha, log.activity_id))
            prediction_id = prediction_entity_id(runs[group], p.id, p.sample, p.prediction)
            entities.append(Entity(prediction_id, "evaluation_prediction", digest_of(p.prediction),
                                   {"run": runs[group], "item": p.id, "sample": p.sample}))
            edges += [(prediction_id, file_entity, "read_from"), (prediction_id, item_entity_id(layout, p.id), "answers")]
            rows_out.append({"run_key": runs[group], "item_id": p.id, "sample": p.sample, "entity_id": prediction_id,
                             "prediction": p.prediction, "prompt_sha256": digest_of(p.prompt) if p.prompt else None,
                             "template": None, "call_id": p.call_id, "n_words": word_count(p.prediction),
                             "activity_id": log.activity_id})
        log.entities(entities)
        log.generated(e.entity_id for e in entities)
        log.derived(edges)
        write_predictions(log.con, rows_out)

    with step.batch() as log:
        retired = retire_file_runs(log.con, name, sha)
    if retired:
        step.counts["runs_retired"] += retired
        step.notes[f"retired:{name}"] = f"{retired} run(s) of an earlier content of the file"
    run_items(step, f"{layout.name}_predictions", rows(), check, write, batch_size=1000)
    return set(runs.values())


def _score_run(step: Step, layout: BenchmarkLayout, key: str, scores: Iterable[ItemScore], metrics: list[Metric],
               evaluation: EvaluationSettings, judged: Sequence[MetricStatus] = (),
               aggregates: Sequence[Aggregate] = ()) -> None:
    """Store a run's per-item scores, each metric's, statistic's and judgement's status and the summary (bootstrap
    interval over items; ``aggregates``: the run's figures that are not means over items, already with theirs)."""
    by_metric: dict[str, list[float]] = {}
    rows = []
    for s in scores:
        rows.append({"run_key": key, "item_id": s.item_id, "metric": s.metric, "value": s.value})
        if s.value is not None:
            by_metric.setdefault(s.metric, []).append(s.value)
    statuses = [MetricStatus(name, "ran", None, STATISTICS_VERSION, STATISTICS_PARAMETERS).as_row(key)
                for name in STATISTICS.get(layout.name, ((), ()))[1]]
    for m in metrics:
        reason = m.unavailable()
        statuses.append(MetricStatus(m.name, "unavailable" if reason else "ran", reason, m.version(), m.parameters()).as_row(key))
    statuses += [s.as_row(key) for s in judged]
    summary = [{"run_key": key, "metric": a.metric, "mean": a.mean, "ci_low": a.ci_low, "ci_high": a.ci_high,
                "n_items": a.n_items, "resamples": a.resamples, "seed": a.seed} for a in aggregates]
    for metric, values in sorted(by_metric.items()):
        ci = bootstrap_ci(values, resamples=evaluation.bootstrap_resamples, seed=evaluation.bootstrap_seed)
        summary.append({"run_key": key, "metric": metric, "mean": ci.mean, "ci_low": ci.low, "ci_high": ci.high,
                        "n_items": ci.n, "resamples": ci.resamples, "seed": ci.seed})
    with step.batch() as log:
        stamp = {"activity_id": log.activity_id}
        replace_scores(log.con, key, [{**r, **stamp} for r in statuses], [{**r, **stamp} for r in rows],
                       [{**r, **stamp} for r in summary])
        used = log.con.execute("SELECT entity_id FROM evaluation_prediction WHERE run_key = ?", [key]).fetchall()
        log.used((entity for entity, in used), "prediction")


def _predictions_by_item(step: Step, key: str, items: dict[str, BenchmarkItem]) -> Iterator[tuple[BenchmarkItem, list[str]]]:
    """Every item of the release with the run's predictions for it (none: the item is scored as missing)."""
    with step.batch() as log:
        answered: dict[str, list[str]] = {}
        for item_id, text in log.con.execute("SELECT item_id, prediction FROM evaluation_prediction WHERE run_key = ?"
                                             " ORDER BY item_id, sample", [key]).fetchall():
            answered.setdefault(item_id, []).append(text)
    for item_id, item in items.items():
        yield item, answered.get(item_id, [])


def _evaluate(context: AssetExecutionContext, layout: BenchmarkLayout, warehouse: WarehouseResource,
              blob_store: BlobStoreResource, model_providers: ModelProvidersResource,
              evaluation: EvaluationSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    folder = Path(evaluation.releases_dir) / layout.dataset
    try:
        release = open_release(folder, layout)
    except NoItems as exc:  # an optional part the release does not have: nothing to evaluate, said plainly
        context.log.info(str(exc))
        return unrecorded_result(context, wh, skipped=MetadataValue.text(str(exc)))
    except ReleaseError as exc:
        raise Failure(description=f"{layout.name}: {exc}") from exc
    try:
        metrics = build_metrics(evaluation.metrics.by_name())
    except ValueError as exc:
        raise Failure(description=f"evaluation.metrics: {exc}") from exc
    closed = layout.name in CHOICE_BENCHMARKS
    tags = context.run.tags
    files = [Path(p.file) for p in evaluation.predictions if p.benchmark == layout.name]
    files += [Path(tags[PREDICTIONS_TAG])] if PREDICTIONS_TAG in tags else []
    model_runs = [r for r in evaluation.runs if r.benchmark == layout.name]
    model_runs += [ModelRun(benchmark=layout.name, **json.loads(tags[MODEL_RUN_TAG]))] if MODEL_RUN_TAG in tags else []
    params = {"release": wh.name_of(folder), "release_digest": release.digest, "predictions": [wh.name_of(f) for f in files],
              "runs": [r.model_dump() for r in model_runs],
              "metrics": evaluation.metrics.by_name(), "bootstrap": [evaluation.bootstrap_resamples, evaluation.bootstrap_seed]}
    if layout.name == "poem_benchmark":
        params["poem_split"] = evaluation.poem_split.model_dump()
    store = blob_store.get_store()
    with recorded_step(context, wh, params) as step:
        try:
            items = {item.id: item for item in _without_bytes(iter_items(release, layout), store)}
        except ReleaseError as exc:
            raise Failure(description=f"{layout.name}: {exc}") from exc
        calibration: dict[str, BenchmarkItem] = {}
        if layout.name == "poem_benchmark":
            items, calibration = _poem_split(step, items, evaluation)
        runs: set[str] = set()
        for path in files:
            if not path.is_file():
                raise Failure(description=f"{layout.name}: predictions file {wh.name_of(path)} does not exist")
            runs |= _import_file(step, layout, release, path, {**items, **calibration})

        def image_of(item: BenchmarkItem, index: int = 0) -> bytes | None:
            sha = item.images[index].sha256 if len(item.images) > index else None
            return store.get_bytes(sha) if sha and store.exists(sha) else None

        for run in model_runs:
            try:
                runs.add(ask_model(step, layout, release, items, run, model_providers, image_of, calibration))
            except (KeyError, ValueError) as exc:  # an unknown role, baseline or condition: the run cannot start
                raise Failure(description=f"evaluation.runs: {exc.args[0] if exc.args else exc}") from exc

        ready = [m for m in metrics if m.unavailable() is None]  # the others are recorded with their reason
        if closed:
            clip = _clip_score_run(step, layout, release, items, metrics, image_of) if layout.name == "poem_benchmark" else None
            runs |= {clip} if clip else set()
            for key in sorted(runs):
                _score_closed_run(step, layout, key, items, evaluation)
        else:
            statistics = STATISTICS[layout.name][0]
            for key in sorted(runs):
                try:
                    judged, judge_values = judge_scores(step, layout, key, items, evaluation.judges, model_providers, image_of)
                except ValueError as exc:  # an unknown judge role: no run can be judged
                    raise Failure(description=f"evaluation.judges: {exc.args[0] if exc.args else exc}") from exc
                scores = chain(score_items(_predictions_by_item(step, key, items), ready, image_of, statistics=statistics),
                               judge_values)
                _score_run(step, layout, key, scores, metrics, evaluation, judged)
            if any(len(item.references) >= 2 for item in items.values()):
                human = run_key(layout.name, release, HUMAN, HUMAN, "leave_one_out", {}, 0, None)
                with step.batch() as log:
                    record_run(log.con, run_row(layout, release, human, HUMAN, HUMAN, "leave_one_out", {}, 0, None, None,
                                                 log.activity_id))
                _score_run(step, layout, human, human_baseline(items.values(), ready, statistics=statistics), metrics,
                           evaluation)
        for key in sorted(runs):
            _export_predictions(step, layout, key, items, Path(evaluation.out_dir))
        _compare_runs(step, layout, evaluation)
        sections = []
        sheet = evaluation.judges.similarity_sheet
        if layout.name == "photocritique" and (sheet.sheet_dir is not None or sheet.returned):
            write_similarity_sheet(step, layout, items, sorted(runs), evaluation.judges)
            sections.append(read_similarity_sheets(step, layout, evaluation.judges, model_providers))
        audit = evaluation.grounding_audit
        if layout.name == "context_canvas" and (audit.sheet_dir is not None or audit.returned is not None):
            write_grounding_sheet(step, layout, items, sorted(runs), audit)
            sections.append(read_grounding_sheets(step, layout, audit))
        if closed:
            sections += closed_sections(step.warehouse, layout, items, calibration, release)
        report = write_reports(step.warehouse, layout, release, items, Path(evaluation.out_dir), sections,
                               (evaluation.bootstrap_resamples, evaluation.bootstrap_seed))
        step.notes["report"] = step.name_of(report.path)
        step.counts["items"] = len(items)
        step.counts["runs"] = len(runs)
        step.notes["leaderboard"] = _leaderboard(step, layout)
    return step.result(report=MetadataValue.md(report.markdown), report_path=MetadataValue.path(str(report.path)))


def _poem_split(step: Step, items: dict[str, BenchmarkItem],
                evaluation: EvaluationSettings) -> tuple[dict[str, BenchmarkItem], dict[str, BenchmarkItem]]:
    """The held-out poems' images (evaluated) and the calibration poems' (a baseline may learn from them)."""
    split = evaluation.poem_split
    held_out = held_out_poems({item.fields["poem_id"] for item in items.values()}, split.held_out_fraction, split.seed)
    evaluated = {k: v for k, v in items.items() if v.fields["poem_id"] in held_out}
    calibration = {k: v for k, v in items.items() if v.fields["poem_id"] not in held_out}
    step.notes["poem_split"] = (f"{len(held_out)} held-out poem(s), {len(evaluated)} image(s) evaluated;"
                                f" {len(items) - len(evaluated)} calibration image(s) (fraction {split.held_out_fraction},"
                                f" seed {split.seed})")
    return evaluated, calibration


def _answers_by_item(step: Step, key: str) -> dict[str, dict[int, str]]:
    with step.batch() as log:
        rows = log.con.execute("SELECT item_id, sample, prediction FROM evaluation_prediction WHERE run_key = ?",
                               [key]).fetchall()
    answers: dict[str, dict[int, str]] = {}
    for item_id, sample, text in rows:
        answers.setdefault(item_id, {})[int(sample)] = text
    return answers


def _score_closed_run(step: Step, layout: BenchmarkLayout, key: str, items: Mapping[str, BenchmarkItem],
                      evaluation: EvaluationSettings) -> None:
    """Read and score every answer of a closed-answer run (unreadable ones are wrong and listed)."""
    with step.batch() as log:
        condition, = log.con.execute("SELECT condition FROM evaluation_run WHERE run_key = ?", [key]).fetchone()
    condition = condition or PRIMARY_CONDITION[layout.name]  # a predictions file that names none: the primary one
    scored = score_run(layout.name, condition, items, _answers_by_item(step, key), evaluation.bootstrap_resamples,
                       evaluation.bootstrap_seed)
    names = metric_names(layout.name, scored.scores, scored.aggregates)
    judged = [MetricStatus(name, "ran", None, CHOICE_SCORING_VERSION, {"condition": condition}) for name in names]
    with step.batch() as log:
        replace_answers(log.con, key, [{**vars(a), "run_key": key, "activity_id": log.activity_id} for a in scored.answers])
    _score_run(step, layout, key, scored.scores, [], evaluation, judged, scored.aggregates)
    unreadable = sum(1 for a in scored.answers if a.problem)
    if unreadable:
        step.counts["answers_unreadable"] += unreadable
    if scored.skipped:
        step.notes[f"left_out:{key.split(':', 1)[1][:12]}"] = (
            f"{len(scored.skipped)} item(s) left out under {condition}: "
            + "; ".join(f"{item}: {reason}" for item, (reason, _) in sorted(scored.skipped.items())[:5]))


def _clip_score_run(step: Step, layout: BenchmarkLayout, release: Release, items: Mapping[str, BenchmarkItem],
                    metrics: Sequence[Metric], image_of: Callable[[BenchmarkItem], bytes | None]) -> str | None:
    """CLIPScore as the poem benchmark's scalar baseline judge (``001_*`` Table 4): each held-out image's score
    against its poem, stored as that image's prediction, so only its per-poem tau is defined. Without weights the
    run is recorded with the reason and scores nothing (None: no run to score)."""
    clip = next((m for m in metrics if m.name == "clip_score"), None)
    reason = "evaluation.metrics.clip_score is disabled" if clip is None else clip.unavailable()
    decoding = {"metric": "clip_score", "version": None if clip is None else clip.version(),
                "parameters": {} if clip is None else clip.parameters()}
    key = run_key(layout.name, release, "baseline", "baseline:clip_score", CLIP_CONDITION, decoding, 0, None)
    with step.batch() as log:
        record_run(log.con, run_row(layout, release, key, "baseline", "baseline:clip_score", CLIP_CONDITION, decoding, 0,
                                    None, None, log.activity_id))
    if reason is not None:
        statuses = [MetricStatus(name, "unavailable", reason, decoding["version"] or "", {}) for name in POEM_AGGREGATES]
        with step.batch() as log:
            replace_scores(log.con, key, [{**s.as_row(key), "activity_id": log.activity_id} for s in statuses], [], [])
        step.notes["clip_score_baseline"] = f"did not run: {reason}"
        return None
    pairs = [(item, image_of(item)) for item in items.values()]
    pairs = [(item, image) for item, image in pairs if image is not None]
    values = clip.score_images([image for _, image in pairs],
                               [item.fields.get("translation") or item.fields["text"] for item, _ in pairs]) if pairs else []
    rows, entities, edges = [], [], []
    with step.batch() as log:
        for (item, _), value in zip(pairs, values):
            text = json.dumps({"score": round(float(value), 6)})
            prediction_id = prediction_entity_id(key, item.id, 0, text)
            entities.append(Entity(prediction_id, "evaluation_prediction", digest_of(text), {"run": key, "item": item.id}))
            edges.append((prediction_id, item_entity_id(layout, item.id), "answers"))
            rows.append({"run_key": key, "item_id": item.id, "sample": 0, "entity_id": prediction_id, "prediction": text,
                         "prompt_sha256": None, "template": None, "call_id": None, "n_words": 1,
                         "activity_id": log.activity_id})
        log.entities(entities)
        log.generated(e.entity_id for e in entities)
        log.derived(edges)
        replace_predictions(log.con, key, rows)
    return key


def _export_predictions(step: Step, layout: BenchmarkLayout, key: str, items: dict[str, BenchmarkItem], out_dir: Path) -> None:
    """A run asked here, as a predictions file (``<out_dir>/<benchmark>/<run digest>.jsonl``, the format ``aesforge
    score`` reads), in (item, sample) order; the timestamp is the model call's, so a cached re-run writes the same
    bytes. Imported runs are not written back."""
    with step.batch() as log:
        source, model, condition = log.con.execute(
            "SELECT source, model, condition FROM evaluation_run WHERE run_key = ?", [key]).fetchone()
        if source == "predictions_file":
            return
        answers = log.con.execute(
            "SELECT p.item_id, p.sample, p.prediction, p.call_id, strftime(c.called_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ')"
            " FROM evaluation_prediction p LEFT JOIN model_call c ON c.call_id = p.call_id WHERE p.run_key = ?"
            " ORDER BY p.item_id, p.sample", [key]).fetchall()
    target = out_dir / layout.name / f"{key.split(':', 1)[1][:16]}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    rows = (Prediction(id=item_id, task=layout.task, model=model, prediction=text, sample=sample, condition=condition,
                       image_paths=tuple(i.path for i in items[item_id].images if i.path) if item_id in items else (),
                       reference=items[item_id].references if item_id in items else (), timestamp=called or "",
                       call_id=call_id)
            for item_id, sample, text, call_id, called in answers)
    n = write_predictions_file(rows, target)
    step.notes[f"predictions:{model}/{condition}"] = f"{step.name_of(target)} ({n} rows)"


def _compare_runs(step: Step, layout: BenchmarkLayout, evaluation: EvaluationSettings) -> None:
    """Every pair of the benchmark's runs, per metric both scored over the same items: the paired bootstrap of the
    mean difference; on a binary metric (every value 0 or 1: accuracy) McNemar's exact test, Bonferroni-adjusted over
    all the pairs compared on that metric (AesCanvas S2.3.3); on a continuous one the paired t-test (AesEval
    appendix H, for IoU)."""
    with step.batch() as log:
        keys = [k for k, in log.con.execute("SELECT run_key FROM evaluation_run WHERE benchmark = ? ORDER BY run_key",
                                             [layout.name]).fetchall()]
        pairs = log.con.execute(
            "SELECT a.run_key, b.run_key, a.metric, list(a.value ORDER BY a.item_id), list(b.value ORDER BY a.item_id)"
            " FROM evaluation_score a JOIN evaluation_score b ON b.item_id = a.item_id AND b.metric = a.metric"
            " AND a.run_key < b.run_key WHERE list_contains(?, a.run_key) AND list_contains(?, b.run_key)"
            " AND a.value IS NOT NULL AND b.value IS NOT NULL GROUP BY ALL ORDER BY ALL", [keys, keys]).fetchall()
    rows = []
    compared = COMPARED.get(layout.name)
    for run_a, run_b, metric, a, b in pairs:
        if compared is not None and metric not in compared:
            continue
        paired = paired_bootstrap(a, b, resamples=evaluation.bootstrap_resamples, seed=evaluation.bootstrap_seed)
        d = paired.difference
        row = {"run_a": run_a, "run_b": run_b, "metric": metric, "n_items": d.n, "mean_diff": d.mean,
               "ci_low": d.low, "ci_high": d.high, "mcnemar_b": None, "mcnemar_c": None, "mcnemar_p": None,
               "mcnemar_p_adjusted": None, "t_statistic": None, "t_p": None}
        if all(v in (0.0, 1.0) for v in (*a, *b)):
            test = mcnemar_exact([v == 1.0 for v in a], [v == 1.0 for v in b])
            row.update(mcnemar_b=test.b, mcnemar_c=test.c, mcnemar_p=test.p_value)
        elif len(a) >= 2:
            t = paired_t_test(a, b)
            row.update(t_statistic=_finite(t.statistic), t_p=_finite(t.p_value))
        rows.append(row)
    by_metric: dict[str, list[dict]] = {}
    for row in rows:
        if row["mcnemar_p"] is not None:
            by_metric.setdefault(row["metric"], []).append(row)
    for family in by_metric.values():
        for row, adjusted in zip(family, bonferroni([r["mcnemar_p"] for r in family])):
            row["mcnemar_p_adjusted"] = adjusted
    with step.batch() as log:
        replace_comparisons(log.con, keys, [{**r, "activity_id": log.activity_id} for r in rows])
    step.counts["comparisons"] = len(rows)


def _finite(value: float) -> float | None:
    return value if value == value and abs(value) != float("inf") else None


def _without_bytes(items: Iterator[BenchmarkItem], store: BlobStore) -> Iterator[BenchmarkItem]:
    """Items as the scorer keeps them: images by sha256 only (the blob store serves the bytes when a model or
    metric needs them), so the whole benchmark fits in memory whatever its images weigh. Bytes a release embeds
    (a downloaded release, no pool here) go into the blob store first, when they are what the row's sha256 says."""
    for item in items:
        for image in item.images:
            if image.data is not None and not store.exists(image.sha256) and sha256_hex(image.data) == image.sha256:
                store.put_bytes(image.data)
        yield BenchmarkItem(item.id, item.fields, tuple(ItemImage(i.sha256, None, i.path) for i in item.images), item.references)


def _leaderboard(step: Step, layout: BenchmarkLayout) -> list[str]:
    """The headline figures for the step's summary: metrics, judges and length (the other statistics are in the
    report)."""
    with step.batch() as log:
        rows = log.con.execute(
            "SELECT model, condition, metric, status, mean, ci_low, ci_high, n_items FROM evaluation_leaderboard"
            " WHERE benchmark = ? AND NOT list_contains(?, metric) ORDER BY metric, model, condition",
            [layout.name, list(DESCRIPTIVE)]).fetchall()
    rows = [r for r in rows if not is_breakdown(r[2])]
    return [f"{metric} {model}/{condition}: " + (f"{mean:.4f} [{low:.4f}, {high:.4f}] n={n}" if mean is not None
                                                 else "did not run")
            for model, condition, metric, status, mean, low, high, n in rows]


DESCRIPTIONS = {
    "photocritique": "Scores model runs and predictions files on the photocritique release (3x3 max-mapping against the"
                     " three ranked human critiques, judges, answer statistics) and the human leave-one-out baseline;"
                     " leaderboard with bootstrap 95 % intervals (view evaluation_leaderboard) and report.",
    "critique_canvas": "Scores model runs and predictions files on the CritiqueCanvas evaluation split against the"
                       " verified responses (metrics, quality judge, Table S5 statistics); leaderboard and report.",
    "context_canvas": "Asks models the ContextCanvas cases under the Table S9 conditions and scores the option ids:"
                      " accuracy, macro-F1, per-class F1, Yes rate, McNemar with Bonferroni between runs, the grounding"
                      " audit sheet (EGA, Unsupported); leaderboard and report.",
    "counterfactual": "Asks models each approved counterfactual pair (original, then edit) from the ContextCanvas"
                      " release and scores original, edit and pair accuracy, directional updates and NCU (Table S7).",
    "aeseval": "Asks models the AesEval questions (three formats, with the design's JSON metadata; input ablations) and"
               " scores accuracy, None-accuracy and IoU per indicator and overall (Tables 2-5); McNemar and paired t.",
    "poem_benchmark": "Scores judges of poem illustrations on held-out poems against the people's rubric scores: MAE,"
                      " share within 0.05, per-poem Kendall tau (Table 4), CLIPScore as a baseline when weights exist.",
}


def _benchmark_asset(layout: BenchmarkLayout):
    @asset(
        name=f"{layout.name}_evaluation",
        metadata=writes("evaluation_leaderboard", where=f"benchmark = '{layout.name}'"),
        code_version="1",
        deps=[AssetKey(f"{layout.dataset}_release")],
        description=DESCRIPTIONS[layout.name],
    )
    def _evaluation(context: AssetExecutionContext, warehouse: WarehouseResource, blob_store: BlobStoreResource,
                    model_providers: ModelProvidersResource, evaluation: EvaluationSettings) -> MaterializeResult:
        return _evaluate(context, layout, warehouse, blob_store, model_providers, evaluation)

    return _evaluation


photocritique_evaluation = _benchmark_asset(LAYOUTS["photocritique"])
critique_canvas_evaluation = _benchmark_asset(LAYOUTS["critique_canvas"])
context_canvas_evaluation = _benchmark_asset(LAYOUTS["context_canvas"])
counterfactual_evaluation = _benchmark_asset(LAYOUTS["counterfactual"])
aeseval_evaluation = _benchmark_asset(LAYOUTS["aeseval"])
poem_benchmark_evaluation = _benchmark_asset(LAYOUTS["poem_benchmark"])
