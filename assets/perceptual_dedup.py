"""Perceptual near-duplicates: a multi-index Hamming search over several hashes, each hit verified.

Only images not yet scanned are compared, against everything scanned before (whose hashes are
indexed in memory; their thumbnails are read only when a candidate needs verifying).
"""

from dataclasses import asdict

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.duplicate_evidence import Evidence, record_scan
from assets.filtering import pool_candidates
from assets.lib.iteration import batched
from assets.lib.perceptual import PerceptualMatcher, PerceptualParams
from assets.settings import PoolSettings
from assets.signatures import load_signatures, stream_hashes, stream_signatures
from assets.step import recorded_step
from resources.warehouse import WarehouseResource

PERCEPTUAL_SCAN = "perceptual"

_ELIGIBLE = "s.image_id IN (SELECT image_id FROM pool_candidate WHERE eligible)"
_SCANNED = f"EXISTS (SELECT 1 FROM match_scan m WHERE m.image_id = s.image_id AND m.method = '{PERCEPTUAL_SCAN}')"


@asset(
    group_name="image_pool",
    code_version="1",
    deps=[pool_candidates],
    description="Near-duplicate pairs among eligible images by perceptual hashes (flip-, crop- and rotation-aware), each verified.",
)
def perceptual_duplicates(
    context: AssetExecutionContext, warehouse: WarehouseResource, pool: PoolSettings
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    params = PerceptualParams(**pool.dedup.perceptual)
    with recorded_step(context, wh, {"perceptual": asdict(params)}) as step:
        matcher = PerceptualMatcher(params, load_signatures=lambda ids: load_signatures(wh, ids))
        matcher.index_existing(stream_hashes(wh, f"{_ELIGIBLE} AND {_SCANNED}"))
        new = stream_signatures(wh, f"{_ELIGIBLE} AND NOT {_SCANNED}")
        for chunk in batched(new, pool.batch_size):
            matches = list(matcher.match_new(chunk))
            ids = [image_id for image_id, _ in chunk]
            with step.batch() as log:
                record_scan(
                    log,
                    PERCEPTUAL_SCAN,
                    ids,
                    (Evidence(m.a, m.b, f"perceptual:{m.method}", m.distance, m.score) for m in matches),
                )
            step.counts["images_scanned"] += len(ids)
            step.counts["pairs"] += len(matches)
    return MaterializeResult(metadata=step.summary())
