"""Perceptual near-duplicates: a multi-index Hamming search over several hashes, each hit verified.

Only images not yet scanned are compared, against everything scanned before (whose hashes are
indexed in memory; their thumbnails are read only when a candidate needs verifying). Each new
image is one item of the item loop; a batch of them is matched with one index lookup and then
indexed, so an image whose stored signature cannot be read or matched is ``internal_error`` (the
loop matches a failing batch item by item) and the others are still scanned.

The lookup (the index is this process's state) and the verification of the pairs it finds (a pure function of two
signatures) are apart: a batch's pairs are verified in worker processes on every core (:func:`verify_in_workers`).

Signatures made by an older signature version are first made again from the image's original file
(stage ``resign``), so old and new images are compared by the same hashes.
"""

from dataclasses import asdict

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.core.logic.normalized_pixels import normalized_pixels
from assets.image_pool.filtering import pool_candidates
from assets.core.item_loop import Done, Item, Kept, Rejected, run_items
from assets.image_pool.logic.perceptual import (
    SIGNATURE_VERSION,
    Candidate,
    PerceptualMatch,
    PerceptualMatcher,
    PerceptualParams,
    PerceptualSignature,
    compute_signature,
    verify_candidates,
)
from assets.image_pool.normalization import read_blob
from assets.image_pool.settings import PoolSettings
from assets.image_pool.store import (
    Evidence,
    load_signatures,
    record_scan,
    stream_hashes,
    stream_signature_records,
    write_signatures,
)
from assets.core.materialization import writes
from assets.core.worker_processes import CpuPool
from assets.core.step import recorded_step
from resources.blob_store import BlobStore, BlobStoreResource
from resources.warehouse import WarehouseResource
from warehouse.lineage import ActivityLog

PERCEPTUAL_SCAN = "perceptual"
RESIGN_STAGE = "resign"
VERIFY_PROCESSES_FROM = 64  # a batch's candidate pairs from which verifying them in worker processes pays
VERIFY_CHUNKS_PER_WORKER = 4

_ELIGIBLE = "s.image_id IN (SELECT image_id FROM pool_candidate WHERE eligible)"
_SCANNED = f"EXISTS (SELECT 1 FROM match_scan m WHERE m.image_id = s.image_id AND m.method = '{PERCEPTUAL_SCAN}')"


def resign_image(store: BlobStore, item: Item[str]) -> Kept | Rejected:
    """The current version's signature of one image, from its original file (``item.payload`` is its sha256)."""
    data = read_blob(store, item)
    if isinstance(data, Rejected):
        return data
    return Kept(compute_signature(normalized_pixels(data)), count="signatures_remade")


def read_signature(item: Item[dict]) -> Kept:
    """One new image's stored signature row, read (a damaged row is this item's internal_error)."""
    return Kept(PerceptualSignature.from_record(item.payload), count="images_scanned")


def match_images(matcher: PerceptualMatcher, done: list[Done[dict]]) -> list[Kept]:
    """Match a batch of new images, each against everything indexed and the batch's earlier images, then index
    them; one index lookup serves the batch (the item loop matches the items one by one if the batch fails)."""
    found = matcher.match_batch([(d.item.key, d.outcome.value) for d in done])
    return [Kept(matches, count="images_scanned") for matches in found]


@asset(
    metadata=writes("duplicate_match", "match_scan", where="method LIKE 'perceptual%'"),
    code_version="4",
    deps=[pool_candidates],
    description="Near-duplicate pairs among eligible images by perceptual hashes (flip-, crop- and rotation-aware), each verified.",
)
def perceptual_duplicates(
    context: AssetExecutionContext, warehouse: WarehouseResource, blob_store: BlobStoreResource, pool: PoolSettings
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    params = PerceptualParams(**pool.dedup.perceptual)
    with recorded_step(context, wh, {"perceptual": asdict(params), "signature_version": SIGNATURE_VERSION}) as step:
        store = blob_store.get_store()
        outdated = wh.query(
            "SELECT s.image_id, f.file_sha256 FROM image_signature s JOIN image_file f USING (image_id)"
            f" WHERE s.signature_version IS DISTINCT FROM ? AND {_ELIGIBLE} ORDER BY s.image_id", [SIGNATURE_VERSION])
        if len(outdated):
            step.counts["signatures_outdated"] = len(outdated)

            def write_remade(log: ActivityLog, done: list[Done[str]]) -> None:
                write_signatures(log, {d.item.key: d.outcome.value for d in done if d.kept}, conflict="replace")

            run_items(step, RESIGN_STAGE, (Item(i, store.uri(sha), sha, sha) for i, sha in outdated.itertuples(index=False)),
                      lambda item: resign_image(store, item), write_remade, batch_size=pool.batch_size,
                      total=len(outdated))
        cores = pool.worker_process_count()
        with CpuPool(cores) as cpu:
            matcher = PerceptualMatcher(params, load_signatures=lambda ids: load_signatures(wh, ids),
                                        verify=lambda candidates, p: verify_in_workers(cpu, candidates, p))
            matcher.index_existing(stream_hashes(wh, f"{_ELIGIBLE} AND {_SCANNED}"))
            items = (Item(image_id, image_id, image_id, record)
                     for image_id, record in stream_signature_records(wh, f"{_ELIGIBLE} AND NOT {_SCANNED}"))

            def write(log: ActivityLog, done: list[Done[dict]]) -> None:
                matches = [m for d in done for m in d.outcome.value]
                step.counts["pairs"] += record_scan(log, PERCEPTUAL_SCAN, [d.item.key for d in done], (
                    Evidence(m.a, m.b, f"perceptual:{m.method}", m.distance, m.score, None, m.covered_a, m.covered_b,
                             m.edited)
                    for m in matches))

            run_items(step, PERCEPTUAL_SCAN, items, read_signature, write, batch_size=pool.batch_size,
                      finish=lambda done: match_images(matcher, done))
            if cpu.started:
                step.notes["verify_processes"] = cores
    return step.result()


def verify_in_workers(cpu: CpuPool, candidates: list[Candidate], params: PerceptualParams) -> list[PerceptualMatch | None]:
    """A batch's candidate pairs verified in worker processes, in contiguous chunks (a few per worker, so an
    expensive stretch of pairs does not keep one worker busy alone), results in the pairs' order; a batch with
    fewer than VERIFY_PROCESSES_FROM pairs is verified here (sending it would cost more than it saves)."""
    if len(candidates) < VERIFY_PROCESSES_FROM:
        return verify_candidates(candidates, params)
    size = -(-len(candidates) // (VERIFY_CHUNKS_PER_WORKER * cpu.workers))
    chunks = [(candidates[i : i + size], params) for i in range(0, len(candidates), size)]
    return [match for verdicts in cpu.map(verify_candidates, chunks) for match in verdicts]
