"""Benchmark: aesforge's perceptual near-duplicate stage vs imagededup's PHash on one synthetic set.

Not a test.  Writes ``--n`` image files with known ground truth (originals,
transformed copies, look-alike negatives) under ``--out``, then runs both
tools over the same files and prints throughput and pair precision/recall,
overall and per transformation, then clusters aesforge's pairs with the pool's
own rule (a star around the best copy) and prints cluster-level precision/recall
and the share of groups whose original is kept.  ``--hard`` adds periodic
textures (stripes, checkers, plaid) with cropped and rotated copies and
look-alike textures; ``--real`` also runs the same transformations on
scikit-image's bundled photographs.  See bench/README.md for how to read it.

    python bench/dedup.py --n 5000 --out bench/out --seed 0 --hard --real
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from assets.image_pool.logic.clusters import CONFIRMED, DuplicateEdge, PoolCandidate, assign_clusters
from assets.image_pool.logic.images import measure_file
from assets.core.logic.normalized_pixels import normalized_pixels
from assets.image_pool.logic.perceptual import PerceptualMatch, PerceptualMatcher, PerceptualSignature, compute_signature, confirm_pair
from sample import synth

TRANSFORMATIONS = ("resized", "aspect_resized", "recompressed", "cropped", "brightness_shifted", "flipped", "rotated",
                   "rotated_corners", "overlaid")
PERIODIC = ("periodic_cropped", "periodic_rotated")  # --hard: copies of periodic textures
NEGATIVES = ("recoloured", "scene_crop", "periodic_lookalike")
# motorcycle_right.png is left out: it is motorcycle_left's stereo partner, a near-duplicate by any pixel measure
REAL_PHOTOS = ("astronaut.png", "camera.png", "coffee.png", "chelsea.png", "rocket.jpg", "hubble_deep_field.jpg",
               "motorcycle_left.png", "retina.jpg", "coins.png", "moon.png", "brick.png",
               "grass.png", "gravel.png", "page.png", "text.png", "immunohistochemistry.png", "ihc.png", "cell.png",
               "color.png", "logo.png", "horse.png", "clock_motion.png")
RENDERERS = (synth.render_photo, synth.render_painting, synth.render_virtual)
COPIES_PER_ORIGINAL = 2
WORKERS = os.cpu_count() or 1

Pair = frozenset[str]


@dataclass(frozen=True)
class Truth:
    """Per file: its duplicate group (None = unique) and its kind (original, a transformation or a negative)."""

    group: dict[str, int | None]
    kind: dict[str, str]


def _transform(img: Image.Image, kind: str, rng: np.random.Generator) -> tuple[Image.Image, int]:
    """The copy and the JPEG quality to store it at."""
    if kind == "resized":
        return synth.resized(img, float(rng.uniform(0.35, 0.8))), 90
    if kind == "aspect_resized":  # stretched or squashed, e.g. 4:3 stored as 1:1
        change = float(rng.uniform(1.15, 1.5)) ** float(rng.choice([-1.0, 1.0]))
        scale = float(rng.uniform(0.6, 1.0))
        return img.resize((max(8, round(img.width * scale * change)), max(8, round(img.height * scale))), Image.Resampling.LANCZOS), 90
    if kind == "recompressed":
        return img, int(rng.integers(15, 50))
    if kind == "cropped":
        return synth.cropped(img, float(rng.uniform(0.03, synth.MAX_CROP_FRACTION)), synth.ANCHORS[rng.integers(5)]), 90
    if kind == "brightness_shifted":
        return synth.brightness_shifted(img, float(rng.choice([rng.uniform(0.65, 0.85), rng.uniform(1.15, 1.35)]))), 90
    if kind == "flipped":
        return synth.hflipped(img), 90
    if kind in ("rotated", "periodic_rotated"):
        return synth.rotated(img, float(rng.choice([-1.0, 1.0]) * rng.uniform(2.0, 12.0))), 90
    if kind == "rotated_corners":  # turned by a few degrees in an editor: same size, the corners filled black
        return img.rotate(float(rng.choice([-1.0, 1.0]) * rng.uniform(1.0, 6.0)), resample=Image.Resampling.BICUBIC), 90
    if kind == "periodic_cropped":
        return synth.cropped(img, float(rng.uniform(0.03, synth.MAX_CROP_FRACTION)), synth.ANCHORS[rng.integers(5)]), 90
    if kind == "overlaid":
        return synth.overlaid(img, rng), 90
    raise ValueError(f"unknown transformation {kind!r}")


def _save(img: Image.Image, path: Path, quality: int) -> None:
    path.write_bytes(synth.recompressed(img, quality))


def _write_group(args: tuple[int, int, str]) -> list[tuple[str, int | None, str]]:
    """One original, its copies and maybe a recoloured look-alike; returns (file, group, kind) rows."""
    index, seed, image_dir = args
    rng = np.random.default_rng([seed, index])
    size = (int(rng.integers(400, 800)), int(rng.integers(300, 600)))
    original = RENDERERS[index % len(RENDERERS)](rng, size)
    rows: list[tuple[str, int | None, str]] = []
    png = index % 5 == 0  # some originals are lossless, as in real crawls
    name = f"g{index:06d}_original.{'png' if png else 'jpg'}"
    if png:
        original.save(Path(image_dir) / name)
    else:
        _save(original, Path(image_dir) / name, 92)
    rows.append((name, index, "original"))
    for c, kind in enumerate(rng.choice(TRANSFORMATIONS, COPIES_PER_ORIGINAL, replace=False)):
        copy, quality = _transform(original, str(kind), rng)
        name = f"g{index:06d}_copy{c}_{kind}.jpg"
        _save(copy, Path(image_dir) / name, quality)
        rows.append((name, index, str(kind)))
    if index % 3 == 0:
        name = f"g{index:06d}_negative_recoloured.jpg"
        _save(synth.recoloured(original, rng), Path(image_dir) / name, 90)
        rows.append((name, None, "recoloured"))
    return rows


def _write_scene(args: tuple[int, int, str]) -> list[tuple[str, int | None, str]]:
    index, seed, image_dir = args
    rng = np.random.default_rng([seed, 1_000_000 + index])
    left, right = synth.scene_crops(synth.render_scene(rng, (1400, 525)), rng)
    rows: list[tuple[str, int | None, str]] = []
    for side, img in (("a", left), ("b", right)):
        name = f"scene{index:05d}_{side}_negative_scene_crop.jpg"
        _save(img, Path(image_dir) / name, 90)
        rows.append((name, None, "scene_crop"))
    return rows


def texture_params(rng: np.random.Generator, short_side: int) -> dict:
    """What a periodic texture looks like: kind (stripes, checkers, plaid), angle, period (3 to 12 repeats across the
    short side: finer ones are below what the 32 px verification thumbnail resolves and reduce to their mean colour),
    aspect of its cells, palette."""
    return {"kind": int(rng.integers(3)), "angle": float(rng.uniform(0, 180)),
            "period": short_side / float(rng.uniform(3, 12)),
            "cell_aspect": float(rng.uniform(0.6, 1.6)), "threshold": float(rng.uniform(-0.5, 0.5)),
            "colours": rng.integers(0, 256, (2, 3)).tolist(), "label": rng.integers(0, 256, 5).tolist()}


def periodic_texture(params: dict, size: tuple[int, int], seed: int) -> Image.Image:
    """Stripes, checkers or plaid with a small label, as on a fabric or wallpaper sample: the hardest case for
    crop windows, whose hashes change with the phase of the pattern."""
    width, height = size
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    angle, period = np.radians(params["angle"]), params["period"]
    u = (xs * np.cos(angle) + ys * np.sin(angle)) / period
    v = (-xs * np.sin(angle) + ys * np.cos(angle)) / (period * params["cell_aspect"])
    if params["kind"] == 0:  # stripes
        field = (np.sin(2 * np.pi * u) > params["threshold"]).astype(np.float32)
    elif params["kind"] == 1:  # checkers
        field = ((np.floor(u) + np.floor(v)) % 2).astype(np.float32)
    else:  # plaid: two soft stripe sets
        field = 0.5 + 0.25 * np.sin(2 * np.pi * u) + 0.25 * np.sin(2 * np.pi * v * 1.7)
    colours = np.array(params["colours"], dtype=np.float32)
    canvas = colours[0] * (1 - field[..., None]) + colours[1] * field[..., None]
    canvas += np.random.default_rng(seed).normal(0, 3, canvas.shape)  # a little sensor-like noise
    image = Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8))
    x, y, *ink = params["label"]
    left, top = x * width // 512, y * height // 512
    ImageDraw.Draw(image).rectangle((left, top, left + width // 5, top + height // 8), fill=tuple(ink))
    return image


def _write_periodic(args: tuple[int, int, str]) -> list[tuple[str, int | None, str]]:
    """A periodic texture, a cropped and a rotated copy, and a look-alike: the same texture at another period."""
    index, seed, image_dir = args
    group = 2_000_000 + index
    rng = np.random.default_rng([seed, group])
    size = (int(rng.integers(400, 800)), int(rng.integers(300, 600)))
    params = texture_params(rng, min(size))
    original = periodic_texture(params, size, index)
    rows = [(f"p{index:06d}_original.jpg", group, "original")]
    _save(original, Path(image_dir) / rows[0][0], 92)
    for c, kind in enumerate(PERIODIC):
        copy, quality = _transform(original, kind, rng)
        name = f"p{index:06d}_copy{c}_{kind}.jpg"
        _save(copy, Path(image_dir) / name, quality)
        rows.append((name, group, kind))
    # same palette, period and angle, another weave: a different product in the same colours (another period or
    # angle alone would be a zoomed or turned copy of the same pattern, i.e. a true duplicate)
    lookalike = {**params, "kind": (params["kind"] + 1 + int(rng.integers(2))) % 3, "label": rng.integers(0, 256, 5).tolist()}
    name = f"p{index:06d}_negative_periodic_lookalike.jpg"
    _save(periodic_texture(lookalike, size, index + 1), Path(image_dir) / name, 90)
    rows.append((name, None, "periodic_lookalike"))
    return rows


def generate(n: int, seed: int, image_dir: Path, hard: bool) -> Truth:
    """About ``n`` files: ~92 % in duplicate groups (plus recoloured negatives), the rest scene-crop pairs; with
    ``hard``, a fifth of the groups are periodic textures instead."""
    image_dir.mkdir(parents=True, exist_ok=True)
    per_group = 1 + COPIES_PER_ORIGINAL + 1 / 3
    n_scenes = max(1, round(0.04 * n))
    n_groups = max(1, round((n - 2 * n_scenes) / per_group))
    n_periodic = n_groups // 5 if hard else 0
    rows: list[tuple[str, int | None, str]] = []
    with ProcessPoolExecutor(WORKERS) as pool:
        for chunk in pool.map(_write_group, [(i, seed, str(image_dir)) for i in range(n_groups - n_periodic)], chunksize=16):
            rows.extend(chunk)
        for chunk in pool.map(_write_periodic, [(i, seed, str(image_dir)) for i in range(n_periodic)], chunksize=16):
            rows.extend(chunk)
        for chunk in pool.map(_write_scene, [(i, seed, str(image_dir)) for i in range(n_scenes)], chunksize=4):
            rows.extend(chunk)
    return Truth(group={f: g for f, g, _ in rows}, kind={f: k for f, _, k in rows})


def generate_real(seed: int, image_dir: Path) -> Truth | None:
    """Every transformation of each of scikit-image's bundled photographs (None when scikit-image is not installed)."""
    try:
        import skimage
    except ImportError:
        return None
    data = Path(skimage.__file__).parent / "data"
    image_dir.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, int | None, str]] = []
    for index, name in enumerate(n for n in REAL_PHOTOS if (data / n).exists()):
        with Image.open(data / name) as photo:
            original = photo.convert("RGB")
        if min(original.size) < 128:
            continue
        stem = f"real{index:03d}_{Path(name).stem}"
        _save(original, image_dir / f"{stem}_original.jpg", 95)
        rows.append((f"{stem}_original.jpg", index, "original"))
        rng = np.random.default_rng([seed, 3_000_000 + index])
        for kind in TRANSFORMATIONS:
            copy, quality = _transform(original, kind, rng)
            _save(copy, image_dir / f"{stem}_{kind}.jpg", quality)
            rows.append((f"{stem}_{kind}.jpg", index, kind))
    return Truth(group={f: g for f, g, _ in rows}, kind={f: k for f, _, k in rows})


# --------------------------------------------------------------------------
# the two tools
# --------------------------------------------------------------------------


@dataclass
class AesforgeRun:
    pairs: set[Pair]
    matches: list[PerceptualMatch[str]]
    signatures: dict[str, PerceptualSignature]
    seconds: float


def pool_signature(path: str) -> PerceptualSignature:
    """The file's signature as the pool makes it (normalized_images): from its full decode, not a draft."""
    return compute_signature(normalized_pixels(Path(path).read_bytes()))


def run_aesforge(image_dir: Path) -> AesforgeRun:
    """Decode + signatures in WORKERS processes (like imagededup's encoder), then one streaming matcher pass."""
    paths = sorted(str(p) for p in image_dir.iterdir())
    start = time.perf_counter()
    matcher: PerceptualMatcher[str] = PerceptualMatcher()
    kept: dict[str, PerceptualSignature] = {}

    def keep(named):
        for name, signature in named:
            kept[name] = signature
            yield name, signature

    with ProcessPoolExecutor(WORKERS) as pool:
        signatures = zip((Path(p).name for p in paths), pool.map(pool_signature, paths, chunksize=64))
        matches = list(matcher.match_new(keep(signatures)))
    seconds = time.perf_counter() - start
    return AesforgeRun({frozenset((m.a, m.b)) for m in matches}, matches, kept, seconds)


def _file_quality(path: str) -> PoolCandidate:
    """The file as the pool sees it: size and quality measures (record, image and file named after the file)."""
    name = Path(path).name
    measured = measure_file(Path(path).read_bytes(), 10**9)
    return PoolCandidate(name, name, name, measured.width, measured.height, "CC0-1.0", "allowed", "bench",
                         **measured.quality.to_record())


def cluster_with_pool_rule(image_dir: Path, run: AesforgeRun) -> tuple[dict[str, str], set[Pair], float]:
    """The pool's clustering (assets/image_pool/logic/clusters.py) over aesforge's pairs: each file's representative,
    the pairs inside clusters, and the seconds it took (quality measures in WORKERS processes included)."""
    start = time.perf_counter()
    with ProcessPoolExecutor(WORKERS) as pool:
        candidates = list(pool.map(_file_quality, sorted(str(p) for p in image_dir.iterdir()), chunksize=32))
    edges = [DuplicateEdge(m.a, m.b, f"perceptual:{m.method}", m.distance, m.score, m.covered_a, m.covered_b, m.edited)
             for m in run.matches]

    def confirm(representative: str, image: str) -> DuplicateEdge | None:
        m = confirm_pair(run.signatures[representative], run.signatures[image])
        return None if m is None else DuplicateEdge(representative, image, CONFIRMED, m.distance, m.score)

    clustering = assign_clusters(candidates, edges, ["CC0-1.0"], confirm)
    representative = {a.record_id: a.representative_record_id for a in clustering.assignments}
    members: dict[str, list[str]] = defaultdict(list)
    for name, rep in representative.items():
        members[rep].append(name)
    pairs = {frozenset(p) for group in members.values() for p in combinations(sorted(group), 2)}
    return representative, pairs, time.perf_counter() - start


def originals_kept(truth: Truth, representative: dict[str, str]) -> tuple[float, int, Counter[str]]:
    """Among duplicate groups whose original was clustered with at least one of its copies: the share whose
    original is that cluster's representative, how many such groups, and what was kept instead where it was not."""
    members: dict[str, list[str]] = defaultdict(list)
    for name, rep in representative.items():
        members[rep].append(name)
    kept, counted, instead = 0, 0, Counter()
    for name, group in truth.group.items():
        if group is None or truth.kind[name] != "original":
            continue
        rep = representative.get(name, name)
        if not any(truth.group.get(m) == group and m != name for m in members[rep]):
            continue  # the original's copies were not clustered with it: nothing to choose between
        counted += 1
        if rep == name:
            kept += 1
        else:
            instead[truth.kind[rep]] += 1
    return kept / max(1, counted), counted, instead


def run_imagededup(image_dir: Path) -> tuple[set[Pair], float]:
    """imagededup PHash with its documented defaults (max_distance_threshold=10, all CPUs)."""
    from imagededup.methods import PHash

    start = time.perf_counter()
    phasher = PHash(verbose=False)
    encodings = phasher.encode_images(image_dir=str(image_dir), num_enc_workers=WORKERS)
    duplicates = phasher.find_duplicates(encoding_map=encodings, max_distance_threshold=10, num_dist_workers=WORKERS)
    elapsed = time.perf_counter() - start
    return {frozenset((a, b)) for a, others in duplicates.items() for b in others}, elapsed


# --------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------


def cluster_pairs(pairs: Iterable[Pair]) -> set[Pair]:
    """All pairs inside the connected components (union-find) of the reported pairs."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pair in pairs:
        a, b = sorted(pair)
        parent[find(a)] = find(b)
    members: dict[str, list[str]] = defaultdict(list)
    for x in parent:
        members[find(x)].append(x)
    return {frozenset(p) for group in members.values() for p in combinations(sorted(group), 2)}


def true_pairs(truth: Truth) -> dict[Pair, str]:
    """Every same-group pair, labelled by the copy's transformation ("sibling" for two copies)."""
    groups: dict[int, list[str]] = defaultdict(list)
    for f, g in truth.group.items():
        if g is not None:
            groups[g].append(f)
    labelled: dict[Pair, str] = {}
    for files in groups.values():
        for a, b in combinations(files, 2):
            kinds = {truth.kind[a], truth.kind[b]}
            labelled[frozenset((a, b))] = (kinds - {"original"}).pop() if "original" in kinds else "sibling"
    return labelled


@dataclass(frozen=True)
class Scores:
    precision: float
    recall: float
    per_kind: dict[str, tuple[float, float, int]]  # kind -> (precision, recall, n true pairs)
    false_positives: Counter[str]


def evaluate(reported: set[Pair], truth: Truth) -> Scores:
    expected = true_pairs(truth)
    correct = reported & expected.keys()
    false_positives: Counter[str] = Counter()
    involved_wrong: Counter[str] = Counter()
    for pair in reported - expected.keys():
        kinds = {truth.kind[f] for f in pair}
        negative = sorted(kinds & set(NEGATIVES))
        false_positives[negative[0] if negative else "other"] += 1
        for kind in kinds & {*TRANSFORMATIONS, *PERIODIC}:
            involved_wrong[kind] += 1
    per_kind: dict[str, tuple[float, float, int]] = {}
    for kind in (*TRANSFORMATIONS, *PERIODIC, "sibling"):
        wanted = {p for p, k in expected.items() if k == kind}
        hit = len(wanted & correct)
        precision = hit / (hit + involved_wrong[kind]) if hit + involved_wrong[kind] else 1.0
        per_kind[kind] = (precision, hit / len(wanted) if wanted else 1.0, len(wanted))
    precision = len(correct) / len(reported) if reported else 1.0
    return Scores(precision, len(correct) / len(expected), per_kind, false_positives)


def print_report(n_files: int, rows: list[tuple[str, float, Scores]]) -> None:
    print(f"\n{n_files} files, {WORKERS} worker processes per tool\n")
    print(f"{'tool':44s} {'img/s':>8s} {'precision':>10s} {'recall':>8s}  false positives by kind")
    for name, seconds, s in rows:
        fps = ", ".join(f"{k}={v}" for k, v in sorted(s.false_positives.items())) or "none"
        print(f"{name:44s} {n_files / seconds:8.1f} {s.precision:10.4f} {s.recall:8.4f}  {fps}")
    print("\nper transformation: precision / recall (true pairs)")
    kinds = [k for k, (_, _, n) in rows[0][2].per_kind.items() if n]
    print(f"{'transformation':20s}" + "".join(f"{name[:34]:>36s}" for name, _, _ in rows))
    for kind in kinds:
        cells = []
        for _, _, s in rows:
            p, r, n = s.per_kind[kind]
            cells.append(f"{p:.4f} / {r:.4f} ({n})")
        print(f"{kind:20s}" + "".join(f"{c:>36s}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=5000, help="about how many image files to generate")
    parser.add_argument("--out", type=Path, default=Path("bench/out"), help="folder for images/ and truth.json")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hard", action="store_true", help="a fifth of the groups are periodic textures")
    parser.add_argument("--real", action="store_true", help="also transform scikit-image's bundled photographs")
    parser.add_argument("--skip-imagededup", action="store_true", help="aesforge only")
    parser.add_argument("--dump-errors", type=Path, metavar="JSON",
                        help="write aesforge's wrong and missed pairs (reported and star clusters) to this file")
    args = parser.parse_args()

    image_dir = args.out / "images"
    truth_path = args.out / "truth.json"
    params = {"n": args.n, "seed": args.seed, "hard": args.hard}
    if truth_path.exists() and json.loads(truth_path.read_text())["params"] == params:
        saved = json.loads(truth_path.read_text())
        truth = Truth(group=saved["group"], kind=saved["kind"])
        print(f"reusing {len(truth.kind)} files in {image_dir}")
    else:
        if image_dir.exists() and any(image_dir.iterdir()):
            raise SystemExit(f"{image_dir} holds files from another run; remove it or pick another --out")
        started = time.perf_counter()
        truth = generate(args.n, args.seed, image_dir, args.hard)
        truth_path.write_text(json.dumps({"params": params, "group": truth.group, "kind": truth.kind}))
        print(f"generated {len(truth.kind)} files in {time.perf_counter() - started:.0f} s")

    errors = {"synthetic": report(image_dir, truth, imagededup=not args.skip_imagededup)}
    if args.real:
        real = generate_real(args.seed, args.out / "real")
        if real is None:
            print("\nreal photographs: scikit-image is not installed (pip install -e '.[bench]'); not measured")
        else:
            print(f"\nreal photographs: scikit-image's bundled photos, each with every transformation")
            errors["real"] = report(args.out / "real", real, imagededup=not args.skip_imagededup)
    if args.dump_errors:
        args.dump_errors.write_text(json.dumps(errors, indent=1))
        print(f"\nwrong and missed pairs written to {args.dump_errors}")


def report(image_dir: Path, truth: Truth, imagededup: bool) -> dict[str, list[dict]]:
    """Print the figures for one set of files; return aesforge's errors (:func:`errors`)."""
    ours = run_aesforge(image_dir)
    representative, star_pairs, cluster_s = cluster_with_pool_rule(image_dir, ours)
    rows = [
        ("aesforge perceptual (reported pairs)", ours.seconds, evaluate(ours.pairs, truth)),
        ("aesforge pool clusters (star, best copy)", ours.seconds + cluster_s, evaluate(star_pairs, truth)),
        ("aesforge perceptual (union-find clusters)", ours.seconds, evaluate(cluster_pairs(ours.pairs), truth)),
    ]
    if imagededup:
        theirs, theirs_s = run_imagededup(image_dir)
        rows += [("imagededup PHash thr=10 (reported pairs)", theirs_s, evaluate(theirs, truth)),
                 ("imagededup PHash thr=10 (union-find clusters)", theirs_s, evaluate(cluster_pairs(theirs), truth))]
    print_report(len(truth.kind), rows)
    share, n_groups, instead = originals_kept(truth, representative)
    kept_instead = ", ".join(f"{k}={v}" for k, v in instead.most_common()) or "none"
    print(f"\noriginal kept as representative: {share:.4f} of {n_groups} groups (kept instead: {kept_instead});"
          f" clustering and quality measures {cluster_s:.1f} s")
    return errors(truth, ours, star_pairs, representative)


def errors(truth: Truth, run: AesforgeRun, star_pairs: set[Pair], representative: dict[str, str]) -> dict[str, list[dict]]:
    """aesforge's wrong pairs (reported or inside a star cluster) and missed true pairs, each with both files'
    kinds, where the pair stands (reported, star) and the matcher's evidence when it reported the pair: what to
    look at before changing a rule."""
    expected = true_pairs(truth)
    evidence = {frozenset((m.a, m.b)): {"method": m.method, "distance": m.distance, "score": m.score,
                                        "covered_a": m.covered_a, "covered_b": m.covered_b} for m in run.matches}

    def row(pair: Pair) -> dict:
        a, b = sorted(pair)
        return {"a": a, "b": b, "kinds": [truth.kind[a], truth.kind[b]], "label": expected.get(pair),
                "reported": pair in run.pairs, "star": pair in star_pairs,
                "representatives": [representative.get(a, a), representative.get(b, b)], **evidence.get(pair, {})}

    wrong = sorted((run.pairs | star_pairs) - expected.keys(), key=sorted)
    missed = sorted((p for p in expected if p not in run.pairs or p not in star_pairs), key=sorted)
    return {"wrong": [row(p) for p in wrong], "missed": [row(p) for p in missed]}


if __name__ == "__main__":
    main()
