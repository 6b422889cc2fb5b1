from assets.image_pool.logic.clusters import DuplicateEdge, PoolCandidate, UnionFind, assign_clusters

ALLOW = ["CC0-1.0", "CC-BY-4.0"]


def cand(record, image, w=100, h=100, lic="CC0-1.0", redis="allowed", file=None, domain="painting"):
    return PoolCandidate(record, image, file or f"f-{record}", w, h, lic, redis, domain)


def test_union_find_groups():
    sets = UnionFind()
    for x in "abcde":
        sets.add(x)
    sets.union("a", "b")
    sets.union("c", "d")
    sets.union("b", "d")
    assert sorted(sorted(g) for g in sets.groups().values()) == [["a", "b", "c", "d"], ["e"]]


def test_representative_rule_resolution_then_license_then_redistribution_then_id():
    members = [
        cand("r1", "i1", 100, 100, "CC-BY-4.0"),
        cand("r2", "i2", 200, 100, "CC-BY-4.0"),  # highest resolution wins
        cand("r3", "i3", 200, 100, "CC-BY-4.0", redis="restricted"),
    ]
    edges = [DuplicateEdge("i1", "i2", "perceptual:phash", 3), DuplicateEdge("i2", "i3", "perceptual:phash", 2)]
    result = {a.record_id: a for a in assign_clusters(members, edges, ALLOW)}
    assert [r for r, a in result.items() if a.is_representative] == ["r2"]
    tie = [cand("r9", "i9", lic="CC-BY-4.0"), cand("r8", "i8", lic="CC0-1.0")]
    result = {a.record_id: a for a in assign_clusters(tie, [DuplicateEdge("i8", "i9", "clip:m", 0.01)], ALLOW)}
    assert result["r8"].is_representative and result["r9"].match_method == "clip:m"


def test_exact_bytes_and_pixels_and_paths_through_the_cluster():
    members = [
        cand("a", "img1", 300, 300, file="same"),
        cand("b", "img1", 300, 300, file="same"),  # same bytes
        cand("c", "img1", 300, 300, file="png-version"),  # same pixels, other container
        cand("d", "img2", 150, 150),  # near-dup of img1
        cand("e", "img3", 100, 100),  # near-dup of img2 only
        cand("z", "other", 500, 500),  # unrelated
    ]
    edges = [DuplicateEdge("img1", "img2", "perceptual:phash", 4), DuplicateEdge("img2", "img3", "perceptual:crop", 9)]
    result = {a.record_id: a for a in assign_clusters(members, edges, ALLOW)}
    assert result["a"].is_representative and result["z"].is_representative
    assert (result["b"].match_method, result["c"].match_method) == ("exact_bytes", "exact_pixels")
    assert (result["d"].matched_image_id, result["d"].match_distance) == ("img1", 4)
    assert (result["e"].matched_image_id, result["e"].match_method) == ("img2", "perceptual:crop")
    assert len({result[r].cluster_id for r in "abcde"}) == 1 and result["z"].cluster_size == 1
    assert result["a"].cluster_size == 5


def test_edges_to_ineligible_images_are_ignored():
    result = assign_clusters([cand("a", "i1")], [DuplicateEdge("i1", "gone", "clip:m", 0.0)], ALLOW)
    assert result[0].is_representative and result[0].cluster_size == 1
