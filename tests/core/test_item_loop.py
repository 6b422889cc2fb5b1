"""The item loop: batches, rejection rows, fault isolation, quarantine and its release, whole-step errors."""

import errno

import pytest

from assets.core.item_loop import Item, Kept, Rejected, StepError, StopItems, request_retry, run_items
from assets.core.step import Step
from warehouse.db import Warehouse, insert_rows
from warehouse.lineage import start_activity


def _step(wh: Warehouse, run: str, code_version: str = "t v1") -> Step:
    with wh.transaction() as con:
        log = start_activity(con, asset_key="t", partition_key=None, run_id=run, code_version=code_version,
                             parameters={}, agents=())
    return Step(wh, log.activity_id, "t", code_version)


def _items(values, digest="d"):
    return [Item(f"thing:{v}", f"input.csv#line={i + 2}", f"{digest}{v}", v) for i, v in enumerate(values)]


def _process(item):
    if item.payload == "boom":
        raise ValueError("image (1, 1) is too small")
    if item.payload.startswith("bad"):
        return Rejected("too_small", f"{item.locator}: too small")
    return Kept(item.payload.upper(), count="decoded")


def _writer(stored):
    def write(log, done):
        stored.extend((d.item.payload, d.outcome.value) for d in done if d.kept)
    return write


@pytest.fixture
def wh(tmp_path):
    return Warehouse(tmp_path / "w.duckdb")


def _rejections(wh):
    return {r[0]: r[1:] for r in wh.query("SELECT entity_id, reason_code, detail FROM rejection ORDER BY 1").itertuples(index=False)}


def test_an_exception_on_one_item_is_internal_error_and_the_rest_are_done(wh):
    stored = []
    step = _step(wh, "r1")
    run_items(step, "decode", _items(["a", "boom", "bad1", "b"]), _process, _writer(stored), batch_size=2)
    assert stored == [("a", "A"), ("b", "B")]
    assert step.counts == {"decoded": 2, "rejected:internal_error": 1, "rejected:too_small": 1}
    rejections = _rejections(wh)
    code, detail = rejections["thing:boom"]
    assert code == "internal_error"
    assert "input.csv#line=3" in detail and "ValueError: image (1, 1) is too small" in detail
    assert "test_item_loop._process" in detail and "traceback " in detail
    assert rejections["thing:bad1"][0] == "too_small"
    assert wh.scalar("SELECT count(*) FROM entity WHERE entity_id = 'thing:boom'") == 1
    [row] = wh.query("SELECT stage, locator, error_type, traceback FROM item_quarantine").itertuples(index=False)
    assert row[:3] == ("decode", "input.csv#line=3", "ValueError") and "_process" in row[3]


def test_quarantined_item_is_skipped_until_its_input_or_code_changes(wh):
    calls = []

    def process(item):
        calls.append(item.payload)
        return _process(item)

    run_items(_step(wh, "r1"), "decode", _items(["a", "boom"]), process, _writer([]))
    calls.clear()
    again = _step(wh, "r2")
    run_items(again, "decode", _items(["boom"]), process, _writer([]))
    assert calls == [] and again.counts == {"quarantined": 1}
    run_items(_step(wh, "r3", code_version="t v2"), "decode", _items(["boom"]), process, _writer([]))
    assert calls == ["boom"]
    # a changed input that now succeeds releases the item: its internal_error and quarantine rows go
    fixed = [Item("thing:boom", "input.csv#line=3", "new-digest", "fine")]
    step = _step(wh, "r4", code_version="t v2")
    run_items(step, "decode", fixed, process, _writer([]))
    assert step.counts == {"decoded": 1}
    assert wh.scalar("SELECT count(*) FROM item_quarantine") == 0
    assert "thing:boom" not in _rejections(wh)


def test_a_writer_failure_isolates_the_item_it_failed_on(wh):
    def write(log, done):
        for d in done:
            if d.item.payload == "c":
                raise KeyError("no column c")
            insert_rows(log.con, "agent", [{"agent_id": d.item.payload, "kind": "k", "name": "n"}])

    step = _step(wh, "r1")
    run_items(step, "decode", _items(["a", "b", "c", "d"]), _process, write, batch_size=4)
    assert sorted(wh.query("SELECT agent_id FROM agent")["agent_id"]) == ["a", "b", "d"]
    code, detail = _rejections(wh)["thing:c"]
    assert code == "internal_error" and "while writing input.csv#line=4" in detail and "KeyError" in detail
    assert step.counts == {"decoded": 3, "rejected:internal_error": 1}


def test_whole_step_errors_escape(wh):
    def full_disk(item):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError):
        run_items(_step(wh, "r1"), "decode", _items(["a"]), full_disk, _writer([]))

    def gone(item):
        raise StepError("the input folder is gone")

    with pytest.raises(StepError):
        run_items(_step(wh, "r2"), "decode", _items(["a"]), gone, _writer([]))
    assert wh.scalar("SELECT count(*) FROM item_quarantine") == 0


def test_stop_items_ends_cleanly_with_work_saved(wh):
    stored = []

    def budgeted(item):
        if item.payload == "c":
            raise StopItems("call budget spent")
        return _process(item)

    step = _step(wh, "r1")
    loop = run_items(step, "chain", _items(["a", "b", "c", "d"]), budgeted, _writer(stored), batch_size=2)
    assert stored == [("a", "A"), ("b", "B")] and loop.stopped == "call budget spent"
    assert "call budget spent" in step.notes["chain_stopped"]


def test_workers_keep_order_and_isolate(wh):
    stored = []
    run_items(_step(wh, "r1"), "decode", _items([f"x{i}" for i in range(20)] + ["boom"]), _process, _writer(stored),
              batch_size=7, workers=4)
    assert [p for p, _ in stored] == [f"x{i}" for i in range(20)]
    assert _rejections(wh)["thing:boom"][0] == "internal_error"


def test_retryable_rejections_are_marked(wh):
    def transient(item):
        return Rejected("http_503", "server busy", retryable=True)

    run_items(_step(wh, "r1"), "fetch", _items(["a"]), transient, _writer([]))
    assert wh.query("SELECT retryable FROM rejection")["retryable"].tolist() == [True]


def test_entities_sharing_an_item_share_its_rejections(wh):
    items = [Item("thing:boom", "http://h/x.jpg", "d", "boom", also=("thing:twin",)),
             Item("thing:bad", "http://h/y.jpg", "d", "bad", also=("thing:bad2",))]
    run_items(_step(wh, "r1"), "fetch", items, _process, _writer([]))
    rejections = _rejections(wh)
    assert rejections["thing:twin"][0] == rejections["thing:boom"][0] == "internal_error"
    assert rejections["thing:bad2"][0] == rejections["thing:bad"][0] == "too_small"
    healed = [Item("thing:boom", "http://h/x.jpg", "d2", "fine", also=("thing:twin",))]
    run_items(_step(wh, "r2"), "fetch", healed, _process, _writer([]))
    assert {"thing:boom", "thing:twin"}.isdisjoint(_rejections(wh))


def test_finish_runs_per_batch_and_isolates_the_item_it_fails_on(wh):
    batches = []

    def finish(kept):
        batches.append([d.item.payload for d in kept])
        if any(d.item.payload == "x2" for d in kept):
            raise RuntimeError("CUDA error on x2")
        return [Kept(d.outcome.value + "!", count="embedded") for d in kept]

    stored = []
    step = _step(wh, "r1")
    run_items(step, "clip", _items(["x1", "x2", "x3", "bad1"]), _process, _writer(stored), batch_size=4, finish=finish)
    assert batches[0] == ["x1", "x2", "x3"] and ["x1"] in batches and ["x3"] in batches
    assert stored == [("x1", "X1!"), ("x3", "X3!")]
    assert step.counts == {"embedded": 2, "rejected:internal_error": 1, "rejected:too_small": 1}
    assert "while finishing input.csv#line=3" in _rejections(wh)["thing:x2"][1]


def test_a_retry_request_lets_the_next_run_try_quarantined_items_again(wh):
    calls = []

    def flaky(item):
        calls.append(item.payload)
        if len(calls) == 1:
            raise ConnectionResetError("a dependency hiccup")
        return Kept(item.payload, count="decoded")

    run_items(_step(wh, "r1"), "decode", _items(["a"]), flaky, _writer([]))
    run_items(_step(wh, "r2"), "decode", _items(["a"]), flaky, _writer([]))
    assert calls == ["a"]  # quarantined: not tried again
    assert request_retry(wh, "other_stage") == 0 and request_retry(wh, "decode") == 1
    step = _step(wh, "r3")
    run_items(step, "decode", _items(["a"]), flaky, _writer([]))
    assert calls == ["a", "a"] and step.counts == {"decoded": 1}
    assert wh.scalar("SELECT count(*) FROM item_quarantine") == 0 and "thing:a" not in _rejections(wh)


def test_the_retry_command_refuses_unknown_reasons_in_one_line(capsys):
    from pipelines.cli import main

    assert main(["retry", "--reason", "too_small"]) == 2
    assert main(["retry", "--reason", "gave_up", "--stage", "decode"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and "unknown reason 'too_small'" in lines[0] and "--stage goes with" in lines[1]


def test_a_slow_item_does_not_idle_the_other_workers_and_batches_are_written_in_order(wh):
    """Two workers, batches of two: while item 0 takes its time, the other worker goes on through items of later
    batches; the batches are still written in the order the items were read, each after ``before_write``."""
    import threading
    import time

    started: dict[str, float] = {}
    release = threading.Event()
    events: list[str] = []

    def process(item):
        started[item.payload] = time.monotonic()
        if item.payload == "i0":
            release.wait(timeout=30)
        elif item.payload == "i3":
            release.set()  # reached only if the other worker went past item 0's batch (the window: two batches)
        return Kept(item.payload.upper(), count="done")

    def write(log, done):
        events.append("write:" + ",".join(d.item.payload for d in done))

    run_items(_step(wh, "r1"), "slow", _items([f"i{k}" for k in range(6)]), process, write, batch_size=2, workers=2,
              before_write=lambda: events.append("flush"))
    assert release.is_set() and started["i3"] < started["i0"] + 10
    assert events == ["flush", "write:i0,i1", "flush", "write:i2,i3", "flush", "write:i4,i5"]


def test_stop_items_with_workers_saves_what_was_done_in_order(wh):
    stored = []

    def budgeted(item):
        if item.payload == "x5":
            raise StopItems("call budget spent")
        return _process(item)

    loop = run_items(_step(wh, "r1"), "chain", _items([f"x{i}" for i in range(40)]), budgeted, _writer(stored),
                     batch_size=4, workers=3)
    assert loop.stopped == "call budget spent"
    done = [p for p, _ in stored]
    assert done == sorted(done, key=lambda p: int(p[1:])) and "x5" not in done and {"x0", "x1", "x2", "x3", "x4"} <= set(done)


class _Lines:
    def __init__(self):
        self.lines = []

    def info(self, message):
        self.lines.append(message)


def test_progress_lines_count_every_item_against_the_total(wh, monkeypatch):
    import functools

    import assets.core.item_loop as item_loop
    from assets.core.logic.progress import Progress

    monkeypatch.setattr(item_loop, "Progress", functools.partial(Progress, every_s=0.0))  # every item is due
    log = _Lines()
    run_items(_step(wh, "r1"), "decode", _items(["a", "bad1", "b"]), _process, _writer([]), batch_size=2, log=log)
    assert log.lines[0].startswith("decode: 1/3 items (33%)") and log.lines[-2].startswith("decode: 3/3 items (100%)")
    items = (item for item in _items(["a", "b", "c", "d"]))  # not sized: the caller's total
    log = _Lines()
    run_items(_step(wh, "r2"), "decode", items, _process, _writer([]), workers=2, log=log, total=4)
    assert log.lines[-1].startswith("decode: 4/4 items (100%)")
