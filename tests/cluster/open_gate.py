"""A gate in front of one file, for Dask worker processes of the cluster tests (loaded as a worker preload).

Why: a test that kills the worker reading a file must know that the read is under way and in which process.
The gate is a Python audit hook (``sys.addaudithook``): every open of the watched file by a worker is logged,
and, while the gate is armed, the first such open stops its thread until the gate is released, so the test can
kill that worker with the file open. Nothing else changes: the file is an ordinary file, read whole by every
reader (several readers at once included: Dask may still run a task whose client went away beside the task
that replaced it), and a worker that opens other files pays one string comparison per open.

The test names the gate's folder in ``AESFORGE_TEST_OPEN_GATE`` before the workers start; the folder holds the
watched path (``watched``), ``armed`` while armed, ``held-<pid>`` once a reader is held, ``released`` to let
it go, and ``opens`` (one line per open, with the reader's pid).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

GATE_ENV = "AESFORGE_TEST_OPEN_GATE"
_installed = False


class OpenGate:
    """The test's side of the gate: a folder the workers' hook reads and writes."""

    def __init__(self, folder: Path, watched: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "watched").write_text(os.path.realpath(watched))
        (folder / "opens").touch()

    def arm(self) -> None:
        """The next open of the file is held until ``release()``."""
        (self.folder / "released").unlink(missing_ok=True)
        (self.folder / "armed").touch()

    def held(self) -> int | None:
        """The pid of the worker held at the gate, if one is."""
        held = [name for name in os.listdir(self.folder) if name.startswith("held-")]
        return int(held[0].removeprefix("held-")) if held else None

    def release(self) -> None:
        (self.folder / "armed").unlink(missing_ok=True)
        for name in os.listdir(self.folder):
            if name.startswith("held-"):
                (self.folder / name).unlink(missing_ok=True)
        (self.folder / "released").touch()

    @property
    def opens(self) -> int:
        """How many times workers have opened the file."""
        return len((self.folder / "opens").read_text().splitlines())


def _hook(folder: str, watched: str):
    name = os.path.basename(watched)

    def hook(event: str, args: tuple) -> None:
        if event != "open" or not args:
            return
        path = args[0]
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path).endswith(name):
            return
        if os.path.realpath(path) != watched:
            return
        fd = os.open(os.path.join(folder, "opens"), os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)
        try:  # only one reader claims an armed gate
            os.rename(os.path.join(folder, "armed"), os.path.join(folder, f"held-{os.getpid()}"))
        except FileNotFoundError:
            return
        while not os.path.exists(os.path.join(folder, "released")):
            time.sleep(0.01)

    return hook


def dask_setup(worker: object) -> None:
    """Dask's preload entry point: installs the hook once per worker process, where the test asked for a gate."""
    global _installed
    folder = os.environ.get(GATE_ENV)
    if _installed or not folder:
        return
    watched = Path(folder, "watched").read_text()
    sys.addaudithook(_hook(folder, watched))
    _installed = True
