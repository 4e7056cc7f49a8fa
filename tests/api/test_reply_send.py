"""A reply's head and body leave in one send (`api/connections._HeadWithBody`), and every
reply on a kept-alive connection still arrives whole and in order: GETs, a HEAD (no body
follows its head), errors, pipelined requests."""

from __future__ import annotations

import base64
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.failing_app import STARTED
from tests.support.server import USERS, Server, free_port, start_server, stop_group

TCP_INFO_DATA_SEGS_IN = 152  # offset of tcpi_data_segs_in in Linux's struct tcp_info (since 4.6)


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("reply-send"))
    yield s
    s.stop()


def _connect(srv: Server) -> socket.socket:
    host, port = srv.endpoint.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _request(method: str, path: str, body: bytes = b"") -> bytes:
    token = base64.b64encode(f"test_user1:{USERS['test_user1']}".encode()).decode()
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {token}\r\n"
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


class _Replies:
    """Replies read off one connection, each as (status, headers, body)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buf = sock, b""

    def _more(self) -> None:
        data = self.sock.recv(65536)
        assert data, "connection closed before the reply was whole"
        self.buf += data

    def next(self, head_only: bool = False) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        if head_only:
            return status, headers, b""
        size = int(headers["content-length"])
        while len(self.buf) < size:
            self._more()
        body, self.buf = self.buf[:size], self.buf[size:]
        return status, headers, body


def _data_segments_in(sock: socket.socket) -> int:
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return int(struct.unpack_from("I", info, TCP_INFO_DATA_SEGS_IN)[0])


def test_a_small_reply_arrives_in_one_segment(srv: Server) -> None:
    sock = _connect(srv)
    replies = _Replies(sock)
    before = _data_segments_in(sock)
    for _ in range(5):  # one at a time: each reply must be read whole before the next request
        sock.sendall(_request("GET", "/about"))
        status, headers, body = replies.next()
        assert status == 200 and body.startswith(b"{") and len(body) == int(headers["content-length"])
    # head and body written separately are two segments on the loopback: 10 here
    assert _data_segments_in(sock) - before == 5
    sock.close()


def test_replies_on_one_connection_are_whole_and_in_order(srv: Server) -> None:
    sock = _connect(srv)
    replies = _Replies(sock)
    sock.sendall(_request("GET", "/about"))
    status, _, about = replies.next()
    assert status == 200 and about.startswith(b"{")
    missing_group = "/groups/g-00000000-0000-0000-0000-000000000000?domain=/home/test_user1/none.h5"
    # pipelined: a HEAD (its head only), a GET, a 404, a HEAD again, a GET
    sock.sendall(
        _request("HEAD", "/about")
        + _request("GET", "/about")
        + _request("GET", missing_group)
        + _request("HEAD", "/about")
        + _request("GET", "/about")
    )
    status, headers, _ = replies.next(head_only=True)
    assert status == 200 and int(headers["content-length"]) == len(about)
    status, _, body = replies.next()
    assert status == 200 and body == about
    status, _, missing = replies.next()
    assert status == 404 and missing.startswith(b'{"error"')
    status, headers, _ = replies.next(head_only=True)
    assert status == 200 and int(headers["content-length"]) == len(about)
    status, _, body = replies.next()
    assert status == 200 and body == about
    sock.settimeout(0.2)
    with pytest.raises(TimeoutError):
        replies._more()  # nothing more than the five replies
    assert replies.buf == b""
    sock.close()


def _wait_for(log: Path, text: str) -> str:
    for _ in range(300):
        content = log.read_text()
        if text in content:
            return content
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in the log:\n{log.read_text()}")


def test_a_reply_failing_after_its_client_left_closes_quietly(tmp_path: Path) -> None:
    """A reply started (its head held for the body), the client gone, then the application
    fails: uvicorn closes the connection, and the held head must not be written to the closed
    transport (uvloop raised, and the request's task ended in a second traceback)."""
    port = free_port()
    log = tmp_path / "server.log"
    code = (
        "import uvicorn; from h5lake.api.connections import PROTOCOL_PATH; "
        f"uvicorn.run('tests.support.failing_app:app', host='127.0.0.1', port={port}, http=PROTOCOL_PATH)"
    )
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=out, start_new_session=True,
                                   cwd=Path(__file__).resolve().parents[2])  # where ``tests`` imports from
    try:
        _wait_for(log, "Uvicorn running")
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        _wait_for(log, STARTED)
        sock.close()
        _wait_for(log, "failed after the client left")
    finally:
        stop_group(process, signal.SIGINT)
    content = log.read_text()
    assert "Exception in ASGI application" in content  # the application's own failure, logged
    assert "handler is closed" not in content and "never retrieved" not in content, content
