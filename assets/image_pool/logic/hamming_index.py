"""Exact Hamming-radius search over binary codes by multi-index hashing, in numpy arrays.

Norouzi, Punjani & Fleet, "Fast Search in Hamming Space with Multi-Index
Hashing" (CVPR 2012): split each ``n_bits`` code into ``m`` disjoint chunks.  If
two codes are within distance ``r``, then by the pigeonhole principle at least
one chunk differs by at most ``r // m`` bits, so probing every chunk value
within ``r // m`` bits of the query's chunk finds every true neighbour; the
candidates are then checked with a full popcount.  Nothing is compared
all-pairs.

Why arrays and runs: Python dicts of lists cost ~200 bytes per code and a
Python step per candidate.  Here the chunk tables are sorted runs of
``(chunk index, chunk value)`` keys merged like a binary counter (Bentley-Saxe),
so adding is amortised O(log n), a probe is one ``searchsorted`` per run, and
a whole batch of query codes is answered by a handful of numpy calls.  The
newest codes (fewer than ``buffer_size``) are scanned directly.

Memory: 8 bytes per code plus 12 bytes per code and chunk (4 chunks: 56 bytes
per code), no per-code Python objects; with chunks of at most 18 bits each run
also keeps a start table (4 x 2^16 x 4 bytes = 1 MB for 4 x 16-bit chunks), one
run per set bit of n_codes / buffer_size, so at most ~log2(n) MB in all.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from math import comb

import numpy as np

DEFAULT_BUFFER_SIZE = 2048  # newest codes scanned directly before they become a sorted run
_MAX_DIRECT_KEYS = 1 << 20  # key spaces up to this size (chunks <= 18 bits) get a start-offset table per run (4 MB)


@lru_cache(maxsize=None)
def flip_masks(width: int, max_bits: int) -> np.ndarray:
    """Every ``width``-bit XOR mask with at most ``max_bits`` set bits, fewest bits first."""
    masks: list[int] = []
    for n_set in range(min(max_bits, width) + 1):
        for positions in combinations(range(width), n_set):
            masks.append(sum(1 << p for p in positions))
    return np.array(masks, dtype=np.uint64)


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


@dataclass(frozen=True)
class Hits:
    """Query results as parallel arrays: which query code, which item, which of its slots, how many bits apart."""

    query: np.ndarray  # intp, index into the query codes
    item: np.ndarray  # intp, item id (order of addition)
    slot: np.ndarray  # intp, which of the item's codes
    distance: np.ndarray  # intp

    def __len__(self) -> int:
        return len(self.item)


@dataclass(frozen=True)
class _Run:
    keys: np.ndarray  # uint64, sorted: chunk index << (widest chunk) | chunk value
    entries: np.ndarray  # uint32, code index of each key
    starts: np.ndarray | None  # where each possible key starts in ``keys`` (small key spaces): a probe is one gather

    def bounds(self, probes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[start, stop) of each probe key in ``keys``."""
        if self.starts is not None:
            at = probes.astype(np.intp)
            return self.starts[at], self.starts[at + 1]
        start, stop = np.split(np.searchsorted(self.keys, np.concatenate([probes, probes + np.uint64(1)])), 2)
        return start, stop  # keys are integers: right(x) == left(x + 1)


class MultiIndexHammingIndex:
    """Incremental exact r-neighbour search over items of ``codes_per_item`` unsigned ``n_bits`` codes.

    Items get consecutive ids from 0, so callers map ids to their own keys
    with a plain list; a code's slot says which of the item's codes (e.g.
    which crop window of an image) matched.
    """

    def __init__(self, n_bits: int = 64, n_chunks: int = 4, codes_per_item: int = 1, buffer_size: int = DEFAULT_BUFFER_SIZE) -> None:
        if not 1 <= n_bits <= 64:
            raise ValueError(f"n_bits must be in 1..64, got {n_bits}")
        if not 1 <= n_chunks <= n_bits or -(-n_bits // n_chunks) > 32:
            raise ValueError(f"n_chunks must be in {-(-n_bits // 32)}..{n_bits} (chunks of at most 32 bits), got {n_chunks}")
        if codes_per_item < 1 or buffer_size < 1:
            raise ValueError("codes_per_item and buffer_size must be >= 1")
        self.n_bits = n_bits
        self.n_chunks = n_chunks
        self.codes_per_item = codes_per_item
        self._buffer_size = buffer_size
        self._layout = chunk_layout(n_bits, n_chunks)
        self._key_bits = max(width for _, width in self._layout)
        self._codes = np.zeros(1024, dtype=np.uint64)
        self._n_codes = 0
        self._runs: list[_Run] = []  # largest first; they cover codes [0, self._n_sorted)
        self._n_sorted = 0

    def __len__(self) -> int:
        """Number of items indexed."""
        return self._n_codes // self.codes_per_item

    def nbytes(self) -> int:
        """Bytes held by the code array, the sorted runs and their start tables."""
        return self._codes.nbytes + sum(r.keys.nbytes + r.entries.nbytes + (0 if r.starts is None else r.starts.nbytes) for r in self._runs)

    def add(self, codes: np.ndarray | list[int]) -> int:
        """Index one item's codes (``codes_per_item`` of them); returns its item id."""
        row = np.asarray(codes, dtype=np.uint64) if not isinstance(codes, list) else self._checked(codes)
        if row.shape != (self.codes_per_item,):
            raise ValueError(f"expected {self.codes_per_item} codes, got shape {row.shape}")
        if self.n_bits < 64 and int(row.max()) >> self.n_bits:
            raise ValueError(f"a code is outside the unsigned {self.n_bits}-bit range")
        if self._n_codes + len(row) > len(self._codes):
            self._codes = np.concatenate([self._codes, np.zeros_like(self._codes)])
        self._codes[self._n_codes : self._n_codes + len(row)] = row
        self._n_codes += len(row)
        if self._n_codes - self._n_sorted >= self._buffer_size:
            self._seal_buffer()
        return len(self) - 1

    def _checked(self, codes: list[int]) -> np.ndarray:
        for code in codes:
            if not isinstance(code, int) or isinstance(code, bool):
                raise TypeError(f"code must be an int, got {type(code).__name__}")
            if not 0 <= code < (1 << self.n_bits):
                raise ValueError(f"code {code} is outside the unsigned {self.n_bits}-bit range")
        return np.array(codes, dtype=np.uint64)

    def _chunk_keys(self, codes: np.ndarray) -> np.ndarray:
        """(n_chunks, len(codes)) sort keys: chunk index above the widest chunk's bits, chunk value below."""
        return np.stack(
            [
                (np.uint64(i) << np.uint64(self._key_bits)) | ((codes >> np.uint64(shift)) & np.uint64((1 << width) - 1))
                for i, (shift, width) in enumerate(self._layout)
            ]
        )

    def _seal_buffer(self) -> None:
        """Turn the buffer into a sorted run, merging equal-sized runs like a binary counter."""
        entries = np.arange(self._n_sorted, self._n_codes, dtype=np.uint32)
        keys = self._chunk_keys(self._codes[self._n_sorted : self._n_codes]).ravel()
        entries = np.tile(entries, self.n_chunks)
        size = len(keys)
        while self._runs and len(self._runs[-1].keys) <= size:
            last = self._runs.pop()
            keys, entries = np.concatenate([last.keys, keys]), np.concatenate([last.entries, entries])
            size = len(keys)
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        key_space = self.n_chunks << self._key_bits
        starts = None
        if key_space <= _MAX_DIRECT_KEYS:
            starts = np.zeros(key_space + 1, dtype=np.uint32)
            np.cumsum(np.bincount(keys.astype(np.intp), minlength=key_space), out=starts[1:])
        self._runs.append(_Run(keys, entries[order], starts))
        self._n_sorted = self._n_codes

    def query(self, codes: np.ndarray | list[int], radius: int | np.ndarray, slots: np.ndarray | None = None) -> Hits:
        """Every (query code, item, slot) within the query's radius, each pair once.

        ``radius`` is one int or one per query code; ``slots``, a boolean
        (len(codes), codes_per_item) array, restricts which slots each query
        code may match (None: all).
        """
        queries = np.asarray(codes, dtype=np.uint64).ravel()
        radii = np.broadcast_to(np.asarray(radius, dtype=np.intp), queries.shape)
        if len(radii) and int(radii.min()) < 0:
            raise ValueError(f"radius must be >= 0, got {int(radii.min())}")
        pairs_q, pairs_e = [np.empty(0, np.intp)], [np.empty(0, np.intp)]
        # Each query probes only as deep as its own radius needs: with 4 chunks, radius 7 probes 1 bit per chunk
        # (17 keys) where radius 9 probes 2 (137 keys), so a batch of mixed radii is not probed at its widest.
        depth = radii // self.n_chunks
        scan_from = self._n_sorted
        for sub_radius in np.unique(depth).tolist() if self._runs else []:
            n_probes = sum(comb(width, k) for _, width in self._layout for k in range(min(sub_radius, width) + 1))
            if n_probes >= self._n_sorted:  # probing more keys than there are codes: scan them all instead
                scan_from = 0
                break
        if len(queries) and scan_from:
            for sub_radius in np.unique(depth).tolist():
                group = np.flatnonzero(depth == sub_radius)
                for q, e in self._probe_runs(queries[group], sub_radius):
                    pairs_q.append(group[q])
                    pairs_e.append(e)
        if self._n_codes > scan_from and len(queries):  # unsorted codes: one (queries x codes) popcount, keep the close ones
            close = np.bitwise_count(queries[:, None] ^ self._codes[None, scan_from : self._n_codes]) <= radii[:, None]
            close_q, close_e = np.nonzero(close)
            pairs_q.append(close_q)
            pairs_e.append(close_e + scan_from)
        query_ix, entry = np.concatenate(pairs_q), np.concatenate(pairs_e)
        distance = np.bitwise_count(self._codes[entry] ^ queries[query_ix]).astype(np.intp)
        keep = distance <= radii[query_ix]
        item, slot = np.divmod(entry, self.codes_per_item)
        if slots is not None:
            keep &= np.asarray(slots, dtype=bool)[query_ix, slot]
        query_ix, entry, item, slot, distance = query_ix[keep], entry[keep], item[keep], slot[keep], distance[keep]
        _, first = np.unique(query_ix * max(self._n_codes, 1) + entry, return_index=True)  # a code found via several chunks
        return Hits(query_ix[first], item[first], slot[first], distance[first])

    def _probe_runs(self, queries: np.ndarray, sub_radius: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(query index, code index) of every sorted code sharing a chunk within ``sub_radius`` bits of a query's."""
        chunk_keys = self._chunk_keys(queries)
        probes = np.concatenate(
            [chunk_keys[i][:, None] ^ flip_masks(width, sub_radius)[None, :] for i, (_, width) in enumerate(self._layout)],
            axis=1,
        )  # (queries, probes of every chunk)
        if self._runs[0].starts is None:  # sorted needles make each searchsorted a near-linear sweep
            order = np.argsort(probes, axis=None)
            flat, owner = probes.ravel()[order], order // probes.shape[1]
        else:
            flat, owner = probes.ravel(), np.repeat(np.arange(len(queries)), probes.shape[1])
        for run in self._runs:
            start, stop = run.bounds(flat)
            counts = (stop - start).astype(np.intp)
            hit = np.flatnonzero(counts)
            if not len(hit):
                continue
            start, counts = start[hit], counts[hit]
            offsets = np.repeat(start - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
            yield np.repeat(owner[hit], counts), run.entries[offsets].astype(np.intp)
