"""Connections that cannot pin the server: uvicorn's HTTP protocol with read deadlines, and a
large request body read past the HTTP parser into the application's own buffer.

uvicorn closes a keep-alive connection that stays idle after a response, but not one that never
finishes sending its request: a client that opens a connection and sends nothing, or half the
headers, or a body one byte a minute, holds a socket and buffers forever. ``GuardedHttpProtocol``
gives each request ``header_timeout`` seconds from its first byte (or from the connection's
start) to complete its headers, and then ``body_timeout`` seconds between pieces of its body;
a client that misses either is disconnected. While the application itself has paused reading
(it has not consumed the body yet), the client is not blamed and the deadline waits.

Bodies of at least ``DIRECT_MIN`` bytes with a ``Content-Length`` skip the parser once their
headers are parsed: llhttp would only count their bytes, while httptools copies every piece into
a new ``bytes`` and uvicorn's ``receive`` hands it over one ASGI message at a time. The body's
bytes are then delivered as they came, and an application that passes a buffer to
``scope["extensions"]["h5lake.readinto"]`` (``await readinto(memoryview)``: the number of bytes
placed, 0 at the end of the body) has them copied straight into it from the socket's pieces. At
the end of such a body the connection's parser is replaced by a fresh one for the next request.
``receive`` keeps working for any body (the pieces are handed over as ``http.request`` messages).

Nor does uvicorn bound a request's head: a client could send a gigabyte of headers within the
deadline, or a hundred thousand of them, all buffered. A head over ``MAX_HEAD_BYTES`` or with
more than ``MAX_HEADERS`` fields is answered 431 and the connection closed. Every answer the
protocol gives itself (these, uvicorn's 400 for a request it cannot parse and its 503 over
``limit_concurrency``) is JSON in the shape of the application's errors.

uvicorn writes a reply's head and its body in two sends: two loopback segments, two wake-ups of
the client, a system call more per request. Here the head is held and written with the body's
first piece in one ``writev`` (``_HeadWithBody``; docs/performance.md, "Group GET").
"""

from __future__ import annotations

import asyncio
import contextlib
import http
from functools import partial
from typing import Any

import httptools
import orjson
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from h5lake.api import observe

DIRECT_MIN = 1024 * 1024  # bodies from this size on skip the parser (below it, it costs little)
READINTO = observe.READINTO  # the ASGI scope extension
MAX_HEAD_BYTES = 64 * 1024
"""Bytes of a request's line and headers (nginx's default is 32 KiB, Apache's 100 x 8 KiB)."""
MAX_HEADERS = 100
"""Header fields of one request (Apache's default)."""


def error_bytes(status: int, message: str, request_id: str) -> bytes:
    return orjson.dumps({"error": {"status": status, "message": message, "request_id": request_id}})


def _refusal(status: int, message: str, extra: tuple[tuple[bytes, bytes], ...] = ()) -> Any:
    """An ASGI application answering ``status`` with ``message`` and closing the connection."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        given = next((value for name, value in scope["headers"] if name == observe.HEADER), None)
        rid = observe.request_id_of(given)
        body = error_bytes(status, message, rid)
        headers = [
            (b"content-type", b"application/json; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            (observe.HEADER, rid.encode()),
            *extra,
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return app


_BUSY = _refusal(
    503,
    "the server has as many connections as --max-connections allows; try again shortly",
    ((b"retry-after", b"1"),),
)


class _Fill:
    """A buffer an application waits to have filled with body bytes."""

    __slots__ = ("done", "filled", "view")

    def __init__(self, view: memoryview, done: asyncio.Future[int]) -> None:
        self.view, self.filled, self.done = view, 0, done


class _HeadWithBody:
    """The transport of one request's cycle (`_OneSendCycle`): the response's head, which
    uvicorn writes alone, is held and written with the first piece of the body, one
    ``writev`` instead of two sends (each a loopback segment the client wakes for). Anything
    else goes straight through; a close writes a held head first, as uvicorn would have (unless
    the connection is closing already: the client gone, nothing to write it to)."""

    __slots__ = ("head", "holding", "transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.head: bytes | None = None
        self.holding = False

    def write(self, data: Any) -> None:
        if self.holding:
            self.head = data  # a new ``bytes`` (uvicorn joins the head's pieces)
            return
        head = self.head
        if head is None:
            self.transport.write(data)
        else:
            self.head = None
            if self.transport.is_closing():
                # closed meanwhile (the client left, a deadline passed): uvicorn had written the
                # head while it was open; uvloop raises on a write once the handle has closed
                return
            if data:
                self.transport.writelines((head, data))
            else:
                self.transport.write(head)

    def close(self) -> None:
        if self.head is not None:
            self.write(b"")
        self.transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class _OneSendCycle(RequestResponseCycle):
    """uvicorn's cycle, with the head of its response sent together with the body's first
    piece (`_HeadWithBody`)."""

    transport: _HeadWithBody  # type: ignore[assignment]

    async def send(self, message: Any) -> None:
        transport = self.transport
        if message["type"] != "http.response.start" or self.response_started:
            await super().send(message)
            if transport.head is not None and not self.disconnected:
                transport.write(b"")  # nothing written with it (a HEAD's reply): the head alone
            return
        transport.holding = True
        try:
            await super().send(message)
        finally:
            transport.holding = False


class GuardedHttpProtocol(HttpToolsProtocol):
    header_timeout: float = 10.0
    body_timeout: float = 60.0
    live: set[Any] | None = None  # the server's open connections (uvicorn's set), for /metrics

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._due = 0.0  # loop time the timer fires at
        self._limit: float | None = None  # seconds allowed from ``_progress``; None: not armed
        self._progress = 0.0  # loop time of the last body piece (the body deadline counts from it)
        self._content_left = 0  # Content-Length bytes the parser has not delivered yet
        self._direct_left = 0  # body bytes still to come past the parser (0: parsing as usual)
        self._fill: _Fill | None = None
        self._head_bytes: int | None = 0  # of the request being received; None once its head is in

    def send_400_response(self, msg: str) -> None:
        self._send_error(400, f"{msg.removesuffix('.')}: not valid HTTP/1.1, or a URL over 65535 bytes")

    def _send_error(self, status: int, message: str) -> None:
        """Answer a request the application never saw, and close the connection."""
        rid = observe.new_id()
        body = error_bytes(status, message, rid)
        phrase = http.HTTPStatus(status).phrase.encode()
        head = [b"HTTP/1.1 %d %s\r\n" % (status, phrase)]
        head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
        head += [
            b"content-type: application/json; charset=utf-8\r\ncontent-length: %d\r\nconnection: close\r\n"
            b"x-request-id: %s\r\n\r\n" % (len(body), rid.encode())
        ]
        self.transport.write(b"".join(head) + body)
        self.transport.close()

    # -- deadlines
    # One timer per connection at most, re-checking when it fires: arming and disarming (three
    # times a request) only note the limit and the time, and a timer is made only when none is
    # due by the new deadline (a ``call_later`` and a ``cancel`` per arming cost ~6 us a request).
    def _arm(self, seconds: float) -> None:
        now = self.loop.time()
        self._progress = now
        self._limit = seconds
        if self._deadline is not None:
            if self._due <= now + seconds:
                return  # fires first, and waits on from there (`_expired`)
            self._deadline.cancel()
        self._due = now + seconds
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        self._limit = None  # a timer still due finds nothing to do

    def _cancel(self) -> None:
        self._limit = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        seconds = self._limit
        if seconds is None or self.transport.is_closing():
            return
        if self.flow is not None and self.flow.read_paused:
            self._arm(seconds)  # the application is behind, not the client
            return
        since = self.loop.time() - self._progress
        if since < seconds:  # armed again, or a body piece came, meanwhile: wait the rest from then
            self._due = self.loop.time() + seconds - since
            self._deadline = self.loop.call_later(seconds - since, self._expired)
            return
        self.transport.close()

    # -- the connection
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        GuardedHttpProtocol.live = self.connections
        self._arm(self.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        self._direct_left = 0
        self._wake()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        left = self._direct_left
        if left:
            if len(data) <= left:
                self._direct_left = left - len(data)
                self._direct_piece(data)
                if not self._direct_left:
                    self._direct_end()
                return
            self._direct_left = 0
            self._direct_piece(memoryview(data)[:left])
            self._direct_end()
            data = data[left:]  # the next request, pipelined
            if self.transport.is_closing():
                return
        if self._head_bytes is not None:
            self._head_bytes += len(data)
        super().data_received(data)
        if (
            self._head_bytes is not None
            and self._head_bytes > MAX_HEAD_BYTES
            and not self.transport.is_closing()
        ):
            self._send_error(431, f"request headers exceed {MAX_HEAD_BYTES} bytes")
            return
        if self._content_left >= DIRECT_MIN and self.cycle is not None and not self.transport.is_closing():
            self._direct_left = self._content_left  # the rest of this body skips the parser
            self._content_left = 0

    # -- parser callbacks
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._content_left = 0
        self._arm(self.header_timeout)

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
        refused = None
        if size > MAX_HEAD_BYTES:
            refused = _refusal(431, f"request headers exceed {MAX_HEAD_BYTES} bytes")
        elif len(self.headers) > MAX_HEADERS:
            refused = _refusal(431, f"a request may have at most {MAX_HEADERS} header fields")
        elif self._over_capacity():
            refused = _BUSY
            self.logger.warning("Exceeded concurrency limit.")
        if refused is None:
            super().on_headers_complete()
        else:
            # uvicorn starts the request's cycle with self.app, or with its own plain-text 503
            # when over ``limit_concurrency``: neither is consulted for a refused request
            app, self.app = self.app, refused
            limit, self.limit_concurrency = self.limit_concurrency, None
            try:
                super().on_headers_complete()
            finally:
                self.app, self.limit_concurrency = app, limit
        self._arm(self.body_timeout)
        if self.cycle is None or self.cycle.scope is not self.scope:
            return  # an upgrade: not ours to read
        self.cycle.__class__ = _OneSendCycle  # the same object, with a `send` of its own
        self.cycle.transport = _HeadWithBody(self.transport)  # type: ignore[assignment]
        extensions: dict[str, Any] = self.scope.setdefault("extensions", {})
        extensions[READINTO] = partial(self._readinto, self.cycle)
        length = None
        for name, value in self.headers:
            if name == b"transfer-encoding":
                return
            if name == b"content-length":
                length = value
        if length is not None and length.isdigit():
            self._content_left = int(length)

    def _over_capacity(self) -> bool:
        """uvicorn's own test for ``limit_concurrency`` (``--max-connections``)."""
        limit = self.limit_concurrency
        return limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit)

    def on_body(self, body: bytes) -> None:
        self._content_left -= len(body)
        cycle = self.cycle
        if cycle.body or cycle.response_complete or self.parser.should_upgrade():
            if not isinstance(cycle.body, bytearray):
                cycle.body = bytearray(cycle.body)
            super().on_body(body)
        else:
            # The piece as it came: uvicorn would append it to an empty bytearray and copy that
            # back into bytes when the application receives it (two copies of every body byte);
            # ``receive`` hands over ``bytes(body)``, which is ``body`` itself.
            cycle.body = body  # type: ignore[assignment]
            if len(body) > HIGH_WATER_LIMIT:
                self.flow.pause_reading()
            cycle.message_event.set()
        self._progress = self.loop.time()

    def on_message_complete(self) -> None:
        self._content_left = 0
        super().on_message_complete()
        self._disarm()
        self._head_bytes = 0  # the next request on this connection starts its head

    # -- a body past the parser
    def _direct_piece(self, data: bytes | memoryview) -> None:
        """Body bytes as they came: into a waiting buffer, the rest kept for the application."""
        self._progress = self.loop.time()
        cycle = self.cycle
        if cycle.response_complete:
            return  # answered already: the rest of the body is read and dropped, as uvicorn does
        fill = self._fill
        if fill is not None and not cycle.body:
            n = min(len(data), len(fill.view) - fill.filled)
            fill.view[fill.filled : fill.filled + n] = data[:n]
            fill.filled += n
            if fill.filled == len(fill.view):
                self._wake()
            if n == len(data):
                return
            data = memoryview(data)[n:]
        if cycle.body:
            if not isinstance(cycle.body, bytearray):
                cycle.body = bytearray(cycle.body)
            cycle.body += data
        else:
            cycle.body = data  # type: ignore[assignment]
        if len(cycle.body) > HIGH_WATER_LIMIT:
            self.flow.pause_reading()
        cycle.message_event.set()

    def _direct_end(self) -> None:
        """The body is complete: a fresh parser for the next request (the old one still waits
        for the bytes it never saw), and the message complete as the parser would say."""
        self.parser = httptools.HttpRequestParser(self)
        with contextlib.suppress(AttributeError):  # as uvicorn sets it up
            self.parser.set_dangerous_leniencies(lenient_data_after_close=True)
        self.on_message_complete()
        self._wake()

    def _direct_room(self) -> memoryview | None:
        """Where the socket's next bytes may go directly: the waiting buffer's free part, up
        to the body's end; None when they must be handed over as a piece."""
        fill = self._fill
        if fill is None or not self._direct_left or self.cycle.body:
            return None
        room = min(len(fill.view) - fill.filled, self._direct_left)
        return fill.view[fill.filled : fill.filled + room] if room else None

    def _direct_filled(self, n: int) -> None:
        """``n`` bytes were read into ``_direct_room()``."""
        fill = self._fill
        assert fill is not None
        self._progress = self.loop.time()
        fill.filled += n
        self._direct_left -= n
        if fill.filled == len(fill.view):
            self._wake()
        if not self._direct_left:
            self._direct_end()

    def _wake(self) -> None:
        fill, self._fill = self._fill, None
        if fill is not None and not fill.done.done():
            fill.done.set_result(fill.filled)

    async def _readinto(self, cycle: RequestResponseCycle, view: memoryview) -> int:
        """Up to ``len(view)`` bytes of ``cycle``'s request body into ``view`` (fewer only at
        its end); 0 when the body is over (or the client went away)."""
        if cycle.waiting_for_100_continue and not self.transport.is_closing():
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            cycle.waiting_for_100_continue = False
        view = view.cast("B")
        filled = 0
        while filled < len(view):
            if cycle.body:
                body = memoryview(cycle.body)
                n = min(len(body), len(view) - filled)
                view[filled : filled + n] = body[:n]
                filled += n
                cycle.body = body[n:] if n < len(body) else bytearray()  # type: ignore[assignment]
                continue
            if cycle.disconnected or cycle.response_complete or not cycle.more_body:
                break
            self.flow.resume_reading()
            if self._direct_left and cycle is self.cycle and self._fill is None:
                done: asyncio.Future[int] = self.loop.create_future()
                fill = self._fill = _Fill(view[filled:], done)
                try:
                    filled += await done
                finally:
                    if self._fill is fill:  # cancelled: no more bytes into a buffer nobody waits for
                        self._fill = None
            else:  # parsed pieces (a small body, or before the parser was left)
                await cycle.message_event.wait()
                cycle.message_event.clear()
        return filled


SCRATCH = memoryview(bytearray(256 * 1024))  # the socket's bytes when they have no place yet


class BufferedHttpProtocol:
    """``GuardedHttpProtocol`` behind uvloop's buffered-protocol interface: the socket is read
    straight into the buffer an application waits to fill (``_direct_room``), so a large body
    is copied once, by the kernel; other bytes are read into one scratch buffer per process and
    handed to the HTTP protocol as ``bytes``, as uvloop would. uvloop offers ``get_buffer``
    only to protocols that are not ``asyncio.Protocol``s, which uvicorn's is: hence a wrapper.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.http = GuardedHttpProtocol(*args, **kwargs)
        self._direct = False  # whether the last buffer handed out was the application's

    def connection_made(self, transport: asyncio.Transport) -> None:
        self.http.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.http.connection_lost(exc)

    def eof_received(self) -> None:
        self.http.eof_received()

    def pause_writing(self) -> None:
        self.http.pause_writing()

    def resume_writing(self) -> None:
        self.http.resume_writing()

    def get_buffer(self, sizehint: int) -> memoryview:
        room = None if self.http._fill is None else self.http._direct_room()  # (most reads: no call)
        self._direct = room is not None
        return SCRATCH if room is None else room

    def buffer_updated(self, nbytes: int) -> None:
        if self._direct:
            self.http._direct_filled(nbytes)
        else:  # read in one loop callback right after get_buffer: nothing else used SCRATCH since
            self.http.data_received(bytes(SCRATCH[:nbytes]))


def open_connections() -> int:
    """Client connections this process has open."""
    live = GuardedHttpProtocol.live
    return 0 if live is None else len(live)


def configure(header_timeout: float, body_timeout: float) -> None:
    """Set the deadlines of this process's connections. uvicorn makes protocol instances from a
    class named by import path (so that worker processes can load it); the application factory,
    which runs in every worker with the validated settings, calls this before serving."""
    GuardedHttpProtocol.header_timeout = header_timeout
    GuardedHttpProtocol.body_timeout = body_timeout


PROTOCOL_PATH = f"{__name__}:BufferedHttpProtocol"
