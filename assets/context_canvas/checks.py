"""ContextCanvas contracts as Great Expectations suites run by blocking asset checks.

On the cases: the gold option is one of the case's options, and every image has its rights entry. On the review:
every retained case has all seven criteria passed (by the panel's final row, or by every reviewer). On the export:
the evaluation file carries model input only and no file carries probe-model output.
"""

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, multi_asset_check

from assets.context_canvas.cases import context_cases
from assets.context_canvas.review import context_case_review
from assets.context_canvas.export import context_canvas_export
from assets.context_canvas.logic.retention import CRITERION_KEYS
from quality.gx_suite import Expectation, validate
from quality.results import check_specs, store_and_report
from resources.warehouse import WarehouseResource
from warehouse.db import Warehouse

CASE_FACTS = """
SELECT case_id,
       list_contains(json_extract_string(record, '$.options[*].option_id'), gold) AS gold_among_options,
       json_array_length(json_extract(record, '$.rights')) = n_images AS rights_per_image
FROM context_case
"""

# Per retained case: whether all seven criteria hold by the rule that retained it.
RETAINED_FACTS = """
WITH r AS (
    SELECT case_id, final,
           bool_and(COALESCE(CAST(json_extract(criteria, '$.' || k) AS BOOLEAN), false)) AS all_pass
    FROM context_review, unnest(?::VARCHAR[]) AS t(k)
    GROUP BY case_id, reviewer, final
)
SELECT t.case_id,
       CASE WHEN bool_or(r.final) THEN bool_and(r.all_pass) FILTER (WHERE r.final)
            ELSE coalesce(bool_and(r.all_pass), false) END AS all_criteria_passed
FROM context_retention t LEFT JOIN r USING (case_id)
WHERE t.status = 'retained'
GROUP BY t.case_id
"""

EVAL_KEYS = {"id", "images", "contact_sheet", "scenario", "proposed_assessment", "question", "options",
             "neutral_description", "evidence_description"}
PROBE_MARKERS = ("probe",)

CASE_EXPECTATIONS = [
    Expectation("gold_option_among_options", "every case's gold option is one of its options", "ExpectColumnValuesToBeInSet",
                {"column": "gold_among_options", "value_set": [True]}),
    Expectation("rights_for_every_image", "every case image has its provenance and rights entry", "ExpectColumnValuesToBeInSet",
                {"column": "rights_per_image", "value_set": [True]}),
]
REVIEW_EXPECTATIONS = [
    Expectation("retained_cases_pass_all_criteria", "every retained case has all seven criteria passed",
                "ExpectColumnValuesToBeInSet", {"column": "all_criteria_passed", "value_set": [True]}),
]
EXPORT_EXPECTATIONS = [
    Expectation("eval_file_is_model_input_only", "evaluation records carry only id, images, contact sheet, scenario,"
                " proposed assessment, question, options and the image descriptions", "ExpectColumnValuesToBeBetween",
                {"column": "n_non_input_keys", "min_value": 0, "max_value": 0}),
    Expectation("no_probe_output_in_exports", "no exported record carries probe-model output",
                "ExpectColumnValuesToBeBetween", {"column": "n_probe_keys", "min_value": 0, "max_value": 0}),
]


def export_facts(wh: Warehouse) -> pd.DataFrame:
    """One row per exported record: keys outside the model input (eval file) and probe keys (any file)."""
    rows = []
    for name in wh.query("SELECT path FROM export_file WHERE dataset = 'context_canvas' ORDER BY path")["path"]:
        is_eval = Path(name).name.startswith("context_canvas_eval")
        with wh.path_of(name).open(encoding="utf-8") as stream:
            for number, line in enumerate(stream, start=1):
                record = json.loads(line)
                keys = set(record)
                probe = [k for k in _all_keys(record) if any(m in k.lower() for m in PROBE_MARKERS)]
                rows.append({"file": Path(name).name, "line": number, "n_non_input_keys": len(keys - EVAL_KEYS) if is_eval else 0,
                             "n_probe_keys": len(probe)})
    return pd.DataFrame(rows, columns=["file", "line", "n_non_input_keys", "n_probe_keys"])


def _all_keys(value) -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from _all_keys(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _all_keys(inner)


@multi_asset_check(
    specs=check_specs(CASE_EXPECTATIONS, context_cases),
    description="Great Expectations suite on the cases: gold among the options, rights for every image.",
)
def context_cases_contract(context: AssetCheckExecutionContext, warehouse: WarehouseResource) -> Iterator[AssetCheckResult]:
    wh = warehouse.get_warehouse()
    outcomes = validate(wh.query(CASE_FACTS), "context_cases", CASE_EXPECTATIONS)
    yield from store_and_report(wh, context.run.run_id, "context_cases", outcomes, AssetCheckSeverity.ERROR)


@multi_asset_check(
    specs=check_specs(REVIEW_EXPECTATIONS, context_case_review),
    description="Great Expectations suite on the review: every retained case passed all seven criteria.",
)
def context_review_contract(context: AssetCheckExecutionContext, warehouse: WarehouseResource) -> Iterator[AssetCheckResult]:
    wh = warehouse.get_warehouse()
    outcomes = validate(wh.query(RETAINED_FACTS, [list(CRITERION_KEYS)]), "context_case_review", REVIEW_EXPECTATIONS)
    yield from store_and_report(wh, context.run.run_id, "context_case_review", outcomes, AssetCheckSeverity.ERROR)


@multi_asset_check(
    specs=check_specs(EXPORT_EXPECTATIONS, context_canvas_export),
    description="Great Expectations suite on the export: model input only in the evaluation file, no probe output anywhere.",
)
def context_export_contract(context: AssetCheckExecutionContext, warehouse: WarehouseResource) -> Iterator[AssetCheckResult]:
    wh = warehouse.get_warehouse()
    outcomes = validate(export_facts(wh), "context_canvas_export", EXPORT_EXPECTATIONS)
    yield from store_and_report(wh, context.run.run_id, "context_canvas_export", outcomes, AssetCheckSeverity.ERROR)
