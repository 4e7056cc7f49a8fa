"""What an operator sees of each request: its id, the access log line, the figures for
``/metrics`` (`api/metrics.py`), and the health and readiness answers.

`Observe` wraps the whole application (`api/app.App`), outside the fast path (`api/fast.py`)
and Starlette's stack, so every reply the application gives passes it. Per request it:

* picks the request id: the client's ``X-Request-Id`` when it is at most 128 characters of
  ``[A-Za-z0-9._:@+=/-]``, else a new one (a random prefix per process and a counter); the id
  is sent back as ``X-Request-Id``, is in the JSON body of every error (`request_id`, through
  the `REQUEST_ID` context variable that `api/errors.error_response` reads) and in log lines;
* answers ``GET /healthz`` (200 while the process serves) and ``GET /readyz`` (200 when the
  store answers a cheap probe within `READY_TIMEOUT` seconds; 503 otherwise, and from the
  moment a graceful shutdown starts) itself, before authentication;
* counts the request into plain per-process numbers (`Tally`, a few dictionary updates; the
  Prometheus values are written from them once a second, off the request path);
* writes one access-log line (``--access-log json|text``), with the path but not the query
  string's secrets (``api_key``, ``password``, ``token`` and the like are replaced by ``***``)
  and never a header's value.

Replies the HTTP protocol gives before the application sees a request (`api/connections.py`:
431, 400, 503 over ``--max-connections``) carry an id of their own made there (`new_id`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import secrets
import time
import urllib.parse
from contextvars import ContextVar
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from h5lake.api.stopping import SHUTDOWN
from h5lake.errors import Unauthorized
from h5lake.storage import Store

REQUEST_ID: ContextVar[str] = ContextVar("h5lake_request_id", default="")
HEADER = b"x-request-id"
_SAFE_ID = re.compile(rb"[A-Za-z0-9._:@+=/-]{1,128}")
_PREFIX = secrets.token_hex(5)
_COUNTER = itertools.count()
READY_TIMEOUT = 2.0
READY_CACHE_SECONDS = 1.0  # one store probe per second at most, however often /readyz is asked
PROBE_KEY = "h5lake-readiness-probe"
#: Histogram bounds of request and storage durations (seconds).
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_SECRET_PARAMS = frozenset({"api_key", "apikey", "key", "password", "passwd", "token", "access_token", "secret", "auth"})

access_log = logging.getLogger("h5lake.access")
_clock = time.perf_counter
READINTO = "h5lake.readinto"  # the ASGI scope extension of `api/connections.py`


def new_id() -> str:
    """A request id unique with high probability: the process's random prefix and a counter."""
    return f"{_PREFIX}{next(_COUNTER):x}"


def request_id_of(value: bytes | None) -> str:
    """The client's id when it is sane, else a new one."""
    if value is not None and _SAFE_ID.fullmatch(value):
        return value.decode("ascii")
    return new_id()


def safe_path(scope: Scope) -> str:
    """The request's path and query string, with secret parameters' values replaced."""
    path: str = scope.get("path", "")
    query: bytes = scope.get("query_string", b"")
    if not query:
        return path
    text = query.decode("latin-1")
    pairs = urllib.parse.parse_qsl(text, keep_blank_values=True)
    if not any(name.lower() in _SECRET_PARAMS for name, _ in pairs):
        return f"{path}?{text}"
    shown = [(name, "***" if name.lower() in _SECRET_PARAMS else value) for name, value in pairs]
    return f"{path}?{urllib.parse.urlencode(shown, safe='*/')}"


class Tally:
    """This process's requests answered since the last flush into Prometheus (`api/metrics.py`):
    per (method, route template, status) the seconds each took, and the bytes received and sent,
    so that a request costs a dictionary lookup and a few additions; the flush, once a second,
    adds them up (`api/metrics.fold_requests`). A route template of None: no route
    matched; a status of 0: the application sent none."""

    __slots__ = ("answered", "auth_failures", "bytes_in", "bytes_out", "count", "started")

    def __init__(self) -> None:
        self.answered: dict[tuple[str, str | None, int], list[float]] = {}
        self.count = 0  # requests answered, ever, up to the last `take`
        self.started = 0  # requests begun, ever: those in flight are this minus `count`
        self.auth_failures = 0  # ever
        self.bytes_in = 0  # ever
        self.bytes_out = 0  # ever

    def take(self) -> dict[tuple[str, str | None, int], list[float]]:
        """The requests answered since the last call (the running totals stay; `count` is
        brought up to date here, not by each request)."""
        answered, self.answered = self.answered, {}
        self.count += sum(len(durations) for durations in answered.values())
        return answered


class _CountedBody:
    """The body bytes a request without ``Content-Length`` (``Transfer-Encoding: chunked``)
    delivered, through ``receive`` or the ``h5lake.readinto`` extension (which takes the place
    of this request's own in ``scope``)."""

    __slots__ = ("_readinto", "_receive", "n")

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.n = 0
        self._receive = receive
        extensions = scope.get("extensions") or {}
        readinto = extensions.get(READINTO)
        if readinto is not None:
            self._readinto = readinto
            scope["extensions"] = {**extensions, READINTO: self.readinto}

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request":
            self.n += len(message.get("body", b""))
        return message

    async def readinto(self, view: memoryview) -> int:
        n: int = await self._readinto(view)
        self.n += n
        return n


class Readiness:
    """Whether this process should get traffic: not while shutting down, and only while its
    store answers a cheap request (a ``head`` of a key that need not exist) in time."""

    def __init__(self) -> None:
        self._stopping = False
        self.store: Store | None = None
        self._checked = -1e9
        self._ready = False
        self._probe: asyncio.Task[bool] | None = None

    @property
    def stopping(self) -> bool:
        return self._stopping or SHUTDOWN.is_set()

    @stopping.setter
    def stopping(self, value: bool) -> None:
        self._stopping = value

    async def ready(self) -> bool:
        if self.stopping or self.store is None:
            return False
        now = time.monotonic()
        if now - self._checked < READY_CACHE_SECONDS:
            return self._ready
        if self._probe is None or self._probe.done():
            self._probe = asyncio.ensure_future(self._check(self.store))
        return await asyncio.shield(self._probe)

    async def _check(self, store: Store) -> bool:
        try:
            await asyncio.wait_for(store.head(PROBE_KEY), READY_TIMEOUT)
            ok = True
        except Exception:  # noqa: BLE001  (whatever the store raised, or no answer in time: not ready)
            ok = False
        self._ready, self._checked = ok, time.monotonic()
        return ok


READINESS = Readiness()
"""This process's readiness (one application per process serves)."""


async def _answer(send: Send, status: int, body: dict[str, Any], rid: bytes, extra: list[tuple[bytes, bytes]] | None = None) -> int:
    data = orjson.dumps(body)
    headers = [
        (b"content-type", b"application/json; charset=utf-8"),
        (b"content-length", b"%d" % len(data)),
        (b"cache-control", b"no-store"),
        (HEADER, rid),
        *(extra or ()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
    return len(data)


class Observe:
    """The ASGI wrapper described in the module docstring. ``tally`` None: no metrics;
    ``log_format`` None: no access log."""

    def __init__(self, app: ASGIApp, tally: Tally | None, log_format: str | None) -> None:
        self.app = app
        self.tally = tally
        self.log_format = log_format
        self.worker = os.getpid()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = None
        length = 0
        chunked = False
        for name, value in scope["headers"]:
            if name == HEADER:
                given = value
            elif name == b"content-length" and value.isdigit():
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = True
        rid = request_id_of(given)
        REQUEST_ID.set(rid)  # this request's task's own context
        rid_bytes = rid.encode()
        path = scope["path"]
        if path in ("/healthz", "/readyz"):
            await self._health(scope, send, rid_bytes, length)
            return
        tally, log_format = self.tally, self.log_format
        if tally is None and log_format is None:

            async def stamping(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message["headers"] = [*message.get("headers", ()), (HEADER, rid_bytes)]
                await send(message)

            await self.app(scope, receive, stamping)
            return
        counted = None
        if chunked:  # no Content-Length: the body's bytes are counted as the application takes them
            counted = _CountedBody(scope, receive)
            receive = counted.receive
        start = _clock()
        reply = [0, 0]  # status, body bytes

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), (HEADER, rid_bytes)]
                reply[0] = message["status"]
            elif message["type"] == "http.response.body":
                reply[1] += len(message.get("body", b""))
            await send(message)

        if tally is not None:
            tally.started += 1
        try:
            await self.app(scope, receive, sending)
        finally:
            seconds = _clock() - start
            if counted is not None:
                length = counted.n
            if tally is not None:
                key = (scope["method"], getattr(scope.get("route"), "path", None), reply[0])
                durations = tally.answered.get(key)
                if durations is None:
                    tally.answered[key] = [seconds]
                else:
                    durations.append(seconds)
                if length:
                    tally.bytes_in += length
                tally.bytes_out += reply[1]
                if reply[0] == 401 and isinstance(scope.get("state", {}).get("identity"), Unauthorized):
                    tally.auth_failures += 1
            if log_format is not None:
                self._log(scope, rid, reply[0] or 500, length, reply[1], seconds)

    async def _health(self, scope: Scope, send: Send, rid: bytes, length: int) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            error = {"error": {"status": 405, "message": "Method Not Allowed", "request_id": rid.decode()}}
            sent = await _answer(send, 405, error, rid, [(b"allow", b"GET, HEAD")])
            if self.log_format is not None:
                self._log(scope, rid.decode(), 405, length, sent, 0.0)
            return
        if scope["path"] == "/healthz":
            status, body = 200, {"status": "ok"}
        else:
            ready = await READINESS.ready()
            status = 200 if ready else 503
            reason = "shutting down" if READINESS.stopping else "ready" if ready else "store not answering"
            body = {"status": "ok" if ready else "unavailable", "reason": reason}
        start = time.perf_counter()
        sent = await _answer(send, status, body, rid)
        if self.log_format is not None:
            self._log(scope, rid.decode(), status, length, sent, time.perf_counter() - start)

    def _log(self, scope: Scope, rid: str, status: int, bytes_in: int, bytes_out: int, seconds: float) -> None:
        identity = scope.get("state", {}).get("identity")
        user = getattr(identity, "user", None)
        fields = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}Z",
            "request_id": rid,
            "user": user,
            "method": scope["method"],
            "path": safe_path(scope),
            "status": status,
            "bytes_in": bytes_in,
            "bytes_out": bytes_out,
            "duration_ms": round(seconds * 1000, 3),
            "worker": self.worker,
        }
        if self.log_format == "json":
            access_log.info(orjson.dumps(fields).decode())
        else:
            access_log.info(
                '%(time)s %(request_id)s %(user)s "%(method)s %(path)s" %(status)d %(bytes_in)d %(bytes_out)d '
                "%(duration_ms).3fms worker=%(worker)d",
                {**fields, "user": user or "-"},
            )


def configure_access_log() -> None:
    """Access lines go to stderr, one per line, whatever uvicorn's log level (they are asked for
    by ``--access-log``)."""
    access_log.setLevel(logging.INFO)
    access_log.propagate = False
    if any(getattr(h, "h5lake_access", False) for h in access_log.handlers):
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.h5lake_access = True  # type: ignore[attr-defined]
    access_log.addHandler(handler)
