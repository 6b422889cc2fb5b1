"""Resuming the r/photocritique stages for real: a crash mid dump scan, HTTP failures, window mode, the salt.

Every run is a real in-process Dagster materialization over the fixture archive (sample/reddit_fixture.py)
into a real DuckDB file; HTTP goes through the real clients to loopback servers. The only interference is
the crash itself: ``DumpSource.scan_lines`` is wrapped so that the process fails after a chosen number of
lines, the way a killed worker would, and wrapped again to record where later scans start.
"""

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import zstandard
from dagster import AssetKey, DagsterInstance, ExecuteInProcessResult

from assets.photocritique.logic.reddit_dumps import DumpSource
from pipelines.config import load_config
from pipelines.definitions import build_definitions
from sample.reddit_fixture import RedditFixture, build_fixture
from tests.support.pool_harness import step_summaries, write_config
from tests.photocritique.test_assets import _assert_matches_expected, _photocritique_section, _snapshot, outcome
from tests.support.reddit_servers import ArchiveApiServer, InjectedFailure
from warehouse.db import Warehouse

BATCH_SIZE = 20
CRASH_FILE = "RC_2019-05.zst"
CRASH_AFTER_LINES = 2 * BATCH_SIZE + 1  # two batches are committed, the third is in flight when the scan dies
INGEST = ["reddit_posts", "reddit_comments"]


class SimulatedCrash(RuntimeError):
    """Stands in for the worker dying in the middle of a dump file."""


@pytest.fixture(scope="module")
def served() -> RedditFixture:
    """What the loopback servers serve: the latest copy of every post and comment of the dumps."""
    return build_fixture()


def _dumps(archive: Path) -> list[str]:
    return [str(archive / "dumps" / "monthly"), str(archive / "dumps" / "subreddit")]


def _config(folder: Path, archive: Path, expected: dict, sections: dict | None = None, **overrides) -> Path:
    pool = {"filters": {"license_allowlist": ["reddit-user-content"]}}
    section = _photocritique_section(archive, expected, **{"batch_size": BATCH_SIZE, **overrides})
    return write_config(folder, pool, photocritique=section, **(sections or {}))


def _execute(config: Path, assets: list[str] | None = None) -> ExecuteInProcessResult:
    job = build_definitions(load_config(config)).resolve_job_def("photocritique_job")
    return job.execute_in_process(
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
        asset_selection=[AssetKey(name) for name in assets] if assets else None,
    )


def _warehouse(config: Path) -> Warehouse:
    return Warehouse(config.parent / "warehouse.duckdb")


def _failures(result: ExecuteInProcessResult) -> dict[str, str]:
    """Failed step -> its error text (the Failure description or the exception, with causes)."""
    failed = {}
    for event in result.get_step_failure_events():
        error, texts = event.step_failure_data.error, []
        while error is not None:
            texts.append(error.message)
            error = error.cause
        failed[event.step_key] = "\n".join(texts)
    return failed


def _matching_comment_offsets(path: Path, post_ids: set[str]) -> list[int]:
    """Byte offsets (uncompressed) of the lines of a comment dump that belong to ``post_ids``, read independently."""
    text = zstandard.ZstdDecompressor().decompress(path.read_bytes(), max_output_size=2**26)
    offsets, offset = [], 0
    for line in text.splitlines(keepends=True):
        if json.loads(line)["link_id"][3:] in post_ids:
            offsets.append(offset)
        offset += len(line)
    return offsets


# --------------------------------------------------------------------------------------------------
# 1. a crash in the middle of a comment dump
# --------------------------------------------------------------------------------------------------


@dataclass
class ResumeStory:
    """What happened over three runs on one warehouse: crash, resume, unchanged rerun."""

    config: Path
    warehouse: Warehouse
    crashed: ExecuteInProcessResult
    scans_after_crash: dict[tuple[str, str], tuple[str, int, int]]  # (file name, scope) -> status, offset, matched
    observations_after_crash: int
    resumed: ExecuteInProcessResult
    resumed_starts: list[tuple[str, int]]  # (file name, start_offset) of every scan the resumed run made
    after_resume: dict[str, list[tuple]]
    unchanged: ExecuteInProcessResult
    unchanged_starts: list[tuple[str, int]]
    after_unchanged: dict[str, list[tuple]]


def _scan_state(wh: Warehouse) -> dict[tuple[str, str], tuple[str, int, int]]:
    rows = wh.query("SELECT locator, scope, status, resume_offset, lines_matched FROM reddit_dump_scan")
    return {(Path(loc).name, scope): (status, offset, matched) for loc, scope, status, offset, matched in rows.itertuples(index=False)}


_scan_lines = DumpSource.scan_lines


def _dying_after(items: Iterator, n: int) -> Iterator:
    for count, item in enumerate(items, start=1):
        if count > n:
            raise SimulatedCrash(f"worker lost after {n} lines of {CRASH_FILE}")
        yield item


def _crashing_scan(self: DumpSource, path, kind: str, **selection) -> Iterator:
    """The real scan, except that reading CRASH_FILE dies after CRASH_AFTER_LINES matching lines."""
    items = _scan_lines(self, path, kind, **selection)
    return _dying_after(items, CRASH_AFTER_LINES) if Path(path).name == CRASH_FILE else items


def _recording_scan(starts: list[tuple[str, int]]):
    """The real scan, noting (file name, start_offset) of every file opened."""

    def scan(self: DumpSource, path, kind: str, **selection) -> Iterator:
        starts.append((Path(path).name, selection.get("start_offset", 0)))
        return _scan_lines(self, path, kind, **selection)

    return scan


@pytest.fixture(scope="module")
def resume_story(tmp_path_factory, archive: Path, expected: dict) -> ResumeStory:
    config = _config(tmp_path_factory.mktemp("resume"), archive, expected, dumps=_dumps(archive))
    wh = _warehouse(config)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DumpSource, "scan_lines", _crashing_scan)
        crashed = _execute(config, INGEST)
    scans_after_crash = _scan_state(wh)
    observations_after_crash = wh.scalar("SELECT count(*) FROM reddit_comment_observation")

    resumed_starts: list[tuple[str, int]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DumpSource, "scan_lines", _recording_scan(resumed_starts))
        resumed = _execute(config)
    after_resume = _snapshot(wh)

    unchanged_starts: list[tuple[str, int]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DumpSource, "scan_lines", _recording_scan(unchanged_starts))
        unchanged = _execute(config)
    return ResumeStory(
        config, wh, crashed, scans_after_crash, observations_after_crash, resumed, resumed_starts, after_resume,
        unchanged, unchanged_starts, _snapshot(wh),
    )


def test_crash_leaves_the_file_running_at_the_last_committed_line(resume_story: ResumeStory, archive: Path, expected: dict) -> None:
    assert not resume_story.crashed.success
    failures = _failures(resume_story.crashed)
    assert list(failures) == ["reddit_comments"] and "SimulatedCrash" in failures["reddit_comments"]
    offsets = _matching_comment_offsets(archive / "dumps" / "monthly" / CRASH_FILE, set(expected["candidate_ids"]))
    # Two batches were committed; the checkpoint is the start of the last committed line.
    assert resume_story.scans_after_crash[(CRASH_FILE, "comments")] == ("running", offsets[2 * BATCH_SIZE - 1], 2 * BATCH_SIZE)
    assert resume_story.scans_after_crash[("RC_2013-02.zst", "comments")][0] == "complete"
    assert {name for name, scope in resume_story.scans_after_crash if scope == "comments"} == {"RC_2013-02.zst", CRASH_FILE}
    assert resume_story.observations_after_crash == 5 + 2 * BATCH_SIZE  # RC_2013-02's five, then two batches


def test_rerun_resumes_at_the_checkpoint_and_skips_finished_files(resume_story: ResumeStory) -> None:
    assert resume_story.resumed.success
    _, checkpoint, _ = resume_story.scans_after_crash[(CRASH_FILE, "comments")]
    assert checkpoint > 0
    # Submission files and RC_2013-02 were finished before the crash: not opened again.
    assert resume_story.resumed_starts == [(CRASH_FILE, checkpoint), ("RC_2019-06.zst", 0), ("photocritique_comments.zst", 0)]
    summary = step_summaries(resume_story.warehouse, resume_story.resumed.run_id)
    assert summary["reddit_comments"]["dump_files_resumed:comments"] == 1
    assert summary["reddit_comments"]["dump_files_already_scanned:comments"] == 1
    assert summary["reddit_posts"]["dump_files_already_scanned:submissions"] == 3


def test_resumed_scan_stores_every_matching_line_exactly_once(resume_story: ResumeStory, archive: Path, expected: dict) -> None:
    wh = resume_story.warehouse
    for table in ("reddit_post_observation", "reddit_comment_observation"):
        repeated = wh.query(f"SELECT source_locator, byte_offset, count(*) AS n FROM {table} GROUP BY ALL HAVING n > 1")
        assert repeated.empty, (table, repeated.to_dict("records"))
    stored = Counter(Path(p).name for p in wh.query("SELECT source_locator FROM reddit_comment_observation")["source_locator"])
    wanted = set(expected["candidate_ids"])
    for path in sorted((archive / "dumps").glob("*/*comments.zst")) + sorted((archive / "dumps").glob("*/RC_*.zst")):
        assert stored[path.name] == len(_matching_comment_offsets(path, wanted)), path.name


def test_scan_counts_match_the_lines_stored_after_a_resume(resume_story: ResumeStory, archive: Path, expected: dict) -> None:
    offsets = _matching_comment_offsets(archive / "dumps" / "monthly" / CRASH_FILE, set(expected["candidate_ids"]))
    assert _scan_state(resume_story.warehouse)[(CRASH_FILE, "comments")] == ("complete", offsets[-1], len(offsets))


def test_resumed_run_merges_what_the_crashed_run_stored_and_gives_the_expected_set(
    resume_story: ResumeStory, expected: dict
) -> None:
    wh = resume_story.warehouse
    # Observations committed before the crash (finished files, committed batches) are merged by the next run too.
    for key, observations, merged in (("post_id", "reddit_post_observation", "reddit_post"),
                                      ("comment_id", "reddit_comment_observation", "reddit_comment")):
        unmerged = wh.query(f"SELECT DISTINCT {key} FROM {observations} WHERE {key} NOT IN (SELECT {key} FROM {merged})")
        assert unmerged[key].tolist() == [], merged
    _assert_matches_expected(outcome(wh), expected)


def test_unchanged_rerun_adds_nothing_and_rescans_nothing(resume_story: ResumeStory) -> None:
    assert resume_story.unchanged.success
    assert resume_story.after_unchanged == resume_story.after_resume
    assert resume_story.unchanged_starts == []
    assert {status for status, _, _ in _scan_state(resume_story.warehouse).values()} == {"complete"}
    summary = step_summaries(resume_story.warehouse, resume_story.unchanged.run_id)
    assert summary["reddit_posts"]["dump_files_already_scanned:submissions"] == 3
    assert summary["reddit_comments"]["dump_files_already_scanned:comments"] == 4
    assert not [key for step in summary.values() for key in step if key.startswith(("dump_files_scanned", "dump_files_resumed"))]


# --------------------------------------------------------------------------------------------------
# 2. an HTTP failure is retried on the next run, not lost
# --------------------------------------------------------------------------------------------------

ARCHIVE_RETRIES = 1


def test_failed_comment_tree_is_asked_for_again_on_the_next_run(
    tmp_path: Path, archive: Path, expected: dict, served: RedditFixture
) -> None:
    failing = sorted(expected["kept"])[0]
    failure = InjectedFailure("/api/comments/tree", 500, times=ARCHIVE_RETRIES + 1, match=f"t3_{failing}")
    with ArchiveApiServer(served.posts, served.comments, more_after=2, failures=[failure]) as server:
        api = {"base_url": server.base_url, "min_interval_s": 0, "max_retries": ARCHIVE_RETRIES, "backoff_s": 0, "max_backoff_s": 0}
        config = _config(tmp_path, archive, expected, {"reddit_archive_api": api})
        first = _execute(config)
        wh = _warehouse(config)
        assert first.success, _failures(first)
        problems = wh.query("SELECT reason_code, detail FROM reddit_source_problem WHERE item_id = ? AND scope = 'comments'", [failing])
        assert problems["reason_code"].tolist() == ["http_error"] and "500" in problems["detail"][0]
        done = set(wh.query("SELECT post_id FROM reddit_fetch_done WHERE scope = 'comments'")["post_id"])
        assert failing not in done and len(done) == len(expected["candidate_ids"]) - 2  # nor the one never found
        first_outcome = outcome(wh)
        assert first_outcome["post_reasons"][failing] == "too_few_qualifying_comments"
        assert first_outcome["kept"] == {k: v for k, v in expected["kept"].items() if k != failing}
        assert wh.scalar("SELECT count(*) FROM reddit_comment WHERE post_id = ?", [failing]) == 0

        asked_before = len(server.requests)
        trees_asked = [r.params["link_id"] for r in server.requests_to("/api/comments/tree")]
        assert trees_asked.count(f"t3_{failing}") == ARCHIVE_RETRIES + 1  # retried within the run, then given up
        second = _execute(config)
        assert second.success, _failures(second)
        again = server.requests[asked_before:]
    assert [r.params["link_id"] for r in again if r.path == "/api/comments/tree"] == [f"t3_{failing}"]
    comments_of_failing = {c["id"] for c in served.comments if c["link_id"] == f"t3_{failing}"}
    expanded = {i for r in again if r.path == "/api/comments/ids" for i in r.id_list("ids")}
    assert expanded <= comments_of_failing
    assert {r.path for r in again} <= {"/api/comments/tree", "/api/comments/ids"}  # no post asked for again
    _assert_matches_expected(outcome(wh), expected)
    assert failing in set(wh.query("SELECT post_id FROM reddit_fetch_done WHERE scope = 'comments'")["post_id"])


# --------------------------------------------------------------------------------------------------
# 3. window mode: a subreddit and a date range instead of an id list
# --------------------------------------------------------------------------------------------------

WINDOW = {"id_lists": [], "subreddit": "photocritique", "start_date": "2019-05-01", "end_date": "2019-06-01"}


def _decisions(wh: Warehouse) -> dict[str, str]:
    return dict(
        wh.query("SELECT post_id, coalesce(reason_code, status) FROM photocritique_post_decision").itertuples(index=False)
    )


@pytest.fixture(scope="module")
def window_from_dumps(tmp_path_factory, archive: Path, expected: dict) -> Warehouse:
    config = _config(tmp_path_factory.mktemp("window_dumps"), archive, expected, dumps=_dumps(archive), **WINDOW)
    result = _execute(config)
    assert result.success, _failures(result)
    return _warehouse(config)


def test_window_candidates_are_the_subreddit_posts_of_the_month(window_from_dumps: Warehouse, expected: dict) -> None:
    candidates = window_from_dumps.query("SELECT post_id, list_file FROM reddit_candidate ORDER BY post_id")
    assert candidates["post_id"].tolist() == expected["window"]["post_ids"]
    assert candidates["list_file"].isna().all()
    decisions = _decisions(window_from_dumps)
    assert sorted(decisions) == expected["window"]["post_ids"]
    # Posts that are also on the id list are judged exactly as in the id-list run.
    by_id_list = {**{pid: "kept" for pid in expected["kept"]}, **expected["post_reasons"]}
    in_both = sorted(set(decisions) & set(by_id_list))
    assert len(in_both) == len(decisions) - 1  # all but bkt1w9, which only the window finds
    assert {pid: decisions[pid] for pid in in_both} == {pid: by_id_list[pid] for pid in in_both}
    refs = window_from_dumps.query("SELECT post_id, list(comment_id ORDER BY rank) AS refs FROM photocritique_reference GROUP BY ALL")
    kept_in_both = {pid: list(r) for pid, r in refs.itertuples(index=False) if pid in expected["kept"]}
    assert kept_in_both == {pid: r for pid, r in expected["kept"].items() if pid in decisions}


def test_window_through_the_archive_api_finds_the_same_posts(
    tmp_path: Path, archive: Path, expected: dict, served: RedditFixture, window_from_dumps: Warehouse
) -> None:
    with ArchiveApiServer(served.posts, served.comments, more_after=2) as server:
        api = {"base_url": server.base_url, "min_interval_s": 0, "batch_size": 5}
        config = _config(tmp_path, archive, expected, {"reddit_archive_api": api}, **WINDOW)
        result = _execute(config)
    assert result.success, _failures(result)
    wh = _warehouse(config)
    assert wh.query("SELECT post_id FROM reddit_candidate ORDER BY post_id")["post_id"].tolist() == expected["window"]["post_ids"]
    assert _decisions(wh) == _decisions(window_from_dumps)
    assert outcome(wh)["comment_reasons"] == outcome(window_from_dumps)["comment_reasons"]
    searches = server.requests_to("/api/posts/search")
    assert searches and all(r.params["subreddit"] == "photocritique" for r in searches)


# --------------------------------------------------------------------------------------------------
# 4. the username salt
# --------------------------------------------------------------------------------------------------


def test_missing_salt_stops_before_anything_is_stored(tmp_path: Path, archive: Path, expected: dict, monkeypatch) -> None:
    monkeypatch.delenv("AESFORGE_REDDIT_SALT", raising=False)
    config = _config(tmp_path, archive, expected, dumps=_dumps(archive), username_salt=None)
    result = _execute(config, INGEST)
    assert not result.success
    failures = _failures(result)
    assert list(failures) == ["reddit_posts"] and "AESFORGE_REDDIT_SALT" in failures["reddit_posts"]
    wh = _warehouse(config)
    for table in ("reddit_candidate", "reddit_post_observation", "reddit_comment_observation", "reddit_source_problem"):
        assert wh.scalar(f"SELECT count(*) FROM {table}") == 0, table


def test_changed_salt_on_an_existing_warehouse_stops_without_new_rows(
    resume_story: ResumeStory, expected: dict, monkeypatch
) -> None:
    monkeypatch.setenv("AESFORGE_REDDIT_SALT", "a-different-salt")
    before = _snapshot(resume_story.warehouse)
    result = _execute(resume_story.config, INGEST)
    assert not result.success
    failures = _failures(result)
    assert list(failures) == ["reddit_posts"] and "salt" in failures["reddit_posts"]
    assert "a-different-salt" not in failures["reddit_posts"] and expected["salt"] not in failures["reddit_posts"]
    assert _snapshot(resume_story.warehouse) == before
