"""HttpFetcher against a real HTTP server on 127.0.0.1 and real files on disk."""

from __future__ import annotations

import hashlib
import io
import logging
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from PIL import Image

from resources import fetching
from resources.fetching import (
    BAD_CONTENT_TYPE,
    CHUNK_BYTES,
    CONNECTION_ERROR,
    EMPTY_BODY,
    HTTP_STATUS,
    INVALID_LOCATOR,
    MISSING_FILE,
    NOT_AN_IMAGE,
    TIMEOUT,
    TOO_LARGE,
    FailedRun,
    HttpFetcher,
    give_up_detail,
    interleave_by_host,
    parse_retry_after,
    retry_delay_s,
)
from resources.http_fetcher import HttpFetcherResource

USER_AGENT = "aesforge-test/1.0 (+https://example.invalid/contact)"
SLOW_RESPONSE_S = 0.15
STALL_S = 1.0
TRICKLE_S = 3.0
SLOW_503_S = 0.3
STREAM_TOTAL_BYTES = 256 * 2**20


def _image_bytes(fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buffer, fmt)
    return buffer.getvalue()


PNG = _image_bytes("PNG")
JPEG = _image_bytes("JPEG")
HTML = b"<!doctype html><html><body>not an image, just a page</body></html>"


@dataclass
class ServerState:
    """What the server saw, so tests can assert on the client's behaviour from the outside."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    hits: Counter[str] = field(default_factory=Counter)
    user_agents: list[str | None] = field(default_factory=list)
    active_per_host: Counter[str] = field(default_factory=Counter)
    max_active_per_host: Counter[str] = field(default_factory=Counter)
    active: int = 0
    max_active: int = 0
    stream_bytes_sent: int = 0
    stream_done: threading.Event = field(default_factory=threading.Event)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = ServerState()

    def handle_error(self, request: object, client_address: object) -> None:
        """Clients hanging up (timeouts, caps, rejected bodies) is expected here; anything else is not."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real image hosts do
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """Keep test output quiet."""

    def do_GET(self) -> None:
        state = self.server.state
        path = urlsplit(self.path).path
        with state.lock:
            state.hits[path] += 1
            hit_number = state.hits[path]
            state.user_agents.append(self.headers.get("User-Agent"))
        try:
            self._route(path, hit_number)
        except ConnectionError:
            pass  # the client gave up on purpose (timeout or cap)

    def _route(self, path: str, hit_number: int) -> None:
        if path == "/img.png":
            self._send(200, PNG, "image/png")
        elif path == "/img.jpg":
            self._send(200, JPEG, "image/jpeg")
        elif path == "/gone.jpg":
            self._send(302, b"", None, {"Location": "/removed.png"})
        elif path == "/removed.png":
            self._send(200, PNG, "image/png")
        elif path == "/moved.png":
            self._send(301, b"", None, {"Location": "/img.png"})
        elif path == "/octet.png":
            self._send(200, PNG, "application/octet-stream")
        elif path == "/untyped.png":
            self._send(200, PNG, None)
        elif path == "/flaky.png" and hit_number <= 2:
            self._send(503, b"busy", "text/plain", {"Retry-After": "0"})
        elif path == "/flaky.png":
            self._send(200, PNG, "image/png")
        elif path == "/always-503":
            self._send(503, b"busy", "text/plain", {"Retry-After": "0"})
        elif path == "/page.html":
            self._send(200, HTML, "text/html; charset=utf-8")
        elif path == "/fake.png":
            self._send(200, HTML, "image/png")
        elif path == "/empty.png":
            self._send(200, b"", "image/png")
        elif path == "/declared-huge.png":
            self._send(200, PNG + bytes(10_000), "image/png")
        elif path == "/stream-huge.png":
            self._stream_huge()
        elif path == "/slow-headers.png":
            time.sleep(STALL_S)
            self._send(200, PNG, "image/png")
        elif path == "/stall-body.png":
            self._slow_body(1, STALL_S)
        elif path == "/trickle.png":
            self._slow_body(int(TRICKLE_S / 0.02), 0.02)
        elif path == "/short.png":
            self._send(200, PNG, "image/png", {"Content-Length": str(len(PNG) + 100)})
            self.close_connection = True
        elif path == "/loop.png":
            self._send(302, b"", None, {"Location": "/loop.png"})
        elif path == "/slow-503":
            time.sleep(SLOW_503_S)
            self._send(503, b"busy", "text/plain", {"Retry-After": "0"})
        elif path.startswith("/slow/"):
            self._slow()
        else:
            self._send(404, b"no such thing", "text/plain")

    def _send(
        self, status: int, body: bytes, content_type: str | None, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        for name, value in {"Content-Length": str(len(body)), **(extra or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _stream_huge(self) -> None:
        """No Content-Length: the client can only stop by counting bytes itself."""
        state = self.server.state
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunk = PNG[:8] + bytes(64 * 1024 - 8)
        try:
            while state.stream_bytes_sent < STREAM_TOTAL_BYTES:
                self.wfile.write(chunk)
                state.stream_bytes_sent += len(chunk)
        finally:
            state.stream_done.set()

    def _slow_body(self, pauses: int, pause_s: float) -> None:
        """The PNG, then a byte after each pause, of a body declared 1000 bytes longer: one long pause is a stall,
        many short ones (each well within the read timeout) a trickle."""
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(PNG) + 1000))
        self.end_headers()
        self.wfile.write(PNG)
        for _ in range(pauses):
            time.sleep(pause_s)
            self.wfile.write(b"\0")

    def _slow(self) -> None:
        state = self.server.state
        host = self.headers.get("Host", "").rsplit(":", 1)[0]
        with state.lock:
            state.active += 1
            state.active_per_host[host] += 1
            state.max_active = max(state.max_active, state.active)
            state.max_active_per_host[host] = max(
                state.max_active_per_host[host], state.active_per_host[host]
            )
        try:
            time.sleep(SLOW_RESPONSE_S)
        finally:  # counted out before the answer goes: once the client has it, its next request may start
            with state.lock:
                state.active -= 1
                state.active_per_host[host] -= 1
        self._send(200, PNG, "image/png")


@dataclass
class RunningServer:
    port: int
    state: ServerState

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


@pytest.fixture
def server() -> Iterator[RunningServer]:
    httpd = _Server()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield RunningServer(port=httpd.server_address[1], state=httpd.state)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _fetcher(**overrides: object) -> HttpFetcher:
    settings: dict[str, object] = {
        "user_agent": USER_AGENT,
        "timeout_s": 2.0,
        "max_retries": 2,
        "backoff_s": 0.01,
        "max_backoff_s": 0.05,
    }
    settings.update(overrides)
    return HttpFetcher(**settings)  # type: ignore[arg-type]


# --- content check (the decoder's, in assets.image_pool.logic.images) ------------------------------


@pytest.mark.parametrize(
    ("pil_format", "expected"),
    [("JPEG", "jpeg"), ("PNG", "png"), ("GIF", "gif"), ("WEBP", "webp"), ("BMP", "bmp"), ("TIFF", "tiff"), ("PPM", "ppm")],
)
def test_fetched_bytes_of_every_decodable_format_are_kept(tmp_path: Path, pil_format: str, expected: str) -> None:
    (tmp_path / "image").write_bytes(_image_bytes(pil_format))

    result = _fetcher(base_dir=tmp_path).fetch("image")

    assert (result.ok, result.media_type) == (True, expected), result.detail


@pytest.mark.parametrize("body", [HTML, b"RIFF\x00\x00\x00\x00WAVEfmt ", b"just some text\n"])
def test_fetched_bytes_no_decoder_recognises_are_not_an_image(tmp_path: Path, body: bytes) -> None:
    (tmp_path / "image").write_bytes(body)

    result = _fetcher(base_dir=tmp_path).fetch("image")

    assert (result.ok, result.reason_code, result.transient) == (False, NOT_AN_IMAGE, False)


# --- retry timing ---------------------------------------------------------------------


def test_parse_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("7", now) == 7.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == 30.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=30), usegmt=True), now) == 0.0
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None


def test_retry_delay_honours_retry_after_but_caps_it() -> None:
    assert retry_delay_s(1, backoff_s=1.0, max_backoff_s=30.0, retry_after_s=0.0) == 0.0
    assert retry_delay_s(1, backoff_s=1.0, max_backoff_s=30.0, retry_after_s=12.0) == 12.0
    assert retry_delay_s(1, backoff_s=1.0, max_backoff_s=30.0, retry_after_s=3600.0) == 30.0


def test_retry_delay_grows_exponentially_with_bounded_jitter() -> None:
    for retry_number, floor in [(1, 0.5), (2, 1.0), (3, 2.0)]:
        delays = [retry_delay_s(retry_number, backoff_s=0.5, max_backoff_s=30.0) for _ in range(200)]
        assert all(floor <= d <= floor + 0.5 for d in delays)
        assert len(set(delays)) > 1  # jitter spreads retries of many workers apart
    assert retry_delay_s(20, backoff_s=0.5, max_backoff_s=4.0) == 4.0


# --- HTTP -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "media_type"),
    [
        ("/img.png", PNG, "png"),
        ("/img.jpg", JPEG, "jpeg"),
        ("/octet.png", PNG, "png"),
        ("/untyped.png", PNG, "png"),
    ],
)
def test_fetches_images_with_hash_and_sniffed_type(
    server: RunningServer, path: str, body: bytes, media_type: str
) -> None:
    result = _fetcher().fetch(server.url(path))

    assert result.ok, result.detail
    assert result.data == body
    assert result.sha256 == hashlib.sha256(body).hexdigest()
    assert result.media_type == media_type
    assert result.reason_code is None and not result.transient
    (attempt,) = result.attempts
    assert (attempt.attempt, attempt.status_code, attempt.n_bytes) == (1, 200, len(body))
    assert attempt.sha256 == result.sha256 and attempt.error is None
    assert attempt.started_at.tzinfo is not None and attempt.duration_ms >= 0


def test_every_request_carries_the_user_agent(server: RunningServer) -> None:
    result = _fetcher().fetch(server.url("/flaky.png"))

    assert result.ok
    assert server.state.user_agents == [USER_AGENT] * 3


def test_retries_503_honouring_retry_after_then_succeeds(server: RunningServer) -> None:
    # A 10 s backoff would make this test crawl; Retry-After: 0 must take precedence.
    result = _fetcher(backoff_s=10.0, max_backoff_s=10.0).fetch(server.url("/flaky.png"))

    assert result.ok and result.data == PNG
    assert [a.status_code for a in result.attempts] == [503, 503, 200]
    assert [a.attempt for a in result.attempts] == [1, 2, 3]
    first, _, last = result.attempts
    assert last.started_at - first.started_at < timedelta(seconds=5)  # not 2 x 10 s of backoff
    assert result.attempts[0].error is not None and "503" in result.attempts[0].error


def test_persistent_5xx_fails_as_transient_after_all_retries(server: RunningServer) -> None:
    result = _fetcher(max_retries=2).fetch(server.url("/always-503"))

    assert not result.ok and result.data is None
    assert result.reason_code == HTTP_STATUS and "503" in (result.detail or "")
    assert result.transient
    assert len(result.attempts) == 3 and server.state.hits["/always-503"] == 3


def test_redirect_to_a_removed_placeholder_is_a_removed_image(server: RunningServer) -> None:
    gone = _fetcher().fetch(server.url("/gone.jpg"))
    assert (gone.ok, gone.reason_code, gone.transient) == (False, fetching.REMOVED_IMAGE, False)
    assert "removed.png" in (gone.detail or "")
    moved = _fetcher().fetch(server.url("/moved.png"))
    assert moved.ok and moved.data == PNG  # an ordinary redirect is followed


def test_404_is_not_retried(server: RunningServer) -> None:
    result = _fetcher(max_retries=3).fetch(server.url("/nope.png"))

    assert result.reason_code == HTTP_STATUS and "404" in (result.detail or "")
    assert not result.transient
    assert len(result.attempts) == 1 and server.state.hits["/nope.png"] == 1
    assert result.attempts[0].status_code == 404


def test_html_is_rejected_by_declared_content_type_without_reading_it(server: RunningServer) -> None:
    result = _fetcher().fetch(server.url("/page.html"))

    assert result.reason_code == BAD_CONTENT_TYPE and "text/html" in (result.detail or "")
    assert not result.transient and result.data is None
    assert result.attempts[0].n_bytes == 0


def test_body_that_lies_about_being_png_is_not_an_image(server: RunningServer) -> None:
    result = _fetcher().fetch(server.url("/fake.png"))

    assert result.reason_code == NOT_AN_IMAGE
    assert not result.ok and result.data is None and not result.transient
    assert len(result.attempts) == 1


def test_empty_body(server: RunningServer) -> None:
    result = _fetcher().fetch(server.url("/empty.png"))

    assert result.reason_code == EMPTY_BODY and not result.ok and not result.transient


def test_declared_length_over_cap_is_rejected_before_download(server: RunningServer) -> None:
    result = _fetcher(max_bytes=1_000).fetch(server.url("/declared-huge.png"))

    assert result.reason_code == TOO_LARGE and "Content-Length" in (result.detail or "")
    assert result.attempts[0].n_bytes == 0
    assert not result.transient


def test_undeclared_length_over_cap_stops_streaming_at_the_cap(server: RunningServer) -> None:
    cap = 100_000
    result = _fetcher(max_bytes=cap).fetch(server.url("/stream-huge.png"))

    assert result.reason_code == TOO_LARGE and not result.transient
    (attempt,) = result.attempts
    assert cap < attempt.n_bytes <= cap + CHUNK_BYTES
    # The server notices the hang-up: it never got to send the whole body.
    assert server.state.stream_done.wait(timeout=5)
    assert server.state.stream_bytes_sent < STREAM_TOTAL_BYTES


def test_server_that_never_answers_times_out_once_per_fetch_as_transient(server: RunningServer) -> None:
    result = _fetcher(timeout_s=0.2, max_retries=3).fetch(server.url("/slow-headers.png"))

    assert result.reason_code == TIMEOUT and result.transient
    (attempt,) = result.attempts  # the stall spent the URL's timeout_s: no retry waits for it again
    assert attempt.status_code is None and 200 <= attempt.duration_ms < 200 + 300


def test_a_retry_gets_only_what_is_left_of_the_timeout(server: RunningServer) -> None:
    result = _fetcher(timeout_s=0.5, max_retries=3).fetch(server.url("/slow-503"))

    first, second = result.attempts  # 503 after 0.3 s; the retry may wait the 0.2 s left, and times out
    assert first.status_code == 503 and second.status_code is None
    assert result.reason_code == TIMEOUT and result.transient and "left of this URL's timeout_s" in (result.detail or "")
    assert sum(a.duration_ms for a in result.attempts) < 500 + 300


def test_a_body_trickling_in_is_stopped_when_the_timeout_is_spent(server: RunningServer) -> None:
    result = _fetcher(timeout_s=0.3, max_retries=2).fetch(server.url("/trickle.png"))

    assert result.reason_code == TIMEOUT and result.transient
    (attempt,) = result.attempts
    assert attempt.status_code == 200 and attempt.n_bytes >= len(PNG)
    assert attempt.duration_ms < 300 + 300  # not the TRICKLE_S the server would take


def test_a_body_shorter_than_its_content_length_is_truncated_and_transient(server: RunningServer) -> None:
    result = _fetcher(max_retries=1).fetch(server.url("/short.png"))

    assert (result.ok, result.reason_code, result.transient) == (False, fetching.TRUNCATED_BODY, True)
    assert result.detail == f"connection closed after {len(PNG)} bytes, 100 more declared by Content-Length"
    assert len(result.attempts) == 2 and server.state.hits["/short.png"] == 2  # retried within the run


def test_a_redirect_loop_is_reported_as_such(server: RunningServer) -> None:
    result = _fetcher(max_retries=3).fetch(server.url("/loop.png"))

    assert (result.reason_code, result.transient) == (fetching.REDIRECT_LOOP, False)
    assert f"more than {fetching.MAX_REDIRECTS} redirects" in (result.detail or "")
    assert server.state.hits["/loop.png"] == 1 + fetching.MAX_REDIRECTS  # not retried


def test_body_that_stalls_mid_download_times_out(server: RunningServer) -> None:
    result = _fetcher(timeout_s=0.2, max_retries=0).fetch(server.url("/stall-body.png"))

    assert result.reason_code == TIMEOUT and result.transient
    (attempt,) = result.attempts
    assert attempt.status_code == 200


def test_refused_connection_is_transient_and_retried_without_leaking_tokens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    caplog.set_level(logging.DEBUG, logger=fetching.__name__)

    result = _fetcher(max_retries=1).fetch(f"http://127.0.0.1:{port}/img.png?token=s3cret")

    assert result.reason_code == CONNECTION_ERROR and result.transient
    assert len(result.attempts) == 2
    assert "retrying" in caplog.text  # the retry was logged ...
    stored_text = [caplog.text, result.detail or ""] + [a.error or "" for a in result.attempts]
    assert not any("s3cret" in text for text in stored_text)  # ... without the signed query


@pytest.mark.parametrize("locator", ["ftp://example.invalid/a.png", "s3://bucket/a.png", "http://", "http://[::1/a.png"])
def test_unfetchable_locators_are_reported_not_raised(locator: str) -> None:
    result = _fetcher().fetch(locator)

    assert result.reason_code == INVALID_LOCATOR and not result.ok and not result.transient


# --- giving up across runs -----------------------------------------------------------


def _failed_run(day: int, reason: str = HTTP_STATUS, detail: str = "HTTP 500 Internal Server Error") -> FailedRun:
    return FailedRun(datetime(2024, 5, day, 12, 0, tzinfo=UTC), reason, detail, 4, 1234.0)


def test_a_locator_is_given_up_only_when_its_failed_runs_reach_max_attempt_runs() -> None:
    runs = [_failed_run(1), _failed_run(2, TIMEOUT, "no progress within 20 s; timeout_s=20.0"), _failed_run(3)]

    assert give_up_detail(runs[:2], max_attempt_runs=3) is None
    detail = give_up_detail(runs, max_attempt_runs=3)
    assert detail is not None and detail.startswith("failed transiently in 3 runs (fetch.max_attempt_runs=3): ")
    assert "2024-05-02T12:00:00Z timeout: no progress within 20 s; timeout_s=20.0 (4 request(s), 1.23 s)" in detail
    assert detail.count("http_status: HTTP 500") == 2 and detail.endswith("makes it pending again")
    assert give_up_detail(runs[:1], max_attempt_runs=1) is not None


def test_failed_run_of_a_result_counts_its_requests_and_time(server: RunningServer) -> None:
    result = _fetcher(max_retries=2).fetch(server.url("/always-503"))

    run = FailedRun.of(result)

    assert (run.reason_code, run.n_attempts, run.started_at) == (HTTP_STATUS, 3, result.attempts[0].started_at)
    assert run.duration_ms == pytest.approx(sum(a.duration_ms for a in result.attempts))


# --- concurrency ----------------------------------------------------------------------


def _fetch_all(fetcher: HttpFetcher, urls: list[str], threads: int) -> list[fetching.FetchResult]:
    """Fetch from ``threads`` threads at once, as the item loop's workers do."""
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(fetcher.fetch, urls))


def test_threads_fetching_at_once_keep_at_most_per_host_limit_in_flight(server: RunningServer) -> None:
    urls = [server.url(f"/slow/{i}") for i in range(10)]

    results = _fetch_all(_fetcher(per_host_limit=2), urls, threads=8)

    assert [r.locator for r in results] == urls and all(r.ok for r in results)
    assert server.state.max_active == 2  # reached the limit, never passed it


def test_interleaved_locators_keep_other_hosts_busy_while_one_is_saturated(server: RunningServer) -> None:
    # Same server under two names: the fetcher must treat them as two hosts.
    urls = [server.url(f"/slow/a{i}") for i in range(6)]
    urls += [server.url(f"/slow/b{i}", host="localhost") for i in range(6)]

    results = _fetch_all(_fetcher(per_host_limit=2), interleave_by_host(urls), threads=3)

    assert sorted(r.locator for r in results) == sorted(urls) and all(r.ok for r in results)
    assert max(server.state.max_active_per_host.values()) == 2
    # Filled across hosts: more than one host's limit (2) at once. The server counts a request active until its
    # handler returns, which can lag the client's next request by a moment, so its count may exceed the 3 threads.
    assert server.state.max_active >= 3


def test_interleave_by_host_takes_hosts_in_turn_and_keeps_each_hosts_order() -> None:
    locators = ["http://a/1", "http://a/2", "http://a/3", "https://b/1", "/local/x.png", "http://A/4", "https://b/2"]

    assert interleave_by_host(locators) == [
        "http://a/1", "https://b/1", "/local/x.png", "http://a/2", "https://b/2", "http://a/3", "http://A/4",
    ]
    assert interleave_by_host(["http://[::1/broken"]) == ["http://[::1/broken"]  # no host: listed, not raised


# --- local files ----------------------------------------------------------------------


def test_local_file_by_absolute_path_relative_path_and_file_url(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    image_path = tmp_path / "sub" / "a.png"
    image_path.write_bytes(PNG)
    fetcher = _fetcher(base_dir=tmp_path)

    for locator in (str(image_path), "sub/a.png", image_path.as_uri()):
        result = fetcher.fetch(locator)
        assert result.ok, (locator, result.detail)
        assert result.locator == locator
        assert result.data == PNG and result.media_type == "png"
        assert result.sha256 == hashlib.sha256(PNG).hexdigest()
        assert len(result.attempts) == 1 and result.attempts[0].n_bytes == len(PNG)


def test_local_failures_have_reason_codes(tmp_path: Path) -> None:
    (tmp_path / "page.png").write_bytes(HTML)
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "big.png").write_bytes(PNG + bytes(5_000))
    (tmp_path / "folder.png").mkdir()
    fetcher = _fetcher(base_dir=tmp_path, max_bytes=4_000)

    outcomes = {
        name: fetcher.fetch(name)
        for name in ("missing.png", "folder.png", "page.png", "empty.png", "big.png")
    }

    assert {name: r.reason_code for name, r in outcomes.items()} == {
        "missing.png": MISSING_FILE,
        "folder.png": MISSING_FILE,
        "page.png": NOT_AN_IMAGE,
        "empty.png": EMPTY_BODY,
        "big.png": TOO_LARGE,
    }
    assert not any(r.ok or r.transient or r.data is not None for r in outcomes.values())
    assert fetcher.fetch((tmp_path / "missing.png").as_uri()).reason_code == MISSING_FILE


# --- Dagster resource -----------------------------------------------------------------


def test_resource_builds_a_fetcher_with_its_settings(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(PNG)
    resource = HttpFetcherResource(max_bytes=len(PNG) + 1, per_host_limit=3, max_workers=5)

    fetcher = resource.get_fetcher(base_dir=tmp_path)

    assert (fetcher.max_bytes, fetcher.per_host_limit, fetcher.max_workers) == (len(PNG) + 1, 3, 5)
    assert fetcher.user_agent == fetching.DEFAULT_USER_AGENT
    assert fetcher.fetch("a.png").ok


def test_resource_gives_up_after_three_runs_by_default_and_refuses_less_than_one() -> None:
    assert HttpFetcherResource().max_attempt_runs == 3
    with pytest.raises(ValueError, match="max_attempt_runs"):
        HttpFetcherResource(max_attempt_runs=0)


def test_invalid_limits_are_rejected_up_front() -> None:
    with pytest.raises(ValueError, match="per_host_limit"):
        _fetcher(per_host_limit=0)
    with pytest.raises(ValueError, match="user_agent"):
        _fetcher(user_agent=" ")
