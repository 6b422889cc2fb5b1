"""CLIP near-duplicates: embed each eligible image once per model and link pairs above a cosine threshold.

Runs on the GPU when torch sees one. With no CLIP weights configured the pass reports that it did
not run and why, and the rest of the pool is built from exact and perceptual evidence alone.
"""

import io
from collections.abc import Iterator

import numpy as np
from dagster import AssetExecutionContext, MaterializeResult, asset
from PIL import Image

from assets.duplicate_evidence import Evidence, record_scan
from assets.filtering import pool_candidates
from assets.lib.iteration import batched
from assets.lib.near_duplicates import similar_pairs
from assets.settings import PoolSettings
from assets.step import recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.clip_embedder import ClipEmbedderResource
from resources.warehouse import WarehouseResource
from warehouse.db import Warehouse, insert_rows
from warehouse.lineage import Agent

CLIP_METHOD = "clip"
SEARCH_BLOCK = 8192  # rows per similarity block: an 8192 x 8192 float32 score block is 256 MiB at most


def _stream_embeddings(wh: Warehouse, where: str, params: list) -> Iterator[tuple[list[str], np.ndarray]]:
    """Embeddings matching ``where`` (over clip_embedding e), block by block."""
    select = f"SELECT e.image_id, e.embedding FROM clip_embedding e WHERE ({where})"
    for page in wh.pages(select, params, key="e.image_id", block=SEARCH_BLOCK, numpy=True):
        yield list(page["image_id"]), np.stack(page["embedding"]).astype(np.float32)


def _load_images(store: BlobStore, normalized_shas: list[str]) -> Iterator[Image.Image]:
    for sha in normalized_shas:
        with Image.open(io.BytesIO(store.get_bytes(sha))) as image:
            yield image.convert("RGB")


@asset(
    group_name="image_pool",
    code_version="1",
    deps=[pool_candidates],
    description="CLIP embeddings of eligible images and the image pairs whose cosine similarity reaches the threshold.",
)
def clip_duplicates(
    context: AssetExecutionContext,
    warehouse: WarehouseResource,
    blob_store: BlobStoreResource,
    clip: ClipEmbedderResource,
    pool: PoolSettings,
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    threshold = pool.dedup.clip_threshold
    with recorded_step(context, wh, {"clip": clip.model_dump(), "threshold": threshold}) as step:
        from assets.lib.clip_embedding import ClipUnavailable  # torch is imported only by this step

        try:
            embedder = clip.get_embedder()
        except ClipUnavailable as exc:
            step.notes.update({"clip_pass": "not run", "reason": str(exc)})
            context.log.warning(f"CLIP near-duplicate pass did not run: {exc}")
            return MaterializeResult(metadata=step.summary())
        scan = f"{CLIP_METHOD}:{embedder.model_key}"
        model = Agent(
            agent_id=f"model:open_clip/{embedder.model_key}",
            kind="model",
            name=f"open_clip {clip.model_name}",
            version=embedder.model_key,
            attributes={"device": embedder.device, "dim": embedder.dim},
        )
        with step.batch() as log:
            log.associate(model, "embedding model")
        step.notes.update({"clip_pass": "ran", "model_key": embedder.model_key, "device": embedder.device})
        store = blob_store.get_store()
        # Phase 1: embed every eligible image that has no embedding for this model yet (resumable per batch).
        to_embed = wh.query(
            "SELECT DISTINCT c.image_id, i.normalized_sha256 FROM pool_candidate c JOIN image i USING (image_id)"
            " WHERE c.eligible AND NOT EXISTS (SELECT 1 FROM clip_embedding e"
            "   WHERE e.image_id = c.image_id AND e.model_key = ?) ORDER BY c.image_id",
            [embedder.model_key],
        )
        step.counts["images_to_embed"] = len(to_embed)
        for chunk in batched(to_embed.itertuples(index=False), pool.batch_size):
            ids = [row.image_id for row in chunk]
            embeddings = embedder.embed_images(_load_images(store, [row.normalized_sha256 for row in chunk]))
            with step.batch() as log:
                log.used(ids, "image")
                insert_rows(
                    log.con,
                    "clip_embedding",
                    [
                        {"image_id": i, "model_key": embedder.model_key, "embedding": e, "activity_id": log.activity_id}
                        for i, e in zip(ids, embeddings)
                    ],
                )
            step.counts["embedded"] += len(ids)
        # Phase 2: compare embedded-but-unscanned images, a large block at a time, with everything scanned
        # before (streamed), so stored embeddings are read once per block rather than once per batch.
        this_model = "e.model_key = ? AND e.image_id IN (SELECT image_id FROM pool_candidate WHERE eligible)"
        scanned = "EXISTS (SELECT 1 FROM match_scan s WHERE s.image_id = e.image_id AND s.method = ?)"
        for ids, block in _stream_embeddings(wh, f"{this_model} AND NOT {scanned}", [embedder.model_key, scan]):
            earlier = _stream_embeddings(wh, f"{this_model} AND {scanned}", [embedder.model_key, scan])
            pairs = list(similar_pairs(ids, block, earlier, threshold=threshold, block_size=SEARCH_BLOCK))
            with step.batch() as log:
                step.counts["pairs"] += record_scan(
                    log,
                    scan,
                    ids,
                    (Evidence(p.a, p.b, scan, 1.0 - p.similarity, p.similarity, embedder.model_key) for p in pairs),
                )
            step.counts["images_scanned"] += len(ids)
    return MaterializeResult(metadata=step.summary())
