"""Benchmark: the warehouse at 10^7 rows per core table, filled through the result-shard committer.

Not a test. Synthesises the rows a fetch/decode/model-call pipeline writes per item (one row per item in
source_record, file_blob, record_file, file_decode, image and model_call; four entities per item with their
generation edges, two derivation edges, two use edges; a rejection for every 20th item) for ``--rows / 4`` items,
so that the largest core tables (entity, was_generated_by) hold ``--rows`` rows and the others fewer, ids made as the pipeline
makes them (``warehouse.ids``: ``source_record:<sha256 of the record's JSON>``, ``file:<sha256>``, ``image:<pixel
sha256>``, ``model_call:<sha256>``; checked against ``warehouse.ids`` for the first item of every shard). Each
``--shard`` items are one result shard (``assets.core.result_shards.write_shard`` into a local blob folder, as a
worker writes it) that is committed at once (``warehouse.shard_commit.commit_shards``, one transaction), so the
shards never pile up on disk. Then it times, on the filled warehouse: the provenance query for one item (what
``aesforge provenance <item>`` runs), the views the README's SQL examples use (pool_exclusions, pool_stage_counts,
image_file, the rejection summary), the keyed walk that command runs since migration 0028
(``warehouse.provenance_walk``; its rows checked equal to the macro's), and a committer pass over a shard it has
seen (nothing new). ``--no-lookup-indexes`` drops migration 0028's indexes before the fill, to measure what they
cost the committer (the walk then scans). Prints shard write and commit throughput (rows/s, shards/s, process CPU
and wall), query times (median wall and process CPU of ``--repeat`` warm runs), the file's size and the peak RSS. See bench/README.md.

    python bench/warehouse_scale.py --rows 400000 --out bench/out/warehouse_scale      # smoke run, about a minute
    python bench/warehouse_scale.py --out bench/out/warehouse_scale                    # 10^7 entities, 2.5 10^6 items
    python bench/warehouse_scale.py --rows 2000000 --no-lookup-indexes --out bench/out/warehouse_scale_bare
    python bench/warehouse_scale.py --queries-only --repeat 9 --out bench/out/warehouse_scale   # time the queries again
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import shutil
import sys
import time
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from assets.core.result_shards import ShardFolder, write_shard  # noqa: E402
from resources.blob_store import LocalBlobStore, keyed_objects  # noqa: E402
from warehouse.db import Warehouse, migrations  # noqa: E402
from warehouse.ids import digest_of, entity_id  # noqa: E402
from warehouse.lineage import activity_id_for  # noqa: E402
from warehouse.provenance_walk import COLUMNS, provenance_rows  # noqa: E402
from warehouse.shard_commit import commit_shards  # noqa: E402

ASSET = "synthetic_items"
REJECT_EVERY = 20
ENTITIES_PER_ITEM = 4
LOOKUP_MIGRATION = 28  # the provenance walk's indexes
STARTED = "2026-12-07 12:00:00+00"
AT = f"TIMESTAMPTZ '{STARTED}'"

# One SELECT per table over ``items`` (i: the item's number, url, record, file, pixels, call: its ids), the columns
# named as in the warehouse. ``$activity`` is the shard's activity.
ITEMS = """
CREATE OR REPLACE TEMP TABLE items AS
SELECT i, url, 'source_record:' || sha256('["manifest",' || to_json(url) || ',' || i || ']') AS record,
       sha256('file ' || i) AS file, sha256('pixels ' || i) AS pixels, sha256('call ' || i) AS cache_key
FROM (SELECT range AS i, 'https://images.example/' || range || '.jpg' AS url FROM range(?, ?))
"""
TABLES = {
    "source_record": f"""SELECT record AS record_id, 'manifest' AS source_type, 'manifest.csv' AS source_name,
        url AS locator, 'photo ' || i AS title, 'unknown' AS creator, 'example' AS provider, url AS source_url,
        'CC-BY-4.0' AS license, 'allowed' AS redistribution, 'photo' AS domain, '{{}}' AS extra,
        $activity AS activity_id, {AT} AS recorded_at FROM items""",
    "file_blob": """SELECT file AS sha256, 150000 + i % 90000 AS n_bytes, 'image/jpeg' AS media_type,
        'blob:' || file AS blob_uri FROM items""",
    "record_file": "SELECT record AS record_id, file AS file_sha256, $activity AS activity_id FROM items",
    "file_decode": """SELECT file AS file_sha256, 'image:' || pixels AS image_id, 'JPEG' AS source_format,
        'RGB' AS source_mode, 1 AS exif_orientation, $activity AS activity_id, 1 AS frame_count, 0 AS frame_used,
        false AS lossless, 90 AS jpeg_quality, 0.31 AS fine_detail, 0.45 AS luma_mean, 0.97 AS luma_top,
        0.002 AS highlights_clipped, 0.8 AS sharpness, 0.01 AS noise_sigma, 0.001 AS shadows_crushed FROM items""",
    "image": """SELECT 'image:' || pixels AS image_id, pixels AS pixel_sha256, 640 + i % 640 AS width,
        480 + i % 480 AS height, 40.0 + i % 30 AS pixel_std, $activity AS activity_id FROM items""",
    "model_call": f"""SELECT 'model_call:' || sha256('[' || to_json(cache_key) || ',0]') AS call_id, cache_key,
        'openai' AS provider, 'gpt-test' AS model, 'gpt-test-2026' AS provider_model, 'annotator' AS role,
        'critique_annotate' AS template_id, '3' AS template_version, sha256('prompt ' || i) AS prompt_sha256,
        file AS image_sha256, '{{"temperature":0}}' AS params, 'ok' AS status, NULL AS error,
        '{{"critique":"balanced composition, soft light, the horizon tilts by two degrees"}}' AS response_text,
        900 AS input_tokens, 120 AS output_tokens, 800.0 + i % 400 AS latency_ms, 1 AS attempts, NULL AS repair_of,
        'image:' || pixels AS item_id, $activity AS activity_id, {AT} AS called_at FROM items""",
    "entity": f"""SELECT * FROM (
        SELECT record AS entity_id, 'source_record' AS kind, NULL AS content_sha256, NULL AS attributes FROM items
        UNION ALL SELECT 'file:' || file, 'file', file, NULL FROM items
        UNION ALL SELECT 'image:' || pixels, 'image', pixels, '{{"width":640,"height":480}}' FROM items
        UNION ALL SELECT 'model_call:' || sha256('[' || to_json(cache_key) || ',0]'), 'model_call', NULL, NULL
            FROM items) CROSS JOIN (SELECT {AT} AS recorded_at)""",
    "was_generated_by": f"""SELECT entity_id, $activity AS activity_id, {AT} AS generated_at FROM (
        SELECT record AS entity_id FROM items UNION ALL SELECT 'file:' || file FROM items
        UNION ALL SELECT 'image:' || pixels FROM items
        UNION ALL SELECT 'model_call:' || sha256('[' || to_json(cache_key) || ',0]') FROM items)""",
    "was_derived_from": """SELECT 'file:' || file AS entity_id, record AS source_entity_id, 'retrieved_from' AS relation,
        $activity AS activity_id FROM items
        UNION ALL SELECT 'image:' || pixels, 'file:' || file, 'decoded_from', $activity FROM items""",
    "used": """SELECT $activity AS activity_id, record AS entity_id, 'record' AS role FROM items
        UNION ALL SELECT $activity, 'file:' || file, 'file' FROM items""",
    "rejection": f"""SELECT record AS entity_id, 'model_filter' AS stage, 'off_topic' AS reason_code,
        'manifest.csv line ' || (i + 2) || ': the model filter answered no' AS detail, false AS retryable,
        $activity AS activity_id, {AT} AS recorded_at FROM items WHERE i % {REJECT_EVERY} = 0""",
}

PROVENANCE = "SELECT * FROM provenance(?) ORDER BY depth DESC, started_at, entity_id, link, run_id, asset_key"
QUERIES = {
    "provenance(one image)": PROVENANCE,
    "pool_exclusions by stage, reason": "SELECT stage, reason_code, count(*) FROM pool_exclusions GROUP BY ALL",
    "pool_stage_counts": "SELECT * FROM pool_stage_counts",
    "image_file (count)": "SELECT count(*) FROM image_file",
    "rejection by stage, reason": "SELECT stage, reason_code, count(*) FROM rejection GROUP BY ALL ORDER BY ALL",
    "model_call tokens by template": "SELECT template_id, sum(input_tokens), sum(output_tokens) FROM model_call GROUP BY ALL",
}


def shard_tables(gen: duckdb.DuckDBPyConnection, start: int, stop: int, activity: str) -> dict:
    """The shard's tables as Arrow, for items ``start`` to ``stop``, with their activity's rows."""
    gen.execute(ITEMS, [start, stop])
    [first] = gen.execute("SELECT record, url FROM items WHERE i = ?", [start]).fetchall()
    assert first[0] == entity_id("source_record", digest_of(["manifest", first[1], start])), "ids drift from warehouse.ids"
    literal = "'" + activity.replace("'", "''") + "'"
    tables = {name: gen.sql(sql.replace("$activity", literal)).to_arrow_table() for name, sql in TABLES.items()}
    tables["activity"] = [{"activity_id": activity, "asset_key": ASSET, "partition_key": str(start), "run_id": "bench",
                           "code_version": "bench", "parameters": "{}", "started_at": STARTED, "ended_at": STARTED,
                           "status": "success", "summary": json.dumps({"items": stop - start}), "pid": None,
                           "hostname": None, "process_start": None}]
    return tables


def lookup_indexes() -> list[str]:
    """The names of the indexes migration 0028 creates."""
    [sql] = [sql for version, _, sql in migrations() if version == LOOKUP_MIGRATION]
    return re.findall(r"CREATE INDEX (\w+)", sql)


def median_ms(run, repeat: int) -> tuple[float, float, list]:
    """Median wall and process-CPU milliseconds of ``repeat`` warm calls of ``run`` (one call before, to page the
    tables in), and its result. CPU counts DuckDB's threads too, and is what the load on a shared machine leaves
    least changed."""
    result = run()
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = run()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall) * 1000, statistics.median(cpu) * 1000, result


def time_queries(wh: Warehouse, repeat: int) -> tuple[dict[str, tuple[float, float, list]], bool]:
    """The queries and the keyed walk on the middle item's image (the walk's rows checked equal to the macro's),
    and whether migration 0028's indexes are there."""
    items = wh.scalar("SELECT count(*) FROM image")
    image = wh.scalar("SELECT image_id FROM image WHERE pixel_sha256 = sha256('pixels ' || ?)", [items // 2])
    timings = {}
    with wh.transaction() as con:
        for name, sql in QUERIES.items():
            params = [image] if "?" in sql else []
            timings[name] = median_ms(lambda: con.execute(sql, params).fetchall(), repeat)
        timings["provenance walk (one image)"] = median_ms(lambda: provenance_rows(con, image), repeat)
        walked = [tuple(row[c] for c in COLUMNS) for row in timings["provenance walk (one image)"][2]]
        assert walked == timings["provenance(one image)"][2], "the walk's rows differ from the macro's"
        indexes = {name for (name,) in con.execute("SELECT index_name FROM duckdb_indexes()").fetchall()}
    return timings, set(lookup_indexes()) <= indexes


def print_timings(timings: dict[str, tuple[float, float, list]], repeat: int) -> None:
    for name, (wall_ms, cpu_ms, result) in timings.items():
        print(f"  {name:<34} {wall_ms:>9.1f} ms wall {cpu_ms:>9.1f} ms CPU  ({len(result)} rows; median of {repeat})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10**7, help="rows of the largest core tables (items: a quarter)")
    parser.add_argument("--shard", type=int, default=25_000, help="items per result shard (18 rows each)")
    parser.add_argument("--memory", default="6GB", help="DuckDB memory_limit of the committer's connection")
    parser.add_argument("--out", type=Path, default=REPO / "bench/out/warehouse_scale")
    parser.add_argument("--no-lookup-indexes", action="store_true",
                        help="drop migration 0028's indexes before the fill (what they cost the committer)")
    parser.add_argument("--repeat", type=int, default=3, help="warm runs per query (the median is printed)")
    parser.add_argument("--queries-only", action="store_true",
                        help="time the queries again on the warehouse an earlier run left in --out")
    args = parser.parse_args()
    if args.queries_only:
        wh = Warehouse(args.out / "warehouse.duckdb")
        load_before = os.getloadavg()
        timings, indexed = time_queries(wh, args.repeat)
        print(f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}; migration 0028's indexes "
              + ("present" if indexed else "dropped"))
        print_timings(timings, args.repeat)
        print(json.dumps({"queries_ms": {k: v[0] for k, v in timings.items()},
                          "queries_cpu_ms": {k: v[1] for k, v in timings.items()}, "load_before": load_before[0],
                          "lookup_indexes": indexed}))
        return 0
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    wh = Warehouse(args.out / "warehouse.duckdb")
    objects = keyed_objects(LocalBlobStore(args.out / "blobs"))
    folder = ShardFolder(objects, ASSET)
    gen = duckdb.connect()
    items = args.rows // ENTITIES_PER_ITEM
    lingering = wh.lingering(idle_s=600)  # the committer keeps its connection between shards, as a long-lived one would
    lingering.__enter__()
    with wh.transaction() as con:
        con.execute(f"SET memory_limit = '{args.memory}'")
        if args.no_lookup_indexes:
            for index in lookup_indexes():
                con.execute(f"DROP INDEX {index}")
    load_before = os.getloadavg()
    write_s = write_cpu = commit_s = commit_cpu = 0.0
    rows = shards = 0
    started = time.perf_counter()
    window = (0, 0.0)  # rows and commit seconds at the last progress line
    for start in range(0, items, args.shard):
        stop = min(start + args.shard, items)
        activity = activity_id_for(ASSET, str(start), "bench")
        t0, c0 = time.perf_counter(), time.process_time()
        tables = shard_tables(gen, start, stop, activity)
        write_shard(objects, asset=ASSET, activity_id=activity, input_keys=[str(start), str(stop)], tables=tables)
        t1, c1 = time.perf_counter(), time.process_time()
        report = commit_shards(wh, folder)
        t2, c2 = time.perf_counter(), time.process_time()
        assert len(report.committed) == 1 and not report.refused, report
        write_s, write_cpu = write_s + t1 - t0, write_cpu + c1 - c0
        commit_s, commit_cpu = commit_s + t2 - t1, commit_cpu + c2 - c1
        rows, shards = rows + report.rows_offered, shards + 1
        if shards % 10 == 0 or stop == items:
            print(f"  {stop:>11,} items  {rows:>12,} rows  commit {(rows - window[0]) / (commit_s - window[1]):,.0f}"
                  f" rows/s over the last shards  elapsed {time.perf_counter() - started:,.0f} s", flush=True)
            window = (rows, commit_s)
    counts = {t: wh.scalar(f"SELECT count(*) FROM {t}") for t in (*TABLES, "activity", "committed_shard")}

    # A pass that finds a rerun's shard already in the ledger.
    activity = activity_id_for(ASSET, "0", "bench")
    tables = shard_tables(gen, 0, min(args.shard, items), activity)
    write_shard(objects, asset=ASSET, activity_id=activity, input_keys=["0", str(min(args.shard, items))],
                tables=tables)
    t0 = time.perf_counter()
    again = commit_shards(wh, folder)
    again_s = time.perf_counter() - t0
    assert again.already and not again.committed

    timings, indexed = time_queries(wh, args.repeat)
    lingering.__exit__(None, None, None)
    size = wh.path.stat().st_size + sum(p.stat().st_size for p in wh.path.parent.glob(wh.path.name + ".wal"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    print(f"\nitems {items:,} in {shards} shards of {args.shard:,}; load average before {load_before[0]:.2f}, "
          f"after {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores; migration 0028's indexes "
          + ("present" if indexed else "dropped"))
    print("rows per table: " + ", ".join(f"{t} {n:,}" for t, n in counts.items()))
    print(f"write shards (worker side): {rows / write_s:,.0f} rows/s wall, {write_cpu:,.1f} s CPU for {write_s:,.1f} s")
    print(f"commit (committer):         {rows / commit_s:,.0f} rows/s, {shards / commit_s:.2f} shards/s wall; "
          f"{rows / commit_cpu:,.0f} rows per CPU-second ({commit_cpu:,.1f} s CPU for {commit_s:,.1f} s)")
    print(f"commit of a shard already in the ledger: {again_s * 1000:.0f} ms")
    print_timings(timings, args.repeat)
    print(f"warehouse file {size / 2**30:.2f} GiB ({size / max(rows, 1):.0f} bytes per row); peak RSS {peak / 2**30:.2f} GiB")
    print(json.dumps({"items": items, "rows": rows, "shards": shards, "commit_rows_per_s": rows / commit_s,
                      "commit_rows_per_cpu_s": rows / commit_cpu, "write_rows_per_s": rows / write_s,
                      "queries_ms": {k: v[0] for k, v in timings.items()},
                      "queries_cpu_ms": {k: v[1] for k, v in timings.items()}, "file_bytes": size,
                      "peak_rss_bytes": peak, "load_before": load_before[0], "lookup_indexes": indexed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
