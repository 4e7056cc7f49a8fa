"""Check the stock H5Web app (``@h5web/app``) against h5lake's ``/h5grove/`` routes in a real browser.

    python tools/h5web_check.py [--workdir DIR] [--version 17.0.0] [--keep] [--shots]

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
   the Inspect panel, the slice sliders of the 3-D dataset, the search box and the export
   links (``npy``/``tiff``/``csv``) fetched for real;
5. prints every failed request, every h5grove answer of 4xx/5xx, every console error and page
   error, and every error H5Web shows in its visualizer, then ``OK`` or ``FAIL`` (exit 1).

The errors H5Web is expected to show (the dangling soft link, the external link to a file that
is not a domain) are listed as such, not counted as failures.
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
<link rel="stylesheet" href="main.css"></head><body style="margin:0"><div id="root"></div>
<script src="main.js"></script></body></html>
"""

#: Paths where H5Web rightly shows an error (nothing to resolve), with what it says.
EXPECTED_ERRORS = {
    "/links/dangling": "soft link",
    "/links/external": "",
}


def make_file(path: Path) -> Path:
    """One of every kind of object H5Web shows."""
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "H5Web check"
        f.attrs["version"] = np.array([1, 2, 3], dtype="i4")
        f.attrs["flag"] = np.bool_(True)
        f.attrs["ratio"] = np.float32(0.5)
        f.attrs["z"] = np.complex128(1 + 2j)
        f.attrs["nothing"] = h5py.Empty("f4")
        f.attrs["default"] = "entry"
        d = f.create_group("data")
        d.attrs["description"] = "numeric and other datasets"
        x = np.linspace(0, 12, 500)
        line = d.create_dataset("line", data=np.sin(x) * 5 + 1)
        line.attrs["units"] = "mm"
        img = (np.add.outer(np.arange(50), np.arange(80)) % 37).astype("f4") - 10.5
        d.create_dataset("image", data=img, chunks=(16, 16), compression="gzip")
        base = np.arange(30 * 40, dtype="i2").reshape(30, 40)
        d.create_dataset("cube", data=np.stack([(base % (7 + 3 * k)) * (k + 1) for k in range(6)]))
        d.create_dataset("int64", data=np.arange(-50, 50, dtype="i8") ** 3)
        d.create_dataset("uint8", data=np.arange(200, dtype="u1"))
        d.create_dataset("half", data=np.linspace(-1, 1, 64, dtype="f2"))
        d.create_dataset("bigendian", data=np.arange(100, dtype=">i4") * 7)
        d.create_dataset("ldouble", data=np.linspace(0, 1, 16).astype(np.longdouble))
        rows = np.array([(1, b"alpha", 0.5), (2, b"beta", 1.5), (3, b"gamma", -2.25)],
                        dtype=[("id", "<i4"), ("name", "S8"), ("value", "<f8")])
        d.create_dataset("compound", data=rows)
        d.create_dataset("strings", data=["red", "grün", "blue"], dtype=h5py.string_dtype())
        d.create_dataset("fixed_strings", data=np.array([b"one", b"two", b"three"], dtype="S6"))
        d.create_dataset("bools", data=np.array([True, False, True, True]))
        d.create_dataset("bools2d", data=np.arange(12).reshape(3, 4) % 3 == 0)
        d.create_dataset("complex", data=np.exp(1j * x[:100]))
        d.create_dataset("complex2d", data=(np.add.outer(np.arange(20), 1j * np.arange(30))).astype("c8"))
        colors = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="u1")
        d.create_dataset("enum", data=np.array([0, 1, 2, 1, 0], dtype="u1"), dtype=colors)
        d.create_dataset("opaque", data=np.array([b"\x01\x02\x03\x04"] * 3, dtype="V4"))
        d.create_dataset("vlen_ints", data=np.array([np.arange(3), np.arange(5)], dtype=object),
                         dtype=h5py.vlen_dtype("i4"))
        d.create_dataset("array_type", data=np.zeros(4, dtype=np.dtype(("<f4", (3,)))))
        d.create_dataset("scalar", data=3.25)
        d.create_dataset("scalar_int", data=np.int32(-7))
        d.create_dataset("scalar_str", data="hello", dtype=h5py.string_dtype())
        d.create_dataset("scalar_bool", data=np.bool_(False))
        d.create_dataset("scalar_complex", data=np.complex64(3 - 4j))
        d.create_dataset("empty", data=h5py.Empty("f4"))
        links = f.create_group("links")
        links["soft"] = h5py.SoftLink("/data/line")
        links["dangling"] = h5py.SoftLink("/nowhere")
        links["external"] = h5py.ExternalLink("other.h5", "/some/path")
        images = f.create_group("images")
        yy, xx = np.mgrid[0:60, 0:80]
        rgb = np.stack([xx * 3, yy * 4, (xx + yy) * 2], axis=-1).astype("u1")
        im = images.create_dataset("rgb", data=rgb)
        im.attrs["CLASS"] = np.bytes_("IMAGE")
        im.attrs["IMAGE_VERSION"] = np.bytes_("1.2")
        im.attrs["IMAGE_SUBCLASS"] = np.bytes_("IMAGE_TRUECOLOR")
        im.attrs["INTERLACE_MODE"] = np.bytes_("INTERLACE_PIXEL")
        entry = f.create_group("entry")
        entry.attrs["NX_class"] = "NXentry"
        entry.attrs["default"] = "map"
        nxmap = entry.create_group("map")
        nxmap.attrs["NX_class"] = "NXdata"
        nxmap.attrs["signal"] = "counts"
        nxmap.attrs["axes"] = np.array(["y", "x"], dtype=h5py.string_dtype())
        counts = nxmap.create_dataset("counts", data=img * 2)
        counts.attrs["long_name"] = "Counts"
        nxmap.create_dataset("x", data=np.linspace(-1, 1, 80)).attrs["units"] = "mm"
        nxmap.create_dataset("y", data=np.linspace(0, 5, 50)).attrs["units"] = "mm"
        spectrum = entry.create_group("spectrum")
        spectrum.attrs["NX_class"] = "NXdata"
        spectrum.attrs["signal"] = "intensity"
        spectrum.attrs["axes"] = "energy"
        spectrum.create_dataset("intensity", data=np.exp(-((x - 6) ** 2)))
        spectrum.create_dataset("intensity_errors", data=np.full(500, 0.05))
        spectrum.create_dataset("energy", data=x * 100).attrs["units"] = "eV"
        stack = entry.create_group("stack")
        stack.attrs["NX_class"] = "NXdata"
        stack.attrs["signal"] = "frames"
        stack.attrs["interpretation"] = "image"
        stack.create_dataset("frames", data=np.stack([img * k for k in range(1, 5)]))
        f["named_type"] = np.dtype("<i8")
    return path


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
        self.expected: list[str] = []
        self.requests: dict[str, int] = {}
        page.on("console", lambda m: m.type == "error" and self.add(f"console error: {m.text[:300]}"))
        page.on("pageerror", lambda e: self.add(f"page error: {str(e)[:300]}"))
        page.on("requestfailed", lambda r: self.add(f"request failed: {r.url[:200]} ({r.failure})"))

        def response(r: Any) -> None:
            if r.url.startswith(server + "/h5grove/"):
                route = r.url[len(server):].split("?")[0]
                self.requests[route] = self.requests.get(route, 0) + 1
                if r.status >= 400:
                    self.add(f"h5grove {r.status}: {r.url[len(server):][:250]} -> {r.text()[:200]}")

        page.on("response", response)

    def add(self, text: str) -> None:
        line = f"[{self.where}] {text}"
        if self.where in EXPECTED_ERRORS and "404" not in text and "error" in text.lower():
            self.expected.append(line)
        else:
            self.problems.append(line)


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
    for sel in ("[class*=error]", "[role=alert]"):
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


def slice_cube(page: Page, rec: Recorder) -> int:
    """Move the slider of the first dimension of the 3-D dataset; returns the slices fetched."""
    rec.where = "/data/cube"
    select(page, "/data/cube")
    page.locator("[role=tab]", has_text="Heatmap").first.click()
    settle(page)
    before = rec.requests.get("/h5grove/data", 0)
    slider = page.locator("[role=slider]").first
    slider.focus()
    for _ in range(3):
        page.keyboard.press("ArrowUp")
        settle(page)
    page.locator("[role=tab]", has_text="Matrix").first.click()
    settle(page)
    page.keyboard.press("Tab")
    return rec.requests.get("/h5grove/data", 0) - before


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
        subprocess.run([sys.executable, "-m", "h5lake.cli", "load", str(source), DOMAIN, "-e", server.endpoint,
                        "-u", auth[0], "-p", auth[1]], check=True)
        listing = requests.get(f"{server.endpoint}/h5grove/paths", params={"file": DOMAIN}, timeout=30).json()
        chromium = shutil.which("chromium")
        if chromium is None:
            sys.exit("Debian's chromium is needed")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu",
                                                                         "--use-gl=swiftshader",
                                                                         "--enable-unsafe-swiftshader"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            rec = Recorder(page, server.endpoint)
            page.goto(f"{app_url}/index.html?url={server.endpoint}/h5grove&file={DOMAIN}")
            page.locator('[role=tree] [role=treeitem][data-path="/data"]').wait_for(timeout=30000)
            settle(page)
            seen = visit_all(page, rec, listing, shots)
            fetched = slice_cube(page, rec)
            if fetched < 3:
                rec.problems.append(f"[/data/cube] moving the slider 3 times fetched {fetched} slices")
            meta = inspect(page, rec, "/images/rgb")
            for word in ("IMAGE_SUBCLASS", "IMAGE_TRUECOLOR", "Unsigned", "60 x 80 x 3"):
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
        for line in rec.expected:
            print("expected:", line)
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
