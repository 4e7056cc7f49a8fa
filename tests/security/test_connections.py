"""Idle, half-sent and stalled connections are closed, and a cap on connections per process holds,
while other clients keep being answered."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support.server import Server, start_server


@pytest.fixture
def strict_server(tmp_path: Path) -> Iterator[Server]:
    srv = start_server(tmp_path, extra=["--header-timeout", "1", "--body-timeout", "2", "--max-connections", "400"])
    yield srv
    srv.stop()


def _connect(endpoint: str) -> socket.socket:
    host, port = endpoint.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.setblocking(False)
    return sock


def _closed(sock: socket.socket) -> bool:
    try:
        data = sock.recv(65536)
    except BlockingIOError:
        return False
    except OSError:
        return True
    return data == b"" or data.startswith(b"HTTP/1.1 4")


def _wait_closed(socks: list[socket.socket], seconds: float) -> list[socket.socket]:
    """The sockets still open after ``seconds`` (checked every 0.2 s)."""
    deadline = time.monotonic() + seconds
    open_ = list(socks)
    while open_ and time.monotonic() < deadline:
        open_ = [s for s in open_ if not _closed(s)]
        time.sleep(0.2)
    return open_


def test_idle_and_half_sent_connections_are_closed(strict_server: Server) -> None:
    ep = strict_server.endpoint
    silent = [_connect(ep) for _ in range(100)]
    half_headers = [_connect(ep) for _ in range(100)]
    for s in half_headers:
        s.send(b"GET /about HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    half_body = [_connect(ep) for _ in range(100)]
    for s in half_body:
        s.send(b"PUT /?domain=/home/x.h5 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n0123456789")
    try:
        # others are answered while the 300 connections hang
        for _ in range(5):
            assert requests.get(ep + "/about", timeout=5).status_code == 200
        still_open = _wait_closed(silent + half_headers + half_body, 30)
        assert not still_open, f"{len(still_open)} of 300 stalled connections were not closed"
        assert requests.get(ep + "/about", timeout=5).status_code == 200
        assert strict_server.process.poll() is None
    finally:
        for s in silent + half_headers + half_body:
            s.close()


def test_a_slow_but_steady_upload_is_not_cut(strict_server: Server) -> None:
    """The body deadline is between pieces, not for the whole body."""
    ep = strict_server.endpoint
    body = b'{"folder": 1}'
    sock = socket.create_connection(("127.0.0.1", int(ep.rsplit(":", 1)[1])), timeout=10)
    try:
        sock.send(b"PUT /?domain=/home/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Authorization: Basic YWRtaW46YWRtaW4tcHc=\r\n" + f"Content-Length: {len(body)}\r\n\r\n".encode())
        for byte in body:
            sock.send(bytes([byte]))
            time.sleep(0.3)  # 13 pieces over ~4 s: longer than body_timeout in total, never between pieces
        reply = sock.recv(65536)
    finally:
        sock.close()
    assert reply.startswith(b"HTTP/1.1 "), reply[:100]
    assert int(reply.split()[1]) < 500


def test_connection_cap_answers_503_then_recovers(tmp_path: Path) -> None:
    srv = start_server(tmp_path, extra=["--header-timeout", "2", "--max-connections", "20"])
    held = [_connect(srv.endpoint) for _ in range(25)]
    try:
        time.sleep(0.3)
        busy = requests.get(srv.endpoint + "/about", timeout=5)
        assert busy.status_code == 503 and busy.headers["content-type"] == "application/json; charset=utf-8", busy.text
        assert "--max-connections" in busy.json()["error"]["message"] and busy.headers["retry-after"] == "1"
        assert not _wait_closed(held, 30)
        assert requests.get(srv.endpoint + "/about", timeout=5).status_code == 200
    finally:
        for s in held:
            s.close()
        srv.stop()


def _whole_reply(sock: socket.socket) -> bytes:
    """One reply with a Content-Length, read whole from a blocking socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return data


def test_a_stalled_request_after_answered_ones_is_closed(strict_server: Server) -> None:
    """The deadlines of a kept-alive connection start again with each request: after requests
    answered on it (whose deadlines were armed and disarmed), a request that stops in its
    headers, or in its body, is cut after its own timeout, not left open."""
    ep = strict_server.endpoint
    host, port = ep.removeprefix("http://").split(":")
    for stall in (b"GET /about HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
                  b"PUT /?domain=/home/x.h5 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n01234"):  # fmt: skip
        sock = socket.create_connection((host, int(port)), timeout=10)
        try:
            for _ in range(3):
                sock.sendall(b"GET /about HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                reply = _whole_reply(sock)
                assert reply.startswith(b"HTTP/1.1 200"), reply[:100]
                time.sleep(0.4)  # the deadlines of the next request start later than the first's
            sock.sendall(stall)
            started = time.monotonic()
            sock.setblocking(False)
            assert not _wait_closed([sock], 15), "a stalled request on a kept-alive connection stayed open"
            assert time.monotonic() - started > 0.8  # not before its own deadline (1 s for headers, 2 s between body pieces)
        finally:
            sock.close()
