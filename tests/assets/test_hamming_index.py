"""Multi-index hashing must return exactly what a brute-force scan returns."""

from __future__ import annotations

import random

import pytest

from assets.lib.hamming_index import MultiIndexHammingIndex, chunk_layout, flip_masks


def brute_force(entries: list[tuple[str, int]], code: int, radius: int) -> dict[str, int]:
    best: dict[str, int] = {}
    for key, other in entries:
        d = (other ^ code).bit_count()
        if d <= radius and d < best.get(key, radius + 1):
            best[key] = d
    return best


def flip_random_bits(rng: random.Random, code: int, n_flips: int, n_bits: int) -> int:
    for bit in rng.sample(range(n_bits), n_flips):
        code ^= 1 << bit
    return code


def planted_entries(rng: random.Random, n_bits: int, n_random: int, n_centres: int) -> list[tuple[str, int]]:
    """Random codes plus clusters of codes 0..14 bits away from a few centres."""
    entries = [(f"r{rng.getrandbits(40):x}", rng.getrandbits(n_bits)) for _ in range(n_random)]
    for c in range(n_centres):
        centre = rng.getrandbits(n_bits)
        for j in range(15):
            entries.append((f"c{c}-{j}", flip_random_bits(rng, centre, j, n_bits)))
    rng.shuffle(entries)
    return entries


@pytest.mark.parametrize(("n_bits", "n_chunks"), [(64, 4), (64, 5), (64, 3), (64, 1), (48, 7)])
def test_query_matches_brute_force(n_bits: int, n_chunks: int) -> None:
    rng = random.Random(1000 * n_bits + n_chunks)
    entries = planted_entries(rng, n_bits, n_random=1500, n_centres=20)
    index: MultiIndexHammingIndex[str] = MultiIndexHammingIndex(n_bits=n_bits, n_chunks=n_chunks)
    index.add_many(entries)
    assert len(index) == len({k for k, _ in entries})

    random_queries = [rng.getrandbits(n_bits) for _ in range(20)]
    near_queries = [flip_random_bits(rng, code, rng.randint(0, 6), n_bits) for _, code in rng.sample(entries, 40)]
    for radius in (0, 1, 3, 4, 7, 8, 10, 12):
        for q in random_queries + near_queries:
            got = index.query(q, radius)
            assert dict(got) == brute_force(entries, q, radius), (radius, q)
            assert len(got) == len(dict(got)), "each key is reported once"
            assert [d for _, d in got] == sorted(d for _, d in got)
    assert all(index.query(q, 6) for q in near_queries), "every planted near query has a neighbour"


def test_key_with_several_codes_reports_smallest_distance() -> None:
    index: MultiIndexHammingIndex[str] = MultiIndexHammingIndex()
    index.add("a", 0b1111)
    index.add("a", 0b0001)
    index.add("b", 0xFFFF << 48)
    assert len(index) == 2
    assert index.query(0, 4) == [("a", 1)]
    assert index.query(0, 0) == []


def test_incremental_adds_are_visible_to_later_queries() -> None:
    index: MultiIndexHammingIndex[int] = MultiIndexHammingIndex()
    rng = random.Random(7)
    code = rng.getrandbits(64)
    assert index.query(code, 12) == []
    index.add(1, flip_random_bits(rng, code, 12, 64))
    assert index.query(code, 12) == [(1, 12)]
    assert index.query(code, 11) == []


def test_rejects_bad_codes_and_parameters() -> None:
    index: MultiIndexHammingIndex[str] = MultiIndexHammingIndex(n_bits=64)
    with pytest.raises(ValueError, match="outside"):
        index.add("neg", -1)
    with pytest.raises(ValueError, match="outside"):
        index.add("big", 1 << 64)
    with pytest.raises(TypeError):
        index.add("float", 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="radius"):
        index.query(0, -1)
    with pytest.raises(ValueError, match="n_chunks"):
        MultiIndexHammingIndex(n_bits=64, n_chunks=65)
    assert len(index) == 0


def test_chunk_layout_and_masks() -> None:
    assert chunk_layout(64, 5) == [(0, 13), (13, 13), (26, 13), (39, 13), (52, 12)]
    assert sum(w for _, w in chunk_layout(64, 7)) == 64
    masks = flip_masks(16, 2)
    assert len(masks) == 1 + 16 + 120
    assert len(set(masks)) == len(masks)
    assert max(m.bit_count() for m in masks) == 2
