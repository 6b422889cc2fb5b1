"""Loopback HTTP servers that speak the Arctic-Shift-style archive API and Reddit's own OAuth API.

Why: the Reddit sources must be tested through the real HTTP clients (``requests``, PRAW/prawcore) against
the real wire format, never against mocks and never against the internet. Both servers are built from ONE
dataset (flat lists of raw Reddit ``data`` dicts), so a test can feed the same records to a dump, the archive
API and the live API and expect identical results.

Each server binds 127.0.0.1 on a free port, runs in a background thread while used as a context manager,
records every request (tests assert batching from the outside), fails the test on leaving the ``with`` block
if a client asked for a path it does not serve, and can inject failures (429 with Retry-After, 5xx, bodies that are not
JSON, dropped connections) to exercise retries and error reporting.

Comment trees are built the way Reddit serves them: replies nested under ``replies`` Listings, and children
beyond the first ``more_after`` at any level (or beyond the request's ``limit`` in total) hidden behind
``{"kind": "more"}`` stubs whose ``children`` list every hidden comment (the hidden siblings and all of their
descendants, parents first), so clients must expand stubs to see the whole thread.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from resources.reddit_sources import RawItem, SourceProblem

MAX_ARCHIVE_IDS = 500
"""Most ids the archive API accepts in one request (Arctic Shift's limit)."""
MAX_ARCHIVE_PAGE = 100
"""Most posts one archive search page returns."""
MAX_LISTING_PAGE = 100
"""Most things one Reddit listing page returns, whatever ``limit`` asks for."""
MAX_INFO_IDS = 100
"""Most fullnames Reddit's /api/info accepts in one request."""

INVALID_JSON = "invalid_json"
"""Injected response: 200 with a body that is not JSON."""
MISSING_DATA = "missing_data"
"""Injected response: 200 with a JSON object that has no ``data`` array."""
DISCONNECT = "disconnect"
"""Injected response: the connection is closed without any response."""


@dataclass
class InjectedFailure:
    """Make matching requests fail instead of being answered.

    ``path`` is the request path without a trailing slash (e.g. ``/api/posts/ids``, ``/comments/abc``);
    ``match``, when set, must occur in the raw query string or form body (e.g. ``"t3_abc"``).
    ``response`` is an HTTP status (sent with ``Retry-After: retry_after`` when it is 429 or 5xx) or one of
    ``INVALID_JSON``, ``MISSING_DATA``, ``DISCONNECT``. ``times`` is how many matching requests fail
    (``None``: all of them).
    """

    path: str
    response: int | str
    times: int | None = 1
    match: str | None = None
    retry_after: str | None = "0"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it; ``params`` merges the query string and a form body."""

    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]

    def id_list(self, name: str) -> list[str]:
        """The comma-separated values of parameter ``name`` (empty when absent)."""
        value = self.params.get(name, "")
        return [part for part in value.split(",") if part]


@dataclass
class _Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    disconnect: bool = False

    @classmethod
    def json(cls, payload: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> _Reply:
        return cls(
            status=status,
            body=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json; charset=UTF-8", **(headers or {})},
        )


def _base36(value: str) -> int:
    try:
        return int(value, 36)
    except ValueError:
        return -1


def _created(record: Mapping[str, Any]) -> float:
    try:
        return float(record.get("created_utc"))
    except (TypeError, ValueError):
        return 0.0


class RedditDataset:
    """The one dataset both servers serve: posts by id, comments by id and by parent, in dataset order."""

    def __init__(self, posts: Iterable[Mapping[str, Any]], comments: Iterable[Mapping[str, Any]]) -> None:
        self.posts: dict[str, dict[str, Any]] = {}
        for post in posts:
            self.posts[str(post["id"])] = dict(post)
        self.comments: dict[str, dict[str, Any]] = {}
        for comment in comments:
            self.comments[str(comment["id"])] = dict(comment)
        self._children: dict[str, list[str]] = {}
        for comment_id, comment in self.comments.items():
            self._children.setdefault(self._attachment_point(comment), []).append(comment_id)

    def _attachment_point(self, comment: Mapping[str, Any]) -> str:
        """Where a comment hangs in its thread: its parent, or the post when the parent is not in the dataset,
        so that every comment stays reachable (its ``parent_id`` is served unchanged)."""
        parent_id = str(comment.get("parent_id") or "")
        if parent_id.startswith("t1_") and parent_id[3:] in self.comments:
            return parent_id
        return str(comment.get("link_id") or "")

    def children_of(self, fullname: str) -> list[str]:
        """Ids of the comments directly under ``fullname`` (``t3_<post>`` or ``t1_<comment>``)."""
        return self._children.get(fullname, [])

    def subtree(self, comment_id: str) -> Iterator[str]:
        """``comment_id`` and all of its descendants, parents before children."""
        stack = [comment_id]
        while stack:
            current = stack.pop()
            yield current
            stack.extend(reversed(self.children_of(f"t1_{current}")))

    def render_thread(self, link_fullname: str, *, more_after: int, limit: int | None) -> list[dict[str, Any]]:
        """The top level of a post's comment tree as Reddit nodes, with nested replies and "more" stubs.

        At every level the first ``more_after`` children are shown; the rest, and everything past ``limit``
        comments in total, sit behind one stub per level.
        """
        budget = [limit if limit is not None else len(self.comments)]
        return self._render_level(link_fullname, more_after=more_after, budget=budget, depth=0)

    def _render_level(self, parent: str, *, more_after: int, budget: list[int], depth: int) -> list[dict[str, Any]]:
        kids = self.children_of(parent)
        shown_count = max(0, min(more_after, budget[0], len(kids)))
        budget[0] -= shown_count
        nodes: list[dict[str, Any]] = []
        for comment_id in kids[:shown_count]:
            data = dict(self.comments[comment_id])
            replies = self._render_level(f"t1_{comment_id}", more_after=more_after, budget=budget, depth=depth + 1)
            data["replies"] = {"kind": "Listing", "data": {"after": None, "before": None, "children": replies}} if replies else ""
            nodes.append({"kind": "t1", "data": data})
        hidden = [descendant for comment_id in kids[shown_count:] for descendant in self.subtree(comment_id)]
        if hidden:
            nodes.append(
                {
                    "kind": "more",
                    "data": {
                        "count": len(hidden),
                        "name": f"t1_{hidden[0]}",
                        "id": hidden[0],
                        "parent_id": parent,
                        "depth": depth,
                        "children": hidden,
                    },
                }
            )
        return nodes


def to_base36(number: int) -> str:
    """Reddit-style base36 id of a non-negative number."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        number, remainder = divmod(number, 36)
        text = digits[remainder] + text
        if number == 0:
            return text


def synthetic_dataset(
    n_posts: int,
    *,
    subreddit: str = "photocritique",
    start_utc: int = 1_600_000_000,
    posts_per_second: int = 3,
    threads: Mapping[int, tuple[int, int]] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Made-up posts and comment threads (no real Reddit content) with the schema quirks the sources must keep.

    Several posts share each ``created_utc`` second (paging boundaries fall inside a second); some records have
    string ``created_utc``, no ``name``, a ``retrieved_on``, a ``[deleted]`` author or ``&amp;`` escapes.
    ``threads`` maps a post index to ``(fanout, depth)``: every comment up to ``depth`` levels gets ``fanout``
    replies. Returns ``(posts, comments)``, flat, in creation order.
    """
    posts: list[dict[str, Any]] = []
    comments: list[dict[str, Any]] = []
    next_comment = 36**4
    for index in range(n_posts):
        post_id = to_base36(36**3 + index)
        created = start_utc + index // posts_per_second
        post: dict[str, Any] = {
            "id": post_id,
            "name": f"t3_{post_id}",
            "subreddit": subreddit,
            "author": "[deleted]" if index % 7 == 3 else f"poster_{index % 5}",
            "title": f"Evening light &amp; shadows, attempt {index}",
            "selftext": "" if index % 2 else "Shot handheld at dusk; is the horizon level?",
            "created_utc": str(created) if index % 5 == 4 else created,
            "score": index % 11,
            "url": f"https://i.redd.it/{post_id}.jpg",
            "permalink": f"/r/{subreddit}/comments/{post_id}/attempt_{index}/",
            "is_self": False,
            "over_18": False,
            "stickied": False,
            "num_comments": 0,
        }
        if index % 6 == 5:
            del post["name"]
        if index % 2 == 0:
            post["retrieved_on"] = created + 3600
        posts.append(post)
        fanout, depth = (threads or {}).get(index, (0, 0))
        comments_before = len(comments)
        level = [f"t3_{post_id}"]
        for current_depth in range(depth):
            next_level = []
            for parent in level:
                for _ in range(fanout):
                    comment_id = to_base36(next_comment)
                    next_comment += 1
                    comment: dict[str, Any] = {
                        "id": comment_id,
                        "name": f"t1_{comment_id}",
                        "link_id": f"t3_{post_id}",
                        "parent_id": parent,
                        "author": "[deleted]" if next_comment % 9 == 0 else f"critic_{next_comment % 13}",
                        "body": f"Depth {current_depth}: the highlights are clipped &amp; the crop feels tight",
                        "score": next_comment % 17,
                        "created_utc": str(created + next_comment % 1000) if next_comment % 4 == 0 else created + 60,
                        "distinguished": None,
                        "stickied": False,
                    }
                    if next_comment % 3 == 0:
                        comment["retrieved_utc"] = created + 7200
                    comments.append(comment)
                    next_level.append(f"t1_{comment_id}")
            level = next_level
        post["num_comments"] = len(comments) - comments_before
    return posts, comments


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HttpServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature fixed by the base class
        """Silence per-request logging; requests are recorded instead."""

    def do_GET(self) -> None:  # noqa: N802 - name fixed by BaseHTTPRequestHandler
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802 - name fixed by BaseHTTPRequestHandler
        self._serve("POST")

    def _serve(self, method: str) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        params = dict(parse_qsl(parts.query, keep_blank_values=True))
        if body and "json" not in (self.headers.get("Content-Type") or ""):
            params.update(parse_qsl(body, keep_blank_values=True))
        request = RecordedRequest(
            method=method,
            path=parts.path.rstrip("/") or "/",
            params=params,
            headers={key.lower(): value for key, value in self.headers.items()},
        )
        reply = self.server.app.answer(request, raw=f"{parts.query}&{body}")
        if reply.disconnect:
            self.close_connection = True
            return
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, app: _LoopbackServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.app = app


class _LoopbackServer:
    """Threaded server on 127.0.0.1:0 with request recording and failure injection; use as a context manager."""

    def __init__(self, failures: Sequence[InjectedFailure] = ()) -> None:
        self.failures = list(failures)
        self.requests: list[RecordedRequest] = []
        self.unknown_requests: list[str] = []
        self._lock = threading.Lock()
        self._http: _HttpServer | None = None
        self._base_url: str | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` of the running (or last run) server."""
        if self._base_url is None:
            raise RuntimeError("server has not been started; use it as a context manager")
        return self._base_url

    def __enter__(self) -> _LoopbackServer:
        self._http = _HttpServer(self)
        host, port = self._http.server_address[:2]
        self._base_url = f"http://{host}:{port}"
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, name=type(self).__name__, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        """Stop serving; fail the test if the client asked for anything this server does not understand."""
        assert self._http is not None and self._thread is not None
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)
        self._http = None
        if exc_type is None and self.unknown_requests:
            raise AssertionError(f"{type(self).__name__} got requests it does not serve: {self.unknown_requests}")

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """Recorded requests whose path (without trailing slash) is ``path``."""
        with self._lock:
            return [request for request in self.requests if request.path == path]

    def answer(self, request: RecordedRequest, raw: str) -> _Reply:
        with self._lock:
            self.requests.append(request)
            failure = self._take_failure(request.path, raw)
        if failure is not None:
            return self._failure_reply(failure)
        reply = self.route(request)
        if reply is None:
            with self._lock:
                self.unknown_requests.append(f"{request.method} {request.path}")
            return _Reply.json({"message": "Not Found", "error": 404}, status=404)
        return reply

    def _take_failure(self, path: str, raw: str) -> InjectedFailure | None:
        for failure in self.failures:
            if failure.path != path or (failure.match is not None and failure.match not in raw):
                continue
            if failure.times is None:
                return failure
            if failure.times > 0:
                failure.times -= 1
                return failure
        return None

    def _failure_reply(self, failure: InjectedFailure) -> _Reply:
        if failure.response == DISCONNECT:
            return _Reply(status=0, disconnect=True)
        if failure.response == INVALID_JSON:
            return _Reply(status=200, body=b"<html>upstream hiccup</html>", headers={"Content-Type": "text/html"})
        if failure.response == MISSING_DATA:
            return _Reply.json({"error": "upstream returned no data"})
        status = int(failure.response)
        headers = {}
        if failure.retry_after is not None and (status == 429 or status >= 500):
            headers["Retry-After"] = failure.retry_after
        return _Reply.json({"message": "injected failure", "error": status}, status=status, headers=headers)

    def route(self, request: RecordedRequest) -> _Reply | None:
        """The answer to a request this server understands, else None."""
        raise NotImplementedError


class ArchiveApiServer(_LoopbackServer):
    """Arctic-Shift-style archive API over one dataset.

    Endpoints: ``/api/posts/ids?ids=``, ``/api/comments/ids?ids=`` (at most 500 ids, else 400),
    ``/api/comments/tree?link_id=t3_<id>&limit=<n>`` (nested tree with "more" stubs) and
    ``/api/posts/search?subreddit=&after=&before=&sort=asc&limit=`` (``after``/``before`` are epoch
    seconds, both exclusive; pages of at most 100). With ``wrap_nodes`` every ``data`` array of the flat
    endpoints holds ``{"kind", "data"}`` nodes instead of plain objects. Comments in ``withheld`` are listed
    in "more" stubs but never returned by ``/api/comments/ids``, like gaps in a real archive.
    """

    def __init__(
        self,
        posts: Iterable[Mapping[str, Any]],
        comments: Iterable[Mapping[str, Any]],
        *,
        more_after: int = 2,
        wrap_nodes: bool = False,
        withheld: Iterable[str] = (),
        failures: Sequence[InjectedFailure] = (),
    ) -> None:
        super().__init__(failures)
        self.dataset = RedditDataset(posts, comments)
        self.more_after = more_after
        self.wrap_nodes = wrap_nodes
        self.withheld = frozenset(withheld)

    def __enter__(self) -> ArchiveApiServer:
        super().__enter__()
        return self

    def route(self, request: RecordedRequest) -> _Reply | None:
        if request.method != "GET":
            return None
        if request.path == "/api/posts/ids":
            return self._by_ids(request, self.dataset.posts, "t3")
        if request.path == "/api/comments/ids":
            return self._by_ids(request, self.dataset.comments, "t1", withheld=self.withheld)
        if request.path == "/api/comments/tree":
            return self._tree(request)
        if request.path == "/api/posts/search":
            return self._search(request)
        return None

    def _wrap(self, kind: str, records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.wrap_nodes:
            return [{"kind": kind, "data": record} for record in records]
        return list(records)

    def _by_ids(
        self, request: RecordedRequest, table: Mapping[str, dict[str, Any]], kind: str, withheld: frozenset[str] = frozenset()
    ) -> _Reply:
        ids = request.id_list("ids")
        if len(ids) > MAX_ARCHIVE_IDS:
            return _Reply.json({"error": f"at most {MAX_ARCHIVE_IDS} ids per request"}, status=400)
        found = (table[item_id] for item_id in ids if item_id in table and item_id not in withheld)
        return _Reply.json({"data": self._wrap(kind, found)})

    def _tree(self, request: RecordedRequest) -> _Reply:
        link_id = request.params.get("link_id", "")
        if not link_id.startswith("t3_"):
            link_id = f"t3_{link_id}"
        limit = request.params.get("limit")
        nodes = self.dataset.render_thread(
            link_id, more_after=self.more_after, limit=int(limit) if limit and limit.isdigit() else None
        )
        return _Reply.json({"data": nodes})

    def _search(self, request: RecordedRequest) -> _Reply:
        try:
            after = float(request.params.get("after", "-inf"))
            before = float(request.params.get("before", "inf"))
            limit = min(int(request.params.get("limit", MAX_ARCHIVE_PAGE)), MAX_ARCHIVE_PAGE)
        except ValueError:
            return _Reply.json({"error": "after, before and limit must be numbers"}, status=400)
        subreddit = request.params.get("subreddit", "").casefold()
        matches = [
            post
            for post in self.dataset.posts.values()
            if str(post.get("subreddit", "")).casefold() == subreddit and after < _created(post) < before
        ]
        descending = request.params.get("sort") == "desc"
        matches.sort(key=lambda post: (_created(post), _base36(str(post["id"]))), reverse=descending)
        return _Reply.json({"data": self._wrap("t3", matches[:limit])})


def _with_fullnames(records: Iterable[Mapping[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The live API always sends ``name`` (old archive copies may lack it, and PRAW relies on it)."""
    return [{**record, "name": record.get("name") or f"{kind}_{record['id']}"} for record in records]


class RedditApiServer(_LoopbackServer):
    """Enough of Reddit's OAuth API for PRAW 8 over one dataset.

    ``POST /api/v1/access_token`` (client-credentials or password grant, HTTP basic client auth),
    then, with ``Authorization: bearer <token>``: ``GET /api/info?id=`` (Listing of the known fullnames),
    ``GET /comments/<id>`` (``[post Listing, comment tree Listing]``), ``POST|GET /api/morechildren``
    (flat ``things``), ``GET /r/<sub>/new`` (newest first, ``after`` paging, at most ``listing_cap``
    posts reachable like Reddit's ~1000). Every answer carries rate-limit headers that let prawcore go on
    without sleeping.
    """

    def __init__(
        self,
        posts: Iterable[Mapping[str, Any]],
        comments: Iterable[Mapping[str, Any]],
        *,
        client_id: str,
        client_secret: str,
        username: str | None = None,
        password: str | None = None,
        more_after: int = 2,
        listing_cap: int = 1000,
        failures: Sequence[InjectedFailure] = (),
    ) -> None:
        super().__init__(failures)
        self.dataset = RedditDataset(_with_fullnames(posts, "t3"), _with_fullnames(comments, "t1"))
        self.client_id = client_id
        self.client_secret = client_secret
        self.username = username
        self.password = password
        self.more_after = more_after
        self.listing_cap = listing_cap
        self.grants: list[str] = []
        self._tokens: set[str] = set()

    def __repr__(self) -> str:
        return f"RedditApiServer(client_id={self.client_id!r}, base_url={self._base_url!r})"

    def __enter__(self) -> RedditApiServer:
        super().__enter__()
        return self

    def answer(self, request: RecordedRequest, raw: str) -> _Reply:
        reply = super().answer(request, raw)
        reply.headers.update({"x-ratelimit-remaining": "599.0", "x-ratelimit-used": "1", "x-ratelimit-reset": "300"})
        return reply

    def route(self, request: RecordedRequest) -> _Reply | None:
        if request.path == "/api/v1/access_token" and request.method == "POST":
            return self._access_token(request)
        authorization = request.headers.get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or token not in self._tokens:
            return _Reply.json(
                {"message": "Unauthorized", "error": 401}, status=401, headers={"www-authenticate": 'Bearer realm="reddit"'}
            )
        segments = request.path.strip("/").split("/")
        if request.path == "/api/info" and request.method == "GET":
            return self._info(request)
        if request.path == "/api/morechildren":
            return self._more_children(request)
        if len(segments) == 2 and segments[0] == "comments" and request.method == "GET":
            return self._submission(segments[1], request)
        if len(segments) == 3 and segments[0] == "r" and segments[2] == "new" and request.method == "GET":
            return self._new(segments[1], request)
        return None

    def _access_token(self, request: RecordedRequest) -> _Reply:
        scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
        try:
            client_id, _, secret = base64.b64decode(encoded).decode().partition(":")
        except ValueError:
            client_id = secret = ""
        if scheme.lower() != "basic" or client_id != self.client_id or secret != self.client_secret:
            return _Reply.json({"message": "Unauthorized", "error": 401}, status=401)
        grant_type = request.params.get("grant_type", "")
        with self._lock:
            self.grants.append(grant_type)
        if grant_type == "password":
            if request.params.get("username") != self.username or request.params.get("password") != self.password:
                return _Reply.json({"error": "invalid_grant"})
        elif grant_type != "client_credentials":
            return _Reply.json({"error": "unsupported_grant_type"})
        with self._lock:
            token = f"token-{len(self._tokens) + 1}"
            self._tokens.add(token)
        return _Reply.json({"access_token": token, "token_type": "bearer", "expires_in": 3600, "scope": "*"})

    @staticmethod
    def _listing(children: list[dict[str, Any]], after: str | None = None) -> dict[str, Any]:
        return {"kind": "Listing", "data": {"after": after, "before": None, "dist": len(children), "children": children}}

    def _thing(self, fullname: str) -> dict[str, Any] | None:
        kind, _, item_id = fullname.partition("_")
        if kind == "t3" and item_id in self.dataset.posts:
            return {"kind": "t3", "data": self.dataset.posts[item_id]}
        if kind == "t1" and item_id in self.dataset.comments:
            return {"kind": "t1", "data": {**self.dataset.comments[item_id], "replies": ""}}
        return None

    def _info(self, request: RecordedRequest) -> _Reply:
        fullnames = request.id_list("id")
        if len(fullnames) > MAX_INFO_IDS:
            return _Reply.json({"message": "Bad Request", "error": 400}, status=400)
        things = [thing for thing in map(self._thing, fullnames) if thing is not None]
        return _Reply.json(self._listing(things))

    def _submission(self, post_id: str, request: RecordedRequest) -> _Reply:
        post = self.dataset.posts.get(post_id)
        if post is None:
            return _Reply.json({"message": "Not Found", "error": 404}, status=404)
        limit = request.params.get("limit")
        tree = self.dataset.render_thread(
            f"t3_{post_id}", more_after=self.more_after, limit=int(limit) if limit and limit.isdigit() else None
        )
        return _Reply.json([self._listing([{"kind": "t3", "data": post}]), self._listing(tree)])

    def _more_children(self, request: RecordedRequest) -> _Reply:
        link_id = request.params.get("link_id", "")
        things = [
            {"kind": "t1", "data": {**self.dataset.comments[comment_id], "replies": ""}}
            for comment_id in request.id_list("children")
            if comment_id in self.dataset.comments and self.dataset.comments[comment_id].get("link_id") == link_id
        ]
        return _Reply.json({"json": {"errors": [], "data": {"things": things}}})

    def _new(self, subreddit: str, request: RecordedRequest) -> _Reply:
        posts = [
            post for post in self.dataset.posts.values() if str(post.get("subreddit", "")).casefold() == subreddit.casefold()
        ]
        posts.sort(key=lambda post: (_created(post), _base36(str(post["id"]))), reverse=True)
        posts = posts[: self.listing_cap]
        start = 0
        after = request.params.get("after")
        if after:
            names = [f"t3_{post['id']}" for post in posts]
            start = names.index(after) + 1 if after in names else len(posts)
        try:
            limit = min(int(request.params.get("limit", 25)), MAX_LISTING_PAGE)
        except ValueError:
            limit = 25
        page = posts[start : start + limit]
        more = start + limit < len(posts)
        next_after = f"t3_{page[-1]['id']}" if page and more else None
        return _Reply.json(self._listing([{"kind": "t3", "data": post} for post in page], after=next_after))


def split_results(results: list[RawItem | SourceProblem]) -> tuple[list[RawItem], list[SourceProblem]]:
    """A source's output as (records, problems); every element is one or the other."""
    items = [result for result in results if isinstance(result, RawItem)]
    problems = [result for result in results if isinstance(result, SourceProblem)]
    assert len(items) + len(problems) == len(results)
    return items, problems
