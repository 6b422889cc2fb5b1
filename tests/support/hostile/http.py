"""Hostile HTTP for the fetch stage: a loopback image host on 127.0.0.1 speaking real HTTP/1.1, its cases, and
the manifest that lists them.

Each :class:`HttpCase` is one URL with the outcome the first run must record (``kept`` or a fetch reason code)
and whether that failure is transient (retried by later runs, then ``gave_up``). The host counts the requests
of every path, so a test can tell that a given-up URL is not asked again, and how many bytes it streamed, so it
can tell that a download was cut off at the cap. Bodies are real images made with Pillow at start-up, never
committed files: the oversized ones are a large noise PNG, valid to its last byte, so only the size cap stops it.
"""

from __future__ import annotations

import io
import json
import random
import socket
import sys
import threading
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from PIL import Image

KEPT = "kept"
STALL_S = 10.0
"""How long the stalled route keeps a request waiting (released at shutdown); far above any test timeout."""
STREAM_TOTAL_BYTES = 64 * 2**20
"""What the route without Content-Length would send (the big PNG over and over) if the client never hung up."""


@dataclass(frozen=True)
class HttpCase:
    name: str
    path: str | None  # None: the URL of a port with nothing listening
    expected: str  # what the first run records: KEPT or the fetch reason code
    transient: bool = False  # retried on later runs, given up after fetch.max_attempt_runs


CASES = (
    HttpCase("good_photo", "/good/photo.png", KEPT),
    HttpCase("good_painting", "/good/painting.jpg", KEPT),
    HttpCase("flaky", "/flaky.png", KEPT),  # two 503s, then the image: kept within one run (max_retries >= 2)
    HttpCase("not_found", "/missing.png", "http_status"),
    HttpCase("always_500", "/always-500.png", "http_status", transient=True),
    HttpCase("stall", "/stall.png", "timeout", transient=True),
    HttpCase("redirect_loop", "/loop.png", "redirect_loop"),
    HttpCase("oversized_declared", "/huge-declared.png", "too_large"),
    HttpCase("oversized_streamed", "/huge-streamed.png", "too_large"),
    HttpCase("short_body", "/short.png", "truncated_body", transient=True),
    HttpCase("refused", None, "connection_error", transient=True),
)


def _encoded(image: Image.Image, fmt: str) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt)
    return buffer.getvalue()


def _noise_png(side: int) -> bytes:
    """A PNG that does not compress (random pixels): ``side`` 600 gives about 1 MiB."""
    rng = random.Random(side)
    return _encoded(Image.frombytes("RGB", (side, side), rng.randbytes(side * side * 3)), "PNG")


class _Host(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.hits: Counter[str] = Counter()
        self.streamed_bytes = 0
        self.release = threading.Event()
        self.bodies = {
            "/good/photo.png": _encoded(Image.new("RGB", (64, 48), (30, 120, 200)), "PNG"),
            "/good/painting.jpg": _encoded(Image.new("RGB", (48, 64), (200, 80, 20)), "JPEG"),
            "/flaky.png": _encoded(Image.new("RGB", (40, 40), (10, 200, 90)), "PNG"),
            "/big.png": _noise_png(600),
        }

    def handle_error(self, request: object, client_address: object) -> None:
        """Clients hanging up (timeouts, size caps) is what these routes provoke; anything else is a bug."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Host

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        with self.server.lock:
            self.server.hits[path] += 1
            hit = self.server.hits[path]
        try:
            self._route(path, hit)
        except ConnectionError:
            pass  # the client gave up on purpose

    def _route(self, path: str, hit: int) -> None:
        bodies = self.server.bodies
        if path in ("/good/photo.png", "/good/painting.jpg") or (path == "/flaky.png" and hit > 2):
            self.send(200, bodies[path], "image/jpeg" if path.endswith(".jpg") else "image/png")
        elif path == "/flaky.png":
            self.send(503, b"busy", "text/plain", {"Retry-After": "0"})
        elif path == "/always-500.png":
            self.send(500, b"internal error", "text/plain")
        elif path == "/stall.png":
            self.server.release.wait(STALL_S)
            self.send(200, bodies["/good/photo.png"], "image/png")
        elif path == "/loop.png":
            self.send(302, b"", None, {"Location": "/loop.png"})
        elif path == "/huge-declared.png":
            self.send(200, bodies["/big.png"], "image/png")
        elif path == "/huge-streamed.png":
            self._stream(bodies["/big.png"])
        elif path == "/short.png":  # a Content-Length the body does not reach, then the connection closes
            body = bodies["/good/photo.png"]
            self.send(200, body, "image/png", {"Content-Length": str(len(body) + 5000)})
            self.close_connection = True
        else:
            self.send(404, b"not found", "text/plain")

    def send(self, status: int, body: bytes, content_type: str | None, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        headers = {"Content-Length": str(len(body)), **(headers or {})}
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, body: bytes) -> None:
        """No Content-Length: only the client's own byte count can stop it."""
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        while self.server.streamed_bytes < STREAM_TOTAL_BYTES:
            self.wfile.write(body)
            with self.server.lock:
                self.server.streamed_bytes += len(body)


class HostileImageHost:
    """The loopback host, as a context manager: ``url(case)``, ``hits[path]``, ``streamed_bytes``."""

    def __init__(self) -> None:
        self._server = _Host()
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
            probe.bind(("127.0.0.1", 0))
            self.refused_port = probe.getsockname()[1]

    def __enter__(self) -> HostileImageHost:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def hits(self) -> Counter[str]:
        with self._server.lock:
            return Counter(self._server.hits)

    @property
    def streamed_bytes(self) -> int:
        return self._server.streamed_bytes

    @property
    def big_body_bytes(self) -> int:
        """Size of the oversized PNG; the fetch's ``max_bytes`` must be below it."""
        return len(self._server.bodies["/big.png"])

    def url(self, case: HttpCase) -> str:
        if case.path is None:
            return f"http://127.0.0.1:{self.refused_port}/nothing-listens.png"
        return f"http://127.0.0.1:{self._server.server_address[1]}{case.path}"


def write_manifest(folder: Path, host: HostileImageHost, cases: tuple[HttpCase, ...] = CASES) -> Path:
    """A JSONL manifest with one valid row per case (its name as the title), written into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "hostile_http.jsonl"
    rows = [{"url": host.url(case), "title": case.name, "license": "CC0-1.0", "domain": "photography"} for case in cases]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
