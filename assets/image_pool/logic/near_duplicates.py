"""Exact cosine-similarity search over embeddings, one bounded block at a time.

Near-duplicate detection needs every pair above a threshold, but an n×n
similarity matrix at n = 10^6 would take 4 TB.  Instead the embeddings are cut
into blocks of at most ``block_size`` rows and only one ``block_size ×
block_size`` float32 product exists at any moment; pairs above the threshold
are yielded as they are found, so callers can stream them into the warehouse.
Previously stored embeddings arrive as an iterable of chunks and are read once.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SimilarPair:
    """Two items whose embeddings have cosine similarity >= the search threshold.

    Among new items ``a`` is the one that comes first in the input; between new and
    existing items ``a`` is the new one and ``b`` the existing one.
    """

    a: Hashable
    b: Hashable
    similarity: float


def similar_pairs(
    new_keys: Sequence[Hashable],
    new_emb: np.ndarray,
    existing: Iterable[tuple[Sequence[Hashable], np.ndarray]] = (),
    *,
    threshold: float,
    block_size: int = 4096,
) -> Iterator[SimilarPair]:
    """Lazily produce every pair with cosine similarity >= ``threshold``.

    Covers each unordered pair of new rows once (never a row with itself) and
    every (new, existing) pair; existing rows are not compared with each other
    because that was done when they were new.  Rows are expected to be
    L2-normalised already and are re-normalised per block, so slightly
    denormalised input (e.g. from fp16 storage) does not shift the threshold.
    """
    if not (math.isfinite(threshold) and -1.0 <= threshold <= 1.0):
        raise ValueError(f"threshold must be a cosine similarity in [-1, 1], got {threshold!r}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    keys = list(new_keys)
    _check_embeddings(keys, new_emb, "new_emb")
    # Arguments are checked above, before the first pair is asked for; existing chunks are checked as they stream in.
    return _search(keys, new_emb, existing, threshold, block_size)


def _search(
    keys: list[Hashable],
    new_emb: np.ndarray,
    existing: Iterable[tuple[Sequence[Hashable], np.ndarray]],
    threshold: float,
    block_size: int,
) -> Iterator[SimilarPair]:
    dim = new_emb.shape[1]
    yield from _pairs_within(keys, new_emb, threshold, block_size)
    for chunk_no, (chunk_keys, chunk_emb) in enumerate(existing):
        old_keys = list(chunk_keys)
        _check_embeddings(old_keys, chunk_emb, f"existing chunk {chunk_no}")
        if chunk_emb.shape[1] != dim:
            raise ValueError(
                f"existing chunk {chunk_no} has dimension {chunk_emb.shape[1]}, new embeddings have {dim}"
            )
        yield from _pairs_across(keys, new_emb, old_keys, chunk_emb, threshold, block_size)


def _check_embeddings(keys: list[Hashable], emb: np.ndarray, name: str) -> None:
    if not isinstance(emb, np.ndarray) or emb.ndim != 2:
        raise ValueError(f"{name} must be a 2-D numpy array (rows, dim), got {getattr(emb, 'shape', type(emb))}")
    if not np.issubdtype(emb.dtype, np.floating):
        raise TypeError(f"{name} must have a floating dtype, got {emb.dtype}")
    if emb.shape[0] != len(keys):
        raise ValueError(f"{name} has {emb.shape[0]} rows but {len(keys)} keys were given")
    if emb.shape[1] == 0:
        raise ValueError(f"{name} has zero-length embeddings")


def _unit_block(emb: np.ndarray, keys: list[Hashable], start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` as float32 unit vectors; a zero or non-finite row has no direction and is rejected."""
    block = np.asarray(emb[start:stop], dtype=np.float32)
    norms = np.linalg.norm(block, axis=1)
    bad = ~np.isfinite(norms) | (norms == 0)
    if bad.any():
        row = start + int(np.argmax(bad))
        raise ValueError(f"embedding of {keys[row]!r} (row {row}) is zero or not finite")
    return block / norms[:, None]


def _pairs_within(
    keys: list[Hashable], emb: np.ndarray, threshold: float, block_size: int
) -> Iterator[SimilarPair]:
    n = emb.shape[0]
    for i in range(0, n, block_size):
        left = _unit_block(emb, keys, i, i + block_size)
        for j in range(i, n, block_size):
            right = left if j == i else _unit_block(emb, keys, j, j + block_size)
            sims = left @ right.T
            hits = sims >= threshold
            if j == i:
                hits = np.triu(hits, k=1)  # each unordered pair once, no self pairs
            yield from _hits_to_pairs(sims, hits, keys, i, keys, j)


def _pairs_across(
    new_keys: list[Hashable],
    new_emb: np.ndarray,
    old_keys: list[Hashable],
    old_emb: np.ndarray,
    threshold: float,
    block_size: int,
) -> Iterator[SimilarPair]:
    for j in range(0, old_emb.shape[0], block_size):
        right = _unit_block(old_emb, old_keys, j, j + block_size)
        for i in range(0, new_emb.shape[0], block_size):
            left = _unit_block(new_emb, new_keys, i, i + block_size)
            sims = left @ right.T
            yield from _hits_to_pairs(sims, sims >= threshold, new_keys, i, old_keys, j)


def _hits_to_pairs(
    sims: np.ndarray,
    hits: np.ndarray,
    left_keys: list[Hashable],
    left_start: int,
    right_keys: list[Hashable],
    right_start: int,
) -> Iterator[SimilarPair]:
    rows, cols = np.nonzero(hits)
    for r, c, s in zip(rows.tolist(), cols.tolist(), sims[rows, cols].tolist()):
        yield SimilarPair(left_keys[left_start + r], right_keys[right_start + c], s)
