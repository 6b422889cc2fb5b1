"""similar_pairs against a float64 brute force, on data with planted near-copies."""

from __future__ import annotations

import numpy as np
import pytest

from assets.image_pool.logic.near_duplicates import SimilarPair, similar_pairs

THRESHOLD = 0.9


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _planted(rng: np.random.Generator, n_base: int, n_copies: int, dim: int = 32) -> np.ndarray:
    """Random directions plus near-copies (small perturbations) of randomly chosen rows, shuffled."""
    base = rng.standard_normal((n_base, dim))
    sources = rng.integers(0, n_base, n_copies)
    copies = base[sources] + 0.15 * rng.standard_normal((n_copies, dim))
    rows = np.concatenate([base, copies])
    return _unit(rows[rng.permutation(len(rows))])


def _brute_force(
    new_keys: list, new: np.ndarray, old_keys: list, old: np.ndarray, threshold: float
) -> dict[frozenset, float]:
    """All qualifying pairs from full float64 matrices, with a guard that none sits on the float32 rounding edge."""
    expected: dict[frozenset, float] = {}
    within = new.astype(np.float64) @ new.astype(np.float64).T
    across = new.astype(np.float64) @ old.astype(np.float64).T
    off_diagonal = within[~np.eye(len(new), dtype=bool)]
    for sims in (off_diagonal, across.ravel()):
        assert not np.any(np.abs(sims - threshold) < 1e-4), "test data too close to the threshold"
    for i in range(len(new)):
        for j in range(i + 1, len(new)):
            if within[i, j] >= threshold:
                expected[frozenset((new_keys[i], new_keys[j]))] = within[i, j]
        for j in range(len(old)):
            if across[i, j] >= threshold:
                expected[frozenset((new_keys[i], old_keys[j]))] = across[i, j]
    return expected


def _as_dict(pairs: list[SimilarPair]) -> dict[frozenset, float]:
    found = {frozenset((p.a, p.b)): p.similarity for p in pairs}
    assert len(found) == len(pairs), "a pair was reported twice"
    return found


@pytest.mark.parametrize("device", [None, "cpu"])
@pytest.mark.parametrize("block_size", [1, 7, 16, 61, 4096])
def test_matches_brute_force_within_and_across(block_size: int, device: str | None) -> None:
    rng = np.random.default_rng(3)
    emb = _planted(rng, n_base=45, n_copies=16)
    new, old = emb[:40], emb[40:]
    new_keys = [f"new{i}" for i in range(len(new))]
    old_keys = [f"old{i}" for i in range(len(old))]
    # Existing rows arrive as uneven chunks, the way a warehouse cursor streams them.
    chunks = [(old_keys[:5], old[:5]), (old_keys[5:6], old[5:6]), (old_keys[6:], old[6:])]

    pairs = list(similar_pairs(new_keys, new, chunks, threshold=THRESHOLD, block_size=block_size, device=device))

    expected = _brute_force(new_keys, new, old_keys, old, THRESHOLD)
    found = _as_dict(pairs)
    assert len(expected) >= 8, "planted copies should produce several pairs"
    assert any(k1.startswith("old") or k2.startswith("old") for k1, k2 in expected)
    assert found.keys() == expected.keys()
    for key, sim in found.items():
        assert sim == pytest.approx(expected[key], abs=1e-5)
    assert all(p.a != p.b for p in pairs)
    # New-vs-existing pairs name the new item first.
    assert all(not str(p.a).startswith("old") for p in pairs)


def test_torch_blocks_give_the_numpy_pairs_in_the_same_order() -> None:
    """The device path (here torch on the CPU) finds the same pairs, in the same order, with the same scores."""
    rng = np.random.default_rng(11)
    emb = _planted(rng, n_base=400, n_copies=120, dim=64)
    new, old = emb[:300], emb[300:]
    new_keys, old_keys = list(range(300)), [f"old{i}" for i in range(len(old))]
    chunks = [(old_keys[:100], old[:100]), (old_keys[100:], old[100:])]

    def pairs_on(device: str | None) -> list[SimilarPair]:
        return list(similar_pairs(new_keys, new, chunks, threshold=THRESHOLD, block_size=64, device=device))

    on_host, on_device = pairs_on(None), pairs_on("cpu")
    assert len(on_host) >= 40
    assert [(p.a, p.b) for p in on_device] == [(p.a, p.b) for p in on_host]
    np.testing.assert_allclose([p.similarity for p in on_device], [p.similarity for p in on_host], atol=1e-6)


def test_numpy_path_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "from assets.image_pool.logic.near_duplicates import similar_pairs\n"
            "list(similar_pairs(['a', 'b'], np.eye(2, dtype=np.float32), threshold=0.5))\n"
            "print('torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_existing_rows_are_not_compared_with_each_other() -> None:
    e = np.eye(4, dtype=np.float32)
    old = np.stack([e[0], e[0], e[1]])
    pairs = list(similar_pairs(["n"], e[:1], [(["o1", "o2", "o3"], old)], threshold=0.99))
    assert {(p.a, p.b) for p in pairs} == {("n", "o1"), ("n", "o2")}


@pytest.mark.parametrize("device", [None, "cpu"])
def test_threshold_is_inclusive_at_exact_cosines(device: str | None) -> None:
    # Unit vectors whose pairwise cosines are exact in float32: cos(a,b)=0.5, cos(b,c)=0.5, cos(a,c)=0.25.
    a = np.zeros(16, np.float32)
    a[0] = 1.0
    b = np.zeros(16, np.float32)
    b[:4] = 0.5
    c = np.full(16, 0.25, np.float32)
    emb = np.stack([a, b, c])

    def pairs_at(threshold: float) -> set[tuple[str, str, float]]:
        return {(p.a, p.b, p.similarity) for p in similar_pairs(["a", "b", "c"], emb, threshold=threshold, block_size=2, device=device)}

    assert pairs_at(0.5) == {("a", "b", 0.5), ("b", "c", 0.5)}
    assert pairs_at(float(np.nextafter(np.float32(0.5), np.float32(1)))) == set()
    assert pairs_at(0.25) == {("a", "b", 0.5), ("b", "c", 0.5), ("a", "c", 0.25)}


def test_denormalised_input_is_renormalised() -> None:
    rng = np.random.default_rng(0)
    emb = _planted(rng, n_base=20, n_copies=6)
    scales = rng.uniform(0.5, 3.0, (len(emb), 1)).astype(np.float32)
    keys = list(range(len(emb)))
    normalised = _as_dict(list(similar_pairs(keys, emb, threshold=THRESHOLD, block_size=8)))
    scaled = _as_dict(list(similar_pairs(keys, emb * scales, threshold=THRESHOLD, block_size=8)))
    assert normalised and scaled.keys() == normalised.keys()
    for key, sim in scaled.items():
        assert sim == pytest.approx(normalised[key], abs=1e-5)


def test_float64_and_float16_inputs_are_accepted() -> None:
    e = np.eye(3)
    emb = np.stack([e[0], e[0], e[1]])
    for dtype in (np.float64, np.float16):
        pairs = list(similar_pairs(["x", "y", "z"], emb.astype(dtype), threshold=0.99))
        assert [(p.a, p.b) for p in pairs] == [("x", "y")]
        assert pairs[0].similarity == pytest.approx(1.0)


def test_empty_new_set_yields_nothing() -> None:
    old = np.eye(4, dtype=np.float32)
    assert list(similar_pairs([], np.empty((0, 4), np.float32), [(list("abcd"), old)], threshold=0.5)) == []


@pytest.mark.parametrize(
    ("keys", "emb", "kwargs", "error", "match"),
    [
        (["a"], np.ones(4, np.float32), {}, ValueError, "2-D"),
        (["a"], np.ones((1, 4), np.int64), {}, TypeError, "floating dtype"),
        (["a", "b"], np.ones((1, 4), np.float32), {}, ValueError, "1 rows but 2 keys"),
        (["a", "b"], np.array([[1, 0], [0, 0]], np.float32), {}, ValueError, r"'b' \(row 1\) is zero"),
        (["a"], np.array([[np.nan, 1]], np.float32), {}, ValueError, "not finite"),
        (["a"], np.ones((1, 4), np.float32), {"threshold": 1.5}, ValueError, r"\[-1, 1\]"),
        (["a"], np.ones((1, 4), np.float32), {"threshold": float("nan")}, ValueError, r"\[-1, 1\]"),
        (["a"], np.ones((1, 4), np.float32), {"block_size": 0}, ValueError, "block_size"),
    ],
)
def test_bad_input_is_rejected(keys, emb, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        list(similar_pairs(keys, emb, **{"threshold": 0.5, **kwargs}))


def test_existing_chunk_with_other_dimension_is_rejected() -> None:
    new = np.eye(4, dtype=np.float32)
    with pytest.raises(ValueError, match="existing chunk 1 has dimension 3"):
        list(
            similar_pairs(
                list("abcd"), new, [(["o"], new[:1]), (["p"], np.ones((1, 3), np.float32))], threshold=0.5
            )
        )


def test_argument_errors_surface_before_iteration() -> None:
    with pytest.raises(ValueError, match="threshold"):
        similar_pairs(["a"], np.ones((1, 2), np.float32), threshold=2.0)
