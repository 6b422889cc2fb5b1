"""The r/photocritique reference set built for real: fixture archive → sources → pool → filters → export.

The same synthetic archive is served three ways (zst dumps, an Arctic-Shift-style server, a
Reddit-API server driven through PRAW), and each must give exactly the hand-written expected result. The
fixture's outcomes are written for the readings the paper does not make (FIXTURE_READING); one build under the
paper's defaults checks exactly what they change.
"""

import functools
import json
import threading
from collections import Counter
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import duckdb
import pytest
from dagster import DagsterInstance

from pipelines.config import load_config
from pipelines.definitions import build_definitions
from sample.reddit_fixture import MIRROR_HOSTS, build_fixture
from tests.support.pool_harness import write_config
from tests.support.reddit_servers import ArchiveApiServer, RedditApiServer
from warehouse.db import Warehouse
from warehouse.ids import sha256_file

CLIENT_ID, CLIENT_SECRET = "fixture-client", "fixture-secret-never-stored"
FIXTURE_READING = {"exclude_removed_posts": True, "deleted_author_comments": "keep", "null_score": "last"}
"""The options under which sample/reddit_fixture.py's hand-written outcomes hold."""

# Tables the photocritique stages write; a rerun with unchanged inputs must leave them untouched.
CRITIQUE_TABLES = (
    "reddit_candidate", "reddit_dump_scan", "reddit_fetch_done", "reddit_source_problem", "reddit_post_observation",
    "reddit_comment_observation", "reddit_post", "reddit_comment", "reddit_post_image", "reddit_image_resolution",
    "photocritique_post_decision", "photocritique_comment_decision", "photocritique_reference", "source_record",
    "pool_member", "entity", "was_derived_from", "rejection", "export_file", "step_input_state",
)


def _photocritique_section(archive: Path, expected: dict, reading: dict = FIXTURE_READING, **overrides) -> dict:
    mirror = archive / "images"
    return {
        "id_lists": [str(archive / "ids" / "test_ids.txt")],
        "username_salt": expected["salt"],
        "local_images": {"path": str(archive / "images_by_post"), "pattern": "{post_id}.*"},
        "url_rewrite": {
            "https://i.redd.it/": str(mirror / "i.redd.it"),
            "https://preview.redd.it/": str(mirror / "preview.redd.it"),
            "https://i.imgur.com/": str(mirror / "i.imgur.com"),
            "https://external-preview.redd.it/": str(mirror / "external-preview.redd.it"),
        },
        "export_dir": "exports",
        "batch_size": 7,  # several batches even on the small fixture
        **reading,
        **overrides,
    }


def _run(config: Path):
    defs = build_definitions(load_config(config))
    return defs.resolve_job_def("photocritique_job").execute_in_process(instance=DagsterInstance.ephemeral(), raise_on_error=False)


def _build(folder: Path, archive: Path, expected: dict, sections: dict | None = None, reading: dict = FIXTURE_READING,
           **overrides) -> Warehouse:
    pool = {"filters": {"license_allowlist": ["reddit-user-content"]}}
    section = _photocritique_section(archive, expected, reading, **overrides)
    config = write_config(folder, pool, photocritique=section, **(sections or {}))
    result = _run(config)
    assert result.success, [e.message for e in result.all_events if e.is_failure]
    return Warehouse(folder / "warehouse.duckdb")


def outcome(wh: Warehouse) -> dict:
    """The result in expected.json's shape, read back from the warehouse."""
    kept = {
        pid: refs
        for pid, refs in wh.query(
            "SELECT post_id, list(comment_id ORDER BY rank) AS refs FROM photocritique_reference GROUP BY post_id"
        ).itertuples(index=False)
    }
    post_reasons = dict(
        wh.query("SELECT post_id, reason_code FROM photocritique_post_decision WHERE status = 'excluded'").itertuples(index=False)
    )
    comment_reasons = dict(
        wh.query(
            "SELECT comment_id, coalesce(reason_code, 'reference') FROM photocritique_comment_decision"
        ).itertuples(index=False)
    )
    image_of = dict(
        wh.query(
            "SELECT d.post_id, i.url FROM photocritique_post_decision d JOIN reddit_post_image i ON i.record_id = d.image_record_id"
        ).itertuples(index=False)
    )
    return {"kept": {k: list(v) for k, v in kept.items()}, "post_reasons": post_reasons, "comment_reasons": comment_reasons, "image_of": image_of}


def _assert_matches_expected(got: dict, expected: dict) -> None:
    assert got["kept"] == expected["kept"]
    expected_posts = {k: v for k, v in expected["post_reasons"].items() if v != "malformed_id"}
    assert got["post_reasons"] == expected_posts
    assert got["comment_reasons"] == expected["comment_reasons"]
    # Posts that pass the image rule are represented by exactly the expected image.
    assert {pid: got["image_of"].get(pid) for pid in expected["image_of"]} == expected["image_of"]


@pytest.fixture(scope="module")
def dump_build(tmp_path_factory, archive: Path, expected: dict) -> Warehouse:
    dumps = [str(archive / "dumps" / "monthly"), str(archive / "dumps" / "subreddit")]
    return _build(tmp_path_factory.mktemp("dumps"), archive, expected, dumps=dumps)


def test_dumps_give_exactly_the_expected_reference_set(dump_build: Warehouse, expected: dict) -> None:
    _assert_matches_expected(outcome(dump_build), expected)
    checks = dump_build.query(
        "SELECT check_name, passed FROM check_result WHERE asset_key = 'photocritique_references'"
    )
    assert len(checks) == 6 and checks["passed"].all()


def test_archive_api_gives_the_same_result(tmp_path: Path, archive: Path, expected: dict, dump_build: Warehouse) -> None:
    fixture = build_fixture()
    with ArchiveApiServer(fixture.posts, fixture.comments, more_after=2) as server:
        sections = {"reddit_archive_api": {"base_url": server.base_url, "min_interval_s": 0, "batch_size": 5}}
        wh = _build(tmp_path, archive, expected, sections)
    assert outcome(wh) == outcome(dump_build)


def test_live_api_through_praw_gives_the_same_result(
    tmp_path: Path, archive: Path, expected: dict, dump_build: Warehouse, monkeypatch
) -> None:
    fixture = build_fixture()
    monkeypatch.setenv("REDDIT_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("REDDIT_CLIENT_SECRET", CLIENT_SECRET)
    with RedditApiServer(fixture.posts, fixture.comments, client_id=CLIENT_ID, client_secret=CLIENT_SECRET) as server:
        sections = {"reddit_api": {"reddit_url": server.base_url, "oauth_url": server.base_url}}
        wh = _build(tmp_path, archive, expected, sections)
    assert outcome(wh) == outcome(dump_build)
    with duckdb.connect(str(wh.path), read_only=True) as con:
        assert not _tables_containing(con, CLIENT_SECRET)


def test_selection_flow_counts_every_post_and_comment(dump_build: Warehouse, expected: dict) -> None:
    flow = dump_build.query("SELECT unit, reason, entering, n FROM photocritique_selection_flow")
    posts = flow[flow.unit == "post"].set_index("reason")
    comments = flow[flow.unit == "comment"].set_index("reason")
    assert posts.loc["kept", "n"] == len(expected["kept"])
    assert posts["n"].sum() == len(expected["post_reasons"]) + len(expected["kept"])
    assert comments["n"].sum() == len(expected["comment_reasons"])
    assert comments.loc["reference", "n"] == 3 * len(expected["kept"])
    assert posts.iloc[0]["entering"] == posts["n"].sum()  # the flow starts with every candidate line


def test_usernames_and_salt_never_reach_the_warehouse(dump_build: Warehouse, expected: dict) -> None:
    fixture = build_fixture()
    names = {r["author"] for r in fixture.posts + fixture.comments if r.get("author") not in (None, "[deleted]")}
    names -= {"AutoModerator"}  # a configured bot account name, recorded as a setting, not user data
    with duckdb.connect(str(dump_build.path), read_only=True) as con:
        for secret in [*sorted(names), expected["salt"]]:
            assert not _tables_containing(con, secret), secret


def _tables_containing(con: duckdb.DuckDBPyConnection, needle: str) -> list[str]:
    hits = []
    for (table,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'").fetchall():
        columns = [c[0] for c in con.execute(f"DESCRIBE {table}").fetchall()]
        text = " || ' ' || ".join(f"coalesce(CAST(\"{c}\" AS VARCHAR), '')" for c in columns)
        if con.execute(f"SELECT count(*) FROM {table} WHERE strpos({text}, ?) > 0", [needle]).fetchone()[0]:
            hits.append(table)
    return hits


def test_export_holds_one_record_per_kept_post_with_ranked_critiques(dump_build: Warehouse, expected: dict) -> None:
    recorded = dump_build.query("SELECT format, path FROM export_file").itertuples(index=False)
    files = {kind: dump_build.path_of(name) for kind, name in recorded}
    with duckdb.connect() as con:
        parquet = con.execute(f"SELECT * FROM read_parquet('{files['parquet']}') ORDER BY post_id").fetchall()
        columns = [d[0] for d in con.description]
    lines = [json.loads(line) for line in files["jsonl"].read_text(encoding="utf-8").splitlines()]
    assert [r[columns.index("post_id")] for r in parquet] == sorted(expected["kept"]) == [r["post_id"] for r in lines]
    for record in lines:
        assert [c["comment_id"] for c in record["critiques"]] == expected["kept"][record["post_id"]]
        assert [c["rank"] for c in record["critiques"]] == [1, 2, 3]
        assert len(record["image_sha256"]) == 64 and record["title"]


def test_a_reference_traces_back_to_its_dump_line_and_the_pool_image(dump_build: Warehouse) -> None:
    reference = dump_build.scalar("SELECT reference_entity_id FROM photocritique_reference ORDER BY post_id, rank LIMIT 1")
    chain = dump_build.query("SELECT * FROM provenance(?)", [reference])
    kinds = set(chain["entity_kind"])
    assert {"photocritique_reference", "reddit_comment", "reddit_source", "photocritique_post", "pool_item"} <= kinds
    assert chain["asset_key"].notna().any()


def test_rerun_with_unchanged_inputs_adds_nothing(tmp_path: Path, archive: Path, expected: dict) -> None:
    dumps = [str(archive / "dumps" / "monthly"), str(archive / "dumps" / "subreddit")]
    wh = _build(tmp_path, archive, expected, dumps=dumps)
    before = _snapshot(wh)
    config = tmp_path / "aesforge.yaml"
    assert _run(config).success
    assert _snapshot(wh) == before
    scans = wh.query("SELECT DISTINCT status FROM reddit_dump_scan")
    assert list(scans["status"]) == ["complete"]
    # An export file edited by hand is rewritten on the next run, byte-identical to what was recorded.
    name, recorded = wh.query("SELECT path, sha256 FROM export_file WHERE format = 'jsonl'").iloc[0]
    wh.path_of(name).write_text("edited\n", encoding="utf-8")
    assert _run(config).success
    assert sha256_file(wh.path_of(name)) == recorded


def _snapshot(wh: Warehouse) -> dict:
    with wh.transaction() as con:
        return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in CRITIQUE_TABLES}


def test_broken_dump_lines_are_counted_and_the_run_goes_on(tmp_path: Path, archive: Path, expected: dict) -> None:
    dumps = [str(archive / "dumps" / "monthly"), str(archive / "dumps" / "subreddit"), str(archive / "dumps" / "broken")]
    wh = _build(tmp_path, archive, expected, dumps=dumps)
    problems = dict(
        wh.query(
            "SELECT reason_code, count(*) FROM reddit_source_problem WHERE locator LIKE '%broken%' GROUP BY ALL"
        ).itertuples(index=False)
    )
    assert problems == expected["source_problems"]
    assert outcome(wh)["kept"] == expected["kept"]  # nothing else lost
    malformed = wh.query("SELECT count(*) AS n FROM reddit_source_problem WHERE scope = 'candidates'")["n"][0]
    assert malformed == sum(1 for v in expected["post_reasons"].values() if v == "malformed_id")



def test_the_papers_defaults_change_exactly_the_removed_posts_and_the_deleted_author_comment(
    tmp_path: Path, archive: Path, expected: dict, dump_build: Warehouse
) -> None:
    """No option set: removed posts are judged by the three rules, a comment by [deleted] does not qualify."""
    dumps = [str(archive / "dumps" / "monthly"), str(archive / "dumps" / "subreddit")]
    got = outcome(_build(tmp_path, archive, expected, reading={}, dumps=dumps))
    want = outcome(dump_build)
    # bk6t3d, deleted by its author: ten title words, an image and three critiques, so kept.
    del want["post_reasons"]["bk6t3d"]
    want["kept"]["bk6t3d"] = ["emn3b02", "emn3b09", "emn3b0f"]
    want["comment_reasons"].update(emn3b02="reference", emn3b09="reference", emn3b0f="reference")
    want["image_of"]["bk6t3d"] = "https://i.redd.it/r8d2w6m1k3v21.jpg"
    # bk9w1e, removed by a moderator: two qualifying comments besides the AutoModerator notice.
    want["post_reasons"]["bk9w1e"] = "too_few_qualifying_comments"
    want["image_of"]["bk9w1e"] = "https://i.redd.it/c5n7q2x9t4v21.jpg"
    # bkk9p3: its rank-1 critique's author is [deleted], which leaves two qualifying comments.
    del want["kept"]["bkk9p3"]
    want["post_reasons"]["bkk9p3"] = "too_few_qualifying_comments"
    want["comment_reasons"].update(emx8g07="author_deleted", emx8g0a="post_excluded", emx8g0e="post_excluded")
    assert got == want


class _CountingMirror(ThreadingHTTPServer):
    """A static HTTP mirror of the fixture's images on 127.0.0.1 that counts the requests it gets."""

    daemon_threads = True

    def __init__(self, folder: Path) -> None:
        mirror = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                """Quiet."""

            def do_GET(self) -> None:
                mirror.hits[self.path] += 1
                super().do_GET()

        super().__init__(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        self.hits: Counter[str] = Counter()
        self.url = f"http://127.0.0.1:{self.server_address[1]}/"

    def __enter__(self) -> "_CountingMirror":
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()
        self.server_close()


@pytest.mark.parametrize("fallback", [False, True])
def test_a_local_images_folder_is_authoritative_unless_fallback_to_network(
    tmp_path: Path, archive: Path, expected: dict, fallback: bool
) -> None:
    dumps = [str(archive / "dumps" / "monthly"), str(archive / "dumps" / "subreddit")]
    with _CountingMirror(archive / "images") as mirror:
        rewrite = {f"https://{host}/": f"{mirror.url}{host}/" for host in MIRROR_HOSTS}  # never the internet
        wh = _build(tmp_path, archive, expected, dumps=dumps, url_rewrite=rewrite,
                    local_images={"path": str(archive / "images_by_post"), "pattern": "{post_id}.*",
                                  "fallback_to_network": fallback})
    got = outcome(wh)
    local = set(expected["local_images"])
    assert local <= set(got["kept"])
    not_local = {pid for pid, reason in got["post_reasons"].items() if reason == "image_not_local"}
    if fallback:
        assert sum(mirror.hits.values()) > 0 and not not_local
        assert set(got["kept"]) - local  # posts whose image only the mirror has
    else:
        assert sum(mirror.hits.values()) == 0 and set(got["kept"]) == local
        assert not_local and not local & not_local
        detail = wh.query("SELECT detail FROM photocritique_post_decision WHERE reason_code = 'image_not_local' LIMIT 1")
        assert "fallback_to_network is off" in detail["detail"][0]
