"""How long the quick commands take as a person types them: `aesforge --help`, `aesforge provenance ITEM` and
`aesforge provenance --json ITEM`, each run as its own process (interpreter start and imports included, which is
where the time goes), median of five. Issue 17 asks for --help under 1 s and provenance under 2 s on the demo.

    python bench/cli_latency.py [--config FILE] [--item POOL_ITEM_ID] [--runs 5] [--command PATH]

Without --item, the first kept image of the demo warehouse (``pool_images``) is asked about.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def first_pool_item(warehouse: Path) -> str:
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        row = con.execute("SELECT pool_item_id FROM pool_images ORDER BY pool_item_id LIMIT 1").fetchone()
    if row is None:
        raise SystemExit(f"cli_latency: no kept image in {warehouse}; build the demo first (make demo)")
    return row[0]


def timed(command: list[str], runs: int) -> tuple[float, int]:
    """Median wall time of ``runs`` runs, and the last run's exit status."""
    times, code = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        code = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        times.append(time.perf_counter() - start)
    return statistics.median(times), code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="aesforge config (default: as the aesforge command finds it)")
    parser.add_argument("--item", help="the entity to ask about (default: the demo's first kept image)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--command", default=str(Path(sys.executable).parent / "aesforge"),
                        help="the aesforge executable (default: the one beside this Python)")
    args = parser.parse_args(argv)
    config = ["--config", args.config] if args.config else []
    item = args.item
    if item is None:
        from pipelines.config import config_path, warehouse_settings

        item = first_pool_item(Path(warehouse_settings(Path(args.config).resolve() if args.config else config_path()).path))
    cases = [
        ("aesforge --help", [args.command, "--help"]),
        ("aesforge provenance ITEM", [args.command, "provenance", *config, item]),
        ("aesforge provenance --json ITEM", [args.command, "provenance", "--json", *config, item]),
    ]
    print(f"{args.runs} runs each, median; ITEM = {item}; {os.cpu_count()} CPUs")
    print(f"{'command':<34} {'seconds':>8}  exit")
    for name, command in cases:
        seconds, code = timed(command, args.runs)
        print(f"{name:<34} {seconds:>8.2f}  {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
