"""Connections that cannot pin the server: uvicorn's HTTP protocol with read deadlines.

uvicorn closes a keep-alive connection that stays idle after a response, but not one that never
finishes sending its request: a client that opens a connection and sends nothing, or half the
headers, or a body one byte a minute, holds a socket and buffers forever. ``GuardedHttpProtocol``
gives each request ``header_timeout`` seconds from its first byte (or from the connection's
start) to complete its headers, and then ``body_timeout`` seconds between pieces of its body;
a client that misses either is disconnected. While the application itself has paused reading
(it has not consumed the body yet), the client is not blamed and the deadline waits.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class GuardedHttpProtocol(HttpToolsProtocol):
    header_timeout: float = 10.0
    body_timeout: float = 60.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._until: float | None = None  # when the current deadline passes (loop time); None: none
        self._seconds = 0.0

    # A deadline is moved at every request's start, end of headers and body piece, so it is kept
    # as a time, not as a timer: the one timer of the connection fires at or before it and
    # re-arms itself for what is left (a call_later and a cancel each time were ~6 us a request).

    def _arm(self, seconds: float) -> None:
        self._seconds = seconds
        self._until = until = self.loop.time() + seconds
        handle = self._deadline
        if handle is None or handle.when() > until:
            if handle is not None:
                handle.cancel()
            self._deadline = self.loop.call_at(until, self._check)

    def _disarm(self) -> None:
        self._until = None  # a pending timer then finds nothing to do

    def _check(self) -> None:
        self._deadline = None
        until = self._until
        if until is None:
            return
        if self.loop.time() < until:
            self._deadline = self.loop.call_at(until, self._check)
            return
        self._until = None
        self._expired(self._seconds)

    def _expired(self, seconds: float) -> None:
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
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm(self.header_timeout)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
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


def configure(header_timeout: float, body_timeout: float) -> None:
    """Set the deadlines of this process's connections. uvicorn makes protocol instances from a
    class named by import path (so that worker processes can load it); the application factory,
    which runs in every worker with the validated settings, calls this before serving."""
    GuardedHttpProtocol.header_timeout = header_timeout
    GuardedHttpProtocol.body_timeout = body_timeout


PROTOCOL_PATH = f"{__name__}:GuardedHttpProtocol"
