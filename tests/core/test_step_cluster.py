"""``step_cluster``: a step running as a Dask task reaches its own cluster; anywhere else there is none."""

from __future__ import annotations

import os

from distributed import Client, LocalCluster

from assets.core.step_cluster import step_cluster


def _step_sending_work(n: int) -> tuple[int, int]:
    """Stands in for a step on a Dask worker: sends a task to its cluster and waits for it (module-level: picklable)."""
    with step_cluster() as client:
        return client.submit(os.getpid, pure=False).result(), client.submit(pow, n, 2).result()


def test_outside_a_dask_worker_there_is_no_cluster():
    with step_cluster() as client:
        assert client is None


def test_a_step_on_a_one_thread_worker_uses_that_worker_without_deadlock():
    # one worker process of one thread: the step's task must leave the thread for its own tasks to run at all
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        worker_pid, squared = client.submit(_step_sending_work, 7).result(timeout=120)
        (worker,) = cluster.workers.values()
        assert squared == 49 and worker_pid == worker.pid != os.getpid()
