"""Photocritique's part of the end-of-run summary: the selection flow of posts and comments, and unusable sources."""

from collections.abc import Iterator, Mapping
from typing import Any

from warehouse.db import Warehouse

REPORT_ORDER = 20
"""Where this part comes in the summary (data-flow order): after the pool its post images enter."""


def report(wh: Warehouse, config: Mapping[str, Any]) -> Iterator[tuple[str, str] | str]:
    """(title, SQL) of each table to print when it has rows."""
    yield ("photocritique selection flow (view photocritique_selection_flow)",
           "SELECT * FROM photocritique_selection_flow WHERE (n > 0 OR reason IN ('kept', 'reference'))"
           " AND EXISTS (SELECT 1 FROM photocritique_post_decision)")
    yield ("source lines and requests that could not be used",
           "SELECT source_kind, scope, reason_code, count(*) AS n FROM reddit_source_problem GROUP BY ALL ORDER BY ALL")
