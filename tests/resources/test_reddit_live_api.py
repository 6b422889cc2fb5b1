"""PrawSource through real PRAW/prawcore against the loopback server speaking Reddit's OAuth API."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import praw
import pytest

from resources.reddit_sources import (
    CONNECTION_ERROR,
    HTTP_ERROR,
    MALFORMED_JSON,
    NOT_FOUND,
    RawItem,
    SourceProblem,
    SubredditWindow,
)
from resources.reddit_live_api import PrawSource, RedditApiResource, praw_to_raw
from tests.support.reddit_servers import (
    INVALID_JSON,
    InjectedFailure,
    RedditApiServer,
    split_results,
    synthetic_dataset,
)

CLIENT_ID = "loopback-client"
SECRET = "s3cr3t-never-show-me-9f2c"
PASSWORD = "hunter2-also-secret-77"
USER_AGENT = "test:aesforge:1.0 (by /u/nobody)"
START = 1_600_000_000


@pytest.fixture(autouse=True)
def _praw_reads_no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Keep a developer's praw.ini or praw_* variables out of the tests."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("APPDATA", raising=False)
    monkeypatch.delenv("praw_site", raising=False)


def _server(posts: list[dict], comments: list[dict], **options: object) -> RedditApiServer:
    return RedditApiServer(posts, comments, client_id=CLIENT_ID, client_secret=SECRET, **options)


def _source(server: RedditApiServer, **overrides: object) -> PrawSource:
    settings: dict = {
        "client_id": CLIENT_ID,
        "client_secret": SECRET,
        "user_agent": USER_AGENT,
        "reddit_url": server.base_url,
        "oauth_url": server.base_url,
        "backoff_s": 0.01,
        "max_backoff_s": 0.05,
    }
    settings.update(overrides)
    return PrawSource(**settings)


def _assert_same_records(items: list[RawItem], expected: list[dict]) -> None:
    """Each record came back once, in the dump/archive shape, equal to the dataset's dict (plus the
    ``name`` the live API always sends)."""
    by_id = {record["id"]: {**record, "name": record.get("name") or live_fullname(record)} for record in expected}
    returned = [item.data["id"] for item in items]
    assert len(returned) == len(set(returned)), "a record came back twice"
    assert set(returned) == set(by_id)
    for item in items:
        assert item.data == by_id[item.data["id"]]


def live_fullname(record: dict) -> str:
    return f"{'t1' if 'link_id' in record else 't3'}_{record['id']}"


def _texts(results: list[RawItem | SourceProblem]) -> Iterator[str]:
    for result in results:
        yield result.origin.locator
        if isinstance(result, SourceProblem):
            yield result.detail


def test_posts_by_id_through_api_info_in_batches_of_100() -> None:
    posts, _ = synthetic_dataset(230)
    asked = [post["id"] for post in posts] + ["zzzzzz"]
    with _server(posts, []) as server:
        before = time.time()
        items, problems = split_results(list(_source(server).submissions(asked, None)))
        after = time.time()
        batches = [request.id_list("id") for request in server.requests_to("/api/info")]
        assert server.grants == ["client_credentials"]
    _assert_same_records(items, posts)
    assert [len(batch) for batch in batches] == [100, 100, 31]
    assert all(fullname.startswith("t3_") for batch in batches for fullname in batch)
    assert [(problem.reason_code, problem.item_id) for problem in problems] == [(NOT_FOUND, "zzzzzz")]
    deleted = [item for item in items if item.data["author"] == "[deleted]"]
    assert deleted, "PRAW's None author is turned back into the archives' '[deleted]'"
    for item in items:
        assert item.kind == "submission"
        assert item.origin.source_kind == "reddit_api"
        assert item.origin.locator == f"{server.base_url}/api/info?id=t3_{item.data['id']}"
        if "retrieved_on" in item.data:
            assert item.origin.retrieved_at == float(item.data["retrieved_on"])
        else:
            assert before <= item.origin.retrieved_at <= after


@pytest.mark.parametrize("more_after", [1, 3])
def test_comments_at_every_depth_with_more_stubs_replaced(more_after: int) -> None:
    posts, comments = synthetic_dataset(3, threads={0: (4, 3), 2: (2, 3)})
    with _server(posts, comments, more_after=more_after) as server:
        items, problems = split_results(list(_source(server).comments([post["id"] for post in posts])))
        threads = server.requests_to(f"/comments/{posts[0]['id']}")
        expansions = server.requests_to("/api/morechildren")
    assert problems == []
    _assert_same_records(items, comments)
    assert len(threads) == 1
    assert expansions and all(request.method == "POST" for request in expansions)
    assert {item.kind for item in items} == {"comment"}
    for item in items:
        assert item.origin.locator == f"{server.base_url}/comments/{item.data['link_id'][3:]}"
        assert "replies" not in item.data and not any(key.startswith("_") for key in item.data)


def test_window_walks_the_new_listing_across_pages_and_stops_before_the_start() -> None:
    posts, _ = synthetic_dataset(400, start_utc=START, posts_per_second=2)
    window = SubredditWindow("PhotoCritique", START + 20, START + 170)
    expected = [post for post in posts if window.start_utc <= float(post["created_utc"]) < window.end_utc]
    with _server(posts, []) as server:
        items, problems = split_results(list(_source(server).submissions(None, window)))
        pages = server.requests_to("/r/PhotoCritique/new")
    assert problems == []
    _assert_same_records(items, expected)
    created = [float(item.data["created_utc"]) for item in items]
    assert created == sorted(created, reverse=True), "newest first, as Reddit lists them"
    # 400 posts, newest first: the window ends 60 posts in and starts 360 posts in, so 4 pages of 100.
    assert len(pages) == 4
    assert [request.params.get("after") for request in pages][1:] == [
        f"t3_{posts[400 - 100 * page]['id']}" for page in (1, 2, 3)
    ]


def test_window_beyond_the_listing_reach_is_reported() -> None:
    posts, _ = synthetic_dataset(30, start_utc=START, posts_per_second=1)
    window = SubredditWindow("photocritique", START, START + 30)
    with _server(posts, [], listing_cap=12) as server:
        items, problems = split_results(list(_source(server).submissions(None, window)))
    _assert_same_records(items, posts[-12:])
    assert [problem.reason_code for problem in problems] == [NOT_FOUND]
    assert "1000" in problems[0].detail and "12 posts" in problems[0].detail


def test_429_and_503_are_retried_then_succeed() -> None:
    posts, comments = synthetic_dataset(2, threads={0: (2, 2)})
    failures = [
        InjectedFailure("/api/info", 429, retry_after="0"),
        InjectedFailure("/api/info", 503),
        InjectedFailure(f"/comments/{posts[0]['id']}", 429, retry_after="0"),
    ]
    with _server(posts, comments, failures=failures) as server:
        source = _source(server, backoff_s=5.0, max_backoff_s=5.0)  # a 5 s wait would show Retry-After ignored
        post_items, post_problems = split_results(list(source.submissions([post["id"] for post in posts], None)))
        comment_items, comment_problems = split_results(list(source.comments([posts[0]["id"]])))
        assert len(server.requests_to("/api/info")) == 3
        assert len(server.requests_to(f"/comments/{posts[0]['id']}")) == 2
    assert post_problems == [] and comment_problems == []
    _assert_same_records(post_items, posts)
    _assert_same_records(comment_items, comments)


def test_failing_posts_give_one_problem_each_and_the_others_still_arrive() -> None:
    posts, comments = synthetic_dataset(3, threads={0: (2, 2), 1: (2, 2), 2: (2, 2)})
    forbidden = posts[1]["id"]
    failures = [InjectedFailure(f"/comments/{forbidden}", 403, times=None)]
    with _server(posts, comments, failures=failures) as server:
        results = list(_source(server).comments([post["id"] for post in posts] + ["gone00"]))
    items, problems = split_results(results)
    assert [(problem.reason_code, problem.item_id) for problem in problems] == [(HTTP_ERROR, forbidden), (NOT_FOUND, "gone00")]
    assert "403" in problems[0].detail and "404" in problems[1].detail
    assert problems[0].origin.locator == f"{server.base_url}/comments/{forbidden}"
    _assert_same_records(items, [comment for comment in comments if comment["link_id"] != f"t3_{forbidden}"])


def test_a_body_that_is_not_json_is_malformed_json() -> None:
    posts, _ = synthetic_dataset(150)
    failures = [InjectedFailure("/api/info", INVALID_JSON, match=f"t3_{posts[0]['id']}")]
    with _server(posts, [], failures=failures) as server:
        items, problems = split_results(list(_source(server).submissions([post["id"] for post in posts], None)))
    assert [problem.reason_code for problem in problems] == [MALFORMED_JSON]
    _assert_same_records(items, posts[100:])


def test_secrets_stay_out_of_reprs_locators_details_and_logs(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    posts, comments = synthetic_dataset(3, threads={0: (2, 2)})
    failures = [InjectedFailure(f"/comments/{posts[2]['id']}", 403, times=None)]
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    with _server(posts, comments, username="critic", password=PASSWORD, failures=failures) as server:
        source = _source(server, username="critic", password=PASSWORD)
        results = list(source.submissions([post["id"] for post in posts], None))
        results += list(source.comments([post["id"] for post in posts]))
        texts += [repr(source), str(source)]
        # A wrong secret: the login is refused, which is reported without echoing any credential.
        wrong = _source(server, client_secret=SECRET + "-wrong")
        refused = list(wrong.submissions([posts[0]["id"]], None))
        texts += [repr(wrong)]
        monkeypatch.setenv("AESFORGE_TEST_REDDIT_ID", CLIENT_ID)
        monkeypatch.setenv("AESFORGE_TEST_REDDIT_SECRET", SECRET)
        resource = RedditApiResource(client_id_env="AESFORGE_TEST_REDDIT_ID", client_secret_env="AESFORGE_TEST_REDDIT_SECRET")
        texts += [repr(resource), str(resource), repr(resource.get_source())]
        assert server.grants[0] == "password"
    assert [(problem.reason_code, problem.item_id) for problem in refused] == [(HTTP_ERROR, posts[0]["id"])]
    assert "401" in refused[0].detail
    problems = [result for result in results if isinstance(result, SourceProblem)]
    assert [(problem.reason_code, problem.item_id) for problem in problems] == [(HTTP_ERROR, posts[2]["id"])]
    texts += list(_texts(results + refused)) + [caplog.text]
    for text in texts:
        assert SECRET not in text and PASSWORD not in text


def test_unreachable_api_gives_connection_errors() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    source = PrawSource(client_id=CLIENT_ID, client_secret=SECRET, user_agent=USER_AGENT, reddit_url=url, oauth_url=url)
    results = list(source.comments(["abc123"]))
    assert [(result.reason_code, result.item_id) for result in results] == [(CONNECTION_ERROR, "abc123")]
    assert "ConnectionError" in results[0].detail and SECRET not in results[0].detail


def test_resource_reads_credentials_from_the_named_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    resource = RedditApiResource(client_id_env="AESFORGE_TEST_ID", client_secret_env="AESFORGE_TEST_SECRET")
    monkeypatch.delenv("AESFORGE_TEST_ID", raising=False)
    monkeypatch.delenv("AESFORGE_TEST_SECRET", raising=False)
    assert not resource.configured() and resource.get_source() is None
    monkeypatch.setenv("AESFORGE_TEST_ID", CLIENT_ID)
    assert not resource.configured(), "a client id without a secret is not enough"
    monkeypatch.setenv("AESFORGE_TEST_SECRET", SECRET)
    posts, _ = synthetic_dataset(2)
    with _server(posts, []) as server:
        configured = resource.model_copy(update={"reddit_url": server.base_url, "oauth_url": server.base_url})
        source = configured.get_source()
        assert isinstance(source, PrawSource) and source.name == "reddit_api"
        items, problems = split_results(list(source.submissions([post["id"] for post in posts], None)))
        assert server.grants == ["client_credentials"]
    assert problems == []
    _assert_same_records(items, posts)


def test_praw_to_raw_keeps_wire_fields_and_drops_praw_internals() -> None:
    reddit = praw.Reddit(client_id=CLIENT_ID, client_secret=SECRET, user_agent=USER_AGENT, check_for_updates=False)
    comment_data = {
        "id": "c1",
        "link_id": "t3_p1",
        "parent_id": "t3_p1",
        "author": "[deleted]",
        "subreddit": "photocritique",
        "body": "Nice &amp; sharp",
        "all_awardings": [{"name": "x"}],
        "replies": {"kind": "Listing", "data": {"children": [{"kind": "t1", "data": {"id": "c2", "parent_id": "t1_c1"}}]}},
    }
    comment = praw.models.Comment(reddit, _data=dict(comment_data))
    raw = praw_to_raw(comment)
    assert raw == {key: value for key, value in comment_data.items() if key != "replies"}
    submission = praw.models.Submission(reddit, _data={"id": "p1", "author": "alice", "subreddit": "pics", "title": "t"})
    assert praw_to_raw(submission) == {"id": "p1", "author": "alice", "subreddit": "pics", "title": "t"}
