"""The pool's shards: a stable, content-derived split of the source records, one Dagster partition each.

A record's shard is the first hex digit of the sha256 of its record id, so 16 shards (``0`` .. ``f``), about equally
full whatever the sources, and a record never changes shard. Things shared by several records (a locator, a fetched
file) belong to the shard of the smallest record id among those that share them, so each item is in exactly one
shard and a step over one shard never does another shard's work.

Why 16 and not 256: a run of the whole pool (every job, schedule and ``aesforge run``) is a run of the whole key range,
and Dagster records one materialization per partition per asset in it. The keys are prefixes, so widening to two
digits later splits each shard into sixteen (shard ``3`` is ``30`` .. ``3f``) and moves no record across a split.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence

SHARD_KEYS: tuple[str, ...] = tuple(f"{i:x}" for i in range(16))
SHARD_DIGITS = 1
RANGE_SEPARATOR = ".."


def shard_of(record_id: str) -> str:
    """The shard of a source record (or of whatever is keyed by a record id)."""
    return hashlib.sha256(record_id.encode("utf-8")).hexdigest()[:SHARD_DIGITS]


def shard_keys(text: str) -> tuple[str, ...]:
    """The shards ``text`` names: one key (``3``) or an inclusive range (``0..7``); ``ValueError`` saying what is wrong
    otherwise."""
    first, separator, last = text.strip().lower().partition(RANGE_SEPARATOR)
    last = last if separator else first
    for key in (first, last):
        if key not in SHARD_KEYS:
            raise ValueError(f"unknown pool shard {key!r} in {text!r}: shards are {SHARD_KEYS[0]} to {SHARD_KEYS[-1]}"
                             f" (a range: {SHARD_KEYS[0]}{RANGE_SEPARATOR}{SHARD_KEYS[len(SHARD_KEYS) // 2 - 1]})")
    start, end = SHARD_KEYS.index(first), SHARD_KEYS.index(last)
    if start > end:
        raise ValueError(f"empty shard range {text!r}: the first shard must not come after the last")
    return SHARD_KEYS[start:end + 1]


def shards_label(keys: Sequence[str]) -> str:
    """How a set of shards is shown in a step's notes: ``3``, ``0..7`` for a contiguous run, else the keys."""
    ordered = sorted(keys)
    if len(ordered) == 1:
        return ordered[0]
    contiguous = SHARD_KEYS[SHARD_KEYS.index(ordered[0]):SHARD_KEYS.index(ordered[-1]) + 1] == tuple(ordered)
    return f"{ordered[0]}{RANGE_SEPARATOR}{ordered[-1]}" if contiguous else ",".join(ordered)


def in_shards(record_id: str, shards: Collection[str] | None) -> bool:
    """Whether a record (or the item keyed by it) is in ``shards``; ``None`` means every shard (an unpartitioned run)."""
    return shards is None or shard_of(record_id) in shards
