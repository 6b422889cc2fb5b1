"""The leakage guard's part of the end-of-run summary: which training images the releases leave out, and why."""

from collections.abc import Iterator, Mapping
from typing import Any

from warehouse.db import Warehouse

REPORT_ORDER = 90
"""Where this part comes in the summary (data-flow order): after every dataset, before their release."""
LISTED = 20
"""Exclusions listed one by one; the rest are in the counts (``aesforge sql "SELECT * FROM release_exclusion"``)."""


def report(wh: Warehouse, config: Mapping[str, Any]) -> Iterator[tuple[str, str] | str]:
    """(title, SQL) of each table to print when it has rows."""
    yield ("training images excluded from the releases as benchmark leakage (table release_exclusion)",
           "SELECT dataset, split, held_dataset, held_split, reason, count(*) AS images FROM release_exclusion"
           " GROUP BY ALL ORDER BY ALL")
    yield (f"the first {LISTED} excluded training images and the held-out image each collides with (table release_exclusion)",
           "SELECT dataset, split, reason, detail FROM release_exclusion ORDER BY dataset, split, reason, image_sha256"
           f" LIMIT {LISTED}")
