"""The pool job on the user's own sources: an HTTP manifest served on 127.0.0.1 and a local folder.

Every kind of bad input must end in a warehouse row with a clear reason while the run goes on,
transient failures must be retried by the next run, and nothing else fetched again.
"""

import io
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sample import synth
from tests.support.pool_harness import run_pool, step_summaries, warehouse_for, write_config


def _jpeg(image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=92)
    return buffer.getvalue()


PHOTO = synth.render_photo(11, (480, 320))
PAINTING = synth.render_painting(12, (400, 400))
HTML = b"<!doctype html><title>404</title><p>gone</p>"


class _Handler(BaseHTTPRequestHandler):
    routes: dict = {}
    hits: Counter = Counter()
    flaky_failures = 2

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        type(self).hits[self.path] += 1
        if self.path == "/flaky.jpg" and self.hits[self.path] <= self.flaky_failures:
            status, body, ctype = 503, b"busy", "text/plain"
        else:
            status, body, ctype = self.routes.get(self.path, (404, b"not found", "text/plain"))
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if status == 503:
            self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(body)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """The fetcher hangs up on oversized bodies on purpose; that is not a server error."""


@pytest.fixture(scope="module")
def image_host():
    _Handler.routes = {
        "/photo.jpg": (200, _jpeg(PHOTO), "image/jpeg"),
        "/painting.png": (200, synth.recompressed(PAINTING, 95), "image/jpeg"),
        "/page.html": (200, HTML, "text/html; charset=utf-8"),
        "/fake.png": (200, HTML, "image/png"),
        "/huge.jpg": (200, _jpeg(synth.render_photo(13, (2400, 2400))) + b"\0" * 3_000_000, "image/jpeg"),
        "/flaky.jpg": (200, _jpeg(synth.render_virtual(14, (360, 360))), "image/jpeg"),
    }
    _Handler.hits = Counter()
    server = _QuietServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def own_sources(image_host, tmp_path_factory):
    root = tmp_path_factory.mktemp("own_sources")
    rows = [
        {"url": f"{image_host}/photo.jpg", "title": "Harbour", "license": "CC-BY-4.0", "domain": "photography", "provider": "host"},
        {"url": f"{image_host}/painting.png", "license": "CC0-1.0", "domain": "painting", "creator": "A. Painter"},
        {"url": f"{image_host}/missing.jpg", "license": "CC0-1.0", "domain": "painting"},
        {"url": f"{image_host}/page.html", "license": "CC0-1.0", "domain": "virtual"},
        {"url": f"{image_host}/fake.png", "license": "CC0-1.0", "domain": "virtual"},
        {"url": f"{image_host}/huge.jpg", "license": "CC0-1.0", "domain": "photography"},
        {"url": f"{image_host}/flaky.jpg", "license": "CC0-1.0", "domain": "virtual"},
        {"url": f"{image_host}/photo.jpg", "license": "All-Rights-Reserved", "domain": "photography", "title": "same bytes, closed license"},
        {"url": f"{image_host}/painting.png", "license": "CC0-1.0", "domain": "sculpture"},
    ]
    manifest = root / "web.jsonl"
    manifest.write_text("\n".join([json.dumps(r) for r in rows] + ["{broken json"]) + "\n", encoding="utf-8")
    folder = root / "scans"
    (folder / "photography").mkdir(parents=True)
    synth.hflipped(PHOTO).save(folder / "photography" / "mirrored_harbour.png")
    synth.render_photo(21, (640, 480)).save(folder / "photography" / "other.jpg", quality=90)
    config = write_config(
        root / "cfg",
        {
            "manifests": [str(manifest)],
            "folders": [{"path": str(folder), "provider": "scanner", "license": "CC0-1.0", "redistribution": "restricted"}],
        },
        fetch={"timeout_s": 2, "max_retries": 1, "backoff_s": 0.01, "max_backoff_s": 0.05, "max_bytes": 2_000_000},
    )
    first = run_pool(config)
    wh = warehouse_for(config)
    hits_after_first = Counter(_Handler.hits)
    second = run_pool(config)
    return {"wh": wh, "first": first, "second": second, "hits": hits_after_first, "host": image_host}


def _reasons(wh, stage):
    frame = wh.query("SELECT r.locator, j.reason_code, j.detail, j.retryable FROM rejection j JOIN source_record r ON r.record_id = j.entity_id WHERE j.stage = ?", [stage])
    return {row.locator.rsplit("/", 1)[-1]: (row.reason_code, row.retryable, row.detail) for row in frame.itertuples()}


def test_runs_go_on_and_every_bad_input_keeps_its_reason(own_sources):
    wh = own_sources["wh"]
    assert own_sources["first"].success and own_sources["second"].success
    source = wh.query("SELECT j.reason_code, j.detail, r.locator FROM rejection j JOIN source_record r ON r.record_id = j.entity_id"
                      " WHERE j.stage = 'source' ORDER BY j.reason_code")
    assert source.reason_code.tolist() == ["invalid_domain", "invalid_json"]
    broken = source.iloc[1]  # the broken line is the manifest's 10th: its detail and locator say so
    assert broken.detail.startswith(f"{broken.locator.split('#')[0]}: line 10:") and broken.locator.endswith("web.jsonl#line=10")
    fetch = _reasons(wh, "fetch")
    assert {name: code for name, (code, _, _) in fetch.items()} == {
        "missing.jpg": "http_status", "page.html": "bad_content_type", "fake.png": "not_an_image", "huge.jpg": "too_large",
    }
    assert "404" in fetch["missing.jpg"][2] and not any(retryable for _, retryable, _ in fetch.values())
    filtered = wh.query("SELECT r.title, c.reason_code FROM pool_candidate c JOIN source_record r USING (record_id) WHERE NOT c.eligible")
    assert filtered.values.tolist() == [["same bytes, closed license", "license_not_allowed"]]


def test_every_fetch_attempt_is_logged(own_sources):
    wh = own_sources["wh"]
    attempts = wh.query("SELECT url, attempt, status_code, n_bytes, sha256, duration_ms, error FROM fetch_attempt ORDER BY url, started_at")
    flaky = attempts[attempts.url.str.endswith("/flaky.jpg")]
    assert flaky.status_code.tolist() == [503, 503, 200]  # two failed tries in run 1, success in run 2
    ok = attempts[attempts.error.isna()]
    assert len(ok) == 6  # photo.jpg (logged for both of its records), painting, flaky (run 2), two folder files
    assert ok.sha256.str.len().eq(64).all() and (ok.n_bytes > 0).all() and (attempts.duration_ms >= 0).all()


def test_transient_failure_is_retried_next_run_and_nothing_else_is_fetched_again(own_sources):
    wh = own_sources["wh"]
    assert "flaky.jpg" not in _reasons(wh, "fetch")  # withdrawn once it succeeded
    summary = step_summaries(wh, own_sources["second"].run_id)["fetched_files"]
    assert summary.pop("commit_seconds") > 0 and summary == {"fetched": 1, "locators_pending": 1, "shards": "all"}
    from tests.image_pool.test_sources import _Handler

    assert {p: n for p, n in _Handler.hits.items() if p != "/flaky.jpg"} == {
        p: n for p, n in own_sources["hits"].items() if p != "/flaky.jpg"
    }


def test_mirrored_folder_copy_of_a_web_image_is_one_cluster(own_sources):
    drops = own_sources["wh"].query("SELECT locator, representative_locator, match_method, match_distance FROM duplicate_drops")
    assert len(drops) == 1
    drop = drops.iloc[0]
    names = {drop.locator.rsplit("/", 1)[-1], drop.representative_locator.rsplit("/", 1)[-1]}
    assert names == {"photo.jpg", "mirrored_harbour.png"}
    assert drop.match_method.startswith("perceptual:") and drop.match_distance >= 0
    kept = own_sources["wh"].query("SELECT title, creator, provider, license FROM pool_images ORDER BY title")
    assert "A. Painter" in set(kept.creator) and set(kept.provider) >= {"scanner"}


def test_an_exception_on_one_manifest_row_is_that_rows_internal_error_and_is_not_retried_until_it_changes(tmp_path, monkeypatch):
    from assets.image_pool import collection
    manifest = tmp_path / "m.csv"
    lines = ["locator,license,domain", "a.png,CC0-1.0,virtual", "boom.png,CC0-1.0,virtual", "c.png,CC0-1.0,virtual"]
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    real, tried = collection._manifest_outcome, []

    def exploding(root, item):
        tried.append(item.payload.line)
        if "boom" in str(item.payload.fields):
            raise ValueError("injected for the test")
        return real(root, item)

    monkeypatch.setattr(collection, "_manifest_outcome", exploding)
    config = write_config(tmp_path / "cfg", {"manifests": [str(manifest)]})
    wh = warehouse_for(config)

    def run():
        result = run_pool(config, select=["source_records"])
        assert result.success
        summary = step_summaries(wh, result.run_id)["source_records"]
        assert summary.pop("commit_seconds") > 0  # the item loop's transactions, timed
        return summary

    assert run() == {"records": 2, "rejected:internal_error": 1}
    [(entity, detail)] = wh.query("SELECT entity_id, detail FROM rejection WHERE reason_code = 'internal_error'").values.tolist()
    assert entity.startswith("source_row:") and detail.startswith("../m.csv#line=3: ValueError: injected for the test")
    assert "exploding" in detail and "traceback" in detail
    kept = wh.query("SELECT locator FROM source_record ORDER BY locator")["locator"].tolist()
    assert [Path(p).name for p in kept] == ["a.png", "c.png"]

    tried.clear()  # a new row makes the manifest be read again; the quarantined row is not tried again
    manifest.write_text("\n".join(lines + ["d.png,CC0-1.0,virtual"]) + "\n", encoding="utf-8")
    assert run() == {"records": 3, "quarantined": 1}
    assert 3 not in tried and wh.scalar("SELECT count(*) FROM item_quarantine") == 1

    lines[2] = "fixed.png,CC0-1.0,virtual"  # changing the row's content tries it again
    manifest.write_text("\n".join(lines + ["d.png,CC0-1.0,virtual"]) + "\n", encoding="utf-8")
    assert run() == {"records": 4}
    assert wh.scalar("SELECT count(*) FROM rejection WHERE reason_code = 'internal_error'") == 0
    assert wh.scalar("SELECT count(*) FROM item_quarantine") == 0
    assert wh.scalar("SELECT count(*) FROM source_record WHERE locator LIKE '%fixed.png'") == 1
