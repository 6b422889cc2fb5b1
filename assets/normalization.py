"""Normalization: decode each fetched file once into an upright RGB image, measure it, sign it.

The perceptual signature is computed here, while the decoded pixels are in memory, so the
de-duplication stage never has to decode an image again.
"""

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.collection import fetched_files
from assets.lib.images import DecodedImage, DecodeFailure, decode_normalized, encode_normalized
from assets.lib.iteration import batched
from assets.lib.perceptual import PerceptualSignature, compute_signature
from assets.settings import PoolSettings
from assets.signatures import signature_row
from assets.step import recorded_step
from resources.blob_store import BlobRef, BlobStore, BlobStoreResource
from resources.warehouse import WarehouseResource
from warehouse.db import insert_rows
from warehouse.ids import entity_id
from warehouse.lineage import ActivityLog, Entity

DECODE_STAGE = "decode"


@dataclass(frozen=True)
class Normalized:
    file_sha256: str
    decoded: DecodedImage | None
    failure: DecodeFailure | None
    normalized: BlobRef | None
    signature: PerceptualSignature | None


def _normalize(store: BlobStore, file_sha256: str, max_pixels: int) -> Normalized:
    try:
        decoded = decode_normalized(store.get_bytes(file_sha256), max_pixels)
    except DecodeFailure as failure:
        return Normalized(file_sha256, None, failure, None, None)
    normalized = store.put_bytes(encode_normalized(decoded.image))
    return Normalized(file_sha256, decoded, None, normalized, compute_signature(decoded.image))


@asset(
    group_name="image_pool",
    code_version="1",
    deps=[fetched_files],
    description="Upright RGB images decoded from fetched files (originals kept), with size, spread and perceptual signature.",
)
def normalized_images(
    context: AssetExecutionContext,
    warehouse: WarehouseResource,
    blob_store: BlobStoreResource,
    pool: PoolSettings,
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    max_pixels = pool.filters.max_pixels
    with recorded_step(context, wh, {"max_pixels": max_pixels, "normalized_format": "png"}) as step:
        pending = wh.query(
            "SELECT b.sha256 FROM file_blob b"
            " WHERE NOT EXISTS (SELECT 1 FROM file_decode d WHERE d.file_sha256 = b.sha256) ORDER BY b.sha256"
        )["sha256"].tolist()
        step.counts["files_pending"] = len(pending)
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool_executor:
            for chunk in batched(pending, pool.batch_size):
                results = list(pool_executor.map(lambda sha: _normalize(store, sha, max_pixels), chunk))
                with step.batch() as log:
                    _write_normalized(log, results)
                for result in results:
                    step.counts["decoded" if result.decoded else f"rejected:{result.failure.reason_code}"] += 1
        context.log.info(f"normalization summary: {dict(step.counts)}")
    return MaterializeResult(metadata=step.summary())


def _write_normalized(log: ActivityLog, results: list[Normalized]) -> None:
    decodes, images, signatures, failures, derived = [], {}, {}, [], []
    for r in results:
        file_entity = entity_id("file", r.file_sha256)
        image_id = entity_id("image", r.decoded.pixel_sha256) if r.decoded else None
        decodes.append(
            {
                "file_sha256": r.file_sha256,
                "image_id": image_id,
                "source_format": r.decoded.source_format if r.decoded else None,
                "source_mode": r.decoded.source_mode if r.decoded else None,
                "exif_orientation": r.decoded.exif_orientation if r.decoded else None,
                "activity_id": log.activity_id,
            }
        )
        if r.failure:
            failures.append((file_entity, r.failure.reason_code, r.failure.detail))
            continue
        images[image_id] = {
            "image_id": image_id,
            "pixel_sha256": r.decoded.pixel_sha256,
            "width": r.decoded.width,
            "height": r.decoded.height,
            "normalized_sha256": r.normalized.sha256,
            "normalized_uri": r.normalized.uri,
            "pixel_std": r.decoded.pixel_std,
            "activity_id": log.activity_id,
        }
        signatures[image_id] = signature_row(image_id, r.signature, log.activity_id)
        derived.append((image_id, file_entity, "decoded_from"))
    log.used((entity_id("file", r.file_sha256) for r in results), "file")
    log.entities(
        Entity(i, "image", row["normalized_sha256"], {"width": row["width"], "height": row["height"]})
        for i, row in images.items()
    )
    log.generated(images)
    log.derived(derived)
    insert_rows(log.con, "image", list(images.values()))
    insert_rows(log.con, "image_signature", list(signatures.values()))
    insert_rows(log.con, "file_decode", decodes)
    log.rejected(DECODE_STAGE, failures)
