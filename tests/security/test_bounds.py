"""Sizes chosen by the client are bounded by settings, not by numbers inside the request: chunk
shapes (native and linked), inline chunk lists, and path walks."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import requests

from h5lake.service.objects.links import MAX_PATH_STEPS
from h5lake.sources.refs import MAX_INLINE_CHUNKS
from tests.support.server import Server, start_server

A = ("admin", "admin-pw")


class Domain:
    def __init__(self, srv: Server, name: str) -> None:
        self.ep = srv.endpoint
        self.name = name
        requests.put(self.ep + "/", params={"domain": "/home/admin/"}, json={"folder": 1}, auth=A, timeout=10)
        assert requests.put(self.ep + "/", params={"domain": name}, auth=A, timeout=10).status_code == 201
        self.root = requests.get(self.ep + "/", params={"domain": name}, auth=A, timeout=10).json()["root"]

    def post(self, path: str, body: object) -> requests.Response:
        return requests.post(self.ep + path, params={"domain": self.name}, json=body, auth=A, timeout=60)


@pytest.fixture(scope="module")
def domain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Domain]:
    srv = start_server(tmp_path_factory.mktemp("bounds"), extra=["--max-chunk-bytes", str(8 * 1024 * 1024)])
    yield Domain(srv, "/home/admin/bounds.h5")
    assert srv.process.poll() is None
    srv.stop()


def test_client_chunks_are_capped(domain: Domain) -> None:
    huge = domain.post("/datasets", {"type": "H5T_STD_U8LE", "shape": [2**34], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED", "dims": [2**30]}}})
    assert huge.status_code == 400
    assert "exceeds the limit of 8388608" in huge.json()["error"]["message"]
    fits = domain.post("/datasets", {"type": "H5T_STD_U8LE", "shape": [2**34], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED", "dims": [8 * 1024 * 1024]}}})
    assert fits.status_code == 201


def test_linked_chunks_are_capped(domain: Domain) -> None:
    reply = domain.post("/datasets", {"type": "H5T_IEEE_F64LE", "shape": [2**20, 1024], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED_REF", "file_uri": "/nowhere/x.h5", "dims": [4096, 1024], "chunks": {}}}})
    assert reply.status_code == 400
    assert "--max-chunk-bytes" in reply.json()["error"]["message"]


def test_inline_chunk_lists_are_bounded(domain: Domain) -> None:
    count = MAX_INLINE_CHUNKS + 1
    chunks = {str(i): [4096 + 8 * i, 8] for i in range(count)}
    reply = domain.post("/datasets", {"type": "H5T_STD_U8LE", "shape": [8 * count], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED_REF", "file_uri": "/nowhere/x.h5", "dims": [8], "chunks": chunks}}})
    assert reply.status_code == 400
    assert "H5D_CHUNKED_REF_INDIRECT" in reply.json()["error"]["message"]


def test_path_walks_are_bounded_and_fair(domain: Domain) -> None:
    """A hard link back to the root makes ``/loop/loop/...`` as long as the body allows; the walk
    stops at the limit, and other clients are answered meanwhile."""
    link = requests.put(f"{domain.ep}/groups/{domain.root}/links/loop", params={"domain": domain.name},
                        json={"id": domain.root}, auth=A, timeout=10)
    assert link.status_code == 201, link.text
    ok = domain.post("/", {"h5paths": ["/" + "/".join(["loop"] * (MAX_PATH_STEPS - 1))]})
    assert ok.status_code == 200 and len(ok.json()["h5paths"]) == 1

    waits: list[float] = []
    done = threading.Event()

    def other_client() -> None:
        while not done.is_set():
            started = time.monotonic()
            assert requests.get(domain.ep + "/about", timeout=10).status_code == 200
            waits.append(time.monotonic() - started)

    watcher = threading.Thread(target=other_client)
    watcher.start()
    try:
        deep = domain.post("/", {"h5paths": ["/" + "/".join(["loop"] * 100_000)] * 20})
    finally:
        done.set()
        watcher.join()
    assert deep.status_code == 400
    assert f"more than {MAX_PATH_STEPS} links" in deep.json()["error"]["message"]
    assert waits and max(waits) < 1.0


# --- work bounded by the request, not by numbers inside it ----------------------------------


@pytest.fixture(scope="module")
def small_json(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Domain]:
    srv = start_server(tmp_path_factory.mktemp("json"), extra=["--max-json-bytes", str(2 * 1024 * 1024),
                                                               "--max-request-bytes", str(64 * 1024 * 1024)])
    domain = Domain(srv, "/home/admin/json.h5")
    kept = domain.post("/datasets", {"type": "H5T_IEEE_F64LE", "shape": [100]}).json()["id"]
    values = [i / 7 for i in range(100)]
    assert _value(domain, kept, "PUT", json={"value": values}).status_code == 200
    yield domain
    assert srv.process.poll() is None
    assert _value(domain, kept).json()["value"] == values  # written before the attacks, intact after
    srv.stop()
    assert "Traceback" not in srv.log.read_text()


def _value(domain: Domain, dsid: str, method: str = "GET", **kw: object) -> requests.Response:
    return requests.request(method, f"{domain.ep}/datasets/{dsid}/value", params={"domain": domain.name, **kw.pop("params", {})},  # type: ignore[arg-type]
                            auth=A, timeout=60, **kw)  # type: ignore[arg-type]


def test_json_replies_and_requests_are_capped(small_json: Domain) -> None:
    dsid = small_json.post("/datasets", {"type": "H5T_STD_U8LE", "shape": [10_000_000]}).json()["id"]
    big = _value(small_json, dsid, params={"select": "[0:1000000]"})
    assert big.status_code == 413
    assert "application/octet-stream" in big.json()["error"]["message"]
    assert _value(small_json, dsid, params={"select": "[0:1000]"}).status_code == 200
    binary = _value(small_json, dsid, params={"select": "[0:1000000]"}, headers={"Accept": "application/octet-stream"})
    assert binary.status_code == 200 and len(binary.content) == 1_000_000
    body = b'{"value": [' + b"1," * 1_499_999 + b"1]}"
    sent = _value(small_json, dsid, "PUT", params={"select": "[0:1500000]"}, data=body,
                  headers={"Content-Type": "application/json"})
    assert sent.status_code == 413 and "for JSON" in sent.json()["error"]["message"]
    strings = small_json.post("/datasets", {"type": {"class": "H5T_STRING", "charSet": "H5T_CSET_UTF8", "length": "H5T_VARIABLE"},
                                            "shape": [400]}).json()["id"]
    assert _value(small_json, strings, "PUT", json={"value": ["x" * 4000] * 400}).status_code == 200
    refused = _value(small_json, strings)  # 1.6 MB of text, escaped and quoted: over 2 MiB as estimated
    assert refused.status_code == 413


def test_broadcast_writes_are_bounded(small_json: Domain) -> None:
    dsid = small_json.post("/datasets", {"type": "H5T_STD_U8LE", "shape": [2**20, 2**20],
                                         "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [1024, 1024]}}}).json()["id"]
    for select in ("[0:2048,0:1048576]", "[0:1048576,0:1048576]"):
        reply = _value(small_json, dsid, "PUT", params={"select": select}, json={"value": 7})
        assert reply.status_code == 413 and "request limit" in reply.json()["error"]["message"]
    assert _value(small_json, dsid, "PUT", params={"select": "[0:4,0:4]"}, json={"value": 7}).status_code == 200
    assert _value(small_json, dsid, params={"select": "[0:2,0:2]"}).json()["value"] == [[7, 7], [7, 7]]


def test_query_updates_are_bounded(small_json: Domain) -> None:
    table = small_json.post("/datasets", {"type": {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": "H5T_STD_I32LE"}]},
                                          "shape": [4_000_000_000], "creationProperties": {
                                              "layout": {"class": "H5D_CHUNKED", "dims": [1_000_000]}}}).json()["id"]
    every = _value(small_json, table, "PUT", params={"query": "a == 0"}, json={"value": {"a": 1}})
    assert every.status_code == 413 and "--max-query-elements" in every.json()["error"]["message"]
    # a Limit does not lift the bound (stopping at it would leave a partial update the reply could
    # not describe), and nothing changed
    limited = _value(small_json, table, "PUT", params={"query": "a == 0", "Limit": "5"}, json={"value": {"a": 1}})
    assert limited.status_code == 413 and "--max-query-elements" in limited.json()["error"]["message"]
    some = _value(small_json, table, "PUT", params={"query": "a == 0", "Limit": "5", "select": "[0:5000000]"},
                  json={"value": {"a": 1}})
    assert some.status_code == 200 and some.json()["index"] == [0, 1, 2, 3, 4]


def test_a_huge_streamed_read_plans_lazily_and_others_are_answered(small_json: Domain) -> None:
    """10**9 rows of 64 MiB: a whole read is refused at once (past --max-reply-bytes); a read of
    almost 4 GiB of it starts at once, and another client is answered while it streams."""
    dsid = small_json.post("/datasets", {"type": "H5T_STD_U8LE", "shape": [10**9, 2**26], "creationProperties": {
        "layout": {"class": "H5D_CHUNKED", "dims": [1024, 1024]}}}).json()["id"]
    # a whole read is past --max-reply-bytes (4 GiB): 413 at once, naming the setting and select
    whole = requests.get(f"{small_json.ep}/datasets/{dsid}/value", params={"domain": small_json.name},
                         headers={"Accept": "application/octet-stream"}, auth=A, timeout=60)
    assert whole.status_code == 413 and "--max-reply-bytes" in whole.json()["error"]["message"]
    rows = 63  # 63 rows of 64 MiB: just under 4 GiB, planned over a 10**9-row extent
    with requests.get(f"{small_json.ep}/datasets/{dsid}/value", params={"domain": small_json.name, "select": f"[0:{rows},:]"},
                      headers={"Accept": "application/octet-stream"}, auth=A, timeout=60, stream=True) as reply:
        assert reply.status_code == 200
        assert int(reply.headers["content-length"]) == rows * 2**26
        pieces = reply.iter_content(1 << 20)
        assert set(next(pieces)) == {0}
        # another client is answered while the reply is still streaming (the watchdog of
        # conftest.py bounds its wait), and the stream goes on after it
        assert requests.get(small_json.ep + "/about", timeout=10).status_code == 200
        assert set(next(pieces)) == {0}


def test_a_query_with_a_limit_stops_early_over_billions_of_rows(small_json: Domain) -> None:
    table = small_json.post("/datasets", {"type": {"class": "H5T_COMPOUND", "fields": [{"name": "a", "type": "H5T_STD_I32LE"}]},
                                          "shape": [4_000_000_000], "creationProperties": {
                                              "layout": {"class": "H5D_CHUNKED", "dims": [1_000_000]}}}).json()["id"]
    waits: list[float] = []
    done = threading.Event()

    def other_client() -> None:
        while not done.is_set():
            started = time.monotonic()
            assert requests.get(small_json.ep + "/about", timeout=10).status_code == 200
            waits.append(time.monotonic() - started)
            time.sleep(0.05)

    watcher = threading.Thread(target=other_client)
    watcher.start()
    try:
        first = _value(small_json, table, params={"query": "a == 0", "Limit": "1"})
    finally:
        done.set()
        watcher.join()
    assert first.status_code == 200 and first.json()["index"] == [0]
    assert not waits or max(waits) < 1.0
