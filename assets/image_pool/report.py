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
    yield ("pool passes that did not run, and why (latest run of each)",
           "SELECT asset_key AS pass, json_extract_string(summary, '$.reason') AS reason FROM activity"
           " WHERE asset_key IN ('clip_duplicates', 'model_filter_verdicts') AND status = 'success'"
           " QUALIFY row_number() OVER (PARTITION BY asset_key ORDER BY started_at DESC) = 1"
           " AND 'not run' IN (json_extract_string(summary, '$.clip_pass'), json_extract_string(summary, '$.model_filters'))"
           " ORDER BY pass")
