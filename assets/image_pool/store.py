"""The image pool's tables: the only code that writes them, and the pool's published module.

Other pipelines import nothing else from the pool: one that finds images (Reddit post images, generated
illustrations) hands their records (``SourceRow``, imported from here) and bytes it already stored in here,
and the pool stages fetch, filter and de-duplicate them like any other. Every function writes in the caller's transaction, so a batch's rows are
stored together or not at all.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

import duckdb
import pandas as pd

from assets.image_pool.logic.perceptual import PerceptualHashes, PerceptualSignature
from assets.image_pool.logic.sources import SourceRow, file_reference
from resources.blob_store import BlobRef, blob_ref
from warehouse.db import Conflict, Warehouse, insert_rows, registered
from warehouse.ids import digest_of, entity_id
from warehouse.lineage import ActivityLog, Entity, utcnow
from warehouse.rekey import old_spellings, renamed_path

SOURCE_STAGE = "source"
REKEY_SCOPE = "image_pool"
_BLOB_URI = re.compile(r"^(file://.*/[0-9a-f]{2}/[0-9a-f]{2}|s3://.*/[0-9a-f]{2})/([0-9a-f]{64})$")

HASH_COLUMNS = ("phash", "dhash", "phash_mirror", "view_hashes", "aspect_milli")
THUMB_COLUMNS = ("thumb_luma", "thumb_chroma", "signature_version")


def write_source_records(
    log: ActivityLog, rows: list[SourceRow], used_entity: str, relation: str = "listed_in"
) -> None:
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
    log.rejected(SOURCE_STAGE, [(rid, r.problem[0], r.problem[1]) for rid, r in unique.items() if r.problem])


def write_stored_file(log: ActivityLog, record_id: str, blob: BlobRef, media_type: str | None) -> None:
    """The file of a record whose bytes are already in the blob store (e.g. a generated image), so it is not fetched."""
    write_file_blobs(log.con, [{"sha256": blob.sha256, "n_bytes": blob.size, "media_type": media_type, "blob_uri": blob.uri}])
    write_record_files(log, [(record_id, blob.sha256)])


def write_fetch_attempts(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Every request the fetch stage sent, once per record sharing the locator."""
    insert_rows(con, "fetch_attempt", rows)


def write_file_blobs(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Original bytes now in the blob store, one row per content hash (a known one is kept)."""
    insert_rows(con, "file_blob", rows)


def write_record_files(log: ActivityLog, links: Iterable[tuple[str, str]]) -> None:
    """Which file (sha256) each record's bytes are, as (record_id, sha256) pairs."""
    insert_rows(log.con, "record_file",
                [{"record_id": rid, "file_sha256": sha, "activity_id": log.activity_id} for rid, sha in links])


def write_failed_runs(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """One row per locator whose fetch failed transiently in this run; they count towards giving up."""
    insert_rows(con, "fetch_failed_run", rows)


def clear_failed_runs(con: duckdb.DuckDBPyConnection, locators: list[str], cleared_by: str) -> None:
    """Stop counting the failed runs of locators a later run decided (``cleared_by`` 'fetched' or 'rejected')."""
    with registered(con, "_aesforge_cleared", pd.DataFrame({"locator": locators}, dtype=object)):
        con.execute(
            "UPDATE fetch_failed_run SET cleared_at = ?, cleared_by = ? WHERE cleared_at IS NULL"
            " AND locator IN (SELECT locator FROM _aesforge_cleared)", [utcnow(), cleared_by])


def clear_runs_for_retry(con: duckdb.DuckDBPyConnection, stage: str, reason_code: str) -> None:
    """Stop counting the failed runs of the locators whose records are rejected at ``stage`` for ``reason_code``."""
    con.execute(
        "UPDATE fetch_failed_run SET cleared_at = ?, cleared_by = 'retry' WHERE cleared_at IS NULL AND locator IN"
        " (SELECT locator FROM source_record WHERE record_id IN"
        " (SELECT entity_id FROM rejection WHERE stage = ? AND reason_code = ?))", [utcnow(), stage, reason_code])


def write_images(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Decoded, upright images (one per distinct pixel content) and their measures."""
    insert_rows(con, "image", rows)


def write_signatures(log: ActivityLog, signatures: Mapping[str, PerceptualSignature], conflict: Conflict = "ignore") -> None:
    """The perceptual signature of each image id, in the column layout of ``PerceptualSignature.to_record``;
    ``conflict="replace"`` for signatures made again (a newer signature version) in place of the stored ones."""
    insert_rows(log.con, "image_signature",
                [{"image_id": i, **s.to_record(), "activity_id": log.activity_id} for i, s in signatures.items()],
                conflict)


def write_file_decodes(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """What decoding each fetched file gave: its image, or no image when it could not be decoded."""
    insert_rows(con, "file_decode", rows)


def write_pool_candidates(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Each record's filter decision; a record decided again under changed rules replaces its row."""
    insert_rows(con, "pool_candidate", rows, conflict="replace")


def write_clip_embeddings(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """CLIP embeddings, one per image and model."""
    insert_rows(con, "clip_embedding", rows)


def write_model_filter_verdicts(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """A model filter's verdicts, replacing the record's earlier verdict of the same filter."""
    insert_rows(con, "model_filter_verdict", rows, conflict="replace")


def drop_model_filter_verdicts(con: duckdb.DuckDBPyConnection, filter_name: str, record_ids: list[str]) -> None:
    con.execute("DELETE FROM model_filter_verdict WHERE filter_name = ? AND list_contains(?, record_id)",
                [filter_name, record_ids])


def replace_pool_members(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """The whole current pool, replacing the previous decision: every eligible record and its cluster."""
    con.execute("DELETE FROM pool_member")
    insert_rows(con, "pool_member", rows)


def replace_duplicate_links(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """What the current clustering made of every duplicate pair (linked, inside, refused with a reason)."""
    con.execute("DELETE FROM duplicate_link")
    insert_rows(con, "duplicate_link", rows)


@dataclass(frozen=True)
class Evidence:
    """One near-duplicate pair a matching pass found, as it goes into ``duplicate_match``."""

    a: str
    b: str
    method: str
    distance: float
    score: float
    model_key: str | None = None
    covered_a: float | None = None  # share of a's frame that b shows (perceptual evidence only)
    covered_b: float | None = None
    edited: str | None = None  # "a" or "b": the side showing an overlay the other lacks

    def as_row(self) -> dict:
        """The ``duplicate_match`` columns, the pair stored as image_a < image_b (per-side values follow their image)."""
        swap = self.a > self.b
        return {
            "image_a": self.b if swap else self.a,
            "image_b": self.a if swap else self.b,
            "method": self.method,
            "distance": float(self.distance),
            "score": float(self.score),
            "model_key": self.model_key,
            "covered_a": self.covered_b if swap else self.covered_a,
            "covered_b": self.covered_a if swap else self.covered_b,
            "edited": {"a": "b", "b": "a"}.get(self.edited) if swap else self.edited,
        }


def record_scan(log: ActivityLog, scan: str, image_ids: list[str], evidence: Iterable[Evidence]) -> int:
    """Store the pairs (as image_a < image_b) and mark the images scanned by ``scan``; returns the pair count.

    Shared by the perceptual and CLIP passes, so both record evidence in the same transaction as their scan
    marks (a crash never leaves an image scanned without its pairs).
    """
    rows = [{**e.as_row(), "activity_id": log.activity_id} for e in evidence]
    log.used(image_ids, "image")
    insert_rows(log.con, "duplicate_match", rows)
    insert_rows(log.con, "match_scan", [{"image_id": i, "method": scan, "activity_id": log.activity_id} for i in image_ids])
    return len(rows)


def load_signatures(wh: Warehouse, image_ids: list[str]) -> dict[str, PerceptualSignature]:
    """Full signatures of these images, read only for the few candidates that need verifying."""
    if not image_ids:
        return {}
    columns = ("image_id", *HASH_COLUMNS, *THUMB_COLUMNS)
    with wh.transaction() as con, registered(con, "_wanted", pd.DataFrame({"image_id": image_ids})):
        rows = con.execute(
            f"SELECT {', '.join(columns)} FROM image_signature WHERE image_id IN (SELECT image_id FROM _wanted)"
        ).fetchall()
    return {row[0]: PerceptualSignature.from_record(dict(zip(columns[1:], row[1:]))) for row in rows}


def _stream(wh: Warehouse, where: str, columns: tuple[str, ...], block: int) -> Iterator[tuple[str, dict]]:
    select = f"SELECT s.image_id, {', '.join('s.' + c for c in columns)} FROM image_signature s WHERE ({where})"
    for page in wh.pages(select, [], key="s.image_id", block=block):
        for image_id, *values in page:
            yield image_id, dict(zip(columns, values))


def stream_hashes(wh: Warehouse, where: str, block: int = 50000) -> Iterator[tuple[str, PerceptualHashes]]:
    """Hash columns of the images matching ``where`` (a condition on image_signature s), in keyset blocks: matching
    against earlier runs needs only these few dozen bytes per indexed image."""
    for image_id, record in _stream(wh, where, HASH_COLUMNS, block):
        yield image_id, PerceptualHashes.from_record(record)


def stream_signature_records(wh: Warehouse, where: str, block: int = 2000) -> Iterator[tuple[str, dict]]:
    """Full signature rows (with thumbnails) of the images matching ``where``, in keyset blocks, unparsed: each
    is read into a :class:`PerceptualSignature` by the item that uses it, so one damaged row is that item's fault."""
    return _stream(wh, where, HASH_COLUMNS + THUMB_COLUMNS, block)


def location_renames(con: duckdb.DuckDBPyConnection, root: Path) -> dict[str, str]:
    """What the pool's rows written before migration 0015 become (``Step.rekey``, scope ``image_pool``): absolute
    paths of manifests, folders and files as names relative to ``root``, a generated record's blob URI as its
    reference, and the ids derived from them: a record's (only where its stored fields derive its id, so a
    record of unknown derivation keeps it), its pool item's, a folder file's and a folder's item keys."""
    renames: dict[str, str] = {}

    def name(value: str) -> str:
        new = renamed_path(value, root)
        if new != value:
            renames[value.partition("#")[0]] = new.partition("#")[0]
        return new

    records = con.execute(
        "SELECT r.record_id, r.source_type, r.source_name, r.locator, r.title, r.creator, r.provider, r.source_url,"
        " r.license, r.redistribution, r.domain, r.extra, coalesce(f.sha256, nullif(s.sha256, '')),"
        " EXISTS (SELECT 1 FROM rejection j WHERE j.entity_id = r.record_id AND j.stage = ?)"
        " FROM source_record r LEFT JOIN (SELECT record_id, min(file_sha256) AS sha256 FROM record_file GROUP BY ALL) f"
        " USING (record_id) LEFT JOIN input_file_state s ON s.path = r.locator", [SOURCE_STAGE]).fetchall()
    record_ids: dict[str, str] = {}
    for record_id, kind, source_name, locator, *provenance, source_url, licence, redistribution, domain, extra, sha, \
            rejected in records:
        content = sha if kind in ("folder", "generated") and not rejected else None
        fields = (*provenance, source_url, licence, redistribution, domain, json.loads(extra) if extra else {},
                  ("rejected", "") if rejected else None, content)
        names = old_spellings(source_name, root) if kind in ("manifest", "folder") else [source_name]
        written = [(n, loc) for n in names for loc in old_spellings(locator, root)
                   if SourceRow(kind, n, loc, *fields).record_id == record_id]
        if not written:
            continue  # not derived as this code derives records: its id stays
        old_name, old_locator = written[0]
        blob = _BLOB_URI.match(old_locator) if kind == "generated" else None
        new = SourceRow(kind, name(old_name), blob_ref(blob.group(2)) if blob else name(old_locator), *provenance,
                        _renamed_url(source_url, name), licence, redistribution, domain, *fields[-3:])
        renames.update({a: b for a, b in ((locator, new.locator), (source_name, new.source_name),
                                          (source_url, new.source_url)) if a and a != b})
        record_ids[record_id] = new.record_id
        if kind == "folder":
            renames[entity_id("source_file", digest_of(old_locator))] = entity_id("source_file", digest_of(new.locator))
            renames[entity_id("source_folder", digest_of(old_name))] = entity_id("source_folder", digest_of(new.source_name))
    for kind, path in con.execute("SELECT kind, attributes->>'path' FROM entity WHERE kind IN ('input_file', 'source_folder')"
                                  " AND attributes->>'path' IS NOT NULL").fetchall():
        for old_path in old_spellings(path, root):
            new_path = name(old_path)  # a manifest or folder that gave no record is renamed too
            if kind == "input_file":  # the id of a manifest that could not be read derives from its path
                renames[entity_id("input_file", digest_of(old_path))] = entity_id("input_file", digest_of(new_path))
    # a new id that two records would share, or that a record keeping its id has, is not given
    targets = Counter(record_ids.values())
    unchanged = {row[0] for row in records} - set(record_ids)
    record_ids = {old: new for old, new in record_ids.items() if targets[new] == 1 and new not in unchanged}
    for item, record_id, image_id in con.execute(
            "SELECT pool_item_id, record_id, image_id FROM pool_member WHERE pool_item_id IS NOT NULL").fetchall():
        if record_id in record_ids and item == entity_id("pool_item", digest_of([record_id, image_id])):
            renames[item] = entity_id("pool_item", digest_of([record_ids[record_id], image_id]))
    return {**renames, **record_ids}


def _renamed_url(url: str | None, name: Callable[[str], str]) -> str | None:
    """A ``file://`` source URL (a local file without a public URL) as the reference its new name gives."""
    if not url or not url.startswith("file://"):
        return url
    path = url2pathname(urlsplit(url).path)
    new = name(path)
    return url if new == path else file_reference(new)
