"""Evaluation throughput: metric scoring rate per metric, and the model-call rate of an evaluation run against a
loopback OpenAI-compatible server with a fixed latency.

    python bench/evaluation.py --metric-items 300 --posts 400 --concurrency 32 --latency 0.2

1. **Metrics.** ``--metric-items`` synthetic photocritique posts (three human critiques and three model critiques
   of 40–90 words each, deterministic from ``--seed``), each metric scored alone through ``score_items`` (3×3
   max-mapping, as the evaluation asset scores), and the answer statistics; items per second. Learned metrics run
   when ``--metrics FILE`` (YAML, ``evaluation.metrics`` shape) points them at weights, on ``--device``.
2. **Model calls.** ``--posts`` posts through ``ask_model`` (the evaluation's path: item loop, call layer with
   claims and the call log in a DuckDB warehouse, the real ``openai`` SDK), three single-pass critiques each,
   ``--concurrency`` requests in flight, against ``tests/support/model_servers.ModelApiServer`` run in a child
   process (so the server does not share the client's GIL) answering every request after ``--latency`` s.
   The first ``--concurrency`` posts are asked first, untimed (the SDK's lazy imports, the first connections);
   the rest are timed. The ideal is concurrency ÷ latency requests per second; the figure is achieved ÷ ideal. Then the same run again:
   every (post, sample) is answered already, so it asks nothing.

A benchmark, not a test: figures go in bench/README.md.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.mllm_throughput import images  # noqa: E402
from assets.core.step import Step  # noqa: E402
from assets.evaluation.logic.benchmark_items import LAYOUTS, BenchmarkItem, ItemImage, Release  # noqa: E402
from assets.evaluation.logic.item_statistics import photocritique_statistics  # noqa: E402
from assets.evaluation.logic.metrics.registry import build_metrics  # noqa: E402
from assets.evaluation.logic.scoring import score_items  # noqa: E402
from assets.evaluation.model_runs import ask_model  # noqa: E402
from assets.evaluation.settings import MetricsConfig, ModelRun  # noqa: E402
from resources.blob_store import LocalBlobStore  # noqa: E402
from resources.model_providers import ModelProvidersResource, RoleConfig  # noqa: E402
from warehouse.db import Warehouse  # noqa: E402
from warehouse.lineage import start_activity  # noqa: E402

KEY = "sk-bench-loopback"
KEY_ENV = "AESFORGE_BENCH_OPENAI_KEY"
VOCABULARY = ("the horizon light shadow colour composition frame crop sky subject focus sharp soft warm cool tone"
              " contrast exposure highlights texture balance lines foreground background depth mood story eye lead"
              " tilted blown noise grain detail edges corner space negative balance symmetry rule thirds portrait"
              " street landscape river bridge fog harbour evening dusk lens aperture shutter iso white vibrant muted"
              " I would try to a bit more less and but with from of in on at for this that it is was nice great").split()


def _text(rng: np.random.Generator, low: int = 40, high: int = 90) -> str:
    return " ".join(rng.choice(VOCABULARY, size=int(rng.integers(low, high))))


def synthetic_posts(n: int, seed: int) -> list[tuple[BenchmarkItem, list[str]]]:
    rng = np.random.default_rng(seed)
    return [(BenchmarkItem(f"post{k:05d}", {"title": _text(rng, 4, 10), "body": ""}, (), tuple(_text(rng) for _ in range(3))),
             [_text(rng) for _ in range(3)]) for k in range(n)]


def bench_metrics(n: int, seed: int, metrics_file: str | None, device: str) -> list[tuple[str, str, float | None]]:
    """(metric, status, items per second) for each metric and for the answer statistics."""
    settings = yaml.safe_load(Path(metrics_file).read_text()) if metrics_file else {}
    config = MetricsConfig(**settings).by_name()
    for name, values in config.items():
        if "device" in values:
            values["device"] = device
    posts = synthetic_posts(n, seed)
    out = []
    start = time.perf_counter()
    for item, predictions in posts:
        list(photocritique_statistics(item, predictions))
    out.append(("statistics (length, diversity, aspects)", "ran", n / (time.perf_counter() - start)))
    for metric in build_metrics(config):
        reason = metric.unavailable()
        if reason:
            out.append((metric.name, f"unavailable: {reason[:90]}", None))
            continue
        start = time.perf_counter()
        scores = [s for s in score_items(posts, [metric], lambda item: None) if s.metric == metric.name]
        elapsed = time.perf_counter() - start
        assert sum(s.value is not None for s in scores) == n, metric.name
        out.append((metric.name, "ran", n / elapsed))
    return out


# --- model calls --------------------------------------------------------------------------------------------

def _critic(body: dict) -> str:
    """A critique that depends on the request (so answers differ), computed without looking at the image."""
    text = str(body.get("messages", ""))
    return f"The framing works; the light is {['soft', 'harsh', 'warm', 'flat'][len(text) % 4]} and the crop could be tighter."


def _serve(latency: float, ready, stop) -> None:
    from tests.support.model_servers import ModelApiServer

    with ModelApiServer(responder=_critic, openai_key=KEY, latency_s=latency) as server:
        ready.send(server.openai_base_url)
        stop.wait()


def _step(wh: Warehouse, run_id: str) -> Step:
    with wh.transaction() as con:
        log = start_activity(con, asset_key="photocritique_evaluation", partition_key=None, run_id=run_id,
                             code_version="bench", parameters={}, agents=())
    return Step(wh, log.activity_id, "photocritique_evaluation", "bench")


def bench_calls(posts: int, concurrency: int, latency: float, seed: int, root: Path) -> dict[str, float]:
    os.environ[KEY_ENV] = KEY
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    stop = context.Event()
    server = context.Process(target=_serve, args=(latency, send, stop), daemon=True)
    server.start()
    try:
        base_url = receive.recv()
        store = LocalBlobStore(root / "blobs")
        shas = [store.put_bytes(photo).sha256 for photo in images(posts, seed, side=64)]
        rng = np.random.default_rng(seed)
        items = {f"post{k:05d}": BenchmarkItem(f"post{k:05d}", {"title": _text(rng, 4, 10), "body": "Any advice?"},
                                               (ItemImage(sha, None, None),), tuple(_text(rng) for _ in range(3)))
                 for k, sha in enumerate(shas)}
        release = Release(root / "releases" / "photocritique", "photocritique", "bench", "b" * 64)
        providers = ModelProvidersResource(
            annotator=RoleConfig(provider="openai", model="bench-vision-1", base_url=base_url, api_key_env=KEY_ENV),
            timeout_s=30, max_retries=1)
        wh = Warehouse(root / "warehouse.duckdb", root=root)
        run = ModelRun(benchmark="photocritique", model="annotator", max_concurrency=concurrency)

        def image_of(item: BenchmarkItem) -> bytes | None:
            return store.get_bytes(item.images[0].sha256)

        # warm-up, untimed: the first posts (the SDK's lazy imports, the first connections, the warehouse schema)
        warm = dict(list(items.items())[:concurrency])
        ask_model(_step(wh, "bench-warm-up"), LAYOUTS["photocritique"], release, warm, run, providers, image_of)
        figures = {}
        for label in ("first", "again"):
            step = _step(wh, f"bench-{label}")
            start = time.perf_counter()
            ask_model(step, LAYOUTS["photocritique"], release, items, run, providers, image_of)
            figures[f"{label}_s"] = time.perf_counter() - start
            figures[f"{label}_requests"] = step.counts["requests_sent"]
            figures[f"{label}_answered"] = step.counts["answered"]
        return figures
    finally:
        stop.set()
        server.join(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--metric-items", type=int, default=300)
    parser.add_argument("--metrics", help="YAML with evaluation.metrics settings (weights for the learned metrics)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--posts", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-metrics", action="store_true")
    parser.add_argument("--skip-calls", action="store_true")
    args = parser.parse_args()
    if not args.skip_metrics:
        print(f"metric throughput, {args.metric_items} posts (3 model x 3 human critiques each, max-mapping):")
        print(f"| metric | status | items/s |\n|---|---|---:|")
        for name, status, rate in bench_metrics(args.metric_items, args.seed, args.metrics, args.device):
            print(f"| {name} | {status} | {'–' if rate is None else f'{rate:.1f}'} |")
    if not args.skip_calls:
        with tempfile.TemporaryDirectory() as folder:
            f = bench_calls(args.posts, args.concurrency, args.latency, args.seed, Path(folder))
        ideal = args.concurrency / args.latency
        achieved = f["first_requests"] / f["first_s"]
        print(f"\nmodel calls: {args.posts} posts x 3 critiques (the first {args.concurrency} posts as an untimed warm-up),"
              f" concurrency {args.concurrency}, latency {args.latency} s")
        print(f"| run | requests | answered | seconds | requests/s | ideal | ratio |\n|---|---:|---:|---:|---:|---:|---:|")
        print(f"| first | {f['first_requests']} | {f['first_answered']} | {f['first_s']:.2f} | {achieved:.1f} |"
              f" {ideal:.1f} | **{achieved / ideal:.3f}** |")
        print(f"| again (resumed: all answered) | {f['again_requests']} | {f['again_answered']} | {f['again_s']:.2f} | – | – | – |")


if __name__ == "__main__":
    main()
