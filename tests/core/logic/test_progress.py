"""Progress of a long step: rate and ETA arithmetic, and at most one line per interval (clock injected)."""

from assets.core.logic.progress import Progress, Snapshot, clock_time


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_rate_and_eta_from_the_items_done_so_far():
    snapshot = Snapshot(done=120, total=500, elapsed_s=10.0)
    assert snapshot.rate == 12.0
    assert snapshot.eta_s == 380 / 12.0
    assert snapshot.describe("fetch") == "fetch: 120/500 items (24%), 12.0 items/s, ETA 0:00:32"


def test_without_a_total_there_is_no_eta_and_before_any_time_no_rate():
    assert Snapshot(7, None, 2.0).eta_s is None
    assert Snapshot(7, None, 2.0).describe("decode") == "decode: 7 items, 3.5 items/s"
    assert Snapshot(0, 10, 0.0).rate is None and Snapshot(0, 10, 0.0).eta_s is None
    assert Snapshot(0, 10, 5.0).eta_s is None  # nothing done yet: no rate to extrapolate


def test_the_end_line_says_how_long_it_took():
    assert Snapshot(500, 500, 3725.0).describe("fetch") == "fetch: 500/500 items (100%), 0.1 items/s, took 1:02:05"


def test_clock_time():
    assert clock_time(0) == "0:00:00"
    assert clock_time(59.6) == "0:01:00"
    assert clock_time(36_000 + 61) == "10:01:01"


def test_a_line_is_due_at_most_once_per_interval():
    clock = FakeClock()
    progress = Progress(total=100, clock=clock, every_s=10.0)
    due = []
    for _ in range(100):
        clock.now += 0.25  # 4 items a second: a line every 40 items
        due.append(progress.advance(1))
    lines = [snapshot for snapshot in due if snapshot is not None]
    assert [s.done for s in lines] == [40, 80]
    assert lines[0].rate == 4.0 and lines[0].eta_s == 15.0
    assert progress.finish() == Snapshot(100, 100, 25.0)


def test_a_short_step_stays_quiet():
    clock = FakeClock()
    progress = Progress(total=3, clock=clock, every_s=10.0)
    clock.now += 1.0
    assert progress.advance(3) is None
    assert progress.finish() is None
