"""Extents, fill values and transfer codings: a shrink from a huge extent, extents past int64, a filter class that is
no string, a fill value as large as a JSON body, a Transfer-Encoding the HTTP parser only half
undoes, and 405s without a true ``Allow``. Each gets a JSON 4xx (never a 500 or a stalled
server) while another client is served (the watchdog of ``conftest.py``), and the server's log
holds no traceback."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import orjson
import pytest
import requests

from h5lake.model.ids import object_key
from h5lake.storage.local import LocalStore
from tests.security.conftest import module_on
from tests.support.server import Server, start_server

A = ("admin", "admin-pw")
DOMAIN = "/home/admin/pass9.h5"
I32 = "H5T_STD_I32LE"


class Target:
    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.ep = srv.endpoint
        self.session = requests.Session()
        self.session.auth = A
        requests.put(self.ep + "/", params={"domain": "/home/admin/"}, json={"folder": 1}, auth=A, timeout=10)
        made = requests.put(self.ep + "/", params={"domain": DOMAIN}, auth=A, timeout=10)
        assert made.status_code == 201, made.text
        self.root: str = made.json()["root"]

    def call(self, method: str, path: str, **kw: object) -> requests.Response:
        params = {"domain": DOMAIN, **kw.pop("params", {})}  # type: ignore[dict-item]
        return self.session.request(method, self.ep + path, params=params, timeout=30, **kw)  # type: ignore[arg-type]

    def dataset(self, body: dict[str, object]) -> str:
        made = self.call("POST", "/datasets", json=body)
        assert made.status_code == 201, made.text
        return str(made.json()["id"])

    def values(self, dsid: str) -> list[int]:
        got = self.call("GET", f"/datasets/{dsid}/value")
        assert got.status_code == 200, got.text
        return list(got.json()["value"])

    def resize(self, dsid: str, shape: list[int]) -> requests.Response:
        return self.call("PUT", f"/datasets/{dsid}/shape", json={"shape": shape})


@pytest.fixture(scope="module")
def target(shared_server: Server) -> Iterator[Target]:
    with module_on(shared_server) as srv:
        yield Target(srv)


def _refused(reply: requests.Response, words: str, status: int = 400) -> None:
    assert reply.status_code == status, (reply.status_code, reply.text[:300])
    assert words in reply.json()["error"]["message"], reply.text[:300]


def _extensible(target: Target, chunk: int, n: int = 10) -> str:
    dsid = target.dataset({"type": I32, "shape": [n], "maxdims": ["H5S_UNLIMITED"],
                           "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [chunk]}}})
    assert target.call("PUT", f"/datasets/{dsid}/value", json={"value": list(range(n))}).status_code == 200
    return dsid


def test_a_shrink_from_a_huge_extent_is_answered_at_once(target: Target) -> None:
    """A shrink listed every chunk position of the extent it shrank from, on the event loop:
    from 10**9 rows in chunks of 10, 108 s during which no other request was answered; from
    2**60 rows, for ever (the server then did not even stop on SIGTERM)."""
    dsid = _extensible(target, 10)
    assert target.resize(dsid, [2**60]).status_code == 201
    shrunk = target.resize(dsid, [5])
    assert shrunk.status_code == 201, shrunk.text
    assert target.values(dsid) == [0, 1, 2, 3, 4]
    assert target.resize(dsid, [10]).status_code == 201
    assert target.values(dsid) == [0, 1, 2, 3, 4, 0, 0, 0, 0, 0]  # the cut-off values are gone


@pytest.mark.parametrize("chunk, big", [(10, 10**7), (100_000, 10**11)])
def test_a_shrink_past_the_probe_limit_cleans_a_chunk_written_just_before(target: Target, chunk: int, big: int) -> None:
    """Past 100,000 chunk positions a shrink cleans the chunks the chunk catalog lists, and
    the catalog lags writes by its delay: a chunk written just before (or moved out of a compact
    dataset by the growth itself) kept its cut-off values, which came back when the dataset grew
    again. The pending write intents name those chunks."""
    dsid = _extensible(target, chunk)
    assert target.resize(dsid, [big]).status_code == 201
    assert target.resize(dsid, [5]).status_code == 201
    assert target.resize(dsid, [10]).status_code == 201
    assert target.values(dsid) == [0, 1, 2, 3, 4, 0, 0, 0, 0, 0]


def test_extents_past_int64_are_refused(target: Target) -> None:
    """An extent of 2**64 - 1 was stored and its last elements read as empty; in chunks of one
    its creation was a 500 (``OverflowError``); a prepend past 2**64 made a document that could
    not be written, and the statistics of a 2**64-element dataset could not be answered (500s)."""
    for shape in ([2**64 - 1], [2**63], [2**32, 2**32]):
        body = {"type": "H5T_STD_I8LE", "shape": shape, "maxdims": ["H5S_UNLIMITED"] * len(shape),
                "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [1] * len(shape)}}}
        _refused(target.call("POST", "/datasets", json=body), "2**63 - 1")
    _refused(target.call("POST", "/datasets", json={"type": I32, "shape": [3], "maxdims": [2**63]}), "2**63 - 1")
    # HDF5's H5S_UNLIMITED, (hsize_t)-1, as a number is unlimited, as the string is
    unlimited = target.dataset({"type": "H5T_STD_I8LE", "shape": [3], "maxdims": [2**64 - 1]})
    assert target.call("GET", f"/datasets/{unlimited}").json()["shape"]["maxdims"] == ["H5S_UNLIMITED"]
    assert target.resize(unlimited, [2**63 - 1]).status_code == 201
    _refused(target.call("PUT", f"/datasets/{unlimited}/shape", json={"prepend": 1}), "2**63 - 1")
    _refused(target.resize(unlimited, [2**63]), "2**63 - 1")
    last = target.call("GET", f"/datasets/{unlimited}/value", params={"select": f"[{2**63 - 3}:{2**63 - 1}]"})
    assert last.status_code == 200 and last.json()["value"] == [0, 0], last.text
    stats = target.call("GET", f"/datasets/{unlimited}", params={"verbose": 1})
    assert stats.status_code == 200, stats.text


def test_a_filter_class_that_is_no_string_is_refused(target: Target) -> None:
    """A filter ``class`` of a list or an object was looked up in a dict: a 500 (unhashable)."""
    for cls in ([1], {"a": 1}):
        body = {"type": I32, "shape": [10], "creationProperties": {
            "layout": {"class": "H5D_CHUNKED", "dims": [5]}, "filters": [{"class": cls, "level": 5}]}}
        _refused(target.call("POST", "/datasets", json=body), "filter class")


def test_a_fill_value_is_bounded_like_an_attribute(target: Target) -> None:
    """A fill value lives in the dataset's document, parsed by every read of the dataset: a
    30 MB string fill made every GET of it cost ~0.25 s of the event loop."""
    vlen = {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE"}
    body = {"type": vlen, "shape": [3], "creationProperties": {"fillValue": "x" * (2 * 2**20)}}
    _refused(target.call("POST", "/datasets", json=body), "--max-attribute-bytes", 413)
    body = {"type": vlen, "shape": [3], "creationProperties": {"fillValue": "x" * 1000}}
    assert target.values(target.dataset(body)) == ["x" * 1000] * 3


def _raw(target: Target, request: bytes) -> bytes:
    port = int(target.ep.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            piece = sock.recv(65536)
            if not piece:
                break
            reply += piece
    return reply


def test_a_transfer_coding_other_than_chunked_is_refused(target: Target) -> None:
    """``Transfer-Encoding: gzip, chunked`` passes the HTTP parser, which undoes the chunking
    only: the body was read as sent, still compressed (here a JSON body made a group)."""
    before = target.call("GET", f"/groups/{target.root}").json()["linkCount"]
    auth = requests.Request("GET", "http://x", auth=A).prepare().headers["Authorization"]
    body = b'{"link": {"id": "%s", "name": "te"}}' % target.root.encode()
    request = (f"POST /groups?domain={DOMAIN} HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\n"
               "Content-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n").encode()
    reply = _raw(target, request + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    assert reply.startswith(b"HTTP/1.1 415"), reply[:300]
    assert b"Transfer-Encoding" in reply
    assert target.call("GET", f"/groups/{target.root}").json()["linkCount"] == before
    split = request.replace(b"Transfer-Encoding: gzip", b"Transfer-Encoding: identity\r\nTransfer-Encoding: gzip")
    reply = _raw(target, split + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))  # the list on two lines
    assert reply.startswith(b"HTTP/1.1 415"), reply[:300]
    assert target.call("GET", f"/groups/{target.root}").json()["linkCount"] == before
    chunked = request.replace(b"gzip, chunked", b"chunked")
    coded = chunked.replace(b"Transfer-Encoding", b"Content-Encoding: identity\r\nContent-Encoding: gzip\r\nTransfer-Encoding")
    reply = _raw(target, coded + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    assert reply.startswith(b"HTTP/1.1 415"), reply[:300]
    assert target.call("GET", f"/groups/{target.root}").json()["linkCount"] == before
    assert _raw(target, chunked + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)).startswith(b"HTTP/1.1 201")


def test_a_405_names_every_method_of_the_path(target: Target) -> None:
    """A 405 had no ``Allow`` (RFC 9110 says it must have one), and Starlette's would name only
    the first route's methods: ``GET, HEAD`` for ``/``, which takes PUT, POST and DELETE too."""
    dsid = target.dataset({"type": I32, "shape": [2]})
    for method, path, allowed in [
        ("TRACE", "/", {"GET", "HEAD", "PUT", "POST", "DELETE"}),
        ("PATCH", f"/datasets/{dsid}/value", {"GET", "HEAD", "PUT", "POST"}),
        ("OPTIONS", f"/groups/{target.root}/attributes/a", {"GET", "HEAD", "PUT", "DELETE"}),
        ("POST", "/about", {"GET", "HEAD"}),
    ]:
        reply = target.call(method, path)
        _refused(reply, "Method Not Allowed", 405)
        assert {m.strip() for m in reply.headers["Allow"].split(",")} == allowed, (path, reply.headers)


def test_h5grove_and_the_web_view_read_an_array_type(target: Target) -> None:
    """A dataset of an array type (``H5T_ARRAY``) was a 500 in ``/h5grove/data`` and
    ``/h5grove/stats`` (the values, with the type's dimensions spread after the dataset's, were
    reshaped to the dataset's alone); h5py reads them as trailing dimensions, as now."""
    array = {"class": "H5T_ARRAY", "dims": [2, 2], "base": "H5T_IEEE_F32LE"}
    dsid = target.dataset({"type": array, "shape": [3], "link": {"id": target.root, "name": "arr"}})
    values = [[[i, i + 1], [i + 2, i + 3]] for i in range(3)]
    assert target.call("PUT", f"/datasets/{dsid}/value", json={"value": values}).status_code == 200
    grove = {"file": DOMAIN, "path": "/arr"}
    data = target.session.get(target.ep + "/h5grove/data", params={**grove, "format": "json"}, timeout=30)
    assert data.status_code == 200 and data.json() == values, data.text[:300]
    row = target.session.get(target.ep + "/h5grove/data", params={**grove, "format": "json", "selection": "1"}, timeout=30)
    assert row.status_code == 200 and row.json() == values[1], row.text[:300]
    stats = target.session.get(target.ep + "/h5grove/stats", params=grove, timeout=30)
    assert stats.status_code == 200 and stats.json()["max"] == 5.0 and stats.json()["min"] == 0.0, stats.text[:300]
    view = target.session.get(target.ep + "/view/api/values", params={"domain": DOMAIN, "path": "/arr"}, timeout=30)
    assert view.status_code == 200 and view.json()["value"] == values, view.text[:300]


@pytest.fixture(scope="module")
def wide_group(target: Target) -> str:
    """A group of 45,000 soft links and one of 45,000 hard links to a dataset (made in batches,
    before the watchdog starts)."""
    dsid = target.dataset({"type": I32, "shape": [2]})
    ids = []
    for name, count in (("wide", 45_000), ("hard", 45_000)):
        made = target.call("POST", "/groups", json={"link": {"id": target.root, "name": name}})
        assert made.status_code == 201, made.text
        ids.append(str(made.json()["id"]))
        for start in range(0, count, 15_000):
            links = {f"l{i}": {"h5path": f"/missing{i}"} if name == "wide" else {"id": dsid}
                     for i in range(start, start + 15_000)}
            assert target.call("PUT", f"/groups/{ids[-1]}/links", json={"links": links}).status_code == 201
    return ids[0]


def test_describing_a_wide_group_leaves_others_served(target: Target, wide_group: str) -> None:
    """``/h5grove/meta`` and ``/view/api/object`` of a group follow every link to describe its
    children, all at once: cached documents never yield, so a group of 200,000 soft links held
    every other client 13 s for one request (45,000 here: ~3 s). Now 64 at a time, others
    running in between (the watchdog of ``conftest.py`` asks ``/about`` meanwhile)."""
    meta = target.session.get(target.ep + "/h5grove/meta", params={"file": DOMAIN, "path": "/wide"}, timeout=120)
    assert meta.status_code == 200, meta.text[:300]
    children = meta.json()["children"]
    assert len(children) == 45_000 and {c["kind"] for c in children} == {"soft_link"}
    assert children[0] == {"kind": "soft_link", "name": "l0", "target_path": "/missing0"}


def test_listing_and_describing_many_paths_leaves_others_served(target: Target, wide_group: str) -> None:
    """``/h5grove/paths`` walked every link of every group it reached in one go (a domain of
    300,000 links held others 10-14 s); ``/h5grove/meta`` of a group of 100,000 datasets
    described them in one go after following them (6.3 s). Now the walk lets others in every
    1,024 links and 64 documents, stops once it has more than it may answer, and the
    description runs on a pool thread."""
    listed = target.session.get(target.ep + "/h5grove/paths", params={"file": DOMAIN, "path": "/"}, timeout=120)
    assert listed.status_code == 200, listed.text[:300]
    paths = listed.json()
    assert "/wide/l44999" in paths and "/hard/l44999" in paths and len(paths) == len(set(paths))
    meta = target.session.get(target.ep + "/h5grove/meta", params={"file": DOMAIN, "path": "/hard"}, timeout=120)
    assert meta.status_code == 200, meta.text[:300]
    children = meta.json()["children"]
    assert len(children) == 45_000 and {c["kind"] for c in children} == {"dataset"}
    assert children[0]["shape"] == [2]


async def test_a_document_stored_before_the_extent_cap_stays_usable(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Extents past 2**63 - 1 were accepted before the cap: a dataset grown so far, or given
    such a maximum, keeps its values readable, can be shrunk back, and has its chunks reclaimed
    when deleted (each was a 400 or a traceback once stored documents were held to the cap)."""
    work = tmp_path_factory.mktemp("precap")
    srv = start_server(work / "a")
    try:
        t = Target(srv)
        grown = _extensible(t, 10)
        bounded = _extensible(t, 5)
    finally:
        srv.stop()
    store = LocalStore(srv.data)  # what a server before the cap stored
    try:
        for dsid, shape in ((grown, {"dims": [2**63 + 3], "maxdims": ["H5S_UNLIMITED"]}),
                            (bounded, {"dims": [10], "maxdims": [2**63 + 5]})):
            key = object_key(dsid)
            blob = await store.get(key)
            assert blob is not None
            doc = orjson.loads(blob.data)
            doc["shape"] = {"class": "H5S_SIMPLE", **shape}
            await store.put(key, orjson.dumps(doc))
    finally:
        await store.close()
    srv = start_server(work / "b", data=srv.data)
    try:
        t = Target.__new__(Target)  # the domain is there already
        t.srv, t.ep, t.session = srv, srv.endpoint, requests.Session()
        t.session.auth = A
        got = t.call("GET", f"/datasets/{grown}/value", params={"select": "[0:4]"})
        assert got.status_code == 200 and got.json()["value"] == [0, 1, 2, 3], got.text
        assert t.values(bounded) == list(range(10))
        assert t.resize(grown, [5]).status_code == 201
        assert t.values(grown) == [0, 1, 2, 3, 4]
        for dsid in (grown, bounded):
            assert t.call("DELETE", f"/datasets/{dsid}").status_code == 200
    finally:
        srv.stop()
    assert "Traceback" not in srv.log.read_text()
