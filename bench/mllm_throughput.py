"""Throughput of the critique chain against a loopback OpenAI-compatible server with fixed latency.

    python bench/mllm_throughput.py --items 40 --concurrency 8 --latency 2.0

Sends every item through planner → annotator → verifier (three requests each) with the real ``openai`` SDK,
``--concurrency`` images in flight, and prints achieved requests per second next to the ideal
(concurrency ÷ latency), then re-runs the same items at once and prints the cache hit rate (every call
answered from the warehouse call log, no request). A benchmark, not a test: figures go in bench/README.md.
"""

import argparse
import io
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assets.critique_canvas.logic.chain import COMPLETE, ROLES, RoleSettings, repair_request, run_chain  # noqa: E402
from assets.core.model_calls import CallBudget, ModelCaller, RateLimiter  # noqa: E402
from assets.core.model_call_store import WarehouseCallStore  # noqa: E402
from resources.model_providers import OpenAIProvider  # noqa: E402
from tests.support.critique_model import remote_model  # noqa: E402
from tests.support.model_servers import ModelApiServer  # noqa: E402
from warehouse.db import Warehouse  # noqa: E402
from warehouse.lineage import start_activity  # noqa: E402

KEY = "sk-bench-loopback"


def images(n: int, seed: int, side: int = 256) -> list[bytes]:
    """``n`` noisy JPEGs of ``side`` × ``side`` pixels, the same for the same seed."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        pixels = np.clip(rng.integers(20, 230) + rng.normal(0, 30, (side, side, 3)), 0, 255).astype(np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="JPEG", quality=90)
        out.append(buffer.getvalue())
    return out


def run(wh: Warehouse, run_id: str, base_url: str, items: list[bytes], concurrency: int) -> tuple[float, int, int]:
    """(wall seconds, requests sent, complete chains) for one pass over ``items``."""
    with wh.transaction() as con:
        log = start_activity(con, asset_key="bench", partition_key=None, run_id=run_id, code_version="bench", parameters={}, agents=())
    store = WarehouseCallStore(wh, log.activity_id)
    provider = OpenAIProvider(KEY, base_url=base_url, timeout_s=30, max_retries=1)
    roles = {role: RoleSettings("openai", "bench-vision-1", base_url) for role in ROLES}
    budget, limiter = CallBudget(), RateLimiter(None)
    callers = {role: ModelCaller(roles[role].endpoint, provider, store, budget, limiter, repair_request) for role in ROLES}
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda pair: run_chain(pair[1], "image/jpeg", "photography", callers, roles, f"bench:{pair[0]}"),
                                enumerate(items)))
    wall = time.perf_counter() - start
    return wall, sum(r.requests_sent for r in results), sum(r.status == COMPLETE for r in results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=2.0, help="simulated seconds per request (vision models take seconds)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    items = images(args.items, args.seed)
    with tempfile.TemporaryDirectory() as tmp, ModelApiServer(responder=remote_model, openai_key=KEY, gemini_key="unused",
                                                              latency_s=args.latency) as server:
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
        wh = Warehouse(Path(tmp) / "bench.duckdb")
        wall, sent, complete = run(wh, "first", server.openai_base_url, items, args.concurrency)
        ideal = args.concurrency / args.latency
        achieved = sent / wall
        print(f"{args.items} items x 3 roles, concurrency {args.concurrency}, simulated latency {args.latency:.3f} s")
        print(f"first run : {sent} requests in {wall:.2f} s = {achieved:.1f} req/s; ideal {ideal:.1f} req/s;"
              f" ratio {achieved / ideal:.3f}; {complete}/{args.items} chains complete")
        before = len(server.requests)
        wall2, sent2, complete2 = run(wh, "rerun", server.openai_base_url, items, args.concurrency)
        hits = 3 * args.items - (len(server.requests) - before)
        print(f"re-run    : {sent2} requests in {wall2:.2f} s; cache hit rate {hits / (3 * args.items):.1%};"
              f" {complete2}/{args.items} chains complete")
        ok = achieved / ideal >= 0.9 and hits == 3 * args.items and complete == complete2 == args.items
    print("OK" if ok else "BELOW TARGET (ratio >= 0.9 and 100% cache hits on the re-run)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
