"""The image-grounding controls: which wrong image each post is shown, and what seeing the right one is worth.

A control keeps the post's own title and body and changes only the image: a shuffled one (another post's) or none.
Δ_S = score(correct image) − score(shuffled image) and Δ_T = score(correct) − score(text only), each critique set
scored against the same post's human references, so a positive Δ is what the photograph itself adds.

The shuffle is a derangement: the posts are ordered by a keyed hash of (seed, post id) and each takes the image
of the next post in that cycle. No post keeps its own image, the result depends only on the seed and the set of
ids (not their order), it costs one hash and one sort (n log n, fine at 10^6 posts), and adding a post changes
the donor of exactly one other post, so a grown benchmark keeps almost all earlier assignments. It draws a
random single cycle, not a uniform derangement; for a control that only needs "some other post's photo", that is
enough. Posts that share the same photograph (cross-posts) would defeat the control: deduplicate images first.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

SHUFFLE_METHOD = "blake2b-keyed-cycle-v1"  # recorded with every assignment; change it when the algorithm changes

CORRECT_IMAGE = "correct_image"
SHUFFLED_IMAGE = "shuffled_image"
TEXT_ONLY = "text_only"
GROUNDING_CONTROLS = (CORRECT_IMAGE, SHUFFLED_IMAGE, TEXT_ONLY)


@dataclass(frozen=True)
class ShuffledImages:
    seed: int
    method: str
    donor_of: dict[str, str]  # post id -> the post whose image it is shown instead of its own


def _sort_key(seed: int, post_id: str) -> tuple[bytes, str]:
    digest = hashlib.blake2b(post_id.encode("utf-8"), digest_size=16, key=str(seed).encode("ascii")).digest()
    return digest, post_id  # the id breaks a (vanishingly rare) digest tie, so the order is total


def shuffled_images(post_ids: Iterable[str], seed: int) -> ShuffledImages:
    """A seeded derangement of the posts' images (at least two distinct post ids; a duplicate id is an error)."""
    if isinstance(post_ids, str):
        raise TypeError("post_ids must be an iterable of ids, not one id")
    ids = list(post_ids)
    if len(set(ids)) != len(ids):
        raise ValueError("post ids must be distinct to shuffle their images")
    if len(ids) < 2:
        raise ValueError(f"a shuffled-image control needs at least 2 posts, not {len(ids)}")
    order = sorted(ids, key=lambda post_id: _sort_key(seed, post_id))
    donor_of = {post_id: order[(i + 1) % len(order)] for i, post_id in enumerate(order)}
    return ShuffledImages(seed, SHUFFLE_METHOD, donor_of)


@dataclass(frozen=True)
class GroundingDeltas:
    model: str
    n_posts: int            # posts scored under all three controls (the paired set the means are over)
    n_left_out: int         # posts scored under some control but not all three
    correct: float | None   # mean per-post score under each control; None when no post is paired
    shuffled: float | None
    text_only: float | None
    delta_shuffled: float | None  # Δ_S = correct − shuffled
    delta_text: float | None      # Δ_T = correct − text_only


def grounding_deltas(model: str, correct: Mapping[str, float], shuffled: Mapping[str, float],
                     text_only: Mapping[str, float]) -> GroundingDeltas:
    """Δ_S and Δ_T of one model from its per-post scores (post id -> score, e.g. max-mapping SBERT-cos) under
    each control, averaged over the posts all three have, so a post that failed in one control cannot tilt Δ."""
    paired = correct.keys() & shuffled.keys() & text_only.keys()
    seen = correct.keys() | shuffled.keys() | text_only.keys()
    if not paired:
        return GroundingDeltas(model, 0, len(seen), None, None, None, None, None)
    means = [statistics.fmean(scores[p] for p in sorted(paired)) for scores in (correct, shuffled, text_only)]
    return GroundingDeltas(model, len(paired), len(seen) - len(paired), means[0], means[1], means[2],
                           means[0] - means[1], means[0] - means[2])
