"""The counterfactual edits' part of the end-of-run summary."""

from collections.abc import Iterator, Mapping
from typing import Any

from warehouse.db import Warehouse

REPORT_ORDER = 50
"""Where this part comes in the summary (data-flow order): edits of pool images, after the designs."""


def report(wh: Warehouse, config: Mapping[str, Any]) -> Iterator[tuple[str, str] | str]:
    """(title, SQL) of each table to print when it has rows."""
    yield ("counterfactual edits (synthetic, table counterfactual_edit)",
           "SELECT CASE WHEN case_id IS NULL THEN 'pool item' ELSE 'case image' END AS source, provider, model,"
           " manual_check, count(*) AS n FROM counterfactual_edit GROUP BY ALL ORDER BY ALL")
