"""The ids of Reddit ingestion, derived from where a copy was read: a dump file or id list by its name relative
to the project (``Step.name_of``), an API endpoint by its URL, so they do not change when the project moves.
Ingestion (``assets/photocritique/reddit_ingest.py``) derives them, and so does the re-key of rows written before
those names (``assets/photocritique/location_rekey.py``)."""

from __future__ import annotations

from pathlib import Path

from warehouse.ids import digest_of, entity_id, sha256_hex


def source_entity_id(source_kind: str, locator: str) -> str:
    return entity_id("reddit_source", digest_of([source_kind, locator]))


def observation_id(kind: str, source_kind: str, locator: str, line_no: int | None, byte_offset: int | None,
                   digest: str, retrieved_at: float | None) -> str:
    """One copy of a record (``kind`` reddit_post or reddit_comment) as one source returned it."""
    return entity_id(f"{kind}_observation", digest_of([source_kind, locator, line_no, byte_offset, digest, retrieved_at]))


def problem_digest(source_kind: str, locator: str, line_no: int | None, byte_offset: int | None, scope: str,
                   reason_code: str, item_id: str | None) -> str:
    return digest_of([source_kind, locator, line_no, byte_offset, scope, reason_code, item_id])


def dump_line_key(locator: str, byte_offset: int) -> str:
    return entity_id("reddit_dump_line", sha256_hex(f"{locator}#{byte_offset}".encode(errors="surrogateescape")))


def id_list_line_key(list_name: str, line: int) -> str:
    return entity_id("reddit_id_list_line", digest_of([list_name, line]))


def scan_key(fingerprint: str, scope: str, target_digest: str) -> str:
    """A dump file's scan for one target set; ``fingerprint`` is the file's (``file_fingerprint``), or its name
    when the file cannot be read."""
    return digest_of([fingerprint, scope, target_digest])


def file_fingerprint(name: str, path: Path) -> str:
    """Cheap identity of a (possibly huge) dump file: its name, size and mtime, not a full hash."""
    stat = path.stat()
    return digest_of([name, stat.st_size, stat.st_mtime_ns])
