"""The designs' part of the end-of-run summary: designs and renders, perturbations, labels, questions, rejects."""

from collections.abc import Iterator, Mapping
from typing import Any

from warehouse.db import Warehouse

REPORT_ORDER = 40
"""Where this part comes in the summary (data-flow order): its own source, after the pool's datasets."""


def report(wh: Warehouse, config: Mapping[str, Any]) -> Iterator[tuple[str, str] | str]:
    """(title, SQL) of each table to print when it has rows."""
    yield ("designs (tables design, design_render; log design_perturbation_op)",
           "SELECT CASE WHEN d.is_perturbed THEN 'perturbed' ELSE 'base' END AS kind, count(*) AS designs,"
           " count(r.design_id) AS rendered FROM design d LEFT JOIN design_render r USING (design_id) GROUP BY ALL ORDER BY ALL")
    yield "perturbation operations", "SELECT op, count(*) AS n FROM design_perturbation_op GROUP BY ALL ORDER BY ALL"
    yield ("renders against the dataset's own previews (mean absolute pixel difference, 0-255)",
           "SELECT count(*) AS designs, round(avg(preview_mean_abs_diff), 2) AS mean, round(max(preview_mean_abs_diff), 2) AS max"
           " FROM design_render WHERE preview_mean_abs_diff IS NOT NULL HAVING count(*) > 0")
    yield ("design labels per indicator (table design_label: human majority; training items people left open: the"
           " labeller)",
           "SELECT indicator, source, count(*) FILTER (WHERE flawed) AS flawed, count(*) FILTER (WHERE NOT flawed) AS good"
           " FROM design_label GROUP BY ALL ORDER BY ALL")
    yield ("benchmark items held out as unlabelled, asked again in the next round's sheet (table rejection)",
           "SELECT count(*) AS unlabelled, count(DISTINCT split_part(entity_id, '|', 1)) AS designs FROM rejection"
           " WHERE stage = 'design_label' AND reason_code = 'unlabelled' HAVING count(*) > 0")
    yield ("design questions (view design_answer_balance for the answer spread)",
           "SELECT split, format, count(*) AS n FROM design_question GROUP BY ALL ORDER BY ALL")
    yield ("rejected design records (table design_source_read)",
           "SELECT reason_code, count(*) AS n FROM design_source_read WHERE reason_code IS NOT NULL GROUP BY ALL ORDER BY ALL")
