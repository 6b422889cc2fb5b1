"""The report's wording from plain rows: best first, intervals, unavailable metrics with their reasons, comparisons
marked where the interval excludes zero, statistics apart from metrics; and its plots are byte-stable PNGs."""

from assets.evaluation.logic.report_figures import length_histogram, score_distributions
from assets.evaluation.logic.report_markdown import BoardRow, Comparison, RunInfo, benchmark_report, metric_kind, run_page

RUNS = [RunInfo("evaluation_run:aa", "model", "m1", "c", "{}", 42, None, 9, "runs/aa.md"),
        RunInfo("evaluation_run:bb", "predictions_file", "m2", "c", "{}", 0, "preds.jsonl", 9, "runs/bb.md")]


def _row(run, metric, mean, status="ran", reason=None):
    model = {"evaluation_run:aa": "m1", "evaluation_run:bb": "m2"}[run]
    return BoardRow(run, model, "c", "model", metric, status, mean, None if mean is None else mean - 0.1,
                    None if mean is None else mean + 0.1, 3 if mean is not None else None, reason, "v1")


BOARD = [_row("evaluation_run:aa", "rouge_l", 0.2), _row("evaluation_run:bb", "rouge_l", 0.4),
         _row("evaluation_run:aa", "words", 50.0), _row("evaluation_run:bb", "words", 70.0),
         _row("evaluation_run:aa", "judge_similarity", 3.0),
         _row("evaluation_run:aa", "sbert", None, "unavailable", "no weights at /models/sbert"),
         _row("evaluation_run:bb", "sbert", None, "unavailable", "no weights at /models/sbert")]


def _report(comparisons=()):
    return benchmark_report("photocritique", {"dataset": "photocritique", "version": "0.1.0", "digest": "d" * 64, "items": 3},
                            RUNS, BOARD, ("words",), comparisons, (), {"rouge_l": "plots/rouge_l.png"},
                            [("extra", "body text")], (1000, 7))


def test_metrics_are_ranked_best_first_with_their_intervals():
    rouge = _report().split("### rouge_l", 1)[1].split("##", 1)[0]
    assert rouge.index("| 1 | m2 | c | 0.4000 | [0.3000, 0.5000] | 3 |") < rouge.index("| 2 | m1 | c | 0.2000 |")
    assert "![rouge_l per item](plots/rouge_l.png)" in rouge


def test_kinds_are_kept_apart_and_unavailable_metrics_say_why_once():
    text = _report()
    assert metric_kind("words", ("words",)) == "statistic" and metric_kind("judge_x", ()) == "judge"
    assert "## Model judges" in text and "### judge_similarity" in text and "### words" not in text
    assert "| m1 / c | 50.000 |" in text and "| m2 / c | 70.000 |" in text
    assert text.count("| sbert | no weights at /models/sbert |") == 1
    assert "1000 resamples, seed 7" in text and text.endswith("## extra\n\nbody text\n")


def test_a_comparison_is_bold_only_when_its_interval_excludes_zero():
    text = _report([Comparison("rouge_l", "m2 / c", "m1 / c", 3, 0.2, 0.05, 0.35),
                    Comparison("words", "m2 / c", "m1 / c", 3, 0.1, -0.2, 0.4)])
    assert "| rouge_l | m2 / c | m1 / c | 3 | **0.2000** | [0.0500, 0.3500] |" in text
    assert "| words | m2 / c | m1 / c | 3 | 0.1000 | [-0.2000, 0.4000] |" in text


def test_a_run_page_lists_every_metric_with_its_version_or_reason():
    page = run_page("photocritique", RUNS[1], [r for r in BOARD if r.run_key == "evaluation_run:bb"],
                    {"rouge_l": '{"use_stemmer": true}'}, "../report.md", None)
    assert "predictions read from `preds.jsonl`" in page.lower()
    assert "| rouge_l | ran | 0.4000 | [0.3000, 0.5000] | 3 | v1 |" in page
    assert "| sbert | unavailable | – | – | 0 | no weights at /models/sbert |" in page
    assert '| rouge_l | {"use_stemmer": true} |' in page


def test_plots_are_png_bytes_that_depend_only_on_their_data():
    first = score_distributions("rouge_l", {"a": [0.1, 0.2, 0.3], "b": [0.5, 0.6]})
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    assert score_distributions("rouge_l", {"a": [0.1, 0.2, 0.3], "b": [0.5, 0.6]}) == first
    assert score_distributions("rouge_l", {"a": [0.1, 0.2, 0.4], "b": [0.5, 0.6]}) != first
    lengths = length_histogram({"a": [10, 20, 30]}, [15, 25])
    assert lengths == length_histogram({"a": [10, 20, 30]}, [15, 25]) != length_histogram({"a": [10, 20, 31]}, [15, 25])
    assert b"Software" not in lengths and b"matplotlib" not in lengths.lower()


def test_the_response_table_has_a_row_per_run_and_the_references_last():
    from assets.evaluation.logic.report_markdown import response_table
    from assets.evaluation.logic.response_stats import CritiqueAnswer, model_response_stats

    question = "Analyse the composition and the colour of this painting."
    stats = model_response_stats([
        CritiqueAnswer("m1 / instruction", question, "The composition is balanced and the colour is warm.", ("gold answer here",)),
        CritiqueAnswer("m1 / instruction", "What do you think?", "Nice light and soft colour.", ("gold",)),
        CritiqueAnswer("reference", question, "gold answer here"),
    ])
    title, body = response_table([stats["m1 / instruction"], stats["reference"]])
    assert title.startswith("Response statistics")
    rows = [line for line in body.splitlines() if line.startswith("| m1") or line.startswith("| reference")]
    assert rows[0].startswith("| m1 / instruction | 2 |") and rows[1].startswith("| reference | 1 |")
    assert "1.000" in rows[0]  # the focused question's two dimensions are both addressed
