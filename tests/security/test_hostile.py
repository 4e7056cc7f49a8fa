"""Attacks found by a pass over the running server: oversized request heads, JSON bodies whose
parsing would hold the interpreter, downloads and point lists whose encoding would stall the
event loop. Each is refused with a JSON 4xx, or answered while another client is served (the
watchdog of ``conftest.py``), and the server stays up with its data intact."""

from __future__ import annotations

import gzip
import math
import socket
import time
from collections.abc import Iterator

import numpy as np
import orjson
import pytest
import requests

from h5lake.api.connections import MAX_HEAD_BYTES, MAX_HEADERS
from h5lake.api.http import NAN_JSON_MAX_BYTES
from tests.security.conftest import module_on
from tests.support.server import Server

A = ("admin", "admin-pw")
DOMAIN = "/home/admin/hostile2.h5"


class Target:
    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.ep = srv.endpoint
        requests.put(self.ep + "/", params={"domain": "/home/admin/"}, json={"folder": 1}, auth=A, timeout=10)
        self.root = requests.put(self.ep + "/", params={"domain": DOMAIN}, auth=A, timeout=10).json()["root"]
        self.kept = self.dataset("H5T_IEEE_F64LE", [1000], "kept")
        self.values = np.arange(1000) / 7
        self.put_binary(self.kept, self.values.astype("<f8").tobytes())

    def dataset(self, type_: str, shape: list[int], name: str) -> str:
        made = requests.post(self.ep + "/datasets", params={"domain": DOMAIN}, json={"type": type_, "shape": shape},
                             auth=A, timeout=10)
        assert made.status_code == 201, made.text
        dsid: str = made.json()["id"]
        link = requests.put(f"{self.ep}/groups/{self.root}/links/{name}", params={"domain": DOMAIN}, json={"id": dsid},
                            auth=A, timeout=10)
        assert link.status_code == 201, link.text
        return dsid

    def put_binary(self, dsid: str, data: bytes) -> None:
        reply = requests.put(f"{self.ep}/datasets/{dsid}/value", params={"domain": DOMAIN}, data=data, auth=A, timeout=60,
                             headers={"Content-Type": "application/octet-stream"})
        assert reply.status_code == 200, reply.text

    def intact(self) -> bool:
        got = requests.get(f"{self.ep}/datasets/{self.kept}/value", params={"domain": DOMAIN}, auth=A, timeout=10,
                           headers={"Accept": "application/octet-stream"})
        return got.status_code == 200 and np.array_equal(np.frombuffer(got.content, "<f8"), self.values)


@pytest.fixture(scope="module")
def target(shared_server: Server) -> Iterator[Target]:
    with module_on(shared_server) as srv:
        yield Target(srv)


def _raw(t: Target, request: bytes) -> tuple[int, dict[str, object]]:
    """Send ``request`` on a connection of its own; the status and JSON body of the answer (read
    up to the server's closing the connection, or to the end of the body its Content-Length
    gives: an answer the connection outlives, kept alive, is not waited on for the keep-alive
    timeout)."""
    host, port = t.ep.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        try:
            sock.sendall(request)
        except OSError:
            pass  # the server may answer and close before a huge head is all sent
        answer = b""
        while not _whole(answer):
            try:
                piece = sock.recv(65536)
            except ConnectionResetError:
                break
            if not piece:
                break
            answer += piece
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 "), answer[:200]
    assert b"content-type: application/json" in head.lower(), head
    return int(head.split()[1]), orjson.loads(body)


@pytest.mark.parametrize(
    "name, request_bytes, status, words",
    [
        ("many headers", b"GET /about HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(MAX_HEADERS + 1))
         + b"\r\n", 431, "header fields"),
        ("one huge header", b"GET /about HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (MAX_HEAD_BYTES + 1) + b"\r\n\r\n", 431,
         f"exceed {MAX_HEAD_BYTES} bytes"),
        ("a head that never ends", b"GET /about HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (4 * MAX_HEAD_BYTES), 431, "exceed"),
        # over 64 KiB in one piece the parser refuses its URL first; in several, the head is too long
        ("a long URL", b"GET /about?x=" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 400, "URL over 65535 bytes"),
        ("garbage", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n", 400, "Invalid HTTP request"),
        ("a NUL in a header", b"GET /about HTTP/1.1\r\nHost: x\r\nAuthorization: \x00\r\n\r\n", 400, "Invalid HTTP request"),
    ],
)
def test_bad_heads_get_a_json_4xx(target: Target, name: str, request_bytes: bytes, status: int, words: str) -> None:
    got, body = _raw(target, request_bytes)
    assert got == status or (name == "a long URL" and got == 431), (name, body)
    error = body["error"]
    assert isinstance(error, dict) and (words in error["message"] or got == 431), body
    assert requests.get(target.ep + "/about", timeout=5).status_code == 200


def test_heads_within_the_limits_are_served(target: Target) -> None:
    headers = {f"X-{i}": "y" for i in range(MAX_HEADERS - 10)}
    headers["X-Token"] = "t" * (MAX_HEAD_BYTES // 2)
    assert requests.get(target.ep + "/about", headers=headers, timeout=10).status_code == 200


def test_large_json_bodies_with_nan_tokens_are_refused(target: Target) -> None:
    dsid = target.dataset("H5T_IEEE_F64LE", [2_000_000], "nans")
    url = f"{target.ep}/datasets/{dsid}/value"
    small = b'{"value": [NaN, Infinity, -Infinity, 1.5]}'
    ok = requests.put(url, params={"domain": DOMAIN, "select": "[0:4]"}, data=small, auth=A, timeout=10)
    assert ok.status_code == 200, ok.text
    big = b'{"value": [NaN,' + b"1.25," * 1_999_998 + b"1]}"
    assert len(big) > NAN_JSON_MAX_BYTES
    refused = requests.put(url, params={"domain": DOMAIN}, data=big, auth=A, timeout=60)
    assert refused.status_code == 413, refused.text[:200]
    assert '"NaN"' in refused.json()["error"]["message"]
    # written as strings, as the message says
    taken = requests.put(url, params={"domain": DOMAIN, "select": "[0:4]"}, data=small.replace(b"NaN", b'"NaN"'), auth=A,
                         timeout=10)
    assert taken.status_code == 200, taken.text[:200]
    head = requests.get(url, params={"domain": DOMAIN, "select": "[0:2]"}, auth=A, timeout=10).json()["value"]
    assert math.isnan(head[0]) and head[1] == math.inf  # answered as HSDS does: bare tokens
    assert target.intact()


def test_a_large_csv_download_leaves_others_served(target: Target) -> None:
    """Half a million numbers as text is seconds of CPU: made on the pool, in blocks."""
    n = 500_000
    dsid = target.dataset("H5T_IEEE_F64LE", [n], "tocsv")
    target.put_binary(dsid, (np.arange(n) / 4).astype("<f8").tobytes())
    for route, params in (("/view/api/values", {"domain": DOMAIN, "path": "/tocsv", "format": "csv"}),
                          ("/h5grove/data", {"file": DOMAIN, "path": "/tocsv", "format": "csv"})):
        reply = requests.get(target.ep + route, params=params, auth=A, timeout=120)
        assert reply.status_code == 200, reply.text[:200]
        lines = reply.text.splitlines()
        assert len(lines) == n and lines[1] == "0.25" and lines[-1] == str((n - 1) / 4)
    assert target.intact()


@pytest.fixture(scope="module")
def listed_points() -> tuple[bytes, np.ndarray]:
    """A million listed points as a JSON body, made before the test (and its watchdog) starts:
    the client's own JSON encoding would hold up the watchdog's thread in this process."""
    coords = np.stack([np.arange(1_000_000) % 100, (np.arange(1_000_000) * 7) % 100], axis=1)
    return orjson.dumps({"points": coords.tolist()}), coords


def test_a_million_listed_points_leave_others_served(target: Target, listed_points: tuple[bytes, np.ndarray]) -> None:
    body, coords = listed_points
    dsid = target.dataset("H5T_STD_I32LE", [100, 100], "grid")
    target.put_binary(dsid, np.arange(10_000, dtype="<i4").tobytes())
    reply = requests.post(f"{target.ep}/datasets/{dsid}/value", params={"domain": DOMAIN}, data=body, auth=A, timeout=120,
                          headers={"Accept": "application/octet-stream"})
    assert reply.status_code == 200, reply.text[:200]
    got = np.frombuffer(reply.content, "<i4")
    assert len(got) == len(coords) and np.array_equal(got, coords[:, 0] * 100 + coords[:, 1])


def test_compressed_bodies_are_refused_not_misread(target: Target) -> None:
    dsid = target.dataset("H5T_STD_I32LE", [4], "coded")
    body = gzip.compress(b'{"value": [1, 2, 3, 4]}')
    reply = requests.put(f"{target.ep}/datasets/{dsid}/value", params={"domain": DOMAIN}, data=body, auth=A, timeout=10,
                         headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert reply.status_code == 415 and "Content-Encoding" in reply.json()["error"]["message"], reply.text
    packed = requests.put(f"{target.ep}/datasets/{dsid}/value", params={"domain": DOMAIN}, auth=A, timeout=10,
                          data=gzip.compress(np.arange(4, dtype="<i4").tobytes()),
                          headers={"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"})
    assert packed.status_code == 415, packed.text
    assert requests.get(f"{target.ep}/datasets/{dsid}/value", params={"domain": DOMAIN}, auth=A, timeout=10).json()["value"] == [0] * 4


def _whole(answer: bytes) -> bool:
    head, sep, body = answer.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def test_an_upgrade_request_is_an_ordinary_request(target: Target) -> None:
    got, body = _raw(target, b"GET /nowhere HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             b"Sec-WebSocket-Key: x\r\nSec-WebSocket-Version: 13\r\n\r\n")
    assert got == 404 and "error" in body


def test_a_client_leaving_mid_body_is_no_server_error(target: Target) -> None:
    dsid = target.dataset("H5T_STD_I32LE", [1000], "left")
    host, port = target.ep.removeprefix("http://").split(":")
    for kind in ("application/json", "application/octet-stream"):
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(f"PUT /datasets/{dsid}/value?domain={DOMAIN} HTTP/1.1\r\nHost: x\r\nContent-Type: {kind}\r\n"
                         "Authorization: Basic YWRtaW46YWRtaW4tcHc=\r\nContent-Length: 4000\r\n\r\n[1, 2,".encode())
            time.sleep(0.3)  # the request reaches its handler, which waits for the rest
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline and "Traceback" not in target.srv.log.read_text():
        time.sleep(0.1)
    assert "Traceback" not in target.srv.log.read_text()
    assert target.intact()


def test_millions_of_packed_points_leave_others_served(target: Target) -> None:
    """Grouping points by chunk is a sort of all of them: on the CPU pool."""
    dsid = target.dataset("H5T_STD_I32LE", [100, 100], "grid2")
    target.put_binary(dsid, np.arange(10_000, dtype="<i4").tobytes())
    n = 5_000_000
    points = np.stack([np.arange(n) % 100, (np.arange(n) * 7) % 100], axis=1).astype("<u8")
    reply = requests.post(f"{target.ep}/datasets/{dsid}/value", params={"domain": DOMAIN}, data=points.tobytes(), auth=A,
                          timeout=120, headers={"Content-Type": "application/octet-stream", "Accept": "application/octet-stream"})
    assert reply.status_code == 200, reply.text[:200]
    got = np.frombuffer(reply.content, "<i4")
    assert len(got) == n and np.array_equal(got, (points[:, 0] * 100 + points[:, 1]).astype("<i4"))


def test_millions_of_distinct_points_in_one_chunk_leave_others_served(target: Target) -> None:
    """Few enough points of a large unfiltered chunk are read from their own byte ranges, whose
    planning sorts their offsets; numpy's ``np.unique`` of 4 million distinct integers held the
    interpreter ~11 s (numpy 2.3+). Picking and placing them runs on the CPU pool too."""
    n = 16 * 1024 * 1024
    dsid = requests.post(target.ep + "/datasets", params={"domain": DOMAIN}, auth=A, timeout=10, json={
        "type": "H5T_STD_U8LE", "shape": [n], "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [n]}}}).json()["id"]
    values = (np.arange(n) % 251).astype("u1")
    target.put_binary(dsid, values.tobytes())
    k = 4_000_000
    coords = (np.arange(k, dtype="<u8") * 7919) % n  # all distinct, spread over the chunk
    reply = requests.post(f"{target.ep}/datasets/{dsid}/value", params={"domain": DOMAIN}, data=coords.tobytes(), auth=A,
                          timeout=120, headers={"Content-Type": "application/octet-stream", "Accept": "application/octet-stream"})
    assert reply.status_code == 200, reply.text[:200]
    assert np.array_equal(np.frombuffer(reply.content, "u1"), values[coords.astype(np.int64)])


@pytest.fixture(scope="module")
def written_points() -> tuple[bytes, np.ndarray]:
    """Two million points to write as JSON (made before the watchdog starts, as above)."""
    coords = (np.arange(2_000_000) * 7919) % (16 * 1024 * 1024)
    return orjson.dumps({"points": coords.tolist(), "value": 7}), coords


def test_millions_of_points_written_into_one_chunk_leave_others_served(
    target: Target, written_points: tuple[bytes, np.ndarray]
) -> None:
    """Grouping the points and scattering them into the chunk run on the CPU pool."""
    body, coords = written_points
    n = 16 * 1024 * 1024
    dsid = requests.post(target.ep + "/datasets", params={"domain": DOMAIN}, auth=A, timeout=10, json={
        "type": "H5T_STD_U8LE", "shape": [n], "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [n]}}}).json()["id"]
    reply = requests.put(f"{target.ep}/datasets/{dsid}/value", params={"domain": DOMAIN}, data=body, auth=A, timeout=120)
    assert reply.status_code == 200, reply.text[:200]
    got = requests.get(f"{target.ep}/datasets/{dsid}/value", params={"domain": DOMAIN}, auth=A, timeout=60,
                       headers={"Accept": "application/octet-stream"})
    expected = np.zeros(n, "u1")
    expected[coords] = 7
    assert np.array_equal(np.frombuffer(got.content, "u1"), expected)
    assert target.intact()
