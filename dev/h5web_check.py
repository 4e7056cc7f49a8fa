"""Check the stock H5Web app (``@h5web/app``) against h5lake's ``/h5grove/`` routes in a real browser.

    python dev/h5web_check.py [--workdir DIR] [--version 17.0.0] [--keep] [--shots]

Not part of the suite (it needs npm and the npm registry; tests never import it). It

1. writes an HDF5 file with h5py holding one of everything H5Web shows (groups, attributes,
   1-D/2-D/3-D numeric datasets of several types, compound, strings, booleans, complex, enum,
   opaque, scalar, empty, a soft link, a dangling soft link, an external link, an RGB image
   with ``CLASS=IMAGE``, NeXus ``NXdata`` groups with ``signal``/``axes``);
2. starts ``h5lake serve`` from this tree on a local directory store with ``--public-read``,
   and ``h5lake load``s the file into ``/home/test_user1/h5web.h5``;
3. in WORKDIR (default /tmp/h5webcheck) installs ``@h5web/app`` with react 18 and esbuild from
   npm (skipped when already there) and bundles a page with ``App`` inside
   ``H5GroveProvider url=<server>/h5grove filepath=<domain>``, served by a static server on
   another port (so the h5grove answers' CORS is exercised too);
4. opens it in Debian's chromium with Playwright and clicks through: tree expansion, every
   dataset with every visualization H5Web offers for it (Line, Heatmap, Matrix, RGB, NX ...),
   the Inspect panel, the slice slider of the 3-D dataset, the search box and the export
   links (``npy``, ``tiff``) fetched for real; first, a domain that does not exist, to see that
   H5Web shows h5lake's 404 as "File not found" (and that errors shown are detected);
5. prints every failed request, every h5grove answer of 4xx/5xx, every console error and page
   error, and every error H5Web shows in its visualizer, then ``OK`` or ``FAIL`` (exit 1).

The dangling soft link and the external link (to a file that is not a domain) are unresolved
entities to H5Web: it shows "Nothing to display" for them, as it does with h5grove's server.
The HDF5 file is tests/support/h5web_file.py's, which tests/view/test_h5grove_h5web.py also
checks (without npm) against h5py.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import requests
from playwright.sync_api import Page, sync_playwright
from tests.support.h5web_file import make_file
from tests.support.server import USERS, start_server

DOMAIN = "/home/test_user1/h5web.h5"

MAIN_JSX = """\
import { createRoot } from 'react-dom/client';
import { App, H5GroveProvider } from '@h5web/app';
import '@h5web/app/styles.css';
const q = new URLSearchParams(window.location.search);
createRoot(document.getElementById('root')).render(
  <div style={{ height: '100vh' }}>
    <H5GroveProvider url={q.get('url')} filepath={q.get('file')}>
      <App initialPath={q.get('path') || '/'} />
    </H5GroveProvider>
  </div>
);
"""

INDEX_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>H5Web check</title>
<link rel="stylesheet" href="main.css"><link rel="icon" href="data:,"></head><body style="margin:0"><div id="root"></div>
<script src="main.js"></script></body></html>
"""

def build_app(workdir: Path, version: str) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("npm is needed (the app is built from the npm registry's @h5web/app)")
    workdir.mkdir(parents=True, exist_ok=True)
    pkg = workdir / "node_modules/@h5web/app/package.json"
    if not pkg.exists() or json.loads(pkg.read_text())["version"] != version:
        (workdir / "package.json").write_text('{"name": "h5webcheck", "private": true, "version": "0.0.0"}\n')
        subprocess.run([npm, "install", "--no-audit", "--no-fund", f"@h5web/app@{version}", "react@18",
                        "react-dom@18", "axios", "esbuild"], cwd=workdir, check=True)
    (workdir / "main.jsx").write_text(MAIN_JSX)
    dist = workdir / "dist"
    dist.mkdir(exist_ok=True)
    (dist / "index.html").write_text(INDEX_HTML)
    subprocess.run([str(workdir / "node_modules/.bin/esbuild"), "main.jsx", "--bundle", "--outdir=dist",
                    "--jsx=automatic", "--minify", "--define:process.env.NODE_ENV=\"production\"",
                    "--log-level=warning"], cwd=workdir, check=True)
    return dist


def serve_static(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class Recorder:
    """What went wrong in the browser, by the path being looked at."""

    def __init__(self, page: Page, server: str) -> None:
        self.where = "/"
        self.problems: list[str] = []
        self.requests: dict[str, int] = {}
        self.urls: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.add(f"console error: {m.text[:300]}"))
        page.on("pageerror", lambda e: self.add(f"page error: {str(e)[:300]}"))
        page.on("requestfailed", lambda r: self.add(f"request failed: {r.url[:200]} ({r.failure})"))

        def response(r: Any) -> None:
            if r.url.startswith(server + "/h5grove/"):
                route = r.url[len(server):].split("?")[0]
                self.requests[route] = self.requests.get(route, 0) + 1
                self.urls.append(r.url)
                if r.status >= 400:
                    self.add(f"h5grove {r.status}: {r.url[len(server):][:250]} -> {r.text()[:200]}")

        page.on("response", response)

    def add(self, text: str) -> None:
        self.problems.append(f"[{self.where}] {text}")


def settle(page: Page) -> None:
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)


def select(page: Page, path: str) -> None:
    """Select ``path`` in the explorer, expanding the groups on the way as a person would."""
    parts = [p for p in path.split("/") if p]
    for i in range(1, len(parts) + 1):
        item = page.locator(f'[role=tree] [role=treeitem][data-path="/{"/".join(parts[:i])}"]')
        item.wait_for(timeout=15000)
        if i < len(parts):
            if item.get_attribute("aria-expanded") == "false":
                item.click()
                settle(page)
        else:
            item.click()
    settle(page)


def vis_error(page: Page) -> str | None:
    """The message H5Web shows in place of a visualization, if any."""
    for sel in ('[class*="_error_"]', '[class*="_detailedError_"]', "[role=alert]"):  # H5Web's ErrorFallback
        loc = page.locator(sel)
        if loc.count() and loc.first.is_visible():
            return loc.first.inner_text()[:300]
    return None


def visit_all(page: Page, rec: Recorder, paths: list[str], shots: Path | None) -> dict[str, list[str]]:
    """Every entity with every visualization tab H5Web offers for it."""
    seen: dict[str, list[str]] = {}
    for path in paths:
        if path == "/":
            continue
        rec.where = path
        select(page, path)
        tabs = page.locator("[role=tablist][aria-label=Visualization] [role=tab]")
        names = [tabs.nth(i).inner_text().strip() for i in range(tabs.count())]
        seen[path] = names
        for i, name in enumerate(names or [""]):
            if names:
                tabs.nth(i).click()
                settle(page)
            message = vis_error(page)
            if message:
                rec.add(f"H5Web shows an error ({name or 'no vis'}): {message}")
            if shots is not None:
                page.screenshot(path=shots / f"{path.strip('/').replace('/', '_')}-{name or 'none'}.png")
    return seen


def slice_cube(page: Page, rec: Recorder, source: Path) -> list[str]:
    """Move the slider of the first dimension of the 3-D dataset (D0, 0:5) three steps in the
    heatmap; the h5grove data requests it made, each checked against h5py's slice."""
    rec.where = "/data/cube"
    select(page, "/data/cube")
    page.locator("[role=tab]", has_text="Heatmap").first.click()
    settle(page)
    before = len(rec.urls)
    slider = page.locator('[role=slider][aria-valuemax="5"]').first
    slider.focus()
    for _ in range(3):
        page.keyboard.press("ArrowUp")
        settle(page)
    asked = [u for u in rec.urls[before:] if "/h5grove/data?" in u and "selection=" in u]
    with h5py.File(source) as f:
        cube = f["/data/cube"][()]
    for url in asked:
        query = dict(p.split("=", 1) for p in url.split("?", 1)[1].split("&"))
        index = int(requests.utils.unquote(query["selection"]).split(",")[0])
        got = np.frombuffer(requests.get(url, timeout=30).content, "<i2")
        if got.size != cube[index].size or not np.array_equal(got.reshape(cube[index].shape), cube[index]):
            rec.add(f"slice {index} of /data/cube differs from h5py's")
    return [requests.utils.unquote(u.split("selection=", 1)[1].split("&")[0]) for u in asked]


def inspect(page: Page, rec: Recorder, path: str) -> str:
    rec.where = path + " (inspect)"
    select(page, path)
    page.get_by_role("tab", name="Inspect").click()
    settle(page)
    text = page.locator("main, body").first.inner_text()
    page.get_by_role("tab", name="Display").click()
    settle(page)
    return text


def check_exports(endpoint: str, rec: Recorder) -> None:
    """The export URLs H5Web builds (``getExportURL``) fetched for real."""
    for params in ({"path": "/data/image", "format": "npy"}, {"path": "/data/image", "format": "tiff"},
                   {"path": "/data/cube", "format": "tiff", "selection": "2,:,:"},
                   {"path": "/data/line", "format": "npy"}):
        r = requests.get(f"{endpoint}/h5grove/data", params={"file": DOMAIN, **params}, timeout=30)
        if r.status_code != 200:
            rec.where = params["path"] + " (export)"
            rec.add(f"export {params}: {r.status_code} {r.text[:200]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/h5webcheck"))
    ap.add_argument("--version", default="17.0.0", help="@h5web/app version from npm")
    ap.add_argument("--shots", action="store_true", help="save a screenshot per view in WORKDIR/shots")
    ap.add_argument("--keep", action="store_true", help="leave the server running until Enter is pressed")
    args = ap.parse_args()
    dist = build_app(args.workdir, args.version)
    shots = args.workdir / "shots" if args.shots else None
    if shots is not None:
        shots.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="h5webcheck-"))
    source = make_file(tmp / "h5web.h5")
    server = start_server(tmp / "server", extra=["--public-read"])
    httpd, app_url = serve_static(dist)
    try:
        auth = ("test_user1", USERS["test_user1"])
        requests.put(server.endpoint + "/", params={"domain": "/home/test_user1"}, json={"folder": True},
                     auth=auth, timeout=30)
        subprocess.run([sys.executable, "-m", "h5lake.cli.command", "load", str(source), DOMAIN, "-e", server.endpoint,
                        "-u", auth[0], "-p", auth[1]], check=True)
        listing = requests.get(f"{server.endpoint}/h5grove/paths", params={"file": DOMAIN}, timeout=30).json()
        chromium = shutil.which("chromium")
        if chromium is None:
            sys.exit("Debian's chromium is needed")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu",
                                                                         "--use-gl=swiftshader",
                                                                         "--enable-unsafe-swiftshader"])
            probe = browser.new_page()
            probe.goto(f"{app_url}/index.html?url={server.endpoint}/h5grove&file=/home/test_user1/absent.h5")
            probe.wait_for_timeout(3000)
            shown = vis_error(probe) or ""
            print("a missing domain shows:", shown)
            if "File not found" not in shown:
                sys.exit("H5Web did not show 'File not found' for a missing domain: errors cannot be detected")
            probe.close()
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            rec = Recorder(page, server.endpoint)
            page.goto(f"{app_url}/index.html?url={server.endpoint}/h5grove&file={DOMAIN}")
            page.locator('[role=tree] [role=treeitem][data-path="/data"]').wait_for(timeout=30000)
            settle(page)
            seen = visit_all(page, rec, listing, shots)
            slices = slice_cube(page, rec, source)
            print("slices H5Web asked for /data/cube:", slices)
            if [s.split(",")[0] for s in slices] != ["1", "2", "3"]:
                rec.problems.append(f"[/data/cube] moving the slider 3 steps fetched {slices}")
            meta = inspect(page, rec, "/images/rgb")
            if args.shots:
                print(meta)
            for word in ("IMAGE_SUBCLASS", "IMAGE_TRUECOLOR", "Integer (unsigned), 8-bit", "60 x 80 x 3"):
                if word not in meta:
                    rec.problems.append(f"[/images/rgb (inspect)] the metadata panel does not show {word!r}")
            rec.where = "search"
            page.get_by_role("tab", name="Search").click()
            page.get_by_label("Path to search").fill("counts")
            settle(page)
            if page.locator('[role=treeitem][data-path="/entry/map/counts"]').count() != 1:
                rec.problems.append("[search] /entry/map/counts is not found by the search box")
            browser.close()
        check_exports(server.endpoint, rec)
        for path, names in seen.items():
            print(f"{path:28} {', '.join(names) or '-'}")
        print("h5grove requests:", json.dumps(rec.requests, sort_keys=True))
        for line in rec.problems:
            print("PROBLEM:", line)
        print(f"H5Web {args.version}: " + ("OK" if not rec.problems else f"FAIL ({len(rec.problems)} problems)"))
        if args.keep:
            print(f"app: {app_url}/index.html?url={server.endpoint}/h5grove&file={DOMAIN}")
            input("Enter to stop ")
        return 1 if rec.problems else 0
    finally:
        httpd.shutdown()
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
