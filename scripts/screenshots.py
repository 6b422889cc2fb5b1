"""Screenshots of the Dagster UI on the demo warehouse, taken in headless Chromium: what issue 17 asks a person to
see (row counts in the catalog, column schemas, sample rows and the thumbnail sheet, check descriptions, stale
markers), so a change to the asset metadata can be checked in a real browser, not only in tests.

    python scripts/screenshots.py [--out /tmp/aesforge-screens] [--config FILE]

It starts ``dagster-webserver`` on a free port of 127.0.0.1 with the repository's ``workspace.yaml`` and the
instance the CLI keeps (``$DAGSTER_HOME``, else ``dagster_home/`` beside the configured warehouse), waits for the
code location, saves one PNG per page into ``--out`` (outside the repository by default) and stops the server.

Needs Chromium (Debian: ``apt-get install chromium``, at /usr/bin/chromium) and Playwright for Python
(``pip install -e '.[screenshots]'``; Playwright's own browser download is not used). Without either it says
which in one line and exits 2.

The stale marker on ``critique_pairs`` shows only once ``image_pool`` has a newer materialization than the one
``critique_pairs`` was built from, on changed data:

1. ``make demo`` (the demo warehouse and its runs in the instance);
2. change one row of a manifest the config reads (e.g. the title of one line of ``data/sample/manifest.csv``);
3. ``aesforge run --select '*image_pool'`` (the pool and everything upstream of it, so the changed row reaches it;
   not its downstream assets);
4. ``python scripts/screenshots.py``: ``critique_pairs`` and the graph now show it as unsynced.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1600, "height": 2000}  # tall: the UI scrolls inside its panels, so a full-page shot is the viewport

LOCATION = "pipelines.definitions"  # workspace.yaml's python_module: Dagster names the code location after it
PAGES = [
    # (file name, path of the UI page, text to wait for before the shot)
    ("01_asset_catalog.png", "/assets", "image_pool"),
    ("02_image_pool_overview.png", "/assets/image_pool?view=overview", "image_pool"),
    ("03_image_pool_events.png", "/assets/image_pool?view=events", "image_pool"),
    ("04_critique_pairs_overview.png", "/assets/critique_pairs?view=overview", "critique_pairs"),
    ("05_critique_pairs_events.png", "/assets/critique_pairs?view=events", "critique_pairs"),
    ("06_image_pool_checks.png", "/assets/image_pool?view=checks", "image_pool"),
    ("07_critique_pairs_lineage.png", "/assets/critique_pairs?view=lineage&lineageScope=upstream&lineageDepth=2",
     "critique_pairs"),
    ("08_critique_canvas_graph.png", f"/locations/{LOCATION}/asset-groups/critique_canvas", "critique_pairs"),
    ("09_image_pool_thumbnails.png", "/assets/image_pool?view=overview", "image_pool", "thumbnails"),
    ("10_image_pool_sample_rows.png", "/assets/image_pool?view=overview", "image_pool", "preview"),
    ("11_critique_pairs_sample_rows.png", "/assets/critique_pairs?view=overview", "critique_pairs", "preview"),
    ("12_full_rebuild_job_runs.png", f"/locations/{LOCATION}/jobs/full_rebuild_job/runs", "full_rebuild_job"),
    ("13_overview_timeline.png", "/overview/activity/timeline", "full_rebuild_job"),
]
"""(file, UI path, text to wait for[, metadata key whose Markdown to open before the shot])"""


def missing_tools() -> str | None:
    """Why no screenshot can be taken here, in one line; None when Chromium and Playwright are both present."""
    if not Path(CHROMIUM).is_file():
        return f"screenshots: no Chromium at {CHROMIUM} (Debian: apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "screenshots: Playwright for Python is not installed (pip install -e '.[screenshots]')"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def dagster_home(config_file: str | None) -> Path:
    """The instance ``aesforge run`` records runs in: ``$DAGSTER_HOME``, else ``dagster_home/`` beside the
    configured warehouse (as ``pipelines.cli``'s instance)."""
    if os.environ.get("DAGSTER_HOME"):
        return Path(os.environ["DAGSTER_HOME"])
    from pipelines.config import config_path, load_config

    config = load_config(Path(config_file).resolve() if config_file else config_path())
    return Path(config["warehouse"]["path"]).parent / "dagster_home"


def wait_for(url: str, server: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"screenshots: dagster-webserver exited with {server.returncode} before answering")
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"screenshots: no answer from {url} in {timeout_s:.0f} s")


def shoot(base: str, out: Path, timeout_s: float) -> list[Path]:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    taken = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        wait_s = timeout_s  # the first page waits for the code location to load; the others for their data
        for name, path, marker, *opened in PAGES:
            page.goto(base + path, wait_until="domcontentloaded", timeout=timeout_s * 1000)
            try:
                page.get_by_text(marker).first.wait_for(timeout=wait_s * 1000)
            except PlaywrightTimeout:
                print(f"screenshots: {path}: '{marker}' did not appear in {wait_s:.0f} s; shot as it is", file=sys.stderr)
            wait_s = min(timeout_s, 60.0)
            try:  # the graph's nodes and the panels fill in after the page: wait until none says it is loading
                page.get_by_text("Loading").first.wait_for(state="hidden", timeout=wait_s * 1000)
            except PlaywrightTimeout:
                pass
            page.wait_for_timeout(3000)  # images (the thumbnail sheet) settle
            skip = page.get_by_role("button", name="Skip")  # the UI's first-visit "Join the Dagster community" dialog
            if skip.count():
                skip.first.click()
                page.wait_for_timeout(500)
            if opened:  # a Markdown metadata value (sample rows, thumbnails) opens in a dialog from its row
                row = page.locator("tr", has=page.get_by_text(opened[0], exact=True))
                row.get_by_text("Show Markdown").first.click()
                page.wait_for_timeout(2000)
            page.screenshot(path=out / name, full_page=True)
            taken.append(out / name)
        browser.close()
    return taken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="/tmp/aesforge-screens", help="folder for the PNGs (default: %(default)s)")
    parser.add_argument("--config", help="aesforge config (default: as the aesforge command finds it)")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds to wait for the server and each page")
    args = parser.parse_args(argv)
    problem = missing_tools()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    out = Path(args.out).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, DAGSTER_HOME=str(dagster_home(args.config)))
    if args.config:
        env["AESFORGE_CONFIG"] = str(Path(args.config).resolve())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped script stops its server too (finally)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "dagster_webserver", "-h", "127.0.0.1", "-p", str(port), "-w", "workspace.yaml"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(f"{base}/server_info", server, args.timeout)
        for path in shoot(base, out, args.timeout):
            print(path)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
