"""The shuffled-image derangement (properties, with hypothesis) and Δ_S / Δ_T."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assets.evaluation.logic.grounding import SHUFFLE_METHOD, grounding_deltas, shuffled_images

post_ids = st.lists(st.text(min_size=1, max_size=12), min_size=2, max_size=60, unique=True)
seeds = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(post_ids, seeds)
def test_no_post_keeps_its_own_image_and_every_image_is_used_once(ids, seed):
    donor_of = shuffled_images(ids, seed).donor_of
    assert set(donor_of) == set(ids)
    assert all(post != donor for post, donor in donor_of.items())
    assert sorted(donor_of.values()) == sorted(ids)


@settings(max_examples=100, deadline=None)
@given(post_ids, seeds, st.randoms(use_true_random=False))
def test_same_seed_and_ids_give_the_same_assignment_in_any_order(ids, seed, rng):
    shuffled = list(ids)
    rng.shuffle(shuffled)
    assert shuffled_images(ids, seed) == shuffled_images(shuffled, seed)


@settings(max_examples=100, deadline=None)
@given(post_ids, seeds, st.text(min_size=1, max_size=12))
def test_adding_a_post_changes_one_other_assignment(ids, seed, extra):
    if extra in ids:
        return
    before = shuffled_images(ids, seed).donor_of
    after = shuffled_images([*ids, extra], seed).donor_of
    changed = [post for post in ids if before[post] != after[post]]
    assert len(changed) == 1


def test_the_seed_matters_and_is_recorded():
    ids = [f"p{i}" for i in range(50)]
    first, second = shuffled_images(ids, 1), shuffled_images(ids, 2)
    assert first.donor_of != second.donor_of
    assert (first.seed, first.method) == (1, SHUFFLE_METHOD)


def test_two_posts_swap_and_large_inputs_stay_cheap():
    assert shuffled_images(["a", "b"], 0).donor_of == {"a": "b", "b": "a"}
    ids = [f"t3_{i:07d}" for i in range(200_000)]  # n log n with one hash each; 10^6 takes a few seconds
    donor_of = shuffled_images(ids, 42).donor_of
    assert len(donor_of) == len(ids) and all(p != d for p, d in donor_of.items())


def test_inputs_that_cannot_be_deranged():
    with pytest.raises(ValueError, match="at least 2"):
        shuffled_images(["only"], 0)
    with pytest.raises(ValueError, match="distinct"):
        shuffled_images(["a", "a", "b"], 0)
    with pytest.raises(TypeError):
        shuffled_images("abc", 0)


def test_deltas_over_the_paired_posts():
    correct = {"p1": 0.6, "p2": 0.7, "p3": 0.9}
    shuffled = {"p1": 0.5, "p2": 0.5}
    text_only = {"p1": 0.55, "p2": 0.65, "p4": 0.1}
    result = grounding_deltas("m", correct, shuffled, text_only)
    # Paired posts p1, p2: correct 0.65, shuffled 0.5, text-only 0.6.
    assert (result.n_posts, result.n_left_out) == (2, 2)
    assert result.correct == pytest.approx(0.65)
    assert result.delta_shuffled == pytest.approx(0.15)
    assert result.delta_text == pytest.approx(0.05)
    empty = grounding_deltas("m", {"p1": 1.0}, {}, {})
    assert (empty.n_posts, empty.delta_shuffled) == (0, None)
