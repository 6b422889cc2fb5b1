"""A locked warehouse or a full disk ends `aesforge run` in one FAILED line naming the cause, never a traceback."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from filelock import FileLock, Timeout

from pipelines.config import load_config
from tests.support.pool_harness import write_config
from warehouse.db import Warehouse, WarehouseLocked, storage_failure

AESFORGE = str(Path(sys.executable).parent / "aesforge")


def test_a_lock_held_by_another_process_ends_in_one_failed_line(tmp_path):
    config = write_config(tmp_path / "cfg", {}, warehouse={"path": "warehouse.duckdb", "lock_timeout_s": 1})
    lock = Path(load_config(config)["warehouse"]["path"] + ".lock")
    (tmp_path / "home").mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    env.pop("AESFORGE_CONFIG", None)
    with FileLock(str(lock)):  # this test process is the other process
        run = subprocess.run([AESFORGE, "run", "--config", str(config), "--executor", "in_process", "--select", "source_records"],
                             capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    [failed] = [line for line in run.stderr.splitlines() if "FAILED" in line]
    assert failed == f"run (not started) FAILED: warehouse locked by another process ({lock}) for 1 s"


def test_lock_timeout_inside_a_transaction_is_a_warehouse_error(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb", lock_timeout_s=0.1)
    with FileLock(str(wh.path) + ".lock", thread_local=False):
        probe = subprocess.run(
            [sys.executable, "-c", "import sys; from warehouse.db import Warehouse, storage_failure\n"
             "try:\n    Warehouse(sys.argv[1], lock_timeout_s=0.1).scalar('SELECT 1')\n"
             "except Exception as exc:\n    print(type(exc).__name__, storage_failure(exc))", str(wh.path)],
            capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert probe.stdout.strip() == f"WarehouseLocked warehouse locked by another process ({wh.path}.lock) for 0.1 s", probe.stderr


def _disk_full_write() -> OSError:
    """A real ENOSPC: /dev/full refuses every write with it."""
    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        os.write(fd, b"rows")
    except OSError as exc:
        return exc
    finally:
        os.close(fd)
    raise AssertionError("/dev/full accepted a write")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full to produce a real ENOSPC")
def test_disk_full_maps_to_one_line():
    full = _disk_full_write()
    assert full.errno == errno.ENOSPC
    assert storage_failure(full) == "disk full: No space left on device"
    named = OSError(full.errno, full.strerror, "/data/blobs/ab/cd")
    assert storage_failure(named) == "disk full writing /data/blobs/ab/cd: No space left on device"
    try:  # wrapped by a caller, as a step's error is: the cause is still found
        try:
            raise full
        except OSError as exc:
            raise RuntimeError("could not store the batch") from exc
    except RuntimeError as wrapped:
        assert storage_failure(wrapped) == "disk full: No space left on device"
    with pytest.raises(duckdb.IOException) as duck:
        duckdb.connect().execute("COPY (SELECT repeat('x', 1000) FROM range(100)) TO '/dev/full' (FORMAT csv)")
    assert storage_failure(duck.value) == "disk full writing /dev/full: No space left on device"


def test_other_errors_are_not_storage_failures(tmp_path):
    assert storage_failure(ValueError("a bug")) is None
    with pytest.raises(duckdb.CatalogException) as missing:
        duckdb.connect().execute("SELECT * FROM no_such_table")
    assert storage_failure(missing.value) is None
    assert storage_failure(WarehouseLocked("warehouse locked by another process (x.lock) for 1 s")) == (
        "warehouse locked by another process (x.lock) for 1 s")
    held = FileLock(str(tmp_path / "t.lock"), thread_local=False)
    with held:
        with pytest.raises(Timeout) as timeout:
            FileLock(str(tmp_path / "t.lock"), timeout=0.01, is_singleton=False, thread_local=False).acquire()
    assert storage_failure(timeout.value) == f"warehouse locked by another process ({tmp_path / 't.lock'})"
