"""Sizes chosen by the client are bounded by settings, not by numbers inside the request: chunk
shapes (native and linked), inline chunk lists, and path walks."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import requests

from h5lake.service.links import MAX_PATH_STEPS
from h5lake.sources.layouts import MAX_INLINE_CHUNKS
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
