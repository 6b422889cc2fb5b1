"""Installing a freshly built sample over the previous one without touching what did not change.

The sample is built in a scratch folder beside its destination, then synced: a file is replaced only when its
bytes differ, files the new build lacks are removed, and unchanged files keep their modification times. So a
second ``make demo`` leaves every input exactly as the first run read it, and ``aesforge run`` finds nothing to do.
"""

from __future__ import annotations

import filecmp
import os
import shutil
from pathlib import Path


def sync_tree(built: Path, target: Path) -> dict[str, int]:
    """Make ``target`` hold exactly ``built``'s files; counts of files written, kept and removed."""
    counts = {"written": 0, "kept": 0, "removed": 0}
    target.mkdir(parents=True, exist_ok=True)
    wanted: set[Path] = set()
    for folder, dirs, files in os.walk(built):
        dirs.sort()
        relative = Path(folder).relative_to(built)
        (target / relative).mkdir(parents=True, exist_ok=True)
        for name in sorted(files):
            source, destination = Path(folder) / name, target / relative / name
            wanted.add(relative / name)
            if destination.is_file() and filecmp.cmp(source, destination, shallow=False):
                counts["kept"] += 1
                continue
            if destination.is_dir():
                shutil.rmtree(destination)
            os.replace(source, destination)
            counts["written"] += 1
    for folder, dirs, files in os.walk(target, topdown=False):
        relative = Path(folder).relative_to(target)
        for name in files:
            if relative / name not in wanted:
                (Path(folder) / name).unlink()
                counts["removed"] += 1
        if folder != str(target) and not any(Path(folder).iterdir()) and not (built / relative).is_dir():
            Path(folder).rmdir()
    return counts
