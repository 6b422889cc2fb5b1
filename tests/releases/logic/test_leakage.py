"""Naming the evidence of a collision and keeping each training image's strongest one (plain values)."""

import pytest

from assets.releases.logic.leakage import (
    CLIP_DUPLICATE,
    EXACT_DUPLICATE,
    PERCEPTUAL_DUPLICATE,
    SAME_IMAGE,
    Overlap,
    SplitImage,
    exclusions,
    method_reason,
    overlap_reason,
    recorded_path,
)


def _train(sha: str = "t" * 64, record: str | None = "rec-t", image: str | None = "img-t") -> SplitImage:
    return SplitImage("critique_canvas", "train", "pool_item:t", "pool_item:t", sha, record, image)


def _held(item: str = "post1", sha: str = "h" * 64, record: str | None = "rec-h", image: str | None = "img-h",
          dataset: str = "photocritique") -> SplitImage:
    return SplitImage(dataset, "test", item, f"reddit_post:{item}", sha, record, image)


def test_evidence_methods_map_to_reasons():
    assert [method_reason(m) for m in ("exact_bytes", "exact_pixels", "perceptual:phash", "perceptual:rot90", "clip:vit")] == [
        EXACT_DUPLICATE, EXACT_DUPLICATE, PERCEPTUAL_DUPLICATE, PERCEPTUAL_DUPLICATE, CLIP_DUPLICATE]
    with pytest.raises(ValueError, match="unknown duplicate evidence method 'ssim'"):
        method_reason("ssim")


def test_same_record_or_same_bytes_of_a_non_pool_image_is_the_same_image():
    same_record = Overlap(_train(), _held(record="rec-t", image="img-t"), same_file=True, cluster_id="c")
    assert overlap_reason(same_record, {}) == (SAME_IMAGE, "the same image")
    render = Overlap(_train(record=None, image=None), _held(record=None, image=None), same_file=True, cluster_id=None)
    assert overlap_reason(render, {})[0] == SAME_IMAGE
    # Two pool records with the same bytes are two records: the pool's exact_bytes evidence.
    two_records = Overlap(_train(), _held(image="img-t"), same_file=True, cluster_id="c")
    assert overlap_reason(two_records, {}) == (EXACT_DUPLICATE, "identical bytes (exact_bytes)")
    stand_in_re_encoded = Overlap(_train(), _held(record=None, image="img-t"), same_file=False, cluster_id="c")
    assert overlap_reason(stand_in_re_encoded, {}) == (EXACT_DUPLICATE, "identical pixels (exact_pixels)")


def test_a_direct_match_names_its_strongest_method():
    both = Overlap(_train(), _held(), same_file=False, cluster_id="c", direct_methods=("clip:vit", "perceptual:dhash"))
    assert overlap_reason(both, {}) == (PERCEPTUAL_DUPLICATE, "direct match perceptual:dhash in duplicate cluster c")
    clip = Overlap(_train(), _held(), same_file=False, cluster_id="c", direct_methods=("clip:vit",))
    assert overlap_reason(clip, {})[0] == CLIP_DUPLICATE


def test_without_a_direct_match_the_recorded_path_is_as_weak_as_its_weakest_hop():
    # kept image k; t joined through m by perceptual evidence, h joined m by CLIP: t and h meet at m.
    hops = {"img-t": ("m", "perceptual:phash"), "m": ("k", "perceptual:dhash"), "img-h": ("m", "clip:vit")}
    assert recorded_path("img-t", "img-h", hops) == [("img-t", "m", "perceptual:phash"), ("img-h", "m", "clip:vit")]
    reason, evidence = overlap_reason(Overlap(_train(), _held(), same_file=False, cluster_id="c"), hops)
    assert reason == CLIP_DUPLICATE
    assert evidence == "duplicate cluster c through img-t perceptual:phash m, img-h clip:vit m"
    # The kept image itself is on the path's end: t -> m -> k.
    assert recorded_path("img-t", "k", hops) == [("img-t", "m", "perceptual:phash"), ("m", "k", "perceptual:dhash")]
    assert overlap_reason(Overlap(_train(), _held(image="k"), False, "c"), hops)[0] == PERCEPTUAL_DUPLICATE


def test_a_broken_pool_path_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="no recorded path joins them"):
        recorded_path("a", "b", {"a": ("k1", "perceptual:phash"), "b": ("k2", "perceptual:phash")})
    with pytest.raises(ValueError, match="runs in a circle"):
        recorded_path("a", "b", {"a": ("x", "perceptual:phash"), "x": ("a", "perceptual:phash")})
    with pytest.raises(ValueError, match="without sharing a file, an image or a cluster"):
        overlap_reason(Overlap(_train(), _held(), same_file=False, cluster_id=None), {})


def test_each_training_image_keeps_its_strongest_collision_and_counts_the_rest():
    near = Overlap(_train(), _held("post2", sha="2" * 64), False, "c", ("perceptual:phash",))
    exact = Overlap(_train(), _held("post9", sha="9" * 64, image="img-t"), False, "c")
    same = Overlap(_train(), _held("case#image=1", sha="t" * 64, record="rec-t", dataset="context_canvas"), True, "c")
    other = Overlap(_train(sha="o" * 64, record="rec-o", image="img-o"), _held("post2", sha="2" * 64), False, "c",
                    ("clip:vit",))
    found = exclusions([near, exact, other], {})
    assert [(x.image_sha256[0], x.held_item_id, x.reason, x.n_held_out) for x in found] == [
        ("o", "post2", CLIP_DUPLICATE, 1), ("t", "post9", EXACT_DUPLICATE, 2)]
    assert found[1].detail == (f"critique_canvas/train pool_item:t (image {'t' * 12}) and photocritique/test post9"
                               f" (image {'9' * 12}): identical pixels (exact_pixels)")
    assert (found[1].training_entity, found[1].held_entity) == ("pool_item:t", "reddit_post:post9")
    # Order of the input does not matter; the same image from another dataset wins over any duplicate.
    assert exclusions([same, exact, near], {}) == exclusions([near, same, exact], {})
    (strongest,) = [x for x in exclusions([near, same, exact], {}) if x.image_sha256 == "t" * 64]
    assert (strongest.held_dataset, strongest.reason, strongest.n_held_out) == ("context_canvas", SAME_IMAGE, 3)


def test_ties_go_to_the_first_held_out_image_in_sort_order():
    first = Overlap(_train(), _held("post1", sha="1" * 64), False, "c", ("perceptual:phash",))
    second = Overlap(_train(), _held("post3", sha="3" * 64), False, "c", ("perceptual:phash",))
    assert [x.held_item_id for x in exclusions([second, first], {})] == ["post1"]
