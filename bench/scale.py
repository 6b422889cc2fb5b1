"""Benchmark: the image pool on ``--n`` generated images (default 20,000) with 1, 2 and 4 worker processes.

Not a test. Generates the images as ``bench/pool.py`` does (its ``generate``: ``sample.synth`` renders, every 10th a
resized copy, cached under ``--out/images-<n>-seed<seed>``), then for each worker count in ``--workers`` runs the
pool cold: a fresh warehouse and blob store, ``aesforge run --job image_pool_job --force`` with
``pool.worker_processes`` set to the count (the processes that decode images and verify duplicate pairs; the
normalization step's threads follow it), timed end to end by ``bench/pool.py``'s ``timed_run``.

Per worker count it prints: wall seconds, images per second, the speed-up over the first count, the CPU seconds of
the run's whole process tree (user + system of every process the run started and reaped: the CLI, Dagster's step
processes and the worker processes), the committer's share of wall time (the item loop times each batch's warehouse
transaction, lock wait included, into its step's ``commit_seconds`` note: their sum over the run's steps over the
wall time), the seconds inside the two steps the setting changes, the peak resident memory of the process tree and
the machine's mean 1-minute load during the run. With ``--executor dask`` the run's steps also execute on a local
Dask cluster of that many workers (``executor.kind: dask``). See bench/README.md.

    python bench/scale.py --n 2000                     # smoke run
    python bench/scale.py                              # 20,000 images, 1, 2 and 4 worker processes
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import duckdb
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pool import REPO, generate, step_seconds, timed_run  # noqa: E402

CORES = os.cpu_count() or 1
SCALED_STEPS = ("normalized_images", "perceptual_duplicates")  # the steps whose worker processes the setting sets


@dataclass(frozen=True)
class ColdRun:
    workers: int
    wall_s: float
    cpu_s: float
    commit_s: float
    peak_rss: int
    load: float
    steps: dict[str, float]


def _children_cpu_s() -> float:
    """User + system seconds of every process this one has started and reaped, and their reaped descendants."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def commit_seconds(warehouse: Path) -> float:
    """The run's item-loop commit seconds: the ``commit_seconds`` notes of its steps' activities, summed (the
    warehouse is fresh, so every activity is this run's)."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        summaries = [row[0] for row in con.execute("SELECT summary FROM activity").fetchall()]
    finally:
        con.close()
    return sum(json.loads(summary or "{}").get("commit_seconds", 0.0) for summary in summaries)


def cold_run(images: Path, project: Path, workers: int, executor: str) -> ColdRun:
    """One forced pool run on a fresh project with ``pool.worker_processes: workers``; the blobs are removed after."""
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    config = {
        "warehouse": {"path": "warehouse.duckdb"},
        "blob_store": {"root": "blobs"},
        "pool": {"folders": [{"path": str(images), "license": "CC0-1.0", "redistribution": "allowed",
                              "domain": "photography"}],
                 "worker_processes": workers},
    }
    if executor == "dask":
        config["executor"] = {"kind": "dask", "dask": {"n_workers": workers}}
    path = project / "aesforge.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    loads: list[float] = []
    stop = threading.Event()

    def sample_load() -> None:
        loads.append(os.getloadavg()[0])
        while not stop.wait(5.0):
            loads.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample_load, daemon=True)
    sampler.start()
    cpu_before = _children_cpu_s()
    try:
        wall, peak = timed_run(path)
    finally:
        stop.set()
        sampler.join()
    cpu = _children_cpu_s() - cpu_before
    warehouse = project / "warehouse.duckdb"
    steps = step_seconds(warehouse)
    run = ColdRun(workers, wall, cpu, commit_seconds(warehouse), peak, sum(loads) / len(loads), steps)
    shutil.rmtree(project / "blobs", ignore_errors=True)
    return run


def report(n: int, runs: list[ColdRun]) -> None:
    base = runs[0]
    print(f"\n{n} images; machine: {CORES} cores; load now (1/5/15 min): "
          + " / ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("workers | wall s | img/s | speed-up | CPU s (tree) | CPU/wall | commit s | committer share | "
          + " | ".join(f"{s} s" for s in SCALED_STEPS) + " | peak RSS MiB | mean load")
    for run in runs:
        print(f"{run.workers:7d} | {run.wall_s:6.1f} | {n / run.wall_s:5.1f} | {base.wall_s / run.wall_s:7.2f}x |"
              f" {run.cpu_s:12.1f} | {run.cpu_s / run.wall_s:8.2f} | {run.commit_s:8.1f} | {run.commit_s / run.wall_s:15.3f} | "
              + " | ".join(f"{run.steps.get(s, float('nan')):.1f}" for s in SCALED_STEPS)
              + f" | {run.peak_rss / 2**20:12.0f} | {run.load:.2f}")
    beyond = [run.workers for run in runs if run.workers > CORES]
    if beyond:
        print(f"This machine has {CORES} cores: at most {CORES} processes compute at once, so on a quiet machine "
              + ", ".join(map(str, beyond)) + f" worker processes cannot beat {CORES} (they add start-up, memory and"
              " contention); on a shared one more processes only take a bigger share of the CPU from other work.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="how many image files")
    parser.add_argument("--workers", default="1,2,4", help="comma-separated worker-process counts, run in this order")
    parser.add_argument("--executor", choices=("multiprocess", "dask"), default="multiprocess",
                        help="dask: each run's steps also execute on a local Dask cluster of that many workers")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "scale")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    if not counts or min(counts) < 1:
        parser.error("--workers: counts of at least 1, e.g. 1,2,4")
    out = args.out.resolve()
    paths = generate(args.n, args.seed, out / f"images-{args.n}-seed{args.seed}")
    print(f"{len(paths)} files; {CORES} cores; executor {args.executor}", flush=True)
    runs = []
    for workers in counts:
        run = cold_run(paths[0].parent, out / f"project-{args.n}-{args.executor}-w{workers}", workers, args.executor)
        print(f"  {workers} worker processes: {run.wall_s:.1f} s, {len(paths) / run.wall_s:.1f} img/s,"
              f" CPU {run.cpu_s:.1f} s, commits {run.commit_s:.1f} s, load {run.load:.2f}", flush=True)
        runs.append(run)
    report(len(paths), runs)


if __name__ == "__main__":
    main()
