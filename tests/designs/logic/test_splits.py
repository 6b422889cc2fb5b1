import pytest

from assets.designs.logic.splits import (
    BENCHMARK,
    TRAIN,
    benchmark_quota,
    deal_rank,
    deal_source_splits,
    deal_splits,
    source_split_of,
)

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


@pytest.mark.parametrize(("locator", "split"), [
    ("data/crello/test/fx-poster.json", "test"),
    ("data/crello/validation/fx-poster.json", "validation"),
    ("data/crello/val/fx-poster.json", "validation"),
    ("crello/Train/a.json", "train"),
    ("data/crello/test-00000-of-00001.parquet#row=12", "test"),
    ("data/crello/validation-00000-of-00001.parquet#row=0", "validation"),
    ("train_part1.parquet#row=3", "train"),
    ("data/test/v5/fx-poster.json", None),          # only the record's own folder counts
    ("data/sample/designs/v5/fx-poster.json", None),
    ("data/designs.parquet#row=2", None),
    ("data/testing/a.json", None),                   # a word that merely starts like a split
])
def test_the_split_a_source_names(locator, split):
    assert source_split_of(locator) == split


def test_test_designs_fill_the_benchmark_up_to_its_size_in_rank_order_and_the_rest_train():
    crello = {d: ("test" if n < 5 else "validation" if n == 5 else "train") for n, d in enumerate(DESIGNS)}
    sides = deal_source_splits({}, crello, seed=0, benchmark_designs=3)
    tests = sorted(DESIGNS[:5], key=lambda d: deal_rank(d, 0))
    assert {d for d, s in sides.items() if s == BENCHMARK} == set(tests[:3])
    assert {d for d, s in sides.items() if s is None} == set(tests[3:])   # past the size: on neither side
    assert {d for d, s in sides.items() if s == TRAIN} == set(DESIGNS[5:])
    # no size: every test design; dealt designs keep their side and count towards the size
    assert _sides({d: s for d, s in deal_source_splits({}, crello, 0, None).items() if s}) == {BENCHMARK: 5, TRAIN: 3}
    later = deal_source_splits({tests[0]: BENCHMARK, tests[1]: BENCHMARK}, crello, 0, 3)
    assert tests[0] not in later and [d for d, s in later.items() if s == BENCHMARK] == [tests[2]]


def test_a_source_split_outside_crellos_three_is_refused():
    with pytest.raises(ValueError, match="'holdout'"):
        deal_source_splits({}, {"design:a": "holdout"}, 0, 10)
