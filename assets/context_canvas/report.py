"""ContextCanvas's part of the end-of-run summary: case status, rejected records, the anti-shortcut verdicts."""

from collections.abc import Iterator, Mapping
from typing import Any

from warehouse.db import Warehouse

REPORT_ORDER = 70
"""Where this part comes in the summary (data-flow order): last, as its cases stand apart from the pool."""


def report(wh: Warehouse, config: Mapping[str, Any]) -> Iterator[tuple[str, str] | str]:
    """(title, SQL) of each table to print when it has rows, then each answerer's shortcut verdict."""
    yield ("contextual-suitability cases (view context_case_status)",
           "SELECT status, count(*) AS cases FROM context_case_status GROUP BY ALL ORDER BY ALL")
    yield ("rejected case records (table context_case_read)",
           "SELECT reason_code, count(*) AS n FROM context_case_read WHERE reason_code IS NOT NULL GROUP BY ALL ORDER BY ALL")
    yield ("anti-shortcut report (table context_shortcut_report)",
           "SELECT answerer, figures->>'n_cases' AS cases, round(CAST(figures->>'gold_yes_rate' AS DOUBLE), 3) AS gold_yes_rate,"
           " round(CAST(figures->>'length_gold_correlation' AS DOUBLE), 3) AS length_gold_r,"
           " round(CAST(figures->>'majority_baseline_accuracy' AS DOUBLE), 3) AS majority_baseline,"
           " round(CAST(figures->>'text_only_accuracy' AS DOUBLE), 3) AS text_only FROM context_shortcut_report ORDER BY answerer")
    verdicts = wh.query("SELECT answerer, figures->>'verdict' AS verdict FROM context_shortcut_report ORDER BY answerer")
    for answerer, verdict in verdicts.itertuples(index=False):
        yield f"  {answerer}: {verdict}"
