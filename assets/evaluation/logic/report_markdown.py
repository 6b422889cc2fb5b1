"""The evaluation report as Markdown, from plain rows: the leaderboard per metric, the metrics that did not run,
the answer statistics, the paired comparisons and the grounding controls of one benchmark; and one run's page.

Why plain rows in, text out: the same warehouse rows must give the same bytes (no clock, rows sorted here), and the
wording of a report is tested without a warehouse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assets.evaluation.logic.response_stats import ModelResponseStats

JUDGE_PREFIX = "judge_"
SCORING = {
    "critique": "Model critiques are matched to the human ones by max-mapping; the human row scores each reference"
                " against the others (leave-one-out).",
    "context_canvas": "Answers are read as option ids; a missing, ambiguous or unreadable answer is wrong. Yes rate,"
                      " binary accuracy and the F1 figures are over the two-option cases (A is the canonical Yes class).",
    "counterfactual": "Each pair is asked twice (original, then edit); pair accuracy needs both right; ncu is +1 for a"
                      " correct directional update, −1 for a reverse one, so its mean × 100 is the NCU.",
    "aeseval": "Answers are read as the question's option or a box; judgment and region selection score accuracy,"
               " localisation scores accuracy where the gold is None and IoU where it is a box; the *_overall figures"
               " are the mean over indicators.",
    "poem_benchmark": "Judges are scored on the held-out poems' images against the people's mean scores: mean absolute"
                      " error and share within 0.05 over the rubric dimensions per image, Kendall's tau of each poem's"
                      " image ordering (bootstrap over poems).",
}
"""Per benchmark, how its figures are computed (the report's opening paragraph)."""
HUMAN = "human"
_STATISTICS_PER_TABLE = 7


@dataclass(frozen=True)
class BoardRow:
    """One (run, metric) of the leaderboard view."""

    run_key: str
    model: str
    condition: str
    source: str
    metric: str
    status: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n_items: int | None
    reason: str | None
    version: str | None

    @property
    def label(self) -> str:
        return f"{self.model} / {self.condition}"


@dataclass(frozen=True)
class RunInfo:
    run_key: str
    source: str
    model: str
    condition: str
    decoding: str
    seed: int
    predictions_file: str | None
    predictions: int
    page: str  # the run page's name, relative to the report


@dataclass(frozen=True)
class Comparison:
    metric: str
    label_a: str
    label_b: str
    n_items: int
    mean_diff: float | None
    ci_low: float | None
    ci_high: float | None
    mcnemar_p: float | None = None           # binary metrics: exact McNemar, and Bonferroni-adjusted over the pairs
    mcnemar_p_adjusted: float | None = None
    t_p: float | None = None                 # continuous metrics of the closed-answer benchmarks: paired t-test


@dataclass(frozen=True)
class Grounding:
    label: str
    delta: str  # delta_s | delta_t
    metric: str
    n_items: int
    correct_minus_control: float | None
    ci_low: float | None
    ci_high: float | None


def _number(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _interval(low: float | None, high: float | None) -> str:
    return "–" if low is None or high is None else f"[{low:.4f}, {high:.4f}]"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
        ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


def metric_kind(metric: str, statistics: Sequence[str]) -> str:
    """reference (compared with the human answers), judge (a model's verdict) or statistic (of the answers alone)."""
    if metric in statistics:
        return "statistic"
    return "judge" if metric.startswith(JUDGE_PREFIX) else "reference"


def _ranked(rows: Sequence[BoardRow]) -> list[BoardRow]:
    """Best first; runs without a value last; ties by label, so the order is the same every time."""
    return sorted(rows, key=lambda r: (r.mean is None, -(r.mean or 0.0), r.label, r.run_key))


def benchmark_report(benchmark: str, release: Mapping[str, Any], runs: Sequence[RunInfo], board: Sequence[BoardRow],
                     statistics: Sequence[str], comparisons: Sequence[Comparison], grounding: Sequence[Grounding],
                     plots: Mapping[str, str], sections: Sequence[tuple[str, str]], bootstrap: tuple[int, int]) -> str:
    """The benchmark's report. ``plots`` maps a metric (or ``lengths``) to its image's name relative to the report;
    ``sections`` are (title, Markdown body) added at the end (the human similarity study)."""
    lines = [f"# {benchmark}: evaluation report", "",
             f"Release `{release['dataset']}` version {release['version']}, data digest `{release['digest'][:16]}`"
             f" ({release['items']} items). Every figure is the mean over items with its bootstrap 95 % interval"
             f" ({bootstrap[0]} resamples, seed {bootstrap[1]}). {SCORING.get(benchmark, SCORING['critique'])}", ""]
    lines += ["## Runs", ""]
    lines += _table(("model", "condition", "source", "predictions", "seed", "page"),
                    [(r.model, r.condition, r.source + (f" ({r.predictions_file})" if r.predictions_file else ""),
                      r.predictions, r.seed, f"[{r.page}]({r.page})") for r in sorted(runs, key=lambda r: (r.model, r.condition, r.run_key))])
    ran = [r for r in board if r.status == "ran"]
    for kind, title in (("reference", "Reference metrics"), ("judge", "Model judges")):
        metrics = sorted({r.metric for r in ran if metric_kind(r.metric, statistics) == kind})
        if not metrics:
            continue
        lines += ["", f"## {title}"]
        for metric in metrics:
            rows = _ranked([r for r in ran if r.metric == metric])
            lines += ["", f"### {metric}", ""]
            lines += _table(("rank", "model", "condition", "mean", "95 % CI", "items"),
                            [(k + 1, r.model, r.condition, _number(r.mean), _interval(r.ci_low, r.ci_high), r.n_items or 0)
                             for k, r in enumerate(rows)])
            if metric in plots:
                lines += ["", f"![{metric} per item]({plots[metric]})"]
    lines += _statistics_tables(ran, statistics)
    if "lengths" in plots:
        lines += ["", f"![answer length]({plots['lengths']})"]
    unavailable = sorted({(r.metric, r.reason or "") for r in board if r.status != "ran"})
    if unavailable:
        lines += ["", "## Metrics that did not run", ""]
        lines += _table(("metric", "why"), unavailable)
    if comparisons:
        tested = any(c.mcnemar_p is not None or c.t_p is not None for c in comparisons)
        lines += ["", "## Paired comparisons", "",
                  "Mean difference (first − second) over the items both runs scored, with its paired bootstrap 95 %"
                  " interval; **bold** where the interval excludes 0 (view `evaluation_paired` has every metric)."
                  + (" On right/wrong metrics, McNemar's exact two-sided p and its Bonferroni adjustment over every pair"
                     " compared on the metric; on continuous ones the paired t-test's p." if tested else ""), ""]
        header = ("metric", "first", "second", "items", "difference", "95 % CI") + (("test", "p", "p (Bonferroni)") if tested else ())
        lines += _table(header, [(c.metric, c.label_a, c.label_b, c.n_items, _bold_if_clear(c), _interval(c.ci_low, c.ci_high))
                                 + (_test_cells(c) if tested else ())
                                 for c in sorted(comparisons, key=lambda c: (c.metric, c.label_a, c.label_b))])
    if grounding:
        lines += ["", "## Grounding controls", "",
                  "What the right image is worth: the same model and prompt against another post's image (Δ_S) or none"
                  " (Δ_T), correct − control per item (view `evaluation_grounding`).", ""]
        lines += _table(("model / condition", "control", "metric", "items", "correct − control", "95 % CI"),
                        [(g.label, g.delta, g.metric, g.n_items, _number(g.correct_minus_control),
                          _interval(g.ci_low, g.ci_high)) for g in sorted(grounding, key=lambda g: (g.label, g.delta, g.metric))])
    for title, body in sections:
        lines += ["", f"## {title}", "", body]
    return "\n".join(lines) + "\n"


def _p(value: float | None) -> str:
    return "–" if value is None else ("< 0.0001" if value < 1e-4 else f"{value:.4f}")


def _test_cells(c: Comparison) -> tuple[str, str, str]:
    if c.mcnemar_p is not None:
        return "McNemar", _p(c.mcnemar_p), _p(c.mcnemar_p_adjusted)
    if c.t_p is not None:
        return "paired t", _p(c.t_p), "–"
    return "–", "–", "–"


def _bold_if_clear(c: Comparison) -> str:
    text = _number(c.mean_diff)
    clear = c.ci_low is not None and c.ci_high is not None and (c.ci_low > 0 or c.ci_high < 0)
    return f"**{text}**" if clear else text


def _statistics_tables(ran: Sequence[BoardRow], statistics: Sequence[str]) -> list[str]:
    present = [s for s in statistics if any(r.metric == s for r in ran)]
    if not present:
        return []
    by_run: dict[str, dict[str, BoardRow]] = {}
    labels: dict[str, str] = {}
    for r in ran:
        if r.metric in present:
            by_run.setdefault(r.run_key, {})[r.metric] = r
            labels[r.run_key] = r.label
    order = sorted(by_run, key=lambda k: (labels[k], k))
    lines = ["", "## Answer statistics", "",
             "Of the answers alone, the human references' in the human row: mean per item (an item's answers averaged"
             " first). `aspect:*` is the share of critiques that mention the aspect."]
    for start in range(0, len(present), _STATISTICS_PER_TABLE):
        names = present[start:start + _STATISTICS_PER_TABLE]
        lines.append("")
        lines += _table(("model / condition", *names),
                        [(labels[k], *(_number(by_run[k][n].mean, 3) if n in by_run[k] else "–" for n in names)) for k in order])
    return lines


def run_page(benchmark: str, run: RunInfo, rows: Sequence[BoardRow], parameters: Mapping[str, str], report_name: str,
             lengths_plot: str | None) -> str:
    """One run's page: what was asked and how, and every metric with its status, version and interval."""
    lines = [f"# {benchmark}: {run.model} / {run.condition}", "",
             f"Run `{run.run_key}` ({run.source}), {run.predictions} predictions, seed {run.seed}."
             f" Back to the [benchmark report]({report_name}).", "", "## Decoding", "", "```json", run.decoding, "```"]
    if run.predictions_file:
        lines += ["", f"Predictions read from `{run.predictions_file}`."]
    lines += ["", "## Metrics", ""]
    lines += _table(("metric", "status", "mean", "95 % CI", "items", "version or reason"),
                    [(r.metric, r.status, _number(r.mean), _interval(r.ci_low, r.ci_high), r.n_items or 0,
                      r.version if r.status == "ran" else r.reason) for r in sorted(rows, key=lambda r: r.metric)])
    if parameters:
        lines += ["", "## Metric parameters", ""]
        lines += _table(("metric", "parameters"), sorted(parameters.items()))
    if lengths_plot:
        lines += ["", f"![answer length]({lengths_plot})"]
    return "\n".join(lines) + "\n"


def response_table(stats: Sequence[ModelResponseStats]) -> tuple[str, str]:
    """AesCanvas Table S5 as a report section: per run (and the references), length, length against the reference,
    dimensions addressed, aesthetic-term density pooled over answers, Prompt Align on focused questions, and the
    three dimensions generic questions draw most often."""
    body = ["Over every answer of each run; `reference` are the verified answers themselves. Density is pooled (term"
            " occurrences per 100 words over all answers), Prompt Align counts questions that name dimensions, the"
            " Generic Top-3 those that name none.", ""]
    body += _table(("answers by", "n", "AvgLen", "Len/Ref", "DimHits", "Density", "PromptAlign", "Generic Top-3"),
                   [(s.model, s.n, f"{s.avg_length:.1f}", _number(s.len_ref, 2), f"{s.dim_hits:.2f}", _number(s.density, 2),
                     _number(s.prompt_align, 3), ", ".join(s.generic_top3) or "–") for s in stats])
    return "Response statistics (AesCanvas Table S5)", "\n".join(body)

