"""Multi-index hashing must return exactly what a brute-force scan returns."""

from __future__ import annotations

import random

import numpy as np
import pytest

from assets.image_pool.logic.hamming_index import MultiIndexHammingIndex, chunk_layout, flip_masks


def brute_force(items: list[list[int]], queries: list[int]) -> list[list[tuple[int, int, int]]]:
    """Per query, (item, slot, distance) of every indexed code, by plain int popcounts."""
    return [
        [(item, slot, (other ^ code).bit_count()) for item, codes in enumerate(items) for slot, other in enumerate(codes)]
        for code in queries
    ]


def flip_random_bits(rng: random.Random, code: int, n_flips: int, n_bits: int) -> int:
    for bit in rng.sample(range(n_bits), n_flips):
        code ^= 1 << bit
    return code


def planted_items(rng: random.Random, n_bits: int, n_random: int, n_centres: int, per_item: int) -> list[list[int]]:
    """Random codes plus clusters of codes 0..14 bits away from a few centres, grouped ``per_item`` to an item."""
    codes = [rng.getrandbits(n_bits) for _ in range(n_random)]
    for _ in range(n_centres):
        centre = rng.getrandbits(n_bits)
        codes += [flip_random_bits(rng, centre, j, n_bits) for j in range(15)]
    rng.shuffle(codes)
    codes = codes[: len(codes) - len(codes) % per_item]
    return [codes[i : i + per_item] for i in range(0, len(codes), per_item)]


def as_set(hits, queries: list[int]) -> dict[int, set[tuple[int, int, int]]]:
    found: dict[int, set[tuple[int, int, int]]] = {i: set() for i in range(len(queries))}
    for q, item, slot, d in zip(hits.query.tolist(), hits.item.tolist(), hits.slot.tolist(), hits.distance.tolist()):
        assert (item, slot, d) not in found[q], "each (query, item, slot) is reported once"
        found[q].add((item, slot, d))
    return found


@pytest.mark.parametrize(("n_bits", "n_chunks", "per_item"), [(64, 4, 1), (64, 5, 3), (64, 3, 1), (64, 2, 2), (48, 7, 1)])
def test_query_matches_brute_force(n_bits: int, n_chunks: int, per_item: int) -> None:
    rng = random.Random(1000 * n_bits + n_chunks)
    items = planted_items(rng, n_bits, n_random=1500, n_centres=20, per_item=per_item)
    index = MultiIndexHammingIndex(n_bits=n_bits, n_chunks=n_chunks, codes_per_item=per_item, buffer_size=256)
    for i, codes in enumerate(items):
        assert index.add(codes) == i
    assert len(index) == len(items)

    flat = [c for codes in items for c in codes]
    random_queries = [rng.getrandbits(n_bits) for _ in range(20)]
    near_queries = [flip_random_bits(rng, code, rng.randint(0, 6), n_bits) for code in rng.sample(flat, 40)]
    queries = random_queries + near_queries
    every = brute_force(items, queries)
    for radius in (0, 1, 3, 4, 7, 8, 10, 12):
        found = as_set(index.query(queries, radius), queries)
        for i, q in enumerate(queries):
            assert found[i] == {hit for hit in every[i] if hit[2] <= radius}, (radius, q)
    assert all(as_set(index.query(near_queries, 6), near_queries).values()), "every planted near query has a neighbour"


def test_per_query_radius_and_slot_filter() -> None:
    index = MultiIndexHammingIndex(codes_per_item=2)
    index.add([0b1111, 0b0001])
    index.add([0xFFFF << 48, 0])
    hits = index.query([0, 0], radius=np.array([4, 0]), slots=np.array([[True, False], [False, True]]))
    got = sorted(zip(hits.query.tolist(), hits.item.tolist(), hits.slot.tolist(), hits.distance.tolist()))
    assert got == [(0, 0, 0, 4), (1, 1, 1, 0)]


def test_incremental_adds_are_visible_to_later_queries_across_runs() -> None:
    index = MultiIndexHammingIndex(buffer_size=4)
    rng = random.Random(7)
    code = rng.getrandbits(64)
    assert len(index.query([code], 12)) == 0
    for _ in range(37):  # several sealed runs of different sizes plus a partial buffer
        index.add([rng.getrandbits(64)])
    index.add([flip_random_bits(rng, code, 12, 64)])
    hits = index.query([code], 12)
    assert (hits.item.tolist(), hits.distance.tolist()) == ([37], [12])
    assert len(index.query([code], 11)) == 0
    assert index.nbytes() > 0


def test_rejects_bad_codes_and_parameters() -> None:
    index = MultiIndexHammingIndex(n_bits=64)
    with pytest.raises(ValueError, match="outside"):
        index.add([-1])
    with pytest.raises(ValueError, match="outside"):
        index.add([1 << 64])
    with pytest.raises(TypeError):
        index.add([1.0])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="expected 1 codes"):
        index.add([1, 2])
    with pytest.raises(ValueError, match="radius"):
        index.query([0], -1)
    with pytest.raises(ValueError, match="n_chunks"):
        MultiIndexHammingIndex(n_bits=64, n_chunks=65)
    with pytest.raises(ValueError, match="n_chunks"):
        MultiIndexHammingIndex(n_bits=64, n_chunks=1)  # a 64-bit chunk does not fit the 32-bit key half
    assert len(index) == 0


def test_chunk_layout_and_masks() -> None:
    assert chunk_layout(64, 5) == [(0, 13), (13, 13), (26, 13), (39, 13), (52, 12)]
    assert sum(w for _, w in chunk_layout(64, 7)) == 64
    masks = flip_masks(16, 2).tolist()
    assert len(masks) == 1 + 16 + 120
    assert len(set(masks)) == len(masks)
    assert max(m.bit_count() for m in masks) == 2
