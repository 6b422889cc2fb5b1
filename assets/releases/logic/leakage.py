"""Why a training image collides with a held-out one, and the one exclusion each colliding training image gets.

The warehouse finds the collisions (view ``release_overlap``: same record, same file, same decoded image, or the
same duplicate cluster of the pool); this module names the evidence that links each pair and keeps, per training
image, its strongest collision. Reasons, strongest first:

- ``same_image``: the training row shows the held-out image itself (the same pool record, or the same file bytes
  where one side is not a pool record: a stand-in painting, a render, a case file);
- ``exact_duplicate``: another record or file with the same decoded pixels (the pool's ``exact_bytes`` /
  ``exact_pixels`` evidence);
- ``perceptual_duplicate`` / ``clip_duplicate``: a different image of the same duplicate cluster, linked by a direct
  match of that kind or, failing one, through the path the pool recorded (each dropped image's next hop towards its
  cluster's kept image); a path is as weak as its weakest hop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

SAME_IMAGE = "same_image"
EXACT_DUPLICATE = "exact_duplicate"
PERCEPTUAL_DUPLICATE = "perceptual_duplicate"
CLIP_DUPLICATE = "clip_duplicate"
REASONS = (SAME_IMAGE, EXACT_DUPLICATE, PERCEPTUAL_DUPLICATE, CLIP_DUPLICATE)
"""Strongest first: of several collisions of one training image, the first in this order is recorded."""

EXACT_METHODS = ("exact_bytes", "exact_pixels")


@dataclass(frozen=True)
class SplitImage:
    """One image of a dataset's split, as the split's rows reference it and as the pool knows it."""

    dataset: str
    split: str
    item_id: str  # the dataset's own item: a pool item, a post, a case image, an illustration, a design
    entity_id: str | None  # the provenance entity of the item
    image_sha256: str  # as the split's rows carry it
    record_id: str | None  # the pool record it is, when it is one
    image_id: str | None  # the decoded image, when the pool holds these bytes


@dataclass(frozen=True)
class Overlap:
    """A training image and a held-out image of another dataset that the pool cannot tell apart."""

    training: SplitImage
    held_out: SplitImage
    same_file: bool
    cluster_id: str | None
    direct_methods: tuple[str, ...] = ()  # duplicate_match methods between the two images, if any


@dataclass(frozen=True)
class Exclusion:
    """A training image to drop, with the strongest collision it has."""

    dataset: str
    split: str
    image_sha256: str
    held_dataset: str
    held_split: str
    held_item_id: str
    held_image_sha256: str
    reason: str
    detail: str
    n_held_out: int
    training_entity: str | None
    held_entity: str | None


def method_reason(method: str) -> str:
    """The reason a piece of pool duplicate evidence (``pool_member.match_method``, ``duplicate_match.method``) gives."""
    if method in EXACT_METHODS:
        return EXACT_DUPLICATE
    if method.startswith("perceptual"):
        return PERCEPTUAL_DUPLICATE
    if method.startswith("clip"):
        return CLIP_DUPLICATE
    raise ValueError(f"unknown duplicate evidence method {method!r}")


def recorded_path(a: str, b: str, next_hop: Mapping[str, tuple[str, str]]) -> list[tuple[str, str, str]]:
    """The hops (image, next image, method) joining images ``a`` and ``b`` along the pool's recorded paths to their
    cluster's kept image: up from each to where the two paths meet."""
    up_a, up_b = _up(a, next_hop), _up(b, next_hop)
    on_a = {image: i for i, (image, _, _) in enumerate(up_a)}
    for j, (image, _, _) in enumerate(up_b):
        if image in on_a:
            return up_a[:on_a[image]] + up_b[:j]
    raise ValueError(f"images {a} and {b} share a cluster but no recorded path joins them")


def _up(image: str, next_hop: Mapping[str, tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(image, next, method) from ``image`` up to its kept image, ending with (kept image, '', '')."""
    hops, seen = [], {image}
    while image in next_hop:
        following, method = next_hop[image]
        hops.append((image, following, method))
        if following in seen:
            raise ValueError(f"the recorded path from {hops[0][0]} runs in a circle at {following}")
        seen.add(following)
        image = following
    return [*hops, (image, "", "")]


def overlap_reason(overlap: Overlap, next_hop: Mapping[str, tuple[str, str]]) -> tuple[str, str]:
    """(reason, the evidence in words) for one collision."""
    train, held = overlap.training, overlap.held_out
    pool_records = train.record_id is not None and held.record_id is not None
    if (pool_records and train.record_id == held.record_id) or (not pool_records and overlap.same_file):
        return SAME_IMAGE, "the same image"
    if train.image_id is not None and train.image_id == held.image_id:
        method = "exact_bytes" if overlap.same_file else "exact_pixels"
        return EXACT_DUPLICATE, f"{'identical bytes' if overlap.same_file else 'identical pixels'} ({method})"
    if overlap.cluster_id is None or train.image_id is None or held.image_id is None:
        raise ValueError(f"{train.item_id} and {held.item_id} collide without sharing a file, an image or a cluster")
    if overlap.direct_methods:
        method = min(overlap.direct_methods, key=lambda m: (REASONS.index(method_reason(m)), m))
        return method_reason(method), f"direct match {method} in duplicate cluster {overlap.cluster_id}"
    path = recorded_path(train.image_id, held.image_id, next_hop)
    reason = max((method_reason(m) for _, _, m in path), key=REASONS.index)
    hops = ", ".join(f"{a} {m} {b}" for a, b, m in path)
    return reason, f"duplicate cluster {overlap.cluster_id} through {hops}"


def exclusions(overlaps: Iterable[Overlap], next_hop: Mapping[str, tuple[str, str]]) -> list[Exclusion]:
    """One exclusion per training image (dataset, split, image sha256): its strongest collision (ties: the first
    held-out dataset, split, item and image in sort order), with how many held-out images it collides with."""
    by_image: dict[tuple[str, str, str], list[tuple[tuple, Overlap, str, str]]] = {}
    for overlap in overlaps:
        reason, evidence = overlap_reason(overlap, next_hop)
        held = overlap.held_out
        rank = (REASONS.index(reason), held.dataset, held.split, held.item_id, held.image_sha256)
        key = (overlap.training.dataset, overlap.training.split, overlap.training.image_sha256)
        by_image.setdefault(key, []).append((rank, overlap, reason, evidence))
    out = []
    for (dataset, split, sha), found in sorted(by_image.items()):
        _, overlap, reason, evidence = min(found, key=lambda f: f[0])
        train, held = overlap.training, overlap.held_out
        out.append(Exclusion(
            dataset=dataset, split=split, image_sha256=sha, held_dataset=held.dataset, held_split=held.split,
            held_item_id=held.item_id, held_image_sha256=held.image_sha256, reason=reason,
            detail=(f"{dataset}/{split} {train.item_id} (image {sha[:12]}) and {held.dataset}/{held.split}"
                    f" {held.item_id} (image {held.image_sha256[:12]}): {evidence}"),
            n_held_out=len({(f[1].held_out.dataset, f[1].held_out.split, f[1].held_out.image_sha256) for f in found}),
            training_entity=train.entity_id, held_entity=held.entity_id))
    return out
