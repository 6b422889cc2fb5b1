"""ArchiveApiSource through real ``requests`` against the loopback Arctic-Shift-style server."""

from __future__ import annotations

import socket
import time

import pytest
from pydantic import ValidationError

from resources.reddit_sources import CONNECTION_ERROR, HTTP_ERROR, MALFORMED_JSON, NOT_FOUND, RawItem, SubredditWindow
from resources.reddit_archive_api import ArchiveApiSource, RedditArchiveApiResource, record_retrieved_at
from tests.support.reddit_servers import (
    DISCONNECT,
    INVALID_JSON,
    MISSING_DATA,
    ArchiveApiServer,
    InjectedFailure,
    split_results,
    synthetic_dataset,
)

START = 1_600_000_000


def _source(server: ArchiveApiServer, **overrides: object) -> ArchiveApiSource:
    settings: dict = {"min_interval_s": 0.0, "backoff_s": 0.01, "max_backoff_s": 0.05, "max_retries": 3}
    settings.update(overrides)
    return ArchiveApiSource(server.base_url, **settings)


def _assert_same_records(items: list[RawItem], expected: list[dict]) -> None:
    """Each record came back once and exactly as the dataset holds it (a tree's ``replies`` dropped)."""
    by_id = {record["id"]: record for record in expected}
    returned = [item.data["id"] for item in items]
    assert len(returned) == len(set(returned)), "a record came back twice"
    assert set(returned) == set(by_id)
    for item in items:
        assert "replies" not in item.data
        assert item.data == by_id[item.data["id"]]


@pytest.mark.parametrize("wrap_nodes", [False, True], ids=["plain-objects", "kind-data-nodes"])
def test_posts_by_id_come_back_exactly_in_batches_of_at_most_500(wrap_nodes: bool) -> None:
    posts, _ = synthetic_dataset(1203)
    unknown = ["zzzzzz", "yyyyyy"]
    asked = [post["id"] for post in posts] + unknown
    with ArchiveApiServer(posts, [], wrap_nodes=wrap_nodes) as server:
        before = time.time()
        items, problems = split_results(list(_source(server).submissions(asked + asked[:5], None)))
        after = time.time()
        batches = [len(request.id_list("ids")) for request in server.requests_to("/api/posts/ids")]

    _assert_same_records(items, posts)
    assert all(item.kind == "submission" for item in items)
    assert batches == [500, 500, 205], "duplicates asked for are requested once; no batch above 500"
    assert [(problem.reason_code, problem.item_id) for problem in problems] == [(NOT_FOUND, "zzzzzz"), (NOT_FOUND, "yyyyyy")]
    for item in items:
        origin = item.origin
        assert origin.source_kind == "archive_api"
        assert origin.locator == f"{server.base_url}/api/posts/ids?ids={item.data['id']}"
        if "retrieved_on" in item.data:
            assert origin.retrieved_at == float(item.data["retrieved_on"])
        else:
            assert before <= origin.retrieved_at <= after


def test_batch_size_is_configurable_and_capped_at_500() -> None:
    posts, _ = synthetic_dataset(20)
    with ArchiveApiServer(posts, []) as server:
        items, problems = split_results(list(_source(server, batch_size=7).submissions([post["id"] for post in posts], None)))
        assert [len(request.id_list("ids")) for request in server.requests_to("/api/posts/ids")] == [7, 7, 6]
        with pytest.raises(ValueError, match="batch_size"):
            _source(server, batch_size=501)
    assert len(items) == 20 and problems == []
    with pytest.raises(ValidationError):
        RedditArchiveApiResource(base_url="http://127.0.0.1:1", batch_size=501)


@pytest.mark.parametrize("more_after", [1, 2, 50])
@pytest.mark.parametrize("wrap_nodes", [False, True], ids=["plain-objects", "kind-data-nodes"])
def test_comments_at_every_depth_including_those_behind_more_stubs(more_after: int, wrap_nodes: bool) -> None:
    posts, comments = synthetic_dataset(4, threads={0: (3, 4), 2: (2, 2), 3: (1, 6)})
    post_ids = [post["id"] for post in posts]
    with ArchiveApiServer(posts, comments, more_after=more_after, wrap_nodes=wrap_nodes) as server:
        items, problems = split_results(list(_source(server).comments(post_ids)))
        expansions = server.requests_to("/api/comments/ids")
        trees = server.requests_to("/api/comments/tree")

    assert problems == []
    _assert_same_records(items, comments)
    assert {item.kind for item in items} == {"comment"}
    assert sorted(request.params["link_id"] for request in trees) == sorted(f"t3_{post_id}" for post_id in post_ids)
    if more_after < 50:
        assert expansions, "the stubs were expanded through /api/comments/ids"
    else:
        assert expansions == [], "nothing was hidden, so nothing was expanded"
    tree_urls = {f"{server.base_url}/api/comments/tree?link_id={request.params['link_id']}&limit=10000" for request in trees}
    for item in items:
        assert item.origin.locator in tree_urls or item.origin.locator == (
            f"{server.base_url}/api/comments/ids?ids={item.data['id']}"
        )


def test_more_stub_expansion_is_batched_at_500_ids() -> None:
    posts, comments = synthetic_dataset(1, threads={0: (703, 1)})
    with ArchiveApiServer(posts, comments, more_after=3) as server:
        items, problems = split_results(list(_source(server).comments([posts[0]["id"]])))
        sizes = [len(request.id_list("ids")) for request in server.requests_to("/api/comments/ids")]
    assert problems == []
    _assert_same_records(items, comments)
    assert sizes == [500, 200]


def test_comment_listed_in_a_stub_but_never_returned_is_not_found() -> None:
    posts, comments = synthetic_dataset(1, threads={0: (3, 2)})
    hidden_reply = comments[-1]["id"]  # a reply beyond the first one, so it sits behind a stub
    with ArchiveApiServer(posts, comments, more_after=1, withheld=[hidden_reply]) as server:
        items, problems = split_results(list(_source(server).comments([posts[0]["id"]])))
    assert [(problem.reason_code, problem.item_id) for problem in problems] == [(NOT_FOUND, hidden_reply)]
    assert "more" in problems[0].detail
    _assert_same_records(items, [comment for comment in comments if comment["id"] != hidden_reply])


def test_429_and_500_are_retried_honouring_retry_after() -> None:
    posts, comments = synthetic_dataset(3, threads={1: (2, 2)})
    failures = [
        InjectedFailure("/api/posts/ids", 429, retry_after="0"),
        InjectedFailure("/api/posts/ids", 500, retry_after="0"),
        InjectedFailure("/api/comments/tree", 503, retry_after="0"),
        InjectedFailure("/api/comments/ids", DISCONNECT),
    ]
    with ArchiveApiServer(posts, comments, more_after=1, failures=failures) as server:
        # A 5 s backoff would show if Retry-After: 0 were ignored.
        source = _source(server, backoff_s=5.0, max_backoff_s=5.0)
        started = time.monotonic()
        post_items, post_problems = split_results(list(source.submissions([post["id"] for post in posts], None)))
        posts_elapsed = time.monotonic() - started
        source = _source(server)
        comment_items, comment_problems = split_results(list(source.comments([posts[1]["id"]])))
        assert len(server.requests_to("/api/posts/ids")) == 3
        assert len(server.requests_to("/api/comments/tree")) == 2
    assert post_problems == [] and comment_problems == []
    assert posts_elapsed < 2.0
    _assert_same_records(post_items, posts)
    _assert_same_records(comment_items, comments)


def test_min_interval_spaces_requests() -> None:
    posts, _ = synthetic_dataset(6)
    with ArchiveApiServer(posts, []) as server:
        source = _source(server, batch_size=2, min_interval_s=0.1)
        started = time.monotonic()
        items, _ = split_results(list(source.submissions([post["id"] for post in posts], None)))
        elapsed = time.monotonic() - started
        assert server.requests[0].headers["user-agent"].startswith("aesforge/")
    assert len(items) == 6
    assert elapsed >= 0.2, "three requests need at least two intervals"


def test_a_post_that_keeps_failing_gives_one_http_error_and_the_rest_still_arrive() -> None:
    posts, comments = synthetic_dataset(3, threads={0: (2, 2), 1: (2, 2), 2: (2, 2)})
    bad = posts[1]["id"]
    failures = [InjectedFailure("/api/comments/tree", 500, times=None, match=f"t3_{bad}")]
    with ArchiveApiServer(posts, comments, more_after=1, failures=failures) as server:
        items, problems = split_results(list(_source(server, max_retries=2).comments([post["id"] for post in posts])))
        tries = [request for request in server.requests_to("/api/comments/tree") if request.params["link_id"] == f"t3_{bad}"]
    assert len(tries) == 3
    assert len(problems) == 1
    problem = problems[0]
    assert (problem.reason_code, problem.item_id) == (HTTP_ERROR, bad)
    assert "500" in problem.detail and "3 attempts" in problem.detail
    assert problem.origin.locator.endswith(f"link_id=t3_{bad}&limit=10000")
    _assert_same_records(items, [comment for comment in comments if comment["link_id"] != f"t3_{bad}"])


def test_a_permanent_client_error_is_not_retried() -> None:
    posts, _ = synthetic_dataset(1)
    failures = [InjectedFailure("/api/posts/ids", 403, times=None)]
    with ArchiveApiServer(posts, [], failures=failures) as server:
        results = list(_source(server).submissions([posts[0]["id"]], None))
        assert len(server.requests_to("/api/posts/ids")) == 1
    assert [(r.reason_code, r.item_id) for r in results] == [(HTTP_ERROR, posts[0]["id"])]
    assert "403" in results[0].detail


@pytest.mark.parametrize("response", [INVALID_JSON, MISSING_DATA])
def test_a_body_that_is_not_a_data_array_is_malformed_json_and_other_batches_go_on(response: str) -> None:
    posts, _ = synthetic_dataset(6)
    failures = [InjectedFailure("/api/posts/ids", response, match=posts[0]["id"])]
    with ArchiveApiServer(posts, [], failures=failures) as server:
        items, problems = split_results(list(_source(server, batch_size=3).submissions([post["id"] for post in posts], None)))
        assert len(server.requests_to("/api/posts/ids")) == 2, "a bad body is not retried"
    assert [problem.reason_code for problem in problems] == [MALFORMED_JSON]
    assert problems[0].origin.locator.endswith("ids=" + ",".join(post["id"] for post in posts[:3]))
    _assert_same_records(items, posts[3:])


def test_unreachable_archive_gives_connection_errors_per_batch() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    source = ArchiveApiSource(f"http://127.0.0.1:{port}", batch_size=2, min_interval_s=0, max_retries=1, backoff_s=0)
    results = list(source.submissions(["a1", "a2", "a3"], None))
    assert [(r.reason_code, r.item_id) for r in results] == [(CONNECTION_ERROR, None), (CONNECTION_ERROR, "a3")]
    assert all("2 attempts" in r.detail for r in results)


def test_window_search_pages_by_created_utc_without_losing_or_repeating_posts() -> None:
    inside, _ = synthetic_dataset(250, subreddit="photocritique", start_utc=START, posts_per_second=3)
    other_sub, _ = synthetic_dataset(10, subreddit="itookapicture", start_utc=START)
    for post in other_sub:
        post["id"] = "o" + post["id"]
    window = SubredditWindow("PhotoCritique", START + 2, START + 80)
    expected = [post for post in inside if window.start_utc <= float(post["created_utc"]) < window.end_utc]
    with ArchiveApiServer(inside + other_sub, []) as server:
        items, problems = split_results(list(_source(server).submissions(None, window)))
        searches = server.requests_to("/api/posts/search")
    assert problems == []
    assert [item.data["id"] for item in items] == [post["id"] for post in expected], "ascending, each post once"
    _assert_same_records(items, expected)
    assert len(searches) >= 3, "more than one page of 100 was needed"
    assert all(request.params["sort"] == "asc" and request.params["limit"] == "100" for request in searches)
    afters = [int(request.params["after"]) for request in searches]
    assert afters == sorted(afters) and afters[0] == window.start_utc - 1
    assert {request.params["before"] for request in searches} == {str(window.end_utc)}


def test_record_retrieved_at_accepts_numbers_and_numeric_strings() -> None:
    assert record_retrieved_at({"retrieved_on": 1_600_000_000}) == 1_600_000_000.0
    assert record_retrieved_at({"retrieved_utc": "1600000001"}) == 1_600_000_001.0
    assert record_retrieved_at({"retrieved_on": "soon", "retrieved_utc": 5}) == 5.0
    assert record_retrieved_at({"retrieved_on": True}) is None
    assert record_retrieved_at({}) is None


def test_resource_builds_the_source_only_when_a_base_url_is_set() -> None:
    assert RedditArchiveApiResource().get_source() is None
    resource = RedditArchiveApiResource(base_url="http://127.0.0.1:9/", batch_size=250, min_interval_s=0)
    source = resource.get_source()
    assert isinstance(source, ArchiveApiSource)
    assert (source.base_url, source.batch_size, source.min_interval_s, source.timeout_s) == ("http://127.0.0.1:9", 250, 0, 60)
    assert source.name == "archive_api"
