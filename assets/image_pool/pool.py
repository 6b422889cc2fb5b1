"""The shared image pool: cluster every eligible record by duplicate evidence and keep the best copy of each cluster.

The linkage and representative rules are in assets/image_pool/logic/clusters.py (and the README)."""

from collections import Counter

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.image_pool.clip_dedup import clip_duplicates
from assets.image_pool.filtering import pool_candidates
from assets.image_pool.logic.clusters import CONFIRMED, CRITERIA, DuplicateEdge, PoolCandidate, assign_clusters
from assets.image_pool.logic.perceptual import PerceptualParams, confirm_pair
from assets.image_pool.model_filter import model_filter_verdicts
from assets.image_pool.perceptual_dedup import perceptual_duplicates
from assets.image_pool.settings import PoolSettings
from assets.image_pool.store import load_signatures, replace_duplicate_links, replace_pool_members
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.blob_store import BlobStoreResource
from resources.warehouse import WarehouseResource
from warehouse.db import Warehouse
from warehouse.ids import digest_of, entity_id
from warehouse.lineage import Entity

DEDUP_STAGE = "dedup"
DUPLICATE = "duplicate"


def confirm_with_signatures(wh: Warehouse, params: PerceptualParams):
    """The clustering's ``confirm``: verify a representative against an image it reaches only through a third one."""

    def confirm(representative: str, image: str) -> DuplicateEdge | None:
        signatures = load_signatures(wh, [representative, image])
        if len(signatures) < 2:
            return None  # one of them has no signature (CLIP evidence only): nothing to verify with
        match = confirm_pair(signatures[representative], signatures[image], params)
        if match is None:
            return None
        return DuplicateEdge(representative, image, CONFIRMED, match.distance, match.score, match.covered_a,
                             match.covered_b, match.edited)

    return confirm


@asset(
    metadata=writes("pool_images", "pool_member", "duplicate_link", images="file_sha256"),
    code_version="3",
    deps=[pool_candidates, perceptual_duplicates, clip_duplicates, model_filter_verdicts],
    description="One kept record per duplicate cluster (exact bytes, exact pixels, perceptual, CLIP) among the eligible"
                " records no model filter rejected; every drop records cluster, method and distance.",
)
def image_pool(context: AssetExecutionContext, warehouse: WarehouseResource, blob_store: BlobStoreResource,
               pool: PoolSettings) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    allowlist = pool.filters.license_allowlist
    params = PerceptualParams(**pool.dedup.perceptual)
    with recorded_step(context, wh, {"representative_rule": list(CRITERIA), "license_order": allowlist,
                                     "linkage": "star: every member verified against its representative"}) as step:
        with step.batch() as log:
            candidates = [
                PoolCandidate(*row)
                for row in log.con.execute(
                    "SELECT c.record_id, c.image_id, f.file_sha256, i.width, i.height, r.license, r.redistribution, r.domain,"
                    " d.lossless, d.jpeg_quality, d.fine_detail, d.luma_mean, d.luma_top, d.highlights_clipped"
                    " FROM pool_candidate c JOIN record_file f USING (record_id) JOIN image i USING (image_id)"
                    " JOIN source_record r USING (record_id) LEFT JOIN file_decode d ON d.file_sha256 = f.file_sha256"
                    " WHERE c.eligible AND NOT EXISTS (SELECT 1 FROM model_filter_verdict v"
                    "   WHERE v.record_id = c.record_id AND NOT v.passed) ORDER BY c.record_id"
                ).fetchall()
            ]
            edges = [
                DuplicateEdge(*row)
                for row in log.con.execute(
                    "SELECT image_a, image_b, method, distance, score, covered_a, covered_b, edited FROM duplicate_match"
                    " ORDER BY image_a, image_b, method"
                ).fetchall()
            ]
            last = step.last_inputs(log.con)
        inputs = digest_of([[c.__dict__ for c in candidates], [e.__dict__ for e in edges], allowlist, params.__dict__])
        if last == inputs:
            step.notes["unchanged"] = "same candidates, duplicate evidence and license order as the last decision"
            return step.result(blob_store.get_store())
        clustering = assign_clusters(candidates, edges, allowlist, confirm_with_signatures(wh, params))
        assignments = clustering.assignments
        kept = [a for a in assignments if a.is_representative]
        dropped = [a for a in assignments if not a.is_representative]
        reasons = {a.cluster_id: a.representative_reason for a in kept}
        item_ids = {a.record_id: entity_id("pool_item", digest_of([a.record_id, a.image_id])) for a in kept}
        with step.batch() as log:
            replace_pool_members(
                log.con,
                [
                    {**a.__dict__, "pool_item_id": item_ids.get(a.record_id), "activity_id": log.activity_id}
                    for a in assignments
                ],
            )
            replace_duplicate_links(log.con, [{**link.__dict__, "activity_id": log.activity_id} for link in clustering.links])
            log.entities(
                Entity(item_ids[a.record_id], "pool_item", attributes={"domain": a.domain, "cluster_id": a.cluster_id})
                for a in kept
            )
            log.generated(item_ids.values())
            log.derived((item_ids[a.record_id], a.record_id, "selected_record") for a in kept)
            log.derived((item_ids[a.record_id], a.image_id, "depicts") for a in kept)
            log.used((a.record_id for a in assignments), "candidate")
            log.rejected(
                DEDUP_STAGE,
                [
                    (
                        a.record_id,
                        DUPLICATE,
                        f"{a.cluster_id} (size {a.cluster_size}): kept {a.representative_record_id} ({reasons[a.cluster_id]}); "
                        f"matched {a.matched_image_id} by {a.match_method} at distance {a.match_distance:g}",
                    )
                    for a in dropped
                ],
            )
            log.unrejected(DEDUP_STAGE, [a.record_id for a in kept])
            log.unrejected_all(DEDUP_STAGE, except_in="SELECT record_id FROM pool_member")
            step.remember_inputs(log, inputs)
        by_domain: dict[str, int] = {}
        for a in kept:
            by_domain[a.domain] = by_domain.get(a.domain, 0) + 1
        step.counts.update({"kept": len(kept), "dropped_duplicates": len(dropped),
                            "links_refused": sum(link.decision == "refused" for link in clustering.links),
                            "links_confirmed": sum(link.method == CONFIRMED for link in clustering.links)})
        step.notes["representative_won_by"] = dict(sorted(Counter(a.representative_reason for a in kept
                                                                   if a.representative_reason).items()))
        step.notes["kept_by_domain"] = dict(sorted(by_domain.items()))
    return step.result(blob_store.get_store())
