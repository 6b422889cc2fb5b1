"""The write-behind call log's shards: answers durable before the warehouse commits them, recovered after a crash.

Real parts: shard files on disk, a real DuckDB warehouse, and a step process killed with SIGKILL while it asks the
loopback OpenAI-compatible server through the real openai SDK.
"""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from assets.core.call_shards import ShardWriter, encode_record, read_shard
from assets.core.model_call_store import WarehouseCallStore, shard_directory
from assets.core.model_calls import CallBudget, ModelCaller, RateLimiter
from tests.core.test_model_calls import WordCountProvider, _request, parse_words, repair
from tests.support.model_servers import ModelApiServer
from warehouse.db import Warehouse
from warehouse.lineage import start_activity

ROOT = Path(__file__).resolve().parents[2]


def _activity(wh: Warehouse, run_id: str) -> str:
    with wh.transaction() as con:
        return start_activity(con, asset_key="test", partition_key=None, run_id=run_id, code_version="t", parameters={},
                              agents=()).activity_id


def _reopen(wh: Warehouse, run_id: str) -> None:
    """Open (and close) the next store on the warehouse: it recovers the shards of processes that are gone."""
    WarehouseCallStore(wh, _activity(wh, run_id)).close()


def _counts(wh: Warehouse) -> tuple[int, int, int, int]:
    """Calls, distinct call ids, call entities, and generation edges of calls."""
    return (wh.scalar("SELECT count(*) FROM model_call"), wh.scalar("SELECT count(DISTINCT call_id) FROM model_call"),
            wh.scalar("SELECT count(*) FROM entity WHERE kind = 'model_call'"),
            wh.scalar("SELECT count(*) FROM was_generated_by WHERE entity_id LIKE 'model_call:%'"))


def durable_answers(wh: Warehouse) -> dict[str, str]:
    """Call id -> role of every answer that outlives a crash: committed, or in a call shard the next open commits."""
    answers = dict(wh.query("SELECT call_id, role FROM model_call WHERE status = 'ok'").itertuples(index=False))
    for shard in shard_directory(wh).glob("*.jsonl"):
        answers.update((r["row"]["call_id"], r["row"]["role"]) for r in read_shard(shard.read_bytes()).records
                       if r["row"]["status"] == "ok")
    return answers


def test_a_shard_reads_back_its_complete_records_and_drops_a_torn_or_damaged_tail():
    records = [{"row": {"call_id": f"model_call:{i}", "text": "é\n{}"}, "lease_owner": None} for i in range(3)]
    clean = b"".join(encode_record(r) for r in records)
    assert read_shard(clean).records == records and read_shard(clean).dropped_bytes == 0
    torn = clean + encode_record({"row": {"call_id": "model_call:torn"}})[:-7]
    assert read_shard(torn).records == records and read_shard(torn).dropped_bytes > 0
    lines = clean.split(b"\n")
    damaged = b"\n".join([lines[0], lines[1].replace(b"model_call:1", b"model_call:7"), lines[2], b""])
    assert read_shard(damaged).records == records[:1]  # nothing after a line that fails its checksum is trusted


def test_many_threads_appending_share_fsyncs_and_lose_no_record(tmp_path):
    writer = ShardWriter(tmp_path / "log", "test")

    def append(i: int) -> None:
        for k in range(50):
            writer.sync(writer.append({"thread": i, "k": k}))

    threads = [threading.Thread(target=append, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = read_shard(writer.path.read_bytes())
    writer.close(remove=True)
    assert got.dropped_bytes == 0
    assert sorted((r["thread"], r["k"]) for r in got.records) == [(i, k) for i in range(8) for k in range(50)]
    assert list((tmp_path / "log").iterdir()) == []


def test_a_shard_committed_twice_adds_nothing(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    store = WarehouseCallStore(wh, _activity(wh, "r1"), commit_every=10**6, commit_after_s=3600)
    caller = ModelCaller("wordcount", WordCountProvider(), store, CallBudget(), RateLimiter(None), repair, leases=store)
    for i in range(5):
        assert caller.call(_request(" ".join(["w"] * (i + 1))), parse_words).ok
    (shard,) = shard_directory(wh).iterdir()
    copy = shard.read_bytes()
    assert len(read_shard(copy).records) == 5  # durable in the shard before any commit
    store.close()
    assert _counts(wh) == (5, 5, 5, 5) and list(shard_directory(wh).iterdir()) == []
    before = wh.query("SELECT * FROM model_call ORDER BY call_id")
    (shard_directory(wh) / "gone-1-again.jsonl").write_bytes(copy)  # as if left by a process that died after committing
    _reopen(wh, "r2")
    assert _counts(wh) == (5, 5, 5, 5) and list(shard_directory(wh).iterdir()) == []
    assert wh.query("SELECT * FROM model_call ORDER BY call_id").equals(before)
    assert wh.scalar("SELECT count(*) FROM model_call_lease") == 0


def test_a_store_used_without_leases_names_calls_as_a_leased_one_does(tmp_path):
    """A failure, then its retry, then a later store's: the same ids and rows whether the calls are counted under
    leases (in the warehouse) or by the one store asking them (from what it read and logged)."""
    ids = []
    for name, leased in (("leased", True), ("unleased", False)):
        wh = Warehouse(tmp_path / f"{name}.duckdb")
        provider = WordCountProvider(fail=1)
        store = WarehouseCallStore(wh, _activity(wh, "r1"))
        caller = ModelCaller("wordcount", provider, store, CallBudget(), RateLimiter(None), repair,
                             leases=store if leased else None)
        failed, retried = caller.call(_request(), parse_words), caller.call(_request(), parse_words)
        store.close()
        later = WarehouseCallStore(wh, _activity(wh, "r2"))
        again = ModelCaller("wordcount", WordCountProvider(fail=1), later, CallBudget(), RateLimiter(None), repair,
                            leases=later if leased else None)
        other = again.call(_request("x y"), parse_words), again.call(_request("x y"), parse_words)
        later.close()
        ids.append((failed.call_ids, retried.call_ids, [o.call_ids for o in other],
                    wh.query("SELECT * EXCLUDE (called_at, activity_id) FROM model_call ORDER BY call_id")
                    .to_dict("records")))
    assert ids[0] == ids[1] and len(ids[0][3]) == 4  # the same rows, failures (no tokens) included


_STEP = """
import sys
from assets.core.model_call_store import WarehouseCallStore
from assets.core.model_calls import CallBudget, ModelCaller, RateLimiter
from resources.model_providers import OpenAIProvider
from resources.models.types import ModelRequest
from warehouse.db import Warehouse
from warehouse.lineage import start_activity
from concurrent.futures import ThreadPoolExecutor
from threading import Lock

printing = Lock()
wh = Warehouse(sys.argv[1])
with wh.transaction() as con:
    activity = start_activity(con, asset_key="crash", partition_key=None, run_id="crash", code_version="t",
                              parameters={}, agents=()).activity_id
store = WarehouseCallStore(wh, activity, commit_every=10**6, commit_after_s=3600)
caller = ModelCaller("openai@loopback", OpenAIProvider("sk-crash", base_url=sys.argv[2], timeout_s=10, max_retries=0),
                     store, CallBudget(), RateLimiter(None), lambda r, a, p: r, leases=store)

def ask(i):
    request = ModelRequest("planner", "crash-model", "Describe.", f"call number {i}", None, None, None, None,
                           template_id="test/crash", template_version="1")
    outcome = caller.call(request, lambda text: text)
    with printing:
        print(outcome.call_ids[0], flush=True)

with ThreadPoolExecutor(4) as pool:
    list(pool.map(ask, range(10_000)))
"""


def test_a_step_killed_mid_run_leaves_every_answered_call_committed_once_at_the_next_open(tmp_path):
    wh_path = tmp_path / "w.duckdb"
    wh = Warehouse(wh_path)
    (tmp_path / "step.py").write_text(_STEP)
    with ModelApiServer(openai_key="sk-crash", latency_s=0.05) as server:
        step = subprocess.Popen([sys.executable, str(tmp_path / "step.py"), str(wh_path), server.openai_base_url],
                                cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True)
        answered = []
        try:
            while len(answered) < 24:
                line = step.stdout.readline()
                assert line, "the step process ended before answering 24 calls"
                answered.append(line.strip())
        finally:
            os.kill(step.pid, signal.SIGKILL)
            step.wait(timeout=30)
    committed_before = set(wh.query("SELECT call_id FROM model_call")["call_id"])
    (shard,) = shard_directory(wh).iterdir()
    in_shard = [r["row"]["call_id"] for r in read_shard(shard.read_bytes()).records]
    assert set(answered) <= set(in_shard) and len(in_shard) == len(set(in_shard))  # every answer returned was durable
    assert set(in_shard) - committed_before, "the kill came after every call was committed: nothing to recover"
    with shard.open("ab") as torn:  # a crash half-way through appending the next record
        torn.write(encode_record({"row": {"call_id": "model_call:torn"}, "lease_owner": None})[:40])

    _reopen(wh, "next")  # the next open recovers the dead process's shard
    committed = wh.query("SELECT call_id FROM model_call")["call_id"].tolist()
    assert sorted(committed) == sorted(set(in_shard) | committed_before)  # each once; the torn record is not among them
    assert _counts(wh) == (len(committed),) * 4 and list(shard_directory(wh).iterdir()) == []
    assert wh.scalar("SELECT count(*) FROM model_call_lease l JOIN model_call c USING (cache_key)") == 0
    assert wh.scalar("SELECT count(*) FROM model_call_lease") <= 4  # at most the requests in flight at the kill

    _reopen(wh, "again")  # opening again adds nothing
    assert _counts(wh) == (len(committed),) * 4
    assert wh.scalar("SELECT count(DISTINCT activity_id) FROM model_call") == 1  # all under the dead step's activity


def test_a_full_shard_is_replaced_and_each_is_removed_once_its_calls_are_committed(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    store = WarehouseCallStore(wh, _activity(wh, "r1"), commit_every=10**6, commit_after_s=3600,
                               shard_bytes=1)  # every call fills its shard
    caller = ModelCaller("wordcount", WordCountProvider(), store, CallBudget(), RateLimiter(None), repair)
    for i in range(3):
        assert caller.call(_request(" ".join(["w"] * (i + 1))), parse_words).ok
    shards = sorted(shard_directory(wh).iterdir())
    assert sorted(len(read_shard(s.read_bytes()).records) for s in shards) == [0, 1, 1, 1]  # and the current one
    assert _counts(wh) == (0, 0, 0, 0)
    store.flush()
    assert _counts(wh) == (3, 3, 3, 3) and len(list(shard_directory(wh).iterdir())) == 1  # only the current one
    store.close()
    assert list(shard_directory(wh).iterdir()) == []
