"""Benchmark: aesforge's perceptual near-duplicate stage vs imagededup's PHash on one synthetic set.

Not a test.  Writes ``--n`` image files with known ground truth (originals,
transformed copies, look-alike negatives) under ``--out``, then runs both
tools over the same files and prints throughput and pair precision/recall,
overall and per transformation.  See bench/README.md for how to read it.

    python bench/dedup.py --n 5000 --out bench/out --seed 0
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
from PIL import Image

from assets.image_pool.logic.perceptual import PerceptualMatcher, signature_from_path
from sample import synth

TRANSFORMATIONS = ("resized", "recompressed", "cropped", "brightness_shifted", "flipped", "rotated", "overlaid")
NEGATIVES = ("recoloured", "scene_crop")
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
    if kind == "recompressed":
        return img, int(rng.integers(15, 50))
    if kind == "cropped":
        return synth.cropped(img, float(rng.uniform(0.03, synth.MAX_CROP_FRACTION)), synth.ANCHORS[rng.integers(5)]), 90
    if kind == "brightness_shifted":
        return synth.brightness_shifted(img, float(rng.choice([rng.uniform(0.65, 0.85), rng.uniform(1.15, 1.35)]))), 90
    if kind == "flipped":
        return synth.hflipped(img), 90
    if kind == "rotated":
        return synth.rotated(img, float(rng.choice([-1.0, 1.0]) * rng.uniform(2.0, 12.0))), 90
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


def generate(n: int, seed: int, image_dir: Path) -> Truth:
    """About ``n`` files: ~92 % in duplicate groups (plus recoloured negatives), the rest scene-crop pairs."""
    image_dir.mkdir(parents=True, exist_ok=True)
    per_group = 1 + COPIES_PER_ORIGINAL + 1 / 3
    n_scenes = max(1, round(0.04 * n))
    n_groups = max(1, round((n - 2 * n_scenes) / per_group))
    rows: list[tuple[str, int | None, str]] = []
    with ProcessPoolExecutor(WORKERS) as pool:
        for chunk in pool.map(_write_group, [(i, seed, str(image_dir)) for i in range(n_groups)], chunksize=16):
            rows.extend(chunk)
        for chunk in pool.map(_write_scene, [(i, seed, str(image_dir)) for i in range(n_scenes)], chunksize=4):
            rows.extend(chunk)
    return Truth(group={f: g for f, g, _ in rows}, kind={f: k for f, _, k in rows})


# --------------------------------------------------------------------------
# the two tools
# --------------------------------------------------------------------------


def run_aesforge(image_dir: Path) -> tuple[set[Pair], float]:
    """Decode + signatures in WORKERS processes (like imagededup's encoder), then one streaming matcher pass."""
    paths = sorted(str(p) for p in image_dir.iterdir())
    start = time.perf_counter()
    matcher: PerceptualMatcher[str] = PerceptualMatcher()
    with ProcessPoolExecutor(WORKERS) as pool:
        signatures = zip((Path(p).name for p in paths), pool.map(signature_from_path, paths, chunksize=64))
        pairs = {frozenset((m.a, m.b)) for m in matcher.match_new(signatures)}
    return pairs, time.perf_counter() - start


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
        for kind in kinds & set(TRANSFORMATIONS):
            involved_wrong[kind] += 1
    per_kind: dict[str, tuple[float, float, int]] = {}
    for kind in (*TRANSFORMATIONS, "sibling"):
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
    kinds = list(rows[0][2].per_kind)
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
    args = parser.parse_args()

    image_dir = args.out / "images"
    truth_path = args.out / "truth.json"
    if truth_path.exists() and json.loads(truth_path.read_text())["params"] == {"n": args.n, "seed": args.seed}:
        saved = json.loads(truth_path.read_text())
        truth = Truth(group=saved["group"], kind=saved["kind"])
        print(f"reusing {len(truth.kind)} files in {image_dir}")
    else:
        if image_dir.exists() and any(image_dir.iterdir()):
            raise SystemExit(f"{image_dir} holds files from another run; remove it or pick another --out")
        started = time.perf_counter()
        truth = generate(args.n, args.seed, image_dir)
        truth_path.write_text(json.dumps({"params": {"n": args.n, "seed": args.seed}, "group": truth.group, "kind": truth.kind}))
        print(f"generated {len(truth.kind)} files in {time.perf_counter() - started:.0f} s")

    ours, ours_s = run_aesforge(image_dir)
    theirs, theirs_s = run_imagededup(image_dir)
    print_report(
        len(truth.kind),
        [
            ("aesforge perceptual (reported pairs)", ours_s, evaluate(ours, truth)),
            ("aesforge perceptual (union-find clusters)", ours_s, evaluate(cluster_pairs(ours), truth)),
            ("imagededup PHash thr=10 (reported pairs)", theirs_s, evaluate(theirs, truth)),
            ("imagededup PHash thr=10 (union-find clusters)", theirs_s, evaluate(cluster_pairs(theirs), truth)),
        ],
    )


if __name__ == "__main__":
    main()
