"""Benchmark: the image pool end to end against a plain Pillow decode loop over the same files.

Not a test. Generates ``--n`` image files (``sample.synth`` renders, deterministic, cached between runs under
``--out/images-<n>``), then in one run:

1. **pool, cold**: ``aesforge run --job image_pool_job --force`` on a fresh warehouse and blob store (real Dagster
   materializations of source_records → fetched_files → normalized_images → pool_candidates →
   perceptual_duplicates → clip_duplicates → image_pool on a real DuckDB file), timed end to end;
2. **pool, nothing new**: the same command again; every step runs and finds no new item, so its wall time is the
   fixed overhead of a run (process and Dagster start-up, step processes, warehouse queries, reports); once with
   the executor ``aesforge run`` picks for a full build (a process per step) and once with ``--executor in_process``
   (one process), to show what the per-step processes cost;
3. **decode loop**: ``Image.open(p).convert("RGB")`` over the same files in a process pool of all cores.

It prints images per second of both, their ratio (end to end, and per image once the fixed overhead is taken out),
the fixed overhead, the blob store's size over the input's, and the peak resident memory of the pool run's whole
process tree (sampled every 0.1 s from /proc). See bench/README.md.

    python bench/pool.py --n 2000 --out bench/out/pool
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import duckdb
import numpy as np
import yaml
from PIL import Image

from sample import synth

REPO = Path(__file__).resolve().parent.parent
WORKERS = os.cpu_count() or 1
RENDERERS = (synth.render_photo, synth.render_painting, synth.render_virtual)
COPY_EVERY = 10  # every 10th file is a recompressed, resized copy of the file before it: duplicates to find
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _write_file(args: tuple[int, int, str]) -> None:
    """File ``index`` of the set, written once: a 480-800 x 360-600 render, JPEG q90 (every 5th a PNG)."""
    index, seed, folder = args
    base = index - 1 if index % COPY_EVERY == COPY_EVERY - 1 else index
    rng = np.random.default_rng([seed, base])
    size = (int(rng.integers(480, 800)), int(rng.integers(360, 600)))
    image = RENDERERS[base % len(RENDERERS)](rng, size)
    if base != index:
        Path(folder, f"f{index:06d}.jpg").write_bytes(synth.recompressed(synth.resized(image, 0.7), 75))
    elif index % 5 == 0:
        image.save(Path(folder, f"f{index:06d}.png"))
    else:
        Path(folder, f"f{index:06d}.jpg").write_bytes(synth.recompressed(image, 90))


def generate(n: int, seed: int, folder: Path) -> list[Path]:
    """The ``n`` files of this set, rendering only those not already there (a finished set is reused)."""
    folder.mkdir(parents=True, exist_ok=True)
    have = {p.stem for p in folder.iterdir()}
    todo = [(i, seed, str(folder)) for i in range(n) if f"f{i:06d}" not in have]
    if todo:
        print(f"generating {len(todo)} of {n} files in {folder} ...", flush=True)
        with ProcessPoolExecutor(WORKERS) as pool:
            list(pool.map(_write_file, todo, chunksize=32))
    return sorted(folder.iterdir())


def _decode(path: str) -> int:
    with Image.open(path) as image:
        return image.convert("RGB").width


def decode_loop(paths: list[Path]) -> float:
    """Seconds to decode every file to RGB in a process pool of all cores (pool start-up included)."""
    started = time.perf_counter()
    with ProcessPoolExecutor(WORKERS) as pool:
        list(pool.map(_decode, [str(p) for p in paths], chunksize=64))
    return time.perf_counter() - started


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every process below it, read from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(stat[1]), []).append(pid)
        rss[pid] = int(stat[21]) * _PAGE
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def timed_run(config: Path, *options: str) -> tuple[float, int]:
    """(wall seconds, peak RSS of the process tree) of one forced ``aesforge run`` of the pool job."""
    command = [sys.executable, "-m", "pipelines.command", "run", "--config", str(config), "--job", "image_pool_job",
               "--force", *options]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.wait(0.1):
            peak = max(peak, _tree_rss(process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    elapsed = time.perf_counter() - started
    stop.set()
    sampler.join()
    if process.returncode != 0:
        sys.exit(f"aesforge run exited {process.returncode}:\n{output[-4000:]}")
    return elapsed, peak


def step_seconds(warehouse: Path) -> dict[str, float]:
    """Seconds each pool step spent between opening and closing its activity (read after the cold run): the work
    inside the steps, without process start-up, Dagster's own bookkeeping and the asset checks."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = con.execute(
            "SELECT asset_key, date_diff('millisecond', started_at, ended_at) / 1000.0 FROM activity"
            " ORDER BY started_at").fetchall()
    finally:
        con.close()
    return dict(rows)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="how many image files")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "pool")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = args.out.resolve()
    paths = generate(args.n, args.seed, out / f"images-{args.n}-seed{args.seed}")
    project = out / f"project-{args.n}"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    config = project / "aesforge.yaml"
    config.write_text(yaml.safe_dump({
        "warehouse": {"path": "warehouse.duckdb"},
        "blob_store": {"root": "blobs"},
        "pool": {"folders": [{"path": str(paths[0].parent), "license": "CC0-1.0", "redistribution": "allowed",
                              "domain": "photography"}]},
    }), encoding="utf-8")

    cold, peak = timed_run(config)
    steps = step_seconds(project / "warehouse.duckdb")
    idle, _ = timed_run(config)
    idle_one_process, _ = timed_run(config, "--executor", "in_process")
    decode = decode_loop(paths)
    n = len(paths)
    input_bytes, blob_bytes = folder_bytes(paths[0].parent), folder_bytes(project / "blobs")
    pool_rate, decode_rate = n / cold, n / decode
    marginal = n / max(cold - idle, 1e-9)
    print(f"files: {n} ({input_bytes / 1e6:.1f} MB), cores: {WORKERS}")
    print(f"pool end to end:        {cold:8.1f} s  {pool_rate:8.1f} img/s")
    print(f"fixed overhead:         {idle:8.1f} s  (wall time of a forced run with nothing new; a process per step)")
    print(f"  in one process:       {idle_one_process:8.1f} s  (the same with --executor in_process)")
    print(f"pool per image:         {1000 * (cold - idle) / n:8.2f} ms  {marginal:8.1f} img/s (overhead taken out)")
    print(f"decode loop ({WORKERS} procs):  {decode:8.1f} s  {decode_rate:8.1f} img/s")
    print(f"ratio end to end:       {pool_rate / decode_rate:8.3f}")
    print(f"ratio per image:        {marginal / decode_rate:8.3f}")
    print(f"blob store / input:     {blob_bytes / input_bytes:8.2f}  ({blob_bytes / 1e6:.1f} MB / {input_bytes / 1e6:.1f} MB)")
    print(f"peak RSS (process tree):{peak / 2**20:8.0f} MiB")
    print(f"inside the steps (cold): {sum(steps.values()):7.1f} s  "
          + ", ".join(f"{key} {seconds:.1f}" for key, seconds in steps.items()))


if __name__ == "__main__":
    main()
