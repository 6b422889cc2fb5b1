"""Exact Hamming-radius search over binary codes by multi-index hashing.

Norouzi, Punjani & Fleet, "Fast Search in Hamming Space with Multi-Index
Hashing" (CVPR 2012): split each ``n_bits`` code into ``m`` disjoint chunks and
keep one hash table per chunk.  If two codes are within distance ``r``, then by
the pigeonhole principle at least one chunk differs by at most ``r // m`` bits,
so probing every chunk value within ``r // m`` bits of the query's chunk finds
every true neighbour; the candidates are then checked with a full popcount.
Nothing is compared all-pairs, and memory is O(n) (one id per chunk table).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from functools import lru_cache
from itertools import combinations
from math import comb
from typing import Generic, TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)

_MAX_PROBES = 1 << 16  # beyond this many probe values per chunk, scan the table instead


@lru_cache(maxsize=None)
def flip_masks(width: int, max_bits: int) -> tuple[int, ...]:
    """Every ``width``-bit XOR mask with at most ``max_bits`` set bits, fewest bits first."""
    masks: list[int] = []
    for n_set in range(min(max_bits, width) + 1):
        for positions in combinations(range(width), n_set):
            mask = 0
            for p in positions:
                mask |= 1 << p
            masks.append(mask)
    return tuple(masks)


@lru_cache(maxsize=None)
def flip_mask_array(width: int, max_bits: int) -> np.ndarray:
    """:func:`flip_masks` as an array, so a query's probe values come from one vectorised XOR."""
    return np.array(flip_masks(width, max_bits), dtype=np.uint64)


def chunk_layout(n_bits: int, n_chunks: int) -> list[tuple[int, int]]:
    """(shift, width) of each chunk; widths differ by at most one bit when ``n_chunks`` does not divide ``n_bits``."""
    base, extra = divmod(n_bits, n_chunks)
    layout: list[tuple[int, int]] = []
    shift = 0
    for i in range(n_chunks):
        width = base + (1 if i < extra else 0)
        layout.append((shift, width))
        shift += width
    return layout


class MultiIndexHammingIndex(Generic[K]):
    """Incremental exact r-neighbour search over ``n_bits`` unsigned integer codes.

    A key may be added with several codes (e.g. hashes of several windows of
    one image); a query reports each matching key once, with its smallest
    distance over that key's codes.
    """

    def __init__(self, n_bits: int = 64, n_chunks: int = 4) -> None:
        if n_bits < 1:
            raise ValueError(f"n_bits must be >= 1, got {n_bits}")
        if not 1 <= n_chunks <= n_bits:
            raise ValueError(f"n_chunks must be in 1..{n_bits}, got {n_chunks}")
        self.n_bits = n_bits
        self.n_chunks = n_chunks
        self._layout = chunk_layout(n_bits, n_chunks)
        self._tables: list[dict[int, list[int]]] = [{} for _ in self._layout]
        self._entry_keys: list[K] = []
        self._entry_codes: list[int] = []
        self._keys: set[K] = set()

    def __len__(self) -> int:
        """Number of distinct keys indexed."""
        return len(self._keys)

    def _check_code(self, code: int) -> None:
        if not isinstance(code, int) or isinstance(code, bool):
            raise TypeError(f"code must be an int, got {type(code).__name__}")
        if not 0 <= code < (1 << self.n_bits):
            raise ValueError(f"code {code} is outside the unsigned {self.n_bits}-bit range")

    def add(self, key: K, code: int) -> None:
        """Index ``code`` under ``key``."""
        self._check_code(code)
        entry = len(self._entry_codes)
        self._entry_keys.append(key)
        self._entry_codes.append(code)
        self._keys.add(key)
        for (shift, width), table in zip(self._layout, self._tables):
            table.setdefault((code >> shift) & ((1 << width) - 1), []).append(entry)

    def add_many(self, items: Iterable[tuple[K, int]]) -> None:
        """Index every ``(key, code)`` pair."""
        for key, code in items:
            self.add(key, code)

    def _candidate_entries(self, code: int, sub_radius: int) -> set[int]:
        found: set[int] = set()
        for (shift, width), table in zip(self._layout, self._tables):
            if not table:
                continue
            value = (code >> shift) & ((1 << width) - 1)
            n_probes = sum(comb(width, k) for k in range(min(sub_radius, width) + 1))
            if n_probes > _MAX_PROBES or 8 * len(table) < n_probes:
                # Huge probe set or nearly empty table: scanning occupied buckets is cheaper (a probe is vectorised, a scan step is not).
                for bucket, entries in table.items():
                    if (bucket ^ value).bit_count() <= sub_radius:
                        found.update(entries)
            else:
                probes = (flip_mask_array(width, sub_radius) ^ value).tolist()
                for bucket in table.keys() & probes:
                    found.update(table[bucket])
        return found

    def query(self, code: int, radius: int) -> list[tuple[K, int]]:
        """Every key with a code within ``radius`` bits of ``code``, as (key, distance), nearest first."""
        self._check_code(code)
        if radius < 0:
            raise ValueError(f"radius must be >= 0, got {radius}")
        best: dict[K, int] = {}
        for entry in self._candidate_entries(code, radius // self.n_chunks):
            distance = (self._entry_codes[entry] ^ code).bit_count()
            if distance <= radius:
                key = self._entry_keys[entry]
                if distance < best.get(key, radius + 1):
                    best[key] = distance
        return sorted(best.items(), key=lambda kd: kd[1])
