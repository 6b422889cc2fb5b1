"""The Dask cluster a step runs on, for the step's own data-parallel work (issue 19: "heavy data-parallel work
inside a step may use the same cluster").

Why no setting: when the run's executor is ``dask`` (``pipelines/executor.py``) every step runs as a task on a Dask
worker, and that worker knows its scheduler, whether the cluster was named in the config or started for the run; in
any other executor the step runs in a plain process and there is no cluster to use. Tasks sent there read files and
return data; only the step's process writes the warehouse.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def step_cluster() -> Iterator[Any | None]:
    """A ``distributed.Client`` of the cluster whose worker runs this step, or None outside a Dask worker.

    While it is open the step's task has left its worker's thread pool (``worker_client`` secedes), so that
    worker runs the step's tasks too, and a cluster of one single-threaded worker cannot deadlock on them."""
    if "distributed" not in sys.modules:  # a Dask worker has imported it; a plain step process need not pay for it
        yield None
        return
    from distributed import get_worker, worker_client

    try:
        get_worker()
    except ValueError:  # distributed is imported, but this is not a worker's task
        yield None
        return
    with worker_client() as client:
        yield client
