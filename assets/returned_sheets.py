"""Filled sheets handed back by people (audit reviews, design votes): which ones to read this run.

A sheet is read when it is new or its content changed; an unchanged sheet that was rejected before keeps
failing the run with its recorded problems until it is fixed or removed, so a bad sheet is never silently
ignored.
"""

from collections.abc import Mapping
from pathlib import Path

from warehouse.ids import sha256_file


def sheets_to_read(returned: Path, known: Mapping[str, tuple[str, str, str | None]]) -> tuple[list[tuple[Path, str]], list[str]]:
    """``known`` maps a sheet path to (sha256, status, detail) as last recorded. Returns the (path, sha256)
    of every new or changed ``*.csv`` in ``returned``, and the problems of unchanged rejected ones."""
    to_read, standing = [], []
    for path in sorted(returned.glob("*.csv")) if returned.is_dir() else []:
        sha = sha256_file(path)
        previous = known.get(str(path))
        if previous and previous[0] == sha:
            if previous[1] == "rejected":
                standing.append(previous[2] or f"{path.name}: rejected")
            continue
        to_read.append((path, sha))
    return to_read, standing
