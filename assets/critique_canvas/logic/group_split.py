"""Train / evaluation split of CritiqueCanvas groups: by duplicate cluster, domain-balanced, seeded.

A duplicate cluster is never on both sides (near-copies of an evaluation image must not be trained on),
the pairs of a group share their group's split, and the evaluation subset is balanced across domains, choosing
clusters in an order fixed by the seed. Its size is counted in samples, as the paper counts its 6,000 evaluation
samples (one exported pair each), or, the other reading, in groups.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from warehouse.ids import digest_of

TRAIN = "train"
EVAL = "eval"


@dataclass(frozen=True)
class SplitItem:
    group_id: str
    cluster_id: str
    domain: str


def assign_splits(items: Iterable[SplitItem], eval_per_domain: int, seed: int,
                  samples: Mapping[str, int] | None = None) -> dict[str, str]:
    """{group_id: "train" | "eval"}. Clusters are taken whole, in seeded order.

    With ``samples`` ({group_id: its exported pairs}) the quota counts samples: a cluster goes to eval while every
    domain it touches is still short of ``eval_per_domain``, so a domain ends at the quota or past it by less than
    the last cluster's samples (a quota of 1 takes one group per domain). Without, the quota counts groups and a
    cluster that would overflow it is skipped, not split."""
    by_cluster: dict[str, list[SplitItem]] = defaultdict(list)
    for item in items:
        by_cluster[item.cluster_id].append(item)
    taken: dict[str, int] = defaultdict(int)
    splits: dict[str, str] = {}
    for cluster_id in sorted(by_cluster, key=lambda c: (digest_of([seed, c]), c)):
        members = by_cluster[cluster_id]
        needed: dict[str, int] = defaultdict(int)
        for member in members:
            needed[member.domain] += 1 if samples is None else samples.get(member.group_id, 0)
        if samples is None:
            fits = all(taken[domain] + n <= eval_per_domain for domain, n in needed.items())
        else:
            fits = all(taken[domain] < eval_per_domain for domain in needed)
        for domain, n in needed.items():
            taken[domain] += n if fits else 0
        for member in members:
            splits[member.group_id] = EVAL if fits else TRAIN
    return splits
