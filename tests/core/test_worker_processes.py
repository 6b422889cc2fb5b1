"""Worker processes for CPU-bound calls: values come back, exceptions come back with the worker's frames, and a
call that kills its worker costs only itself (real spawned processes, a real item loop and warehouse)."""

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from assets.core.item_loop import Item, Kept, run_items
from assets.core.step import Step
from assets.core.worker_processes import CpuPool, WorkerDied, WorkerFault
from tests.core.worker_functions import square_or_fail, worker_pid
from warehouse.db import Warehouse
from warehouse.lineage import start_activity


def test_calls_run_in_other_processes_and_return_their_values():
    with CpuPool(2) as cpu, ThreadPoolExecutor(4) as threads:
        assert list(threads.map(lambda v: cpu.call(square_or_fail, v), range(20))) == [v * v for v in range(20)]
        assert os.getpid() not in set(threads.map(lambda v: cpu.call(worker_pid, v), range(8)))


def test_an_exception_comes_back_with_the_frames_of_the_worker():
    with CpuPool(1) as cpu:
        with pytest.raises(WorkerFault) as raised:
            cpu.call(square_or_fail, -2)
    assert raised.value.type_name == "ValueError" and raised.value.message == "cannot square -2"
    assert raised.value.frames[-1][1] == "square_or_fail"


def test_a_call_that_kills_its_worker_costs_only_itself_and_the_pool_is_replaced():
    values = [1, 2, 3, -1, 4, 5, 6, 7]

    def one(value):
        try:
            return cpu.call(square_or_fail, value)
        except WorkerDied as died:
            return str(died)

    with CpuPool(2) as cpu, ThreadPoolExecutor(4) as threads:
        results = list(threads.map(one, values))
        assert cpu.call(square_or_fail, 9) == 81  # the pool after the crash works
    assert results[3].startswith("the worker process died running square_or_fail, also when run alone")
    assert [r for i, r in enumerate(results) if i != 3] == [v * v for v in values if v != -1]


def test_in_the_item_loop_a_worker_crash_and_a_worker_exception_are_each_their_items_internal_error(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    with wh.transaction() as con:
        log = start_activity(con, asset_key="t", partition_key=None, run_id="r", code_version="v", parameters={}, agents=())
    step = Step(wh, log.activity_id, "t", "v")
    values = [3, -1, 4, -2, 5]
    stored = []
    with CpuPool(2) as cpu:
        run_items(step, "measure", [Item(f"n:{v}", f"numbers.csv#line={i + 2}", str(v), v) for i, v in enumerate(values)],
                  lambda item: Kept(cpu.call(square_or_fail, item.payload)),
                  lambda log, done: stored.extend(d.outcome.value for d in done), workers=3, batch_size=2)
    assert stored == [9, 16, 25]
    details = dict(wh.query("SELECT entity_id, detail FROM rejection WHERE reason_code = 'internal_error'").itertuples(index=False))
    assert details["n:-1"].startswith("numbers.csv#line=3: WorkerDied: the worker process died running square_or_fail")
    assert details["n:-2"].startswith("numbers.csv#line=5: ValueError: cannot square -2 (while processing"
                                      " numbers.csv#line=5, raised in tests.core.worker_functions.square_or_fail")


def test_map_spreads_calls_over_the_workers_and_keeps_their_order_and_outcomes():
    with CpuPool(2) as cpu:
        assert not cpu.started
        assert cpu.map(square_or_fail, [(v,) for v in range(10)]) == [v * v for v in range(10)]
        assert cpu.started
        with pytest.raises(WorkerFault, match="cannot square -2"):
            cpu.map(square_or_fail, [(1,), (-2,), (3,)])
        with pytest.raises(WorkerDied):
            cpu.map(square_or_fail, [(2,), (-1,), (3,)])
        assert cpu.map(square_or_fail, [(4,), (5,)]) == [16, 25]  # the pool after the crash works
