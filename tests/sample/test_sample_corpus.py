"""The sample corpus is deterministic and its expected.json tells the truth about it."""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
from pathlib import Path

import imagehash
import numpy as np
import pytest
from PIL import Image, ImageOps, UnidentifiedImageError

from sample import synth
from sample.make_corpus import (
    ADDITIONS_COLUMNS,
    ALLOWED_LICENSES,
    DOMAINS,
    MANIFEST_COLUMNS,
    MIN_VALID_SIDE,
    ORIENTATION_TAG,
    REDISTRIBUTION_VALUES,
    REJECTION_KINDS,
    SOURCE_URL_BASE,
    TRANSFORMATIONS,
    build_corpus,
)

NEAR_DUPLICATE_MAX_PHASH = 10


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus")
    build_corpus(out)
    return out


@pytest.fixture(scope="module")
def expected(corpus: Path) -> dict:
    return json.loads((corpus / "expected.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def manifest(corpus: Path) -> list[dict[str, str]]:
    with open(corpus / "manifest.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def additions(corpus: Path) -> list[dict[str, str]]:
    """The hostile manifest's rows, read as latin-1 so that every row parses (its locators are ASCII)."""
    with open(corpus / "additions.csv", newline="", encoding="latin-1") as handle:
        return list(csv.DictReader(handle))


def _tree_digests(root: Path) -> dict[str, str]:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _rgb(path: Path) -> np.ndarray:
    with Image.open(path) as img:
        return np.asarray(ImageOps.exif_transpose(img).convert("RGB"), dtype=np.float64)


def _phash(path: Path) -> imagehash.ImageHash:
    with Image.open(path) as img:
        return imagehash.phash(ImageOps.exif_transpose(img))


# --------------------------------------------------------------------------
# determinism and layout
# --------------------------------------------------------------------------


def test_rebuild_over_previous_build_is_byte_identical_to_fresh_build(corpus: Path, tmp_path: Path) -> None:
    second = tmp_path / "second"
    stale = second / "images" / "photography" / "stale.jpg"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"left over from an older build")

    build_corpus(second)

    assert not stale.exists(), "a rebuild must not leave files from an older build behind"
    first_digests, second_digests = _tree_digests(corpus), _tree_digests(second)
    assert sorted(first_digests) == sorted(second_digests)
    assert first_digests == second_digests


def test_refuses_a_folder_holding_files_that_are_not_its_own(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    (tmp_path / "images").mkdir()
    with pytest.raises(FileExistsError, match="notes.txt"):
        build_corpus(tmp_path)
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert (tmp_path / "images").is_dir()


def test_manifest_has_the_agreed_columns_and_values(corpus: Path, manifest: list[dict[str, str]]) -> None:
    with open(corpus / "manifest.csv", newline="", encoding="utf-8") as handle:
        assert tuple(next(csv.reader(handle))) == MANIFEST_COLUMNS
    assert 55 <= len(manifest) <= 70
    assert {row["domain"] for row in manifest} == set(DOMAINS)
    assert {row["redistribution"] for row in manifest} <= set(REDISTRIBUTION_VALUES)
    licences = [row["license"] for row in manifest]
    assert licences.count("CC-BY-4.0") >= 2
    assert 1 <= sum(licence not in ALLOWED_LICENSES for licence in licences) <= 2
    for row in manifest:
        assert row["source_url"].startswith(SOURCE_URL_BASE), row
        assert all(row[column] for column in MANIFEST_COLUMNS), row
    assert len({row["source_url"] for row in manifest}) == len(manifest)


def test_every_locator_exists_and_every_image_file_is_listed_once(
    corpus: Path, manifest: list[dict[str, str]], additions: list[dict[str, str]], expected: dict
) -> None:
    assert expected["manifests"] == ["manifest.csv", "additions.csv"]
    locators = [row["locator"] for row in manifest + additions]
    assert len(locators) == len(set(locators))
    for locator in locators:
        assert not Path(locator).is_absolute() and ".." not in Path(locator).parts
        assert (corpus / locator).is_file(), locator
    on_disk = {p.relative_to(corpus).as_posix() for p in (corpus / "images").rglob("*") if p.is_file()}
    assert on_disk == set(locators)
    inbox_on_disk = {p.relative_to(corpus).as_posix() for p in (corpus / "inbox").rglob("*") if p.is_file()}
    assert inbox_on_disk == {entry["locator"] for entry in expected["inbox"]}
    assert not inbox_on_disk & set(locators), "folder-source files carry no manifest rows"


def test_counts_match_the_files(manifest: list[dict[str, str]], additions: list[dict[str, str]], expected: dict) -> None:
    counts = expected["counts"]
    for domain in DOMAINS:
        assert counts["manifest_rows"][domain] == sum(row["domain"] == domain for row in manifest + additions)
        assert counts["inbox_files"][domain] == sum(entry["domain"] == domain for entry in expected["inbox"])
        assert counts["originals"][domain] == sum(entry["domain"] == domain for entry in expected["originals"])
        assert counts["originals"][domain] >= 16
    assert 5 <= sum(counts["inbox_files"].values()) <= 8
    assert sum(counts["duplicate_copies"].values()) == len(expected["duplicates"])
    assert sum(counts["rejections"].values()) == len(expected["rejections"])


# --------------------------------------------------------------------------
# planted duplicates
# --------------------------------------------------------------------------


def _planted(expected: dict, transformation: str) -> list[dict]:
    return [d for d in expected["duplicates"] if d["transformation"] == transformation]


def test_planted_duplicate_counts(expected: dict) -> None:
    in_manifest = [d for d in expected["duplicates"] if d["copy"].startswith("images/")]
    per_kind = {kind: sum(d["transformation"] == kind for d in in_manifest) for kind in TRANSFORMATIONS}
    assert per_kind == {"exact": 3, "resized": 2, "recompressed": 2, "cropped": 2, "brightness_shifted": 2}
    assert sum(d["copy"].startswith("inbox/") for d in expected["duplicates"]) == 2
    assert all(d["original"].startswith("images/") for d in expected["duplicates"])


def test_exact_duplicates_have_identical_bytes(corpus: Path, expected: dict) -> None:
    for dup in _planted(expected, "exact"):
        assert dup["original"] != dup["copy"]
        assert (corpus / dup["original"]).read_bytes() == (corpus / dup["copy"]).read_bytes()


def test_resized_copies_are_scaled_versions_of_their_original(corpus: Path, expected: dict) -> None:
    for dup in _planted(expected, "resized"):
        with Image.open(corpus / dup["original"]) as original, Image.open(corpus / dup["copy"]) as copy:
            scale = dup["params"]["scale"]
            assert abs(copy.width - original.width * scale) <= 1 and abs(copy.height - original.height * scale) <= 1
            reference = original.convert("RGB").resize(copy.size, Image.Resampling.LANCZOS)
            difference = np.asarray(copy.convert("RGB"), dtype=np.float64) - np.asarray(reference, dtype=np.float64)
            assert np.abs(difference).mean() < 4.0, dup


def test_cropped_copies_are_the_anchored_region_of_their_original(corpus: Path, expected: dict) -> None:
    for dup in _planted(expected, "cropped"):
        original, copy = _rgb(corpus / dup["original"]), _rgb(corpus / dup["copy"])
        height, width = original.shape[:2]
        fraction, anchor = dup["params"]["fraction"], dup["params"]["anchor"]
        assert abs(copy.shape[1] - width * (1 - fraction)) <= 1 and abs(copy.shape[0] - height * (1 - fraction)) <= 1
        top = {"top-left": 0, "center": (height - copy.shape[0]) // 2}[anchor]
        left = {"top-left": 0, "center": (width - copy.shape[1]) // 2}[anchor]
        region = original[top : top + copy.shape[0], left : left + copy.shape[1]]
        assert np.abs(copy - region).mean() < 3.0, dup


def test_recompressed_copies_are_lossy_jpegs_of_their_original(corpus: Path, expected: dict) -> None:
    for dup in _planted(expected, "recompressed"):
        with Image.open(corpus / dup["copy"]) as copy_file:
            assert copy_file.format == "JPEG"
        original, copy = _rgb(corpus / dup["original"]), _rgb(corpus / dup["copy"])
        assert original.shape == copy.shape
        difference = np.abs(original - copy).mean()
        assert 0.0 < difference < 12.0, dup  # q35 costs a brushstroke texture about 9 levels


def test_brightness_shifted_copies_scale_mean_brightness_by_the_factor(corpus: Path, expected: dict) -> None:
    for dup in _planted(expected, "brightness_shifted"):
        original, copy = _rgb(corpus / dup["original"]), _rgb(corpus / dup["copy"])
        assert original.shape == copy.shape
        assert abs(copy.mean() / original.mean() - dup["params"]["factor"]) < 0.06, dup


def test_near_duplicates_hash_closer_than_any_two_distinct_originals(corpus: Path, expected: dict) -> None:
    originals = {entry["locator"]: _phash(corpus / entry["locator"]) for entry in expected["originals"]}
    pairwise = [a - b for a, b in itertools.combinations(originals.values(), 2)]
    assert min(pairwise) > NEAR_DUPLICATE_MAX_PHASH, "distinct originals must not look alike"
    for dup in expected["duplicates"]:
        distance = originals[dup["original"]] - _phash(corpus / dup["copy"])
        assert distance <= NEAR_DUPLICATE_MAX_PHASH, (dup, distance)


# --------------------------------------------------------------------------
# bad files and EXIF
# --------------------------------------------------------------------------


def _rejected(expected: dict, kind: str) -> list[str]:
    return [r["locator"] for r in expected["rejections"] if r["kind"] == kind]


def test_every_rejection_kind_is_planted_and_known(expected: dict) -> None:
    assert {r["kind"] for r in expected["rejections"]} == set(REJECTION_KINDS)


def test_the_additions_manifest_has_a_latin1_row_a_repeated_id_and_a_tracking_pixel(
    corpus: Path, additions: list[dict[str, str]], expected: dict
) -> None:
    lines = (corpus / "additions.csv").read_bytes().split(b"\n")
    assert tuple(lines[0].decode().split(",")) == ADDITIONS_COLUMNS
    not_utf8 = []
    for number, line in enumerate(lines, start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            not_utf8.append(number)
    assert [f"additions.csv#line={n}" for n in not_utf8] == _rejected(expected, "bad_encoding")
    ids = [row["id"] for row in additions]
    (repeated,) = {i for i in ids if ids.count(i) > 1}
    later = [row["locator"] for row in additions if row["id"] == repeated][1:]
    assert later == _rejected(expected, "duplicate_id")
    assert "Étude" in lines[1].decode("utf-8")  # the first row's non-Latin title, saved right
    pixels = [locator for locator in _rejected(expected, "too_small") if locator.endswith(".gif")]
    assert pixels and all(Image.open(corpus / locator).size == (1, 1) for locator in pixels)


def test_truncated_files_open_but_fail_to_load(corpus: Path, expected: dict) -> None:
    for locator in _rejected(expected, "truncated"):
        with Image.open(corpus / locator) as img:
            assert img.format == "JPEG"
            with pytest.raises(OSError):
                img.load()


def test_not_an_image_files_have_an_image_extension_but_do_not_open(corpus: Path, expected: dict) -> None:
    for locator in _rejected(expected, "not_an_image"):
        assert Path(locator).suffix in {".jpg", ".png"}
        with pytest.raises(UnidentifiedImageError):
            Image.open(corpus / locator)


def test_too_small_and_blank_files_are_valid_images_with_the_named_defect(corpus: Path, expected: dict) -> None:
    for locator in _rejected(expected, "too_small"):
        with Image.open(corpus / locator) as img:
            img.load()
            assert max(img.size) < 32
            if img.size != (1, 1):  # a tracking pixel has one colour; anything bigger must not look blank
                assert len(img.getcolors(maxcolors=1 << 16)) > 1, "too small, not blank"
    for locator in _rejected(expected, "blank"):
        with Image.open(corpus / locator) as img:
            assert min(img.size) >= MIN_VALID_SIDE
            assert all(low == high for low, high in img.convert("RGB").getextrema())


def test_licence_rejections_are_exactly_the_rows_outside_the_allow_list(
    manifest: list[dict[str, str]], expected: dict
) -> None:
    outside = {row["locator"] for row in manifest if row["license"] not in expected["allowed_licenses"]}
    assert outside and outside == set(_rejected(expected, "license_not_allowed"))


def test_every_image_not_rejected_for_its_content_decodes_at_a_usable_size(
    corpus: Path, manifest: list[dict[str, str]], additions: list[dict[str, str]], expected: dict
) -> None:
    content_rejects = {r["locator"] for r in expected["rejections"] if r["kind"] in {"truncated", "not_an_image", "too_small", "blank"}}
    locators = [row["locator"] for row in manifest + additions] + [entry["locator"] for entry in expected["inbox"]]
    for locator in locators:
        if locator in content_rejects:
            continue
        with Image.open(corpus / locator) as img:
            img.load()
            assert min(img.size) >= MIN_VALID_SIDE, locator


def test_exif_oriented_png_needs_rotating_to_its_upright_size(corpus: Path, expected: dict) -> None:
    assert expected["exif_orientation"]
    originals = {entry["locator"]: entry for entry in expected["originals"]}
    for entry in expected["exif_orientation"]:
        with Image.open(corpus / entry["locator"]) as img:
            assert img.format == "PNG"
            assert img.getexif()[ORIENTATION_TAG] == entry["orientation"]
            assert list(img.size) == entry["stored_size"]
            upright = ImageOps.exif_transpose(img)
        assert list(upright.size) == entry["upright_size"] != entry["stored_size"]
        assert [originals[entry["locator"]]["width"], originals[entry["locator"]]["height"]] == entry["upright_size"]


# --------------------------------------------------------------------------
# synth functions used by bench/dedup.py
# --------------------------------------------------------------------------

_RENDERERS = (synth.render_photo, synth.render_painting, synth.render_virtual)


@pytest.mark.parametrize("render", _RENDERERS)
def test_renderers_are_deterministic_and_seed_sensitive(render) -> None:
    first, again, other = render(7, (160, 120)), render(7, (160, 120)), render(8, (160, 120))
    assert first.size == (160, 120) and first.mode == "RGB"
    assert first.tobytes() == again.tobytes()
    assert first.tobytes() != other.tobytes()


def test_renderer_accepts_a_generator_and_rejects_tiny_sizes() -> None:
    from_int = synth.render_virtual(3, (96, 64))
    from_generator = synth.render_virtual(np.random.default_rng(3), (96, 64))
    assert from_int.tobytes() == from_generator.tobytes()
    with pytest.raises(ValueError):
        synth.render_photo(1, (8, 8))


def test_rotated_keeps_size_and_leaves_no_empty_corners() -> None:
    flat = Image.new("RGB", (400, 300), (200, 180, 160))
    for degrees in (-15, -4, 7, 15):
        turned = synth.rotated(flat, degrees)
        assert turned.size == flat.size
        assert np.asarray(turned).min(axis=(0, 1)).tolist() >= [190, 170, 150], degrees
    with pytest.raises(ValueError):
        synth.rotated(flat, 20)


def test_overlaid_marks_a_small_corner_area() -> None:
    base = synth.render_painting(2, (320, 240))
    for seed in range(4):
        changed = np.any(np.asarray(synth.overlaid(base, seed)) != np.asarray(base), axis=-1)
        assert 0.005 < changed.mean() <= synth.MAX_OVERLAY_AREA_FRACTION, seed


def test_cropped_rejects_large_fractions_and_unknown_anchors() -> None:
    img = synth.blank_image((100, 100))
    assert synth.cropped(img, 0.15, "bottom-right").size == (85, 85)
    with pytest.raises(ValueError):
        synth.cropped(img, 0.2, "center")
    with pytest.raises(ValueError):
        synth.cropped(img, 0.1, "middle")  # type: ignore[arg-type]


def test_hflipped_mirrors_columns() -> None:
    img = synth.render_virtual(4, (64, 48))
    assert np.array_equal(np.asarray(synth.hflipped(img)), np.asarray(img)[:, ::-1])


def test_recoloured_changes_colours_but_keeps_the_value_layout() -> None:
    img = synth.render_virtual(5, (200, 150))
    other = synth.recoloured(img, 1)
    rgb_change = np.abs(np.asarray(other, dtype=np.float64) - np.asarray(img, dtype=np.float64)).mean()
    value, other_value = (np.asarray(i.convert("HSV"), dtype=np.float64)[..., 2] for i in (img, other))
    value_change = np.abs(other_value - value).mean()
    assert rgb_change > 20.0
    assert value_change < 2.0


def test_scene_crops_come_from_both_ends_and_overlap_at_most_a_fifth() -> None:
    scene = synth.render_scene(11, (900, 300))
    pixels = np.asarray(scene)
    for seed in range(3):
        left, right = synth.scene_crops(scene, seed)
        assert left.size == right.size
        span = left.width
        assert 2 * span - scene.width <= synth.MAX_SCENE_CROP_OVERLAP * span
        for crop, x0 in ((left, 0), (right, scene.width - span)):
            block = np.asarray(crop)
            tops = range(scene.height - crop.height + 1)
            assert any(np.array_equal(pixels[y : y + crop.height, x0 : x0 + span], block) for y in tops)


def test_truncated_jpeg_keeps_its_header_and_loses_its_tail() -> None:
    data = synth.truncated_jpeg_bytes(synth.render_photo(1, (200, 150)))
    assert data.startswith(b"\xff\xd8") and not data.endswith(b"\xff\xd9")
    with Image.open(io.BytesIO(data)) as img, pytest.raises(OSError):
        img.load()


def test_blank_image_is_uniform_and_its_noisy_variant_nearly_so() -> None:
    uniform = np.asarray(synth.blank_image((64, 64), (10, 20, 30)))
    assert (uniform == [10, 20, 30]).all()
    noisy = np.asarray(synth.blank_image((64, 64), (10, 20, 30), noise_seed=1, noise_amplitude=2)).astype(int)
    assert 0 < np.abs(noisy - [10, 20, 30]).max() <= 2
