"""Throughput of the critique chain against a loopback OpenAI-compatible server with fixed latency.

    python bench/mllm_throughput.py --items 256 --concurrency 32 --latency 0.2

Sends every item through the critique chain (planner → annotator → verifier and their follow-ups, a dozen
requests each) with the real ``openai`` SDK, ``--concurrency`` images in flight, each making one request at a time,
and prints achieved requests per second next to the ideal (concurrency ÷ latency). The server runs in a process
of its own, as a remote provider would, so its work does not share this process's interpreter. ``--store``
picks the call log: ``write-behind`` (the warehouse call store: answers fsynced to a call shard as they arrive,
committed in groups; what the pipelines use) or ``memory`` (a dict, neither durable nor committed: the ceiling this
process reaches with no call log at all, for reference). The timed run
ends when every call is committed. Then the same items run again at once: every call should come from the call log, with no
request. As in the pipelines' item loop, the warehouse connection lingers between transactions, and with
``--leases`` every request is claimed in ``model_call_lease`` before it is sent, as CritiqueCanvas claims them.
A benchmark, not a test: figures go in bench/README.md.
"""

import argparse
import io
import itertools
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assets.critique_canvas.logic.chain import COMPLETE, ROLES, RoleSettings, repair_request, run_chain  # noqa: E402
from assets.core.model_calls import CallBudget, ModelCaller, RateLimiter, StoredCall  # noqa: E402
from assets.core.model_call_store import WarehouseCallStore, leased_caller  # noqa: E402
from resources.model_providers import ModelProvidersResource  # noqa: E402
from resources.model_providers import OpenAIProvider  # noqa: E402
from resources.models.types import OK, ModelResponse  # noqa: E402
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


class MemoryStore:
    """The reference call log: answers in a dict, ids from a counter; nothing durable, nothing committed."""

    def __init__(self) -> None:
        self.answers: dict[str, StoredCall] = {}
        self.ids = itertools.count()

    def cached(self, cache_key: str) -> StoredCall | None:
        return self.answers.get(cache_key)

    def record(self, row: dict) -> str:
        call_id = f"model_call:{next(self.ids)}"
        if row["status"] == OK:
            self.answers[row["cache_key"]] = StoredCall(call_id, ModelResponse(
                row["response_text"], row["input_tokens"], row["output_tokens"], None, row["latency_ms"], row["attempts"],
                OK, None, row["provider_model"]))
        return call_id

    def close(self) -> None:
        pass


def serve(latency_s: float, conn: Connection) -> None:
    """The loopback server, in its own process: sends its URL, then the number of requests it got whenever asked,
    until told to stop."""
    with ModelApiServer(responder=remote_model, openai_key=KEY, gemini_key="unused", latency_s=latency_s) as server:
        conn.send(server.openai_base_url)
        while conn.recv() == "count":
            conn.send(len(server.requests))


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(wh: Warehouse, run_id: str, base_url: str, items: list[bytes], concurrency: int, kind: str,
        memory: MemoryStore, leases: bool) -> tuple[float, float, int, int]:
    """(wall seconds until every call is committed, this process's CPU seconds meanwhile, requests sent, complete
    chains) for one pass over ``items``."""
    with wh.transaction() as con:
        log = start_activity(con, asset_key="bench", partition_key=None, run_id=run_id, code_version="bench", parameters={}, agents=())
    store = memory if kind == "memory" else WarehouseCallStore(wh, log.activity_id)
    provider = OpenAIProvider(KEY, base_url=base_url, timeout_s=30, max_retries=1)
    roles = {role: RoleSettings("openai", "bench-vision-1", base_url) for role in ROLES}
    budget, limiter = CallBudget(), RateLimiter(None)
    if leases:
        callers = {role: leased_caller(roles[role].endpoint, provider, store, budget, limiter, repair_request,
                                       ModelProvidersResource()) for role in ROLES}
    else:
        callers = {role: ModelCaller(roles[role].endpoint, provider, store, budget, limiter, repair_request) for role in ROLES}
    start, cpu = time.perf_counter(), cpu_s()
    with wh.lingering(), ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda pair: run_chain(pair[1], "image/jpeg", "photography", callers, roles, f"bench:{pair[0]}"),
                                enumerate(items)))
        store.close()
    wall, cpu = time.perf_counter() - start, cpu_s() - cpu
    return wall, cpu, sum(r.requests_sent for r in results), sum(r.status == COMPLETE for r in results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=2.0, help="simulated seconds per request (vision models take seconds)")
    parser.add_argument("--store", choices=("write-behind", "memory"), default="write-behind")
    parser.add_argument("--leases", action="store_true", help="claim each request before sending it (not with --store memory)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.leases and args.store == "memory":
        parser.error("--leases needs the warehouse store (write-behind)")
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    items = images(args.items, args.seed)
    memory = MemoryStore()
    ours, theirs = multiprocessing.get_context("spawn").Pipe()
    server = multiprocessing.get_context("spawn").Process(target=serve, args=(args.latency, theirs), daemon=True)
    server.start()
    try:
        base_url = ours.recv()
        with tempfile.TemporaryDirectory() as tmp:
            wh = Warehouse(Path(tmp) / "bench.duckdb")
            wall, cpu, sent, complete = run(wh, "first", base_url, items, args.concurrency, args.store, memory, args.leases)
            ideal = args.concurrency / args.latency
            achieved = sent / wall
            print(f"{args.items} items, {args.store} store{' with leases' if args.leases else ''},"
                  f" concurrency {args.concurrency}, simulated latency {args.latency:.3f} s")
            print(f"first run : {sent} requests in {wall:.2f} s = {achieved:.1f} req/s; ideal {ideal:.1f} req/s;"
                  f" ratio {achieved / ideal:.3f}; {complete}/{args.items} chains complete;"
                  f" {1000 * cpu / max(sent, 1):.1f} ms of this process's CPU per request")
            ours.send("count")
            before = ours.recv()
            wall2, _, sent2, complete2 = run(wh, "rerun", base_url, items, args.concurrency, args.store, memory, args.leases)
            ours.send("count")
            asked = ours.recv() - before
            print(f"re-run    : {asked} requests in {wall2:.2f} s; cache hit rate {1 - asked / sent:.1%};"
                  f" {complete2}/{args.items} chains complete")
    finally:
        ours.send("stop")
        server.join(timeout=30)
    ok = achieved / ideal >= 0.9 and asked == sent2 == 0 and complete == complete2 == args.items
    print("OK" if ok else "BELOW TARGET (ratio >= 0.9 and 100% cache hits on the re-run)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
