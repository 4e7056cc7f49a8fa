"""Very wide objects (docs/security.md, "Wide objects"). A group's links and an object's attributes live in
its document, and HDF5 bounds neither count: every read of a group of 100,000 links parsed its
document in one call that held the event loop, and sorting, showing and serializing a listing of
them held it again. Several such requests at once held every other client for seconds. Now a
large document is parsed a slice at a time (``model/slicedjson.py``), at most two at once, and
listings are made on a pool thread, sorted in runs; the answers are the same (the watchdog of ``conftest.py`` asks
``/about`` meanwhile)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import h5pyd
import orjson
import pytest
import requests

from tests.security.conftest import module_on
from tests.support.server import Server

A = ("admin", "admin-pw")
DOMAIN = "/home/admin/wide.h5"
LINKS = 100_000


class Target:
    def __init__(self, srv: Server) -> None:
        self.ep = srv.endpoint
        self.session = requests.Session()
        self.session.auth = A
        self.session.put(self.ep + "/", params={"domain": "/home/admin/"}, json={"folder": 1}, timeout=10)
        made = self.session.put(self.ep + "/", params={"domain": DOMAIN}, timeout=10)
        assert made.status_code == 201, made.text
        self.root: str = made.json()["root"]

    def call(self, method: str, path: str, **kw: object) -> requests.Response:
        params = {"domain": DOMAIN, **kw.pop("params", {})}  # type: ignore[dict-item]
        return self.session.request(method, self.ep + path, params=params, timeout=120, **kw)  # type: ignore[arg-type]

    def raw(self, path: str, params: dict[str, object]) -> bytes:
        """The reply's bytes, unparsed: parsing here would hold this process (and the watchdog's
        thread in it) as long as the server took to make the reply."""
        with requests.get(self.ep + path, params={"domain": DOMAIN, **params}, auth=A, timeout=120) as got:
            assert got.status_code == 200, got.text[:300]
            return got.content


@pytest.fixture(scope="module")
def target(shared_server: Server) -> Iterator[Target]:
    with module_on(shared_server) as srv:
        yield Target(srv)


@pytest.fixture(scope="module")
def wide(target: Target) -> tuple[str, list[str]]:
    """A group of 100,000 soft links whose names come in random order (a listing sorts them), made
    in batches before the watchdog starts; the names in name order."""
    made = target.call("POST", "/groups", json={"link": {"id": target.root, "name": "wide"}})
    assert made.status_code == 201, made.text
    gid = str(made.json()["id"])
    names = [f"n{random.getrandbits(64):016x}" for _ in range(LINKS)]
    for start in range(0, LINKS, 20_000):
        links = {name: {"h5path": f"/t/{name}"} for name in names[start : start + 20_000]}
        assert target.call("PUT", f"/groups/{gid}/links", json={"links": links}).status_code == 201
    return gid, sorted(names)


def test_listing_and_reading_a_wide_group_at_once_leaves_others_served(
    target: Target, wide: tuple[str, list[str]]
) -> None:
    """Eight listings of a group of 100,000 links and four reads of it at once held every other
    client ~2 s: each parsed the group's document, and a listing sorted and showed the links, on
    the event loop; pages (``Limit``, ``Marker``) parsed and sorted the whole group too. The
    listing, its pages and the group (``include_links=1``, as h5pyd reads it) are as before, and
    h5pyd sees every link."""
    gid, names = wide
    listing = f"/groups/{gid}/links"
    asks = [(listing, {}), (listing, {"Limit": 1000}), (listing, {"Limit": 500, "Marker": names[LINKS // 2]}),
            (listing, {"CreateOrder": 1, "Limit": 10}), (f"/groups/{gid}", {"include_links": 1}),
            (f"/groups/{gid}/links/{names[5]}", {})] * 2
    with ThreadPoolExecutor(len(asks)) as pool:
        replies = list(pool.map(lambda ask: target.raw(*ask), asks))
    whole = orjson.loads(replies[0])["links"]
    assert [link["title"] for link in whole] == names
    assert whole[7]["h5path"] == f"/t/{names[7]}" and whole[7]["class"] == "H5L_TYPE_SOFT"
    assert f"/groups/{gid}/links/{names[7]}?" in whole[7]["href"]
    assert orjson.loads(replies[1])["links"] == whole[:1000]
    assert orjson.loads(replies[2])["links"] == whole[LINKS // 2 + 1 : LINKS // 2 + 501]
    by_creation = sorted(whole, key=lambda link: (link["created"], link["title"]))
    assert orjson.loads(replies[3])["links"] == by_creation[:10]
    group = orjson.loads(replies[4])
    assert group["linkCount"] == LINKS and sorted(group["links"]) == names
    assert group["links"][names[5]]["h5path"] == f"/t/{names[5]}"
    link = orjson.loads(replies[5])["link"]
    assert link["title"] == names[5] and link["h5path"] == f"/t/{names[5]}"
    assert replies[6:] == replies[:6]
    with h5pyd.File(DOMAIN, "r", endpoint=target.ep, username=A[0], password=A[1]) as f:
        assert len(f["wide"]) == LINKS
        assert sorted(f["wide"]) == names
