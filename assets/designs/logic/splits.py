"""Which base designs go to the AesEval benchmark and which to training (every variant follows its base).

The benchmark's size is a quota, not a coin per design: with ``n`` base designs it holds ``round(fraction * n)`` of
them, and, when ``0 < fraction < 1`` and ``n >= 2``, at least one and at most ``n - 1``, so neither side is ever
empty (0.3 of 8 designs is 2 on the benchmark, and 0.05 of 8 is still 1). Python's ``round`` halves to even.

Which designs fill the quota is seeded: each base design has a rank, the digest of (seed, design id), and the lowest
ranks go to the benchmark. A design keeps its side once dealt (published splits must not swap designs between
releases), so when new designs arrive only they are dealt: the benchmark takes the lowest-ranked new designs it is
short of its quota for everyone (old and new), and the rest go to training. Dealt all at once, the result is
the same whatever order the designs were read in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from warehouse.ids import digest_of

BENCHMARK, TRAIN = "benchmark", "train"
SPLITS = (BENCHMARK, TRAIN)


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
