"""Collection: provenance records from manifests and folders, then the bytes behind each record."""

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, AssetKey, Failure, MaterializeResult, asset

from assets.lib.fetching import FetchResult
from assets.lib.iteration import batched
from assets.lib.sources import FolderDefaults, SourceRow, read_manifest, scan_folder
from assets.settings import PoolSettings
from assets.step import Step, recorded_step
from resources.blob_store import BlobRef, BlobStore, BlobStoreResource
from resources.http_fetcher import HttpFetcherResource
from resources.warehouse import WarehouseResource
from warehouse.db import insert_rows, registered
from warehouse.ids import digest_of, entity_id, sha256_file
from warehouse.lineage import ActivityLog, Entity, utcnow

SOURCE_STAGE = "source"
FETCH_STAGE = "fetch"


def _file_state(step: Step, paths: list[str]) -> dict[str, tuple[int, int, str]]:
    if not paths:
        return {}
    with step.batch() as log, registered(log.con, "_paths", pd.DataFrame({"path": paths})):
        rows = log.con.execute(
            "SELECT path, n_bytes, mtime_ns, sha256 FROM input_file_state WHERE path IN (SELECT path FROM _paths)"
        ).fetchall()
    return {path: (size, mtime, sha) for path, size, mtime, sha in rows}


def _remember_files(log: ActivityLog, files: list[tuple[str, int, int, str]]) -> None:
    now = utcnow()
    insert_rows(
        log.con,
        "input_file_state",
        [{"path": p, "n_bytes": n, "mtime_ns": m, "sha256": s, "seen_at": now} for p, n, m, s in files],
        conflict="replace",
    )


def write_source_records(
    log: ActivityLog, rows: list[SourceRow], used_entity: str, relation: str = "listed_in"
) -> tuple[int, int]:
    """Store records (valid or not) as entities generated here; rejected rows keep their reason.

    This is the pool's published entry point: other stages that find images (e.g. Reddit posts)
    hand their records in here, and the pool stages fetch, filter and de-duplicate them like any other.
    """
    now = utcnow()
    unique = {row.record_id: row for row in rows}
    log.entities(
        Entity(rid, "source_record", attributes={"source_type": r.source_type, "locator": r.locator})
        for rid, r in unique.items()
    )
    log.generated(unique)
    log.derived((rid, used_entity, relation) for rid in unique)
    insert_rows(
        log.con,
        "source_record",
        [
            {
                "record_id": rid,
                "source_type": r.source_type,
                "source_name": r.source_name,
                "locator": r.locator,
                "title": r.title,
                "creator": r.creator,
                "provider": r.provider,
                "source_url": r.source_url,
                "license": r.license,
                "redistribution": r.redistribution,
                "domain": r.domain,
                "extra": json.dumps(dict(r.extra), sort_keys=True) if r.extra else None,
                "activity_id": log.activity_id,
                "recorded_at": now,
            }
            for rid, r in unique.items()
        ],
    )
    problems = [(rid, r.problem[0], r.problem[1]) for rid, r in unique.items() if r.problem]
    log.rejected(SOURCE_STAGE, problems)
    return len(unique), len(problems)


@asset(
    group_name="image_pool",
    code_version="1",
    description="One provenance record per manifest row and per folder image; invalid rows are kept with a reason.",
)
def source_records(
    context: AssetExecutionContext, warehouse: WarehouseResource, pool: PoolSettings
) -> MaterializeResult:
    wh = warehouse.get_warehouse()
    params = {"manifests": pool.manifests, "folders": [f.model_dump() for f in pool.folders]}
    missing = [m for m in pool.manifests if not Path(m).is_file()] + [
        f.path for f in pool.folders if not Path(f.path).is_dir()
    ]
    with recorded_step(context, wh, params) as step:
        for manifest in map(Path, pool.manifests):
            if manifest.is_file():
                _collect_manifest(context, step, manifest, pool.batch_size)
        for folder in pool.folders:
            if Path(folder.path).is_dir():
                _collect_folder(step, folder.path, folder.defaults(), pool.batch_size)
        if missing:
            step.notes["missing_sources"] = missing
            raise Failure(
                description=f"configured sources not found: {', '.join(missing)}",
                metadata={"missing": missing},
            )
    return MaterializeResult(metadata=step.summary())


def _collect_manifest(context: AssetExecutionContext, step: Step, manifest: Path, batch_size: int) -> None:
    path = str(manifest.resolve())
    stat = manifest.stat()
    known = _file_state(step, [path]).get(path)
    if known and known[:2] == (stat.st_size, stat.st_mtime_ns):
        step.counts["manifests_unchanged"] += 1
        return
    sha = sha256_file(manifest)
    manifest_entity = entity_id("input_file", sha)
    if known and known[2] == sha:
        step.counts["manifests_unchanged"] += 1
    else:
        with step.batch() as log:
            log.entities([Entity(manifest_entity, "input_file", sha, {"path": path})])
            log.used([manifest_entity], "manifest")
        for rows in batched(read_manifest(manifest), batch_size):
            with step.batch() as log:
                stored, rejected = write_source_records(log, rows, manifest_entity)
            step.counts["records"] += stored
            step.counts["records_rejected"] += rejected
        context.log.info(f"read manifest {path}")
    with step.batch() as log:
        _remember_files(log, [(path, stat.st_size, stat.st_mtime_ns, sha)])


def _collect_folder(step: Step, folder: str, defaults: FolderDefaults, batch_size: int) -> None:
    root = Path(folder).resolve()
    folder_entity = entity_id("source_folder", digest_of(str(root)))
    for chunk in batched(scan_folder(root, defaults), batch_size):
        states = _file_state(step, [str(p) for p, _ in chunk])
        rows, seen = [], []
        for path, row in chunk:
            stat = path.stat()
            known = states.get(str(path))
            if known and known[:2] == (stat.st_size, stat.st_mtime_ns):
                step.counts["folder_files_unchanged"] += 1
                continue
            sha = sha256_file(path)
            rows.append(SourceRow(**{**row.__dict__, "content_sha256": sha}))
            seen.append((str(path), stat.st_size, stat.st_mtime_ns, sha))
        if rows:
            with step.batch() as log:
                log.entities([Entity(folder_entity, "source_folder", attributes={"path": str(root)})])
                log.used([folder_entity], "folder")
                stored, rejected = write_source_records(log, rows, folder_entity)
                _remember_files(log, seen)
            step.counts["records"] += stored
            step.counts["records_rejected"] += rejected


@asset(
    group_name="image_pool",
    code_version="1",
    deps=[source_records, AssetKey("reddit_post_images")],
    description="The original bytes of every valid record (manifests, folders, Reddit post images), fetched politely and stored content-addressed; every attempt logged.",
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
    fetcher = http_fetcher.get_fetcher()
    params = {"fetch": http_fetcher.model_dump()}
    with recorded_step(context, wh, params) as step:
        pending = wh.query(
            "SELECT r.record_id, r.locator FROM source_record r"
            " WHERE NOT EXISTS (SELECT 1 FROM record_file f WHERE f.record_id = r.record_id)"
            " AND NOT EXISTS (SELECT 1 FROM rejection j WHERE j.entity_id = r.record_id"
            "   AND (j.stage = 'source' OR (j.stage = 'fetch' AND NOT j.retryable)))"
            " ORDER BY r.record_id"
        )
        records_by_locator: dict[str, list[str]] = defaultdict(list)
        for record_id, locator in pending.itertuples(index=False):
            records_by_locator[locator].append(record_id)
        step.counts["locators_pending"] = len(records_by_locator)
        for results in batched(_stored(fetcher.fetch_many(records_by_locator), store), pool.batch_size):
            blobs = {r.locator: blob for r, blob in results if blob is not None}
            results = [r for r, _ in results]
            with step.batch() as log:
                _write_fetches(log, results, blobs, records_by_locator)
            for result in results:
                step.counts["fetched" if result.ok else f"failed:{result.reason_code}"] += 1
        context.log.info(f"fetch summary: {dict(step.counts)}")
    return MaterializeResult(metadata=step.summary())


def _stored(results: Iterable[FetchResult], store: BlobStore) -> Iterator[tuple[FetchResult, BlobRef | None]]:
    """Put each body in the blob store as it arrives and let go of the bytes, so memory stays flat."""
    for result in results:
        if result.ok:
            yield replace(result, data=None), store.put_bytes(result.data)
        else:
            yield result, None


def _write_fetches(log: ActivityLog, results, blobs, records_by_locator: dict[str, list[str]]) -> None:
    attempts, files, links, failures, retryable_failures, succeeded = [], {}, [], [], [], []
    for result in results:
        record_ids = records_by_locator[result.locator]
        for record_id in record_ids:
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
                for a in result.attempts
            )
        if result.ok:
            blob = blobs[result.locator]
            files[blob.sha256] = {
                "sha256": blob.sha256,
                "n_bytes": blob.size,
                "media_type": result.media_type,
                "blob_uri": blob.uri,
            }
            links.extend((record_id, blob.sha256) for record_id in record_ids)
            succeeded.extend(record_ids)
        else:
            target = retryable_failures if result.transient else failures
            target.extend((rid, result.reason_code, result.detail) for rid in record_ids)
    insert_rows(log.con, "fetch_attempt", attempts)
    insert_rows(log.con, "file_blob", list(files.values()))
    file_entities = {sha: entity_id("file", sha) for sha in files}
    log.entities(
        Entity(eid, "file", sha, {"n_bytes": files[sha]["n_bytes"], "media_type": files[sha]["media_type"]})
        for sha, eid in file_entities.items()
    )
    log.generated(file_entities.values())
    log.used((rid for rid, _ in links), "record")
    log.derived((file_entities[sha], rid, "retrieved_from") for rid, sha in links)
    insert_rows(
        log.con,
        "record_file",
        [{"record_id": rid, "file_sha256": sha, "activity_id": log.activity_id} for rid, sha in links],
    )
    log.rejected(FETCH_STAGE, failures)
    log.rejected(FETCH_STAGE, retryable_failures, retryable=True)
    log.unrejected(FETCH_STAGE, succeeded)
