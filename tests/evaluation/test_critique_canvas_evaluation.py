"""The CritiqueCanvas evaluation materialized through Dagster on a small release folder with its photos embedded:
the offline critic (the heuristic provider) and the instruction baseline are asked, scored against the verified
answers, judged per criterion, and the report carries Table S5's response statistics."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
from tests.evaluation.test_benchmark_scores import _photo
from tests.support.critique_harness import evaluated_runs
from warehouse.ids import sha256_hex

RECORD = pa.schema([("id", pa.string()), ("instruction", pa.string()), ("response", pa.string()), ("domain", pa.string()),
                    ("dimension", pa.string()), ("selected_dimensions", pa.list_(pa.string())),
                    ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])), ("image_sha256", pa.string())])
QUESTIONS = {
    "q1": ("Analyse the composition and the colour of this painting.",
           "The composition leads the eye along the diagonal of the road, and the warm ochre palette sets the mood."),
    "q2": ("What do you think of this photograph?",
           "The soft side light models the face well, but the background is cluttered and pulls attention away."),
    "q3": ("How is the lighting used here?",
           "Hard light from the left casts long shadows that give the scene depth and a late-afternoon feel."),
}


def test_critique_canvas_is_asked_scored_judged_and_reported(tmp_path):
    folder = tmp_path / "releases" / "critique_canvas"
    (folder / "data" / "records").mkdir(parents=True)
    rows = []
    for n, (qid, (question, answer)) in enumerate(QUESTIONS.items()):
        photo = _photo(n)  # each question its own picture
        rows.append({"id": qid, "instruction": question, "response": answer, "domain": "painting", "dimension": "",
                     "selected_dimensions": [], "image": {"bytes": photo, "path": f"images/{qid}.png"},
                     "image_sha256": sha256_hex(photo)})
    pq.write_table(pa.Table.from_pylist(rows, schema=RECORD), folder / "data/records/eval-00000-of-00001.parquet")
    (folder / "release.json").write_text(json.dumps({"dataset": "critique_canvas", "version": "0.1.0",
                                                     "files": {"data/records/eval-00000-of-00001.parquet": "x"}}))
    _, wh = evaluated_runs(tmp_path, "critique_canvas", ["annotator", "baseline:instruction"])
    board = wh.query("SELECT model, metric, status, mean, n_items FROM evaluation_leaderboard WHERE status = 'ran'")
    models = set(board["model"])
    assert models == {"heuristic/heuristic-v1", "baseline:instruction"}  # one reference per item: no human baseline
    quality = board[board["metric"] == "judge_quality"].set_index("model")
    assert (quality["n_items"] == 3).all() and quality["mean"].between(1, 5).all()
    assert {"rouge_l", "bleu", "meteor", "dim_hits", "density", "prompt_align", "judge_visual_grounding"} <= set(board["metric"])
    calls = wh.query("SELECT role, count(*) AS n FROM model_call GROUP BY ALL")
    assert dict(calls.itertuples(index=False)) == {"candidate": 3, "judge": 6}  # the baseline asks no model

    report = (tmp_path / "evaluation" / "critique_canvas" / "report.md").read_text(encoding="utf-8")
    table = report.split("## Response statistics (AesCanvas Table S5)", 1)[1]
    assert "| heuristic/heuristic-v1 / instruction | 3 |" in table and "| reference | 3 |" in table
    assert "### judge_quality" in report and "## Human" not in report  # no similarity study for this benchmark
