"""A run killed with SIGKILL leaves its activity ``running`` and its Dagster run ``STARTED``; the next run marks
both abandoned, with the process that is gone as the reason."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from dagster import DagsterInstance, DagsterRunStatus
from dagster._core.instance.ref import InstanceRef

from tests.support.pool_harness import warehouse_for, write_config

AESFORGE = str(Path(sys.executable).parent / "aesforge")


class _StallingHandler(BaseHTTPRequestHandler):
    """Answers ``/stall.jpg`` only once ``release`` is set, so a fetch is in flight for as long as the test wants."""

    asked = threading.Event()
    release = threading.Event()

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        type(self).asked.set()
        type(self).release.wait(60)
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """The killed run hangs up mid-request; that is the point of the test."""


def _aesforge(config: Path, home: Path, *select: str, **popen) -> subprocess.Popen:
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    env.pop("AESFORGE_CONFIG", None)
    return subprocess.Popen([AESFORGE, "run", "--config", str(config), "--executor", "in_process", "--select", *select],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, **popen)


def _wait_for(predicate, what: str, timeout_s: float = 240.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_killed_run_is_marked_abandoned_by_the_next_run(tmp_path):
    server = _Server(("127.0.0.1", 0), _StallingHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    manifest = tmp_path / "web.jsonl"
    url = f"http://127.0.0.1:{server.server_address[1]}/stall.jpg"
    manifest.write_text(json.dumps({"url": url, "license": "CC0-1.0", "domain": "photography"}) + "\n", encoding="utf-8")
    config = write_config(tmp_path / "cfg", {"manifests": [str(manifest)]},
                          fetch={"timeout_s": 120, "max_retries": 0, "backoff_s": 0.01, "max_backoff_s": 0.05})
    home = tmp_path / "dagster_home"
    home.mkdir()
    wh = warehouse_for(config)
    try:
        killed = _aesforge(config, home, "source_records", "fetched_files", start_new_session=True)
        assert _StallingHandler.asked.wait(240), "the first run never fetched"
        running = _wait_for(
            lambda: wh.query("SELECT activity_id, pid, hostname, run_id FROM activity WHERE status = 'running'"
                             " AND asset_key = 'fetched_files'").to_dict("records"),
            "the fetch step's running activity",
        )
        os.killpg(killed.pid, signal.SIGKILL)  # the whole process group, as kill -9 or the OOM killer would
        killed.wait(30)
        _StallingHandler.release.set()
        [activity] = running
        assert activity["hostname"] == socket.gethostname()
        instance = DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
        assert instance.get_run_by_id(activity["run_id"]).status == DagsterRunStatus.STARTED  # left open by the kill

        following = _aesforge(config, home, "source_records", "fetched_files")
        output, _ = following.communicate(timeout=300)
        assert following.returncode == 0, output
        # the collection finished before the kill and is up to date; the killed fetch never finished: built now
        assert "fetched_files: never built" in output and "up to date, not run: source_records" in output

        status, summary = wh.query("SELECT status, summary FROM activity WHERE activity_id = ?", [activity["activity_id"]]).iloc[0]
        assert status == "abandoned"
        note = json.loads(summary)["note"]
        assert note == f"abandoned: process {activity['pid']} on host {socket.gethostname()} is gone"
        run = instance.get_run_by_id(activity["run_id"])
        assert run.status == DagsterRunStatus.FAILURE
        failure = [e for e in instance.all_logs(run.run_id) if e.dagster_event and e.dagster_event.event_type_value == "PIPELINE_FAILURE"]
        assert failure and note in failure[-1].dagster_event.message
        # the run that found them is not marked: its own activities finished normally
        assert wh.query("SELECT DISTINCT status FROM activity WHERE run_id <> ?", [activity["run_id"]])["status"].tolist() == ["success"]
    finally:
        _StallingHandler.release.set()
        server.shutdown()


def test_a_live_concurrent_activity_is_left_running(tmp_path):
    """An activity whose process still runs (here: this test's process) is not touched by another run's start."""
    from warehouse.lineage import abandon_dead_activities, start_activity

    wh = warehouse_for(write_config(tmp_path / "cfg", {}))
    with wh.transaction() as con:
        start_activity(con, asset_key="live", partition_key=None, run_id="r-live", code_version="t", parameters={}, agents=())
        dead = start_activity(con, asset_key="dead", partition_key=None, run_id="r-dead", code_version="t",
                              parameters={}, agents=()).activity_id
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        con.execute("UPDATE activity SET pid = ?, process_start = NULL WHERE activity_id = ?", [gone.pid, dead])
        assert abandon_dead_activities(con, "test") == [dead]
    assert wh.query("SELECT asset_key, status FROM activity ORDER BY asset_key").values.tolist() == [
        ["dead", "abandoned"], ["live", "running"]]
