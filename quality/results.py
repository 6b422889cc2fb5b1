"""Where check outcomes go: Dagster check results, and the warehouse's ``check_result`` table.

Writing outcomes (not data) is the one thing the quality package writes.
"""

from collections.abc import Iterator, Sequence

from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec

from quality.gx_suite import Expectation, ExpectationOutcome
from warehouse.db import Warehouse, insert_rows
from warehouse.ids import canonical_json
from warehouse.lineage import utcnow


CONFIGURED = " (the configured value at run time; the default shown)"
"""Added to a check description whose numbers come from the config (the definition only knows the defaults)."""


def check_specs(expectations: Sequence[Expectation], asset, blocking: bool = True, note: str = "") -> list[AssetCheckSpec]:
    """One Dagster check per expectation, described by the expectation's own sentence (what the UI shows beside the
    check); ``note`` adds what the definition cannot know (bounds come from the config at run time)."""
    return [AssetCheckSpec(x.name, asset=asset, blocking=blocking, description=x.description + note) for x in expectations]


def store_and_report(
    wh: Warehouse, run_id: str, asset_key: str, outcomes: Sequence[ExpectationOutcome], severity: AssetCheckSeverity
) -> Iterator[AssetCheckResult]:
    now = utcnow()
    with wh.transaction() as con:
        insert_rows(
            con,
            "check_result",
            [
                {
                    "check_name": o.name,
                    "asset_key": asset_key,
                    "run_id": run_id,
                    "passed": o.passed,
                    "severity": severity.value,
                    "details": canonical_json(
                        {"description": o.description, "element_count": o.element_count,
                         "unexpected_count": o.unexpected_count, "unexpected_sample": o.unexpected_sample}
                    ),
                    "evaluated_at": now,
                }
                for o in outcomes
            ],
            conflict="replace",
        )
    for o in outcomes:
        yield AssetCheckResult(
            asset_key=asset_key,
            check_name=o.name,
            passed=o.passed,
            severity=severity,
            description=o.description,
            metadata={
                "element_count": o.element_count,
                "unexpected_count": o.unexpected_count,
                "unexpected_sample": ", ".join(o.unexpected_sample) or "-",
            },
        )
