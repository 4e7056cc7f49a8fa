"""The web view in a real browser: Debian's chromium driven by Playwright, against a real server.

Each test opens the page as a person would and checks what they would see. Screenshots are
saved under the pytest temporary directory (the path is printed; ``-s`` shows it).
"""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np
import orjson
import pytest
import requests
from playwright.sync_api import Browser, Page, expect, sync_playwright
from tests.support.server import USERS
from tests.view.conftest import ViewDomain

pytestmark = pytest.mark.one_backend  # the page in a browser; its reads are the service's, the same on every store


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Module-scoped: Playwright's sync API runs an event loop on the main thread while it is
    open, and pytest-asyncio cannot run the async tests of other modules beside it."""
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("the browser tests need Debian's chromium (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("screenshots")
    print(f"\nscreenshots in {path}")
    return path


def open_page(browser: Browser, user: str | None = "test_user1") -> Page:
    creds = {"username": user, "password": USERS[user]} if user else None
    context = browser.new_context(http_credentials=creds, viewport={"width": 1400, "height": 950})  # type: ignore[arg-type]
    return context.new_page()


def visit(page: Page, v: ViewDomain, path: str | None = None) -> None:
    url = f"{v.endpoint}/view/?domain={v.domain}" + (f"&path={path}" if path else "")
    page.goto(url)
    expect(page.locator("#tree .node").first).to_be_visible()


def h5(v: ViewDomain, path: str) -> np.ndarray:
    with h5py.File(v.file) as f:
        return f[path][()]


def canvas_pixels(page: Page) -> list[int]:
    """The heatmap's RGBA pixels, sampled on a grid."""
    return page.evaluate(
        """() => { const c = document.getElementById('heatmap'); const d = c.getContext('2d')
            .getImageData(0, 0, c.width, c.height).data; const out = [];
            for (let i = 0; i < d.length; i += 4 * 97) out.push(d[i], d[i + 1], d[i + 2]); return out; }"""
    )


def test_tree_shows_every_object(browser: Browser, view_domain: ViewDomain, shots: Path) -> None:
    page = open_page(browser)
    visit(page, view_domain)
    page.get_by_role("button", name="members of many").click()  # starts collapsed: 150 members
    expected = {"/"}
    with h5py.File(view_domain.file) as f:
        f.id.links.visit(lambda name: expected.add("/" + name.decode()))
    shown = set(page.locator("#tree .node").evaluate_all("nodes => nodes.map(n => n.dataset.path)"))
    assert shown == expected
    kinds = dict(page.locator("#tree .node").evaluate_all("ns => ns.map(n => [n.dataset.path, n.dataset.kind])"))
    assert kinds["/images"] == "group" and kinds["/mytype"] == "datatype" and kinds["/line"] == "dataset"
    expect(page.locator("#attributes")).to_contain_text("view test")  # the root's attributes
    page.screenshot(path=shots / "tree.png", full_page=True)
    page.context.close()


def test_folder_listing_shows_owner_and_size(browser: Browser, view_domain: ViewDomain, shots: Path) -> None:
    page = open_page(browser)
    page.goto(f"{view_domain.endpoint}/view/?folder=/home/test_user1")
    name = view_domain.domain.rsplit("/", 1)[-1]
    row = page.locator("#folder tr", has_text=name)
    expect(row).to_contain_text("test_user1")
    expect(row).to_contain_text(re.compile(r"\d (KiB|MiB)"))
    row.locator("a").click()
    expect(page.locator("#tree .node[data-path='/images/cube']")).to_be_visible()
    page.screenshot(path=shots / "folder.png")
    page.context.close()


def test_image_colour_scale_matches_the_data(browser: Browser, view_domain: ViewDomain, shots: Path) -> None:
    page = open_page(browser)
    visit(page, view_domain, "/images/image")
    expect(page.locator("#heatmap")).to_be_visible()
    image = h5(view_domain, "/images/image")
    assert float(page.locator("#cbar-min").inner_text()) == pytest.approx(float(image.min()))
    assert float(page.locator("#cbar-max").inner_text()) == pytest.approx(float(image.max()))
    pixels = canvas_pixels(page)
    colours = {tuple(pixels[i : i + 3]) for i in range(0, len(pixels), 3)}
    assert len(colours) > 20, "the image is blank or flat"
    expect(page.locator("#dataset-info")).to_contain_text("16 × 16")
    expect(page.locator("#dataset-info")).to_contain_text("gzip")
    expect(page.locator("#attributes")).to_contain_text("units")
    expect(page.locator("#attributes")).to_contain_text("counts")
    page.screenshot(path=shots / "image.png", full_page=True)
    page.context.close()


def test_slider_changes_the_picture(browser: Browser, view_domain: ViewDomain, shots: Path) -> None:
    page = open_page(browser)
    visit(page, view_domain, "/images/cube")
    cube = h5(view_domain, "/images/cube")
    expect(page.locator("#cbar-max")).to_have_text(str(int(cube[0].max())))
    before = canvas_pixels(page)
    slider = page.locator("input.dim-slider[data-dim='0']")
    slider.fill("3")
    slider.dispatch_event("change")
    expect(page.locator("#cbar-max")).to_have_text(str(int(cube[3].max())))
    expect(page.locator("#cbar-min")).to_have_text(str(int(cube[3].min())))
    assert canvas_pixels(page) != before
    page.screenshot(path=shots / "cube-slice-3.png", full_page=True)
    page.context.close()


def test_zoom_reads_the_region_at_full_resolution(browser: Browser, view_domain: ViewDomain) -> None:
    page = open_page(browser)
    visit(page, view_domain, "/images/image")
    canvas = page.locator("#heatmap")
    expect(canvas).to_be_visible()
    box = canvas.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + 5, box["y"] + 5)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=5)
    page.mouse.up()
    expect(page.locator(".plot[data-selection]")).not_to_have_attribute("data-selection", "0:40,0:60")
    selection = page.locator(".plot").get_attribute("data-selection")
    assert selection is not None
    rows, cols = (tuple(int(x) for x in part.split(":")) for part in selection.split(","))
    zoomed = h5(view_domain, "/images/image")[rows[0] : rows[1], cols[0] : cols[1]]
    assert float(page.locator("#cbar-max").inner_text()) == pytest.approx(float(zoomed.max()))
    # the download link carries exactly the visible selection
    href = page.locator("#download-npy").get_attribute("href")
    data = page.request.get(view_domain.endpoint + str(href)).body()
    np.testing.assert_array_equal(np.load(io.BytesIO(data)), zoomed)
    page.context.close()


def test_line_plot(browser: Browser, view_domain: ViewDomain, shots: Path) -> None:
    page = open_page(browser)
    visit(page, view_domain, "/line")
    plot = page.locator("#lineplot")
    expect(plot).to_be_visible()
    assert plot.get_attribute("data-points") == str(len(h5(view_domain, "/line")))
    expect(page.locator(".status").first).to_contain_text("every value")
    csv = page.request.get(view_domain.endpoint + str(page.locator("#download-csv").get_attribute("href"))).text()
    np.testing.assert_allclose(np.array([float(x) for x in csv.split()]), h5(view_domain, "/line"))
    page.screenshot(path=shots / "line.png", full_page=True)
    page.context.close()


def test_table_shows_compound_and_string_values(browser: Browser, view_domain: ViewDomain, shots: Path) -> None:
    page = open_page(browser)
    visit(page, view_domain, "/table")
    table = page.locator("table#values")
    expect(table).to_be_visible()
    assert table.locator("thead th").all_inner_texts() == ["#", "id", "name", "value"]
    rows = [r.locator("td").all_inner_texts() for r in table.locator("tbody tr").all()]
    expected = h5(view_domain, "/table")
    assert rows == [[str(r["id"]), r["name"].decode(), str(float(r["value"])).removesuffix(".0")] for r in expected]
    page.screenshot(path=shots / "table.png", full_page=True)
    page.locator("#tree .node[data-path='/names']").click()
    expect(page.locator("table#values tbody td")).to_have_text(["red", "green", "blue"])
    page.context.close()


def test_scalar_shows_its_value(browser: Browser, view_domain: ViewDomain) -> None:
    page = open_page(browser)
    visit(page, view_domain, "/scalar")
    expect(page.locator("#scalar-value")).to_have_text("3.25")
    page.context.close()


def test_pages_load_without_browser_errors(browser: Browser, view_domain: ViewDomain) -> None:
    """Every request the page makes (its icon included) succeeds and nothing is logged as an
    error in the browser's console, for each kind of object a person opens."""
    page = open_page(browser)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: errors.append(f"failed: {r.url}"))
    page.on("response", lambda r: errors.append(f"{r.status}: {r.url}") if r.status >= 400 else None)
    for path in (None, "/images/cube", "/line", "/scalar", "/mytype"):
        visit(page, view_domain, path)
        page.wait_for_load_state("networkidle")
    icon = page.evaluate("() => document.querySelector('link[rel=icon]').href")
    assert requests.get(icon, auth=("test_user1", USERS["test_user1"]), timeout=10).status_code == 200
    assert errors == []
    page.context.close()


def test_search_finds_paths(browser: Browser, view_domain: ViewDomain) -> None:
    page = open_page(browser)
    visit(page, view_domain)
    page.locator("#search").fill("cub")
    hit = page.locator("#search-results .hit")
    expect(hit).to_have_count(1)
    hit.click()
    expect(page.locator("h2")).to_contain_text("/images/cube")
    assert "path=%2Fimages%2Fcube" in page.url or "path=/images/cube" in page.url
    page.context.close()


def test_user_without_read_sees_a_refusal(browser: Browser, view_domain: ViewDomain, shots: Path) -> None:
    page = open_page(browser, "test_user2")
    page.goto(f"{view_domain.endpoint}/view/?domain={view_domain.domain}&path=/images/image")
    expect(page.locator("#message.refusal")).to_contain_text("no read access")
    assert page.locator("#tree .node").count() == 0
    assert page.locator("#heatmap").count() == 0 and page.locator("table#values").count() == 0
    page.screenshot(path=shots / "refusal.png")
    page.context.close()


def test_no_credentials_get_a_login_prompt(view_domain: ViewDomain) -> None:
    for url in ("/view/", f"/view/api/object?domain={view_domain.domain}&path=/"):
        r = requests.get(view_domain.endpoint + url, timeout=10)
        assert r.status_code == 401, url
        assert r.headers["www-authenticate"] == 'Basic realm="h5lake"'
    assert requests.get(view_domain.endpoint + "/view/static/app.js", timeout=10).status_code == 200


def test_line_with_infinities_is_drawn(browser: Browser, view_domain: ViewDomain) -> None:
    """An infinity among the values leaves a gap, as NaN does; the axis spans the finite values."""
    page = open_page(browser)
    visit(page, view_domain, "/spiky")
    expect(page.locator("#lineplot")).to_be_visible()
    spiky = h5(view_domain, "/spiky")
    finite = spiky[np.isfinite(spiky)]
    # the line's blue pixels (an infinity left the plot empty)
    page.wait_for_function(
        """() => { const c = document.querySelector('#lineplot canvas'); const d = c.getContext('2d')
            .getImageData(0, 0, c.width, c.height).data; let n = 0;
            for (let i = 0; i < d.length; i += 4) if (d[i + 2] > d[i] + 60) n += 1; return n > 200; }""",
        timeout=10_000,
    )
    # the value axis spans about the finite values
    low, high = (float(v) for v in str(page.locator("#lineplot").get_attribute("data-y-range")).split(","))
    assert finite.min() - 1 <= low <= finite.min() and finite.max() <= high <= finite.max() + 1
    page.context.close()


def test_late_answer_for_an_earlier_click_is_not_shown(browser: Browser, view_domain: ViewDomain) -> None:
    """Clicking one object, then another before the first arrived, shows the second."""
    page = open_page(browser)
    visit(page, view_domain, "/scalar")
    held: list = []
    page.route("**/view/api/object?*images%2Fimage*", lambda route: held.append(route))
    page.locator("#tree .node[data-path='/images/image']").click()
    page.locator("#tree .node[data-path='/names']").click()
    expect(page.locator("table#values tbody td")).to_have_text(["red", "green", "blue"])
    assert len(held) == 1
    with page.expect_response(lambda r: "images%2Fimage" in r.url) as late:
        held[0].continue_()
    late.value.finished()
    page.evaluate("() => new Promise((done) => setTimeout(done, 100))")  # let the page handle it
    expect(page.locator("h2")).to_contain_text("/names")
    assert page.locator("#heatmap").count() == 0
    page.context.close()


def test_missing_object_replaces_the_previous_one(browser: Browser, view_domain: ViewDomain) -> None:
    """Opening a path that is gone says so, and does not leave the previous object on screen."""
    page = open_page(browser)
    visit(page, view_domain, "/line")
    expect(page.locator("#lineplot")).to_be_visible()
    page.evaluate("() => { history.pushState(null, '', location.search.replace(/path=[^&]*/, 'path=/gone')); "
                  "dispatchEvent(new PopStateEvent('popstate')); }")
    expect(page.locator("#message")).to_contain_text("/gone")
    assert page.locator("#lineplot").count() == 0 and page.locator("h2").count() == 0
    page.context.close()


def test_table_pages_columns_and_jumps_to_a_row(browser: Browser, view_domain: ViewDomain) -> None:
    page = open_page(browser)
    visit(page, view_domain, "/matrix")
    page.locator(".tab[data-view='table']").click()
    matrix = h5(view_domain, "/matrix")
    first = page.locator("table#values tbody tr").first.locator("td")
    expect(first).to_have_count(50)
    page.get_by_role("button", name="columns ▶").click()
    expect(page.locator("table#values thead th").nth(1)).to_have_text("50")
    expect(first.first).to_have_text(str(matrix[0, 50]))
    page.locator("#goto-row").fill("7")
    page.locator("#goto-row").dispatch_event("change")
    expect(page.locator("table#values tbody th").first).to_have_text("7")
    expect(first.first).to_have_text(str(matrix[7, 50]))
    page.context.close()


def test_table_of_a_stack_follows_the_slider(browser: Browser, view_domain: ViewDomain) -> None:
    """A 3-D dataset's table is the 2-D slice the slider picks, as the image is."""
    page = open_page(browser)
    visit(page, view_domain, "/images/cube")
    page.locator(".tab[data-view='table']").click()
    cube = h5(view_domain, "/images/cube")
    slider = page.locator("input.dim-slider[data-dim='0']")
    slider.fill("2")
    slider.dispatch_event("change")
    expect(page.locator("table#values tbody tr").nth(5).locator("td")).to_have_text([str(v) for v in cube[2, 5]])
    page.context.close()


def test_large_group_starts_collapsed_and_opens_to_a_member(browser: Browser, view_domain: ViewDomain) -> None:
    """The 150 members of /many do not push the rest of the tree out of sight; a link to one
    of them opens the group and shows that member."""
    page = open_page(browser)
    visit(page, view_domain)
    expect(page.locator("#tree .node[data-path='/names']")).to_be_in_viewport()
    visit(page, view_domain, "/many/m149")
    member = page.locator("#tree .node[data-path='/many/m149']")
    expect(member).to_have_class("node group selected")
    expect(member).to_be_in_viewport()
    page.context.close()


def complex_text(z: complex) -> str:
    part = lambda x: str(float(x)).removesuffix(".0")
    return f"{part(z.real)} {'−' if z.imag < 0 else '+'} {part(abs(z.imag))}i"


def test_complex_numbers_read_as_a_plus_bi(browser: Browser, view_domain: ViewDomain) -> None:
    page = open_page(browser)
    visit(page, view_domain, "/waves")
    expect(page.locator("table#values tbody td")).to_have_text([complex_text(z) for z in h5(view_domain, "/waves")])
    with h5py.File(view_domain.file) as f:
        gain = complex(f["waves"].attrs["gain"])
    expect(page.locator("#attributes tr", has_text="gain").locator("td.value")).to_have_text(complex_text(gain))
    page.context.close()


def test_complex_scalar_reads_as_a_plus_bi(browser: Browser, view_domain: ViewDomain) -> None:
    page = open_page(browser)
    visit(page, view_domain, "/impedance")
    expect(page.locator("#scalar-value")).to_have_text(complex_text(complex(h5(view_domain, "/impedance"))))
    page.context.close()


def test_long_attribute_is_all_readable(browser: Browser, view_domain: ViewDomain) -> None:
    """A long text attribute wraps (and scrolls) instead of being cut at the cell's edge."""
    page = open_page(browser)
    visit(page, view_domain, "/waves")
    cell = page.locator("#attributes tr", has_text="notes").locator("td.value")
    with h5py.File(view_domain.file) as f:
        expect(cell).to_have_text(f["waves"].attrs["notes"])
    assert cell.evaluate("(td) => [...td.querySelectorAll('*'), td].every((e) => e.scrollWidth <= e.clientWidth + 1)")
    page.context.close()


def test_true_colour_image_shows_its_colours(browser: Browser, view_domain: ViewDomain) -> None:
    """A rows x columns x 3 image marked as HDF5 images are (CLASS=IMAGE, IMAGE_TRUECOLOR)."""
    page = open_page(browser)
    visit(page, view_domain, "/photo")
    canvas = page.locator("#rgb-image")
    expect(canvas).to_be_visible()
    photo = h5(view_domain, "/photo")
    size = canvas.evaluate("(c) => [c.width, c.height]")
    for r, c in ((0, 0), (7, 11), (19, 29), (12, 3)):
        x, y = int((c + 0.5) * size[0] / 30), int((r + 0.5) * size[1] / 20)
        pixel = canvas.evaluate(f"(c) => [...c.getContext('2d').getImageData({x}, {y}, 1, 1).data.slice(0, 3)]")
        assert pixel == list(photo[r, c]), (r, c)
    page.context.close()


def test_tree_keys_move_open_and_close(browser: Browser, view_domain: ViewDomain) -> None:
    """Arrow keys move through the tree, open and close groups; Enter opens the object."""
    page = open_page(browser)
    visit(page, view_domain)
    page.locator("#tree .node[data-path='/images']").focus()
    page.keyboard.press("ArrowLeft")  # close /images
    expect(page.locator("#tree .node[data-path='/images/cube']")).to_be_hidden()
    page.keyboard.press("ArrowRight")  # open it again
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(page.locator("#tree .node[data-path='/images/image']")).to_be_focused()
    page.keyboard.press("ArrowLeft")  # a dataset: to its group
    expect(page.locator("#tree .node[data-path='/images']")).to_be_focused()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Enter")
    with h5py.File(view_domain.file) as f:
        names = sorted(f.keys())
    before = "/" + names[names.index("images") - 1]  # the member listed above /images
    expect(page.locator("h2")).to_contain_text(before)
    expect(page.locator("#tree .node.selected")).to_have_attribute("data-path", before)
    page.context.close()


def test_long_series_keeps_its_spikes(browser: Browser, view_domain: ViewDomain) -> None:
    """A 10^7-point series (76 MiB) opens as the minimum and maximum of each pixel's share, so
    one-sample spikes between any stride's samples show; infinities and NaN still leave gaps
    (the value axis spans the finite values) and the answer stays small."""
    page = open_page(browser)
    with page.expect_response(lambda r: "/view/api/preview" in r.url) as answer:
        visit(page, view_domain, "/long")
    plot = page.locator("#lineplot")
    expect(plot).to_have_attribute("data-mode", "minmax")
    expect(page.locator(".status").first).to_contain_text("min/max per pixel")
    series = h5(view_domain, "/long")
    finite = series[np.isfinite(series)]
    low, high = (float(v) for v in str(plot.get_attribute("data-y-range")).split(","))
    assert low <= finite.min() and finite.max() <= high and high - low <= 2 * (finite.max() - finite.min())
    assert len(answer.value.body()) < 64 * 1024
    page.context.close()


def test_long_series_envelope_is_exact(view_domain: ViewDomain) -> None:
    """The reduced series (read in windows on the server) is each bin's minimum and maximum,
    in index order, as numpy finds them over the whole series (NaN skipped)."""
    width = 777
    r = requests.get(view_domain.endpoint + "/view/api/preview", auth=("test_user1", USERS["test_user1"]), timeout=60,
                     params={"domain": view_domain.domain, "path": "/long", "width": width})
    assert r.status_code == 200, r.text
    length = int.from_bytes(r.content[:4], "little")
    body = np.frombuffer(r.content[4 + length :], "<f8")
    x, y = body[: body.size // 2], body[body.size // 2 :]
    series = h5(view_domain, "/long")
    step = -(-series.size // width)
    assert x.size == 2 * width and np.all(np.diff(x) >= 0)
    np.testing.assert_array_equal(y, series[x.astype(np.int64)])
    for b in range(width):
        chunk = series[b * step : (b + 1) * step]
        if np.isnan(chunk).all():
            assert np.isnan(y[2 * b : 2 * b + 2]).all()
        else:
            assert set(y[2 * b : 2 * b + 2]) == {np.nanmin(chunk), np.nanmax(chunk)}, b


def test_image_of_no_rows_is_an_empty_image(view_domain: ViewDomain) -> None:
    """An image region of no rows but more columns than the plot has pixels (block means of
    nothing) is an empty image, not a server error."""
    r = requests.get(view_domain.endpoint + "/view/api/preview", auth=("test_user1", USERS["test_user1"]), timeout=60,
                     params={"domain": view_domain.domain, "path": "/matrix", "selection": "4:4,:", "width": 16,
                             "height": 12})
    assert r.status_code == 200, r.text
    length = int.from_bytes(r.content[:4], "little")
    head = orjson.loads(r.content[4 : 4 + length])
    assert head["mode"] == "mean" and head["shape"] == [0, 130] and head["dims"] == [0, -(-130 // head["step"][1])]
    assert head["min"] is None and r.content[4 + length :] == b""


def test_64_bit_integers_show_every_digit(browser: Browser, view_domain: ViewDomain) -> None:
    """Integers beyond 2^53 (a JavaScript number rounds them: -2^63 read as
    -9223372036854776000) show exactly in tables, scalars and attributes."""
    page = open_page(browser)
    visit(page, view_domain, "/int64_min")
    expect(page.locator("#scalar-value")).to_have_text(str(-(2**63)))
    visit(page, view_domain, "/wide_ints")
    expect(page.locator("#attributes tr", has_text="offset").locator("td.value")).to_have_text(str(-(2**62) - 3))
    page.locator(".tab[data-view='table']").click()
    cells = page.locator("table#values tbody tr").first.locator("td")
    expect(cells).to_have_count(3)
    assert cells.all_text_contents() == [str(v) for v in h5(view_domain, "/wide_ints")[0]]
    page.context.close()


def colour_bar(page: Page) -> list[list[int]]:
    """The colour bar's colours, lowest value first."""
    return page.evaluate(
        """() => { const c = document.querySelector('canvas.colorbar'); const d = c.getContext('2d')
            .getImageData(0, 0, 1, c.height).data; const out = [];
            for (let i = c.height - 1; i >= 0; i -= 1) out.push([d[i * 4], d[i * 4 + 1], d[i * 4 + 2]]); return out; }"""
    )


def heatmap_cell(page: Page, r: int, c: int, rows: int, cols: int) -> list[int]:
    """RGBA of the canvas at the centre of data cell (r, c) of a rows x cols image."""
    return page.locator("#heatmap").evaluate(
        f"""(c) => [...c.getContext('2d').getImageData(Math.floor(({c} + 0.5) * c.width / {cols}),
            Math.floor(({r} + 0.5) * c.height / {rows}), 1, 1).data]"""
    )


def test_image_log_colour_scale(browser: Browser, view_domain: ViewDomain, shots: Path) -> None:
    """A log colour scale, as H5Web has: its range runs from the smallest value above 0 to the
    largest, values at or below 0 are left transparent (as NaN is); symlog shows them all."""
    page = open_page(browser)
    visit(page, view_domain, "/images/image")
    expect(page.locator("#heatmap")).to_be_visible()
    image = h5(view_domain, "/images/image").astype(np.float64)
    rows, cols = image.shape
    page.locator("#colour-scale").select_option("log")
    lo, hi = image[image > 0].min(), image.max()
    expect(page.locator("#cbar-min")).to_have_text(str(lo))
    expect(page.locator("#cbar-max")).to_have_text(str(hi))
    bar = colour_bar(page)
    cells = [(0, 0), (0, 30), (1, 2), (13, 45), (39, 59), (20, 11)]
    assert any(image[rc] <= 0 for rc in cells) and any(image[rc] > 0 for rc in cells)
    for r, c in cells:
        pixel = heatmap_cell(page, r, c, rows, cols)
        v = image[r, c]
        if v <= 0:
            assert pixel[3] == 0, (r, c, v)
        else:
            k = round((np.log10(v) - np.log10(lo)) / (np.log10(hi) - np.log10(lo)) * 255)
            assert pixel[3] == 255 and pixel[:3] in bar[max(0, k - 1) : k + 2], (r, c, v)
    page.screenshot(path=shots / "image-log.png", full_page=True)
    page.locator("#colour-scale").select_option("symlog")
    expect(page.locator("#cbar-min")).to_have_text(str(image.min()))
    assert all(heatmap_cell(page, r, c, rows, cols)[3] == 255 for r, c in cells)
    page.context.close()


def test_true_colour_images_of_other_types_follow_h5web(browser: Browser, view_domain: ViewDomain) -> None:
    """H5Web's convention for true-colour images: integers are 0-255 (signed 8-bit ones shifted
    by 128), floats 0-1; nothing is rescaled. Values outside the range are clipped, and the page
    says so."""
    page = open_page(browser)
    for path, to_byte, clipped in (
        ("/photo_i8", lambda v: v.astype(int) + 128, False),
        ("/photo16", lambda v: np.minimum(v.astype(int), 255), True),
        ("/photo_f", lambda v: np.round(np.clip(v.astype(np.float64), 0, 1) * 255).astype(int), False),
    ):
        visit(page, view_domain, path)
        canvas = page.locator("#rgb-image")
        expect(canvas).to_be_visible()
        photo = h5(view_domain, path)
        size = canvas.evaluate("(c) => [c.width, c.height]")
        for r, c in ((0, 0), (7, 11), (19, 29), (12, 3)):
            x, y = int((c + 0.5) * size[0] / 30), int((r + 0.5) * size[1] / 20)
            pixel = canvas.evaluate(f"(c) => [...c.getContext('2d').getImageData({x}, {y}, 1, 1).data.slice(0, 3)]")
            assert pixel == list(to_byte(photo[r, c])), (path, r, c)
        note = page.locator("#rgb-clipped")
        if clipped:
            expect(note).to_contain_text(f"up to {photo.max()}")
        else:
            expect(note).to_have_count(0)
    page.context.close()


def test_scalar_that_cannot_be_read_says_why(browser: Browser, view_domain: ViewDomain) -> None:
    """A scalar whose value the server refuses to send (one 18 MB array) shows the server's
    reason, as the other views do, instead of an empty card."""
    page = open_page(browser)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    visit(page, view_domain, "/big_scalar")
    expect(page.locator("#message.error")).to_contain_text("18000000 bytes")
    page.wait_for_load_state("networkidle")
    assert errors == []
    page.context.close()


def test_long_double_reads_as_numbers(browser: Browser, h5web_domain: ViewDomain) -> None:
    """A long double dataset (kept as an opaque carrier of HDF5's float) shows the numbers h5py
    reads, not the carrier's bytes in base64."""
    page = open_page(browser)
    visit(page, h5web_domain, "/data/ldouble")
    cells = page.locator("table#values tbody td")
    expected = h5(h5web_domain, "/data/ldouble")
    expect(cells).to_have_count(expected.size)
    got = [float(t) for t in cells.all_inner_texts()]
    np.testing.assert_allclose(got, expected.astype(np.float64), rtol=1e-6)
    page.context.close()


def line_columns(page: Page) -> list[float | None]:
    """For each column of the line plot's canvas, the mean height of the line's (blue) pixels
    there, or None where the line does not pass."""
    return page.evaluate(
        """() => { const c = document.querySelector('#lineplot canvas'); const d = c.getContext('2d')
            .getImageData(0, 0, c.width, c.height).data; const out = [];
            for (let x = 0; x < c.width; x += 1) { let n = 0; let sum = 0;
              for (let y = 0; y < c.height; y += 1) { const i = (y * c.width + x) * 4;
                if (d[i + 2] > d[i] + 60 && d[i + 3] > 0) { n += 1; sum += y; } }
              out.push(n ? sum / n : null); } return out; }"""
    )


def gaps(columns: list[float | None]) -> tuple[int, int, list[int]]:
    """The first and last columns the line passes and the widths of the runs it skips between."""
    drawn = [i for i, v in enumerate(columns) if v is not None]
    runs, run = [], 0
    for v in columns[drawn[0] : drawn[-1] + 1]:
        if v is None:
            run += 1
        elif run:
            runs.append(run)
            run = 0
    return drawn[0], drawn[-1], runs


def test_line_log_and_symlog_value_scales(browser: Browser, view_domain: ViewDomain, shots: Path) -> None:
    """A log value axis, as H5Web's line plot has: powers of ten, values from 10^-2 to 10^4 on
    a straight line, and the values at or below 0 left out (gaps), which a note counts; symlog
    places every value, negative ones too."""
    page = open_page(browser)
    visit(page, view_domain, "/decades")
    plot = page.locator("#lineplot")
    expect(plot).to_be_visible()
    series = h5(view_domain, "/decades")
    page.locator("#value-scale").select_option("log")
    expect(page.locator("#lineplot")).to_have_attribute("data-y-scale", "log")
    plot = page.locator("#lineplot")
    hidden = int((series <= 0).sum())
    expect(page.locator("#line-note")).to_contain_text(f"{hidden} of the {series.size} values are at or below 0")
    ticks = [float(t) for t in str(plot.get_attribute("data-y-ticks")).split(",")]
    assert ticks == pytest.approx([10.0**k for k in range(-2, 5)])
    low, high = (float(v) for v in str(plot.get_attribute("data-y-range")).split(","))
    assert 0 < low <= series[series > 0].min() and high >= series.max()
    columns = line_columns(page)
    first, last, skipped = gaps(columns)
    # indexes 89-100 (zeros) and 149-151 (a negative value) have no segment
    span = last - first
    assert len(skipped) == 2, skipped
    assert 9 / 199 * span <= max(skipped) <= 13 / 199 * span and min(skipped) <= 3 / 199 * span + 2
    # 10^(linear) is a straight line on a log axis
    xs = np.array([i for i in range(first, last + 1) if columns[i] is not None], dtype=float)
    ys = np.array([columns[int(i)] for i in xs])
    fit = np.polyval(np.polyfit(xs, ys, 1), xs)
    assert np.abs(ys - fit).max() < 4, "the line is not straight on a log axis"
    page.screenshot(path=shots / "line-log.png", full_page=True)
    page.locator("#value-scale").select_option("symlog")
    expect(page.locator("#lineplot")).to_have_attribute("data-y-scale", "symlog")
    expect(page.locator("#line-note")).to_be_hidden()
    plot = page.locator("#lineplot")
    low, high = (float(v) for v in str(plot.get_attribute("data-y-range")).split(","))
    assert low <= series.min() < 0 and high >= series.max()
    ticks = [float(t) for t in str(plot.get_attribute("data-y-ticks")).split(",")]
    assert 0 in ticks and any(t < 0 for t in ticks)
    assert all(t == 0 or np.log10(abs(t)) == round(np.log10(abs(t))) for t in ticks), ticks
    first, last, skipped = gaps(line_columns(page))
    assert skipped == [] or max(skipped) <= 2, skipped
    page.context.close()


def axis_ticks(page: Page, axis: str) -> list[tuple[float, str, float]]:
    """(value, label, position in the image's pixels) of each tick of a heatmap axis ("x" or
    "y"), the position measured on screen from the image's edge."""
    return page.evaluate(
        f"""() => {{ const canvas = document.getElementById('heatmap').getBoundingClientRect();
            return [...document.querySelectorAll('#heatmap-{axis}-axis .tick')].map((t) => {{
              const b = t.getBoundingClientRect();
              const at = '{axis}' === 'x' ? b.left + b.width / 2 - canvas.left : b.top + b.height / 2 - canvas.top;
              return [Number(t.dataset.value), t.textContent, at]; }}); }}"""
    )


def check_axis(ticks: list[tuple[float, str, float]], length: float, edge_of: object) -> None:
    assert len(ticks) >= 3, ticks
    for value, text, at in ticks:
        assert float(text) == pytest.approx(value)
        assert at == pytest.approx(edge_of(value) * length, abs=2.5), (value, at)  # type: ignore[operator]


def test_image_axes_show_indexes(browser: Browser, view_domain: ViewDomain, shots: Path) -> None:
    """Row and column axes with tick labels, as H5Web draws them: without dimension scales, the
    indexes, a tick at index i marking the first edge of row (column) i."""
    page = open_page(browser)
    visit(page, view_domain, "/images/image")
    canvas = page.locator("#heatmap")
    expect(canvas).to_be_visible()
    rows, cols = h5(view_domain, "/images/image").shape
    box = canvas.bounding_box()
    assert box is not None
    x, y = axis_ticks(page, "x"), axis_ticks(page, "y")
    assert all(float(t).is_integer() and 0 <= t <= cols for t, _, _ in x)
    assert all(float(t).is_integer() and 0 <= t <= rows for t, _, _ in y)
    check_axis(x, box["width"], lambda v: v / cols)
    check_axis(y, box["height"], lambda v: v / rows)
    expect(page.locator("#heatmap-x-title")).to_have_text("column index (dim 1)")
    expect(page.locator("#axis-note")).to_be_hidden()
    page.screenshot(path=shots / "image-axes.png", full_page=True)
    page.context.close()


def test_image_axes_follow_dimension_scales(browser: Browser, view_domain: ViewDomain, shots: Path) -> None:
    """With dimension scales attached (DIMENSION_LIST), the axes show their values, labelled by
    DIMENSION_LABELS or the scale's name: a tick marks where its value lies between the cells'
    first edges (the scale's values; past the last one, one more step of the same size), so an
    uneven scale gives uneven ticks. A scale of the wrong length is not used, and a note says so."""
    page = open_page(browser)
    visit(page, view_domain, "/scaled")
    canvas = page.locator("#heatmap")
    expect(canvas).to_be_visible()
    expect(page.locator("#heatmap-x-title")).to_have_text("time")
    expect(page.locator("#heatmap-y-title")).to_have_text("depth (m)")
    depth, times = h5(view_domain, "/depth"), h5(view_domain, "/times")
    box = canvas.bounding_box()
    assert box is not None
    edges = lambda v: np.append(v, 2 * v[-1] - v[-2])
    x = axis_ticks(page, "x")
    check_axis(x, box["width"], lambda v: np.interp(v, edges(times), np.arange(times.size + 1)) / times.size)
    assert max(t for t, _, _ in x) > times.size  # scale values, not indexes
    check_axis(axis_ticks(page, "y"), box["height"], lambda v: (v - depth[0]) / (edges(depth)[-1] - depth[0]))
    canvas.hover(position={"x": box["width"] * 10.5 / 16, "y": 2})
    expect(page.locator("#hover")).to_contain_text(f"time = {int(times[10])}")
    page.screenshot(path=shots / "image-scales.png", full_page=True)
    visit(page, view_domain, "/odd_scale")
    expect(page.locator("#axis-note")).to_contain_text("dim 1")
    expect(page.locator("#axis-note")).to_contain_text("not the dimension's 20")
    expect(page.locator("#heatmap-x-title")).to_have_text("column index (dim 1)")
    expect(page.locator("#heatmap-y-title")).to_have_text("depth (m)")
    box = page.locator("#heatmap").bounding_box()
    assert box is not None
    check_axis(axis_ticks(page, "x"), box["width"], lambda v: v / 20)
    page.context.close()


def test_true_colour_image_with_alpha(browser: Browser, view_domain: ViewDomain, shots: Path) -> None:
    """Four channels (RGBA), as H5Web shows them: the fourth is the opacity, read as the colours
    are (0-255 for 8-bit integers)."""
    page = open_page(browser)
    visit(page, view_domain, "/photo_rgba")
    canvas = page.locator("#rgb-image")
    expect(canvas).to_be_visible()
    expect(canvas).to_have_attribute("data-channels", "RGBA")
    photo = h5(view_domain, "/photo_rgba").astype(int)
    size = canvas.evaluate("(c) => [c.width, c.height]")
    for r, c in ((0, 0), (7, 11), (19, 29), (12, 3), (5, 20)):
        x, y = int((c + 0.5) * size[0] / 30), int((r + 0.5) * size[1] / 20)
        pixel = canvas.evaluate(f"(c) => [...c.getContext('2d').getImageData({x}, {y}, 1, 1).data]")
        assert pixel[3] == photo[r, c, 3], (r, c)
        if photo[r, c, 3] >= 100:  # the canvas keeps colours premultiplied: a few units off
            assert np.abs(np.array(pixel[:3]) - photo[r, c, :3]).max() <= 3, (r, c, pixel)
    expect(page.locator(".status").first).to_contain_text("alpha")
    page.screenshot(path=shots / "rgba.png", full_page=True)
    page.context.close()


def test_true_colour_image_of_planes(browser: Browser, view_domain: ViewDomain) -> None:
    """INTERLACE_PLANE (channels x rows x columns), as the HDF5 image specification defines it:
    shown as the image, its first dimension the channels."""
    page = open_page(browser)
    visit(page, view_domain, "/photo_planes")
    canvas = page.locator("#rgb-image")
    expect(canvas).to_be_visible()
    planes = h5(view_domain, "/photo_planes")
    size = canvas.evaluate("(c) => [c.width, c.height]")
    assert size[0] > size[1]  # 30 columns by 20 rows
    for r, c in ((0, 0), (7, 11), (19, 29), (12, 3)):
        x, y = int((c + 0.5) * size[0] / 30), int((r + 0.5) * size[1] / 20)
        pixel = canvas.evaluate(f"(c) => [...c.getContext('2d').getImageData({x}, {y}, 1, 1).data.slice(0, 3)]")
        assert pixel == list(planes[:, r, c]), (r, c)
    expect(page.locator(".status").first).to_contain_text("INTERLACE_PLANE")
    page.context.close()


def test_follow_shows_rows_as_they_arrive(browser: Browser, view_domain: ViewDomain, shots: Path) -> None:
    """With "follow" on, rows a writer appends (PUT value?append=N) appear without a reload,
    through the watch: the dataset card's new shape, the line plot's window moved to the last
    rows, and the table's last page holding the newest values."""
    import uuid

    import h5pyd

    domain = f"/home/test_user1/follow-{uuid.uuid4().hex[:8]}.h5"
    opts = {"endpoint": view_domain.endpoint, "username": "test_user1", "password": USERS["test_user1"]}
    with h5pyd.File(domain, "w", **opts) as f:
        dset_id = f.create_dataset("grow", data=np.arange(100, dtype="f8") * 10, maxshape=(None,), chunks=(100,)).id.id

    def append(start: int, stop: int) -> None:
        r = requests.put(f"{view_domain.endpoint}/datasets/{dset_id}/value", params={"domain": domain, "append": stop - start},
                         json={"value": [i * 10 for i in range(start, stop)]}, auth=("test_user1", USERS["test_user1"]))
        assert r.status_code == 200, r.text

    page = open_page(browser)
    page.goto(f"{view_domain.endpoint}/view/?domain={domain}&path=/grow")
    expect(page.locator("#dataset-info")).to_contain_text("100")
    page.locator("#follow").check()
    append(100, 150)
    expect(page.locator("#dataset-info tr", has_text="shape").first).to_contain_text("150", timeout=15_000)
    expect(page.locator(".view .status").first).to_contain_text("indexes 50–149", timeout=15_000)  # the 100 shown, moved
    page.screenshot(path=str(shots / "follow-line.png"))
    page.get_by_role("button", name="Table").click()
    append(150, 230)
    expect(page.locator("#values tbody tr").last).to_contain_text("2290", timeout=15_000)
    page.screenshot(path=str(shots / "follow-table.png"))
    page.locator("#follow").uncheck()
