"""Each benchmark's evaluation report, written beside its predictions files: ``<out_dir>/<benchmark>/report.md``
with the leaderboard per metric, the answer statistics, the metrics that did not run, the paired comparisons, the
grounding controls and the human similarity study; a page per run (``runs/<run digest>.md``); and the plots
(``plots/*.png``: score distributions per metric, answer length against the human references).

Everything is read back from the warehouse after the scores are stored, so the report shows exactly what the
views show; the same rows give the same bytes. Files of runs no longer on the leaderboard are removed, so the
folder holds the report of what the warehouse says now.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from assets.core.logic.files import write_if_changed
from assets.evaluation.logic.benchmark_items import BenchmarkItem, BenchmarkLayout, Release
from assets.evaluation.logic.choice_requests import CONDITIONS
from assets.evaluation.logic.choice_scoring import is_breakdown
from assets.evaluation.logic.item_statistics import STATISTICS, WORDS
from assets.evaluation.logic.report_figures import length_histogram, score_distributions
from assets.evaluation.logic.report_markdown import (HUMAN, BoardRow, Comparison, Grounding, RunInfo, benchmark_report,
                                                     metric_kind, response_table, run_page)
from assets.evaluation.logic.response_stats import CritiqueAnswer, ModelResponseStats, model_response_stats
from assets.evaluation.logic.text_stats import word_count
from warehouse.db import Warehouse

REPORT_NAME = "report.md"


@dataclass(frozen=True)
class Report:
    path: Path
    markdown: str


def rows_of(wh: Warehouse, sql: str, params: Sequence[object]) -> list[tuple]:
    """Rows as Python values (None for NULL), not a frame: pandas would turn NULLs into NA or NaN."""
    with wh.transaction() as con:
        return con.execute(sql, list(params)).fetchall()


def _board(wh: Warehouse, benchmark: str) -> list[BoardRow]:
    frame = rows_of(wh, "SELECT run_key, model, condition, source, metric, status, mean, ci_low, ci_high, n_items, reason,"
                     " version FROM evaluation_leaderboard WHERE benchmark = ? ORDER BY run_key, metric", [benchmark])
    return [BoardRow(*row) for row in frame]


def _runs(wh: Warehouse, benchmark: str) -> list[RunInfo]:
    frame = rows_of(wh, 
        "SELECT r.run_key, r.source, r.model, r.condition, CAST(r.decoding AS VARCHAR), r.seed, r.predictions_file,"
        " (SELECT count(*) FROM evaluation_prediction p WHERE p.run_key = r.run_key)"
        " FROM evaluation_run r WHERE r.benchmark = ? ORDER BY r.run_key", [benchmark])
    return [RunInfo(key, source, model, condition, json.dumps(json.loads(decoding), indent=2, sort_keys=True), int(seed),
                    file, int(n), _page(key))
            for key, source, model, condition, decoding, seed, file, n in frame]


def _page(run_key: str) -> str:
    return f"runs/{run_key.split(':', 1)[1][:16]}.md"


def _item_values(wh: Warehouse, benchmark: str, metric: str) -> dict[str, list[float]]:
    frame = rows_of(wh, "SELECT r.run_key, list(s.value ORDER BY s.item_id) FROM evaluation_score s JOIN evaluation_run r"
                     " USING (run_key) WHERE r.benchmark = ? AND s.metric = ? AND s.value IS NOT NULL GROUP BY ALL"
                     " ORDER BY ALL", [benchmark, metric])
    return {key: [float(v) for v in values] for key, values in frame}


def _prediction_lengths(wh: Warehouse, benchmark: str) -> dict[str, list[int]]:
    frame = rows_of(wh, "SELECT r.run_key, list(p.n_words ORDER BY p.item_id, p.sample) FROM evaluation_prediction p"
                     " JOIN evaluation_run r USING (run_key) WHERE r.benchmark = ? GROUP BY ALL ORDER BY ALL", [benchmark])
    return {key: [int(n) for n in lengths] for key, lengths in frame}


def _comparisons(wh: Warehouse, benchmark: str, metrics: Sequence[str]) -> list[Comparison]:
    frame = rows_of(wh, "SELECT metric, model_a || ' / ' || condition_a, model_b || ' / ' || condition_b, n_items, mean_diff,"
                     " ci_low, ci_high, mcnemar_p, mcnemar_p_adjusted, t_p FROM evaluation_paired WHERE benchmark = ?"
                     " AND list_contains(?, metric) ORDER BY ALL", [benchmark, list(metrics)])
    return [Comparison(*row) for row in frame]


def _grounding(wh: Warehouse, benchmark: str, metrics: Sequence[str]) -> list[Grounding]:
    frame = rows_of(wh, "SELECT model || ' / ' || condition, delta, metric, n_items, correct_minus_control, ci_low, ci_high"
                     " FROM evaluation_grounding WHERE benchmark = ? AND list_contains(?, metric) ORDER BY ALL",
                     [benchmark, list(metrics)])
    return [Grounding(*row) for row in frame]


def _parameters(wh: Warehouse, run_key: str) -> dict[str, str]:
    frame = rows_of(wh, "SELECT metric, CAST(parameters AS VARCHAR) FROM evaluation_metric WHERE run_key = ? AND status = 'ran'"
                     " ORDER BY metric", [run_key])
    return {metric: params for metric, params in frame if params and params != "{}"}


def _response_stats(wh: Warehouse, items: Mapping[str, BenchmarkItem], runs: Sequence[RunInfo],
                    labels: Mapping[str, str]) -> list[ModelResponseStats]:
    """Table S5's row per run with predictions, read a page at a time, and one for the references themselves."""
    def answers() -> Iterator[CritiqueAnswer]:
        for item in items.values():
            for reference in item.references:
                yield CritiqueAnswer("reference", item.fields.get("instruction", ""), reference)
        for run in runs:
            for page in wh.pages("SELECT item_id || '#' || sample, item_id, prediction FROM evaluation_prediction"
                                 " WHERE run_key = ?", [run.run_key], key="item_id || '#' || sample", block=5000):
                for _, item_id, text in page:
                    item = items.get(item_id)
                    if item is not None:
                        yield CritiqueAnswer(labels[run.run_key], item.fields.get("instruction", ""), text, item.references)
    stats = model_response_stats(answers())
    return [stats[name] for name in sorted(stats, key=lambda name: (name == "reference", name))]


def write_reports(wh: Warehouse, layout: BenchmarkLayout, release: Release, items: Mapping[str, BenchmarkItem],
                  out_dir: Path, sections: Sequence[tuple[str, str]], bootstrap: tuple[int, int]) -> Report:
    """Write the benchmark's report, its run pages and plots under ``out_dir/<benchmark>``; returns the report."""
    folder = out_dir / layout.name
    statistics = STATISTICS.get(layout.name, (None, ()))[1]
    board = _board(wh, layout.name)
    runs = _runs(wh, layout.name)
    labels = {r.run_key: f"{r.model} / {r.condition}" for r in runs}
    ranked = sorted({r.metric for r in board if r.status == "ran" and metric_kind(r.metric, statistics) != "statistic"
                     and not is_breakdown(r.metric)})
    plots: dict[str, str] = {}
    wanted: set[Path] = set()
    for metric in ranked:
        values = _item_values(wh, layout.name, metric)
        if not values:  # a run-level figure (macro-F1, tau): no per-item values to plot
            continue
        name = f"plots/{metric.replace(':', '_')}.png"
        write_if_changed(folder / name, score_distributions(metric, {labels[k]: v for k, v in sorted(
            values.items(), key=lambda kv: (labels[kv[0]], kv[0]))}))
        plots[metric] = name
        wanted.add(folder / name)
    closed = layout.name in CONDITIONS  # closed answers: their length says nothing
    human_lengths = [word_count(text) for item in items.values() for text in item.references]
    lengths = {} if closed else {k: v for k, v in _prediction_lengths(wh, layout.name).items() if k in labels}
    model_runs = sorted((r.run_key for r in runs if r.source != HUMAN and r.run_key in lengths),
                        key=lambda k: (labels[k], k))
    if not closed:
        write_if_changed(folder / "plots/lengths.png",
                          length_histogram({labels[k]: lengths[k] for k in model_runs}, human_lengths))
        plots["lengths"] = "plots/lengths.png"
        wanted.add(folder / "plots/lengths.png")
    for run in runs:
        name = f"plots/lengths_{run.page.removeprefix('runs/').removesuffix('.md')}.png"
        plot = None
        if lengths.get(run.run_key):
            write_if_changed(folder / name, length_histogram({labels[run.run_key]: lengths[run.run_key]}, human_lengths))
            wanted.add(folder / name)
            plot = f"../{name}"
        page = run_page(layout.name, run, [r for r in board if r.run_key == run.run_key], _parameters(wh, run.run_key),
                        f"../{REPORT_NAME}", plot)
        write_if_changed(folder / run.page, page.encode("utf-8"))
        wanted.add(folder / run.page)
    if layout.name == "critique_canvas":
        sections = [*sections, response_table(_response_stats(wh, items, runs, labels))]
    headline = [m for m in ranked if m != WORDS]
    markdown = benchmark_report(
        layout.name, {"dataset": release.dataset, "version": release.version, "digest": release.digest, "items": len(items)},
        runs, board, statistics, _comparisons(wh, layout.name, headline), _grounding(wh, layout.name, headline), plots,
        sections, bootstrap)
    write_if_changed(folder / REPORT_NAME, markdown.encode("utf-8"))
    wanted.add(folder / REPORT_NAME)
    for sub in ("runs", "plots"):  # pages and plots of runs that are gone
        for stale in (folder / sub).glob("*") if (folder / sub).is_dir() else ():
            if stale not in wanted and stale.suffix in (".md", ".png"):
                stale.unlink()
    return Report(folder / REPORT_NAME, markdown)
