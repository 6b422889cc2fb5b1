"""CritiqueCanvas pairs' contract, as a Great Expectations suite run by a blocking asset check.

Per complete group: a six-pair dialogue (turns 1-6; the paragraph instructions follow it), exactly one improvement pair, a plan of one to five allowed dimensions,
non-empty questions and answers, and a verifier decision on every pair.
"""

from collections.abc import Iterator

from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, multi_asset_check

from assets.critique_canvas.critique_pairs import critique_pairs
from assets.critique_canvas.splits import critique_splits
from assets.critique_canvas.logic.answers import DIMENSION_IDS, MAX_DIMENSIONS, N_PAIRS
from quality.gx_suite import Expectation, validate
from quality.results import check_specs, store_and_report
from resources.warehouse import WarehouseResource

# One row per complete group, with the facts every expectation needs.
GROUP_FACTS = f"""
SELECT g.group_id,
       count(p.pair_id) FILTER (WHERE p.pair_index <= {N_PAIRS}) AS n_pairs,
       count(*) FILTER (WHERE p.improvement) AS n_improvement,
       count(*) FILTER (WHERE length(trim(p.question)) = 0 OR length(trim(p.answer)) = 0) AS n_empty,
       count(*) FILTER (WHERE p.accepted IS NULL OR p.instruction_consistency IS NULL
                          OR p.visual_grounding IS NULL OR p.response_quality IS NULL) AS n_undecided,
       json_array_length(g.plan) AS n_dimensions,
       (SELECT count(*) FROM unnest(CAST(json_extract_string(g.plan, '$[*].dimension') AS VARCHAR[])) AS d(id)
         WHERE d.id NOT IN ({", ".join(f"'{d}'" for d in DIMENSION_IDS)})) AS n_unknown_dimensions
FROM critique_group g
LEFT JOIN critique_pair p USING (group_id)
WHERE g.status = 'complete'
GROUP BY g.group_id, g.plan
"""


def critique_expectations() -> list[Expectation]:
    between = "ExpectColumnValuesToBeBetween"

    def exactly(name: str, description: str, column: str, value: int) -> Expectation:
        return Expectation(name, description, between, {"column": column, "min_value": value, "max_value": value})

    return [
        exactly("six_pairs_per_group", f"every complete group holds a {N_PAIRS}-pair dialogue", "n_pairs", N_PAIRS),
        exactly("one_improvement_pair_per_group", "exactly one pair per group is about improvement", "n_improvement", 1),
        exactly("questions_and_answers_non_empty", "no pair has an empty question or answer", "n_empty", 0),
        exactly("verifier_decision_on_every_pair", "every pair carries the verifier's three checks", "n_undecided", 0),
        Expectation("plan_dimension_count", f"each plan selects 1 to {MAX_DIMENSIONS} dimensions", between,
                    {"column": "n_dimensions", "min_value": 1, "max_value": MAX_DIMENSIONS}),
        exactly("plan_dimensions_allowed", "every planned dimension is one of the ten shared ones", "n_unknown_dimensions", 0),
    ]




@multi_asset_check(
    specs=check_specs(critique_expectations(), critique_pairs),
    description="Great Expectations suite on complete critique groups: six pairs, one improvement pair, allowed"
    " plan dimensions, non-empty text, a verifier decision on every pair.",
)
def critique_pairs_contract(context: AssetCheckExecutionContext, warehouse: WarehouseResource) -> Iterator[AssetCheckResult]:
    wh = warehouse.get_warehouse()
    outcomes = validate(wh.query(GROUP_FACTS), "critique_pairs", critique_expectations())
    yield from store_and_report(wh, context.run.run_id, "critique_pairs", outcomes, AssetCheckSeverity.ERROR)


# One row per duplicate cluster with complete groups: how many splits it landed in, and unsplit groups.
SPLIT_FACTS = """
SELECT m.cluster_id,
       count(DISTINCT s.split) AS n_splits,
       count(*) FILTER (WHERE s.group_id IS NULL) AS n_unsplit
FROM critique_group g
JOIN pool_member m ON m.pool_item_id = g.pool_item_id
LEFT JOIN critique_split s USING (group_id)
WHERE g.status = 'complete'
GROUP BY m.cluster_id
"""

SPLIT_EXPECTATIONS = [
    Expectation("no_split_leakage", "no duplicate cluster has groups in both train and eval", "ExpectColumnValuesToBeBetween",
                {"column": "n_splits", "min_value": 0, "max_value": 1}),
    Expectation("every_group_split", "every complete group is in train or eval", "ExpectColumnValuesToBeBetween",
                {"column": "n_unsplit", "min_value": 0, "max_value": 0}),
]


@multi_asset_check(
    specs=check_specs(SPLIT_EXPECTATIONS, critique_splits),
    description="Great Expectations suite on the split: no duplicate cluster on both sides, every complete group split.",
)
def critique_splits_contract(context: AssetCheckExecutionContext, warehouse: WarehouseResource) -> Iterator[AssetCheckResult]:
    wh = warehouse.get_warehouse()
    outcomes = validate(wh.query(SPLIT_FACTS), "critique_splits", SPLIT_EXPECTATIONS)
    yield from store_and_report(wh, context.run.run_id, "critique_splits", outcomes, AssetCheckSeverity.ERROR)
