"""Normalization: decode each fetched file once into an upright RGB image, measure it, sign it.

The decode and measures (:func:`assets.image_pool.logic.images.measure_file`) run in worker processes
(``assets.core.worker_processes``) once a run has enough files to pay for starting them; the item loop's threads
read the blobs and wait. Only the measures come back, never pixels.

No decoded copy is stored: the original bytes stay in the blob store (``file_blob``), the normalisation parameters
in ``file_decode``, and every later stage that needs pixels gets them from the original with
``assets.core.logic.normalized_pixels``. The perceptual signature is computed here, while the decoded pixels are in
memory, so the de-duplication stage never has to decode an image again. Every file runs through the item loop:
a file is decoded (kept) or rejected with the decoder's reason, and one that makes the code fail
is ``internal_error`` without costing the other files their decode.
"""

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.image_pool.collection import fetched_files
from assets.core.item_loop import Done, Item, Kept, Rejected, StepError, run_items
from assets.core.worker_processes import CpuPool
from assets.image_pool.logic.images import MeasuredFile, measure_file
from assets.image_pool.settings import PoolSettings
from assets.image_pool.shards import PER_SHARD, covered_items, covered_shards
from assets.image_pool.store import write_file_decodes, write_images, write_signatures
from assets.core.materialization import writes
from assets.core.step import recorded_step
from resources.blob_store import BlobNotFound, BlobStore, BlobStoreResource
from resources.image_formats import DecodeFailure
from resources.warehouse import WarehouseResource
from warehouse.ids import entity_id
from warehouse.lineage import ActivityLog, Entity

DECODE_STAGE = "decode"
BLOB_MISSING = "blob_missing"
WORKER_PROCESSES_FROM = 100  # files pending in a run from which decoding in worker processes pays for their start-up
# An image row's original file, for the UI's thumbnails: the first file decoded to these pixels.
IMAGE_FILE = "(SELECT min(d.file_sha256) FROM file_decode d WHERE d.image_id = image.image_id)"


def read_blob(store: BlobStore, item: Item[str]) -> bytes | Rejected:
    """The blob ``item.payload`` names. One the store has lost is a retryable rejection (tried again on every run
    until the bytes are back); a store that cannot be read at all fails the step, as it is no one item's fault."""
    try:
        return store.get_bytes(item.payload)
    except BlobNotFound as exc:
        return Rejected(BLOB_MISSING, f"{item.locator}: {exc}", retryable=True)
    except Exception as exc:  # noqa: BLE001 - S3 unreachable, permissions: whole-step causes
        raise StepError(f"the blob store cannot be read ({type(exc).__name__}: {exc})") from exc


def normalize_file(store: BlobStore, item: Item[str], max_pixels: int, cpu: CpuPool | None = None) -> Kept | Rejected:
    """Decode one fetched file (``item.payload`` is its sha256) and measure it, in a worker process given ``cpu``."""
    data = read_blob(store, item)
    if isinstance(data, Rejected):
        return data
    measured = cpu.call(measure_file, data, max_pixels) if cpu else measure_file(data, max_pixels)
    if isinstance(measured, DecodeFailure):
        return Rejected(measured.reason_code, measured.detail, value=measured)
    return Kept(measured, count="decoded")


@asset(
    metadata=writes("image", "file_decode", "image_signature", images=IMAGE_FILE),
    code_version="4",
    deps=[fetched_files],
    description="Upright RGB images decoded from fetched files (originals kept, no decoded copy), with size, spread, frames and perceptual signature.",
    **PER_SHARD,
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
    with recorded_step(context, wh, {"max_pixels": max_pixels}) as step:
        pending = wh.query(
            "SELECT b.sha256, min(r.locator) AS locator, min(f.record_id) AS first_record FROM file_blob b"
            " LEFT JOIN record_file f ON f.file_sha256 = b.sha256 LEFT JOIN source_record r USING (record_id)"
            " WHERE NOT EXISTS (SELECT 1 FROM file_decode d WHERE d.file_sha256 = b.sha256)"
            " GROUP BY b.sha256 ORDER BY b.sha256"
        )
        shards = covered_shards(context, step)
        owners = (record if isinstance(record, str) else entity_id("file", sha)  # a file is in the shard of the
                  for sha, record in zip(pending["sha256"], pending["first_record"]))  # smallest record id naming it
        pending = pending.loc[covered_items(step, shards, owners)]
        step.counts["files_pending"] = len(pending)
        items = (
            Item(entity_id("file", sha), locator or store.uri(sha), sha, sha)
            for sha, locator, _ in pending.itertuples(index=False)
        )
        cores = pool.worker_process_count()
        with CpuPool(cores) as cpu:
            use = cpu if len(pending) >= WORKER_PROCESSES_FROM else None
            if use:
                step.notes["decode_processes"] = cores
            # with worker processes, twice as many threads: one reads the next blob while another's file decodes
            run_items(step, DECODE_STAGE, items, lambda item: normalize_file(store, item, max_pixels, use),
                      _write_normalized, batch_size=pool.batch_size, workers=2 * cores if use else cores,
                      total=len(pending))
        context.log.info(f"normalization summary: {dict(step.counts)}")
    return step.result(store)


def _write_normalized(log: ActivityLog, done: list[Done[str]]) -> None:
    """file_decode rows for every decided file (a missing blob is left pending), images and signatures for the
    decoded ones; the loop adds the rejection rows."""
    decodes, images, signatures, derived = [], {}, {}, []
    for d in done:
        outcome = d.outcome
        if isinstance(outcome, Rejected):
            if outcome.value is not None:
                decodes.append(_decode_row(d.item.payload, None, outcome.value.source_format, log.activity_id))
            continue
        r: MeasuredFile = outcome.value
        image_id = entity_id("image", r.pixel_sha256)
        decodes.append(_decode_row(d.item.payload, image_id, r.source_format, log.activity_id, r) | r.quality.to_record()
                       | r.clarity.to_record())
        images[image_id] = {
            "image_id": image_id,
            "pixel_sha256": r.pixel_sha256,
            "width": r.width,
            "height": r.height,
            "pixel_std": r.pixel_std,
            "activity_id": log.activity_id,
        }
        if r.signature is not None:
            signatures[image_id] = r.signature
        derived.append((image_id, d.item.key, "decoded_from"))
    log.used((d.item.key for d in done), "file")
    log.entities(
        Entity(i, "image", row["pixel_sha256"], {"width": row["width"], "height": row["height"]})
        for i, row in images.items()
    )
    log.generated(images)
    log.derived(derived)
    write_images(log.con, list(images.values()))
    write_signatures(log, signatures)
    write_file_decodes(log.con, decodes)
    log.unrejected(DECODE_STAGE, [d.item.key for d in done if d.kept])  # a blob that was missing and is back


def _decode_row(file_sha256: str, image_id: str | None, source_format: str | None, activity_id: str,
                decoded: MeasuredFile | None = None) -> dict:
    return {
        "file_sha256": file_sha256,
        "image_id": image_id,
        "source_format": source_format,
        "source_mode": decoded.source_mode if decoded else None,
        "exif_orientation": decoded.exif_orientation if decoded else None,
        "frame_count": decoded.frame_count if decoded else None,
        "frame_used": decoded.frame_used if decoded else None,
        "activity_id": activity_id,
    }
