"""HttpFetcher against a real HTTP server on 127.0.0.1 and real files on disk."""

from __future__ import annotations

import hashlib
import io
import itertools
import logging
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from PIL import Image

from assets.lib import fetching
from assets.lib.fetching import (
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
    HttpFetcher,
    parse_retry_after,
    retry_delay_s,
    sniff_image_format,
)
from resources.http_fetcher import HttpFetcherResource

USER_AGENT = "aesforge-test/1.0 (+https://example.invalid/contact)"
SLOW_RESPONSE_S = 0.15
STALL_S = 1.0
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
            self._stall_body()
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
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
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

    def _stall_body(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(PNG) + 1000))
        self.end_headers()
        self.wfile.write(PNG)
        self.wfile.flush()
        time.sleep(STALL_S)

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
            self._send(200, PNG, "image/png")
        finally:
            with state.lock:
                state.active -= 1
                state.active_per_host[host] -= 1


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


# --- magic bytes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pil_format", "expected"),
    [("JPEG", "jpeg"), ("PNG", "png"), ("GIF", "gif"), ("WEBP", "webp"), ("BMP", "bmp"), ("TIFF", "tiff")],
)
def test_sniff_recognises_real_encoded_images(pil_format: str, expected: str) -> None:
    assert sniff_image_format(_image_bytes(pil_format)[:32]) == expected


@pytest.mark.parametrize(
    "head",
    [b"", HTML[:32], b"BM this is a text file, not a bitmap", b"RIFF\x00\x00\x00\x00WAVEfmt ", b"%PDF-1.7\n"],
)
def test_sniff_rejects_non_images(head: bytes) -> None:
    assert sniff_image_format(head) is None


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


def test_server_that_never_answers_times_out_as_transient(server: RunningServer) -> None:
    result = _fetcher(timeout_s=0.2, max_retries=1).fetch(server.url("/slow-headers.png"))

    assert result.reason_code == TIMEOUT and result.transient
    assert len(result.attempts) == 2
    assert all(a.status_code is None for a in result.attempts)


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


@pytest.mark.parametrize("locator", ["ftp://example.invalid/a.png", "s3://bucket/a.png", "http://"])
def test_unfetchable_locators_are_reported_not_raised(locator: str) -> None:
    result = _fetcher().fetch(locator)

    assert result.reason_code == INVALID_LOCATOR and not result.ok and not result.transient


# --- concurrency ----------------------------------------------------------------------


def test_fetch_many_keeps_at_most_per_host_limit_in_flight(server: RunningServer) -> None:
    urls = [server.url(f"/slow/{i}") for i in range(10)]

    results = list(_fetcher(per_host_limit=2, max_workers=8).fetch_many(urls))

    assert sorted(r.locator for r in results) == sorted(urls)
    assert all(r.ok for r in results)
    assert server.state.max_active == 2  # reached the limit, never passed it


def test_fetch_many_uses_other_hosts_while_one_host_is_saturated(server: RunningServer) -> None:
    # Same server under two names: the fetcher must treat them as two hosts.
    urls = [server.url(f"/slow/a{i}") for i in range(6)]
    urls += [server.url(f"/slow/b{i}", host="localhost") for i in range(6)]

    results = list(_fetcher(per_host_limit=2, max_workers=3).fetch_many(urls))

    assert sorted(r.locator for r in results) == sorted(urls) and all(r.ok for r in results)
    assert max(server.state.max_active_per_host.values()) == 2
    assert server.state.max_active == 3  # bounded by max_workers, filled across hosts


def test_fetch_many_reports_every_failure(server: RunningServer, tmp_path: Path) -> None:
    locators = [server.url("/img.png"), server.url("/nope.png"), server.url("/page.html"), str(tmp_path / "gone.png")]

    reasons = {r.locator: r.reason_code for r in _fetcher().fetch_many(locators)}

    assert reasons == {
        locators[0]: None,
        locators[1]: HTTP_STATUS,
        locators[2]: BAD_CONTENT_TYPE,
        locators[3]: MISSING_FILE,
    }


def test_fetch_many_pulls_its_input_lazily(server: RunningServer) -> None:
    pulled = 0

    def many() -> Iterator[str]:
        nonlocal pulled
        for i in range(10_000):
            pulled += 1
            yield server.url(f"/img.png?n={i}")

    max_workers = 2
    results = _fetcher(max_workers=max_workers).fetch_many(many())
    taken = list(itertools.islice(results, 5))
    results.close()

    assert len(taken) == 5 and all(r.ok for r in taken)
    assert pulled <= len(taken) + max_workers * (1 + fetching._BACKLOG_PER_WORKER)


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


def test_invalid_limits_are_rejected_up_front() -> None:
    with pytest.raises(ValueError, match="per_host_limit"):
        _fetcher(per_host_limit=0)
    with pytest.raises(ValueError, match="user_agent"):
        _fetcher(user_agent=" ")
