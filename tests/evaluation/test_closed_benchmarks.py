"""The closed-answer benchmarks evaluated for real (materializations on a DuckDB warehouse, releases read from
Parquet): ContextCanvas under its conditions with the always-No floor, the counterfactual pairs, AesEval with its
ablations and first-option floor, the poem judges on held-out poems; predictions files imported for each; McNemar
with Bonferroni between runs; and the grounding audit sheet written and read back."""

import io
import json
import math
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

from assets.evaluation.logic.choice_scoring import MISSING
from tests.support.closed_releases import CASES, POEM_SCORES, aeseval_release, context_release, poem_release
from tests.support.critique_harness import GEMINI_KEY, failures, materialize
from tests.support.model_servers import InjectedFailure, ModelApiServer, gemini_path, wire_images, wire_schema, wire_user_text
from warehouse.db import Warehouse


def _evaluate(root, benchmark, runs=(), **evaluation):
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump({
        "warehouse": {"path": "warehouse.duckdb"}, "blob_store": {"root": "blobs"},
        "evaluation": {"releases_dir": "releases", "bootstrap_resamples": 300,
                       "runs": [{"benchmark": benchmark, **(r if isinstance(r, dict) else {"model": r})} for r in runs],
                       **evaluation}}))
    result = materialize(config, f"{benchmark}_evaluation")
    assert result.success, failures(result)
    return Warehouse(root / "warehouse.duckdb", root=root)


def _board(wh, benchmark):
    frame = wh.query("SELECT model, condition, metric, status, mean, n_items, reason FROM evaluation_leaderboard"
                     " WHERE benchmark = ?", [benchmark])
    return {(m, c, metric): (mean, n, status, reason) for m, c, metric, status, mean, n, reason in frame.itertuples(index=False)}


def test_context_canvas_always_no_equals_one_minus_the_gold_yes_rate_and_conditions_are_scored(tmp_path):
    gold = context_release(tmp_path)
    conditions = ("image", "text_only", "neutral", "evidence")
    wh = _evaluate(tmp_path, "context_canvas", [*({"model": "annotator", "condition": c} for c in conditions),
                                                "baseline:always_no"])
    board = _board(wh, "context_canvas")
    binary = [g for case_id, g in gold.items() if len(CASES[case_id][1]) == 2]
    yes_rate = binary.count("A") / len(binary)
    assert board[("baseline:always_no", "image", "binary_accuracy")][0] == pytest.approx(1 - yes_rate)
    assert board[("baseline:always_no", "image", "yes_rate")][0] == 0.0
    assert board[("baseline:always_no", "image", "accuracy")][0] == pytest.approx(
        sum(g == "B" for g in gold.values()) / len(gold))
    for condition in conditions:
        assert ("heuristic/heuristic-v1", condition, "accuracy") in board
    # ctx-pick has no descriptions: the description conditions leave it out rather than count it wrong
    assert board[("heuristic/heuristic-v1", "neutral", "accuracy")][1] == 3
    assert board[("heuristic/heuristic-v1", "image", "accuracy")][1] == 4
    # the offline judge reads the pixels: the warm, vivid case is not calm and cool
    answers = dict(wh.query("SELECT item_id, answer FROM evaluation_answers WHERE model = 'heuristic/heuristic-v1'"
                            " AND condition = 'image'").itertuples(index=False))
    assert answers["ctx-warm"] == "B" and answers["ctx-cool"] == "A"
    # McNemar between every pair of runs on accuracy, Bonferroni over them
    paired = wh.query("SELECT mcnemar_p, mcnemar_p_adjusted FROM evaluation_paired WHERE benchmark = 'context_canvas'"
                      " AND metric = 'accuracy'")
    assert len(paired) == 10  # five runs
    assert all(adj == pytest.approx(min(1.0, p * 10)) for p, adj in paired.itertuples(index=False))
    report = (tmp_path / "evaluation" / "context_canvas" / "report.md").read_text()
    assert "AesCanvas Table S4" in report and "AesCanvas Table S9" in report and "Gold Yes rate" in report


def test_counterfactual_pairs_score_pair_accuracy_and_ncu(tmp_path):
    context_release(tmp_path)
    wh = _evaluate(tmp_path, "counterfactual", ["annotator", "baseline:always_no"])
    board = _board(wh, "counterfactual")
    # always No: right on both originals (No), wrong on both edits (Yes): no pair right, no update at all
    assert board[("baseline:always_no", "image", "original_accuracy")][0] == 1.0
    assert board[("baseline:always_no", "image", "edit_accuracy")][0] == 0.0
    assert board[("baseline:always_no", "image", "ncu")][0] == 0.0
    assert board[("baseline:always_no", "image", "unchanged_correct")][0] == 1.0
    # the offline judge: the warm original is No, its cool recolouring Yes: a correct directional update
    sides = wh.query("SELECT item_id, sample, answer FROM evaluation_answers WHERE model = 'heuristic/heuristic-v1'"
                     " ORDER BY ALL").values.tolist()
    assert ["cf-warm", 0, "B"] in sides and ["cf-warm", 1, "A"] in sides
    assert len(sides) == 4  # two pairs, asked twice each
    report = (tmp_path / "evaluation" / "counterfactual" / "report.md").read_text()
    assert "AesCanvas Table S7" in report and "NCU" in report


def test_a_release_without_counterfactual_pairs_is_skipped_not_failed(tmp_path):
    context_release(tmp_path)
    for shard in (tmp_path / "releases" / "context_canvas" / "data" / "counterfactual_pairs").glob("*"):
        shard.unlink()
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"warehouse": {"path": "warehouse.duckdb"}, "blob_store": {"root": "blobs"},
                                      "evaluation": {"releases_dir": "releases"}}))
    result = materialize(config, "counterfactual_evaluation")
    assert result.success
    metadata = next(e for e in result.all_events if e.is_step_materialization).event_specific_data.materialization.metadata
    assert "nothing to evaluate" in metadata["skipped"].value


def test_aeseval_scores_formats_ablations_and_the_first_option_floor(tmp_path):
    aeseval_release(tmp_path)
    wh = _evaluate(tmp_path, "aeseval", [*({"model": "annotator", "condition": c} for c in
                                          ("full", "no_image", "no_explanation", "no_metadata")), "baseline:first_option"])
    board = _board(wh, "aeseval")
    floor = "baseline:first_option"
    assert board[(floor, "full", "judgment_accuracy")][0] == 0.0  # answers yes, gold no
    assert board[(floor, "full", "region_accuracy")][0] == 0.0  # answers A, gold B (None)
    # the full canvas against the gold box [120, 50, 180, 90]: 2400 / 20000
    assert board[(floor, "full", "localisation_iou")][0] == pytest.approx(2400 / 20000)
    assert board[(floor, "full", "judgment_accuracy_overall")][0] == 0.0
    for condition in ("full", "no_image", "no_explanation", "no_metadata"):
        assert ("heuristic/heuristic-v1", condition, "region_accuracy") in board
    report = (tmp_path / "evaluation" / "aeseval" / "report.md").read_text()
    assert "AesEval Table 2" in report and "AesEval Table 5" in report


def test_poem_judges_are_scored_on_held_out_poems_and_clip_says_it_has_no_weights(tmp_path):
    poem_release(tmp_path)
    wh = _evaluate(tmp_path, "poem_benchmark", ["judge", "baseline:calibration_mean"],
                   poem_split={"held_out_fraction": 0.5, "seed": 3})
    board = _board(wh, "poem_benchmark")
    n_images = board[("baseline:calibration_mean", "rubric", "mae")][1]
    held_out = wh.query("SELECT DISTINCT item_id FROM evaluation_score").item_id.tolist()
    poems = {POEM_SCORES[i][0] for i in held_out}
    assert len(poems) == 2 and n_images == len(held_out) < len(POEM_SCORES)
    # the calibration mean is constant: an MAE, but no ranking (tau) at all
    tau = board.get(("baseline:calibration_mean", "rubric", "kendall_tau"))
    assert tau is None or math.isnan(tau[0])
    clip = board[("baseline:clip_score", "clip_score", "kendall_tau")]
    assert clip[2] == "unavailable" and "clip_score" in clip[3]
    report = (tmp_path / "evaluation" / "poem_benchmark" / "report.md").read_text()
    assert "TangPoetryBench Table 4" in report and "expert | 3 | 4 | 75.0" in report and "crowd | 1 | 4 | 25.0" in report


def _predictions(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("benchmark", ["context_canvas", "counterfactual", "aeseval", "poem_benchmark"])
def test_a_predictions_file_is_scored_and_its_bad_rows_rejected(tmp_path, benchmark):
    task = {"context_canvas": "context_canvas/choice", "counterfactual": "counterfactual/choice", "aeseval": "aeseval/answer",
            "poem_benchmark": "poem_benchmark/judge"}[benchmark]
    if benchmark == "aeseval":
        aeseval_release(tmp_path)
        good = [{"id": "q-judge", "prediction": "no"}, {"id": "q-region", "prediction": "B"},
                {"id": "q-locate", "prediction": "[120, 50, 180, 90]"}]
    elif benchmark == "poem_benchmark":
        poem_release(tmp_path)
        good = [{"id": item, "prediction": json.dumps({"scores": {"core_imagery": score}})}
                for item, (_, score, _) in POEM_SCORES.items()]
    else:
        context_release(tmp_path)
        good = ([{"id": case_id, "prediction": json.dumps({"answer": answer})} for case_id, answer in
                 context_release(tmp_path).items()] if benchmark == "context_canvas" else
                [{"id": pair, "sample": s, "prediction": answer} for pair in ("cf-warm", "cf-dark") for s, answer in ((0, "B"), (1, "A"))])
    rows = [{**r, "task": task, "model": "elsewhere/model-x"} for r in good]
    rows += [{"id": "no-such-item", "task": task, "model": "elsewhere/model-x", "prediction": "A"},
             {"id": good[-1]["id"], "task": "photocritique/critique", "model": "elsewhere/model-y", "prediction": "A"}]
    file = _predictions(tmp_path / "predictions.jsonl", rows)
    wh = _evaluate(tmp_path, benchmark, predictions=[{"benchmark": benchmark, "file": str(file)}])
    rejected = sorted(wh.query("SELECT reason_code FROM rejection WHERE stage = ?", [f"{benchmark}_predictions"]).reason_code)
    assert rejected == ["task_mismatch", "unknown_item"]
    board = _board(wh, benchmark)
    headline = {"context_canvas": "accuracy", "counterfactual": "pair_accuracy", "aeseval": "judgment_accuracy",
                "poem_benchmark": "mae"}[benchmark]
    mean = board[("elsewhere/model-x", "", headline)][0]
    expected = {"context_canvas": 1.0, "counterfactual": 1.0, "aeseval": 1.0, "poem_benchmark": 0.0}[benchmark]
    assert mean == pytest.approx(expected)
    if benchmark == "aeseval":
        assert board[("elsewhere/model-x", "", "localisation_iou")][0] == 1.0


def test_the_grounding_audit_sheet_is_written_and_read_back_into_ega(tmp_path, monkeypatch):
    context_release(tmp_path)
    monkeypatch.setenv("AESFORGE_GROUNDING_SALT", "pepper")
    audit = {"sheet_dir": "review"}
    _evaluate(tmp_path, "context_canvas", ["annotator"], grounding_audit=audit)
    sheet = (tmp_path / "review" / "context_canvas_grounding_sheet.csv").read_text().splitlines()
    header, rows = sheet[0].split(","), sheet[1:]
    assert header[:2] == ["row_id", "scenario"] and "grounded" in header and "rater" in header
    assert rows  # the offline judge got some cases right
    row_ids = [line.split(",")[0] for line in rows]
    returned = tmp_path / "review" / "returned.csv"
    lines = ["row_id,grounded,context_link,rater", f"{row_ids[0]},yes,yes,Ana", f"{row_ids[0]},no,no,Ben",
             f"{row_ids[0]},yes,yes,Cy", "ega-unknown,yes,yes,Ana"]
    lines += [f"{row_id},maybe,yes,Ana" for row_id in row_ids[1:2]]
    returned.write_text("\n".join(lines) + "\n")
    wh = _evaluate(tmp_path, "context_canvas", ["annotator"], grounding_audit={**audit, "returned": [str(returned)]})
    reasons = sorted(wh.query("SELECT reason_code FROM rejection WHERE stage = 'context_canvas_grounding_ratings'").reason_code)
    assert reasons == ["invalid_verdict", "unknown_row"][: 1 + (len(row_ids) > 1)][::-1] or reasons == sorted(
        ["unknown_row"] + (["invalid_verdict"] if len(row_ids) > 1 else []))
    raters = wh.query("SELECT rater FROM evaluation_grounding_rating").rater.tolist()
    assert len(raters) == 3 and not any(name in r for r in raters for name in ("Ana", "Ben", "Cy"))
    report = (tmp_path / "evaluation" / "context_canvas" / "report.md").read_text()
    section = report.split("## Evidence-grounded accuracy (AesCanvas Table S8)")[1].split("##")[0]
    row = next(line for line in section.splitlines() if line.startswith("| heuristic"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "1"  # one audited case (the rated one); 2 of 3 raters said grounded: EGA 100 %
    assert cells[3] == "100.0" and cells[4] == "0.0"


def test_unreadable_and_missing_answers_are_wrong_and_listed(tmp_path):
    context_release(tmp_path)
    rows = [{"id": "ctx-warm", "task": "context_canvas/choice", "model": "m", "prediction": "What a lovely picture."},
            {"id": "ctx-cool", "task": "context_canvas/choice", "model": "m", "prediction": "A"}]
    file = _predictions(tmp_path / "p.jsonl", rows)
    wh = _evaluate(tmp_path, "context_canvas", predictions=[{"benchmark": "context_canvas", "file": str(file)}])
    problems = dict(wh.query("SELECT item_id, problem FROM evaluation_answers").itertuples(index=False))
    assert problems == {"ctx-warm": "unparsed", "ctx-cool": None, "ctx-dark": MISSING, "ctx-pick": MISSING}
    assert _board(wh, "context_canvas")[("m", "", "accuracy")][0] == 0.25
    report = (tmp_path / "evaluation" / "context_canvas" / "report.md").read_text()
    assert "## Unreadable answers" in report and "What a lovely" not in report.split("## Unreadable answers")[0][-10:]


def _case_of(body) -> str | None:
    """Which case a request shows, from its image's colour (None: no image was sent)."""
    images = wire_images(body)
    if not images:
        return None
    with Image.open(io.BytesIO(images[0][1])) as image:
        colour = image.convert("RGB").getpixel((0, 0))
    return next(case_id for case_id, (c, *_rest) in CASES.items() if tuple(c) == colour)


def gemini_answers(body) -> str:
    """A remote model's answers computed from what it was sent: a JSON answer for most cases, a marked letter in
    prose for one, a sentence naming no option for another, and the text-only answer from the prompt alone."""
    case = _case_of(body)
    if case is None:
        return json.dumps({"answer": "A", "reason": "nothing to look at; the brief sounds gentle", "confidence": "low"})
    if case == "ctx-dark":
        return "Looking at the room and the frame, my final answer is (B) because it is far too dark."
    if case == "ctx-pick":
        return "It is a striking composition with a wonderful sense of depth."
    answer = "B" if case == "ctx-warm" else "A"
    return json.dumps({"answer": answer, "reason": f"the palette of {case}", "confidence": "high"})


def test_context_canvas_through_the_google_genai_sdk_reads_every_answer_form(tmp_path, keys):
    context_release(tmp_path)
    injected = [InjectedFailure(500, path=gemini_path("loop-gemini-1"), times=1)]
    with ModelApiServer(responder=gemini_answers, failures=injected, gemini_key=GEMINI_KEY) as server:
        models = {"annotator": {"provider": "gemini", "model": "loop-gemini-1", "base_url": server.gemini_base_url,
                                "api_key_env": "LOOP_GEMINI_KEY"}, "timeout_s": 2, "max_retries": 2, "backoff_s": 0.01,
                  "max_backoff_s": 0.1}
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump({
            "warehouse": {"path": "warehouse.duckdb"}, "blob_store": {"root": "blobs"}, "models": models,
            "evaluation": {"releases_dir": "releases", "bootstrap_resamples": 200,
                           "runs": [{"benchmark": "context_canvas", "model": "annotator"},
                                    {"benchmark": "context_canvas", "model": "annotator", "condition": "text_only"}]}}))
        result = materialize(config, "context_canvas_evaluation")
        assert result.success, failures(result)
        sent = list(server.requests)
    assert all(r.api == "gemini" and r.authorized for r in sent)
    # 4 cases with their image; text only, the three Yes/No cases share scenario, question and options, so they are
    # one request, asked once (the call layer's cache), and ctx-pick is another; one 500 retried
    assert Counter(r.outcome for r in sent) == {"ok": 6, "500": 1}
    answered = [r.body for r in sent if r.outcome == "ok"]
    shown = Counter(_case_of(body) for body in answered)
    assert shown == {None: 2, "ctx-warm": 1, "ctx-cool": 1, "ctx-dark": 1, "ctx-pick": 1}  # text only: no image sent
    assert all(wire_schema(body)[1]["required"] == ["answer", "reason", "confidence"] for body in answered)
    assert all("Use scenario: A hospice family room" in wire_user_text(body) for body in answered)
    wh = Warehouse(tmp_path / "warehouse.duckdb", root=tmp_path)
    read = {(c, i): (a, p) for c, i, a, p in wh.query(
        "SELECT condition, item_id, answer, problem FROM evaluation_answers").itertuples(index=False)}
    assert read[("image", "ctx-warm")] == ("B", None) and read[("image", "ctx-cool")] == ("A", None)
    assert read[("image", "ctx-dark")] == ("B", None)  # "final answer is (B)" in prose
    assert read[("image", "ctx-pick")] == (None, "unparsed")  # no option named: wrong, and listed
    board = _board(wh, "context_canvas")
    assert board[("gemini/loop-gemini-1", "image", "accuracy")][0] == 0.75
    assert board[("gemini/loop-gemini-1", "text_only", "yes_rate")][0] == 1.0
    calls = wh.query("SELECT attempts, provider FROM model_call").values.tolist()
    assert len(calls) == 6 and sorted(a for a, _ in calls)[-1] == 2
    assert wh.scalar("SELECT count(*) FROM evaluation_prediction p JOIN evaluation_run r USING (run_key)"
                     " WHERE r.condition = 'text_only'") == 4  # every case answered, from the shared call
    report = (tmp_path / "evaluation" / "context_canvas" / "report.md").read_text()
    assert "## Unreadable answers" in report and "ctx-pick" in report.split("## Unreadable answers")[1]


def test_hostile_release_rows_cost_only_themselves(tmp_path):
    """An AesEval question whose gold is not among its options, and one whose metadata is not JSON (no canvas to
    read a box against; the offline judge refuses it, that item's rejection), are left out of the scores with the
    reason; the others are scored."""
    aeseval_release(tmp_path)
    shard = next((tmp_path / "releases" / "aeseval" / "data" / "questions").glob("*.parquet"))
    table = pq.read_table(shard).to_pylist()
    bad_gold = {**table[0], "question_id": "q-bad-gold", "answer": "maybe"}
    bad_metadata = {**table[1], "question_id": "q-bad-metadata", "metadata": "{not json"}
    pq.write_table(pa.Table.from_pylist(table + [bad_gold, bad_metadata], schema=pq.read_schema(shard)), shard)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"warehouse": {"path": "warehouse.duckdb"}, "blob_store": {"root": "blobs"},
                                      "evaluation": {"releases_dir": "releases", "bootstrap_resamples": 100,
                                                     "runs": [{"benchmark": "aeseval", "model": "annotator"}]}}))
    result = materialize(config, "aeseval_evaluation")
    assert result.success, failures(result)
    wh = Warehouse(tmp_path / "warehouse.duckdb", root=tmp_path)
    answers = dict(wh.query("SELECT item_id, problem FROM evaluation_answers").itertuples(index=False))
    assert "q-bad-gold" not in answers and "q-bad-metadata" not in answers  # not scorable: left out, not counted
    assert answers["q-locate"] is None  # the others are read as usual
    rejected = wh.query("SELECT detail FROM rejection WHERE stage = 'aeseval_predictions'").detail.tolist()
    assert len(rejected) == 1 and "q-bad-metadata" in rejected[0]
    assert {"q-judge", "q-region", "q-locate"} <= set(answers)
