"""The one per-item loop every stage runs its items through.

A stage supplies what is specific to it: the items it has pending (an iterable of :class:`Item`), a function
from one item to its :class:`Outcome` (:class:`Kept` with the stage's data, or :class:`Rejected` with a reason
code and a detail), and a writer that stores a batch of outcomes in the stage's own tables. The loop owns the
rest, the same way for every stage (after datatrove's ``PipelineStep.run``):

- **batching and commits**: outcomes are written ``batch_size`` at a time, each batch in one warehouse
  transaction, so a crash loses at most the batch in flight and the stage's own "pending" query resumes after
  the last committed one;
- **rejection rows**: every :class:`Rejected` outcome becomes a ``rejection`` row (stage, reason, detail) for
  the item's entity, written with the batch;
- **fault isolation**: an unexpected exception while processing one item (or while writing it) makes that item
  ``internal_error`` — exception type, message, the function that raised and a digest of the traceback in the
  detail — logs one warning naming the item and where it came from, and the loop goes on;
- **quarantine**: such an item is recorded in ``item_quarantine`` with its input digest and the stage's code
  version, and later runs skip it until either changes (so one bad item costs nothing on every re-run);
- **counts** for the Dagster metadata and the activity summary: kept items under their ``count`` label,
  rejections as ``rejected:<reason>``, quarantined items skipped as ``quarantined``;
- **progress** of a long step: items done of the total (when known), rate and ETA in the step's log at most every
  ten seconds and at the end (``assets/core/logic/progress.py``), and a bar when stderr is a terminal.

Only whole-step causes escape the loop: :class:`StepError` (and Dagster's ``Failure``) raised by the stage, a
full disk, a warehouse I/O error, running out of memory. Those fail the step and say which.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import duckdb
import pandas as pd
from dagster import Failure
from tqdm import tqdm

from assets.core.logic.iteration import batched
from assets.core.logic.progress import Progress
from assets.core.step import Step
from assets.core.worker_processes import WorkerFault
from warehouse.db import Warehouse, WarehouseUnavailable, insert_rows, registered
from warehouse.lineage import ActivityLog, Entity, utcnow

P = TypeVar("P")

INTERNAL_ERROR = "internal_error"
_WHOLE_STEP_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


class StepError(Exception):
    """A cause that concerns the whole step (its input folder is gone, a blocking condition): fails the step."""


class StopItems(Exception):
    """Raised by a stage's item function to stop taking new items cleanly (a call budget is spent): the items
    already done are written, the rest stay pending for the next run, and the step succeeds."""


@dataclass(frozen=True)
class Item(Generic[P]):
    """One unit of a stage's work.

    ``key`` is the entity id the outcome is about (``rejection.entity_id``); ``locator`` says where the item came
    from (``file#line=N``, a URL, an id) for warnings and details; ``digest`` fingerprints what the item function
    reads, so a quarantined item is tried again once it changes. ``also`` names further entities that share the
    item's outcome (records that point at one URL share its fetch): they get the same rejection rows.
    """

    key: str
    locator: str
    digest: str
    payload: P
    also: tuple[str, ...] = ()

    @property
    def entities(self) -> tuple[str, ...]:
        return (self.key, *self.also)


@dataclass(frozen=True)
class Kept:
    value: Any = None
    count: str = "kept"


@dataclass(frozen=True)
class Rejected:
    """A decided rejection. ``value`` is whatever the stage still stores for the item (its decision row)."""

    reason_code: str
    detail: str
    retryable: bool = False
    value: Any = None


Outcome = Kept | Rejected


@dataclass(frozen=True)
class Done(Generic[P]):
    item: Item[P]
    outcome: Outcome

    @property
    def kept(self) -> bool:
        return isinstance(self.outcome, Kept)


@dataclass(frozen=True)
class _Fault:
    """An unexpected exception, turned into data so it can be recorded like any other outcome."""

    error_type: str
    detail: str
    traceback: str


def is_whole_step_error(exc: BaseException) -> bool:
    """Exceptions that no single item caused: the step must stop and say so, not quarantine every item."""
    if isinstance(exc, (StepError, StopItems, Failure, MemoryError, WarehouseUnavailable, duckdb.IOException,
                        duckdb.FatalException)):
        return True
    return isinstance(exc, OSError) and exc.errno in _WHOLE_STEP_ERRNOS


def fault_of(exc: BaseException, phase: str) -> _Fault:
    if isinstance(exc, WorkerFault):  # raised in a worker process: its own frames say where
        type_name, text, frames = exc.type_name, exc.message, exc.frames
    else:
        type_name, text = type(exc).__name__, str(exc)
        frames = [(f.filename, f.name, f.lineno or 0) for f in traceback.extract_tb(exc.__traceback__)]
    where = f"{_module_of(frames[-1][0])}.{frames[-1][1]}" if frames else "?"
    lines = [f"{_module_of(file)}:{name}:{line}" for file, name, line in frames]
    digest = hashlib.sha256("\n".join(f"{_module_of(file)}:{name}" for file, name, _ in frames).encode()).hexdigest()[:12]
    message = " ".join(text.split())[:500]
    detail = f"{type_name}: {message} (while {phase}, raised in {where}; traceback {digest})"
    return _Fault(type_name, detail, "\n".join(lines[-20:]))


def _module_of(filename: str) -> str:
    """``…/assets/lib/images.py`` → ``assets.image_pool.logic.images``, by the import root it was loaded from, so a digest is
    the same whatever folder the checkout or the virtualenv sits in."""
    path = os.path.abspath(filename)
    for root in sorted({os.path.abspath(p or ".") for p in sys.path}, key=len, reverse=True):
        if path.startswith(root + os.sep):
            return path[len(root) + 1:].removesuffix(".py").replace(os.sep, ".")
    return os.path.basename(path).removesuffix(".py")


class ItemLoop(Generic[P]):
    """Runs one stage's items: process each, write outcomes in batches, isolate faults, skip quarantined items.

    ``process`` is the stage's per-item function (pure where it can be). ``write(log, done)`` stores a batch of
    outcomes (both kept and rejected) in the stage's tables inside the batch's transaction; the loop adds the
    ``rejection`` rows itself unless ``record_rejections`` is False (for a stage whose rejection rows name other
    entities). ``workers`` > 1 processes a batch on a thread pool (order of outcomes is kept). ``finish`` is an
    optional batch step between the two, outside the transaction, for work that is cheaper per batch (a model's
    forward pass): it maps the batch's kept outcomes to new outcomes; should it fail on a batch it is run item by
    item, so only the item it fails on becomes ``internal_error``. ``before_write`` runs before each batch is
    written, outside the fault isolation (a write-behind call log's flush: the batch's rows then name only logged
    calls, and a log that cannot be written fails the step). ``total`` is how many items the stage will hand over,
    for the progress lines' ETA, when it knows and they are not a sized collection (whose ``len`` is used).
    """

    def __init__(
        self,
        step: Step,
        stage: str,
        process: Callable[[Item[P]], Outcome],
        write: Callable[[ActivityLog, list[Done[P]]], None],
        *,
        batch_size: int = 256,
        workers: int = 1,
        record_rejections: bool = True,
        log: logging.Logger | Any | None = None,
        finish: Callable[[list[Done[P]]], list[Outcome]] | None = None,
        before_write: Callable[[], None] | None = None,
        total: int | None = None,
    ) -> None:
        self.step = step
        self.stage = stage
        self.process = process
        self.write = write
        self.batch_size = max(1, batch_size)
        self.workers = max(1, workers)
        self.record_rejections = record_rejections
        self.log = log or step.log
        self.finish = finish
        self.before_write = before_write
        self.total = total
        self.stopped: str | None = None
        self._progress: _Reporting | None = None

    def run(self, items: Iterable[Item[P]]) -> None:
        """Process ``items`` (read lazily) to the end, or until the stage raises :class:`StopItems`.

        With workers, items are handed to the pool as workers free up, up to two batches ahead of the oldest
        unwritten one, and written in the order they were read: a batch's slowest item never idles the other
        workers, and the warehouse connection lingers between the many small transactions (model-call claims and
        logs, batch commits) instead of being opened for each."""
        known = self._load_quarantine()
        total = self.total if self.total is not None or not isinstance(items, Sized) else len(items)
        self._progress = _Reporting(self.stage, total, self.log)
        try:
            with self.step.warehouse.lingering():
                if self.workers > 1:
                    self._run_pooled(items, known)
                else:
                    self._run_serial(items, known)
        finally:
            self._progress.close()
        if self.stopped:
            self.step.notes[f"{self.stage}_stopped"] = f"{self.stopped}; finished work is saved, the next run continues"
            self.step.left_pending += 1  # at least one item was not reached: the step is not up to date

    def _todo(self, items: Iterable[Item[P]], known: dict[str, tuple[str, str]]) -> Iterator[tuple[list[Item[P]], set[str]]]:
        """Per chunk of ``batch_size`` read items: those to process (one per key, quarantined ones skipped), and the
        keys quarantined before (released once they get an outcome)."""
        for read in batched(items, self.batch_size):
            chunk = list(items_by_key(read).values())  # one outcome per key
            skipped, earlier = self._quarantined(chunk, known)
            if skipped:
                self.step.counts["quarantined"] += len(skipped)
            todo = [item for item in chunk if item.key not in skipped]
            self._progress.advance(len(read) - len(todo))  # skipped and repeated items are done as read
            yield todo, earlier

    def _run_serial(self, items: Iterable[Item[P]], known: dict[str, tuple[str, str]]) -> None:
        for todo, earlier in self._todo(items, known):
            done = []
            for item in todo:
                if (result := self._safe_process(item)) is not None:
                    done.append((item, result))
                self._progress.advance(1)
            self._commit(self._finished(done), earlier)
            if self.stopped:
                return

    def _run_pooled(self, items: Iterable[Item[P]], known: dict[str, tuple[str, str]]) -> None:
        window: deque[tuple[Item[P], Future]] = deque()
        retried: set[str] = set()
        done: list[tuple[Item[P], Outcome | _Fault]] = []
        ahead = 2 * max(self.batch_size, self.workers)

        def take_oldest() -> None:
            item, future = window.popleft()
            result = future.result()
            self._progress.advance(1)
            if result is not None:
                done.append((item, result))
            if len(done) >= self.batch_size:
                flush()

        def flush() -> None:
            batch, earlier = list(done), {item.key for item, _ in done if item.key in retried}
            done.clear()
            self._commit(self._finished(batch), earlier)

        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix=self.stage) as executor:
            try:
                for todo, earlier in self._todo(items, known):
                    retried |= earlier
                    for item in todo:
                        if self.stopped:
                            break
                        window.append((item, executor.submit(self._safe_process, item)))
                        while len(window) >= ahead or (window and window[0][1].done()):
                            take_oldest()
                    if self.stopped:
                        break
                while window:
                    take_oldest()
                flush()
            finally:
                for _, future in window:  # a whole-step error: nothing more is started
                    future.cancel()

    # -- per item ------------------------------------------------------------------------------------------
    def _safe_process(self, item: Item[P]) -> Outcome | _Fault | None:
        if self.stopped:
            return None
        try:
            return self.process(item)
        except StopItems as stop:
            self.stopped = str(stop) or "stopped"
            return None
        except Exception as exc:  # noqa: BLE001 - the point of the loop: one item never fails the step
            if is_whole_step_error(exc):
                raise
            return fault_of(exc, f"processing {item.locator}")

    # -- per batch -----------------------------------------------------------------------------------------
    def _finished(self, done: list[tuple[Item[P], Outcome | _Fault]]) -> list[tuple[Item[P], Outcome | _Fault]]:
        kept = [Done(item, result) for item, result in done if isinstance(result, Kept)]
        if self.finish is None or not kept:
            return done
        try:
            finished = list(self.finish(kept))
        except Exception as exc:  # noqa: BLE001
            if is_whole_step_error(exc):
                raise
            if len(kept) > 1:
                finished = [self._finished([(d.item, d.outcome)])[0][1] for d in kept]
            else:
                finished = [fault_of(exc, f"finishing {kept[0].item.locator}")]
        by_key = {d.item.key: outcome for d, outcome in zip(kept, finished)}
        return [(item, by_key.get(item.key, result)) for item, result in done]

    def _commit(self, done: list[tuple[Item[P], Outcome | _Fault]], retried: set[str]) -> None:
        """Write a batch in one transaction; if the stage's writer fails on it, write item by item so only the
        item whose rows cannot be written becomes ``internal_error``."""
        if not done:
            return
        if self.before_write is not None:  # outside the fault isolation: what fails here fails the step
            self.before_write()
        try:
            self._write(done, retried)
        except Exception as exc:  # noqa: BLE001
            if is_whole_step_error(exc):
                raise
            if len(done) > 1:
                for one in done:
                    self._commit([one], retried)
                return
            item = done[0][0]
            done = [(item, fault_of(exc, f"writing {item.locator}"))]
            self._write(done, retried)
        for item, result in done:
            self._count(item, result)

    def _write(self, done: list[tuple[Item[P], Outcome | _Fault]], retried: set[str]) -> None:
        """One batch's transaction, its seconds (waiting for the warehouse lock included) added to the step's
        ``commit_seconds`` note: the committer's share of a run's wall time."""
        started = time.perf_counter()
        try:
            self._write_batch(done, retried)
        finally:
            spent = self.step.notes.get("commit_seconds", 0.0) + time.perf_counter() - started
            self.step.notes["commit_seconds"] = round(spent, 4)

    def _write_batch(self, done: list[tuple[Item[P], Outcome | _Fault]], retried: set[str]) -> None:
        outcomes = [Done(item, result) for item, result in done if not isinstance(result, _Fault)]
        faults = [(item, result) for item, result in done if isinstance(result, _Fault)]
        with self.step.batch() as log:
            if outcomes:
                self.write(log, outcomes)
            if self.record_rejections:
                for retryable in (False, True):
                    log.rejected(self.stage, [(entity, d.outcome.reason_code, d.outcome.detail) for d in outcomes
                                              if isinstance(d.outcome, Rejected) and d.outcome.retryable is retryable
                                              for entity in d.item.entities], retryable=retryable)
            if faults:
                self._quarantine(log, faults)
            healed = [entity for d in outcomes if d.item.key in retried for entity in d.item.entities]
            if healed:
                self._release(log, healed)

    def _quarantine(self, log: ActivityLog, faults: list[tuple[Item[P], _Fault]]) -> None:
        now = utcnow()
        log.entities(Entity(item.key, item.key.split(":", 1)[0], attributes={"locator": item.locator}) for item, _ in faults)
        log.rejected(self.stage, [(entity, INTERNAL_ERROR, f"{item.locator}: {fault.detail}")
                                  for item, fault in faults for entity in item.entities])
        insert_rows(log.con, "item_quarantine", [
            {"stage": self.stage, "item_key": item.key, "asset_key": self.step.asset_key, "locator": item.locator,
             "input_digest": item.digest, "code_version": self.step.code_version, "error_type": fault.error_type,
             "detail": fault.detail, "traceback": fault.traceback, "activity_id": log.activity_id, "recorded_at": now}
            for item, fault in faults
        ], conflict="replace")
        for item, fault in faults:
            self.log.warning(f"{self.stage}: {item.locator}: internal_error, quarantined: {fault.detail}")

    def _release(self, log: ActivityLog, keys: list[str]) -> None:
        """An item that was quarantined has now been decided: its internal_error rejection and quarantine go."""
        with registered(log.con, "_aesforge_released", pd.DataFrame({"item_key": keys})):
            log.con.execute("DELETE FROM item_quarantine WHERE stage = ? AND item_key IN (SELECT item_key FROM _aesforge_released)",
                            [self.stage])
            log.con.execute("DELETE FROM rejection WHERE stage = ? AND reason_code = ? AND entity_id IN"
                            " (SELECT item_key FROM _aesforge_released)", [self.stage, INTERNAL_ERROR])

    def _count(self, item: Item[P], result: Outcome | _Fault) -> None:
        if isinstance(result, Kept):
            self.step.counts[result.count] += 1
        elif isinstance(result, Rejected):
            self.step.counts[f"rejected:{result.reason_code}"] += 1
            self.step.left_pending += result.retryable  # tried again by the next run, so that run has work to do
        else:
            self.step.counts[f"rejected:{INTERNAL_ERROR}"] += 1

    # -- quarantine lookup ---------------------------------------------------------------------------------
    def _load_quarantine(self) -> dict[str, tuple[str, str]]:
        """The stage's quarantined items, read once per run (they are the few items that faulted, not its work)."""
        with self.step.batch() as log:
            rows = log.con.execute("SELECT item_key, input_digest, code_version FROM item_quarantine WHERE stage = ?",
                                   [self.stage]).fetchall()
        return {key: (digest, code) for key, digest, code in rows}

    def _quarantined(self, chunk: Sequence[Item[P]], known: dict[str, tuple[str, str]]) -> tuple[set[str], set[str]]:
        """(keys of ``chunk`` still quarantined under the same input and code: skipped; keys quarantined under
        any input or code: released once they get an outcome)."""
        earlier = {item.key for item in chunk if item.key in known}
        skipped = {item.key for item in chunk if known.get(item.key) == (item.digest, self.step.code_version)}
        return skipped, earlier


class _Reporting:
    """One run's progress, told twice: throttled lines in the step's log (kept with the run), and a bar on stderr
    when that is a terminal (a person watching), never in a log file or a CI transcript."""

    def __init__(self, stage: str, total: int | None, log: logging.Logger | Any) -> None:
        self.stage = stage
        self.log = log
        self.progress = Progress(total)
        self.bar = tqdm(total=total, desc=stage, unit="item", file=sys.stderr, leave=False) if sys.stderr.isatty() else None

    def advance(self, n: int) -> None:
        if n <= 0:
            return
        if self.bar is not None:
            self.bar.update(n)
        snapshot = self.progress.advance(n)
        if snapshot is not None:
            self.log.info(snapshot.describe(self.stage))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        snapshot = self.progress.finish()
        if snapshot is not None:
            self.log.info(snapshot.describe(self.stage))


def items_by_key(chunk: Sequence[Item[P]]) -> dict[str, Item[P]]:
    """The chunk's items by key, in order; a key listed twice keeps its first item."""
    by_key: dict[str, Item[P]] = {}
    for item in chunk:
        by_key.setdefault(item.key, item)
    return by_key


def run_items(
    step: Step,
    stage: str,
    items: Iterable[Item[P]],
    process: Callable[[Item[P]], Outcome],
    write: Callable[[ActivityLog, list[Done[P]]], None],
    **options: Any,
) -> ItemLoop[P]:
    """Convenience: build an :class:`ItemLoop` and run it over ``items``; returns the loop (``stopped`` tells
    whether the stage stopped early)."""
    loop = ItemLoop(step, stage, process, write, **options)
    loop.run(items)
    return loop


RETRY_REQUESTED = "retry requested"


def release_quarantine(log: ActivityLog, stage: str, except_in: str) -> None:
    """Drop a stage's quarantine rows for items it no longer has (``except_in``: a SELECT of the item keys it
    still has): with no input left, there is nothing to try again."""
    log.con.execute(f"DELETE FROM item_quarantine WHERE stage = ? AND item_key NOT IN ({except_in})", [stage])


def request_retry(wh: Warehouse, stage: str | None = None) -> int:
    """Let the next runs try quarantined items again (all, or one stage's), as a changed input would: their
    quarantine rows stay until they get an outcome, so a success still withdraws their ``internal_error``."""
    where, params = ("WHERE stage = ?", [stage]) if stage else ("", [])
    with wh.transaction() as con:
        (n,) = con.execute(f"SELECT count(*) FROM item_quarantine {where}", params).fetchone()
        con.execute(f"UPDATE item_quarantine SET code_version = ? {where}", [RETRY_REQUESTED, *params])
    return n
