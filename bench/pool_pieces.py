"""Benchmark: CPU time per image of each piece of the pool's per-image work, on ``bench/pool.py``'s files.

Not a test. Process CPU time (``time.process_time``, one thread: no other process's load counts) of
``measure_file`` (the whole of normalized_images' per-file work) and of its pieces, each over the same files, then
of perceptual matching (``PerceptualMatcher.match_batch`` in batches of 256, lookup and verification apart). Prints
milliseconds per image. See bench/README.md (``pool.py``).

    python bench/pool_pieces.py --n 300
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
import time
from pathlib import Path

from PIL import Image

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from assets.core.logic.normalized_pixels import decode_upright  # noqa: E402
from assets.core.worker_processes import CpuPool  # noqa: E402
from assets.image_pool.logic import clarity, images, perceptual, source_quality  # noqa: E402
from assets.image_pool.perceptual_dedup import verify_in_workers  # noqa: E402
from pool import generate  # noqa: E402

MAX_PIXELS = 100_000_000
BATCH = 256


def _cpu_ms(fn, inputs: list, repeat: int) -> float:
    """Best of ``repeat`` passes of ``fn`` over ``inputs``: process CPU milliseconds per input."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for x in inputs:
            fn(x)
        best = min(best, time.process_time() - start)
    return 1000 * best / len(inputs)


def piece_rows(blobs: list[bytes], repeat: int) -> dict[str, float]:
    """CPU ms per image of ``measure_file`` and of each of its pieces."""
    decoded = [images.decode_normalized(b, MAX_PIXELS) for b in blobs]
    rgbs = [d.image for d in decoded]
    smalls = [d.small for d in decoded]
    lumas = [s.convert("L") for s in smalls]
    uprights = list(zip(decoded, blobs, lumas))
    r = repeat
    return {
        "decode (decode_upright)": _cpu_ms(lambda b: decode_upright(b, MAX_PIXELS), blobs, r),
        "plain decode (Image.open().convert('RGB'))": _cpu_ms(
            lambda b: Image.open(io.BytesIO(b)).convert("RGB"), blobs, r),
        "pixel digest": _cpu_ms(lambda im: hashlib.sha256(im.tobytes()).hexdigest(), rgbs, r),
        "measuring copy (measuring_copy)": _cpu_ms(images.measuring_copy, rgbs, r),
        "spread": _cpu_ms(images.pixel_spread, smalls, r),
        "luma of the measuring copy": _cpu_ms(lambda s: s.convert("L"), smalls, r),
        "tones": _cpu_ms(source_quality.tones, lumas, r),
        "fine detail": _cpu_ms(source_quality.fine_detail, rgbs, r),
        "source quality (all)": _cpu_ms(lambda u: source_quality.measure_source(u[0].upright, u[1], u[2]), uprights, r),
        "clarity": _cpu_ms(lambda u: clarity.measure_clarity(u[0].image, u[2]), uprights, r),
        "signature": _cpu_ms(perceptual.compute_signature, rgbs, r),
        "measure_file (all of it)": _cpu_ms(lambda b: images.measure_file(b, MAX_PIXELS), blobs, r),
    }


def match(signatures: list, cpu: CpuPool | None) -> tuple[list, dict[str, float]]:
    """Every image's matches through ``match_batch`` (batches of BATCH), and seconds of all of it and of the
    verification alone: process CPU time without ``cpu``, wall time with it (the work is in other processes)."""
    clock = time.perf_counter if cpu else time.process_time
    seconds = {"verify": 0.0, "candidates": 0}

    def verify(candidates: list, params: perceptual.PerceptualParams) -> list:
        start = clock()
        try:
            return verify_in_workers(cpu, candidates, params) if cpu else perceptual.verify_candidates(candidates, params)
        finally:
            seconds["verify"] += clock() - start
            seconds["candidates"] += len(candidates)

    matcher = perceptual.PerceptualMatcher(verify=verify)
    start = clock()
    found = [m for i in range(0, len(signatures), BATCH) for m in matcher.match_batch(signatures[i : i + BATCH])]
    seconds["all"] = clock() - start
    return found, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="how many files of bench/pool.py's set")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "pool")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="passes per piece; the fastest counts")
    parser.add_argument("--match-only", action="store_true", help="only the matching (its signatures are computed)")
    args = parser.parse_args()
    paths = generate(args.n, args.seed, args.out / f"images-{args.n}-seed{args.seed}")
    blobs = [p.read_bytes() for p in paths]
    rows = {} if args.match_only else piece_rows(blobs, args.repeat)
    signatures = [(str(i), images.measure_file(b, MAX_PIXELS).signature) for i, b in enumerate(blobs)]
    matched, seconds = match(signatures, None)
    rows["matching (match_batch, 256 a batch)"] = 1000 * seconds["all"] / len(signatures)
    rows["  of which verification"] = 1000 * seconds["verify"] / len(signatures)
    with CpuPool(os.cpu_count() or 2) as cpu:
        cpu.map(perceptual.verify_candidates, [([], perceptual.PerceptualParams())] * 4 * cpu.workers)  # started
        in_workers, wall = match(signatures, cpu)
    same = "the same pairs" if in_workers == matched else "OTHER PAIRS"
    width = max(map(len, rows))
    print(f"{len(paths)} files of {args.out}, process CPU ms per image (best of {args.repeat}):")
    for name, ms in rows.items():
        print(f"  {name:<{width}}  {ms:6.2f}")
    n_pairs = sum(map(len, matched))
    print(f"  ({n_pairs} pairs matched from {seconds['candidates']} candidate pairs)")
    print(f"matching wall time, verification in {os.cpu_count()} worker processes:"
          f" {1000 * wall['all'] / len(signatures):.2f} ms per image ({same};"
          f" verification {1000 * wall['verify'] / len(signatures):.2f}); machine load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
