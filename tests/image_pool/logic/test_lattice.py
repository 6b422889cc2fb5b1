"""The lattice route: crops and turned copies of a periodic pattern are candidates by their lattice and verified;
another weave in the same palette is a candidate but refused; an image that does not repeat never enters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from assets.image_pool.logic.lattice import Lattice, LatticeBounds, LatticeIndex, LatticeVector, angle_between, hypotheses, lattice_vectors
from assets.image_pool.logic.perceptual import PerceptualMatcher, PerceptualParams, compute_signature
from PIL import Image, ImageDraw

from sample import synth
from tests.image_pool.logic.test_perceptual_texture import PALETTE, SIZE, stored, template_render, woven

# no hash lookup finds anything a pixel off: whatever matches came through the lattice route
LATTICE_ONLY = PerceptualParams(phash_radius=0, dhash_radius=0, mirror_radius=0, window_radius=0, rotation_radius=0)
CROP = 0.12
TURN = 9.0


def matches(images: list[tuple[str, object]], params: PerceptualParams = LATTICE_ONLY) -> tuple[set[tuple[str, str, str]], PerceptualMatcher]:
    matcher: PerceptualMatcher[str] = PerceptualMatcher(params)
    found = {(m.a, m.b, m.method) for m in matcher.match_new([(key, compute_signature(img)) for key, img in images])}
    return found, matcher


@pytest.mark.parametrize(("kind", "degrees", "repeats"), [("stripes", 20.0, 9), ("checkers", 20.0, 8), ("plaid", 35.0, 10)])
def test_a_crop_and_a_turned_copy_are_lattice_candidates_and_verified(kind: str, degrees: float, repeats: int) -> None:
    original = woven(kind, degrees, repeats)
    cropped = stored(synth.cropped(original, CROP, "top-left"))
    turned = stored(synth.rotated(original, TURN))
    found, matcher = matches([("original", original), ("cropped", cropped), ("turned", turned)])
    assert matcher.periodic_indexed() == 3
    assert {("original", "cropped", "lattice"), ("original", "turned", "lattice")} <= found
    assert matches([("original", original), ("cropped", cropped)], PerceptualParams(lattice_neighbours=0))[0] == set()


def test_the_lattice_hypothesis_is_the_crop_scale_and_the_turn() -> None:
    """A crop keeps the pixel period, so in units of the frame's height its period grows by 1 / (1 - crop); a turn
    zoomed to fill grows it by the zoom and turns the wave vectors by the turn (the Alignment convention)."""
    original = woven("stripes", 20.0, 9)
    a = compute_signature(original)
    [vector] = a.lattice.vectors[:1]
    assert vector.period == pytest.approx(1 / 9, rel=0.03)
    assert angle_between(vector.degrees, 20.0) < 1.5
    b = compute_signature(stored(synth.cropped(original, CROP, "bottom-right")))
    scale, turn = hypotheses(a.lattice, b.lattice, LatticeBounds())[0]
    assert scale == pytest.approx(1 - CROP, rel=0.02) and abs(turn) < 1.0
    c = compute_signature(stored(synth.rotated(original, TURN)))
    zoom = math.cos(math.radians(TURN)) + SIZE[0] / SIZE[1] * math.sin(math.radians(TURN))
    scale, turn = hypotheses(a.lattice, c.lattice, LatticeBounds())[0]
    assert scale == pytest.approx(1 / zoom, rel=0.03) and turn == pytest.approx(TURN, abs=1.5)


def plaid(cross: float, label: tuple[int, int]) -> Image.Image:
    """:func:`woven`'s plaid with the cross stripes ``cross`` times as fine: the same lattice along the first
    direction, another weave."""
    width, height = SIZE
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    period, theta = min(SIZE) / 8, math.radians(20.0)
    u = (xs * math.cos(theta) + ys * math.sin(theta)) / period
    v = (-xs * math.sin(theta) + ys * math.cos(theta)) / period
    field = 0.5 + 0.25 * np.sin(2 * np.pi * u) + 0.25 * np.sin(2 * np.pi * v * cross)
    colours = np.array(PALETTE, dtype=np.float32)
    canvas = colours[0] * (1 - field[..., None]) + colours[1] * field[..., None]
    canvas += np.random.default_rng(0).normal(0, 3, canvas.shape)
    image = Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8))
    ImageDraw.Draw(image).rectangle((*label, label[0] + width // 5, label[1] + height // 8), fill=(200, 40, 40))
    return image


def test_another_weave_in_the_same_palette_is_a_candidate_but_refused() -> None:
    original = plaid(1.7, (60, 50))
    lookalike = stored(plaid(2.6, (250, 180)))
    a, b = compute_signature(original), compute_signature(lookalike)
    index = LatticeIndex(LatticeBounds())
    index.add(0, a.lattice)
    assert [item for _, item, _ in index.ranked(b.lattice)] == [0]
    found, matcher = matches([("original", original), ("lookalike", lookalike)])
    assert matcher.periodic_indexed() == 2 and found == set()
    copy = stored(synth.cropped(original, CROP, "center"))
    assert matches([("original", original), ("copy", copy)])[0] == {("original", "copy", "lattice")}


def test_the_same_weave_in_another_contrast_is_no_candidate() -> None:
    """Stripes of one palette and of a paler one have the same shapes: the lattice key's contrast keeps them apart."""
    a = compute_signature(woven("stripes", 20.0, 9))
    pale = np.asarray(woven("stripes", 20.0, 9), dtype=np.float32)
    pale = (pale - pale.mean()) * 0.5 + pale.mean()
    b = compute_signature(stored(Image.fromarray(pale.clip(0, 255).astype(np.uint8))))
    assert a.lattice.vectors and b.lattice.vectors
    assert hypotheses(a.lattice, b.lattice, LatticeBounds()) == []


@pytest.mark.parametrize("index", [479, 1127])
def test_an_image_that_does_not_repeat_never_enters_the_route(index: int) -> None:
    render = template_render(index)
    found, matcher = matches([("render", render), ("cropped", stored(synth.cropped(render, CROP, "center")))])
    assert matcher.periodic_indexed() == 0
    assert all(method != "lattice" for _, _, method in found)


def test_the_index_reads_only_neighbouring_buckets_and_keeps_k() -> None:
    bounds = LatticeBounds()
    index = LatticeIndex(bounds)
    query = Lattice((LatticeVector(0.1, 30.0),), (120.0, 130.0), 100.0, 20.0)
    for i, period in enumerate(np.geomspace(0.02, 0.5, 40)):
        index.add(i, Lattice((LatticeVector(float(period), 30.0),), (120.0, 130.0), 100.0, 20.0))
    index.add(99, Lattice((LatticeVector(0.1, 80.0),), (120.0, 130.0), 100.0, 20.0))  # another angle
    index.add(98, Lattice((LatticeVector(0.1, 30.0),), (180.0, 130.0), 100.0, 20.0))  # another colour
    ranked = index.ranked(query)
    periods = [index_period for _, item, _ in ranked for index_period in [np.geomspace(0.02, 0.5, 40)[item]]]
    assert ranked and all(abs(math.log(p / 0.1)) <= math.log(bounds.max_scale) for p in periods)
    assert {item for _, item, _ in ranked}.isdisjoint({98, 99})
    assert [item for _, item, _ in ranked][0] == int(np.argmin(np.abs(np.log(np.geomspace(0.02, 0.5, 40) / 0.1))))
    assert len(index.ranked(query, before=5)) == 0
    with pytest.raises(ValueError):
        index.add(0, query)


def test_lattice_vectors_of_a_flat_square_are_none() -> None:
    assert lattice_vectors(np.full((48, 48), 128, dtype=np.uint8), 1.5) == ()


def test_a_batch_finds_what_one_image_at_a_time_finds() -> None:
    """match_batch offers the batch's earlier periodic images as lattice candidates, as match_one would."""
    original = woven("plaid", 35.0, 10)
    images = [("original", original), ("cropped", stored(synth.cropped(original, CROP, "bottom-left"))),
              ("turned", stored(synth.rotated(original, -TURN)))]
    one_by_one, _ = matches(images)
    matcher: PerceptualMatcher[str] = PerceptualMatcher(LATTICE_ONLY)
    batched = {(m.a, m.b, m.method) for found in matcher.match_batch([(k, compute_signature(img)) for k, img in images])
               for m in found}
    assert batched == one_by_one and ("original", "turned", "lattice") in batched
    assert matcher.periodic_indexed() == 3
