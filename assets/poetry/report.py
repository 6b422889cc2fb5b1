"""The poem-illustration benchmark's part of the end-of-run summary: illustrations, survey QC and the statistics."""

from collections.abc import Iterator, Mapping
from typing import Any

from warehouse.db import Warehouse

REPORT_ORDER = 60
"""Where this part comes in the summary (data-flow order): its illustrations enter the pool, its figures come late."""


def report(wh: Warehouse, config: Mapping[str, Any]) -> Iterator[tuple[str, str] | str]:
    """(title, SQL) of each table to print when it has rows, after a note when stand-ins were rated, not model output."""
    if int(wh.query("SELECT count(*) AS n FROM poem_illustration WHERE kind = 'stand_in'").iloc[0, 0]):
        yield ("\npoem illustrations: no text-to-image model is configured (image_generators); the sample's paintings"
               " stand in as illustrations (kind = 'stand_in'), so the figures below rate stand-ins, not model output")
    yield ("poem illustrations (table poem_illustration)",
           "SELECT generator, kind, coalesce(model, '-') AS model, count(*) AS images FROM poem_illustration GROUP BY ALL ORDER BY ALL")
    yield ("survey quality control (view poem_survey_exclusions)",
           "SELECT level, reason_code, count(*) AS n FROM poem_survey_exclusions GROUP BY ALL ORDER BY ALL")
    yield ("per-model table: mean per dimension over applicable images (view poem_model_table)",
           "SELECT generator, round(COLUMNS(* EXCLUDE (generator, n_images)), 3), n_images FROM poem_model_table ORDER BY quality DESC")
    yield ("bootstrap of the model ranking: share of resamples at each rank (table poem_rank_frequency)",
           "PIVOT (SELECT generator, 'rank ' || rank AS rank, round(share, 4) AS share, observed_rank, n_resamples, n_poems"
           " FROM poem_rank_frequency) ON rank USING first(share) ORDER BY observed_rank")
    yield ("within-one-level agreement on multi-rated images (table poem_agreement)",
           "SELECT dimension, pairs, agreeing, round(rate, 3) AS rate FROM poem_agreement ORDER BY dimension")
    yield ("text integrity (table poem_text_label)",
           "SELECT source, issue, count(*) AS images FROM poem_text_label GROUP BY ALL ORDER BY ALL")
    yield ("rubric judge against people (table poem_judge_agreement)",
           "SELECT judge, dimension, n, round(mae, 3) AS mae, round(within_005, 3) AS within_005, round(kendall_tau, 3) AS tau,"
           " n_poems FROM poem_judge_agreement WHERE dimension = 'all' OR n > 0 ORDER BY judge, dimension = 'all' DESC, dimension")
