"""Worker processes for the CPU-bound part of a stage's items (decoding, hashing, measuring pixels).

Why: the item loop runs a stage's items on threads, which suits waiting (HTTP, blob reads), but pure-Python and
small-array work holds the GIL, so two threads on two cores do not decode and measure twice as fast. A stage
keeps its threads for the I/O and hands the CPU-bound call to :class:`CpuPool`: the thread waits (releasing the
GIL) while a worker process computes.

Why spawned, not forked: the step process holds DuckDB connections, whose threads a forked child does not have
(DuckDB is not fork-safe: duckdb/duckdb-python#292); a spawned worker starts clean and imports only what the
function it runs needs. The function must therefore be a module-level function with picklable arguments.

Every call has exactly one outcome: its value, the exception it raised (carried back as :class:`WorkerFault`
with the worker's frames, so the item loop's ``internal_error`` names where it was raised), or
:class:`WorkerDied` when the call kills its process (a decoder's segfault). A dead worker breaks the whole pool,
so the calls in flight beside it are run again, each alone in a fresh process: only the call that kills that one
too is at fault, and the pool is replaced for the calls after it.
"""

from __future__ import annotations

import multiprocessing
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

T = TypeVar("T")

_SPAWN = multiprocessing.get_context("spawn")


class WorkerFault(Exception):
    """An exception raised by the function in a worker process, as plain data: its type name, message and frames
    (file, function, line), which the item loop records as it records a local exception's."""

    def __init__(self, type_name: str, message: str, frames: list[tuple[str, str, int]]) -> None:
        super().__init__(type_name, message, frames)
        self.type_name, self.message, self.frames = type_name, message, frames

    def __str__(self) -> str:
        return f"{self.type_name}: {self.message}"


class WorkerDied(Exception):
    """The worker process died while running this call, also when the call was run again alone."""


def _traced(fn: Callable[..., T], args: tuple) -> T:
    """Run in the worker: an exception goes back as a :class:`WorkerFault` (a MemoryError as itself: it is no
    one item's fault)."""
    try:
        return fn(*args)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - carried back whole, decided by the item loop
        frames = [(f.filename, f.name, f.lineno or 0) for f in traceback.extract_tb(exc.__traceback__)[1:]]
        raise WorkerFault(type(exc).__name__, " ".join(str(exc).split())[:500], frames) from None


class CpuPool:
    """``workers`` spawned processes, started on the first call; safe to call from many threads at once."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._executor: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> CpuPool:
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=True, cancel_futures=True)
                self._executor = None

    @property
    def started(self) -> bool:
        """Whether a call has started the worker processes (they start on the first)."""
        return self._executor is not None

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker process; see the module docstring for its outcomes."""
        return self.map(fn, [args])[0]

    def map(self, fn: Callable[..., T], calls: list[tuple]) -> list[T]:
        """``[fn(*args) for args in calls]``, the calls spread over the workers at once (one thread can keep them
        all busy); each call's outcome as :meth:`call`'s, and the first call's exception, in order, is raised."""
        executor = self._current()
        futures = [self._submit(executor, fn, args) for args in calls]
        results = []
        for future, args in zip(futures, calls):
            try:
                if future is None:  # the pool was broken before this call could be sent
                    raise BrokenProcessPool
                results.append(future.result())
            except BrokenProcessPool:
                self._replace(executor)
                results.append(_alone(fn, args))
        return results

    @staticmethod
    def _submit(executor: ProcessPoolExecutor, fn: Callable[..., T], args: tuple) -> Future[T] | None:
        """The call's future, or None when the pool is already broken (a worker died in another thread's call)."""
        try:
            return executor.submit(_traced, fn, args)
        except BrokenProcessPool:
            return None

    def _current(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ProcessPoolExecutor(self.workers, mp_context=_SPAWN)
            return self._executor

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._executor is broken:  # the first thread to see it broken replaces it
                broken.shutdown(wait=False, cancel_futures=True)
                self._executor = None


def _alone(fn: Callable[..., T], args: tuple) -> T:
    """Run a call whose worker died in a process of its own, to tell whether it was the one at fault."""
    with ProcessPoolExecutor(1, mp_context=_SPAWN) as solo:
        try:
            return solo.submit(_traced, fn, args).result()
        except BrokenProcessPool:
            raise WorkerDied(f"the worker process died running {getattr(fn, '__name__', fn)}, also when run alone"
                             " (a crash in native code, e.g. a decoder; no Python traceback)") from None
