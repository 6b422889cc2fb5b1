"""Running a Great Expectations 1.x suite over a DataFrame and reporting one outcome per expectation.

``dagster-ge`` pins GX below 1.0, so the checks call the GX 1.x API directly. Expectations are
declared as plain data (the GX class name and its arguments) and GX is imported only when a
suite runs, so loading the code location stays fast. GX's usage analytics would try to reach
the internet; they are switched off before GX is imported.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Expectation:
    """A named GX expectation; the name becomes the Dagster check name."""

    name: str
    description: str
    gx_class: str  # e.g. "ExpectColumnValuesToBeUnique"
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ExpectationOutcome:
    name: str
    description: str
    passed: bool
    element_count: int
    unexpected_count: int
    unexpected_sample: list[Any]


def validate(frame: pd.DataFrame, suite_name: str, expectations: Sequence[Expectation]) -> list[ExpectationOutcome]:
    """Validate ``frame`` against the expectations in an ephemeral GX context."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.enable_analytics(False)
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch = (
        context.data_sources.add_pandas(f"{suite_name}_source")
        .add_dataframe_asset(suite_name)
        .add_batch_definition_whole_dataframe("whole")
    )
    suite = context.suites.add(gx.ExpectationSuite(name=suite_name))
    added = {}
    for item in expectations:
        added[item.name] = suite.add_expectation(getattr(gx.expectations, item.gx_class)(**item.kwargs)).id
    definition = context.validation_definitions.add(gx.ValidationDefinition(name=suite_name, data=batch, suite=suite))
    result = definition.run(batch_parameters={"dataframe": frame}, result_format="SUMMARY")
    by_id = {r.expectation_config.id: r for r in result.results}  # GX does not keep the suite's order
    outcomes = []
    for item in expectations:
        outcome = by_id[added[item.name]]
        details = outcome.result or {}
        outcomes.append(
            ExpectationOutcome(
                name=item.name,
                description=item.description,
                passed=bool(outcome.success),
                element_count=int(details.get("element_count", len(frame))),
                unexpected_count=int(details.get("unexpected_count") or 0),
                unexpected_sample=[str(v) for v in (details.get("partial_unexpected_list") or [])[:10]],
            )
        )
    return outcomes
