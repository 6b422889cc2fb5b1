"""What a step reads from outside the warehouse, as one digest: its settings and the files they name.

A step's result depends on three things: its code (the code version), the assets it reads (their data
versions, which Dagster records with each materialization) and what lies outside the DAG: the config sections
its resources are built from and the input files and folders they name (manifests, dumps, survey exports,
returned review sheets). This digest covers the third. Each materialization records it, and ``aesforge run``
computes it again before a run: equal digests, code versions and upstream data versions mean the step has
nothing to do, decided without starting it.

Files are compared by name (relative to the project root, so a moved project keeps its digests), size and
modification time: a stat per file, no reading, so the check costs seconds even for a folder of a million
images. Places the pipeline writes to (``OutputPath``: exports, blank sheets) are left out; so are the
warehouse and blob store, which are locations, not inputs.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from resources.config_paths import marked_paths

INPUTS_KEY = "aesforge/inputs"
"""Materialization metadata: the digest this step was built from."""
LEFT_PENDING_KEY = "aesforge/left_pending"
"""Materialization metadata: items the step left for a later run (a spent budget, a retryable failure)."""
NOT_INPUTS = frozenset({"warehouse", "blob_store", "io_manager"})
"""Resource keys that say where data is kept, not what a step computes from."""


def inputs_fingerprint(resources: Mapping[str, Any], root: str | Path) -> str:
    """The digest of ``resources``' settings (those that are settings models, by key, minus ``NOT_INPUTS``) and of
    the input files their path fields name, with paths under ``root`` written relative to it."""
    root = str(Path(root))
    digest = hashlib.sha256()
    for key in sorted(set(resources) - NOT_INPUTS):
        settings = resources[key]
        if not isinstance(settings, BaseModel):
            continue
        values = json.dumps(_relative_paths(settings.model_dump(mode="json"), root), sort_keys=True, default=str)
        digest.update(f"{key}\0{values}\0".encode())
        for path in sorted(set(input_paths(settings))):
            for name, size, mtime in _stat_tree(Path(path)):
                digest.update(f"{_relative(name, root)}\0{size}\0{mtime}\0".encode())
    return digest.hexdigest()


def input_paths(settings: BaseModel) -> Iterator[str]:
    """Every path ``settings`` marks as read (``PathField`` without ``output``)."""
    return (path for path, mark in marked_paths(settings) if not mark.output)


def _stat_tree(path: Path) -> Iterator[tuple[str, int, int]]:
    """(path, size, mtime_ns) of ``path``, or of every file under it, in name order; an absent path as (path, -1, 0)."""
    try:
        stat = path.stat()
    except OSError:
        yield str(path), -1, 0
        return
    if not path.is_dir():
        yield str(path), stat.st_size, stat.st_mtime_ns
        return
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(folder, name)
            try:
                entry = os.stat(full)
            except OSError:
                continue
            yield full, entry.st_size, entry.st_mtime_ns


def _relative(name: str, root: str) -> str:
    return os.path.relpath(name, root)


def _relative_paths(value: Any, root: str) -> Any:
    """``value`` (a settings dump) with every absolute path relative to ``root``."""
    if isinstance(value, str):
        return _relative(value, root) if os.path.isabs(value) else value
    if isinstance(value, list):
        return [_relative_paths(item, root) for item in value]
    if isinstance(value, dict):
        return {key: _relative_paths(item, root) for key, item in value.items()}
    return value
