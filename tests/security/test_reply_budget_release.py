"""Every reservation of the reply budget (`service.budget`) is given back, however its request
ends: HEAD, a client that leaves before the read, one that leaves halfway through the answer,
an answer that fails after the values were read. The server here has a budget smaller than
one of its large replies (each runs alone), so a single reservation never given back would
leave every later large read waiting until its 503; after many such requests of each kind,
large reads are still answered at once and whole."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

import numpy as np
import orjson
import pytest
import requests

from tests.support.server import USERS, Server, start_server

A = ("admin", USERS["admin"])
DOMAIN = "/home/admin/release.h5"
# 4 MiB of float64: every whole reply of it reserves more than the budget. Reservations are linear
# in the values' bytes, so the sizes set only the cost (each round makes several JSON replies of
# every value); their ratio to the budget is what the test needs.
ROWS, COLS = 512, 1024
BUDGET = 8 * 1024 * 1024
ROUNDS = 4


@dataclass
class Target:
    srv: Server
    ep: str
    dset: str


def values() -> np.ndarray:
    return np.arange(ROWS * COLS, dtype="<f8").reshape(ROWS, COLS) / 3.0


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    srv = start_server(tmp_path_factory.mktemp("release") / "srv", workers=1,
                       extra=["--reply-memory-bytes", str(BUDGET)])
    try:
        s = requests.Session()
        s.auth = A
        ep, params = srv.endpoint, {"domain": DOMAIN}
        assert s.put(ep + "/", params={"domain": "/home/admin/"}, json={"folder": 1}).status_code in (201, 409)
        assert s.put(ep + "/", params=params).status_code == 201
        root = s.get(ep + "/", params=params).json()["root"]
        r = s.post(ep + "/datasets", params=params,
                   json={"type": "H5T_IEEE_F64LE", "shape": [ROWS, COLS], "link": {"id": root, "name": "big"}})
        assert r.status_code == 201, r.text
        dset = r.json()["id"]
        r = s.put(ep + f"/datasets/{dset}/value", params=params, data=values().tobytes(),
                  headers={"Content-Type": "application/octet-stream"})
        assert r.status_code == 200, r.text
        yield Target(srv, ep, dset)
        assert srv.process.poll() is None
    finally:
        srv.stop()


def raw(ep: str, method: str, path: str, query: dict[str, str], headers: dict[str, str], take: int) -> bytes:
    """A request on a socket of its own, of which ``take`` bytes of answer are read before the
    client closes it (0: it leaves as soon as it has asked). It asks the server to close the
    connection after the answer (``Connection: close``): an answer shorter than ``take`` (the
    stats) is then read whole and ends, instead of idling until the server's keep-alive timeout
    (5 s a request)."""
    url = urlsplit(ep)
    token = requests.auth._basic_auth_str(*A)  # type: ignore[attr-defined]
    head = f"{method} {path}?{urlencode(query)} HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: {token}\r\n"
    head += "Connection: close\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    got = b""
    with socket.create_connection((url.hostname, url.port), timeout=120) as sock:
        sock.sendall(head.encode())
        while len(got) < take:
            piece = sock.recv(65536)
            if not piece:
                break
            got += piece
    return got


GROVE = {"file": DOMAIN, "path": "/big"}


def abandoned(t: Target, take: int) -> None:
    raw(t.ep, "GET", "/h5grove/data", {**GROVE, "format": "bin"}, {}, take)
    raw(t.ep, "GET", "/h5grove/stats", GROVE, {}, take)
    raw(t.ep, "GET", "/view/api/values", {"domain": DOMAIN, "path": "/big", "format": "npy"}, {}, take)
    raw(t.ep, "GET", f"/datasets/{t.dset}/value", {"domain": DOMAIN}, {}, take)  # JSON: made whole


def test_reservations_are_given_back_however_the_request_ends(target: Target) -> None:
    t = target
    s = requests.Session()
    s.auth = A
    for _ in range(ROUNDS):
        abandoned(t, 0)  # gone before the read
        abandoned(t, 100_000)  # gone halfway through the answer
        for path, query in (("/h5grove/data", {**GROVE, "format": "bin"}),
                            ("/view/api/values", {"domain": DOMAIN, "path": "/big", "format": "npy"}),
                            (f"/datasets/{t.dset}/value", {"domain": DOMAIN})):
            r = s.head(t.ep + path, params=query, timeout=120)
            assert r.status_code == 200 and r.content == b""
        # failing after its values were read: a TIFF of one dimension is refused by its encoder
        r = s.get(t.ep + "/h5grove/data", params={**GROVE, "format": "tiff", "selection": "0"}, timeout=120)
        assert 400 <= r.status_code < 500, r.text
    # had one reservation been kept, these would wait for it and be answered 503
    expected = values()
    r = s.get(t.ep + "/h5grove/data", params={**GROVE, "format": "bin"}, timeout=120)
    assert r.status_code == 200, r.text[:300]
    assert r.content == expected.tobytes()
    r = s.get(t.ep + "/h5grove/stats", params=GROVE, timeout=120)
    assert r.status_code == 200, r.text[:300]
    assert orjson.loads(r.content)["max"] == expected[-1, -1]
    r = s.get(t.ep + f"/datasets/{t.dset}/value", params={"domain": DOMAIN}, timeout=120)
    assert r.status_code == 200, r.text[:300]
    assert np.array_equal(np.asarray(r.json()["value"]), expected)
    assert "Traceback" not in t.srv.log.read_text()
