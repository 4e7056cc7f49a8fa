"""The web view's picture of a dataset and of where it is: an image's proportions, the names of
its dimensions, how its values are stored (contiguous, or chunks in the files of an appended
series), the sidebar of a folder, and a page opened with its login in the URL.

Debian's chromium driven by Playwright, against a server of its own that may link the test's
files (``--allow-source``), so that a domain can be built with ``h5lake load --append``.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
import pytest
import requests
from playwright.sync_api import Browser, Page, Request, expect, sync_playwright
from tests.support.server import USERS, start_server

pytestmark = pytest.mark.one_backend  # the page in a browser; its reads are the service's, the same on every store

USER = "test_user1"
DAYS = 3


@dataclass(frozen=True)
class Site:
    endpoint: str
    domain: str  # copied from one file
    series: str  # appended from DAYS files
    days: list[Path]


def make_files(folder: Path) -> tuple[Path, list[Path]]:
    one = folder / "one.h5"
    with h5py.File(one, "w") as f:
        f.create_dataset("square", data=np.add.outer(np.arange(64), np.arange(64)).astype("f4"))
        f.create_dataset("contig", data=np.arange(500.0))  # h5py's default: contiguous
        time = f.create_dataset("time", data=np.arange(3.0))
        time.make_scale("time")  # its NAME names dimension 0 of /stack
        stack = f.create_dataset("stack", data=np.arange(3 * 4 * 12 * 16, dtype="f4").reshape(3, 4, 12, 16))
        stack.dims[0].attach_scale(time)
        stack.dims[1].label = "level"  # DIMENSION_LABELS
    days = []
    for day in range(DAYS):
        path = folder / f"day{day}.h5"
        with h5py.File(path, "w") as f:
            time = f.create_dataset("time", data=np.arange(2.0) + 2 * day, chunks=(2,), maxshape=(None,))
            time.make_scale("time")
            temp = f.create_dataset("temp", data=np.full((2, 10, 10), day, "f8"), chunks=(2, 10, 10), maxshape=(None, 10, 10))
            temp.dims[0].attach_scale(time)
        days.append(path)
    return one, days


def h5lake_load(endpoint: str, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "h5lake.cli.command", "load", "-q", "-e", endpoint, "-u", USER, "-p", USERS[USER], *args],
                   check=True, capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    files = tmp_path_factory.mktemp("layout-files")
    one, days = make_files(files)
    server = start_server(tmp_path_factory.mktemp("layout-server"), extra=["--allow-source", str(files)])
    try:
        home = f"/home/{USER}"
        r = requests.put(server.endpoint + "/", params={"domain": home}, json={"folder": True}, auth=(USER, USERS[USER]), timeout=30)
        assert r.status_code == 201, r.text
        h5lake_load(server.endpoint, str(one), f"{home}/one.h5")
        h5lake_load(server.endpoint, "--append", "--extend", "time", *map(str, days), f"{home}/series.h5")
        yield Site(server.endpoint, f"{home}/one.h5", f"{home}/series.h5", days)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("the browser tests need Debian's chromium (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("screenshots")
    print(f"\nscreenshots in {path}")
    return path


def open_page(browser: Browser, login: bool = True) -> Page:
    creds = {"username": USER, "password": USERS[USER]} if login else None
    context = browser.new_context(http_credentials=creds, viewport={"width": 1400, "height": 950})  # type: ignore[arg-type]
    return context.new_page()


def visit(page: Page, site: Site, domain: str, path: str) -> None:
    page.goto(f"{site.endpoint}/view/?domain={domain}&path={path}")
    expect(page.locator("h2")).to_contain_text(path)


def canvas_size(page: Page) -> tuple[int, int]:
    return page.evaluate("() => { const c = document.getElementById('heatmap'); return [c.width, c.height]; }")


def test_square_image_keeps_its_aspect_ratio(browser: Browser, site: Site, shots: Path) -> None:
    """A square dataset is drawn square (H5Web's default aspect); unticking "keep aspect
    ratio" stretches it across the width, and the choice holds for the next image."""
    page = open_page(browser)
    visit(page, site, site.domain, "/square")
    expect(page.locator("#heatmap")).to_be_visible()
    width, height = canvas_size(page)
    assert width == height and height > 300, (width, height)
    page.screenshot(path=shots / "square.png", full_page=True)
    page.locator("#keep-ratio").uncheck()
    expect(page.locator("#heatmap")).not_to_have_attribute("width", str(width))
    wide, high = canvas_size(page)
    available = page.evaluate("() => document.querySelector('.plot').clientWidth - 170")
    assert wide == available and wide > 1.5 * high, (wide, high, available)
    page.locator("#tree .node[data-path='/stack']").click()
    expect(page.locator("#keep-ratio")).not_to_be_checked()
    page.locator("#keep-ratio").check()
    expect(page.locator("#heatmap")).to_have_attribute("width", str(round(int(page.locator("#heatmap").get_attribute("height") or 0) * 16 / 12)))
    page.context.close()


def test_dimensions_are_named_and_scales_shown_by_path(browser: Browser, site: Site, shots: Path) -> None:
    """Sliders say a dimension's name (its scale's NAME, or DIMENSION_LABELS), and the
    DIMENSION_LIST attribute shows the scales' paths, not the ids of the REST API."""
    page = open_page(browser)
    visit(page, site, site.domain, "/stack")
    expect(page.locator("label.dim-label[data-dim='0']")).to_contain_text("time (dim 0), of 3")
    expect(page.locator("label.dim-label[data-dim='1']")).to_contain_text("level (dim 1), of 4")
    row = page.locator("#attributes tr", has_text="DIMENSION_LIST")
    expect(row.locator("td.value")).to_have_text('[["/time"],[],[],[]]')
    expect(page.locator("#attributes")).not_to_contain_text("datasets/")
    page.get_by_role("button", name="Table").click()
    expect(page.locator("label.dim-label[data-dim='0']")).to_contain_text("time (dim 0)")
    page.screenshot(path=shots / "named-dims.png", full_page=True)
    page.context.close()


def info(page: Page) -> dict[str, str]:
    rows = page.locator("#dataset-info tr").evaluate_all("rs => rs.map(r => [r.cells[0].innerText, r.cells[1].innerText])")
    return dict(rows)


def test_contiguous_dataset_shows_its_layout_not_chunks(browser: Browser, site: Site) -> None:
    page = open_page(browser)
    visit(page, site, site.domain, "/contig")
    expect(page.locator("#dataset-info")).to_contain_text("contiguous (H5D_CONTIGUOUS)")
    shown = info(page)
    assert "chunk shape" not in shown and "allocated chunks" not in shown, shown
    assert shown["allocated bytes"].startswith("3.9 KiB"), shown
    page.context.close()


def test_appended_dataset_shows_its_files_and_chunks(browser: Browser, site: Site, shots: Path) -> None:
    """A dataset appended from several files reads each chunk from the file its chunk table
    names: the page lists those files, each with its chunks, and counts the chunks there."""
    page = open_page(browser)
    visit(page, site, site.series, "/temp")
    expect(page.locator("#dataset-info")).to_contain_text("H5D_CHUNKED_REF_INDIRECT")
    expect(page.locator("#dataset-info")).to_contain_text(f"{DAYS} of {DAYS}")  # counted after the rest is shown
    shown = info(page)
    assert shown["chunk shape"] == "2 × 10 × 10"
    assert shown["allocated chunks"] == f"{DAYS} of {DAYS}"
    assert shown["allocated bytes"].startswith("4.7 KiB (logical 4.7 KiB)"), shown
    assert shown[f"linked files ({DAYS})"].splitlines() == [f"{day} (1 chunk)" for day in site.days]
    assert "?" not in page.locator("#dataset-info").inner_text()
    page.screenshot(path=shots / "appended.png", full_page=True)
    page.context.close()


@pytest.mark.slow  # 18,000 chunks linked (~10 s)
def test_long_chunk_table_is_not_read_to_count(browser: Browser, site: Site, tmp_path: Path) -> None:
    """A chunk table too long to read for the page (over TABLE_COUNT_LIMIT entries, 16,384) is
    not read: its files are listed uncounted, and the page claims no chunk count."""
    days = []
    for day in range(DAYS):
        days.append(tmp_path / f"fine{day}.h5")
        with h5py.File(days[-1], "w") as f:
            f.create_dataset("fine", data=np.arange(6000.0), chunks=(1,), maxshape=(None,))
    files = site.days[0].parent
    for day in days:  # under the allowed root
        shutil.move(day, files / day.name)
    domain = f"/home/{USER}/fine.h5"
    h5lake_load(site.endpoint, "--append", "--extend", "0", *(str(files / d.name) for d in days), domain)
    login = (USER, USERS[USER])
    linked = requests.get(f"{site.endpoint}/view/api/linked", params={"domain": domain, "path": "/fine"}, auth=login, timeout=60).json()
    assert linked["countable"] is False and "allocatedChunks" not in linked
    assert linked["files"] == [{"uri": str(files / d.name), "chunks": None} for d in days]
    page = open_page(browser)
    visit(page, site, domain, "/fine")
    expect(page.locator("#dataset-info")).to_contain_text(f"linked files ({DAYS})")
    assert info(page)["allocated chunks"] == "not counted (the chunk table is too long to read here)"
    page.context.close()


def test_linked_chunks_of_a_dataset_not_linked(site: Site) -> None:
    r = requests.get(f"{site.endpoint}/view/api/linked", params={"domain": site.domain, "path": "/contig"},
                     auth=(USER, USERS[USER]), timeout=60)
    assert r.status_code == 400 and "not a linked dataset" in r.json()["error"]["message"]


def test_folder_page_has_a_sidebar(browser: Browser, site: Site, shots: Path) -> None:
    """A folder page's sidebar shows the folders down to it and what it holds; a domain
    there opens on a click."""
    page = open_page(browser)
    page.goto(f"{site.endpoint}/view/?folder=/home/{USER}")
    expect(page.locator("#folder")).to_be_visible()
    listed = page.locator("#folder tbody tr a").evaluate_all("as => as.map(a => new URLSearchParams(a.search).get('domain'))")
    assert {site.domain, site.series} <= set(listed)
    tree = page.locator("#tree .node").evaluate_all("ns => ns.map(n => n.dataset.path)")
    assert tree == ["/", "/home", f"/home/{USER}", *listed]
    expect(page.locator("#tree .node.selected")).to_have_attribute("data-path", f"/home/{USER}")
    page.screenshot(path=shots / "folder-sidebar.png")
    page.locator(f"#tree .node[data-path='{site.series}']").click()
    expect(page.locator("#tree .node[data-path='/temp']")).to_be_visible()
    page.context.close()


def test_login_in_the_url(browser: Browser, site: Site, shots: Path) -> None:
    """``http://user:password@host/view/...`` (no other login given to the browser): the page
    and every request it makes are answered, as they are for a browser that asked for the login."""
    page = open_page(browser, login=False)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("response", lambda r: errors.append(f"{r.status}: {r.url}") if r.status >= 400 else None)
    calls: list[Request] = []
    page.on("request", lambda r: calls.append(r) if "/view/api/" in r.url or "/datasets/" in r.url else None)
    host = site.endpoint.removeprefix("http://")
    page.goto(f"http://{USER}:{USERS[USER]}@{host}/view/?domain={site.domain}&path=/square")
    expect(page.locator("#heatmap")).to_be_visible()
    expect(page.locator("#message")).to_be_hidden()
    page.locator("#tree .node[data-path='/stack']").click()
    expect(page.locator("label.dim-label[data-dim='0']")).to_contain_text("time")
    page.get_by_role("button", name="Table").click()
    expect(page.locator("table#values")).to_be_visible()
    with page.expect_download() as download:
        page.locator("#download-csv").click()
    rows = Path(download.value.path()).read_text().split()
    assert [float(v) for v in rows[0].split(",")] == list(np.arange(16.0))  # /stack[0, 0, 0]
    page.screenshot(path=shots / "login-in-url.png")
    assert errors == []
    login = "Basic " + base64.b64encode(f"{USER}:{USERS[USER]}".encode()).decode()
    assert calls and all(r.all_headers().get("authorization") == login for r in calls)  # the URL's, kept by the browser
    page.context.close()
