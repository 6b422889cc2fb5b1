"""How far a long step has got: items done of the total, the rate and the time left, and when to say so.

Pure (the clock is passed in), so the arithmetic and the throttling are tested without waiting; the item loop
(``assets/core/item_loop.py``) feeds it and writes the lines it returns to the step's log.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

LOG_EVERY_S = 10.0
"""At most one progress line per this many seconds: enough to see a step move, few enough to read the log."""


@dataclass(frozen=True)
class Snapshot:
    """Where a step stands: ``done`` of ``total`` items (None: not known in advance) after ``elapsed_s``."""

    done: int
    total: int | None
    elapsed_s: float

    @property
    def rate(self) -> float | None:
        """Items per second since the start; None before any time has passed."""
        return self.done / self.elapsed_s if self.elapsed_s > 0 else None

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the rate so far; None without a total or a rate (nothing done yet)."""
        rate = self.rate
        if self.total is None or not rate:
            return None
        return max(self.total - self.done, 0) / rate

    def describe(self, stage: str) -> str:
        """One log line, e.g. ``fetch: 120/500 items (24%), 12.0 items/s, ETA 0:00:31``."""
        if self.total:
            done = f"{self.done}/{self.total} items ({100 * self.done // self.total}%)"
        else:
            done = f"{self.done} items"
        rate, eta = self.rate, self.eta_s
        parts = [f"{stage}: {done}", f"{rate:.1f} items/s" if rate is not None else None,
                 f"ETA {clock_time(eta)}" if eta is not None and self.done < (self.total or 0) else None,
                 f"took {clock_time(self.elapsed_s)}" if self.total is not None and self.done >= self.total else None]
        return ", ".join(part for part in parts if part)


def clock_time(seconds: float) -> str:
    """``H:MM:SS``, the way a person reads a duration of a few seconds to a few hours."""
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class Progress:
    """Counts done items and says when a progress line is due: at most every ``every_s`` seconds while running,
    and once at the end if the step ran long enough to have been worth a line at all (a short step stays quiet)."""

    def __init__(self, total: int | None, clock: Callable[[], float] = time.monotonic, every_s: float = LOG_EVERY_S) -> None:
        self.total = total
        self.clock = clock
        self.every_s = every_s
        self.done = 0
        self.started = clock()
        self._last = self.started

    def snapshot(self) -> Snapshot:
        return Snapshot(self.done, self.total, self.clock() - self.started)

    def advance(self, n: int = 1) -> Snapshot | None:
        """Count ``n`` more items done; the snapshot to report when a line is due, else None."""
        self.done += n
        now = self.clock()
        if now - self._last < self.every_s:
            return None
        self._last = now
        return Snapshot(self.done, self.total, now - self.started)

    def finish(self) -> Snapshot | None:
        """The closing snapshot, or None for a step shorter than one reporting interval."""
        snapshot = self.snapshot()
        return snapshot if snapshot.elapsed_s >= self.every_s else None
