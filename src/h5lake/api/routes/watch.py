"""The watch at the HTTP edge: ``GET /datasets/{id}?wait=S`` and ``GET /datasets/{id}/shape?wait=S``.

With ``If-None-Match`` naming the ETag of the reply a client has, the request is answered as
soon as the reply would differ (200, the new state) or after ``S`` seconds (304, no body); a
client without ``If-None-Match``, or whose ETag is already out of date, gets the 200 at once.
Permission and existence are checked first (403, 404 at once, never a wait). A waiter is a
coroutine waiting on `service.datasets.watch` (no thread); a client that hangs up ends its wait at once.
Every reply of these routes carries an ETag (docs/api.md, "The watch").
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from h5lake.api.http import caller, service
from h5lake.errors import CallerGone, InvalidInput
from h5lake.model.ids import object_key

MAX_WAIT = 60.0
"""Longest ``wait`` a request may ask, in seconds."""


def wait_param(request: Request) -> float | None:
    """``wait=S`` (seconds, 0 to `MAX_WAIT`, decimals allowed), or None when not given."""
    text = request.query_params.get("wait")
    if text is None:
        return None
    try:
        seconds = float(text)
    except ValueError:
        raise InvalidInput(f"wait must be a number of seconds, got {text[:40]!r}") from None
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_WAIT:
        raise InvalidInput(f"wait must be between 0 and {MAX_WAIT:g} seconds")
    return seconds


def etag_of(response: Response) -> bytes:
    """The reply's ETag header (added when the reply has none, as for one past ETAG_MAX_BYTES)."""
    for name, value in response.raw_headers:
        if name == b"etag":
            return value
    value = b'"' + hashlib.blake2b(bytes(response.body), digest_size=12).hexdigest().encode() + b'"'
    response.raw_headers.append((b"etag", value))
    return value


def _matches(header: str | None, etag: bytes) -> bool:
    if header is None:
        return False
    wanted = etag.decode("latin-1")
    return any(tag.strip().removeprefix("W/") in (wanted, "*") for tag in header.split(","))


async def watched(request: Request, dset_id: str, seconds: float, reply: Callable[[], Awaitable[Response]]) -> Response:
    """The reply ``reply()`` makes, once it differs from the client's ``If-None-Match`` or when
    ``seconds`` have passed (304)."""
    header = request.headers.get("if-none-match")
    asked = (dset_id, request.url.path, request.url.query, request.headers.get("host"), caller(request).user)
    # authorizes: a caller without read gets its 403 now. Made after this request came (a change
    # acknowledged before it is in it), shared by the requests that came while one was in flight
    first = await _fresh(asked, reply)
    if not _matches(header, etag_of(first)):
        return first
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    gone = asyncio.ensure_future(_hung_up(request))
    try:
        async with service(request).watch.watching(object_key(dset_id)) as watcher:
            seen = watcher.etag
            # again: the document may have changed before the watch began (waiters that asked the
            # same thing at once share this reply)
            now = await _shared((seen, *asked), reply)
            while _matches(header, etag := etag_of(now)):
                if loop.time() >= deadline:
                    return _not_modified(etag)
                # the waiters woken by one change that asked the same thing share one reply,
                # made once before they are woken
                got = await watcher.made_at_change(seen, asked, reply, deadline, gone)
                if got is None:
                    if gone.done():
                        raise CallerGone("the client hung up while waiting")
                    return _not_modified(etag)
                seen, now = got
            return now
    finally:
        gone.cancel()


_MAKING: dict[tuple[object, ...], asyncio.Task[Response]] = {}
"""Replies being made for waiters, by what they asked and the document's ETag they saw."""


async def _shared(key: tuple[object, ...], reply: Callable[[], Awaitable[Response]]) -> Response:
    """``reply()``, or the reply another waiter is making for the same ``key``."""
    making = _MAKING.get(key)
    if making is None:
        making = _MAKING[key] = asyncio.ensure_future(reply())
        making.add_done_callback(lambda _: _MAKING.pop(key, None))
    return await asyncio.shield(making)


@dataclass
class _Flight:
    running: asyncio.Task[Response] | None = None  # the reply being made
    after: asyncio.Future[Response] | None = None  # for those who came while it was: the next one


_FLIGHTS: dict[tuple[object, ...], _Flight] = {}
"""The first replies of waiters being made, by what they asked."""


async def _fresh(key: tuple[object, ...], reply: Callable[[], Awaitable[Response]]) -> Response:
    """``reply()`` made after this call began: the one being made for ``key`` if none is yet,
    else the next one, begun once it is done and shared by every call that came meanwhile. So
    1,000 clients that send their wait at once cost a few replies (store reads), not 1,000."""
    flight = _FLIGHTS.get(key)
    if flight is None:
        flight = _FLIGHTS[key] = _Flight()
    if flight.running is None:
        flight.running = _begin(key, flight, reply)
        return await asyncio.shield(flight.running)
    if flight.after is None:
        flight.after = asyncio.get_running_loop().create_future()
    return await asyncio.shield(flight.after)


def _begin(key: tuple[object, ...], flight: _Flight, reply: Callable[[], Awaitable[Response]]) -> asyncio.Task[Response]:
    task = asyncio.ensure_future(reply())

    def done(_: object) -> None:
        if not task.cancelled():
            task.exception()  # retrieved: each caller that still waits has it raised
        after, flight.after = flight.after, None
        if after is None:
            flight.running = None
            if _FLIGHTS.get(key) is flight:
                del _FLIGHTS[key]
            return
        flight.running = _begin(key, flight, reply)
        flight.running.add_done_callback(lambda made: _pass_on(made, after))

    task.add_done_callback(done)
    return task


def _pass_on(made: asyncio.Task[Response], to: asyncio.Future[Response]) -> None:
    if to.done():
        return
    if made.cancelled():
        to.cancel()
    elif (exc := made.exception()) is not None:
        to.set_exception(exc)
        to.exception()  # retrieved, as above
    else:
        to.set_result(made.result())


def _not_modified(etag: bytes) -> Response:
    response = Response(status_code=304)
    response.raw_headers = [(b"etag", etag)]
    return response


async def _hung_up(request: Request) -> None:
    """Return when the client disconnects (a GET has no body: the next message is that)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
