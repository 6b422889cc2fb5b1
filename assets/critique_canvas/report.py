"""CritiqueCanvas's part of the end-of-run summary: pairs, the split, and each audit round's sheet and figures."""

from collections.abc import Iterator, Mapping
from typing import Any

from warehouse.db import Warehouse

REPORT_ORDER = 30
"""Where this part comes in the summary (data-flow order): it critiques the pool's images."""


def report(wh: Warehouse, config: Mapping[str, Any]) -> Iterator[tuple[str, str] | str]:
    """(title, SQL) of each table to print when it has rows, and where each audit round's reviewers send sheets back."""
    yield ("CritiqueCanvas pairs by domain (tables critique_group, critique_pair, model_call)",
           "SELECT g.domain, count(DISTINCT g.group_id) AS groups, count(*) AS pairs,"
           " count(*) FILTER (WHERE p.pair_index > 6) AS paragraph_pairs, CAST(sum(p.accepted::INT) AS BIGINT) AS accepted,"
           " round(sum(p.accepted::INT) / count(DISTINCT g.group_id), 2) AS accepted_per_image"
           " FROM critique_group g JOIN critique_pair p USING (group_id) GROUP BY ALL ORDER BY ALL")
    yield ("CritiqueCanvas split (groups and samples, the accepted pairs; table critique_split)",
           "SELECT s.split, s.domain, count(*) AS groups, CAST(sum(g.n_accepted) AS BIGINT) AS samples FROM critique_split s"
           " JOIN critique_group g USING (group_id) GROUP BY ALL ORDER BY ALL")
    rounds = wh.query("SELECT audit_round, n_sampled, sheet_path FROM critique_audit_round ORDER BY audit_round")
    for audit_round, n_sampled, sheet in rounds.itertuples(index=False):
        yield f"\naudit round {audit_round}: {n_sampled} pairs to review in {sheet}"
        yield f"  each reviewer fills a copy and saves it as CSV in {config['critique']['audit']['returned_dir']}"
    yield "CritiqueCanvas audit (view critique_audit_summary)", "SELECT * FROM critique_audit_summary"
