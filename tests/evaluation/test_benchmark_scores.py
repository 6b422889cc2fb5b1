"""The photocritique evaluation materialized through Dagster on a release folder and a predictions file with good
and bad rows: every row gets one outcome, each (model, condition) of the file is a run scored per item against
the three human critiques, the human leave-one-out baseline is scored the same way, the leaderboard has bootstrap
intervals, metrics without weights say why, and a second run changes nothing."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from rouge_score import rouge_scorer

from tests.support.critique_harness import evaluated_runs, failures, materialize
from assets.evaluation.logic.predictions_file import Prediction, read_predictions
from warehouse.db import Warehouse

POST = pa.schema([("id", pa.string()), ("title", pa.string()), ("body", pa.string()),
                  ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])), ("image_sha256", pa.string()),
                  ("critiques", pa.list_(pa.struct([("rank", pa.int32()), ("body", pa.string())])))])
CRITIQUES = {
    "p1": ["the horizon is tilted and the sky is blown out", "lovely colours but crop tighter on the boat",
           "too much empty foreground in the frame"],
    "p2": ["the face is out of focus", "harsh midday light on the skin", "try a wider aperture for the background"],
    "p3": ["strong leading lines toward the bridge", "the shadows are crushed", "nice mood from the fog"],
}
TITLES = {"p1": "Sunset at the harbour with my new lens", "p2": "First portrait session with a friend",
          "p3": "Foggy morning walk by the river bridge"}


def _release(folder):
    (folder / "data" / "posts").mkdir(parents=True)
    rows = [{"id": pid, "title": TITLES[pid], "body": "", "image": None, "image_sha256": f"{n:064x}",
             "critiques": [{"rank": r + 1, "body": body} for r, body in enumerate(bodies)]}
            for n, (pid, bodies) in enumerate(CRITIQUES.items())]
    pq.write_table(pa.Table.from_pylist(rows, schema=POST), folder / "data/posts/test-00000-of-00001.parquet")
    (folder / "release.json").write_text(json.dumps({"dataset": "photocritique", "version": "0.1.0",
                                                     "files": {"data/posts/test-00000-of-00001.parquet": "x"}}))


def _row(pid, sample, model, prediction, task="photocritique/critique"):
    return json.dumps({"id": pid, "sample": sample, "task": task, "model": model, "condition": "capped_plain",
                       "prediction": prediction, "reference": CRITIQUES.get(pid, [])})


@pytest.fixture()
def evaluated(tmp_path):
    _release(tmp_path / "releases" / "photocritique")
    lines = [_row(pid, k, "echo", CRITIQUES[pid][k]) for pid in CRITIQUES for k in range(3)]  # repeats the humans
    lines += [_row(pid, k, "title", TITLES[pid]) for pid in CRITIQUES for k in range(3)]  # the post's title
    lines += [_row("nope", 0, "echo", "no such post"), _row("p1", 0, "other", "x", task="critique_canvas/critique"),
              "{broken", _row("p1", 0, "echo", "the same answer again")]
    (tmp_path / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "warehouse": {"path": "warehouse.duckdb"}, "blob_store": {"root": "blobs"},
        "evaluation": {"releases_dir": "releases", "bootstrap_resamples": 500,
                       "predictions": [{"benchmark": "photocritique", "file": "predictions.jsonl"}]}}))
    result = materialize(config, "photocritique_evaluation")
    assert result.success, failures(result)
    return config, Warehouse(tmp_path / "warehouse.duckdb", root=tmp_path)


def test_every_row_gets_one_outcome(evaluated):
    _, wh = evaluated
    assert wh.scalar("SELECT count(*) FROM evaluation_prediction") == 18
    rejected = wh.query("SELECT reason_code, detail FROM rejection WHERE stage = 'photocritique_predictions'"
                        " ORDER BY reason_code")
    assert rejected["reason_code"].tolist() == ["duplicate_prediction", "malformed_line", "task_mismatch", "unknown_item"]
    assert all(detail.startswith("predictions.jsonl") for detail in rejected["detail"])


def test_each_model_is_a_run_scored_against_the_humans_with_intervals(evaluated):
    _, wh = evaluated
    board = wh.query("SELECT model, metric, status, mean, ci_low, ci_high, n_items, reason FROM evaluation_leaderboard")
    rouge = board[board["metric"] == "rouge_l"].set_index("model")
    assert set(rouge.index) == {"echo", "title", "human"}
    assert rouge.loc["echo", "mean"] == pytest.approx(1.0)  # each critique finds itself among the references
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    title = [max(scorer.score(ref, TITLES[pid])["rougeL"].fmeasure for ref in refs) for pid, refs in CRITIQUES.items()]
    assert rouge.loc["title", "mean"] == pytest.approx(sum(title) / 3)  # three identical samples: the best reference each
    assert 0 < rouge.loc["human", "mean"] < 1.0
    assert (rouge["n_items"] == 3).all() and (rouge["ci_low"] <= rouge["mean"]).all() and (rouge["mean"] <= rouge["ci_high"]).all()
    words = board[board["metric"] == "words"].set_index("model")
    assert words.loc["title", "mean"] == pytest.approx(sum(len(t.split()) for t in TITLES.values()) / 3)
    unavailable = board[board["status"] == "unavailable"]
    assert {"sbert", "bertscore", "bleurt", "clip_score"} <= set(unavailable["metric"])
    assert unavailable["reason"].str.contains("model_path").all()


def test_every_pair_of_runs_is_compared_item_by_item(evaluated):
    _, wh = evaluated
    paired = wh.query("SELECT model_a, model_b, metric, n_items, mean_diff, ci_low, ci_high FROM evaluation_paired"
                      " WHERE metric = 'rouge_l'")
    assert len(paired) == 3  # echo, title, human: three pairs
    board = wh.query("SELECT model, mean FROM evaluation_leaderboard WHERE metric = 'rouge_l'").set_index("model")["mean"]
    for row in paired.itertuples(index=False):
        assert row.n_items == 3 and row.ci_low <= row.mean_diff <= row.ci_high
        assert row.mean_diff == pytest.approx(board[row.model_a] - board[row.model_b])


def test_predictions_are_entities_derived_from_their_item_and_file(evaluated):
    _, wh = evaluated
    edges = wh.query("SELECT d.relation, count(*) AS n FROM was_derived_from d JOIN entity e ON e.entity_id = d.entity_id"
                     " WHERE e.kind = 'evaluation_prediction' GROUP BY ALL ORDER BY ALL")
    assert dict(edges.itertuples(index=False)) == {"answers": 18, "read_from": 18}


def test_a_second_run_changes_nothing(evaluated):
    config, wh = evaluated
    before = wh.query("SELECT * FROM evaluation_summary ORDER BY run_key, metric").drop(columns="activity_id")
    result = materialize(config, "photocritique_evaluation")
    assert result.success, failures(result)
    after = wh.query("SELECT * FROM evaluation_summary ORDER BY run_key, metric").drop(columns="activity_id")
    assert before.equals(after) and wh.scalar("SELECT count(*) FROM evaluation_prediction") == 18


def test_an_edited_predictions_file_replaces_the_runs_it_fed(evaluated):
    config, wh = evaluated
    path = config.parent / "predictions.jsonl"
    kept = [line for line in path.read_text().splitlines() if '"model": "title"' in line]
    path.write_text("\n".join(kept) + "\n")
    result = materialize(config, "photocritique_evaluation")
    assert result.success, failures(result)
    assert sorted(wh.query("SELECT model FROM evaluation_run")["model"]) == ["human", "title"]
    assert wh.scalar("SELECT count(*) FROM evaluation_prediction") == 9
    assert set(wh.query("SELECT model FROM evaluation_leaderboard")["model"]) == {"human", "title"}


def _photo(n):
    import io

    from PIL import Image, ImageDraw
    image = Image.new("RGB", (160, 120), (30 + 60 * n, 90, 160 - 40 * n))
    ImageDraw.Draw(image).rectangle([20 + 10 * n, 30, 70 + 10 * n, 90], fill=(240, 230, 200))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _release_with_photos(tmp_path):
    """The release, its rows naming photos the blob store has (the release withholds the bytes)."""
    from resources.blob_store import LocalBlobStore

    store = LocalBlobStore(tmp_path / "blobs")
    shas = [store.put_bytes(_photo(n)).sha256 for n in range(3)]
    _release(tmp_path / "releases" / "photocritique")
    rows = pq.read_table(tmp_path / "releases/photocritique/data/posts/test-00000-of-00001.parquet").to_pylist()
    for row, sha in zip(rows, shas):
        row["image_sha256"] = sha  # the release withholds the bytes; the blob store has them
    pq.write_table(pa.Table.from_pylist(rows, schema=POST), tmp_path / "releases/photocritique/data/posts/test-00000-of-00001.parquet")


def test_a_spent_call_budget_stops_the_run_cleanly_and_the_next_run_goes_on(tmp_path):
    _release_with_photos(tmp_path)
    config, wh = evaluated_runs(tmp_path, "photocritique", [{"model": "annotator", "max_calls": 4, "max_concurrency": 1}])
    assert wh.scalar("SELECT count(*) FROM evaluation_prediction") == 4
    assert wh.scalar("SELECT count(*) FROM model_call WHERE role = 'candidate'") == 4
    assert wh.scalar("SELECT count(*) FROM rejection WHERE stage = 'photocritique_predictions'") == 0
    summary = json.loads(wh.scalar("SELECT summary FROM activity WHERE asset_key = 'photocritique_evaluation'"))
    assert "call budget of 4 requests is spent" in summary["photocritique_predictions_stopped"]
    assert wh.scalar("SELECT count(*) FROM model_call_lease") == 0  # claimed ahead, never asked: given up
    _, wh = evaluated_runs(tmp_path, "photocritique", ["annotator"])  # no budget: the rest, and nothing twice
    assert wh.scalar("SELECT count(*) FROM evaluation_prediction") == 9
    assert wh.scalar("SELECT count(*) FROM model_call WHERE role = 'candidate'") == 9


def test_the_offline_critic_and_the_title_baseline_are_asked_cached_and_resumed(tmp_path):
    _release_with_photos(tmp_path)
    config, wh = evaluated_runs(tmp_path, "photocritique", ["annotator", "baseline:title"])
    runs = wh.query("SELECT model, source, condition, decoding FROM evaluation_run ORDER BY model")
    assert runs["model"].tolist() == ["baseline:title", "heuristic/heuristic-v1", "human"]
    decoding = json.loads(runs.set_index("model").loc["heuristic/heuristic-v1", "decoding"])
    assert (decoding["temperature"], decoding["top_p"], decoding["seed"], decoding["samples"]) == (0.5, 0.9, 42, 3)
    critic = wh.query("SELECT p.item_id, p.sample, p.prediction, p.call_id FROM evaluation_prediction p JOIN evaluation_run r"
                      " USING (run_key) WHERE r.source = 'model' ORDER BY 1, 2")
    assert len(critic) == 9 and critic["call_id"].notna().all()
    assert critic.groupby("item_id")["prediction"].nunique().eq(3).all()  # three different critiques per post
    calls = wh.scalar("SELECT count(*) FROM model_call WHERE role <> 'judge'")
    assert calls == 9
    # the prompt as sent: the primary condition's template, the post's title, the sampling the paper used
    params = wh.query("SELECT params FROM model_call WHERE role <> 'judge'")["params"].map(json.loads)
    assert {(p["temperature"], p["top_p"]) for p in params} == {(0.5, 0.9)} and {p["seed"] for p in params} == {42, 43, 44}
    edges = wh.query("SELECT relation, count(*) AS n FROM was_derived_from WHERE entity_id LIKE 'evaluation_prediction:%'"
                     " GROUP BY ALL")
    assert dict(edges.itertuples(index=False)) == {"answers": 18, "answered_by": 9}
    board = wh.query("SELECT model, metric, mean FROM evaluation_leaderboard WHERE metric = 'rouge_l'").set_index("model")
    assert set(board.index) == {"baseline:title", "heuristic/heuristic-v1", "human"} and board["mean"].notna().all()
    # each run asked here is written as a predictions file that `aesforge score` reads back as it is
    exported = sorted((tmp_path / "evaluation" / "photocritique").glob("*.jsonl"))
    assert len(exported) == 2
    read = [p for f in exported for _, p in read_predictions(f, f.name)]
    assert len(read) == 18 and all(isinstance(p, Prediction) and len(p.reference) == 3 for p in read)
    assert {p.model for p in read} == {"baseline:title", "heuristic/heuristic-v1"}
    before = {f: f.read_bytes() for f in exported}
    # a second run asks nothing again and writes the same bytes
    again = materialize(config, "photocritique_evaluation")
    assert again.success, failures(again)
    assert {f: f.read_bytes() for f in exported} == before
    assert wh.scalar("SELECT count(*) FROM model_call WHERE role <> 'judge'") == calls and wh.scalar("SELECT count(*) FROM evaluation_prediction") == 18


def test_aesforge_score_and_evaluate_print_the_leaderboard_and_refuse_bad_input_in_one_line(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    aesforge = str(Path(sys.executable).parent / "aesforge")
    _release(tmp_path / "releases" / "photocritique")
    (tmp_path / "mine.jsonl").write_text("\n".join(_row(pid, k, "mine", CRITIQUES[pid][(k + 1) % 3])
                                                   for pid in CRITIQUES for k in range(3)) + "\n")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"warehouse": {"path": "warehouse.duckdb"}, "blob_store": {"root": "blobs"},
                                      "evaluation": {"releases_dir": "releases", "bootstrap_resamples": 200}}))
    (tmp_path / "dagster_home").mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster_home")}
    env.pop("AESFORGE_CONFIG", None)

    def run(*args):
        return subprocess.run([aesforge, *args, "--config", str(config)], capture_output=True, text=True, timeout=600, env=env)

    scored = run("score", "--benchmark", "photocritique", "--predictions", str(tmp_path / "mine.jsonl"))
    assert scored.returncode == 0, scored.stderr
    assert "leaderboard of photocritique" in scored.stdout and "mine" in scored.stdout and "rouge_l" in scored.stdout
    typo = run("score", "--benchmark", "photocritiqe", "--predictions", str(tmp_path / "mine.jsonl"))
    assert typo.returncode == 2 and typo.stderr.strip().count("\n") == 0 and "did you mean photocritique?" in typo.stderr
    missing = run("score", "--benchmark", "photocritique", "--predictions", str(tmp_path / "absent.jsonl"))
    assert missing.returncode == 2 and "no predictions file" in missing.stderr
    baseline = run("evaluate", "--benchmark", "photocritique", "--model", "baseline:title")
    assert baseline.returncode == 0, baseline.stderr
    assert "baseline:title" in baseline.stdout


def test_the_judge_scores_each_run_beside_the_metrics(evaluated):
    """The default judge (the heuristic provider, offline) rates each model critique against the top-ranked human
    one; the human baseline is not judged. This release ships no photos, so the preference judge, which must see
    the photo, rejects every judgement with its reason instead of judging blind."""
    _, wh = evaluated
    similarity = wh.query("SELECT model, status, mean, n_items FROM evaluation_leaderboard WHERE metric = 'judge_similarity'")
    by_model = similarity.set_index("model")
    assert set(by_model.index) == {"echo", "title"} and (by_model["status"] == "ran").all()
    # echo's first critique is the top-ranked human critique itself: the top of the scale for that sample
    top = wh.query("SELECT j.value FROM evaluation_judgement j JOIN evaluation_run r USING (run_key) WHERE r.model = 'echo'"
                   " AND j.metric = 'judge_similarity' AND j.sample = 0")["value"]
    assert len(top) == 3 and (top == 5).all()
    assert by_model.loc["echo", "mean"] > by_model.loc["title", "mean"]
    rejected = wh.query("SELECT reason_code, count(*) AS n FROM rejection WHERE stage = 'photocritique_judgements' GROUP BY ALL")
    assert dict(rejected.itertuples(index=False)) == {"image_unavailable": 18}
    preference = wh.query("SELECT status, mean, version FROM evaluation_leaderboard WHERE metric = 'judge_preference'")
    assert len(preference) == 2 and preference["mean"].isna().all() and preference["version"].str.contains("heuristic").all()


def test_the_report_shows_the_leaderboard_with_plots_and_a_page_per_run(evaluated):
    config, wh = evaluated
    folder = config.parent / "evaluation" / "photocritique"
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert report.startswith("# photocritique: evaluation report")
    rouge = report.split("### rouge_l", 1)[1].split("###", 1)[0]
    ranks = [line.split(" | ")[1] for line in rouge.splitlines() if line.startswith("| ") and line[2].isdigit()]
    board = wh.query("SELECT model FROM evaluation_leaderboard WHERE metric = 'rouge_l' ORDER BY mean DESC")["model"]
    assert ranks == board.tolist() and ranks[0] == "echo"  # best first: echo repeats the references
    assert "| 1 | echo | capped_plain | 1.0000 |" in rouge
    assert "## Metrics that did not run" in report and "| sbert |" in report
    assert "## Answer statistics" in report and "aspect:composition" in report
    assert "## Paired comparisons" in report
    for name in ("plots/rouge_l.png", "plots/lengths.png", "plots/judge_similarity.png"):
        assert f"]({name})" in report and (folder / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pages = sorted((folder / "runs").glob("*.md"))
    assert len(pages) == 3 and all(f"]({p.relative_to(folder).as_posix()})" in report for p in pages)
    echo = next(p.read_text(encoding="utf-8") for p in pages if "# photocritique: echo" in p.read_text(encoding="utf-8"))
    assert "predictions.jsonl" in echo and "| rouge_l | ran | 1.0000 |" in echo
    files = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.suffix in (".md", ".png")}
    result = materialize(config, "photocritique_evaluation")
    assert result.success, failures(result)
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.suffix in (".md", ".png")} == files
    metadata = result.asset_materializations_for_node("photocritique_evaluation")[0].metadata
    assert metadata["report"].value == report and metadata["report_path"].value == str(folder / "report.md")
