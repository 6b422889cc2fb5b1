"""Perceptual stage: near-duplicates match their original, look-alikes and distinct images do not."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import replace

import imagehash
import numpy as np
import pytest
from PIL import Image

from assets.image_pool.logic.perceptual import (
    Alignment,
    PerceptualHashes,
    PerceptualMatch,
    PerceptualMatcher,
    PerceptualParams,
    PerceptualSignature,
    batched_phash,
    chroma_fields,
    compute_signature,
    from_signed64,
    high_pass,
    confirm_pair,
    edited_side,
    signature_from_path,
    to_signed64,
    verify_pair,
)
from sample import synth

SIZE = (320, 224)
RENDERERS = {"photo": synth.render_photo, "painting": synth.render_painting, "virtual": synth.render_virtual}


def jpeg_roundtrip(img: Image.Image, quality: int = 85) -> Image.Image:
    return Image.open(io.BytesIO(synth.recompressed(img, quality))).convert("RGB")


def match_pair(original: Image.Image, copy: Image.Image) -> list[PerceptualMatch[str]]:
    matcher: PerceptualMatcher[str] = PerceptualMatcher()
    return list(matcher.match_new([("original", compute_signature(original)), ("copy", compute_signature(copy))]))


COPIES: dict[str, Callable[[Image.Image], Image.Image]] = {
    "resized": lambda img: synth.resized(img, 0.5),
    "recompressed": lambda img: jpeg_roundtrip(img, 25),
    "brightness_up": lambda img: synth.brightness_shifted(img, 1.3),
    "brightness_down": lambda img: synth.brightness_shifted(img, 0.7),
    "cropped_corner": lambda img: synth.cropped(img, 0.15, "bottom-right"),
    "cropped_centre": lambda img: synth.cropped(img, 0.08, "center"),
    "flipped": synth.hflipped,
    "rotated_small": lambda img: synth.rotated(img, 4.0),
    "rotated_larger": lambda img: synth.rotated(img, -10.0),
    "overlaid": lambda img: synth.overlaid(img, 3),
    "squashed_to_square": lambda img: img.resize((224, 224), Image.Resampling.LANCZOS),  # 320x224 stored as 1:1
    "stretched_wide": lambda img: img.resize((420, 224), Image.Resampling.LANCZOS),
    "rotated_black_corners": lambda img: img.rotate(3.0, resample=Image.Resampling.BICUBIC),
}


@pytest.mark.parametrize("domain", sorted(RENDERERS))
@pytest.mark.parametrize("kind", sorted(COPIES))
def test_near_duplicate_matches_its_original(domain: str, kind: str) -> None:
    original = RENDERERS[domain](11, SIZE)
    matches = match_pair(original, jpeg_roundtrip(COPIES[kind](original)))
    assert [(m.a, m.b) for m in matches] == [("original", "copy")]
    assert matches[0].score >= 0.8


def test_flip_and_crop_are_found_by_their_dedicated_methods() -> None:
    original = synth.render_virtual(5, SIZE)
    assert match_pair(original, synth.hflipped(original))[0].method == "phash_mirror"
    assert match_pair(original, synth.cropped(original, 0.15, "top-left"))[0].method == "crop_window"
    assert match_pair(original, synth.rotated(original, 12.0))[0].method == "rotation"


@pytest.mark.parametrize("domain", sorted(RENDERERS))
def test_a_turned_copy_of_a_wide_picture_is_found_when_it_was_indexed_first(domain: str) -> None:
    """Turned 12 degrees and zoomed to fill, a 2.5:1 frame keeps under half of the original: B (the original)
    then lies mostly outside A (the copy), while A lies wholly inside B; the overlap test takes the larger share."""
    original = RENDERERS[domain](11, (560, 224))
    copy = jpeg_roundtrip(synth.rotated(original, 12.0))
    matcher: PerceptualMatcher[str] = PerceptualMatcher()
    matches = list(matcher.match_new([("copy", compute_signature(copy)), ("original", compute_signature(original))]))
    assert [(m.a, m.b) for m in matches] == [("copy", "original")]
    assert matches[0].covered_b < PerceptualParams().min_overlap <= matches[0].covered_a


@pytest.mark.parametrize("domain", sorted(RENDERERS))
def test_recoloured_layout_does_not_match(domain: str) -> None:
    original = RENDERERS[domain](21, SIZE)
    assert match_pair(original, synth.recoloured(original, 4)) == []


def test_colour_test_ignores_highlights_a_brightened_copy_clipped_to_white() -> None:
    """A copy brightened until its sky is white lost its colour there; only the toned cells can be compared."""
    original = synth.render_photo(26, SIZE)
    washed = synth.brightness_shifted(original, 1.35)
    assert (np.asarray(washed.convert("L")) >= 250).mean() > 0.2
    assert [(m.a, m.b) for m in match_pair(original, washed)] == [("original", "copy")]
    # the colour test over all cells, and the texture route (which compares mean colour) off
    everywhere = PerceptualMatcher(PerceptualParams(min_toned_cells=10**6, min_texture_correlation=2.0))
    assert list(everywhere.match_new([("o", compute_signature(original)), ("c", compute_signature(washed))])) == []
    assert match_pair(original, synth.recoloured(original, 4)) == []


@pytest.mark.parametrize(("render", "seeds"), [(synth.render_photo, (4, 5)), (synth.render_photo, (5, 17)), (synth.render_virtual, (1, 29))])
def test_template_look_alikes_pass_luminance_and_colour_but_fail_structure_or_local_colour(render, seeds: tuple[int, int]) -> None:
    a, b = (compute_signature(render(seed, SIZE)) for seed in seeds)
    params = PerceptualParams()
    verdict = verify_pair(a, b, Alignment(), params)
    assert verdict.aligned and verdict.chroma_cosine >= params.min_chroma_cosine, "a look-alike the older tests accepted"
    without_local_colour = verify_pair(a, b, Alignment(), replace(params, max_recoloured_share=1.0))
    assert without_local_colour.structure < params.min_structure_correlation or \
        chroma_fields(a, b, verdict.alignment, params).recoloured_share(params) > params.max_recoloured_share
    assert not verdict.accepted


def test_a_figure_painted_in_other_colours_on_the_same_backdrop_is_refused() -> None:
    """The whole-field colour cosine is ruled by the backdrop; the share of cells painted another colour is not."""
    original = synth.render_virtual(1, (640, 480))
    pixels = np.asarray(original).copy()
    backdrop = pixels[2, 2].astype(int)
    figure = np.abs(pixels.astype(int) - backdrop).sum(axis=2) > 60
    pixels[figure] = pixels[figure][:, [2, 0, 1]]  # the figure's channels rotated: same shapes, other colours
    repainted = Image.fromarray(pixels)
    params = PerceptualParams()
    a, b = compute_signature(original), compute_signature(repainted)
    assert chroma_fields(a, b, Alignment(), params).recoloured_share(params) > params.max_recoloured_share
    assert match_pair(original, repainted) == []
    brightened = compute_signature(jpeg_roundtrip(synth.brightness_shifted(original, 1.25)))
    assert chroma_fields(a, brightened, Alignment(), params).recoloured_share(params) <= params.max_recoloured_share


@pytest.mark.parametrize("kind", ["resized", "recompressed", "brightness_down", "overlaid"])
def test_frame_aligned_copies_keep_their_fine_structure(kind: str) -> None:
    original = synth.render_photo(11, SIZE)
    params = PerceptualParams()
    verdict = verify_pair(compute_signature(original), compute_signature(jpeg_roundtrip(COPIES[kind](original))), Alignment(), params)
    assert verdict.accepted and verdict.structure >= params.min_structure_correlation


def test_high_pass_removes_broad_layout_and_keeps_edges() -> None:
    ramp = np.tile(np.linspace(0, 255, 32, dtype=np.float32), (32, 1))
    assert np.abs(high_pass(ramp)[4:-4, 4:-4]).max() < 1.0
    step = np.zeros((32, 32), dtype=np.float32)
    step[:, 16:] = 255
    assert np.abs(high_pass(step)[:, 14:18]).min() > 40


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_barely_overlapping_scene_crops_do_not_match(seed: int) -> None:
    left, right = synth.scene_crops(synth.render_scene(seed, (1000, 375)), seed)
    assert match_pair(left, right) == []


def test_distinct_images_do_not_match() -> None:
    items = [
        (f"{domain}-{seed}", compute_signature(render(seed, SIZE)))
        for domain, render in RENDERERS.items()
        for seed in range(100, 106)
    ]
    assert list(PerceptualMatcher().match_new(items)) == []


def test_phash_is_imagehash_phash_and_record_round_trips() -> None:
    img = synth.render_photo(7, SIZE)
    sig = compute_signature(img)
    grey = img.resize((128, 90), Image.Resampling.BOX).convert("L")
    assert (sig.phash ^ int(str(imagehash.phash(grey)), 16)).bit_count() <= 2

    record = sig.to_record()
    for column in ("phash", "dhash", "phash_mirror"):
        assert -(1 << 63) <= record[column] < (1 << 63)
    back = PerceptualSignature.from_record(record)
    assert back.hashes == sig.hashes
    assert np.array_equal(back.thumb_luma, sig.thumb_luma)
    assert np.array_equal(back.thumb_chroma, sig.thumb_chroma)
    assert back.aspect == pytest.approx(SIZE[0] / SIZE[1], abs=1e-3)
    assert PerceptualHashes.from_record(record) == sig.hashes

    assert from_signed64(to_signed64((1 << 64) - 1)) == (1 << 64) - 1
    assert to_signed64(1 << 63) == -(1 << 63)

    with pytest.raises(ValueError, match="signature_version"):
        PerceptualSignature.from_record({**record, "signature_version": 0})
    with pytest.raises(ValueError, match="view_hashes"):
        PerceptualHashes.from_record({**record, "view_hashes": b"short"})


def test_incremental_run_loads_only_candidate_thumbnails() -> None:
    old_images = {f"old-{seed}": synth.render_painting(seed, SIZE) for seed in range(30, 36)}
    stored = {key: compute_signature(img).to_record() for key, img in old_images.items()}
    requested: list[list[str]] = []

    def load(keys: list[str]) -> dict[str, PerceptualSignature]:
        requested.append(sorted(keys))
        return {key: PerceptualSignature.from_record(stored[key]) for key in keys}

    matcher: PerceptualMatcher[str] = PerceptualMatcher(load_signatures=load)
    matcher.index_existing((key, PerceptualHashes.from_record(record)) for key, record in stored.items())
    new = [
        ("new-copy", compute_signature(synth.cropped(old_images["old-32"], 0.12, "top-right"))),
        ("new-distinct", compute_signature(synth.render_painting(99, SIZE))),
    ]
    matches = list(matcher.match_new(new))
    assert [(m.a, m.b) for m in matches] == [("old-32", "new-copy")]
    assert requested == [["old-32"]]
    assert len(matcher) == 8


def test_matcher_refuses_unverifiable_candidates_and_duplicate_keys() -> None:
    img = synth.render_photo(3, SIZE)
    matcher: PerceptualMatcher[str] = PerceptualMatcher()
    matcher.index_existing([("old", compute_signature(img).hashes)])
    with pytest.raises(LookupError, match="load_signatures"):
        list(matcher.match_new([("new", compute_signature(synth.resized(img, 0.5)))]))
    with pytest.raises(ValueError, match="already indexed"):
        matcher.index_existing([("old", compute_signature(img))])


def test_signature_from_path_decodes_draft_and_applies_exif_orientation(tmp_path) -> None:
    upright = synth.render_virtual(8, (480, 320))
    stored = upright.transpose(Image.Transpose.ROTATE_90)  # what a camera writes with orientation 6
    exif = Image.Exif()
    exif[0x0112] = 6
    path = tmp_path / "photo.jpg"
    stored.save(path, format="JPEG", quality=90, exif=exif)

    from_file = signature_from_path(path)
    in_memory = compute_signature(upright)
    assert from_file.aspect == pytest.approx(1.5, abs=0.01)
    assert (from_file.phash ^ in_memory.phash).bit_count() <= 4


def test_rejects_non_rgb_and_tiny_images() -> None:
    with pytest.raises(ValueError, match="RGB"):
        compute_signature(Image.new("L", (64, 64)))
    with pytest.raises(ValueError, match="too small"):
        compute_signature(Image.new("RGB", (4, 64)))


def test_batched_phash_equals_imagehash_phash() -> None:
    squares = [
        render(seed, SIZE).resize((32, 32), Image.Resampling.LANCZOS).convert("L")
        for render in RENDERERS.values()
        for seed in (1, 2)
    ]
    ours = batched_phash(np.stack([np.asarray(square) for square in squares]))
    assert ours == [int(str(imagehash.phash(square)), 16) for square in squares]


def test_earlier_calls_keep_hashes_and_reload_thumbnails_on_demand() -> None:
    originals = {f"img-{seed}": synth.render_photo(seed, SIZE) for seed in range(40, 44)}
    stored = {key: compute_signature(img) for key, img in originals.items()}
    requested: list[list[str]] = []

    def load(keys: list[str]) -> dict[str, PerceptualSignature]:
        requested.append(sorted(keys))
        return {key: stored[key] for key in keys}

    matcher: PerceptualMatcher[str] = PerceptualMatcher(PerceptualParams(signature_cache_size=1), load_signatures=load)
    assert list(matcher.match_new(stored.items())) == []
    copy = compute_signature(jpeg_roundtrip(synth.resized(originals["img-40"], 0.6)))
    matches = list(matcher.match_new([("copy", copy)]))
    assert [(m.a, m.b) for m in matches] == [("img-40", "copy")]
    assert requested == [["img-40"]], "only the last signature stays cached after its call; others are reloaded"
    assert matcher.index_nbytes() > 0


def test_an_aspect_changed_copy_is_aligned_by_a_stretch_and_covers_the_whole_frame() -> None:
    original = synth.render_photo(13, (640, 480))
    squashed = original.resize((300, 300), Image.Resampling.LANCZOS)  # 4:3 stored as 1:1
    (match,) = match_pair(original, jpeg_roundtrip(squashed))
    assert match.method in ("phash", "dhash") and (match.covered_a, match.covered_b) == pytest.approx((1.0, 1.0), abs=0.05)


@pytest.mark.parametrize("domain", sorted(RENDERERS))
def test_a_look_alike_of_another_aspect_ratio_is_still_refused(domain: str) -> None:
    """The stretch hypothesis is tried only on a full-frame hash hit, and verification still decides."""
    original = RENDERERS[domain](21, SIZE)
    other = RENDERERS[domain](22, (224, 224))
    assert match_pair(original, synth.recoloured(original, 4).resize((224, 224))) == []
    assert match_pair(original, other) == []


def test_a_crop_covers_part_of_its_source_frame_and_all_of_its_own() -> None:
    original = synth.render_painting(3, (640, 480))
    (match,) = match_pair(original, jpeg_roundtrip(synth.cropped(original, 0.15, "top-left")))
    assert match.covered_b == pytest.approx(1.0, abs=0.03)  # all of the crop is in the original
    assert match.covered_a == pytest.approx(0.85**2, abs=0.06)  # which shows ~72 % of the original


@pytest.mark.parametrize("seed", [0, 1, 3, 4])
def test_the_side_with_an_overlay_is_named(seed: int) -> None:
    original = synth.render_painting(seed, (640, 480))
    (match,) = match_pair(original, jpeg_roundtrip(synth.overlaid(original, seed), 92))
    assert match.edited == "b"
    (reverse,) = match_pair(jpeg_roundtrip(synth.overlaid(original, seed), 92), original)
    assert reverse.edited == "a"


@pytest.mark.parametrize("kind", ["resized", "recompressed", "brightness_up", "flipped", "cropped_centre"])
def test_copies_without_an_overlay_name_no_edited_side(kind: str) -> None:
    original = synth.render_painting(5, (640, 480))
    (match,) = match_pair(original, jpeg_roundtrip(COPIES[kind](original)))
    assert match.edited is None


def test_edited_side_needs_a_local_disagreement() -> None:
    original = compute_signature(jpeg_roundtrip(synth.render_photo(2, (320, 240))))
    assert edited_side(original, original, Alignment(), PerceptualParams()) is None


def test_confirm_pair_verifies_a_pair_the_index_radii_would_not_retrieve() -> None:
    """A copy two transformations away (cropped, then brightened) from its original is confirmed directly;
    a different picture is not."""
    original = synth.render_virtual(9, (640, 480))
    twice = synth.brightness_shifted(synth.cropped(original, 0.1, "center"), 1.25)
    assert confirm_pair(compute_signature(original), compute_signature(jpeg_roundtrip(twice))) is not None
    assert confirm_pair(compute_signature(original), compute_signature(synth.render_virtual(10, (640, 480)))) is None


def test_a_grey_picture_matches_its_copy_with_a_coloured_logo_but_not_a_colourised_copy() -> None:
    grey = synth.render_photo(8, (640, 480)).convert("L").convert("RGB")
    assert [(m.a, m.b) for m in match_pair(grey, jpeg_roundtrip(synth.overlaid(grey, 2), 92))] == [("original", "copy")]
    assert match_pair(grey, synth.recoloured(grey, 4)) == []


def originals_and_copies() -> list[tuple[str, PerceptualSignature]]:
    """Twelve renders of the three domains, every other one followed by a copy, and a copy before its original."""
    items = []
    for seed in range(12):
        original = RENDERERS[("photo", "painting", "virtual")[seed % 3]](seed, SIZE)
        items.append((f"o{seed}", compute_signature(original)))
        if seed % 2 == 0:
            items.append((f"c{seed}", compute_signature(list(COPIES.values())[seed % len(COPIES)](original))))
    items.insert(3, ("late-copy", compute_signature(synth.resized(RENDERERS["photo"](9, SIZE), 0.6))))  # before o9
    return items


def test_a_batch_matches_exactly_as_one_image_at_a_time_and_a_failed_batch_indexes_nothing() -> None:
    """match_batch is match_one with one lookup per batch: the same pairs, scores and order, whether a copy falls
    in the batch of its original or in a later one; a refused batch leaves the matcher as it was."""
    items = originals_and_copies()
    one: PerceptualMatcher[str] = PerceptualMatcher()
    expected = [one.match_one(key, signature) for key, signature in items]
    batched: PerceptualMatcher[str] = PerceptualMatcher()
    got = [matches for start in range(0, len(items), 5) for matches in batched.match_batch(items[start:start + 5])]
    assert got == expected and sum(map(len, got)) >= 6
    with pytest.raises(ValueError, match="already indexed"):
        batched.match_batch([("fresh", items[0][1]), items[1]])
    assert len(batched) == len(items) and batched.match_batch([("fresh", items[0][1])])[0][0].a == items[0][0]
