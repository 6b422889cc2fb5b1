"""The real source_records + fetched_files assets on a manifest of hostile URLs served on 127.0.0.1.

One sequence of runs over all cases: the first run gives every URL exactly one outcome with the expected reason;
a stalled URL costs one timeout_s, not one per retry; after fetch.max_attempt_runs runs the transient failures
are gave_up with each run's reason, and a further run sends them no request and adds no row; ``aesforge retry
--reason gave_up`` makes them pending again. A URL whose fetch raises (injected) is internal_error and is not
retried by the next runs.
"""

from __future__ import annotations

import contextlib
import io

import pytest

from resources import fetching
from resources.fetching import CHUNK_BYTES, MAX_REDIRECTS, HttpFetcher
from pipelines.cli import main
from tests.support.pool_harness import DATA_TABLES, run_pool, step_summaries, warehouse_for, write_config
from tests.support.hostile.http import CASES, KEPT, STREAM_TOTAL_BYTES, HostileImageHost, HttpCase, write_manifest

TIMEOUT_S = 2.0
"""Generous: the host shares a GIL with the pipeline, and a loaded CI machine can hold a redirect back 0.5 s."""
MAX_RETRIES = 2
MAX_BACKOFF_S = 0.05
MAX_BYTES = 300_000
MAX_ATTEMPT_RUNS = 3  # the default
BOOM = HttpCase("raises", "/good/photo.png?boom", "internal_error")
COLLECT = ["source_records", "fetched_files"]
REFETCH = ["fetched_files"]  # the manifest does not change after the first run
STATE_TABLES = (*DATA_TABLES, "fetch_failed_run", "item_quarantine")
TRANSIENT = [case for case in CASES if case.transient]
BY_NAME = {case.name: case for case in CASES}


def _snapshot(wh) -> dict[str, list[tuple]]:
    with wh.transaction() as con:
        return {table: sorted(con.execute(f"SELECT * FROM {table}").fetchall(), key=repr) for table in STATE_TABLES}


def _outcomes(wh, host: HostileImageHost) -> dict[str, list[tuple[str, bool]]]:
    """Per case: every outcome row of its record (kept, or the fetch rejection with its retryable flag)."""
    frame = wh.query(
        "SELECT r.title, 'kept' AS outcome, false AS retryable FROM source_record r JOIN record_file f USING (record_id)"
        " UNION ALL SELECT r.title, j.reason_code, j.retryable FROM source_record r JOIN rejection j"
        " ON j.entity_id = r.record_id AND j.stage IN ('source', 'fetch')"
    )
    out: dict[str, list[tuple[str, bool]]] = {}
    for title, outcome, retryable in frame.itertuples(index=False):
        out.setdefault(title, []).append((outcome, bool(retryable)))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile_http")
    real_fetch = HttpFetcher.fetch

    def fetch(self, locator):
        if locator.endswith("?boom"):
            raise RuntimeError("injected failure")
        return real_fetch(self, locator)

    with HostileImageHost() as host, pytest.MonkeyPatch.context() as patch:
        patch.setattr(HttpFetcher, "fetch", fetch)
        patch.delenv("AESFORGE_CONFIG", raising=False)  # the CLI sets it; restored when the block ends
        assert host.big_body_bytes > MAX_BYTES + CHUNK_BYTES
        manifest = write_manifest(root / "in", host, (*CASES, BOOM))
        config = write_config(
            root / "cfg",
            {"manifests": [str(manifest)]},
            fetch={"timeout_s": TIMEOUT_S, "max_retries": MAX_RETRIES, "backoff_s": 0.01, "max_backoff_s": MAX_BACKOFF_S,
                   "max_bytes": MAX_BYTES},
        )
        wh = warehouse_for(config)
        seen = {"host": host, "wh": wh, "config": config, "results": [], "hits": [], "outcomes": [], "snapshots": []}
        for run_number in range(MAX_ATTEMPT_RUNS + 1):
            seen["results"].append(run_pool(config, COLLECT if run_number == 0 else REFETCH))
            seen["hits"].append(host.hits)
            seen["outcomes"].append(_outcomes(wh, host))
            seen["snapshots"].append(_snapshot(wh))
        seen["streamed_bytes"] = host.streamed_bytes
        seen["gave_up_details"] = dict(wh.query(
            "SELECT r.title, j.detail FROM rejection j JOIN source_record r ON r.record_id = j.entity_id"
            " WHERE j.reason_code = 'gave_up'").itertuples(index=False))
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            seen["retry_code"] = main(["retry", "--reason", "gave_up", "--config", str(config)])
        seen["retry_printed"] = printed.getvalue()
        seen["after_retry"] = _outcomes(wh, host)
        seen["results"].append(run_pool(config, REFETCH))
        seen["hits"].append(host.hits)
        seen["outcomes"].append(_outcomes(wh, host))
        yield seen


def _first_attempts(wh, name: str, run_id: str):
    """The fetch attempts of case ``name``'s record in the run ``run_id``."""
    return wh.query(
        "SELECT a.attempt, a.status_code, a.n_bytes, a.duration_ms, a.error FROM fetch_attempt a"
        " JOIN source_record r USING (record_id) JOIN activity v ON v.activity_id = a.activity_id"
        " WHERE r.title = ? AND v.run_id = ? ORDER BY a.attempt", [name, run_id])


def test_every_url_has_exactly_one_outcome_with_its_reason(runs):
    assert all(result.success for result in runs["results"])
    first = runs["outcomes"][0]
    assert {name: rows for name, rows in first.items()} == {
        case.name: [(case.expected, case.transient)] for case in (*CASES, BOOM)
    }
    assert [case.name for case in CASES if case.expected == KEPT] == ["good_photo", "good_painting", "flaky"]


def test_a_stalled_url_costs_one_timeout_not_one_per_retry(runs):
    wh, run_id = runs["wh"], runs["results"][0].run_id
    stall = _first_attempts(wh, "stall", run_id)
    assert len(stall) == 1 and "timeout" in stall.error[0]
    assert stall.duration_ms.sum() <= 1000 * (TIMEOUT_S + 1.0)  # one timeout_s (+ slack), not (retries + 1) of them
    refused = _first_attempts(wh, "refused", run_id)
    assert len(refused) == MAX_RETRIES + 1  # a refused connection spends almost no budget: retried with backoff
    always_500 = _first_attempts(wh, "always_500", run_id)
    assert always_500.status_code.tolist() == [500] * (MAX_RETRIES + 1)


def test_oversized_bodies_are_refused_or_cut_at_the_cap(runs):
    wh, run_id = runs["wh"], runs["results"][0].run_id
    (declared,) = _first_attempts(wh, "oversized_declared", run_id).itertuples()
    assert declared.n_bytes == 0 and "Content-Length" in declared.error  # refused before the download
    (streamed,) = _first_attempts(wh, "oversized_streamed", run_id).itertuples()
    assert MAX_BYTES < streamed.n_bytes <= MAX_BYTES + CHUNK_BYTES
    assert runs["streamed_bytes"] < STREAM_TOTAL_BYTES  # the client hung up; the host never sent it all
    short = _first_attempts(wh, "short_body", run_id)
    assert "more declared by Content-Length" in short.error[0]


def test_transient_failures_are_given_up_after_max_attempt_runs_with_their_history(runs):
    last = runs["outcomes"][MAX_ATTEMPT_RUNS - 1]
    for case in TRANSIENT:
        assert last[case.name] == [(fetching.GAVE_UP, False)], case.name
    for run_index in range(MAX_ATTEMPT_RUNS - 1):
        assert all(runs["outcomes"][run_index][case.name] == [(case.expected, True)] for case in TRANSIENT)
    assert sorted(runs["gave_up_details"]) == sorted(case.name for case in TRANSIENT)
    detail = runs["gave_up_details"]["always_500"]
    assert f"failed transiently in {MAX_ATTEMPT_RUNS} runs (fetch.max_attempt_runs={MAX_ATTEMPT_RUNS})" in detail
    assert detail.count("http_status: HTTP 500") == MAX_ATTEMPT_RUNS and "aesforge retry --reason gave_up" in detail
    history = runs["wh"].query("SELECT locator, count(*) AS n FROM fetch_failed_run GROUP BY ALL")
    assert sorted(history.n.tolist()) == [MAX_ATTEMPT_RUNS + 1] * len(TRANSIENT)  # + the run after the reset


def test_a_further_run_sends_no_request_and_adds_no_row(runs):
    before, after = runs["hits"][MAX_ATTEMPT_RUNS - 1], runs["hits"][MAX_ATTEMPT_RUNS]
    assert after == before
    assert runs["snapshots"][MAX_ATTEMPT_RUNS] == runs["snapshots"][MAX_ATTEMPT_RUNS - 1]
    summary = step_summaries(runs["wh"], runs["results"][MAX_ATTEMPT_RUNS].run_id)["fetched_files"]
    assert summary == {"locators_pending": 1, "quarantined": 1, "shards": "all"}  # only the raising URL, skipped
    hits = {name: before[case.path] for name, case in BY_NAME.items() if case.path}
    assert (hits["not_found"], hits["flaky"], hits["redirect_loop"]) == (1, 3, 1 + MAX_REDIRECTS)
    assert (hits["always_500"], hits["stall"]) == (MAX_ATTEMPT_RUNS * (MAX_RETRIES + 1), MAX_ATTEMPT_RUNS)


def test_retry_gave_up_makes_them_pending_again(runs):
    assert runs["retry_code"] == 0
    assert f"{len(TRANSIENT)} item(s) rejected as gave_up are pending again" in runs["retry_printed"]
    pending = runs["after_retry"]
    assert all(case.name not in pending for case in TRANSIENT)  # no outcome: pending
    before, after = runs["hits"][MAX_ATTEMPT_RUNS], runs["hits"][-1]
    always_500, stall = BY_NAME["always_500"].path, BY_NAME["stall"].path
    assert (after[always_500] - before[always_500], after[stall] - before[stall]) == (MAX_RETRIES + 1, 1)
    final = runs["outcomes"][-1]
    assert all(final[case.name] == [(case.expected, True)] for case in TRANSIENT)  # a fresh count of runs
    assert final[BOOM.name] == [("internal_error", False)]


def test_retry_with_an_unknown_reason_is_one_line_and_exit_2(runs, capsys):
    assert main(["retry", "--reason", "gave-up", "--config", str(runs["config"])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gave-up" in err and "gave_up" in err

