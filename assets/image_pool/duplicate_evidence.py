"""Writing duplicate evidence: the pairs a matching pass found and the images it has now scanned.

Shared by the perceptual and CLIP passes so both record evidence the same way, in the same
transaction as their scan marks (a crash never leaves an image scanned without its pairs).
"""

from collections.abc import Iterable
from dataclasses import dataclass

from warehouse.db import insert_rows
from warehouse.lineage import ActivityLog


@dataclass(frozen=True)
class Evidence:
    a: str
    b: str
    method: str
    distance: float
    score: float
    model_key: str | None = None


def record_scan(log: ActivityLog, scan: str, image_ids: list[str], evidence: Iterable[Evidence]) -> int:
    """Store the pairs (as image_a < image_b) and mark the images scanned by ``scan``; returns the pair count."""
    rows = [
        {
            "image_a": min(e.a, e.b),
            "image_b": max(e.a, e.b),
            "method": e.method,
            "distance": float(e.distance),
            "score": float(e.score),
            "model_key": e.model_key,
            "activity_id": log.activity_id,
        }
        for e in evidence
    ]
    log.used(image_ids, "image")
    insert_rows(log.con, "duplicate_match", rows)
    insert_rows(log.con, "match_scan", [{"image_id": i, "method": scan, "activity_id": log.activity_id} for i in image_ids])
    return len(rows)
