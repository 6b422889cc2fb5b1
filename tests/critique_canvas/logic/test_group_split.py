import itertools

from assets.critique_canvas.logic.group_split import EVAL, TRAIN, SplitItem, assign_splits


def _items() -> list[SplitItem]:
    items = []
    for n, domain in itertools.product(range(30), ("photography", "painting", "virtual")):
        cluster = f"{domain}-c{n // 2}"  # pairs of groups share a duplicate cluster
        items.append(SplitItem(f"{domain}-g{n}", cluster, domain))
    items.append(SplitItem("mixed-a", "mixed", "painting"))  # one cluster spanning two domains
    items.append(SplitItem("mixed-b", "mixed", "virtual"))
    return items


def test_no_cluster_on_both_sides_and_eval_balanced_per_domain():
    items = _items()
    splits = assign_splits(items, eval_per_domain=8, seed=3)
    assert set(splits) == {i.group_id for i in items} and set(splits.values()) == {TRAIN, EVAL}
    by_cluster = {}
    for item in items:
        by_cluster.setdefault(item.cluster_id, set()).add(splits[item.group_id])
    assert all(len(sides) == 1 for sides in by_cluster.values())
    for domain in ("photography", "painting", "virtual"):
        assert sum(splits[i.group_id] == EVAL for i in items if i.domain == domain) == 8


def test_seed_decides_and_input_order_does_not():
    items = _items()
    first = assign_splits(items, 8, seed=3)
    assert assign_splits(list(reversed(items)), 8, seed=3) == first
    assert assign_splits(items, 8, seed=4) != first
    assert set(assign_splits(items, 0, seed=3).values()) == {TRAIN}


def test_the_evaluation_quota_counts_samples_so_groups_with_more_pairs_fill_it_sooner():
    items = _items()
    samples = {i.group_id: 10 for i in items}  # a dialogue and four paragraphs, all accepted
    splits = assign_splits(items, eval_per_domain=40, seed=3, samples=samples)
    for domain in ("photography", "painting", "virtual"):
        taken = sum(samples[i.group_id] for i in items if i.domain == domain and splits[i.group_id] == EVAL)
        assert 40 <= taken < 40 + 2 * 10  # at the quota, or past it by less than the last cluster (two groups)
    by_cluster = {}
    for item in items:
        by_cluster.setdefault(item.cluster_id, set()).add(splits[item.group_id])
    assert all(len(sides) == 1 for sides in by_cluster.values())
    # The other reading counts groups: 40 groups per domain would take every group of these 30 per domain.
    by_groups = assign_splits(items, eval_per_domain=40, seed=3)
    assert sum(s == EVAL for s in by_groups.values()) > sum(s == EVAL for s in splits.values())
    # A quota of one sample takes one group's cluster per domain; a group with no accepted pair weighs nothing.
    one = assign_splits(items, 1, seed=3, samples=samples)
    assert all(1 <= sum(one[i.group_id] == EVAL for i in items if i.domain == d) <= 2 for d in ("photography", "virtual"))
