"""Which assets a run must build, decided before it starts, so a run with nothing to do costs next to nothing.

An asset is up to date when its last materialization finished and recorded the same code version it has now
(``assets.core.code_versions``), the same digest of its settings and input files (``aesforge/inputs``,
``assets.core.input_fingerprint``), no items left for a later run (``aesforge/left_pending``: a spent call budget,
a transient failure to retry), and, for every parent, the data version the parent has now; and no parent is
rebuilt in this run. Everything else is built, each with the reason, in dependency order. These are the
conditions under which every aesforge step would find its inputs unchanged and skip them item by item, checked
here without starting a process for the step.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from dagster import AssetKey, DagsterInstance

from assets.core.input_fingerprint import INPUTS_KEY, LEFT_PENDING_KEY


REBUILT_FIRST = " is rebuilt first"


@dataclass(frozen=True)
class LastBuild:
    """What an asset's latest materialization recorded (and whether a later attempt failed to materialize)."""

    code_version: str | None
    data_version: str | None
    input_data_versions: Mapping[AssetKey, str | None] = field(default_factory=dict)
    inputs: str | None = None
    left_pending: int = 0
    unfinished: bool = False


def rebuild_reasons(
    order: Iterable[AssetKey],
    parents: Mapping[AssetKey, Iterable[AssetKey]],
    code_versions: Mapping[AssetKey, str | None],
    fingerprints: Mapping[AssetKey, str],
    last: Mapping[AssetKey, LastBuild | None],
) -> dict[AssetKey, str]:
    """Why each asset of ``order`` (its keys in dependency order) must be built; the ones absent are up to date."""
    reasons: dict[AssetKey, str] = {}
    for key in order:
        built = last.get(key)
        reason = _own_reason(built, code_versions.get(key), fingerprints.get(key))
        for parent in sorted(parents.get(key, ())) if reason is None and built is not None else ():
            upstream = last.get(parent)
            if parent in reasons:
                reason = f"{parent.to_user_string()}{REBUILT_FIRST}"
            elif upstream is not None and built.input_data_versions.get(parent) != upstream.data_version:
                reason = f"{parent.to_user_string()} changed since it was built"
            if reason:
                break
        if reason:
            reasons[key] = reason
    return reasons


def _own_reason(built: LastBuild | None, code_version: str | None, fingerprint: str | None) -> str | None:
    if built is None:
        return "never built"
    if built.unfinished:
        return "its last attempt did not finish"
    if built.code_version != code_version:
        return f"its code changed ({built.code_version} -> {code_version})"
    if built.inputs != fingerprint:
        return "its settings or input files changed" if built.inputs else "no record of its inputs"
    if built.left_pending:
        return f"{built.left_pending} item(s) were left for a later run"
    return None


def last_builds(instance: DagsterInstance, keys: Iterable[AssetKey],
                partitions: Mapping[AssetKey, Sequence[str]] | None = None) -> dict[AssetKey, LastBuild | None]:
    """Each asset's :class:`LastBuild`, read from the instance's asset records (one query), None if never built. The
    data version of a partitioned asset (``partitions``: its keys) is the one Dagster records for a reader of all its
    partitions: the sha256 of their latest data versions in key order."""
    from dagster._core.definitions.data_version import extract_data_provenance_from_entry, extract_data_version_from_entry

    builds: dict[AssetKey, LastBuild | None] = dict.fromkeys(keys)
    for record in instance.get_asset_records(list(builds)):
        entry = record.asset_entry
        event = entry.last_materialization
        if event is None or event.asset_materialization is None:
            continue
        provenance = extract_data_provenance_from_entry(event)
        version = extract_data_version_from_entry(event)
        metadata = event.asset_materialization.metadata
        inputs, pending = metadata.get(INPUTS_KEY), metadata.get(LEFT_PENDING_KEY)
        builds[entry.asset_key] = LastBuild(
            code_version=provenance.code_version if provenance else None,
            data_version=_partitions_version(instance, entry.asset_key, partitions[entry.asset_key])
            if entry.asset_key in (partitions or {}) else version.value if version else None,
            input_data_versions={key: v.value for key, v in provenance.input_data_versions.items()} if provenance else {},
            inputs=getattr(inputs, "value", None),
            left_pending=int(getattr(pending, "value", 0) or 0),
            unfinished=(entry.last_planned_materialization_storage_id or 0) > (entry.last_materialization_storage_id or 0),
        )
    return builds


def first_wave(order: Iterable[AssetKey], parents: Mapping[AssetKey, Iterable[AssetKey]],
               reasons: Mapping[AssetKey, str]) -> list[AssetKey]:
    """The assets to build now: those with a reason of their own (not merely a parent being rebuilt) and no such
    waiting asset upstream of them. The others wait for the plan to be made again once these are built: a parent
    rebuilt with the same content (same data version) leaves its readers up to date, so they need not run."""
    ready: dict[AssetKey, bool] = {}
    for key in order:
        if key in reasons:
            ready[key] = not reasons[key].endswith(REBUILT_FIRST) and all(
                ready.get(parent, True) for parent in parents.get(key, ()))
    return [key for key, now in ready.items() if now]


def _partitions_version(instance: DagsterInstance, key: AssetKey, partition_keys: Sequence[str]) -> str:
    """What Dagster records as the input data version of ``key`` for a step reading all of its partitions
    (``DataVersionCache._get_partitions_data_version_from_keys``)."""
    from dagster._core.definitions.data_version import DATA_VERSION_TAG
    from dagster._core.events import DagsterEventType

    tags = instance._event_storage.get_latest_tags_by_partition(  # noqa: SLF001 - the call Dagster itself makes
        key, DagsterEventType.ASSET_MATERIALIZATION, [DATA_VERSION_TAG], asset_partitions=list(partition_keys))
    return hashlib.sha256("".join(tags[p][DATA_VERSION_TAG] for p in sorted(tags)).encode("utf8")).hexdigest()
