"""Exact cosine-similarity search over embeddings, one bounded block at a time.

Near-duplicate detection needs every pair above a threshold, but an n×n
similarity matrix at n = 10^6 would take 4 TB.  Instead the embeddings are cut
into blocks of at most ``block_size`` rows and only one ``block_size ×
block_size`` float32 product exists at any moment; pairs above the threshold
are yielded as they are found, so callers can stream them into the warehouse.
Previously stored embeddings arrive as an iterable of chunks and are read once.

Given a torch ``device`` (the embedder's, when the CLIP pass already runs torch), the block products run
there: the new rows go to the device once, each existing chunk once, and only the indices and scores of the
hits come back, never a score block.  Rows are normalised the same way (numpy, float32) on both paths, so the
pairs are the same.  Without a device, torch is not imported.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Optional

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
    device: Optional[str] = None,
) -> Iterator[SimilarPair]:
    """Lazily produce every pair with cosine similarity >= ``threshold``.

    Covers each unordered pair of new rows once (never a row with itself) and
    every (new, existing) pair; existing rows are not compared with each other
    because that was done when they were new.  Rows are expected to be
    L2-normalised already and are re-normalised per block, so slightly
    denormalised input (e.g. from fp16 storage) does not shift the threshold.
    ``device`` (a torch device name) runs the block products there; None keeps them in numpy.
    """
    if not (math.isfinite(threshold) and -1.0 <= threshold <= 1.0):
        raise ValueError(f"threshold must be a cosine similarity in [-1, 1], got {threshold!r}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    keys = list(new_keys)
    _check_embeddings(keys, new_emb, "new_emb")
    blocks = _NumpyBlocks() if device is None else _TorchBlocks(device)
    # Arguments are checked above, before the first pair is asked for; existing chunks are checked as they stream in.
    return _search(keys, new_emb, existing, threshold, block_size, blocks)


def _search(
    keys: list[Hashable],
    new_emb: np.ndarray,
    existing: Iterable[tuple[Sequence[Hashable], np.ndarray]],
    threshold: float,
    block_size: int,
    blocks: _NumpyBlocks | _TorchBlocks,
) -> Iterator[SimilarPair]:
    dim = new_emb.shape[1]
    new_blocks = [(i, blocks.put(_unit_block(new_emb, keys, i, i + block_size)))
                  for i in range(0, new_emb.shape[0], block_size)]
    for n, (i, left) in enumerate(new_blocks):
        for j, right in new_blocks[n:]:
            hits = blocks.hits(left, right, threshold, upper_triangle=j == i)  # each unordered pair once, no self pairs
            yield from _hits_to_pairs(*hits, keys, i, keys, j)
    for chunk_no, (chunk_keys, chunk_emb) in enumerate(existing):
        old_keys = list(chunk_keys)
        _check_embeddings(old_keys, chunk_emb, f"existing chunk {chunk_no}")
        if chunk_emb.shape[1] != dim:
            raise ValueError(
                f"existing chunk {chunk_no} has dimension {chunk_emb.shape[1]}, new embeddings have {dim}"
            )
        for j in range(0, chunk_emb.shape[0], block_size):
            right = blocks.put(_unit_block(chunk_emb, old_keys, j, j + block_size))
            for i, left in new_blocks:
                yield from _hits_to_pairs(*blocks.hits(left, right, threshold, upper_triangle=False), keys, i, old_keys, j)


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


Hits = tuple[np.ndarray, np.ndarray, np.ndarray]  # rows, columns and scores of one block product's hits, row-major


class _NumpyBlocks:
    """Block products on the host."""

    def put(self, block: np.ndarray) -> np.ndarray:
        return block

    def hits(self, left: np.ndarray, right: np.ndarray, threshold: float, *, upper_triangle: bool) -> Hits:
        sims = left @ right.T
        hit = sims >= threshold
        if upper_triangle:
            hit = np.triu(hit, k=1)
        rows, cols = np.nonzero(hit)
        return rows, cols, sims[rows, cols]


class _TorchBlocks:
    """Block products on a torch device; only the hits cross back to the host."""

    def __init__(self, device: str) -> None:
        import torch  # only here: the numpy path never imports torch

        self.torch = torch
        self.device = torch.device(device)

    def put(self, block: np.ndarray) -> Any:
        return self.torch.from_numpy(block).to(self.device)

    def hits(self, left: Any, right: Any, threshold: float, *, upper_triangle: bool) -> Hits:
        with self.torch.inference_mode():
            sims = left @ right.T
            hit = sims >= threshold
            if upper_triangle:
                hit = self.torch.triu(hit, diagonal=1)
            rows, cols = self.torch.nonzero(hit, as_tuple=True)
            return rows.cpu().numpy(), cols.cpu().numpy(), sims[rows, cols].cpu().numpy()


def _hits_to_pairs(
    rows: np.ndarray,
    cols: np.ndarray,
    sims: np.ndarray,
    left_keys: list[Hashable],
    left_start: int,
    right_keys: list[Hashable],
    right_start: int,
) -> Iterator[SimilarPair]:
    for r, c, s in zip(rows.tolist(), cols.tolist(), sims.tolist()):
        yield SimilarPair(left_keys[left_start + r], right_keys[right_start + c], s)
