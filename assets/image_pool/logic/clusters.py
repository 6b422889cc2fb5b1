"""Turning duplicate evidence into clusters and choosing the one record each cluster keeps.

Representative rule (documented in the README): the highest resolution (width × height), then
the most permissive license (earliest in the configured allow-list), then the most open
redistribution status (allowed, unknown, restricted), then the smallest record id, so the
choice never depends on input order.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from warehouse.ids import digest_of, entity_id

REDISTRIBUTION_ORDER = ("allowed", "unknown", "restricted")
EXACT_BYTES = "exact_bytes"
EXACT_PIXELS = "exact_pixels"


class UnionFind:
    """Disjoint sets with path halving and union by size; near-constant time per operation."""

    def __init__(self) -> None:
        self._parent: dict[Hashable, Hashable] = {}
        self._size: dict[Hashable, int] = {}

    def add(self, item: Hashable) -> None:
        if item not in self._parent:
            self._parent[item] = item
            self._size[item] = 1

    def __contains__(self, item: Hashable) -> bool:
        return item in self._parent

    def find(self, item: Hashable) -> Hashable:
        parent = self._parent
        while parent[item] != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    def union(self, a: Hashable, b: Hashable) -> None:
        root_a, root_b = self.find(a), self.find(b)
        if root_a == root_b:
            return
        if self._size[root_a] < self._size[root_b]:
            root_a, root_b = root_b, root_a
        self._parent[root_b] = root_a
        self._size[root_a] += self._size[root_b]

    def groups(self) -> dict[Hashable, list[Hashable]]:
        out: dict[Hashable, list[Hashable]] = defaultdict(list)
        for item in self._parent:
            out[self.find(item)].append(item)
        return out


@dataclass(frozen=True)
class PoolCandidate:
    record_id: str
    image_id: str
    file_sha256: str
    width: int
    height: int
    license: str | None
    redistribution: str
    domain: str


@dataclass(frozen=True)
class DuplicateEdge:
    image_a: str
    image_b: str
    method: str
    distance: float


@dataclass(frozen=True)
class PoolAssignment:
    record_id: str
    image_id: str
    cluster_id: str
    cluster_size: int
    is_representative: bool
    representative_record_id: str
    matched_image_id: str | None
    match_method: str | None
    match_distance: float | None
    domain: str


def _rank(candidate: PoolCandidate, license_order: dict[str, int]) -> tuple:
    redistribution = candidate.redistribution if candidate.redistribution in REDISTRIBUTION_ORDER else "unknown"
    return (
        -(candidate.width * candidate.height),
        license_order.get((candidate.license or "").casefold(), len(license_order)),
        REDISTRIBUTION_ORDER.index(redistribution),
        candidate.record_id,
    )


def assign_clusters(
    candidates: Sequence[PoolCandidate], edges: Iterable[DuplicateEdge], license_allowlist: Sequence[str]
) -> list[PoolAssignment]:
    """Cluster records (same bytes, same pixels, or linked by near-duplicate edges) and pick representatives.

    Every dropped record names the neighbour through which it joined its cluster — the next image
    on a shortest path to the representative — with that edge's method and distance.
    """
    license_order = {name.casefold(): i for i, name in enumerate(license_allowlist)}
    sets = UnionFind()
    for candidate in candidates:
        sets.add(candidate.image_id)
    adjacency: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
    for edge in edges:
        if edge.image_a in sets and edge.image_b in sets:
            sets.union(edge.image_a, edge.image_b)
            adjacency[edge.image_a].append((edge.image_b, edge.method, edge.distance))
            adjacency[edge.image_b].append((edge.image_a, edge.method, edge.distance))
    for neighbours in adjacency.values():
        neighbours.sort(key=lambda n: (n[1].startswith("clip"), n[2], n[0]))  # prefer perceptual evidence, then closest

    records_by_root: dict[Hashable, list[PoolCandidate]] = defaultdict(list)
    for candidate in candidates:
        records_by_root[sets.find(candidate.image_id)].append(candidate)

    assignments: list[PoolAssignment] = []
    for members in records_by_root.values():
        representative = min(members, key=lambda c: _rank(c, license_order))
        cluster_id = entity_id("cluster", digest_of(sorted({m.image_id for m in members})))
        towards = _paths_to(representative.image_id, adjacency) if len(members) > 1 else {}
        for member in members:
            is_rep = member.record_id == representative.record_id
            matched, method, distance = None, None, None
            if not is_rep and member.image_id == representative.image_id:
                matched, distance = representative.image_id, 0.0
                method = EXACT_BYTES if member.file_sha256 == representative.file_sha256 else EXACT_PIXELS
            elif not is_rep:
                matched, method, distance = towards[member.image_id]
            assignments.append(
                PoolAssignment(
                    record_id=member.record_id,
                    image_id=member.image_id,
                    cluster_id=cluster_id,
                    cluster_size=len(members),
                    is_representative=is_rep,
                    representative_record_id=representative.record_id,
                    matched_image_id=matched,
                    match_method=method,
                    match_distance=distance,
                    domain=member.domain,
                )
            )
    return assignments


def _paths_to(root: str, adjacency: dict[str, list[tuple[str, str, float]]]) -> dict[str, tuple[str, str, float]]:
    """Breadth-first search from the representative: for each image, its next hop towards it."""
    next_hop: dict[str, tuple[str, str, float]] = {}
    seen = {root}
    queue = deque([root])
    while queue:
        current = queue.popleft()
        for neighbour, method, distance in adjacency.get(current, ()):
            if neighbour not in seen:
                seen.add(neighbour)
                next_hop[neighbour] = (current, method, distance)
                queue.append(neighbour)
    return next_hop
