"""The poem benchmark's contracts as Great Expectations suites run by blocking asset checks.

On the phase-1 items: four distinct poems, the true one exactly once and under the recorded letter, three
distinct distractors. On the scores: every score in [0, 1], and every stored dimension mean recomputed here from
the kept survey letters (not-applicable answers never averaged in, and a dimension nobody found applicable left
empty), so a scoring bug cannot pass.
"""

import json
from collections.abc import Iterator

import pandas as pd
from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, multi_asset_check

from assets.poetry.logic.rubric import DIMENSION_KEYS, TEXT_INTEGRITY, dimension
from assets.poetry.scores import poem_scores
from assets.poetry.survey import recognizability_items
from quality.gx_suite import Expectation, validate
from quality.results import check_specs, store_and_report
from resources.warehouse import WarehouseResource

ITEM_FACTS = """
SELECT item_id,
       len(options) AS n_options,
       len(list_distinct(options)) AS n_distinct_options,
       (SELECT count(*) FROM unnest(options) AS t(o) WHERE o = poem_id) AS n_true_poem,
       options[instr('ABCD', correct_letter)] = poem_id AS letter_points_to_poem,
       len(list_distinct(distractors)) AS n_distinct_distractors,
       list_contains(distractors, poem_id) AS true_poem_among_distractors
FROM poem_phase1_item
"""


def _exactly(name: str, description: str, column: str, value: int) -> Expectation:
    return Expectation(name, description, "ExpectColumnValuesToBeBetween", {"column": column, "min_value": value, "max_value": value})


def _always(name: str, description: str, column: str, value: bool) -> Expectation:
    return Expectation(name, description, "ExpectColumnValuesToBeInSet", {"column": column, "value_set": [value]})


ITEM_EXPECTATIONS = [
    _exactly("phase1_four_distinct_poems", "each phase-1 item offers four distinct poems", "n_distinct_options", 4),
    _exactly("phase1_true_poem_once", "the illustrated poem is among the options exactly once", "n_true_poem", 1),
    _always("phase1_letter_is_true_poem", "the recorded correct letter points at the illustrated poem", "letter_points_to_poem", True),
    _exactly("three_distinct_distractors", "three distinct distractors per item", "n_distinct_distractors", 3),
    _always("distractors_exclude_true_poem", "no distractor is the illustrated poem", "true_poem_among_distractors", False),
]

SCORE_EXPECTATIONS = [
    Expectation("scores_in_unit_interval", "every dimension mean, quality and recognizability lies in [0, 1]",
                "ExpectColumnValuesToBeBetween", {"column": "value", "min_value": 0.0, "max_value": 1.0}),
    _always("na_never_averaged_in", "each stored dimension mean equals the mean of its raters' applicable scores"
            " (not-applicable answers excluded; none applicable means no value)", "matches_survey", True),
]


def score_facts(con) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(every stored score as a value, each (item, dimension) stored mean against one recomputed from the letters)."""
    stored = con.execute("SELECT item_id, dimensions, n_ratings, quality, recognizability, text_label_source"
                         " FROM poem_image_score ORDER BY item_id").fetchall()
    letters: dict[str, list[dict]] = {}
    for item_id, answers in con.execute("SELECT item_id, answers FROM poem_survey_response WHERE kept").fetchall():
        letters.setdefault(item_id, []).append(json.loads(answers))
    values, matches = [], []
    for item_id, dims, n_ratings, quality, recognizability, label_source in stored:
        dims, n_ratings = json.loads(dims), json.loads(n_ratings)
        values += [{"item_id": item_id, "what": key, "value": v} for key, v in dims.items() if v is not None]
        values += [{"item_id": item_id, "what": key, "value": v}
                   for key, v in (("quality", quality), ("recognizability", recognizability)) if v is not None]
        for key in DIMENSION_KEYS:
            if key == TEXT_INTEGRITY and label_source is not None:
                continue  # the OCR / adjudicated label replaces the survey vote here
            applicable = [s for s in (dimension(key).score(a[key]) for a in letters.get(item_id, []) if key in a)
                          if s is not None]
            expected = sum(applicable) / len(applicable) if applicable else None
            got = dims.get(key)
            ok = (got is None) == (expected is None) and (got is None or abs(got - expected) <= 1e-9) \
                and n_ratings.get(key) == len(applicable)
            matches.append({"item_id": item_id, "dimension": key, "matches_survey": bool(ok)})
    return (pd.DataFrame(values, columns=["item_id", "what", "value"]),
            pd.DataFrame(matches, columns=["item_id", "dimension", "matches_survey"]))


@multi_asset_check(
    specs=check_specs(ITEM_EXPECTATIONS, recognizability_items),
    description="Great Expectations suite on the phase-1 items: four distinct poems, the true one once under its"
    " letter, three distinct distractors that are not the true poem.",
)
def recognizability_items_contract(context: AssetCheckExecutionContext, warehouse: WarehouseResource) -> Iterator[AssetCheckResult]:
    wh = warehouse.get_warehouse()
    outcomes = validate(wh.query(ITEM_FACTS), "recognizability_items", ITEM_EXPECTATIONS)
    yield from store_and_report(wh, context.run.run_id, "recognizability_items", outcomes, AssetCheckSeverity.ERROR)


@multi_asset_check(
    specs=check_specs(SCORE_EXPECTATIONS, poem_scores),
    description="Great Expectations suite on the rubric scores: all in [0, 1]; every dimension mean recomputed from the"
    " kept survey letters, with not-applicable answers never averaged in.",
)
def poem_scores_contract(context: AssetCheckExecutionContext, warehouse: WarehouseResource) -> Iterator[AssetCheckResult]:
    wh = warehouse.get_warehouse()
    with wh.transaction() as con:
        values, matches = score_facts(con)
    outcomes = validate(values, "poem_score_values", SCORE_EXPECTATIONS[:1])
    outcomes += validate(matches, "poem_score_rubric", SCORE_EXPECTATIONS[1:])
    yield from store_and_report(wh, context.run.run_id, "poem_scores", outcomes, AssetCheckSeverity.ERROR)
