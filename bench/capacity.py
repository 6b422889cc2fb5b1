"""Capacity projection: time, storage and cost of a pool plus its critique chain at 10^6, 10^7 and 10^8 images.

Not a test. Reads the measured figures (and the stated assumptions) from ``bench/capacity_inputs.json`` and prints,
per stage, the CPU seconds, bytes and model calls per image, then for each planned size and worker count the hours
per stage, the stage that bounds the run, the storage and the cost. A worker is one CPU core. Stages are of three
kinds: per-item stages (data-parallel: their time divides by the workers), cross-shard stages and the warehouse
committer (one process each, whatever the workers), and the model calls (bound by latency: each worker keeps
``requests_in_flight_per_worker`` requests in flight). docs/capacity.md quotes the output.

    python bench/capacity.py                     # bench/capacity_inputs.json
    python bench/capacity.py --inputs other.json
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PER_ITEM, SERIAL, LATENCY = "per item (parallel)", "one process", "latency-bound"
CROSS_SHARD = {"perceptual_duplicates", "image_pool"}


@dataclass(frozen=True)
class Stage:
    name: str
    kind: str
    cpu_s: float  # CPU seconds per image
    model_calls: float = 0.0


def stages(measured: dict, assumed: dict) -> list[Stage]:
    """Per-image cost of each stage, from the measured figures."""
    pool = measured["pool_steps"]
    out = [Stage(name, SERIAL if name in CROSS_SHARD else PER_ITEM,
                 seconds * pool.get("threads", {}).get(name, 1) / pool["items"])
           for name, seconds in pool["seconds"].items()]
    calls = measured["critique_calls"]
    out.append(Stage("critique model calls", LATENCY, calls["requests_per_image"] * calls["client_cpu_s_per_request"],
                     calls["requests_per_image"]))
    commit = measured["warehouse_commit"]
    rows = rows_per_image(measured)
    out.append(Stage("warehouse commit", SERIAL, rows / commit["rows_per_cpu_s"]))
    return out


def rows_per_image(measured: dict) -> float:
    commit = measured["warehouse_commit"]
    return commit["rows_per_image_pool"] + measured["critique_calls"]["requests_per_image"] * commit["rows_per_model_call"]


def stage_hours(stage: Stage, images: int, workers: int, measured: dict, assumed: dict) -> float:
    if stage.kind == PER_ITEM:
        return images * stage.cpu_s / workers / 3600
    if stage.kind == SERIAL:
        return images * stage.cpu_s / 3600
    ratio = measured["critique_calls"]["ratio_to_ideal_at_2s_latency"]
    per_worker = assumed["requests_in_flight_per_worker"] / assumed["model_latency_s"] * ratio
    return images * stage.model_calls / (per_worker * workers) / 3600


def project(inputs: dict) -> list[dict]:
    measured, assumed = inputs["measured"], inputs["assumed"]
    plan = []
    for size in inputs["plan"]:
        images, workers = size["images"], size["workers"]
        hours = {s.name: stage_hours(s, images, workers, measured, assumed) for s in stages(measured, assumed)}
        cpu_hours = sum(s.cpu_s for s in stages(measured, assumed)) * images / 3600
        calls = measured["critique_calls"]["requests_per_image"] * images
        tokens = assumed["tokens_per_request"]
        prices = assumed["price_per_million_tokens_usd"]
        token_cost = calls * (tokens["input"] * prices["input"] + tokens["output"] * prices["output"]) / 1e6
        blob_gb = images * assumed["image_bytes"] / 1e9
        warehouse_gb = images * rows_per_image(measured) * measured["warehouse_commit"]["bytes_per_row"] / 1e9
        plan.append({
            "images": images, "workers": workers, "hours": hours,
            "bottleneck": max(hours, key=hours.get),
            "hours_pipelined": max(hours.values()), "hours_in_sequence": sum(hours.values()),
            "cpu_hours": cpu_hours, "model_calls": calls, "blob_gb": blob_gb, "warehouse_gb": warehouse_gb,
            "cpu_cost": cpu_hours * assumed["price_per_cpu_hour_usd"], "token_cost": token_cost,
            "storage_cost_month": (blob_gb + warehouse_gb) * assumed["price_per_gb_month_usd"],
        })
    return plan


def _fmt(hours: float) -> str:
    return f"{hours * 60:.1f} min" if hours < 1 else f"{hours:,.1f} h"


def report(inputs: dict) -> str:
    measured, assumed = inputs["measured"], inputs["assumed"]
    lines = ["Per image:", "", "| stage | kind | CPU s | model calls |", "|---|---|---:|---:|"]
    for s in stages(measured, assumed):
        lines.append(f"| {s.name} | {s.kind} | {s.cpu_s * 1000:.2f} ms | {s.model_calls:g} |")
    rows = rows_per_image(measured)
    lines += ["", f"Bytes per image: blob store {assumed['image_bytes'] / 1e3:,.0f} kB (assumed; stored once, 1.00x the"
              f" input), warehouse {rows:.1f} rows x {measured['warehouse_commit']['bytes_per_row']} B ="
              f" {rows * measured['warehouse_commit']['bytes_per_row'] / 1e3:.1f} kB.", ""]
    plan = project(inputs)
    names = list(plan[0]["hours"])
    lines += ["| images | workers | " + " | ".join(names) + " | bound by | wall (pipelined / in sequence) | CPU-h"
              " | model calls | blobs | warehouse | CPU $ | tokens $ | storage $/month |",
              "|" + "---:|" * (2 + len(names)) + "---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for p in plan:
        lines.append(
            f"| {p['images']:.0e} | {p['workers']} | " + " | ".join(_fmt(p["hours"][n]) for n in names)
            + f" | **{p['bottleneck']}** | {_fmt(p['hours_pipelined'])} / {_fmt(p['hours_in_sequence'])}"
            f" | {p['cpu_hours']:,.0f} | {p['model_calls']:.2e} | {p['blob_gb']:,.0f} GB | {p['warehouse_gb']:,.0f} GB"
            f" | {p['cpu_cost']:,.0f} | {p['token_cost']:,.0f} | {p['storage_cost_month']:,.0f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=Path, default=HERE / "capacity_inputs.json")
    parser.add_argument("--json", action="store_true", help="the projection as JSON instead of tables")
    args = parser.parse_args()
    inputs = json.loads(args.inputs.read_text(encoding="utf-8"))
    print(json.dumps(project(inputs), indent=1) if args.json else report(inputs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
