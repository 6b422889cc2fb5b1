"""Turning duplicate evidence into clusters and choosing the one record each cluster keeps.

Linkage rule (a star, not a chain): every member of a cluster is a verified near-duplicate of the
cluster's representative itself, so two members are never more than two verified links apart and
always through the representative. Evidence that would chain further (a brightened copy of one
document that also matches a second document) is kept, but as a refused link with its reason.

Images are taken best first (the representative rule below). An image with a verified link to one or
more representatives joins the one it matches best (highest score); one whose links reach only
members of clusters is verified directly against their representatives (``confirm``: the perceptual
verification run on that pair, with retrieval radii wide enough for a pair already known to be
related) and joins the first that passes; otherwise it starts a cluster of its own. It also starts its
own when it matches an image not yet placed clearly better (``CLOSER_MARGIN``, scores of one method
family) than the representative it would join: two distinct renders of one template match each other
(correlation ~0.95) less well than each matches its own copies (~0.99), and the better of the two, taken
first, would otherwise pull the other and all its copies into its cluster.

Representative rule (documented in the README), first difference wins:

1. ``source_of_copies``: not shown to be derived from another member: a strict sub-frame of it (a crop,
   or a rotation zoomed to fill) or an upscale of it (more pixels, much less fine detail);
2. ``higher_resolution``: more pixels (width x height); between two copies of different aspect ratios
   (more than 3 % apart) only when one is at least as large on both sides: a copy stretched to another
   aspect ratio gains no resolution by stretching one side;
3. ``lossless``: a lossless container over a lossy one;
4. ``higher_jpeg_quality``: the higher IJG quality read from the quantisation tables;
5. ``fewer_edits``: fewer pairs in which this side shows an overlay the other lacks (seen by the verification)
   or had its exposure shifted (:func:`~assets.image_pool.logic.source_quality.exposure_edited`);
6. ``license``: the most permissive license (earliest in the configured allow-list);
7. ``redistribution``: allowed, then unknown, then restricted;
8. ``record_id``: the smallest record id, so the choice never depends on input order.

Quality the warehouse does not know (files decoded before it was measured) ranks as lossy, of unknown
JPEG quality: below every measured value, never above.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass

from assets.image_pool.logic.source_quality import exposure_edited
from warehouse.ids import digest_of, entity_id

REDISTRIBUTION_ORDER = ("allowed", "unknown", "restricted")
EXACT_BYTES = "exact_bytes"
EXACT_PIXELS = "exact_pixels"
CONFIRMED = "perceptual:confirmed"  # method of a link verified by ``confirm`` while clustering

SUB_FRAME_MAX_COVER = 0.93  # a pair shows at most this share of the larger frame ...
SUB_FRAME_MIN_COVER = 0.97  # ... and at least this share of the smaller one: the smaller is cut from the larger
UPSCALE_MAX_DETAIL_RATIO = 0.75  # more pixels but fine detail below this share of the other's ...
UPSCALE_MAX_DETAIL = 0.6  # ... and below this (native pictures measure 0.6-1.4; a 2x upscale 0.4-0.6): an upscale of it
DENSER_SUB_FRAME = 1.1  # a sub-frame with this many times the pixels per unit of picture was enlarged after the cut
SAME_FRAME_MIN_COVER = 0.9  # both frames shown at least this much: the same picture (for the upscale test)

CRITERIA = ("source_of_copies", "higher_resolution", "lossless", "higher_jpeg_quality", "fewer_edits", "license",
            "redistribution", "record_id")

# Link decisions (duplicate_link.decision and .reason).
LINKED = "linked"  # the pair is a member and its representative
INSIDE = "inside"  # both in one cluster, neither its representative
REFUSED = "refused"
NOT_CLOSE_TO_REPRESENTATIVE = "not_close_to_representative"
CLOSER_TO_OTHER_REPRESENTATIVE = "closer_to_other_representative"
CLOSER_TO_ANOTHER_IMAGE = "closer_to_another_image"

CLOSER_MARGIN = 0.02  # an image matching an unplaced image this much better than its representative starts its own cluster


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
    lossless: bool | None = None  # file_decode's quality measures; None where not measured
    jpeg_quality: int | None = None
    fine_detail: float | None = None
    luma_mean: float | None = None
    luma_top: float | None = None
    highlights_clipped: float | None = None

    @property
    def tones(self) -> tuple[float, float, float] | None:
        if self.luma_mean is None or self.luma_top is None or self.highlights_clipped is None:
            return None
        return self.luma_mean, self.luma_top, self.highlights_clipped


@dataclass(frozen=True)
class DuplicateEdge:
    image_a: str
    image_b: str
    method: str
    distance: float
    score: float | None = None  # the verification's correlation (perceptual) or cosine similarity (CLIP)
    covered_a: float | None = None  # share of image_a's frame image_b shows; None when the method cannot tell
    covered_b: float | None = None
    edited: str | None = None  # "a" or "b": the side showing an overlay the other lacks

    def other(self, image: str) -> str:
        return self.image_b if image == self.image_a else self.image_a


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
    representative_reason: str | None = None  # on the kept record: the criterion that set it above the next best
    copy_evidence: str | None = None  # what shows this image was made from another member (a crop, an upscale)


@dataclass(frozen=True)
class LinkDecision:
    """What the clustering made of one duplicate pair (``duplicate_link``)."""

    image_a: str
    image_b: str
    method: str
    decision: str  # linked | inside | refused
    reason: str | None
    detail: str | None
    cluster_id: str


@dataclass(frozen=True)
class Clustering:
    assignments: list[PoolAssignment]
    links: list[LinkDecision]


Confirm = Callable[[str, str], DuplicateEdge | None]
"""confirm(representative image, candidate image): the verified pair, or None when they are not near-duplicates."""


def derived_images(edges: Iterable[DuplicateEdge], by_image: dict[str, PoolCandidate]) -> dict[str, str]:
    """Images the evidence shows to be made from another (a strict sub-frame of it, or an upscale of it), with why.

    A sub-frame enlarged after the cut (more pixels per unit of picture than the other) must also have less
    fine detail than the other; where it has more, the geometry is not trusted (a copy turned in an editor,
    its corners filled, frames the original as if it were a crop of the copy).
    """
    derived: dict[str, str] = {}
    for edge in edges:
        for this, that in ((edge.image_a, edge.image_b), (edge.image_b, edge.image_a)):
            shown, shows = _covers(edge, this)
            if shown is None or shows is None:
                continue
            if _cut_from(edge, this):
                if _sharper_though_enlarged(by_image.get(this), by_image.get(that), shows):
                    continue
                derived.setdefault(this, f"shows {shows:.0%} of {that}'s frame")
            elif min(shown, shows) >= SAME_FRAME_MIN_COVER and _upscale_of(by_image.get(this), by_image.get(that)):
                derived.setdefault(this, f"an upscale of {that} (more pixels, less fine detail)")
    return derived


def _covers(edge: DuplicateEdge, this: str) -> tuple[float | None, float | None]:
    """(share of this image's frame the other shows, share of the other's frame this image shows)."""
    return (edge.covered_a, edge.covered_b) if this == edge.image_a else (edge.covered_b, edge.covered_a)


def _cut_from(edge: DuplicateEdge, this: str) -> bool:
    """Whether the link shows ``this`` to be a strict sub-frame of the other image (a crop, a rotation zoomed to fill)."""
    shown, shows = _covers(edge, this)
    return shown is not None and shows is not None and shows <= SUB_FRAME_MAX_COVER and shown >= SUB_FRAME_MIN_COVER


def _sharper_though_enlarged(this: PoolCandidate | None, that: PoolCandidate | None, shows: float) -> bool:
    if this is None or that is None or this.fine_detail is None or that.fine_detail is None:
        return False
    density = this.width * this.height / max(1.0, shows * that.width * that.height)
    return density >= DENSER_SUB_FRAME and this.fine_detail >= that.fine_detail


def edit_counts(edges: Iterable[DuplicateEdge], by_image: dict[str, PoolCandidate]) -> dict[str, int]:
    """Per image, the pairs in which it is the edited side: an overlay the other lacks, or a shifted exposure."""
    edits: dict[str, int] = defaultdict(int)
    for edge in edges:
        if edge.edited in ("a", "b"):
            edits[edge.image_a if edge.edited == "a" else edge.image_b] += 1
        a, b = by_image.get(edge.image_a), by_image.get(edge.image_b)
        same_frame = min(edge.covered_a or 0.0, edge.covered_b or 0.0) >= SAME_FRAME_MIN_COVER
        if not same_frame or a is None or b is None or a.tones is None or b.tones is None:
            continue
        brighter, darker = (a, b) if a.tones[0] >= b.tones[0] else (b, a)
        shifted = exposure_edited(brighter.tones, darker.tones)
        if shifted is not None:
            edits[(brighter if shifted == "brighter" else darker).image_id] += 1
    return edits


def _upscale_of(this: PoolCandidate | None, that: PoolCandidate | None) -> bool:
    if this is None or that is None or this.fine_detail is None or that.fine_detail is None:
        return False
    return (this.width * this.height > that.width * that.height and this.fine_detail < UPSCALE_MAX_DETAIL
            and this.fine_detail < UPSCALE_MAX_DETAIL_RATIO * that.fine_detail)


SAME_ASPECT_TOLERANCE = 1.03  # aspect ratios closer than this are one frame shape


@dataclass(frozen=True)
class Resolution:
    """Width and height, ordered as the representative rule compares them (larger is better)."""

    width: int
    height: int

    def compare(self, other: Resolution) -> int:
        """1 if self is the higher resolution, -1 if other is, 0 if neither: equal pixels, or different shapes
        with neither at least as large on both sides."""
        shapes = (self.width * other.height) / max(1, other.width * self.height)
        if max(shapes, 1 / shapes) > SAME_ASPECT_TOLERANCE:
            if self.width >= other.width and self.height >= other.height:
                return 1 if (self.width, self.height) != (other.width, other.height) else 0
            if other.width >= self.width and other.height >= self.height:
                return -1
            return 0
        mine, theirs = self.width * self.height, other.width * other.height
        return (mine > theirs) - (mine < theirs)


def _rank(candidate: PoolCandidate, derived: dict[str, str], edits: dict[str, int], license_order: dict[str, int]) -> tuple:
    """Sort key of the representative rule, one element per entry of CRITERIA (:func:`_compare` compares them)."""
    redistribution = candidate.redistribution if candidate.redistribution in REDISTRIBUTION_ORDER else "unknown"
    return (
        candidate.image_id in derived,
        Resolution(candidate.width, candidate.height),
        not candidate.lossless,
        -(candidate.jpeg_quality or 0) if not candidate.lossless else 0,
        edits.get(candidate.image_id, 0),
        license_order.get((candidate.license or "").casefold(), len(license_order)),
        REDISTRIBUTION_ORDER.index(redistribution),
        candidate.record_id,
    )


def assign_clusters(
    candidates: Sequence[PoolCandidate],
    edges: Iterable[DuplicateEdge],
    license_allowlist: Sequence[str],
    confirm: Confirm | None = None,
) -> Clustering:
    """Cluster records (same bytes, same pixels, or near-duplicates of one representative) and pick representatives.

    Every dropped record names the image it was matched to — its representative's, or its own image's for
    exact duplicates — with that link's method and distance.
    """
    license_order = {name.casefold(): i for i, name in enumerate(license_allowlist)}
    records: dict[str, list[PoolCandidate]] = defaultdict(list)
    for candidate in candidates:
        records[candidate.image_id].append(candidate)
    components = UnionFind()
    for image in records:
        components.add(image)
    kept_edges = [e for e in edges if e.image_a in records and e.image_b in records and e.image_a != e.image_b]
    for edge in kept_edges:
        components.union(edge.image_a, edge.image_b)
    edges_of: dict[Hashable, list[DuplicateEdge]] = defaultdict(list)
    for edge in kept_edges:
        edges_of[components.find(edge.image_a)].append(edge)

    assignments: list[PoolAssignment] = []
    links: list[LinkDecision] = []
    for root, images in components.groups().items():
        component_edges = edges_of.get(root, [])
        best = {image: min(records[image], key=lambda c: (not c.lossless, -(c.jpeg_quality or 0), c.record_id)) for image in images}
        derived = derived_images(component_edges, best)
        edits = edit_counts(component_edges, best)
        key = {c.record_id: _rank(c, derived, edits, license_order) for image in images for c in records[image]}
        best_key = {image: min((key[c.record_id] for c in records[image]), key=_sort_key) for image in images}
        ranked = sorted(images, key=lambda image: _sort_key(best_key[image]))
        centre_of, link_of, held = _stars(ranked, component_edges, confirm)
        members_of: dict[str, list[str]] = defaultdict(list)
        for image in ranked:
            members_of[centre_of[image]].append(image)
        cluster_ids = {}
        for centre, members in members_of.items():
            # The star's centre is the representative image (every member was verified against it); its best record
            # leads. Sorting all the records afresh could put another image first: the rule compares resolutions of
            # different shapes only where one frame holds the other, so it is not a total order.
            representative = min(records[centre], key=lambda c: _sort_key(key[c.record_id]))
            cluster_records = [representative, *sorted((c for image in members for c in records[image] if c is not representative),
                                                      key=lambda c: _sort_key(key[c.record_id]))]
            cluster_id = entity_id("cluster", digest_of(sorted(members)))
            cluster_ids[centre] = cluster_id
            reason = _reason(key[representative.record_id], key[cluster_records[1].record_id]) if len(cluster_records) > 1 else None
            for member in cluster_records:
                is_rep = member is representative
                matched, method, distance = None, None, None
                if not is_rep and member.image_id == representative.image_id:
                    matched, distance = representative.image_id, 0.0
                    method = EXACT_BYTES if member.file_sha256 == representative.file_sha256 else EXACT_PIXELS
                elif not is_rep:
                    edge = link_of[member.image_id]
                    matched, method, distance = centre, edge.method, edge.distance
                assignments.append(PoolAssignment(
                    record_id=member.record_id, image_id=member.image_id, cluster_id=cluster_id,
                    cluster_size=len(cluster_records), is_representative=is_rep,
                    representative_record_id=representative.record_id, matched_image_id=matched, match_method=method,
                    match_distance=distance, domain=member.domain, representative_reason=reason if is_rep else None,
                    copy_evidence=derived.get(member.image_id)))
        links.extend(_link_decisions(component_edges, link_of, centre_of, held, cluster_ids, {image: i for i, image in enumerate(ranked)}))
    return Clustering(assignments, links)


def _stars(ranked: list[str], edges: list[DuplicateEdge], confirm: Confirm | None
           ) -> tuple[dict[str, str], dict[str, DuplicateEdge], dict[str, DuplicateEdge]]:
    """Each image's representative (``centre_of``), for members the link to it, and for images that started their
    own cluster because they match an unplaced image better (``held``) that closer link; images best first."""
    neighbours: dict[str, list[DuplicateEdge]] = defaultdict(list)
    for edge in edges:
        neighbours[edge.image_a].append(edge)
        neighbours[edge.image_b].append(edge)
    order = {image: i for i, image in enumerate(ranked)}
    centre_of: dict[str, str] = {}
    link_of: dict[str, DuplicateEdge] = {}
    held: dict[str, DuplicateEdge] = {}
    for image in ranked:
        direct = [e for e in neighbours[image] if centre_of.get(e.other(image)) == e.other(image)]
        link = None
        if direct:
            link = max(direct, key=lambda e: (_strength(e), -order[e.other(image)]))
        elif confirm is not None:
            reached = sorted({centre_of[e.other(image)] for e in neighbours[image] if e.other(image) in centre_of},
                             key=order.__getitem__)
            link = next((c for c in map(lambda centre: confirm(centre, image), reached) if c is not None), None)
        closer = None if link is None else _closer_unplaced(image, link, neighbours, centre_of, confirm)
        if link is not None and closer is None:
            centre_of[image], link_of[image] = link.other(image), link
        else:
            centre_of[image] = image
            if closer is not None:
                held[image] = closer
    return centre_of, link_of, held


def _strength(edge: DuplicateEdge) -> float:
    return edge.score if edge.score is not None else -edge.distance


def _family(edge: DuplicateEdge) -> str:
    """Scores compare within a method family (``perceptual:*`` correlations, CLIP cosines), not across."""
    return edge.method.split(":")[0]


def _closer_unplaced(image: str, link: DuplicateEdge, neighbours: dict[str, list[DuplicateEdge]], centre_of: dict[str, str],
                     confirm: Confirm | None) -> DuplicateEdge | None:
    """A link of ``image`` to a not yet placed image that both ends prefer, by ``CLOSER_MARGIN`` or more, to their
    links with the representative ``image`` would join (``link``); None when there is none.

    Both ends must prefer it: a copy can match a sibling copy better than its original when its own alignment
    with the original was rougher, but that sibling then matches the original about as well. The unplaced
    image's link with the representative is the evidence's, else ``confirm``'s, else absent (no match). An
    unplaced image shown to be cut from the representative belongs to it whatever it matches better.
    """
    if link.score is None:
        return None
    centre = link.other(image)
    rivals = sorted((e for e in neighbours[image] if e.other(image) not in centre_of and e.score is not None
                     and _family(e) == _family(link) and e.score >= link.score + CLOSER_MARGIN), key=_strength, reverse=True)
    for rival in rivals:
        other = rival.other(image)
        known = [e for e in neighbours[other] if e.other(other) == centre and _family(e) == _family(link)]
        with_centre = max(known, key=_strength) if known else confirm(centre, other) if confirm is not None else None
        if with_centre is not None and _cut_from(with_centre, other):
            continue
        if with_centre is None or with_centre.score is None or rival.score >= with_centre.score + CLOSER_MARGIN:
            return rival
    return None


def _link_decisions(edges: list[DuplicateEdge], link_of: dict[str, DuplicateEdge], centre_of: dict[str, str],
                    held: dict[str, DuplicateEdge], cluster_ids: dict[str, str], order: dict[str, int]) -> list[LinkDecision]:
    """Every evidence pair's fate, and the pairs ``confirm`` added."""
    decisions = []
    used = {id(edge) for edge in link_of.values()}
    for edge in edges:
        a, b = edge.image_a, edge.image_b
        cluster = cluster_ids[centre_of[a]]
        if centre_of[a] == centre_of[b]:
            decision, reason, detail = (LINKED if id(edge) in used else INSIDE), None, None
        else:
            centre_end = a if centre_of[a] == a else b if centre_of[b] == b else None
            member = edge.other(centre_end) if centre_end is not None else None
            later = b if order[a] < order[b] else a
            if centre_of[a] == a and centre_of[b] == b and later in held:
                reason = CLOSER_TO_ANOTHER_IMAGE
                closer = held[later]
                detail = (f"{later} matches {closer.other(later)} better ({closer.score:.3f} against {edge.score:.3f})"
                          " and started its own cluster")
            elif member is not None and order[centre_end] < order[member]:
                reason = CLOSER_TO_OTHER_REPRESENTATIVE
                detail = f"{member} joined {centre_of[member]}, which it matches better than {centre_end}"
            else:
                reason = NOT_CLOSE_TO_REPRESENTATIVE
                detail = (f"{a} belongs to {centre_of[a]} and {b} to {centre_of[b]}; neither representative was verified"
                          " against the other image")
            decision = REFUSED
        decisions.append(LinkDecision(a, b, edge.method, decision, reason, detail, cluster))
    for image, edge in link_of.items():
        if edge.method == CONFIRMED:
            decisions.append(LinkDecision(min(edge.image_a, edge.image_b), max(edge.image_a, edge.image_b), edge.method, LINKED, None,
                                          "verified against the representative while clustering", cluster_ids[centre_of[image]]))
    return decisions


def _compare(mine: tuple, theirs: tuple) -> tuple[int, str]:
    """(-1 if ``mine`` ranks first, 1 if ``theirs`` does, 0 if equal; the criterion that decided)."""
    for criterion, a, b in zip(CRITERIA, mine, theirs):
        if isinstance(a, Resolution):
            order = -a.compare(b)
        else:
            order = (a > b) - (a < b)
        if order:
            return order, criterion
    return 0, CRITERIA[-1]


_sort_key = functools.cmp_to_key(lambda mine, theirs: _compare(mine, theirs)[0])


def _reason(winner: tuple, runner_up: tuple) -> str:
    """The first criterion on which the representative beat the next best record of its cluster."""
    return _compare(winner, runner_up)[1]
