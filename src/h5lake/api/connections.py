"""Connections that cannot pin the server: uvicorn's HTTP protocol with read deadlines.

uvicorn closes a keep-alive connection that stays idle after a response, but not one that never
finishes sending its request: a client that opens a connection and sends nothing, or half the
headers, or a body one byte a minute, holds a socket and buffers forever. ``GuardedHttpProtocol``
gives each request ``header_timeout`` seconds from its first byte (or from the connection's
start) to complete its headers, and then ``body_timeout`` seconds between pieces of its body;
a client that misses either is disconnected. While the application itself has paused reading
(it has not consumed the body yet), the client is not blamed and the deadline waits.

Nor does uvicorn bound a request's head: a client could send a gigabyte of headers within the
deadline, or a hundred thousand of them, all buffered. A head over ``MAX_HEAD_BYTES`` or with
more than ``MAX_HEADERS`` fields is answered 431 and the connection closed. Every answer the
protocol gives itself (these, and uvicorn's 400 for a request it cannot parse) is JSON in the
shape of the application's errors.
"""

from __future__ import annotations

import asyncio
import http
from typing import Any

import orjson
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEAD_BYTES = 64 * 1024
"""Bytes of a request's line and headers (nginx's default is 32 KiB, Apache's 100 x 8 KiB)."""
MAX_HEADERS = 100
"""Header fields of one request (Apache's default)."""


def error_bytes(status: int, message: str) -> bytes:
    return orjson.dumps({"error": {"status": status, "message": message}})


def _refusal(status: int, message: str) -> Any:
    """An ASGI application answering ``status`` with ``message`` and closing the connection."""
    body = error_bytes(status, message)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return app


class GuardedHttpProtocol(HttpToolsProtocol):
    header_timeout: float = 10.0
    body_timeout: float = 60.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._head_bytes: int | None = 0  # of the request being received; None once its head is in

    def data_received(self, data: bytes) -> None:
        if self._head_bytes is not None:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._head_bytes is not None and self._head_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
            self._send_error(431, f"request headers exceed {MAX_HEAD_BYTES} bytes")

    def send_400_response(self, msg: str) -> None:
        self._send_error(400, f"{msg.removesuffix('.')}: not valid HTTP/1.1, or a URL over 65535 bytes")

    def _send_error(self, status: int, message: str) -> None:
        """Answer a request the application never saw, and close the connection."""
        body = error_bytes(status, message)
        phrase = http.HTTPStatus(status).phrase.encode()
        head = [b"HTTP/1.1 %d %s\r\n" % (status, phrase)]
        head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
        head += [b"content-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % len(body)]
        self.transport.write(b"".join(head) + body)
        self.transport.close()

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expired, seconds)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self, seconds: float) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.flow is not None and self.flow.read_paused:
            self._arm(seconds)  # the application is behind, not the client
            return
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm(self.header_timeout)

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
        refused = None
        if size > MAX_HEAD_BYTES:
            refused = _refusal(431, f"request headers exceed {MAX_HEAD_BYTES} bytes")
        elif len(self.headers) > MAX_HEADERS:
            refused = _refusal(431, f"a request may have at most {MAX_HEADERS} header fields")
        if refused is None:
            super().on_headers_complete()
        else:
            app, self.app = self.app, refused  # uvicorn starts the request's cycle with self.app
            try:
                super().on_headers_complete()
            finally:
                self.app = app
        self._arm(self.body_timeout)

    def on_body(self, body: bytes) -> None:
        cycle = self.cycle
        if cycle.body or cycle.response_complete or self.parser.should_upgrade():
            super().on_body(body)
        else:
            # The piece as it came: uvicorn would append it to an empty bytearray and copy that
            # back into bytes when the application receives it (two copies of every body byte);
            # ``receive`` hands over ``bytes(body)``, which is ``body`` itself.
            cycle.body = body  # type: ignore[assignment]
            if len(body) > HIGH_WATER_LIMIT:
                self.flow.pause_reading()
            cycle.message_event.set()
        self._arm(self.body_timeout)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()
        self._head_bytes = 0  # the next request on this connection starts its head


def configure(header_timeout: float, body_timeout: float) -> None:
    """Set the deadlines of this process's connections. uvicorn makes protocol instances from a
    class named by import path (so that worker processes can load it); the application factory,
    which runs in every worker with the validated settings, calls this before serving."""
    GuardedHttpProtocol.header_timeout = header_timeout
    GuardedHttpProtocol.body_timeout = body_timeout


PROTOCOL_PATH = f"{__name__}:GuardedHttpProtocol"
