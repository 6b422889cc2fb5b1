"""CLIP near-duplicates: embed each eligible image once per model and link pairs above a cosine threshold.

Runs on the GPU when torch sees one. With no CLIP weights configured the pass reports that it did
not run and why, and the rest of the pool is built from exact and perceptual evidence alone.
"""


import io
from collections.abc import Iterator

import numpy as np
from dagster import AssetExecutionContext, MaterializeResult, asset
from PIL import Image

from assets.collection import batched
from assets.duplicate_evidence import Evidence, record_scan
from assets.filtering import pool_candidates
from assets.lib.near_duplicates import similar_pairs
from assets.settings import PoolSettings
from assets.step import recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.clip_embedder import ClipEmbedderResource
from resources.warehouse import WarehouseResource
from warehouse.db import Warehouse, insert_rows
from warehouse.lineage import Agent

CLIP_METHOD = "clip"


def _stream_embeddings(wh: Warehouse, model_key: str, block: int) -> Iterator[tuple[list[str], np.ndarray]]:
    """Stored embeddings in keyset-paginated blocks: bounded memory however large the pool."""
    last = ""
    while True:
        with wh.transaction() as con:
            rows = con.execute(
                "SELECT image_id, embedding FROM clip_embedding WHERE model_key = ? AND image_id > ?"
                " ORDER BY image_id LIMIT ?",
                [model_key, last, block],
            ).fetchnumpy()
        if len(rows["image_id"]) == 0:
            return
        yield list(rows["image_id"]), np.stack(rows["embedding"]).astype(np.float32)
        last = rows["image_id"][-1]


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
        pending = wh.query(
            "SELECT DISTINCT c.image_id, i.normalized_sha256 FROM pool_candidate c JOIN image i USING (image_id)"
            " WHERE c.eligible AND NOT EXISTS (SELECT 1 FROM match_scan s WHERE s.image_id = c.image_id AND s.method = ?)"
            " ORDER BY c.image_id",
            [scan],
        )
        step.notes.update({"clip_pass": "ran", "model_key": embedder.model_key, "device": embedder.device})
        step.counts["images_pending"] = len(pending)
        store = blob_store.get_store()
        for chunk in batched(pending.itertuples(index=False), pool.batch_size):
            ids = [row.image_id for row in chunk]
            embeddings = embedder.embed_images(_load_images(store, [row.normalized_sha256 for row in chunk]))
            pairs = list(
                similar_pairs(ids, embeddings, _stream_embeddings(wh, embedder.model_key, 8192), threshold=threshold)
            )
            with step.batch() as log:
                insert_rows(
                    log.con,
                    "clip_embedding",
                    [
                        {"image_id": i, "model_key": embedder.model_key, "embedding": e, "activity_id": log.activity_id}
                        for i, e in zip(ids, embeddings)
                    ],
                )
                record_scan(
                    log,
                    scan,
                    ids,
                    (Evidence(p.a, p.b, scan, 1.0 - p.similarity, p.similarity, embedder.model_key) for p in pairs),
                )
            step.counts["embedded"] += len(ids)
            step.counts["pairs"] += len(pairs)
    return MaterializeResult(metadata=step.summary())
