"""Collection: provenance records from manifests and folders, then the bytes behind each record."""

from collections.abc import Collection, Iterator
from dataclasses import dataclass, replace
from functools import partial
from itertools import chain
from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, AssetKey, Failure, MaterializeResult, asset

from assets.core.item_loop import INTERNAL_ERROR, Done, Item, Kept, Outcome, Rejected, run_items
from resources.fetching import GAVE_UP, FailedRun, FetchResult, HttpFetcher, give_up_detail, interleave_by_host
from assets.core.logic.iteration import batched
from assets.image_pool.logic.sources import (
    UNREADABLE_FILE,
    FolderDefaults,
    FolderEntry,
    ManifestRow,
    SourceRow,
    folder_row,
    read_manifest,
    scan_folder,
    source_row,
)
from assets.image_pool.settings import PoolSettings
from assets.image_pool.shards import PER_SHARD, covered_items, covered_shards
from assets.image_pool.store import (
    REKEY_SCOPE,
    SOURCE_STAGE,
    clear_failed_runs,
    clear_runs_for_retry,
    location_renames,
    write_failed_runs,
    write_fetch_attempts,
    write_file_blobs,
    write_record_files,
    write_source_records,
)
from assets.core.materialization import writes
from assets.core.step import Step, recorded_step
from resources.blob_store import BlobRef, BlobStore, BlobStoreResource
from resources.http_fetcher import HttpFetcherResource
from resources.warehouse import WarehouseResource
from warehouse.db import Warehouse, registered
from warehouse.ids import digest_of, entity_id, sha256_file
from warehouse.lineage import ActivityLog, Entity, clear_rejections
from warehouse.redaction import redact_text

FETCH_STAGE = "fetch"


def _file_state(step: Step, names: list[str]) -> dict[str, tuple[int, int, str]]:
    """What was last read of these files (by name): size, mtime and sha256."""
    if not names:
        return {}
    with step.batch() as log, registered(log.con, "_paths", pd.DataFrame({"path": names})):
        rows = log.con.execute(
            "SELECT path, n_bytes, mtime_ns, sha256 FROM input_file_state WHERE path IN (SELECT path FROM _paths)"
        ).fetchall()
    return {path: (size, mtime, sha) for path, size, mtime, sha in rows}


@asset(
    metadata=writes("source_record", where="source_type IN ('manifest', 'folder')"),
    code_version="2",
    description="One provenance record per manifest row and per folder image; invalid rows, and manifests that cannot"
    " be read at all, are kept with a reason.",
)
def source_records(
    context: AssetExecutionContext, warehouse: WarehouseResource, pool: PoolSettings
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    params = {"manifests": [wh.name_of(m) for m in pool.manifests],
              "folders": [{**f.model_dump(), "path": wh.name_of(f.path)} for f in pool.folders]}
    missing = [m for m in pool.manifests if not Path(m).is_file()] + [
        f.path for f in pool.folders if not Path(f.path).is_dir()
    ]
    with recorded_step(context, wh, params) as step:
        step.rekey(REKEY_SCOPE, location_renames)  # a warehouse written before migration 0015, once
        for manifest in map(Path, pool.manifests):
            if manifest.is_file():
                _collect_manifest(step, manifest, pool.batch_size)
        for folder in pool.folders:
            if Path(folder.path).is_dir():
                _collect_folder(step, Path(folder.path).resolve(), folder.defaults(), pool.batch_size)
        if missing:
            step.notes["missing_sources"] = [wh.name_of(m) for m in missing]
            raise Failure(
                description=f"configured sources not found: {', '.join(missing)}",
                metadata={"missing": missing},
            )
    return step.result()


def _source_outcome(row: SourceRow) -> Outcome:
    if row.problem:
        return Rejected(row.problem[0], row.problem[1], value=row)
    return Kept(row, count="records")


def _manifest_outcome(root: Path, item: Item[ManifestRow]) -> Outcome:
    """The per-item function for manifest rows: parse and validate one line."""
    return _source_outcome(source_row(item.payload, root))


def _folder_outcome(folder: Path, defaults: FolderDefaults, root: Path, item: Item[FolderEntry]) -> Outcome:
    """The per-item function for folder files: hash one file and give it the folder's provenance."""
    return _source_outcome(folder_row(folder, item.payload, defaults, root))


def _collect_manifest(step: Step, manifest: Path, batch_size: int) -> None:
    """Read a new or changed manifest line by line through the item loop; a manifest that cannot be read at
    all (unreadable, empty, no usable header, not text) is rejected as a whole and the next one is read."""
    path = manifest.resolve()
    name = step.name_of(path)
    stat = path.stat()
    known = _file_state(step, [name]).get(name)
    if known and known[:2] == (stat.st_size, stat.st_mtime_ns):
        step.counts["manifests_unchanged"] += 1
        return
    try:
        sha = sha256_file(path)
    except OSError as exc:
        step.reject_input(SOURCE_STAGE, "input_file", path, digest_of(name), UNREADABLE_FILE,
                          f"{name}: cannot be read ({exc.strerror or exc})")
        return
    if known and known[2] == sha:
        step.counts["manifests_unchanged"] += 1
    else:
        root = step.warehouse.root
        rows = read_manifest(path, root)
        first = next(rows)
        if first.file_level:
            step.reject_input(SOURCE_STAGE, "input_file", path, sha, first.problem[0], f"{name}: {first.problem[1]}")
        else:
            listed_in = Entity(entity_id("input_file", sha), "input_file", sha, {"path": name})
            items = (Item(entity_id("source_row", digest_of([row.manifest, row.line])), row.locator, row.digest, row)
                     for row in chain([first], rows))
            run_items(step, SOURCE_STAGE, items, partial(_manifest_outcome, root),
                      partial(_write_records, listed_in, "manifest"), batch_size=batch_size, record_rejections=False)
            step.log.info(f"read manifest {path}")
    with step.batch() as log:
        step.remember_files(log, [(name, stat.st_size, stat.st_mtime_ns, sha)])


def _collect_folder(step: Step, folder: Path, defaults: FolderDefaults, batch_size: int) -> None:
    """Record every new or changed image-named entry of a folder through the item loop (unchanged files, by size
    and mtime, are skipped); each entry's item is named (and keyed) by the file's name."""

    def items() -> Iterator[Item[FolderEntry]]:
        for chunk in batched(scan_folder(folder), batch_size):
            names = [step.name_of(entry.path) for entry in chunk]
            states = _file_state(step, names)
            for name, entry in zip(names, chunk):
                known = states.get(name)
                if entry.fingerprint and known and known[:2] == entry.fingerprint:
                    step.counts["folder_files_unchanged"] += 1
                    continue
                yield Item(entity_id("source_file", digest_of(name)), name, digest_of([entry.fingerprint, entry.error]), entry)

    name = step.name_of(folder)
    listed_in = Entity(entity_id("source_folder", digest_of(name)), "source_folder", attributes={"path": name})
    run_items(step, SOURCE_STAGE, items(), partial(_folder_outcome, folder, defaults, step.warehouse.root),
              partial(_write_records, listed_in, "folder"), batch_size=batch_size, record_rejections=False)


def _write_records(listed_in: Entity, role: str, log: ActivityLog, done: list[Done]) -> None:
    """Store a batch of source rows as listed in their manifest or folder (rejections are written with them, on
    the records); for a folder, also the state of the files read, so that unchanged files are skipped next time."""
    log.entities([listed_in])
    log.used([listed_in.entity_id], role)
    if role == "folder":
        Step.remember_files(log, [(d.item.locator, *d.item.payload.fingerprint, d.outcome.value.content_sha256 or "")
                              for d in done if d.item.payload.fingerprint])
    write_source_records(log, [d.outcome.value for d in done], listed_in.entity_id)


@dataclass(frozen=True)
class PendingLocator:
    """One locator to fetch: the records that share it (they share the fetch) and the earlier runs in which it
    failed transiently, not yet cleared (they count towards ``fetch.max_attempt_runs``)."""

    record_ids: tuple[str, ...]
    failed_runs: tuple[FailedRun, ...] = ()


@dataclass(frozen=True)
class Fetched:
    """What one fetch produced, kept or not: the result (without its bytes, which are in the blob store)."""

    result: FetchResult
    blob: BlobRef | None = None


@asset(
    metadata=writes("record_file", "file_blob"),
    code_version="2",
    deps=[source_records, AssetKey("reddit_post_images")],
    description="The original bytes of every valid record (manifests, folders, Reddit post images), fetched politely and stored content-addressed; every attempt logged; a locator failing transiently in fetch.max_attempt_runs runs is given up.",
    **PER_SHARD,
)
def fetched_files(
    context: AssetExecutionContext,
    warehouse: WarehouseResource,
    blob_store: BlobStoreResource,
    http_fetcher: HttpFetcherResource,
    pool: PoolSettings,
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    store = blob_store.get_store()
    fetcher = http_fetcher.get_fetcher(base_dir=wh.root)  # local locators are names relative to the root
    params = {"fetch": http_fetcher.model_dump()}
    with recorded_step(context, wh, params) as step:
        pending = _pending_locators(step, covered_shards(context, step))
        step.counts["locators_pending"] = len(pending)
        run_items(step, FETCH_STAGE, pending, partial(_fetch_locator, fetcher, store, http_fetcher.max_attempt_runs),
                  _write_fetches, batch_size=pool.batch_size, workers=fetcher.max_workers, record_rejections=False)
        context.log.info(f"fetch summary: {dict(step.counts)}")
    return step.result()


def _pending_locators(step: Step, shards: Collection[str] | None = None) -> list[Item[PendingLocator]]:
    """One item per locator whose records are neither fetched nor rejected for good, ordered round-robin across
    hosts; with ``shards``, only the locators of those shards (a locator is in the shard of its smallest pending
    record id, the item's key). A record quarantined as ``internal_error`` stays listed: the loop skips it until the
    code changes."""
    with step.batch() as log:
        pending = log.con.execute(
            "SELECT r.record_id, r.locator FROM source_record r"
            " WHERE NOT EXISTS (SELECT 1 FROM record_file f WHERE f.record_id = r.record_id)"
            " AND NOT EXISTS (SELECT 1 FROM rejection j WHERE j.entity_id = r.record_id AND (j.stage = ?"
            "   OR (j.stage = ? AND NOT j.retryable AND j.reason_code <> ?)))"
            " ORDER BY r.record_id", [SOURCE_STAGE, FETCH_STAGE, INTERNAL_ERROR]).fetchall()
        records: dict[str, list[str]] = {}
        for record_id, locator in pending:
            records.setdefault(locator, []).append(record_id)
        covered = covered_items(step, shards, [ids[0] for ids in records.values()])
        records = {locator: ids for (locator, ids), keep in zip(records.items(), covered) if keep}
        with registered(log.con, "_aesforge_pending", pd.DataFrame({"locator": list(records)}, dtype=object)):
            failed = log.con.execute(
                "SELECT locator, started_at, reason_code, detail, n_attempts, duration_ms FROM fetch_failed_run"
                " WHERE cleared_at IS NULL AND locator IN (SELECT locator FROM _aesforge_pending)"
                " ORDER BY locator, started_at").fetchall()
    runs: dict[str, list[FailedRun]] = {}
    for locator, *run in failed:
        runs.setdefault(locator, []).append(FailedRun(*run))
    return [
        Item(records[locator][0], locator, digest_of(locator),
             PendingLocator(tuple(records[locator]), tuple(runs.get(locator, ()))), also=tuple(records[locator][1:]))
        for locator in interleave_by_host(records)
    ]


def _fetch_locator(fetcher: HttpFetcher, store: BlobStore, max_attempt_runs: int, item: Item[PendingLocator]) -> Outcome:
    """Fetch one locator and put its bytes in the blob store; a transient failure in the
    ``max_attempt_runs``-th run is ``gave_up``, listing every run's reason."""
    result = fetcher.fetch(item.locator)
    if result.ok:
        return Kept(Fetched(replace(result, data=None), store.put_bytes(result.data)), count="fetched")
    fetched = Fetched(result)
    if not result.transient:
        return Rejected(result.reason_code, result.detail, value=fetched)
    given_up = give_up_detail([*item.payload.failed_runs, FailedRun.of(result)], max_attempt_runs)
    if given_up is not None:
        return Rejected(GAVE_UP, given_up, value=fetched)
    return Rejected(result.reason_code, result.detail, retryable=True, value=fetched)


def retry_gave_up(wh: Warehouse) -> int:
    """Make every record the fetch stage gave up on pending again, with a fresh ``max_attempt_runs`` (the runs
    that led to it stay in ``fetch_failed_run`` as history); returns how many records."""
    with wh.transaction() as con:
        given_up = "SELECT entity_id FROM rejection WHERE stage = ? AND reason_code = ?"
        (n,) = con.execute(f"SELECT count(*) FROM ({given_up})", [FETCH_STAGE, GAVE_UP]).fetchone()
        clear_runs_for_retry(con, FETCH_STAGE, GAVE_UP)
        clear_rejections(con, FETCH_STAGE, GAVE_UP)
    return n


def _write_fetches(log: ActivityLog, done: list[Done[PendingLocator]]) -> None:
    attempts, files, links, failures, retryable_failures, succeeded, failed_runs = [], {}, [], [], [], [], []
    decided: dict[str, list[str]] = {"fetched": [], "rejected": []}  # locators whose failed runs no longer count
    for one in done:
        record_ids, fetched = one.item.payload.record_ids, one.outcome.value
        result = fetched.result
        attempts.extend(
            {
                "record_id": record_id,
                "activity_id": log.activity_id,
                "attempt": a.attempt,
                "url": a.url,
                "status_code": a.status_code,
                "n_bytes": a.n_bytes,
                "sha256": a.sha256,
                "duration_ms": a.duration_ms,
                "error": a.error,
                "started_at": a.started_at,
            }
            for record_id in record_ids
            for a in result.attempts
        )
        if one.kept:
            blob = fetched.blob
            files[blob.sha256] = {
                "sha256": blob.sha256,
                "n_bytes": blob.size,
                "media_type": result.media_type,
                "blob_uri": blob.uri,
            }
            links.extend((record_id, blob.sha256) for record_id in record_ids)
            succeeded.extend(record_ids)
            if one.item.payload.failed_runs:
                decided["fetched"].append(one.item.locator)
            continue
        target = retryable_failures if one.outcome.retryable else failures
        target.extend((rid, one.outcome.reason_code, one.outcome.detail) for rid in record_ids)
        if result.transient:
            run = FailedRun.of(result)
            failed_runs.append({
                "locator": one.item.locator, "activity_id": log.activity_id, "reason_code": run.reason_code,
                "detail": None if run.detail is None else redact_text(run.detail), "n_attempts": run.n_attempts,
                "duration_ms": run.duration_ms, "started_at": run.started_at,
            })
        elif one.item.payload.failed_runs:
            decided["rejected"].append(one.item.locator)
    write_fetch_attempts(log.con, attempts)
    write_file_blobs(log.con, list(files.values()))
    file_entities = {sha: entity_id("file", sha) for sha in files}
    log.entities(
        Entity(eid, "file", sha, {"n_bytes": files[sha]["n_bytes"], "media_type": files[sha]["media_type"]})
        for sha, eid in file_entities.items()
    )
    log.generated(file_entities.values())
    log.used((rid for rid, _ in links), "record")
    log.derived((file_entities[sha], rid, "retrieved_from") for rid, sha in links)
    write_record_files(log, links)
    log.rejected(FETCH_STAGE, failures)
    log.rejected(FETCH_STAGE, retryable_failures, retryable=True)
    log.unrejected(FETCH_STAGE, succeeded)
    write_failed_runs(log.con, failed_runs)
    for cleared_by, locators in decided.items():
        if locators:
            clear_failed_runs(log.con, locators, cleared_by)
