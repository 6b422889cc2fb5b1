"""Which base designs go to the AesEval benchmark and which to training (every variant follows its base).

The benchmark's size is a quota, not a coin per design: with ``n`` base designs it holds ``round(fraction * n)`` of
them, and, when ``0 < fraction < 1`` and ``n >= 2``, at least one and at most ``n - 1``, so neither side is ever
empty (0.3 of 8 designs is 2 on the benchmark, and 0.05 of 8 is still 1). Python's ``round`` halves to even.

Which designs fill the quota is seeded: each base design has a rank, the digest of (seed, design id), and the lowest
ranks go to the benchmark. A design keeps its side once dealt (published splits must not swap designs between
releases), so when new designs arrive only they are dealt: the benchmark takes the lowest-ranked new designs it is
short of its quota for everyone (old and new), and the rest go to training. Dealt all at once, the result is
the same whatever order the designs were read in.

Crello ships its own train / validation / test split (AesEval 3.1 samples its 1,200 benchmark designs from the
test split). When a source names that split (``source_split_of``), ``deal_source_splits`` honours it: test designs
fill the benchmark, up to a size, in seeded rank order; train and validation designs go to training; a test design
beyond the size is on neither side. Designs whose source names no split are dealt by the quota.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath

from warehouse.ids import digest_of

BENCHMARK, TRAIN = "benchmark", "train"
SPLITS = (BENCHMARK, TRAIN)
CRELLO_SPLITS = ("train", "validation", "test")
_SPLIT_SPELLINGS = {"train": "train", "validation": "validation", "valid": "validation", "val": "validation", "test": "test"}


def benchmark_quota(n_designs: int, fraction: float) -> int:
    """How many of ``n_designs`` base designs the benchmark holds (see the module docstring)."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"benchmark_fraction must be in [0, 1], not {fraction!r}")
    quota = round(fraction * n_designs)
    if 0 < fraction < 1 and n_designs >= 2:
        quota = min(max(quota, 1), n_designs - 1)
    return quota


def deal_rank(base_design_id: str, seed: int) -> str:
    """The seeded rank of a base design: lower ranks are dealt to the benchmark first."""
    return digest_of([seed, base_design_id])


def deal_splits(dealt: Mapping[str, str], new: Iterable[str], seed: int, fraction: float) -> dict[str, str]:
    """The side of each design in ``new``; ``dealt`` (base design id -> side) are the designs dealt before, which
    keep their sides and count towards the quota."""
    unknown = sorted(set(dealt.values()) - set(SPLITS))
    if unknown:
        raise ValueError(f"dealt splits must be {' or '.join(SPLITS)}, not {', '.join(map(repr, unknown))}")
    fresh = sorted(set(new) - set(dealt), key=lambda design_id: (deal_rank(design_id, seed), design_id))
    held = sum(side == BENCHMARK for side in dealt.values())
    short = max(0, benchmark_quota(len(dealt) + len(fresh), fraction) - held)
    return {design_id: BENCHMARK if n < short else TRAIN for n, design_id in enumerate(fresh)}


def source_split_of(locator: str) -> str | None:
    """The Crello split a record's source names, or None. The locator is the record's (``<folder>/<file>.json``,
    or ``<file>.parquet#row=N``): a JSON record's folder called ``train``, ``validation`` (``val``) or ``test``, or
    a Parquet export whose file name starts with one (the dataset's own layout: ``test-00000-of-00001.parquet``).
    Only the source's own name counts, so a folder ``test`` above a folder ``v5`` says nothing about ``v5``."""
    path = PurePosixPath(locator.split("#row=", 1)[0])
    name = (path.parent.name if path.suffix.lower() == ".json" else path.name).lower()
    return _SPLIT_SPELLINGS.get(re.split(r"[-_.]", name, maxsplit=1)[0])


def deal_source_splits(dealt: Mapping[str, str], new: Mapping[str, str], seed: int,
                       benchmark_designs: int | None) -> dict[str, str | None]:
    """The side of each design in ``new`` (base design id -> its Crello split) under Crello's own split: test
    designs to the benchmark, lowest seeded rank first, while it holds fewer than ``benchmark_designs`` (None: no
    limit) counting ``dealt`` (designs dealt this way before, which keep their sides); the test designs past that
    get None (on neither side); train and validation designs to training."""
    unknown = sorted(set(new.values()) - set(CRELLO_SPLITS))
    if unknown:
        raise ValueError(f"source splits must be {', '.join(CRELLO_SPLITS)}, not {', '.join(map(repr, unknown))}")
    if benchmark_designs is not None and benchmark_designs < 0:
        raise ValueError(f"benchmark_designs must be at least 0, not {benchmark_designs}")
    fresh = {design_id: split for design_id, split in new.items() if design_id not in dealt}
    tests = sorted((d for d, split in fresh.items() if split == "test"), key=lambda d: (deal_rank(d, seed), d))
    held = sum(side == BENCHMARK for side in dealt.values())
    room = len(tests) if benchmark_designs is None else max(0, benchmark_designs - held)
    sides: dict[str, str | None] = {d: TRAIN for d, split in fresh.items() if split != "test"}
    sides.update({d: BENCHMARK if n < room else None for n, d in enumerate(tests)})
    return sides
