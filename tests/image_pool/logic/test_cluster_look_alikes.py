"""Star clusters and look-alikes: an image closer to one of its own copies than to the representative stays apart."""

from assets.image_pool.logic.clusters import CLOSER_MARGIN, DuplicateEdge, PoolCandidate, assign_clusters

ALLOW = ["CC0-1.0"]


def cand(image: str, w: int, h: int, jpeg_quality: int | None = None) -> PoolCandidate:
    lossless = jpeg_quality is None
    return PoolCandidate(f"rec-{image}", image, f"f-{image}", w, h, "CC0-1.0", "allowed", "virtual", lossless, jpeg_quality)


def edge(a: str, b: str, score: float, covered_a: float = 1.0, covered_b: float = 1.0) -> DuplicateEdge:
    return DuplicateEdge(a, b, "perceptual:phash", 4, score, covered_a, covered_b)


def clusters(candidates: list[PoolCandidate], edges: list[DuplicateEdge], confirm=None) -> set[frozenset[str]]:
    clustering = assign_clusters(candidates, edges, ALLOW, confirm)
    members: dict[str, set[str]] = {}
    for a in clustering.assignments:
        members.setdefault(a.representative_record_id, set()).add(a.image_id)
    return {frozenset(m) for m in members.values()}


def test_two_renders_of_one_template_with_their_copies_stay_two_clusters():
    """R and X: distinct renders of one template, matching each other at 0.955; X and its copy Y at 0.999.

    R ranks first (lossless); X, taken next, would join R and pull its copy Y after it.
    """
    candidates = [cand("r", 800, 600), cand("x", 800, 600, 92), cand("y", 400, 300, 90)]
    edges = [edge("r", "x", 0.955), edge("r", "y", 0.960), edge("x", "y", 0.999)]
    assert clusters(candidates, edges) == {frozenset({"r"}), frozenset({"x", "y"})}
    refused = [link for link in assign_clusters(candidates, edges, ALLOW).links if link.decision == "refused"]
    assert {(link.image_a, link.image_b): link.reason for link in refused} == {
        ("r", "x"): "closer_to_another_image", ("r", "y"): "closer_to_other_representative"}
    assert "x matches y better (0.999 against 0.955)" in refused[0].detail


def test_the_unplaced_image_link_with_the_representative_is_confirmed_when_not_in_evidence():
    candidates = [cand("r", 800, 600), cand("x", 800, 600, 92), cand("y", 400, 300, 90)]
    edges = [edge("r", "x", 0.955), edge("x", "y", 0.999)]
    asked = []

    def confirm(representative: str, image: str) -> DuplicateEdge | None:
        asked.append((representative, image))
        return None

    assert clusters(candidates, edges, confirm) == {frozenset({"r"}), frozenset({"x", "y"})}
    assert asked[0] == ("r", "y")


def test_a_copy_closer_to_a_sibling_that_matches_the_original_as_well_joins_the_original():
    """A roughly aligned copy (0.94 with the original) matches a sibling at 0.98, which matches the original at 0.975."""
    candidates = [cand("o", 800, 600), cand("c1", 800, 600, 90), cand("c2", 400, 300, 90)]
    edges = [edge("o", "c1", 0.94), edge("c1", "c2", 0.98), edge("o", "c2", 0.975)]
    assert 0.98 >= 0.94 + CLOSER_MARGIN and 0.98 < 0.975 + CLOSER_MARGIN
    assert clusters(candidates, edges) == {frozenset({"o", "c1", "c2"})}


def test_a_copy_closer_to_a_sibling_cut_from_the_original_joins_the_original():
    """Two copies turned alike match each other (0.991) better than the original (0.957, 0.955), but one of them is
    shown to be cut from the original (it shows 71 % of the original's frame, all of its own inside it)."""
    candidates = [cand("o", 800, 600), cand("corners", 800, 600, 90), cand("turned", 800, 600, 85)]
    edges = [edge("o", "corners", 0.957, 0.91, 0.965), edge("o", "turned", 0.955, 0.71, 0.99),
             edge("corners", "turned", 0.991, 0.82, 0.98)]
    assert clusters(candidates, edges) == {frozenset({"o", "corners", "turned"})}


def test_scores_of_other_method_families_are_not_compared():
    """A CLIP cosine of 0.99 says nothing about a perceptual correlation of 0.95."""
    candidates = [cand("r", 800, 600), cand("x", 800, 600, 92), cand("y", 400, 300, 90)]
    edges = [edge("r", "x", 0.95), DuplicateEdge("x", "y", "clip:vit", 0.01, 0.99)]
    assert clusters(candidates, edges, lambda representative, image: None) == {frozenset({"r", "x"}), frozenset({"y"})}
