"""Functions the worker-process tests run in spawned workers; this module imports nothing heavy, so a worker
starts in a fraction of a second."""

import os
import signal


def square_or_fail(value: int) -> int:
    """Kills its own process on -1 (a native crash), raises on -2, else squares."""
    if value == -1:
        os.kill(os.getpid(), signal.SIGKILL)
    if value == -2:
        raise ValueError(f"cannot square {value}")
    return value * value


def worker_pid(_: int) -> int:
    return os.getpid()
