"""The cross-benchmark leakage guard: no training split may hold an image another dataset tests or evaluates on.

Held out is every image a benchmark stores for its test or eval split (photocritique posts, ContextCanvas cases,
poem-benchmark illustrations, AesEval's benchmark designs, CritiqueCanvas's eval groups); training splits are
CritiqueCanvas train and AesEval train. The warehouse finds the collisions by joining on the pool's duplicate
clusters and on sha256 (view ``release_overlap``, warehouse/views/070_releases.sql); the pure logic
(assets/releases/logic/leakage.py) names the evidence and keeps one exclusion per training image, which the release
writers read back (assets/releases/store.py::excluded_images). The check no_benchmark_leakage (checks.py)
recomputes the overlap and fails on any not excluded.
"""

from dataclasses import asdict

import pandas as pd
from dagster import AssetExecutionContext, AssetKey, MaterializeResult, asset

from assets.core.materialization import writes
from assets.core.step import recorded_step
from assets.releases.logic.leakage import REASONS, Exclusion, Overlap, SplitImage, exclusions
from assets.releases.store import replace_exclusions
from resources.warehouse import WarehouseResource
from warehouse.db import registered
from warehouse.ids import digest_of, entity_id
from warehouse.lineage import Entity

SPLIT_ASSETS = ("image_pool", "reddit_post_images", "context_cases", "poem_illustrations", "design_splits",
                "design_renders", "critique_splits")
"""The assets whose tables say which image is in which split (and the pool's clusters that link them)."""

_SIDE = ("item_id", "entity_id", "image_sha256", "record_id", "image_id")
OVERLAP_QUERY = f"""
SELECT dataset, split, {', '.join(_SIDE)}, held_dataset, held_split, {', '.join(f'held_{c}' for c in _SIDE)},
       same_file, cluster_id, direct_methods
FROM release_overlap ORDER BY ALL
"""

# The pool's recorded path of every dropped image of the given clusters: its next hop towards the kept image.
NEXT_HOP_QUERY = """
SELECT DISTINCT image_id, matched_image_id, match_method FROM pool_member
WHERE NOT is_representative AND matched_image_id <> image_id AND cluster_id IN (SELECT cluster_id FROM {clusters})
ORDER BY ALL
"""


@asset(
    metadata=writes("release_exclusion"),
    code_version="1",
    deps=[AssetKey(key) for key in SPLIT_ASSETS],
    description="Training images (CritiqueCanvas train, AesEval train) that are, or duplicate, an image another"
    " dataset holds out for testing (photocritique, ContextCanvas, poem benchmark, AesEval benchmark, CritiqueCanvas"
    " eval): one exclusion each, with the held-out image and the evidence (same image, exact, perceptual, CLIP).",
)
def release_leakage_guard(context: AssetExecutionContext, warehouse: WarehouseResource) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    with recorded_step(context, wh, {"reasons": list(REASONS), "unit": "duplicate cluster or sha256"}) as step:
        with step.batch() as log:
            overlaps = [_overlap(row) for row in log.con.execute(OVERLAP_QUERY).fetchall()]
            clusters = pd.DataFrame({"cluster_id": sorted({o.cluster_id for o in overlaps if o.cluster_id})}, dtype="string")
            with registered(log.con, "_overlap_clusters", clusters) as name:
                next_hop = {}
                for image, following, method in log.con.execute(NEXT_HOP_QUERY.format(clusters=name)).fetchall():
                    next_hop.setdefault(image, (following, method))
            sizes = log.con.execute("SELECT role, dataset, split, count(DISTINCT image_sha256) FROM release_split_images"
                                    " GROUP BY ALL ORDER BY ALL").fetchall()
            last = step.last_inputs(log.con)
        for role, dataset, split, n in sizes:
            step.counts[f"{role}:{dataset}/{split}"] = n
        inputs = digest_of([[asdict(o) for o in overlaps], sorted(next_hop.items())])
        if last == inputs:
            step.notes["unchanged"] = "same overlaps between training and held-out images as the last decision"
            return step.result()
        found = exclusions(overlaps, next_hop)
        with step.batch() as log:
            rows = [_row(x, log.activity_id) for x in found]
            replace_exclusions(log.con, rows)
            log.used((x.training_entity for x in found if x.training_entity), "training_image")
            log.used((x.held_entity for x in found if x.held_entity), "held_out_image")
            log.entities(Entity(r["entity_id"], "release_exclusion", r["image_sha256"],
                                {"dataset": r["dataset"], "split": r["split"], "reason": r["reason"],
                                 "held_dataset": r["held_dataset"], "held_item_id": r["held_item_id"]}) for r in rows)
            log.generated(r["entity_id"] for r in rows)
            log.derived([*((r["entity_id"], x.training_entity, "excludes") for r, x in zip(rows, found) if x.training_entity),
                         *((r["entity_id"], x.held_entity, "collides_with") for r, x in zip(rows, found) if x.held_entity)])
            step.remember_inputs(log, inputs)
        for x in found:
            step.counts[f"excluded:{x.dataset}/{x.split}:{x.reason}"] += 1
        step.counts["overlaps"] = len(overlaps)
        step.counts["exclusions"] = len(found)
    return step.result()


def _overlap(row: tuple) -> Overlap:
    n = len(_SIDE)
    training = SplitImage(row[0], row[1], *row[2:2 + n])
    held_out = SplitImage(row[2 + n], row[3 + n], *row[4 + n:4 + 2 * n])
    same_file, cluster_id, direct = row[4 + 2 * n:]
    return Overlap(training, held_out, bool(same_file), cluster_id, tuple(direct))


def _row(x: Exclusion, activity_id: str) -> dict:
    return {"dataset": x.dataset, "split": x.split, "image_sha256": x.image_sha256, "held_dataset": x.held_dataset,
            "held_split": x.held_split, "held_item_id": x.held_item_id, "held_image_sha256": x.held_image_sha256,
            "reason": x.reason, "detail": x.detail, "n_held_out": x.n_held_out,
            "entity_id": entity_id("release_exclusion", digest_of([x.dataset, x.split, x.image_sha256])),
            "activity_id": activity_id}
