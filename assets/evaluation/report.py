"""The evaluations' part of the end-of-run summary: each benchmark's leaderboard, and the metrics that did not run."""

from collections.abc import Iterator, Mapping
from typing import Any

from warehouse.db import Warehouse

REPORT_ORDER = 100
"""Where this part comes in the summary (data-flow order): after the releases it evaluates."""


def report(wh: Warehouse, config: Mapping[str, Any]) -> Iterator[tuple[str, str] | str]:
    """(title, SQL) of each table to print when it has rows."""
    yield ("evaluation leaderboards: mean over items with its bootstrap 95 % interval (view evaluation_leaderboard)",
           "SELECT benchmark, model, condition, metric, round(mean, 4) AS mean, round(ci_low, 4) AS ci_low,"
           " round(ci_high, 4) AS ci_high, n_items FROM evaluation_leaderboard WHERE status = 'ran'"
           " ORDER BY benchmark, metric, mean DESC")
    yield ("metrics that did not run, and why (view evaluation_leaderboard)",
           "SELECT DISTINCT benchmark, metric, reason FROM evaluation_leaderboard WHERE status = 'unavailable'"
           " ORDER BY benchmark, metric")
