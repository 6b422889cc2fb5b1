"""Writing a file the pipeline derives from its rows (a report page, a plot, a preview sheet).

The same content leaves the file untouched, its modification time too, so a re-run that changed nothing touches
nothing (and whatever reads the file sees no change); new content is written beside it and swapped in, so a
reader never sees half a file.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically unless the file already holds exactly it; whether it was written."""
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)
    return True
