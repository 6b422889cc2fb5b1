"""Throughput of ClipEmbedder.embed_images on synthetic images: images/second, preprocessing included.

Run from the repository root, e.g.

    python bench/clip_embed.py --n 4096 --model ViT-B-32 --random-init --batch-size 256 --device cuda

A pool of distinct synthetic photo-sized images is drawn once and cycled, so
every image is still resized and normalised as in the pipeline, but drawing
them is not timed.  The first batch is a warm-up (CUDA context,
kernel selection) and is not timed either.
"""

from __future__ import annotations

import argparse
import sys
import time
from itertools import cycle, islice
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project, when it is not pip-installed

from resources.clip_embedding import ClipUnavailable, load_embedder  # noqa: E402


def synthetic_images(count: int, seed: int) -> list[Image.Image]:
    """Camera-sized RGB images (gradient background, random shapes, mild noise) of a few aspect ratios."""
    rng = np.random.default_rng(seed)
    sizes = [(640, 480), (480, 640), (800, 533), (512, 512)]
    images = []
    for i in range(count):
        width, height = sizes[i % len(sizes)]
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
        images.append(image)
    return images


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2048, help="images to embed in the timed run")
    parser.add_argument("--model", default="ViT-B-32", help="open_clip architecture")
    weights = parser.add_mutually_exclusive_group(required=True)
    weights.add_argument("--pretrained", help="open_clip tag with locally cached weights, or a checkpoint path")
    weights.add_argument("--random-init", action="store_true", help="seeded random weights (same compute cost)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--device", default="auto", help="torch device, or 'auto'")
    parser.add_argument("--threads", type=int, default=None, help="preprocessing threads (default: min(8, CPUs))")
    parser.add_argument("--pool", type=int, default=64, help="distinct synthetic images to cycle through")
    args = parser.parse_args()

    try:
        embedder = load_embedder(
            args.model,
            args.pretrained,
            allow_random_init=args.random_init,
            batch_size=args.batch_size,
            device=args.device,
            preprocess_threads=args.threads,
        )
    except ClipUnavailable as exc:
        sys.exit(f"CLIP unavailable: {exc}")
    pool = synthetic_images(args.pool, seed=0)
    embedder.embed_images(islice(cycle(pool), args.batch_size))  # warm-up

    started = time.perf_counter()
    emb = embedder.embed_images(islice(cycle(pool), args.n))  # returns on the host, so the GPU has finished
    elapsed = time.perf_counter() - started

    gpu = f" ({torch.cuda.get_device_name(embedder.device)})" if embedder.device.startswith("cuda") else ""
    # Cycled copies of one image should embed alike; under CUDA autocast they may differ slightly.
    copy_agreement = float(emb[0] @ emb[args.pool]) if args.n > args.pool else float("nan")
    print(f"device: {embedder.device}{gpu}  torch {torch.__version__}")
    print(f"model: {embedder.model_key}  dim {embedder.dim}")
    print(f"batch_size {embedder.batch_size}  preprocess_threads {embedder.preprocess_threads}  n {args.n}")
    print(f"elapsed {elapsed:.2f} s  ->  {args.n / elapsed:.1f} images/s")
    print(f"max |row norm - 1| {np.abs(np.linalg.norm(emb, axis=1) - 1).max():.2e}  copy cosine {copy_agreement:.6f}")


if __name__ == "__main__":
    main()
