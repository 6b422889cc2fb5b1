"""Train / evaluation split of the CritiqueCanvas groups (pure logic: assets/critique_canvas/logic/group_split.py)."""

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.critique_canvas.critique_pairs import critique_pairs
from assets.critique_canvas.settings import CritiqueSettings
from assets.critique_canvas.logic.group_split import EVAL, SplitItem, assign_splits
from assets.critique_canvas.store import replace_splits
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.warehouse import WarehouseResource
from warehouse.ids import digest_of


@asset(
    metadata=writes("critique_split"),
    code_version="1",
    deps=[critique_pairs],
    description="Every complete critique group in train or eval: whole duplicate clusters on one side, the"
    " evaluation subset balanced across the three domains, eval_per_domain samples (accepted pairs) each, or groups"
    " with eval_unit: groups; the seed recorded.",
)
def critique_splits(context: AssetExecutionContext, warehouse: WarehouseResource, critique: CritiqueSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    params = {"seed": critique.split_seed, "eval_per_domain": critique.eval_per_domain, "eval_unit": critique.eval_unit,
              "unit": "duplicate cluster"}
    with recorded_step(context, wh, params) as step:
        with step.batch() as log:
            rows = log.con.execute(
                "SELECT g.group_id, m.cluster_id, g.domain, g.n_accepted FROM critique_group g"
                " JOIN pool_member m ON m.pool_item_id = g.pool_item_id WHERE g.status = 'complete' ORDER BY g.group_id"
            ).fetchall()
            items = [SplitItem(*row[:3]) for row in rows]
            samples = {row[0]: row[3] or 0 for row in rows} if critique.eval_unit == "samples" else None
            last = step.last_inputs(log.con)
        inputs = digest_of([[i.__dict__ for i in items], samples, params])
        if last == inputs:
            step.notes["unchanged"] = "same groups, clusters and split settings as the last decision"
            return step.result()
        splits = assign_splits(items, critique.eval_per_domain, critique.split_seed, samples)
        with step.batch() as log:
            replace_splits(
                log.con,
                [
                    {"group_id": i.group_id, "split": splits[i.group_id], "cluster_id": i.cluster_id, "domain": i.domain,
                     "seed": critique.split_seed, "eval_per_domain": critique.eval_per_domain, "activity_id": log.activity_id}
                    for i in items
                ],
            )
            log.used((i.group_id for i in items), "critique_group")
            step.remember_inputs(log, inputs)
        for item in items:
            step.counts[f"{splits[item.group_id]}:{item.domain}"] += 1
        step.counts["groups"] = len(items)
        step.counts["eval_groups"] = sum(s == EVAL for s in splits.values())
        step.counts["eval_samples"] = sum(row[3] or 0 for row in rows if splits[row[0]] == EVAL)
    return step.result()
