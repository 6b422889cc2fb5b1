"""Rubric scores per illustration and the benchmark's statistics (TangPoetryBench section 3, appendices C-D).

Pure logic: assets/poetry/logic/stats.py. Scores are recomputed from every kept response whenever the responses, the
text labels or the settings change (a survey is small next to the images it rates); each image's score is an
entity derived from the responses it averages and the text label it used.
"""

import json
from pathlib import Path

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from assets.core.exports import Contents, ExportFile, publish
from assets.poetry.logic.stats import ImageScore, bootstrap_ranks, image_scores, model_means, within_one_agreement
from assets.poetry.logic.survey_rows import SurveyResponse
from assets.poetry.settings import PoetrySettings
from assets.poetry.store import replace_benchmark_statistics, replace_image_scores
from assets.poetry.survey import poem_survey_responses
from assets.poetry.text_integrity import poem_text_integrity
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.warehouse import WarehouseResource
from warehouse.ids import digest_of, entity_id
from warehouse.lineage import Entity


def kept_responses(con) -> list[SurveyResponse]:
    """The stored responses that passed quality control."""
    rows = con.execute("SELECT row_number, annotator_id, item_id, phase1_choice, phase1_correct, answers, seconds, annotator_group,"
                       " image_sha256 FROM poem_survey_response WHERE kept ORDER BY item_id, annotator_id").fetchall()
    return [SurveyResponse(row, annotator, item, choice, correct, json.loads(answers), seconds, group, image)
            for row, annotator, item, choice, correct, answers, seconds, group, image in rows]


@asset(
    metadata=writes("poem_image_score"),
    code_version="1",
    deps=[poem_survey_responses, poem_text_integrity],
    description="Per illustration: each rubric dimension's mean over kept raters (not-applicable answers excluded), the"
    " text-integrity label from OCR/adjudication, quality (unweighted mean of applicable dimensions), recognizability.",
)
def poem_scores(context: AssetExecutionContext, warehouse: WarehouseResource) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    with recorded_step(context, wh, {}) as step:
        with step.batch() as log:
            responses = kept_responses(log.con)
            text_labels = log.con.execute("SELECT item_id, label, source FROM poem_text_label ORDER BY item_id").fetchall()
            items = {r[0]: r[1:] for r in log.con.execute("SELECT item_id, poem_id, generator, entity_id FROM poem_illustration").fetchall()}
            last = step.last_inputs(log.con)
        inputs = digest_of([[r.as_dict() for r in responses], text_labels, sorted(items)])
        if last == inputs:
            step.notes["unchanged"] = "same kept responses, text labels and illustrations as last time"
            return step.result()
        labels = {item: label for item, label, _ in text_labels}
        sources = {item: source for item, _, source in text_labels}
        scores = image_scores([r for r in responses if r.item_id in items], labels)
        rows, entities, edges = [], [], []
        by_item: dict[str, list[str]] = {}
        for r in responses:
            by_item.setdefault(r.item_id, []).append(r.response_id)
        for item_id, s in sorted(scores.items()):
            poem_id, generator, illustration = items[item_id]
            score_entity = entity_id("poem_image_score", digest_of([item_id, s.dims, s.quality, s.recognizability]))
            entities.append(Entity(score_entity, "poem_image_score", attributes={"item_id": item_id}))
            edges.append((score_entity, illustration, "scores"))
            edges.extend((score_entity, response, "averages") for response in by_item.get(item_id, []))
            rows.append({"item_id": item_id, "poem_id": poem_id, "generator": generator, "dimensions": json.dumps(s.dims, sort_keys=True),
                         "n_ratings": json.dumps(s.n_applicable, sort_keys=True), "quality": s.quality,
                         "recognizability": s.recognizability, "n_raters": s.n_raters,
                         "text_integrity_survey": s.text_integrity_survey,
                         "text_label_source": sources.get(item_id) if s.text_integrity_labelled else None})
        with step.batch() as log:
            replace_image_scores(log.con, [{**r, "activity_id": log.activity_id} for r in rows])
            log.entities(entities)
            log.generated(e.entity_id for e in entities)
            log.derived(edges)
            step.remember_inputs(log, inputs)
        step.counts.update({"images_scored": len(rows), "responses_used": len(responses)})
    return step.result()


@asset(
    metadata=writes("poem_model_score", "poem_agreement", "poem_rank_frequency"),
    code_version="1",
    deps=[poem_scores],
    description="Within-one-level agreement per dimension on multi-rated images, per-model means per dimension, and a"
    " seeded paired bootstrap over poems of the model ranking (how often each model holds each rank).",
)
def poem_benchmark_statistics(context: AssetExecutionContext, warehouse: WarehouseResource, poetry: PoetrySettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    params = {"bootstrap_resamples": poetry.bootstrap_resamples, "bootstrap_seed": poetry.bootstrap_seed}
    with recorded_step(context, wh, params) as step:
        with step.batch() as log:
            responses = kept_responses(log.con)
            score_rows = log.con.execute(
                "SELECT item_id, poem_id, generator, n_raters, dimensions, n_ratings, quality, recognizability,"
                " text_integrity_survey, text_label_source FROM poem_image_score ORDER BY item_id").fetchall()
            last = step.last_inputs(log.con)
        inputs = digest_of([score_rows, [r.as_dict() for r in responses], params])
        if last == inputs:
            step.notes["unchanged"] = "same scores, responses and bootstrap settings as last time"
            return step.result()
        model_of = {row[0]: row[2] for row in score_rows}
        scores = {item: ImageScore(item, n_raters, json.loads(dims), json.loads(n_ratings), quality, recognizability,
                                   survey_text, label_source is not None)
                  for item, _, _, n_raters, dims, n_ratings, quality, recognizability, survey_text, label_source in score_rows}
        agreement = within_one_agreement(responses)
        means = model_means(scores, model_of)
        quality: dict[str, dict[str, float]] = {}
        for item, poem_id, generator, *_ in score_rows:
            if scores[item].quality is not None:
                quality.setdefault(generator, {})[poem_id] = scores[item].quality
        ranks = bootstrap_ranks(quality, poetry.bootstrap_resamples, poetry.bootstrap_seed) if len(quality) >= 2 else None
        with step.batch() as log:
            rank_rows = []
            if ranks is not None:
                observed = {g: i + 1 for i, g in enumerate(ranks.observed_ranking)}
                rank_rows = [{"generator": g, "rank": rank, "share": share, "observed_rank": observed[g],
                              "n_resamples": ranks.n_resamples, "n_poems": ranks.n_poems, "seed": ranks.seed,
                              "activity_id": log.activity_id}
                             for g, by_rank in ranks.frequencies.items() for rank, share in by_rank.items()]
            replace_benchmark_statistics(
                log.con,
                [{"dimension": d, "pairs": a.pairs, "agreeing": a.agreeing, "rate": a.rate, "activity_id": log.activity_id}
                 for d, a in agreement.items()],
                [{"generator": g, "metric": m, "mean": c.mean, "n": c.n, "activity_id": log.activity_id}
                 for g, cells in means.items() for m, c in cells.items()],
                rank_rows)
            step.remember_inputs(log, inputs)
        step.counts.update({"generators": len(means), "multi_rated_pairs": sum(a.pairs for a in agreement.values())})
        if ranks is not None:
            step.notes["observed_ranking"] = list(ranks.observed_ranking)
            step.notes["rank_one_share"] = {g: ranks.frequencies[g].get(1, 0.0) for g in ranks.models}
        else:
            step.notes["bootstrap"] = "fewer than two generators with scores: no ranking to resample"
    return step.result(per_model=MetadataValue.json({g: {m: c.mean for m, c in cells.items()} for g, cells in means.items()}))


@asset(
    metadata=writes("export_file", where="dataset = 'poetry_benchmark'"),
    code_version="2",
    deps=[poem_benchmark_statistics],
    description="poem_images.{jsonl,parquet} (one record per illustration: poem, generator or stand-in, image, rubric"
    " scores, quality, recognizability, text label, provenance), poem_rater_annotations.{jsonl,parquet} (one record"
    " per pseudonymous rater, illustration and survey item, with the quality-control outcome) and poem_model_table.csv"
    " (the per-model table). A file with no rows is not written.",
)
def poetry_benchmark_export(context: AssetExecutionContext, warehouse: WarehouseResource, poetry: PoetrySettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    out = Path(poetry.export_dir)
    images = "SELECT * FROM poem_image_records ORDER BY id"
    annotations = "SELECT * FROM poem_rater_annotations ORDER BY rater_id, item_id, item"
    responses = "SELECT response_id FROM poem_survey_response ORDER BY 1"
    files = [
        ExportFile(out / "poem_images.jsonl", images, "json"),
        ExportFile(out / "poem_images.parquet", images, "parquet"),
        ExportFile(out / "poem_rater_annotations.jsonl", annotations, "json", responses),
        ExportFile(out / "poem_rater_annotations.parquet", annotations, "parquet", responses),
        ExportFile(out / "poem_model_table.csv", "SELECT * FROM poem_model_table ORDER BY quality DESC, generator", "csv",
                   "SELECT entity_id FROM poem_illustration ORDER BY 1"),
    ]
    contents = Contents("SELECT entity_id FROM poem_illustration ORDER BY 1", role="illustration",
                        fingerprint_query="SELECT count(*), sum(hash(item_id, dimensions, quality, recognizability)),"
                        " (SELECT sum(hash(rater_id, item_id, item, answer, image_sha256, passed_qc, qc_reason, rater_passed_qc))"
                        " FROM poem_rater_annotations) FROM poem_image_score")
    with recorded_step(context, wh, {"export_dir": str(out)}) as step:
        publish(step, "poetry_benchmark", files, contents)
    return step.result()
