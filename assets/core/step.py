"""Recording each asset materialization as a provenance activity.

A step opens its activity in one short transaction, writes its results in batches (each batch
its own transaction, so a crash loses at most the batch in flight and a re-run resumes after
the last committed one), and closes the activity with its status and counts.
"""

from __future__ import annotations

import logging
import socket
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import duckdb
from dagster import AssetExecutionContext, DagsterInstance, DagsterRunStatus, MaterializeResult, MetadataValue, RunsFilter

from assets.core.input_fingerprint import INPUTS_KEY, LEFT_PENDING_KEY, inputs_fingerprint
from assets.core.logic.previews import counts_markdown
from assets.core.materialization import Output, declared_output, describe
from resources.blob_store import BlobStore
from warehouse import rekey
from warehouse.db import Warehouse, insert_rows
from warehouse.ids import entity_id
from warehouse.lineage import (
    ActivityLog,
    Agent,
    Entity,
    abandon_dead_activities,
    abandoned_note,
    finish_activity,
    process_alive,
    start_activity,
    this_process,
    utcnow,
)

# Run tags naming the process that executes a run (set by ``aesforge run``), so a later run can tell a run
# whose process was killed from a live one.
PID_TAG, HOST_TAG, PROCESS_START_TAG = "aesforge/pid", "aesforge/hostname", "aesforge/process_start"


@lru_cache(maxsize=1)
def aesforge_version() -> str:
    try:
        return version("aesforge")
    except PackageNotFoundError:
        return "0+unknown"


@lru_cache(maxsize=1)
def source_revision() -> str | None:
    """The git commit of the running code when it runs from a checkout, so provenance names the exact code."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def software_agent() -> Agent:
    return Agent(
        agent_id=f"software:aesforge@{aesforge_version()}",
        kind="software",
        name="aesforge",
        version=aesforge_version(),
    )


class Step:
    """One execution of one asset, as seen by the warehouse."""

    def __init__(self, warehouse: Warehouse, activity_id: str, asset_key: str, code_version: str = "unversioned",
                 log: logging.Logger | Any | None = None, output: Output | None = None) -> None:
        self.warehouse = warehouse
        self.activity_id = activity_id
        self.asset_key = asset_key
        # The asset's declared code version and aesforge's version (not the git commit): a quarantined item is
        # tried again when either changes, not on every commit.
        self.code_version = code_version
        self.log = log or logging.getLogger(f"aesforge.{asset_key}")
        self.output = output  # what the asset declares it writes (``materialization.writes``)
        self.counts: Counter[str] = Counter()
        self.notes: dict[str, Any] = {}
        self.files: dict[str, Path] = {}  # files the asset's output consists of (exports, sheets, releases), by label
        self.inputs: str | None = None  # digest of its settings and input files (``input_fingerprint``)
        self.left_pending = 0  # items left for a later run (a spent budget, a retryable failure)

    @contextmanager
    def batch(self) -> Iterator[ActivityLog]:
        with self.warehouse.transaction() as con:
            yield ActivityLog(con, self.activity_id)

    def last_inputs(self, con: duckdb.DuckDBPyConnection) -> str | None:
        """The input digest this asset last decided from (read in the caller's transaction, with its inputs)."""
        row = con.execute("SELECT input_digest FROM step_input_state WHERE asset_key = ?", [self.asset_key]).fetchone()
        return None if row is None else row[0]

    def remember_inputs(self, log: ActivityLog, digest: str) -> None:
        """Record what this decision was made from; equal inputs next time mean nothing to redo."""
        insert_rows(
            log.con,
            "step_input_state",
            [{"asset_key": self.asset_key, "input_digest": digest, "activity_id": self.activity_id}],
            conflict="replace",
        )

    def name_of(self, path: str | Path) -> str:
        """How ids and rows name a local file: relative to the warehouse's root (``Warehouse.name_of``)."""
        return self.warehouse.name_of(path)

    def rekey(self, scope: str, renames_of: Callable[[duckdb.DuckDBPyConnection, Path], Mapping[str, str]]) -> None:
        """Re-key ``scope``'s rows written with absolute paths (``warehouse.rekey``), once per warehouse, in one
        transaction of this activity: ``renames_of(con, root)`` says which old names and ids become which."""
        with self.batch() as log:
            if not rekey.pending(log.con, scope):
                return
            renamed = rekey.rename(log.con, renames_of(log.con, self.warehouse.root), self.warehouse.root)
            rekey.finish(log.con, scope, self.activity_id, renamed)
        self.notes.setdefault("rekeyed", {})[scope] = renamed
        self.log.info(f"re-keyed {scope}: {renamed} values written by absolute paths now name files relative to"
                      f" {self.warehouse.root}")

    def read_before(self, path: Path, sha256: str) -> bool:
        """Whether ``path`` (a file, or a folder under a digest of its files) was read to the end with this content."""
        with self.batch() as log:
            row = log.con.execute("SELECT 1 FROM input_file_state WHERE path = ? AND sha256 = ?",
                                  [self.name_of(path), sha256]).fetchall()
        return bool(row)

    def remember_read(self, log: ActivityLog, path: Path, sha256: str) -> None:
        """Record ``path`` (by its name) as read with this content, in the transaction of its last write, so that an
        unchanged copy is skipped next time and a crash before this point reads it again."""
        stat = path.stat() if path.is_file() else None
        insert_rows(log.con, "input_file_state",
                    [{"path": self.name_of(path), "n_bytes": stat.st_size if stat else 0,
                      "mtime_ns": stat.st_mtime_ns if stat else 0, "sha256": sha256, "seen_at": utcnow()}], conflict="replace")

    @staticmethod
    def remember_files(log: ActivityLog, files: list[tuple[str, int, int, str]]) -> None:
        """``remember_read`` for many files whose (name, size, mtime, sha256) the caller already has."""
        now = utcnow()
        insert_rows(log.con, "input_file_state",
                    [{"path": p, "n_bytes": n, "mtime_ns": m, "sha256": s, "seen_at": now} for p, n, m, s in files],
                    conflict="replace")

    def settings_fingerprint(self, name: str, fingerprint: str) -> str:
        """The fingerprint this warehouse was built with for setting ``name``, recording ``fingerprint`` as it when
        none is known yet: a setting that must never change under existing rows (a hashing salt) is checked by it."""
        with self.batch() as log:
            known = log.con.execute("SELECT fingerprint FROM settings_fingerprint WHERE name = ?", [name]).fetchone()
            if known is None:
                insert_rows(log.con, "settings_fingerprint", [{"name": name, "fingerprint": fingerprint, "recorded_at": utcnow()}])
        return fingerprint if known is None else known[0]

    def reject_input(self, stage: str, kind: str, path: Path, sha256: str, reason_code: str, detail: str) -> None:
        """Keep an input file that cannot be read at all as a rejected entity with its reason, so the run can read
        the other inputs and then fail with a row in the warehouse behind the message."""
        entity = entity_id(kind, sha256)
        with self.batch() as log:
            log.entities([Entity(entity, kind, sha256, {"path": self.name_of(path)})])
            log.rejected(stage, [(entity, reason_code, detail)])
        self.counts[f"unreadable:{reason_code}"] += 1

    def summary(self) -> dict[str, Any]:
        """Counts, notes and files (by name) as the activity records them."""
        return {**dict(sorted(self.counts.items())), **self.notes, **{k: self.name_of(p) for k, p in self.files.items()}}

    def result(self, store: BlobStore | None = None, **extra: Any) -> MaterializeResult:
        """The materialization as the Dagster UI shows it: the declared output's row count, column schema, sample rows
        (and thumbnails, read from ``store``, where it has images), the counts as one table, notes, files as paths and
        ``extra``; its data version is the digest of the declared output's rows (``materialization.describe``)."""
        if self.output is None:
            raise ValueError(f"step of {self.asset_key} has no declared output to describe")
        rejected = sum(n for k, n in self.counts.items() if k.startswith("rejected:"))
        return _result(self.warehouse, self.output, self.asset_key, store, {
            "rejected": rejected,
            "counts": MetadataValue.md(counts_markdown(self.counts)),
            **self.notes,
            **{label: MetadataValue.path(str(path)) for label, path in self.files.items()},
            **_rebuild_marks(self.inputs, self.left_pending),
            **extra,
        })


def _result(warehouse: Warehouse, output: Output, asset_key: str, store: BlobStore | None,
            metadata: Mapping[str, Any]) -> MaterializeResult:
    described = describe(warehouse, output, asset_key, store)
    return MaterializeResult(metadata={**described.metadata, **metadata}, data_version=described.data_version)


def unrecorded_result(context: AssetExecutionContext, warehouse: Warehouse, **extra: Any) -> MaterializeResult:
    """``Step.result`` for a materialization that decided before opening a step that it has nothing to do: the declared
    output as it stands (so its data version is unchanged) and ``extra``."""
    return _result(warehouse, _output_of(context), context.asset_key.to_user_string(), None,
                   {**_rebuild_marks(step_inputs(context, warehouse), 0), **extra})


def step_inputs(context: AssetExecutionContext, warehouse: Warehouse) -> str:
    """The digest of what this asset reads from outside the DAG: its resources' settings and the input files they
    name, as ``aesforge run`` computes it before a run to tell whether the step has anything to do."""
    keys = context.assets_def.required_resource_keys
    return inputs_fingerprint({key: getattr(context.resources, key) for key in keys}, warehouse.root)


def _rebuild_marks(inputs: str | None, left_pending: int) -> dict[str, Any]:
    """What ``pipelines.rebuild_plan`` reads back from the materialization."""
    return {INPUTS_KEY: inputs, LEFT_PENDING_KEY: left_pending} if inputs else {}


def _output_of(context: AssetExecutionContext) -> Output:
    return declared_output(context.asset_key.to_user_string(), context.assets_def.metadata_by_key[context.asset_key])


def run_process_tags() -> dict[str, str]:
    process = this_process()
    return {PID_TAG: str(process.pid), HOST_TAG: process.hostname, **({PROCESS_START_TAG: process.start} if process.start else {})}


def close_abandoned(instance: DagsterInstance, warehouse: Warehouse, found_by: str) -> None:
    """Close what killed processes of this host left open: their activities become ``abandoned`` and their
    Dagster runs (those tagged by ``aesforge run``) failed, each with the reason. Runs at the start of every
    run and step, so activities are closed whichever way the run was launched (the UI's own runs are left to
    Dagster's run monitoring); a live concurrent run is untouched."""
    with warehouse.transaction() as con:
        abandon_dead_activities(con, found_by)
    host = socket.gethostname()
    open_runs = RunsFilter(statuses=[DagsterRunStatus.STARTED, DagsterRunStatus.STARTING], tags={HOST_TAG: host})
    for run in instance.get_runs(filters=open_runs):
        pid = int(run.tags[PID_TAG])
        if not process_alive(pid, run.tags.get(PROCESS_START_TAG)):
            instance.report_run_failed(run, f"{abandoned_note(pid, host)} (found by {found_by})")


@contextmanager
def recorded_step(
    context: AssetExecutionContext,
    warehouse: Warehouse,
    parameters: Mapping[str, Any],
    extra_agents: tuple[tuple[Agent, str], ...] = (),
) -> Iterator[Step]:
    """Open an activity for this materialization and close it as success or failed."""
    asset_key = context.asset_key.to_user_string()
    output = _output_of(context)  # before the activity opens: an asset that declares none is a definition error
    code_version = context.assets_def.code_versions_by_key.get(context.asset_key) or "unversioned"
    revision = source_revision()
    full_version = f"aesforge {aesforge_version()}; {asset_key} v{code_version}" + (f"; git {revision}" if revision else "")
    close_abandoned(context.instance, warehouse, f"run {context.run_id}")
    with warehouse.transaction() as con:
        log = start_activity(
            con,
            asset_key=asset_key,
            partition_key=context.partition_key if context.has_partition_key else None,
            run_id=context.run_id,
            code_version=full_version,
            parameters=parameters,
            agents=((software_agent(), "software"), *extra_agents),
        )
    step = Step(warehouse, log.activity_id, asset_key, f"{asset_key} v{code_version}; aesforge {aesforge_version()}",
                context.log, output)
    step.inputs = step_inputs(context, warehouse)  # before the step reads them: a later change shows next run
    try:
        yield step
    except BaseException as exc:
        step.notes["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        with warehouse.transaction() as con:
            finish_activity(con, step.activity_id, "failed", step.summary())
        raise
    with warehouse.transaction() as con:
        finish_activity(con, step.activity_id, "success", step.summary())
