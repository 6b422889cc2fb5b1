"""Content-derived ids: stable hashes of bytes and of JSON-like values, and the names of local files they use.

Kept apart from the lineage API (which needs DuckDB and pandas) so pure modules such as parsers and
stream scanners can name things by content without importing the warehouse stack.

A local file enters an id (and the warehouse) by its *name*: its path relative to a declared root (the folder
the config file sits in, unless the warehouse is told another), never its absolute path, so a copy of the
project in another folder, run on the same data, derives the same ids. ``file_name`` makes a name,
``file_path`` turns one back into a path where the file is opened.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path, PurePosixPath
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


def file_name(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str:
    """``path`` as it is named in ids and in the warehouse: relative to ``root`` with ``/`` separators (``..``
    where it lies beside the root, as ``../data/sample`` of a config in ``config/``), so it does not change when
    the folder holding both moves. A path that shares nothing with ``root`` but the filesystem's root (another
    mount: ``/mnt/photos`` for a root under ``/home``) stays absolute: it does not move with the project, and a
    name climbing out to ``/`` would name another file once the project moved. Both are made absolute first
    (against the working directory) without resolving links, so a name is what the config says, not where a
    link points."""
    absolute, base = os.path.abspath(path), os.path.abspath(root)
    try:
        shared = os.path.commonpath([absolute, base])
    except ValueError:  # two drives
        shared = ""
    if not shared or os.path.dirname(shared) == shared:
        return Path(absolute).as_posix()
    return Path(os.path.relpath(absolute, base)).as_posix()


def file_path(name: str, root: str | os.PathLike[str]) -> Path:
    """The file a ``file_name`` names: an absolute name as it is, a relative one under ``root``, normalised
    (``root/../data`` is ``data`` beside the root) so messages and lookups see one spelling of it."""
    return Path(os.path.normpath(os.path.join(os.path.abspath(root), *PurePosixPath(name).parts)))
