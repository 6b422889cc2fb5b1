"""The pool's part of the end-of-run summary: how records flowed through the stages and what the pool kept."""

from collections.abc import Iterator, Mapping
from typing import Any

from warehouse.db import Warehouse

REPORT_ORDER = 10
"""Where this part comes in the summary (data-flow order): first, as every dataset draws from the pool."""


def report(wh: Warehouse, config: Mapping[str, Any]) -> Iterator[tuple[str, str] | str]:
    """(title, SQL) of each table to print when it has rows."""
    yield "pool selection flow (all runs)", "SELECT stage, n FROM pool_stage_counts ORDER BY step"
    yield ("excluded records by stage and reason",
           "SELECT stage, reason_code, count(*) AS n FROM pool_exclusions GROUP BY ALL ORDER BY stage, reason_code")
    yield "kept images by domain", "SELECT domain, count(*) AS n FROM pool_images GROUP BY domain ORDER BY domain"
