"""CLIP embedding throughput against the decode rate of the same files: is the model or the decode the limit?

Run from the repository root, e.g.

    python bench/clip_embed.py --n 4096 --random-init --batch-size 256 --device cuda
    python bench/clip_embed.py --n 512 --random-init --batch-size 32 --device cpu

1. Writes ``--n`` synthetic camera-sized JPEGs (gradients, shapes, noise; 640×480 to 800×533) under ``--out``,
   or reuses them when a previous run wrote the same number with the same seed.
2. Decode rate: a plain Pillow decode and RGB conversion of every file in a process pool of one worker per core.
3. Embedding throughput: the same files through ``ClipEmbedder.embed_stream`` (decode workers, one per core by
   default, then batches to the model), after one untimed warm-up batch (model load, CUDA kernel selection).

Prints both rates in images per second and their ratio (embedding / decode): 1.0 means the model keeps up with
decoding on every core. Weights are random (``--random-init``, the same compute as trained weights) or
``--pretrained TAG|PATH`` from the local cache; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project, when it is not pip-installed

SIZES = [(640, 480), (480, 640), (800, 533), (512, 512)]


def write_image(path: Path, seed: int, index: int) -> None:
    """One synthetic photo-like JPEG: a two-colour gradient with noise and six random shapes."""
    rng = np.random.default_rng([seed, index])
    width, height = SIZES[index % len(SIZES)]
    ramp = np.linspace(0, 1, width, dtype=np.float32)[None, :, None]
    base = rng.uniform(0, 255, 3) * ramp + rng.uniform(0, 255, 3) * (1 - ramp)
    pixels = np.broadcast_to(base, (height, width, 3)) + rng.normal(0, 8, (height, width, 3))
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x0, y0 = int(rng.integers(0, width - 40)), int(rng.integers(0, height - 40))
        box = (x0, y0, x0 + int(rng.integers(20, width // 2)), y0 + int(rng.integers(20, height // 2)))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=colour)
    image.save(path, "JPEG", quality=90)


def image_files(out: Path, n: int, seed: int, workers: int) -> list[Path]:
    """The ``n`` files for this seed, written in parallel unless a previous run left them."""
    paths = [out / f"{i:06d}.jpg" for i in range(n)]
    stamp = out / "files.json"
    wanted = {"n": n, "seed": seed, "sizes": SIZES}
    if stamp.is_file() and json.loads(stamp.read_text()) == json.loads(json.dumps(wanted)):
        return paths
    out.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(write_image, paths, [seed] * n, range(n), chunksize=16))
    stamp.write_text(json.dumps(wanted))
    return paths


def decode_rgb(path: Path) -> Image.Image:
    """The plain decode both measurements share: read the file, decode it, convert to RGB."""
    with Image.open(path) as image:
        return image.convert("RGB")


def decoded_size(path: Path) -> tuple[int, int]:
    return decode_rgb(path).size  # only the size crosses back: the decode loop measures decoding, not transfer


def decode_rate(paths: list[Path], workers: int) -> float:
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(decoded_size, paths[:workers]))  # workers started before the clock
        started = time.perf_counter()
        list(pool.map(decoded_size, paths, chunksize=16))
        return len(paths) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2048, help="image files to decode and embed")
    parser.add_argument("--out", type=Path, default=Path("bench/out/clip_embed"), help="where the files are written")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="ViT-B-32", help="open_clip architecture")
    weights = parser.add_mutually_exclusive_group(required=True)
    weights.add_argument("--pretrained", help="open_clip tag with locally cached weights, or a checkpoint path")
    weights.add_argument("--random-init", action="store_true", help="seeded random weights (same compute cost)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--device", default="auto", help="torch device, or 'auto'")
    parser.add_argument("--decode-workers", type=int, default=None, help="embedding's decode processes (default: CPUs)")
    args = parser.parse_args()

    # torch is imported here, not at the top: a spawned worker (outside Linux) re-imports this module
    import torch

    from resources.clip_embedding import ClipUnavailable, load_embedder

    cores = os.cpu_count() or 1
    paths = image_files(args.out, args.n, args.seed, cores)
    try:
        embedder = load_embedder(args.model, args.pretrained, allow_random_init=args.random_init,
                                 batch_size=args.batch_size, device=args.device, decode_workers=args.decode_workers)
    except ClipUnavailable as exc:
        sys.exit(f"CLIP unavailable: {exc}")
    work = [(str(path), partial(decode_rgb, path)) for path in paths]

    decoded_per_s = decode_rate(paths, cores)
    for _ in embedder.embed_stream(work[: embedder.batch_size]):  # warm-up, untimed
        pass
    started = time.perf_counter()
    results = list(embedder.embed_stream(work))  # each batch is read back to the host, so the device has finished
    embedded_per_s = len(work) / (time.perf_counter() - started)

    failed = [key for key, value in results if not isinstance(value, np.ndarray)]
    emb = np.stack([value for _, value in results if isinstance(value, np.ndarray)])
    gpu = f" ({torch.cuda.get_device_name(embedder.device)})" if embedder.device.startswith("cuda") else ""
    print(f"device: {embedder.device}{gpu}  torch {torch.__version__}  CPU cores {cores}")
    print(f"model: {embedder.model_key}  dim {embedder.dim}  batch_size {embedder.batch_size}"
          f"  decode_workers {embedder.decode_workers}  files {len(paths)} in {args.out}")
    print(f"decode (Pillow + RGB, {cores} processes): {decoded_per_s:.1f} images/s")
    print(f"embedding (files -> decode workers -> model): {embedded_per_s:.1f} images/s")
    print(f"ratio embedding / decode: {embedded_per_s / decoded_per_s:.3f}")
    print(f"failed {len(failed)}  max |row norm - 1| {np.abs(np.linalg.norm(emb, axis=1) - 1).max():.2e}")


if __name__ == "__main__":
    main()
