"""The design stages' contracts as Great Expectations suites run by blocking asset checks.

On the questions: every box inside its canvas, region selection with four distinct options and exactly one
correct, None (or "no") exactly when the design was judged good, no base design on both sides of the split.
On the perturbations: a complete log for every perturbed design.
"""

from collections.abc import Iterator

from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, multi_asset_check

from assets.designs.perturbation import perturbed_designs
from assets.designs.questions import design_questions
from quality.gx_suite import Expectation, validate
from quality.results import check_specs, store_and_report
from resources.warehouse import WarehouseResource

# One row per question with the facts the expectations need. Boxes are the choices that are arrays and the
# answer when it is one; "outside" counts boxes with a coordinate off the canvas or an empty extent.
QUESTION_FACTS = """
WITH boxes AS (
    SELECT q.question_id, b AS box, q.canvas_width AS w, q.canvas_height AS h
    FROM design_question q, unnest(CAST(q.choices AS JSON[])) AS t(b) WHERE json_type(b) = 'ARRAY'
    UNION ALL
    SELECT q.question_id, CAST(q.answer AS JSON), q.canvas_width, q.canvas_height
    FROM design_question q WHERE json_type(CAST(q.answer AS JSON)) = 'ARRAY'
), outside AS (
    SELECT question_id, count(*) FILTER (WHERE
        CAST(box->>'$[0]' AS DOUBLE) < 0 OR CAST(box->>'$[1]' AS DOUBLE) < 0
        OR CAST(box->>'$[2]' AS DOUBLE) > (CASE WHEN CAST(box->>'$[2]' AS DOUBLE) <= 1 THEN 1 ELSE w END)
        OR CAST(box->>'$[3]' AS DOUBLE) > (CASE WHEN CAST(box->>'$[3]' AS DOUBLE) <= 1 THEN 1 ELSE h END)
        OR CAST(box->>'$[2]' AS DOUBLE) <= CAST(box->>'$[0]' AS DOUBLE)
        OR CAST(box->>'$[3]' AS DOUBLE) <= CAST(box->>'$[1]' AS DOUBLE)) AS n_outside
    FROM boxes GROUP BY question_id
)
SELECT q.question_id, q.format,
       coalesce(o.n_outside, 0) AS n_boxes_outside,
       CASE WHEN q.format = 'region_selection' THEN json_array_length(CAST(q.choices AS JSON)) ELSE 4 END AS n_options,
       CASE WHEN q.format = 'region_selection' THEN
            (SELECT count(DISTINCT coalesce(CAST(c AS VARCHAR), 'null')) FROM unnest(CAST(q.choices AS JSON[])) AS t(c))
            ELSE 4 END AS n_distinct_options,
       CASE WHEN q.format = 'region_selection' THEN
            (SELECT count(*) FROM unnest(CAST(q.choices AS JSON[])) AS t(c)  -- a JSON null unnests as SQL NULL
             WHERE coalesce(CAST(c AS VARCHAR), 'null') = CAST(json(q.answer) AS VARCHAR)) ELSE 1 END AS n_correct,
       CASE WHEN q.format = 'aesthetic_judgment' THEN (q.answer = '"yes"') = q.judged_flawed
            ELSE (q.answer = 'null') = NOT q.judged_flawed END AS none_iff_good
FROM design_question q LEFT JOIN outside o USING (question_id)
"""

SPLIT_FACTS = "SELECT base_design_id, count(DISTINCT split) AS n_splits FROM design_question GROUP BY base_design_id"

# One row per perturbed design: its logged operations, and any that name an element it does not have.
LOG_FACTS = """
SELECT d.design_id,
       count(o.op_index) AS n_operations,
       count(*) FILTER (WHERE o.element_index >= d.n_elements OR len(o.box_before) <> 4 OR len(o.box_after) <> 4) AS n_bad_rows
FROM design d LEFT JOIN design_perturbation_op o USING (design_id)
WHERE d.is_perturbed
GROUP BY d.design_id
"""


def _exactly(name: str, description: str, column: str, value: int) -> Expectation:
    return Expectation(name, description, "ExpectColumnValuesToBeBetween", {"column": column, "min_value": value, "max_value": value})


QUESTION_EXPECTATIONS = [
    _exactly("question_boxes_inside_canvas", "every box in choices and answers lies inside its canvas", "n_boxes_outside", 0),
    _exactly("region_selection_four_options", "region selection offers four options", "n_options", 4),
    _exactly("region_selection_options_distinct", "the four options are distinct", "n_distinct_options", 4),
    _exactly("region_selection_one_correct", "exactly one option is the answer", "n_correct", 1),
    Expectation("none_exactly_when_good", "None (or 'no') is the answer exactly when the design was judged good",
                "ExpectColumnValuesToBeInSet", {"column": "none_iff_good", "value_set": [True]}),
]
SPLIT_EXPECTATIONS = [_exactly("no_base_design_across_splits", "no base design has questions in both benchmark and train",
                               "n_splits", 1)]
LOG_EXPECTATIONS = [
    Expectation("every_perturbed_design_logged", "every perturbed design has one to three logged operations",
                "ExpectColumnValuesToBeBetween", {"column": "n_operations", "min_value": 1, "max_value": 3}),
    _exactly("perturbation_log_rows_complete", "every logged operation names an existing element and both boxes", "n_bad_rows", 0),
]


@multi_asset_check(
    specs=check_specs(QUESTION_EXPECTATIONS + SPLIT_EXPECTATIONS, design_questions),
    description="Great Expectations suite on the design questions: boxes inside the canvas, four options with exactly"
    " one correct, None exactly when judged good, no base design across splits.",
)
def design_questions_contract(context: AssetCheckExecutionContext, warehouse: WarehouseResource) -> Iterator[AssetCheckResult]:
    wh = warehouse.get_warehouse()
    outcomes = validate(wh.query(QUESTION_FACTS), "design_questions", QUESTION_EXPECTATIONS)
    outcomes += validate(wh.query(SPLIT_FACTS), "design_splits", SPLIT_EXPECTATIONS)
    yield from store_and_report(wh, context.run.run_id, "design_questions", outcomes, AssetCheckSeverity.ERROR)


@multi_asset_check(
    specs=check_specs(LOG_EXPECTATIONS, perturbed_designs),
    description="Great Expectations suite on the perturbation log: one to three operations per perturbed design, each"
    " naming an existing element with its boxes before and after.",
)
def perturbation_log_contract(context: AssetCheckExecutionContext, warehouse: WarehouseResource) -> Iterator[AssetCheckResult]:
    wh = warehouse.get_warehouse()
    outcomes = validate(wh.query(LOG_FACTS), "perturbed_designs", LOG_EXPECTATIONS)
    yield from store_and_report(wh, context.run.run_id, "perturbed_designs", outcomes, AssetCheckSeverity.ERROR)
