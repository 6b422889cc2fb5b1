"""Which stand-in painting each stand-in generator shows for each poem, when no text-to-image model is configured.

Why one assignment for all generators rather than one shuffle each: independent shuffles can hand two generators of
the same poem the same painting, and then one image is rated twice as if two models had drawn it. Here the
paintings are shuffled once (seeded) and poem ``i`` takes ``G`` consecutive paintings of that order, one per
generator, so the generators of one poem never share a painting as long as there are at least as many distinct
paintings as generators; every painting is used about equally often over the poems.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from warehouse.ids import digest_of


def stand_in_names(names: Sequence[str], count: int) -> tuple[str, ...]:
    """The stand-in generators: the configured ``names`` (distinct, non-empty), else ``stand-in-1 … stand-in-count``."""
    if not names:
        if count < 1:
            raise ValueError(f"stand_in_models must be >= 1, not {count}")
        return tuple(f"stand-in-{k}" for k in range(1, count + 1))
    blank = [n for n in names if not n.strip()]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if blank or repeated:
        raise ValueError(f"stand_in_generators must be distinct, non-empty names (repeated: {repeated}, blank: {len(blank)})")
    return tuple(names)


def assign_stand_ins(poem_ids: Sequence[str], paintings: Sequence[str], generators: Sequence[str],
                     seed: int) -> dict[tuple[str, str], str]:
    """``(poem_id, generator) -> painting`` for every poem and generator; ``paintings`` are distinct keys (content
    hashes, so two files with the same bytes count once). Deterministic whatever the order of poems and paintings;
    the generators' order is the configured one."""
    distinct = sorted(set(paintings))
    if len(distinct) < len(generators):
        raise ValueError(f"{len(generators)} stand-in generators need at least as many distinct paintings, not"
                         f" {len(distinct)}: otherwise one painting would be shown under two generators of a poem")
    random.Random(int(digest_of(["stand_in", seed])[:16], 16)).shuffle(distinct)
    width = len(generators)
    return {(poem_id, generator): distinct[(i * width + j) % len(distinct)]
            for i, poem_id in enumerate(sorted(set(poem_ids))) for j, generator in enumerate(generators)}
