"""Content-derived ids: stable hashes of bytes and of JSON-like values.

Kept apart from the lineage API (which needs DuckDB and pandas) so pure modules such as parsers and
stream scanners can name things by content without importing the warehouse stack.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, BinaryIO


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_stream(stream: BinaryIO, chunk_size: int = 1 << 20) -> tuple[str, int]:
    """sha256 and size of a stream from its current position, read in bounded chunks (constant memory)."""
    digest = hashlib.sha256()
    size = 0
    while chunk := stream.read(chunk_size):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def sha256_file(path: Path) -> str:
    with path.open("rb") as handle:
        return sha256_stream(handle)[0]


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace, so equal values always hash equally."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest_of(value: Any) -> str:
    return sha256_hex(canonical_json(value).encode("utf-8"))


def entity_id(kind: str, digest: str) -> str:
    return f"{kind}:{digest}"
