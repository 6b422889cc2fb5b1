"""Pair verification in worker processes: the same pairs, in the same order, as verifying in the step's process
(real spawned processes)."""

from assets.core.worker_processes import CpuPool
from assets.image_pool import perceptual_dedup
from assets.image_pool.logic.perceptual import PerceptualMatcher
from tests.image_pool.logic.test_perceptual import originals_and_copies


def test_pairs_verified_in_worker_processes_are_the_pairs_verified_here_in_the_same_order(monkeypatch):
    items = originals_and_copies()
    here: PerceptualMatcher[str] = PerceptualMatcher()
    expected = [m for start in range(0, len(items), 7) for m in here.match_batch(items[start:start + 7])]
    monkeypatch.setattr(perceptual_dedup, "VERIFY_PROCESSES_FROM", 1)
    with CpuPool(2) as cpu:
        there: PerceptualMatcher[str] = PerceptualMatcher(
            verify=lambda candidates, params: perceptual_dedup.verify_in_workers(cpu, candidates, params))
        got = [m for start in range(0, len(items), 7) for m in there.match_batch(items[start:start + 7])]
        assert cpu.started
    assert got == expected and sum(map(len, got)) >= 6
