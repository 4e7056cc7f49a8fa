"""Large request bodies read past the HTTP parser (api/connections.py, ``DIRECT_MIN`` bytes and
more): delivered whole and in order whatever pieces they arrive in, with the next request on
the same connection (pipelined in the body's last piece) parsed as usual, ``Expect:
100-continue`` honoured, a body answered before it was read dropped, and a wrong length
refused."""

from __future__ import annotations

import base64
import http.client
import json
import random
import socket
import time
from typing import Any

import numpy as np
import pytest
from tests.api.test_values_http import OCTET, PUT_OCTET, make_dataset
from tests.conftest import Client
from tests.support.server import USERS

from h5lake.api.connections import DIRECT_MIN

SHAPE = [1024, 1024]  # float32: 4 MiB, four times DIRECT_MIN (a body read whole)
BIG = [12288, 1024]  # 48 MiB: more than a block (service/values/core.py STREAM_BLOCK_BYTES), streamed
CHUNKS = [256, 512]


class _Unclosed:
    def __init__(self, file: Any) -> None:
        self.file = file

    def __getattr__(self, name: str) -> Any:
        return getattr(self.file, name)

    def close(self) -> None:
        pass


class _Conn:
    """One raw keep-alive connection: requests as bytes, responses read one after another."""

    def __init__(self, endpoint: str) -> None:
        host, port = endpoint.removeprefix("http://").split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.file = self.sock.makefile("rb")

    def response(self) -> tuple[int, bytes]:
        class Shared:  # http.client reads each response from the one buffered file, left open
            def makefile(_self, *args: Any, **kw: Any) -> Any:
                return _Unclosed(self.file)

        resp = http.client.HTTPResponse(Shared())  # type: ignore[arg-type]
        resp.begin()
        return resp.status, resp.read()

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def _head(method: str, target: str, client: Client, length: int | None = None, **extra: str) -> bytes:
    token = base64.b64encode(f"test_user1:{USERS['test_user1']}".encode()).decode()
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Basic {token}"]
    if length is not None:
        lines += ["Content-Type: application/octet-stream", f"Content-Length: {length}"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _value_path(client: Client, did: str, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in {"domain": client.domain, **params}.items())
    return f"/datasets/{did}/value?{query}"


def _stored(client: Client, did: str, shape: list[int] = SHAPE) -> np.ndarray:
    r = client.get(f"/datasets/{did}/value", headers=OCTET)
    assert r.status_code == 200
    return np.frombuffer(r.content, dtype="<f4").reshape(shape)


@pytest.mark.parametrize("shape", [SHAPE, BIG], ids=["whole", "streamed"])
def test_a_large_body_in_odd_pieces_then_a_pipelined_request(client: Client, shape: list[int]) -> None:
    did = make_dataset(client, shape, CHUNKS, "H5T_IEEE_F32LE")
    data = np.random.default_rng(3).random(shape, dtype=np.float32)
    body = data.tobytes()
    assert len(body) >= 4 * DIRECT_MIN
    follow = _head("GET", _value_path(client, did, select="[1020:1024,1000:1003]"), client)
    conn = _Conn(client.endpoint)
    try:
        conn.sock.sendall(_head("PUT", _value_path(client, did), client, len(body)) + body[:5])
        rng = random.Random(7)
        at = 5
        while at < len(body) - 1000:
            n = rng.choice([1, 7, 4096, 65537, 300_001, 1_500_000])
            conn.sock.sendall(body[at : at + n])
            at += n
            if rng.random() < 0.1:
                time.sleep(0.05)  # the server drains what came, then waits for more
        conn.sock.sendall(body[at:] + follow)  # the body's end and the next request in one piece
        status, reply = conn.response()
        assert status == 200, reply[:300]
        status, reply = conn.response()
        assert status == 200, reply[:300]
        assert np.array_equal(np.array(json.loads(reply)["value"], dtype=np.float32), data[1020:1024, 1000:1003])
    finally:
        conn.close()
    assert np.array_equal(_stored(client, did, shape), data)


@pytest.mark.one_backend  # the parser's handling, the same on every store
@pytest.mark.parametrize("shape", [SHAPE, BIG], ids=["whole", "streamed"])
def test_a_large_body_after_100_continue(client: Client, shape: list[int]) -> None:
    did = make_dataset(client, shape, CHUNKS, "H5T_IEEE_F32LE")
    data = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    body = data.tobytes()
    conn = _Conn(client.endpoint)
    try:
        conn.sock.sendall(_head("PUT", _value_path(client, did), client, len(body), Expect="100-continue"))
        assert conn.file.readline().startswith(b"HTTP/1.1 100")
        assert conn.file.readline() == b"\r\n"
        conn.sock.sendall(body)
        status, reply = conn.response()
        assert status == 200, reply[:300]
    finally:
        conn.close()
    assert np.array_equal(_stored(client, did, shape), data)


@pytest.mark.one_backend  # the parser's handling, the same on every store
def test_a_large_body_answered_before_it_is_read_is_dropped(client: Client) -> None:
    """A write to a dataset that does not exist is refused at once; the rest of its body is
    read and dropped, and the next request on the connection is answered."""
    missing = make_dataset(client, SHAPE, CHUNKS, "H5T_IEEE_F32LE")
    assert client.delete(f"/datasets/{missing}").status_code == 200
    body = bytes(4 * DIRECT_MIN)
    conn = _Conn(client.endpoint)
    try:
        conn.sock.sendall(_head("PUT", _value_path(client, missing), client, len(body)) + body[: DIRECT_MIN // 2])
        status, _ = conn.response()
        assert status in (404, 410)
        conn.sock.sendall(body[DIRECT_MIN // 2 :] + _head("GET", "/about", client))
        status, reply = conn.response()
        assert status == 200, reply[:300]
    finally:
        conn.close()


@pytest.mark.one_backend  # the parser's handling, the same on every store
@pytest.mark.parametrize("shape", [SHAPE, BIG], ids=["whole", "streamed"])
def test_a_large_body_of_the_wrong_length_is_refused(client: Client, shape: list[int]) -> None:
    did = make_dataset(client, shape, CHUNKS, "H5T_IEEE_F32LE")
    good = np.ones(shape, dtype=np.float32).tobytes()
    assert client.put(f"/datasets/{did}/value", data=good, headers=PUT_OCTET).status_code == 200
    for body in (good + b"\0" * 4, good[: len(good) - 4]):
        r = client.put(f"/datasets/{did}/value", data=body, headers=PUT_OCTET)
        assert r.status_code == 400, r.text
        assert "bytes" in r.json()["error"]["message"]
    assert client.get("/").status_code == 200  # the server goes on


@pytest.mark.one_backend  # the parser's handling, the same on every store
def test_a_client_gone_mid_body_leaves_the_server_serving(client: Client) -> None:
    did = make_dataset(client, SHAPE, CHUNKS, "H5T_IEEE_F32LE")
    conn = _Conn(client.endpoint)
    conn.sock.sendall(_head("PUT", _value_path(client, did), client, 4 * DIRECT_MIN) + bytes(DIRECT_MIN + 3))
    time.sleep(0.2)
    conn.close()
    data = np.full(SHAPE, 2.5, dtype=np.float32)
    assert client.put(f"/datasets/{did}/value", data=data.tobytes(), headers=PUT_OCTET).status_code == 200
    assert np.array_equal(_stored(client, did), data)


@pytest.mark.one_backend  # the parser's handling, the same on every store
def test_a_chunked_body_is_streamed_through_the_parser(client: Client) -> None:
    """No ``Content-Length`` (``Transfer-Encoding: chunked``): the parser delivers the pieces and
    a streamed write still reads them into its blocks."""
    did = make_dataset(client, BIG, CHUNKS, "H5T_IEEE_F32LE")
    data = np.random.default_rng(5).random(BIG, dtype=np.float32)
    body = data.tobytes()

    def pieces() -> Any:
        for at in range(0, len(body), 3_000_001):
            yield body[at : at + 3_000_001]

    r = client.put(f"/datasets/{did}/value", data=pieces(), headers=PUT_OCTET)
    assert r.status_code == 200, r.text
    assert r.request.headers.get("Transfer-Encoding") == "chunked"
    assert np.array_equal(_stored(client, did, BIG), data)


def test_a_client_gone_mid_stream_leaves_whole_chunks_and_no_temporary_files(client: Client, raw_store: Any) -> None:
    """A streamed PUT whose client goes away after more than a block (so that block's chunks
    are being stored, in ``put_hashed_many`` windows): once the server has settled, no
    temporary file is left in the store and every chunk is either never written (fill) or
    exactly the values sent."""
    did = make_dataset(client, BIG, CHUNKS, "H5T_IEEE_F32LE")
    values = np.arange(BIG[0] * BIG[1], dtype="<f4").reshape(BIG) + 1  # no value is the fill (0)
    sent = values.tobytes()[: 40 * 1024 * 1024]  # a block and a quarter
    conn = _Conn(client.endpoint)
    conn.sock.sendall(_head("PUT", _value_path(client, did), client, values.nbytes) + sent)
    conn.close()
    # no reply to wait for: the server stores the block it has, then drops the request. A local
    # store's puts go through temporary files (none may be left); an S3 put is one request.
    files = getattr(raw_store, "root", None)
    rows, cols = CHUNKS
    least = 32 * 1024 * 1024 // (rows * cols * 4)  # the first block's chunks at least
    deadline = time.monotonic() + 30
    while True:
        time.sleep(0.5)
        temps = [str(p) for p in files.rglob(".h5lake-tmp-*")] if files is not None else []
        stored = _stored(client, did, BIG)
        whole = 0
        for i in range(0, BIG[0], rows):
            for j in range(0, BIG[1], cols):
                got, want = stored[i : i + rows, j : j + cols], values[i : i + rows, j : j + cols]
                assert np.array_equal(got, want) or not got.any(), (i, j)
                whole += bool(got.any())
        if (not temps and whole >= least) or time.monotonic() > deadline:
            break
    assert temps == []
    assert whole >= least


async def test_a_body_read_whole_lands_in_a_kept_page_aligned_buffer() -> None:
    """A binary value PUT of up to a block (``_RequestBody.read``) is received into a kept
    page-aligned buffer (``BODIES``): the local store then writes its whole raw chunks past
    the page cache (storage/direct.py), and the next body reuses the buffer once it is free;
    a body ending early is given as what came."""
    from types import SimpleNamespace

    from starlette.requests import Request

    from h5lake.api.connections import READINTO
    from h5lake.api.http import BODIES
    from h5lake.api.routes.values import _RequestBody
    from h5lake.storage import direct

    def request(body: bytes, length: int) -> Request:
        sent = memoryview(body)

        async def readinto(view: memoryview) -> int:
            nonlocal sent
            n = min(len(view), len(sent), 1_000_003)  # in pieces, as a socket gives them
            view[:n] = sent[:n]
            sent = sent[n:]
            return n

        svc = SimpleNamespace(limits=SimpleNamespace(max_request_size=64 << 20))
        headers = [(b"content-length", str(length).encode()), (b"content-type", b"application/octet-stream")]
        return Request({"type": "http", "method": "PUT", "path": "/", "headers": headers, "query_string": b"",
                        "app": SimpleNamespace(service=svc), "extensions": {READINTO: readinto}})

    body = np.arange(2 << 20, dtype="<i4").tobytes()  # 8 MiB, as load sends
    with BODIES.using():
        got = await _RequestBody(request(body, len(body))).read()
        assert isinstance(got, memoryview) and got == body and direct.wanted(got)
        at = direct.address(got)
        del got
        again = await _RequestBody(request(body[::-1], len(body))).read()
        assert direct.address(again) == at and again == body[::-1]  # the same buffer, free again
        short = await _RequestBody(request(body[:100_000], len(body))).read()
        assert bytes(short) == body[:100_000]
