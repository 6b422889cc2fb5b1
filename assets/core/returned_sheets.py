"""Filled sheets handed back by people (audit reviews, design votes, case reviews): which ones to read this run,
and reading them through the item loop.

A sheet is read when it is new or its content changed; an unchanged sheet that was rejected before keeps
failing the run with its recorded problems until it is fixed or removed, so a bad sheet is never silently
ignored. Sheets are recorded by their names (relative to the warehouse's root, ``Step.name_of``), so a moved
project knows its sheets; one that a warehouse written before names were used knows by its absolute path is
renamed in every table before the sheets are compared (``warehouse.rekey.rename``), so it is neither read again
nor recorded twice.
"""

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from assets.core.item_loop import Done, Item, Kept, Outcome, Rejected, run_items
from assets.core.logic.sheets import SheetError
from assets.core.step import Step
from warehouse import rekey
from warehouse.ids import entity_id, sha256_file
from warehouse.lineage import ActivityLog, Entity

# (log, the sheet's name, sha256, rows, blank rows, error)
SheetRecorder = Callable[[ActivityLog, str, str, list[Any], int, SheetError | None], None]
Known = Mapping[str, tuple[str, str, str | None]]


def sheets_to_read(sheets: Mapping[Path, str], known: Known) -> tuple[list[tuple[Path, str, str]], list[str]]:
    """``sheets`` maps each sheet on disk to its name, ``known`` a name to (sha256, status, detail) as last
    recorded. Returns the (path, name, sha256) of every new or changed sheet, and the problems of unchanged
    rejected ones."""
    to_read, standing = [], []
    for path, name in sheets.items():
        sha = sha256_file(path)
        previous = known.get(name)
        if previous and previous[0] == sha:
            if previous[1] == "rejected":
                standing.append(previous[2] or f"{path.name}: rejected")
            continue
        to_read.append((path, name, sha))
    return to_read, standing


def _by_name(step: Step, sheets: Mapping[Path, str], known: Known) -> Known:
    """``known`` keyed by the sheets' names, after renaming those still recorded by absolute path."""
    old = {str(path): name for path, name in sheets.items() if str(path) in known and name not in known}
    if old:
        with step.batch() as log:
            rekey.rename(log.con, old, step.warehouse.root)
    return {old.get(key, key): value for key, value in known.items()}


def ingest_sheets(step: Step, stage: str, kind: str, returned: Path, known: Known,
                  read: Callable[[Path], tuple[list[Any], int]], record: SheetRecorder, count: str,
                  role: str | None = None) -> list[str]:
    """Read every new or changed sheet in ``returned`` as one item of the loop (a batch of one, so each sheet is
    committed before the next is read), whole or not at all; returns the problems of every bad sheet present.

    ``read(path)`` gives (rows, blank rows) or raises a ``SheetError``, which rejects the sheet with its reason.
    Each sheet is recorded as an entity of ``kind`` (named by its content) used by the step (in ``role``, by
    default ``kind``); then ``record(log, name, sha256, rows, blank, error)`` stores its rows under the sheet's
    name (replacing those of its earlier content) and status in the stage's tables, and the loop adds the rejection
    row of a rejected one. Kept sheets are counted under ``count``; a sheet whose reading raises anything else is
    its ``internal_error`` and does not fail the step.
    """
    sheets = {path: step.name_of(path) for path in sorted(returned.glob("*.csv"))} if returned.is_dir() else {}
    to_read, problems = sheets_to_read(sheets, _by_name(step, sheets, known))

    def one_sheet(item: Item[Path]) -> Outcome:
        try:
            rows, blank = read(item.payload)
        except SheetError as error:
            return Rejected(error.reason_code, str(error), value=error)
        return Kept((rows, blank), count=count)

    def write(log: ActivityLog, done: list[Done[Path]]) -> None:
        for one in done:
            rows, blank = one.outcome.value if one.kept else ([], 0)
            log.entities([Entity(one.item.key, kind, one.item.digest, {"path": one.item.locator})])
            log.used([one.item.key], role or kind)
            record(log, one.item.locator, one.item.digest, rows, blank, None if one.kept else one.outcome.value)
            if not one.kept:
                problems.append(one.outcome.detail)

    items = (Item(entity_id(kind, sha), name, sha, path) for path, name, sha in to_read)
    run_items(step, stage, items, one_sheet, write, batch_size=1)
    return problems
