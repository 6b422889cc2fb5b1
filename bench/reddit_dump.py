"""Benchmark: the Reddit dump filter pass against plain zstd decompression of the same files, in one run.

Not a test.  Generates deterministic synthetic monthly dumps (``RS_2024-0[12].zst``, ``RC_2024-0[12].zst``;
no real Reddit content) of ``--size-mb`` MiB uncompressed in total, picks ``--target-fraction`` of the post
ids as the candidate list, then, in a fresh child process so that generation does not count towards its
peak memory, measures

  (a) plain streaming decompression of every file (read all chunks, count bytes), and
  (b) the filter pass: ``DumpSource.submissions(ids)`` + ``DumpSource.comments(ids)``, then (when those
      modules exist) normalization and reference selection of what matched;
  (c) each file alone: plain decompression, then its scan (``read_dump_file``), one after the other;
  (d) with ``--workers`` N > 1: both again on a pool of N spawned worker processes, the files of each kind
      N at a time (``DumpSource(pool=...)``), against plain decompression on the same pool.

    python bench/reddit_dump.py --size-mb 1024 --out /tmp/reddit_bench --seed 0

A second run with the same size, seed and target fraction reuses the files.  See bench/README.md.
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing
import random
import resource
import string
import sys
import time
import zlib
from collections import defaultdict
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project, when it is not pip-installed

from assets.core.worker_processes import CpuPool  # noqa: E402
from assets.photocritique.logic.reddit_dumps import (  # noqa: E402
    COMMENT,
    COMPRESSED_READ_BYTES,
    DEFAULT_CHUNK_BYTES,
    SUBMISSION,
    DumpSource,
    classify_dump,
    read_dump_file,
    selector,
)
from resources.reddit_sources import RawItem  # noqa: E402

MIB = 2**20
MONTH_STARTS = (1704067200, 1706745600)  # 2024-01-01, 2024-02-01 UTC
MONTH_NAMES = ("2024-01", "2024-02")
MONTH_SECONDS = 29 * 86400
LATE_COMMENT_SHARE = 0.15  # comments written to the next month's file
SUBREDDITS = ("photocritique", "pics", "photography", "itookapicture", "AskReddit", "EarthPorn", "analog", "mildlyinteresting")
WORDS = (
    "the a of and to in is it that this photo light shadow exposure composition frame subject background focus sharp "
    "soft colour color contrast highlights tones crop horizon tilt rule thirds leading lines depth field bokeh "
    "portrait landscape street grain noise white balance warm cool edit lightroom preset sky foreground eye "
    "don't it's well-lit café naïve über façade déjà-vu 写真 光 構図 фото свет 📷 🌅 👍 &amp; &gt; &lt; &quot;"
).split()
COMMENT_COUNTS = (0, 0, 1, 2, 3, 3, 4, 5, 6, 8, 12, 20)


def base36(number: int) -> str:
    digits = string.digits + string.ascii_lowercase
    out = ""
    while number:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
    return out or "0"


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def _preview(rng: random.Random, image_id: str) -> dict:
    width, height = rng.choice(((4032, 3024), (6000, 4000), (1080, 1350), (3000, 2000)))
    signature = f"{rng.getrandbits(160):040x}"
    resolutions = [
        {"url": f"https://preview.redd.it/{image_id}.jpg?width={w}&amp;crop=smart&amp;auto=webp&amp;s={signature}",
         "width": w, "height": w * height // width}
        for w in (108, 216, 320, 640)
    ]
    source = {"url": f"https://preview.redd.it/{image_id}.jpg?auto=webp&amp;s={signature}", "width": width, "height": height}
    return {"enabled": True, "images": [{"id": image_id, "resolutions": resolutions, "source": source, "variants": {}}]}


def _submission(rng: random.Random, post_id: str, created: int, n_comments: int) -> dict:
    subreddit = rng.choice(SUBREDDITS)
    title = _text(rng, 3, 16)
    image_id = "".join(rng.choices(string.ascii_lowercase + string.digits, k=13))
    record: dict = {
        "all_awardings": [],
        "allow_live_comments": False,
        "archived": False,
        "author": f"user_{rng.randrange(200000)}",
        "author_flair_text": None,
        "author_fullname": f"t2_{base36(rng.getrandbits(36))}",
        "created_utc": str(created) if rng.random() < 0.02 else created,
    }
    if rng.random() < 0.05:  # nested ids ahead of the post's own id exercise the prefilter
        record["crosspost_parent"] = f"t3_{base36(rng.getrandbits(30))}"
        record["crosspost_parent_list"] = [{"id": record["crosspost_parent"][3:], "title": _text(rng, 3, 10),
                                            "subreddit": rng.choice(SUBREDDITS), "url": f"https://i.redd.it/{image_id}.jpg"}]
    is_gallery = rng.random() < 0.1
    is_self = not is_gallery and rng.random() < 0.2
    record.update({
        "distinguished": None,
        "domain": "reddit.com" if is_gallery else (f"self.{subreddit}" if is_self else "i.redd.it"),
        "gilded": 0,
        "id": post_id,
        "is_gallery": is_gallery,
        "is_self": is_self,
        "link_flair_text": rng.choice((None, "Critique", "Feedback wanted")),
        "locked": False,
        "name": f"t3_{post_id}",
        "num_comments": n_comments,
        "over_18": False,
        "permalink": f"/r/{subreddit}/comments/{post_id}/{title[:24].replace(' ', '_')}/",
    })
    if is_gallery:
        media_ids = ["".join(rng.choices(string.ascii_lowercase + string.digits, k=13)) for _ in range(rng.randint(2, 4))]
        record["gallery_data"] = {"items": [{"id": rng.getrandbits(28), "media_id": m} for m in media_ids]}
        record["media_metadata"] = {
            m: {"e": "Image", "id": m, "m": "image/jpg", "status": "valid",
                "s": {"u": f"https://preview.redd.it/{m}.jpg?width=3000&amp;format=pjpg&amp;auto=webp", "x": 3000, "y": 2000}}
            for m in media_ids
        }
    elif not is_self:
        record["preview"] = _preview(rng, image_id)
    record.update({
        "removed_by_category": rng.choice((None,) * 12 + ("moderator", "deleted")),
        "retrieved_on": created + rng.randint(60, 7200),
        "score": rng.randint(0, 500),
        "selftext": _text(rng, 5, 60) if is_self or rng.random() < 0.5 else "",
        "stickied": False,
        "subreddit": subreddit,
        "subreddit_id": f"t5_{base36(zlib.crc32(subreddit.encode()) & 0xFFFFFF)}",
        "thumbnail": f"https://b.thumbs.redditmedia.com/{image_id}.jpg",
        "title": title,
        "upvote_ratio": round(rng.random(), 2),
        "url": (f"https://www.reddit.com/gallery/{post_id}" if is_gallery
                else f"https://www.reddit.com/r/{subreddit}/comments/{post_id}/" if is_self
                else f"https://i.redd.it/{image_id}.jpg"),
    })
    return record


def _comment(rng: random.Random, comment_id: str, post: dict, parent: str, created: int) -> dict:
    return {
        "all_awardings": [],
        "author": f"user_{rng.randrange(200000)}",
        "author_flair_text": rng.choice((None, None, "Nikon D750", "Fuji X-T4 &amp; film")),
        "body": _text(rng, 1, 90),
        "controversiality": 0,
        "created_utc": created,
        "distinguished": rng.choice((None,) * 30 + ("moderator",)),
        "edited": False,
        "gilded": 0,
        "id": comment_id,
        "is_submitter": False,
        "link_id": f"t3_{post['id']}",
        "name": f"t1_{comment_id}",
        "parent_id": parent,
        "permalink": f"{post['permalink']}{comment_id}/",
        "retrieved_on": created + rng.randint(60, 7200),
        "score": rng.randint(-5, 300),
        "score_hidden": False,
        "stickied": False,
        "subreddit": post["subreddit"],
        "subreddit_id": post["subreddit_id"],
    }


def _writer(path: Path, level: int, window_log: int):
    """A streaming zstd writer; the frame has no content size, like dumps made by piping into ``zstd``."""
    params = zstandard.ZstdCompressionParameters.from_level(level, window_log=window_log)
    return zstandard.ZstdCompressor(compression_params=params).stream_writer(open(path, "wb"), closefd=True)


def generate(out: Path, size_bytes: int, seed: int, target_fraction: float, level: int, window_log: int) -> dict:
    """Write the four dump files and return the manifest (targets and the counts a correct scan must find)."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    paths = {(kind, month): out / f"{kind}_{name}.zst" for kind in ("RS", "RC") for month, name in enumerate(MONTH_NAMES)}
    writers = {key: _writer(path, level, window_log) for key, path in paths.items()}
    written = 0
    post_number, comment_number = int("k00000", 36), int("g000000", 36)
    targets: list[str] = []
    expected_comments = 0
    n_posts = n_comments = 0
    while written < size_bytes:
        month = 0 if written < size_bytes / 2 else 1
        post_id = base36(post_number)
        post_number += rng.randint(1, 40)
        created = MONTH_STARTS[month] + int(MONTH_SECONDS * (written % (size_bytes / 2)) / (size_bytes / 2))
        count = rng.choice(COMMENT_COUNTS)
        post = _submission(rng, post_id, created, count)
        line = json.dumps(post, ensure_ascii=False).encode() + b"\n"
        writers["RS", month].write(line)
        written += len(line)
        n_posts += 1
        is_target = rng.random() < target_fraction
        if is_target:
            targets.append(post_id)
        parents = [f"t3_{post_id}"]
        for _ in range(count):
            comment_id = base36(comment_number)
            comment_number += rng.randint(1, 30)
            parent = parents[0] if rng.random() < 0.6 else rng.choice(parents)
            late = month == 0 and rng.random() < LATE_COMMENT_SHARE
            comment = _comment(rng, comment_id, post, parent, created + rng.randint(60, 86400 * (20 if late else 3)))
            line = json.dumps(comment, ensure_ascii=False).encode() + b"\n"
            writers["RC", month + 1 if late else month].write(line)
            written += len(line)
            parents.append(f"t1_{comment_id}")
            n_comments += 1
            expected_comments += is_target
    for writer in writers.values():
        writer.close()
    return {
        "size_bytes": size_bytes, "seed": seed, "target_fraction": target_fraction, "level": level, "window_log": window_log,
        "uncompressed_bytes": written, "files": sorted(str(p) for p in paths.values()),
        "compressed_bytes": sum(p.stat().st_size for p in paths.values()),
        "posts": n_posts, "comments": n_comments, "targets": targets, "expected_comments": expected_comments,
    }


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _optional(module: str, *names: str):
    try:
        loaded = importlib.import_module(module)
    except ImportError:
        return None
    found = [getattr(loaded, name, None) for name in names]
    return None if any(value is None for value in found) else found


def decompress_file(path: str, chunk_size: int) -> int:
    """The baseline: the same decoder settings and read sizes as the scan, doing nothing with the output."""
    total = 0
    decompressor = zstandard.ZstdDecompressor(max_window_size=2**31)
    with open(path, "rb") as fh:
        reader = decompressor.stream_reader(fh, read_size=COMPRESSED_READ_BYTES, read_across_frames=True)
        while chunk := reader.read(chunk_size):
            total += len(chunk)
    return total


def decompress_all(files: list[str], chunk_size: int) -> int:
    return sum(decompress_file(path, chunk_size) for path in files)


def _decompress_on_pool(pool: CpuPool, files: list[str], chunk_size: int) -> int:
    """Plain decompression on the pool, grouped as ``DumpSource`` groups its scans: the submission files
    ``pool.workers`` at a time, then the comment files."""
    total = 0
    with ThreadPoolExecutor(pool.workers) as threads:
        for kind in (SUBMISSION, COMMENT):
            group = [path for path in sorted(files, key=lambda p: Path(p).name) if classify_dump(path) == kind]
            total += sum(threads.map(lambda path: pool.call(decompress_file, path, chunk_size), group))
    return total


def _worker_ready() -> int:
    """Started and holding the scanner's imports (this module's), so that the timed runs count no process start."""
    time.sleep(0.2)  # keeps the worker busy so that a concurrent call goes to another one
    return os.getpid()


class _ChildPeaks:
    """Peak memory (VmHWM) of every child process while it lives, polled every 20 ms (a finished worker's
    ``ru_maxrss`` would only give the largest of them, not each)."""

    def __init__(self) -> None:
        self.peaks: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(0.02):
            for task in Path("/proc/self/task").iterdir():
                for pid in (task / "children").read_text().split():
                    try:
                        status = Path(f"/proc/{pid}/status").read_text()
                    except OSError:
                        continue
                    for line in status.splitlines():
                        if line.startswith("VmHWM:"):
                            self.peaks[int(pid)] = max(self.peaks.get(int(pid), 0.0), int(line.split()[1]) / 1024)

    def stop(self) -> dict[int, float]:
        self._stop.set()
        self._thread.join()
        return self.peaks


def _scan_all(source: DumpSource, targets: list[str]) -> tuple[list, list]:
    return list(source.submissions(targets, None)), list(source.comments(targets))


def _matched(results: list) -> int:
    return sum(isinstance(r, RawItem) for r in results)


def measure_files(files: list[str], targets: list[str], chunk_size: int) -> list[dict]:
    """Each file alone: plain decompression, then the scan of the same file, one after the other; with the CPU
    time of the scan's two threads (this one filters; the other, the only other one running, decodes)."""
    rows = []
    for path in sorted(files, key=lambda p: Path(p).name):
        kind = classify_dump(path)
        selection = selector(kind, ids=targets) if kind == SUBMISSION else selector(kind, post_ids=targets)
        started, cpu = time.perf_counter(), time.process_time()
        size = decompress_file(path, chunk_size)
        plain_s, plain_cpu = time.perf_counter() - started, time.process_time() - cpu
        started, cpu, own = time.perf_counter(), time.process_time(), time.thread_time()
        read_dump_file(path, selection, path, chunk_size)
        scan_s, scan_cpu, filter_cpu = time.perf_counter() - started, time.process_time() - cpu, time.thread_time() - own
        rows.append({"file": Path(path).name, "mib": size / MIB, "plain_s": plain_s, "scan_s": scan_s, "plain_cpu": plain_cpu,
                     "decode_cpu": scan_cpu - filter_cpu, "filter_cpu": filter_cpu})
    return rows


def measure_pool(files: list[str], targets: list[str], chunk_size: int, workers: int) -> dict:
    """Plain decompression and the scan on the same pool of ``workers`` spawned processes, started beforehand."""
    peaks = _ChildPeaks()
    with CpuPool(workers) as pool:
        started = time.perf_counter()
        pids: set[int] = set()
        with ThreadPoolExecutor(workers) as threads:
            for _ in range(50):  # a process that starts late finds the calls taken by those already up
                pids |= set(threads.map(lambda _: pool.call(_worker_ready), range(workers)))
                if len(pids) == workers:
                    break
        result: dict = {"workers": workers, "processes": len(pids), "start_s": time.perf_counter() - started}
        started = time.perf_counter()
        result["decompressed_bytes"] = _decompress_on_pool(pool, files, chunk_size)
        result["decompress_s"] = time.perf_counter() - started
        started = time.perf_counter()
        post_results, comment_results = _scan_all(DumpSource(files, chunk_size=chunk_size, pool=pool), targets)
        result["filter_s"] = time.perf_counter() - started
    result["matched_posts"], result["matched_comments"] = _matched(post_results), _matched(comment_results)
    result["worker_peak_rss_mib"] = sorted(peaks.stop().values(), reverse=True)
    return result


def measure(files: list[str], targets: list[str], chunk_size: int, workers: int) -> dict:
    """Runs in a fresh process: decompression, then the filter pass, then normalization and selection; then each
    file alone, then the pool."""
    result: dict = {"rss_at_start_mib": _peak_rss_mib()}
    started = time.perf_counter()
    result["decompressed_bytes"] = decompress_all(files, chunk_size)
    result["decompress_s"] = time.perf_counter() - started
    result["peak_rss_after_decompress_mib"] = _peak_rss_mib()

    source = DumpSource(files, chunk_size=chunk_size)
    started = time.perf_counter()
    post_results = list(source.submissions(targets, None))
    posts = [r for r in post_results if isinstance(r, RawItem)]
    result["submissions_s"] = time.perf_counter() - started
    started = time.perf_counter()
    comment_results = list(source.comments(targets))
    comments = [r for r in comment_results if isinstance(r, RawItem)]
    result["comments_s"] = time.perf_counter() - started
    result["filter_s"] = result["submissions_s"] + result["comments_s"]
    result["matched_posts"] = len(posts)
    result["matched_comments"] = len(comments)
    result["problems"] = len(post_results) - len(posts) + len(comment_results) - len(comments)
    result["peak_rss_after_filter_mib"] = _peak_rss_mib()

    records = _optional("assets.photocritique.logic.reddit_records", "normalize_submission", "normalize_comment", "UsernameHasher")
    selection = _optional("assets.photocritique.logic.selection_rules", "select_references", "FilterParams")
    if records is None or selection is None:
        result["notes"] = ["normalization/selection skipped: normalize_submission/normalize_comment (reddit_records) or "
                           "select_references (critique_filters) not available yet"]
    else:
        normalize_submission, normalize_comment, hasher_type = records
        select_references, params_type = selection
        hasher = hasher_type("bench-salt")
        started = time.perf_counter()
        normalized_posts = [p for p in (normalize_submission(item, hasher) for item in posts) if hasattr(p, "post_id")]
        by_post = defaultdict(list)
        for item in comments:
            comment = normalize_comment(item, hasher, ("automoderator",))
            if hasattr(comment, "comment_id"):
                by_post[comment.post_id].append(comment)
        result["normalize_s"] = time.perf_counter() - started
        started = time.perf_counter()
        params = params_type()
        kept = sum(select_references(post, by_post.get(post.post_id, []), None, params)[0].status == "kept"
                   for post in normalized_posts)
        result["select_s"] = time.perf_counter() - started
        result["kept_posts"] = kept
    result["peak_rss_mib"] = _peak_rss_mib()
    result["files"] = measure_files(files, targets, chunk_size)
    result["pool"] = measure_pool(files, targets, chunk_size, workers) if workers > 1 else None
    result["peak_rss_end_mib"] = _peak_rss_mib()
    return result


def _in_child(function, *args):
    """Run ``function(*args)`` in a fresh interpreter and return its result.

    Linux carries a process's RSS high-water mark over fork and exec, so generation also runs in a child: the
    parent stays small and the measuring child's ``ru_maxrss`` is its own.
    """
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_send_result, args=(sender, function, *args))
    child.start()
    sender.close()
    result = receiver.recv()
    child.join()
    return result


def _send_result(conn, function, *args) -> None:
    conn.send(function(*args))
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, required=True, help="uncompressed MiB of all four files together")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target-fraction", type=float, default=0.01, help="share of post ids in the candidate list")
    parser.add_argument("--level", type=int, default=3, help="zstd level for the generated files")
    parser.add_argument("--window-log", type=int, default=27, help="zstd window (2**N bytes) of the generated files")
    parser.add_argument("--chunk-mb", type=float, default=DEFAULT_CHUNK_BYTES / MIB, help="uncompressed read size")
    parser.add_argument("--workers", type=int, default=2, help="worker processes for the multi-file figure (1: none)")
    args = parser.parse_args()

    size_bytes = int(args.size_mb * MIB)
    manifest_path = args.out / "manifest.json"
    wanted = {"size_bytes": size_bytes, "seed": args.seed, "target_fraction": args.target_fraction,
              "level": args.level, "window_log": args.window_log}
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else None
    if manifest is None or any(manifest.get(k) != v for k, v in wanted.items()):
        started = time.perf_counter()
        manifest = _in_child(generate, args.out, size_bytes, args.seed, args.target_fraction, args.level, args.window_log)
        manifest_path.write_text(json.dumps(manifest))
        print(f"generated {manifest['uncompressed_bytes'] / MIB:.0f} MiB ({manifest['compressed_bytes'] / MIB:.0f} MiB "
              f"compressed) in {time.perf_counter() - started:.0f} s")
    print(f"{manifest['posts']} posts, {manifest['comments']} comments; {len(manifest['targets'])} target posts with "
          f"{manifest['expected_comments']} comments; zstd level {manifest['level']}, window 2**{manifest['window_log']}")

    result = _in_child(measure, manifest["files"], manifest["targets"], int(args.chunk_mb * MIB), args.workers)

    megabytes = manifest["uncompressed_bytes"] / MIB
    decompress_rate = megabytes / result["decompress_s"]
    filter_rate = megabytes / result["filter_s"]
    assert result["decompressed_bytes"] == manifest["uncompressed_bytes"]
    print(f"chunk size {args.chunk_mb:g} MiB; {megabytes:.0f} MiB uncompressed input")
    print(f"plain decompression : {decompress_rate:8.1f} MiB/s ({result['decompress_s']:.1f} s)")
    print(f"filter pass         : {filter_rate:8.1f} MiB/s ({result['filter_s']:.1f} s: submissions "
          f"{result['submissions_s']:.1f} s, comments {result['comments_s']:.1f} s)")
    print(f"ratio filter/decompress: {filter_rate / decompress_rate:.2f}")
    print(f"matched {result['matched_posts']} / {len(manifest['targets'])} posts, "
          f"{result['matched_comments']} / {manifest['expected_comments']} comments, {result['problems']} problems")
    if "normalize_s" in result:
        print(f"normalization {result['normalize_s']:.2f} s, reference selection {result['select_s']:.2f} s, "
              f"{result['kept_posts']} posts kept")
    for note in result.get("notes", []):
        print(f"note: {note}")
    print(f"peak RSS of the measuring process: {result['peak_rss_mib']:.0f} MiB (at start {result['rss_at_start_mib']:.0f}, "
          f"after decompression {result['peak_rss_after_decompress_mib']:.0f}, "
          f"after filter {result['peak_rss_after_filter_mib']:.0f}; at the end {result['peak_rss_end_mib']:.0f})")
    print("each file alone (plain decompression, then the scan of the same file; CPU seconds of plain decompression,"
          " of the scan's decoding thread and of its filtering thread):")
    for row in result["files"]:
        print(f"  {row['file']:16s} {row['mib']:6.0f} MiB  plain {row['mib'] / row['plain_s']:7.1f} MiB/s  "
              f"scan {row['mib'] / row['scan_s']:7.1f} MiB/s  ratio {row['plain_s'] / row['scan_s']:.2f}  "
              f"CPU {row['plain_cpu']:.2f} / {row['decode_cpu']:.2f} + {row['filter_cpu']:.2f} s")
    rows = result["files"]
    single = sum(r["plain_s"] for r in rows) / sum(r["scan_s"] for r in rows)
    bound = sum(r["plain_cpu"] for r in rows) / sum(max(r["decode_cpu"], r["filter_cpu"]) for r in rows)
    print(f"  all files, one stream at a time: ratio {single:.2f} (CPU-bound ratio, each thread on a core of its own:"
          f" {bound:.2f}; both threads on one core: "
          f"{sum(r['plain_cpu'] for r in rows) / sum(r['decode_cpu'] + r['filter_cpu'] for r in rows):.2f})")
    pool = result["pool"]
    ok = (result["matched_posts"] == len(manifest["targets"]) and result["matched_comments"] == manifest["expected_comments"]
          and max(result["peak_rss_mib"], result["peak_rss_end_mib"]) < 500)
    print(f"1 process : scan {filter_rate:7.1f} MiB/s, plain decompression {decompress_rate:7.1f} MiB/s")
    if pool:
        pool_plain, pool_scan = megabytes / pool["decompress_s"], megabytes / pool["filter_s"]
        peaks = pool["worker_peak_rss_mib"]
        print(f"{pool['workers']} processes (pool of {pool['processes']} started in {pool['start_s']:.1f} s, not counted): scan "
              f"{pool_scan:7.1f} MiB/s = {pool_scan / filter_rate:.2f}x the 1-process scan, {pool_scan / decompress_rate:.2f}x "
              f"serial plain decompression, {pool_scan / pool_plain:.2f}x plain decompression on the same pool "
              f"({pool_plain:.1f} MiB/s)")
        print(f"  matched {pool['matched_posts']} posts, {pool['matched_comments']} comments; worker peak RSS "
              + ", ".join(f"{p:.0f}" for p in peaks) + f" MiB (sum with the measuring process "
              f"{sum(peaks) + result['peak_rss_end_mib']:.0f} MiB)")
        ok = (ok and pool["decompressed_bytes"] == manifest["uncompressed_bytes"] and max(peaks, default=0) < 500
              and (pool["matched_posts"], pool["matched_comments"]) == (result["matched_posts"], result["matched_comments"]))
    print(f"load average at the end: {Path('/proc/loadavg').read_text().split()[:3]}")
    print("OK" if ok else "FAILED: counts differ from the generated truth or peak memory >= 500 MiB")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
