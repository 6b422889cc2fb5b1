"""The evaluations' part of the end-of-run summary: each benchmark's leaderboard of metrics and judges, the metrics
that did not run, and where each benchmark's full report is (the answer statistics and per-indicator breakdowns are
there, not here)."""

from collections.abc import Iterator, Mapping
from typing import Any

from assets.evaluation.logic.item_statistics import DESCRIPTIVE
from warehouse.db import Warehouse

REPORT_ORDER = 100
"""Where this part comes in the summary (data-flow order): after the releases it evaluates."""


def report(wh: Warehouse, config: Mapping[str, Any]) -> Iterator[tuple[str, str] | str]:
    """(title, SQL) of each table to print when it has rows."""
    descriptive = ", ".join(f"'{name}'" for name in DESCRIPTIVE)
    yield ("evaluation leaderboards: mean over items with its bootstrap 95 % interval (view evaluation_leaderboard;"
           " answer statistics in each report)",
           "SELECT benchmark, metric, model, condition, round(mean, 4) AS mean, round(ci_low, 4) AS ci_low,"
           " round(ci_high, 4) AS ci_high, n_items FROM evaluation_leaderboard WHERE status = 'ran' AND mean IS NOT NULL"
           f" AND metric NOT IN ({descriptive}) AND NOT (metric LIKE '%:%' AND metric NOT LIKE 'f1:%')"
           " ORDER BY benchmark, metric, mean DESC, model, condition")
    yield ("metrics that did not run, and why (view evaluation_leaderboard)",
           "SELECT metric, string_agg(DISTINCT benchmark, ', ' ORDER BY benchmark) AS benchmarks, reason"
           " FROM evaluation_leaderboard WHERE status = 'unavailable' GROUP BY metric, reason ORDER BY metric, reason")
    yield ("evaluation reports (leaderboards, statistics, comparisons, plots; a page per run)",
           "SELECT asset_key AS evaluation, json_extract_string(summary, '$.report') AS report FROM activity"
           " WHERE asset_key LIKE '%\\_evaluation' ESCAPE '\\' AND status = 'success' AND json_extract_string(summary, '$.report') IS NOT NULL"
           " QUALIFY row_number() OVER (PARTITION BY asset_key ORDER BY started_at DESC) = 1 ORDER BY asset_key")
