import pytest

from assets.designs.logic.splits import BENCHMARK, TRAIN, benchmark_quota, deal_rank, deal_splits

DESIGNS = [f"design:{n:02d}" for n in range(8)]


def _sides(result: dict[str, str]) -> dict[str, int]:
    return {side: sum(s == side for s in result.values()) for side in (BENCHMARK, TRAIN)}


@pytest.mark.parametrize(("n", "fraction", "quota"), [
    (8, 0.3, 2),     # 2.4 rounds to 2
    (8, 0.05, 1),    # 0.4 would round to none: at least one
    (8, 0.97, 7),    # 7.76 would round to all: at least one stays for training
    (2, 0.3, 1), (2, 0.7, 1),
    (1, 0.3, 0), (1, 0.7, 1),  # one design cannot be on both sides: the fraction rounds
    (8, 0.0, 0), (8, 1.0, 8),  # an explicit 0 or 1 means what it says
    (0, 0.3, 0),
    (10, 0.25, 2),   # 2.5: half to even
])
def test_the_quota_is_the_rounded_fraction_with_both_sides_filled(n, fraction, quota):
    assert benchmark_quota(n, fraction) == quota


@pytest.mark.parametrize("fraction", [-0.1, 1.5])
def test_a_fraction_outside_zero_to_one_is_refused(fraction):
    with pytest.raises(ValueError, match="benchmark_fraction"):
        benchmark_quota(4, fraction)


def test_eight_designs_at_three_tenths_put_the_two_lowest_ranks_on_the_benchmark():
    result = deal_splits({}, DESIGNS, seed=0, fraction=0.3)
    assert set(result) == set(DESIGNS) and _sides(result) == {BENCHMARK: 2, TRAIN: 6}
    lowest = sorted(DESIGNS, key=lambda d: deal_rank(d, 0))[:2]
    assert {d for d, side in result.items() if side == BENCHMARK} == set(lowest)


def test_the_deal_is_seeded_and_does_not_depend_on_the_order_designs_arrive_in():
    assert deal_splits({}, DESIGNS, 3, 0.5) == deal_splits({}, list(reversed(DESIGNS)), 3, 0.5)
    deals = {tuple(sorted(d for d, s in deal_splits({}, DESIGNS, seed, 0.5).items() if s == BENCHMARK)) for seed in range(6)}
    assert len(deals) > 1  # another seed picks other designs


def test_designs_dealt_before_keep_their_side_and_count_towards_the_quota():
    first = deal_splits({}, DESIGNS[:4], 0, 0.5)
    assert _sides(first) == {BENCHMARK: 2, TRAIN: 2}
    later = deal_splits(first, DESIGNS, 0, 0.5)  # the old four are passed again: only the new ones are dealt
    assert set(later) == set(DESIGNS[4:]) and _sides(later) == {BENCHMARK: 2, TRAIN: 2}


def test_a_side_left_empty_by_earlier_deals_is_filled_from_the_new_designs():
    all_train = dict.fromkeys(DESIGNS[:3], TRAIN)
    assert deal_splits(all_train, ["design:new"], 0, 0.3) == {"design:new": BENCHMARK}
    all_benchmark = dict.fromkeys(DESIGNS[:3], BENCHMARK)
    assert deal_splits(all_benchmark, ["design:new"], 0, 0.9) == {"design:new": TRAIN}
    # nothing new: the old sides stay as they are, even one-sided (published splits never swap designs)
    assert deal_splits(all_train, DESIGNS[:3], 0, 0.3) == {}


def test_one_design_goes_where_the_rounded_fraction_says():
    assert deal_splits({}, ["design:a"], 0, 0.3) == {"design:a": TRAIN}
    assert deal_splits({}, ["design:a"], 0, 0.6) == {"design:a": BENCHMARK}


def test_an_unknown_side_among_the_dealt_designs_is_refused():
    with pytest.raises(ValueError, match="'test'"):
        deal_splits({"design:a": "test"}, ["design:b"], 0, 0.5)
