"""Train / evaluation split of CritiqueCanvas groups: by duplicate cluster, domain-balanced, seeded.

A duplicate cluster is never on both sides (near-copies of an evaluation image must not be trained on),
the six pairs of a group share their group's split, and the evaluation subset takes up to
``eval_per_domain`` groups from each domain, choosing clusters in an order fixed by the seed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from warehouse.ids import digest_of

TRAIN = "train"
EVAL = "eval"


@dataclass(frozen=True)
class SplitItem:
    group_id: str
    cluster_id: str
    domain: str


def assign_splits(items: Iterable[SplitItem], eval_per_domain: int, seed: int) -> dict[str, str]:
    """{group_id: "train" | "eval"}. Clusters are taken whole, in seeded order, while their domain's
    evaluation quota has room; a cluster that would overflow the quota is skipped, not split."""
    by_cluster: dict[str, list[SplitItem]] = defaultdict(list)
    for item in items:
        by_cluster[item.cluster_id].append(item)
    taken: dict[str, int] = defaultdict(int)
    splits: dict[str, str] = {}
    for cluster_id in sorted(by_cluster, key=lambda c: (digest_of([seed, c]), c)):
        members = by_cluster[cluster_id]
        needed: dict[str, int] = defaultdict(int)
        for member in members:
            needed[member.domain] += 1
        fits = all(taken[domain] + n <= eval_per_domain for domain, n in needed.items())
        for domain, n in needed.items():
            taken[domain] += n if fits else 0
        for member in members:
            splits[member.group_id] = EVAL if fits else TRAIN
    return splits
