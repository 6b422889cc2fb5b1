"""Storing perceptual signatures in the warehouse and reading them back.

Matching against earlier runs needs only the hash columns of every indexed image (a few dozen
bytes each); thumbnails are read only for the few candidates that need verifying.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

from assets.image_pool.logic.perceptual import PerceptualHashes, PerceptualSignature
from warehouse.db import Warehouse, registered

HASH_COLUMNS = ("phash", "dhash", "phash_mirror", "view_hashes", "aspect_milli")
THUMB_COLUMNS = ("thumb_luma", "thumb_chroma", "signature_version")


def signature_row(image_id: str, signature: PerceptualSignature, activity_id: str) -> dict:
    return {"image_id": image_id, **signature.to_record(), "activity_id": activity_id}


def load_signatures(wh: Warehouse, image_ids: list[str]) -> dict[str, PerceptualSignature]:
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
    """Hash columns of the images matching ``where`` (a condition on image_signature s), in keyset blocks."""
    for image_id, record in _stream(wh, where, HASH_COLUMNS, block):
        yield image_id, PerceptualHashes.from_record(record)


def stream_signature_records(wh: Warehouse, where: str, block: int = 2000) -> Iterator[tuple[str, dict]]:
    """Full signature rows (with thumbnails) of the images matching ``where``, in keyset blocks, unparsed: each
    is read into a :class:`PerceptualSignature` by the item that uses it, so one damaged row is that item's fault."""
    return _stream(wh, where, HASH_COLUMNS + THUMB_COLUMNS, block)
