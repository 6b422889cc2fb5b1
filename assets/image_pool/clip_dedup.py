"""CLIP near-duplicates: embed each eligible image once per model and link pairs above a cosine threshold.

Runs on the GPU when torch sees one. With no CLIP weights configured the pass reports that it did
not run and why, and the rest of the pool is built from exact and perceptual evidence alone.
"""

from collections.abc import Iterable, Iterator
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.core.logic.normalized_pixels import normalized_pixels
from assets.image_pool.filtering import pool_candidates
from assets.core.item_loop import Done, Item, Kept, Rejected, run_items
from assets.image_pool.logic.near_duplicates import similar_pairs
from assets.image_pool.normalization import read_blob
from assets.image_pool.settings import PoolSettings
from assets.image_pool.store import Evidence, record_scan, write_clip_embeddings
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.clip_embedder import ClipEmbedderResource
from resources.warehouse import WarehouseResource
from warehouse.db import Warehouse
from warehouse.lineage import ActivityLog, Agent

if TYPE_CHECKING:
    from resources.clip_embedding import ClipEmbedder

CLIP_METHOD = "clip"
SEARCH_BLOCK = 8192  # rows per similarity block: an 8192 x 8192 float32 score block is 256 MiB at most
# Shorter side the model input is resized from: a JPEG is decoded at the smallest DCT scale that keeps this much (at
# least 1.3x the 336 px of the largest CLIP inputs), several times faster than decoding every pixel.
CLIP_DECODE_SIDE = 448


def _stream_embeddings(wh: Warehouse, where: str, params: list) -> Iterator[tuple[list[str], np.ndarray]]:
    """Embeddings matching ``where`` (over clip_embedding e), block by block."""
    select = f"SELECT e.image_id, e.embedding FROM clip_embedding e WHERE ({where})"
    for page in wh.pages(select, params, key="e.image_id", block=SEARCH_BLOCK, numpy=True):
        yield list(page["image_id"]), np.stack(page["embedding"]).astype(np.float32)


def embedded_items(store: BlobStore, embedder: "ClipEmbedder", items: Iterable[Item[str]]) -> Iterator[Item]:
    """The items (``payload``: the original file's sha256) with their payload replaced by what embedding them gave:
    the embedding, the decode failure (``PixelsFailed``), or the rejection of a blob the store has lost.

    Reading runs here, decoding and resizing in the embedder's worker processes, the model a batch at a time
    (``ClipEmbedder.embed_stream``), so the device waits for neither.
    """
    lost: list[Item] = []

    def work() -> Iterator[tuple[Item[str], partial]]:
        for item in items:
            data = read_blob(store, item)
            if isinstance(data, Rejected):
                lost.append(replace(item, payload=data))
            else:
                yield item, partial(normalized_pixels, data, None, CLIP_DECODE_SIDE)

    for item, result in embedder.embed_stream(work()):
        yield from lost
        lost.clear()
        yield replace(item, payload=result)
    yield from lost


def embedding_outcome(item: Item) -> Kept | Rejected:
    """The item loop's outcome of an embedded item; an image that could not be decoded is its own fault (raised:
    ``internal_error``, quarantined), as any failure while preparing one image is."""
    if isinstance(item.payload, Rejected):
        return item.payload
    if isinstance(item.payload, Exception):
        raise item.payload
    return Kept(item.payload, count="embedded")


@asset(
    metadata=writes("duplicate_match", "match_scan", where="method LIKE 'clip%'"),
    code_version="2",
    deps=[pool_candidates],
    kinds={"pytorch"},
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
        reason = clip.unavailable()  # known from the settings: torch is not even imported
        if reason is None:
            from resources.clip_embedding import ClipUnavailable  # torch is imported only by this step

            try:
                embedder = clip.get_embedder()
            except ClipUnavailable as exc:
                reason = str(exc)
        if reason is not None:
            step.notes.update({"clip_pass": "not run", "reason": reason})
            context.log.warning(f"CLIP near-duplicate pass did not run: {reason}")
            return step.result()
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
        # Phase 1: embed every eligible image that has no embedding for this model yet: read here, decoded in worker
        # processes (a failing one is that image's outcome), through the model a batch at a time.
        to_embed = wh.query(
            "SELECT DISTINCT c.image_id, f.file_sha256 FROM pool_candidate c JOIN image_file f USING (image_id)"
            " WHERE c.eligible AND NOT EXISTS (SELECT 1 FROM clip_embedding e"
            "   WHERE e.image_id = c.image_id AND e.model_key = ?) ORDER BY c.image_id",
            [embedder.model_key],
        )
        step.counts["images_to_embed"] = len(to_embed)
        items = (Item(row.image_id, store.uri(row.file_sha256), row.file_sha256, row.file_sha256)
                 for row in to_embed.itertuples(index=False))

        def write(log: ActivityLog, done: list[Done[str]]) -> None:
            kept = [d for d in done if d.kept]
            log.used((d.item.key for d in kept), "image")
            write_clip_embeddings(log.con, [
                {"image_id": d.item.key, "model_key": embedder.model_key, "embedding": d.outcome.value,
                 "activity_id": log.activity_id}
                for d in kept
            ])
            log.unrejected(scan, [d.item.key for d in kept])

        run_items(step, scan, embedded_items(store, embedder, items), embedding_outcome, write,
                  batch_size=embedder.batch_size, total=len(to_embed))
        # Phase 2: compare embedded-but-unscanned images, a large block at a time, with everything scanned
        # before (streamed), so stored embeddings are read once per block rather than once per batch.
        this_model = "e.model_key = ? AND e.image_id IN (SELECT image_id FROM pool_candidate WHERE eligible)"
        scanned = "EXISTS (SELECT 1 FROM match_scan s WHERE s.image_id = e.image_id AND s.method = ?)"
        for ids, block in _stream_embeddings(wh, f"{this_model} AND NOT {scanned}", [embedder.model_key, scan]):
            earlier = _stream_embeddings(wh, f"{this_model} AND {scanned}", [embedder.model_key, scan])
            pairs = list(similar_pairs(ids, block, earlier, threshold=threshold, block_size=SEARCH_BLOCK,
                                       device=embedder.device))
            with step.batch() as log:
                step.counts["pairs"] += record_scan(
                    log,
                    scan,
                    ids,
                    (Evidence(p.a, p.b, scan, 1.0 - p.similarity, p.similarity, embedder.model_key) for p in pairs),
                )
            step.counts["images_scanned"] += len(ids)
    return step.result()
