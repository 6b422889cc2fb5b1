"""The rows a fetch-and-decode worker would write for a handful of manifest rows, as one result shard's tables:
the pool's own tables and the lineage of the step (activity, agent, entities, edges, a rejection), with ids made as
the pipeline makes them (``warehouse.ids``)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from warehouse.ids import digest_of, entity_id, sha256_hex
from warehouse.lineage import activity_id_for

ASSET = "image_pool/decoded_images"
AGENT = "software:aesforge@test"


def item_keys(n: int, offset: int = 0) -> list[str]:
    """The manifest rows a shard covers, as ``<manifest>:<line>``."""
    return [f"manifest.csv:{i + 2}" for i in range(offset, offset + n)]


def decode_tables(keys: list[str], run_id: str = "run-1") -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """(activity id, table -> rows) for these manifest rows; the last one is rejected as undecodable."""
    now = datetime(2026, 12, 7, 12, 0, tzinfo=timezone.utc)
    activity = activity_id_for(ASSET, None, run_id)
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in (
        "activity", "agent", "was_associated_with", "source_record", "file_blob", "record_file", "file_decode", "image",
        "entity", "was_generated_by", "used", "was_derived_from", "rejection")}
    tables["activity"].append({
        "activity_id": activity, "asset_key": ASSET, "partition_key": None, "run_id": run_id, "code_version": "test",
        "parameters": "{}", "started_at": now, "ended_at": now, "status": "success", "summary": '{"items":%d}' % len(keys),
        "pid": None, "hostname": None, "process_start": None})
    tables["agent"].append({"agent_id": AGENT, "kind": "software", "name": "aesforge", "version": "test", "attributes": None})
    tables["was_associated_with"].append({"activity_id": activity, "agent_id": AGENT, "role": "pipeline"})
    for index, key in enumerate(keys):
        url = f"https://images.example/{index}.jpg"
        record = entity_id("source_record", digest_of(["manifest", url, key]))
        file_sha = sha256_hex(f"bytes of {key}".encode())
        file = entity_id("file", file_sha)
        tables["source_record"].append({
            "record_id": record, "source_type": "manifest", "source_name": "manifest.csv", "locator": url,
            "title": f"photo {index}", "creator": "unknown", "provider": "example", "source_url": url,
            "license": "CC-BY-4.0", "redistribution": "allowed", "domain": "photo", "extra": "{}",
            "activity_id": activity, "recorded_at": now})
        tables["file_blob"].append({"sha256": file_sha, "n_bytes": 1000 + index, "media_type": "image/jpeg",
                                    "blob_uri": f"blob:{file_sha}"})
        tables["record_file"].append({"record_id": record, "file_sha256": file_sha, "activity_id": activity})
        tables["entity"] += [
            {"entity_id": record, "kind": "source_record", "content_sha256": None, "attributes": None, "recorded_at": now},
            {"entity_id": file, "kind": "file", "content_sha256": file_sha, "attributes": None, "recorded_at": now}]
        tables["was_generated_by"] += [{"entity_id": e, "activity_id": activity, "generated_at": now} for e in (record, file)]
        tables["used"].append({"activity_id": activity, "entity_id": record, "role": "record"})
        tables["was_derived_from"].append(
            {"entity_id": file, "source_entity_id": record, "relation": "retrieved_from", "activity_id": activity})
        if index == len(keys) - 1:
            tables["file_decode"].append({"file_sha256": file_sha, "image_id": None, "source_format": None,
                                          "source_mode": None, "exif_orientation": None, "activity_id": activity})
            tables["rejection"].append({"entity_id": file, "stage": "decode", "reason_code": "undecodable",
                                        "detail": f"{key}: cannot identify image file", "retryable": False,
                                        "activity_id": activity, "recorded_at": now})
            continue
        pixels = sha256_hex(f"pixels of {key}".encode())
        image = entity_id("image", pixels)
        tables["file_decode"].append({"file_sha256": file_sha, "image_id": image, "source_format": "JPEG",
                                      "source_mode": "RGB", "exif_orientation": 1, "activity_id": activity})
        tables["image"].append({"image_id": image, "pixel_sha256": pixels, "width": 640, "height": 480,
                                "pixel_std": 41.5, "activity_id": activity})
        tables["entity"].append({"entity_id": image, "kind": "image", "content_sha256": pixels, "attributes": None,
                                 "recorded_at": now})
        tables["was_generated_by"].append({"entity_id": image, "activity_id": activity, "generated_at": now})
        tables["was_derived_from"].append(
            {"entity_id": image, "source_entity_id": file, "relation": "decoded_from", "activity_id": activity})
    return activity, tables
