"""``GET /metrics``: the Prometheus text format, summed over every worker process.

Requests are counted into plain per-process numbers (`api/observe.Tally`, storage operations
into `StoreTally` by `metered`) and written into prometheus-client's values once a second
(`FLUSH_SECONDS`) by a task of each worker, and at its end; a scrape first flushes the process
that answers it. With several processes (``h5lake serve`` always sets it up) prometheus-client's
multiprocess mode keeps each process's values in files of a folder of the server's own
(``PROMETHEUS_MULTIPROC_DIR``, made empty at start-up by ``h5lake serve``) and a scrape sums
them. Counters of other workers may so lag by up to `FLUSH_SECONDS`.

Labels are bounded: methods, route templates (``/datasets/{id}/value``, never an id), statuses,
storage operations and outcomes. No label carries a domain, a user or an id.

Who may read it: an admin (``--admin``, or a token's admin claim), or anyone with the bearer
token given with ``--metrics-token`` (compared in constant time); anyone else gets 401.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import hmac
import os
import time
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client import REGISTRY as DEFAULT_REGISTRY
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from h5lake import __version__
from h5lake.api import connections
from h5lake.api.observe import DURATION_BUCKETS, Tally
from h5lake.errors import Unauthorized
from h5lake.storage import PreconditionFailed, Store

FLUSH_SECONDS = 1.0
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

#: Requests whose route tells what happened, counted as named operations (2xx replies only).
VERSION_OPS = {
    ("POST", "/versions"): "commit",
    ("POST", "/versions/{vid}/restore"): "restore",
    ("DELETE", "/versions/{vid}"): "delete",
    ("PUT", "/versions/tags/{name}"): "tag",
    ("DELETE", "/versions/tags/{name}"): "untag",
}
MAP_PREFIX = "/maps"


OUTCOMES = ("ok", "missing", "conflict", "error")
_SUM, _BYTES, _BUCKETS = len(OUTCOMES), len(OUTCOMES) + 1, len(OUTCOMES) + 2


class StoreTally:
    """Storage operations of this process since the last flush: per operation one list of
    numbers (a count per outcome, the seconds, the bytes, then the duration buckets), so that
    counting one is a few list updates."""

    __slots__ = ("ops",)

    def __init__(self) -> None:
        self.ops: dict[str, list[float]] = {}

    def slot(self, op: str) -> list[float]:
        found = self.ops.get(op)
        if found is None:
            found = self.ops[op] = [0.0] * (_BUCKETS + len(DURATION_BUCKETS) + 1)
        return found

    def take(self) -> dict[str, list[float]]:
        """The numbers so far, each list zeroed in place (the wrappers hold them)."""
        taken = {}
        for op, numbers in self.ops.items():
            if any(numbers[: len(OUTCOMES)]):
                taken[op] = numbers[:]
                numbers[:] = [0.0] * len(numbers)
        return taken


def _size(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, (bytes, bytearray, memoryview)):
        return len(value)
    if isinstance(value, int):
        return value
    if isinstance(value, list):
        return sum(_size(v) for v in value)
    data = getattr(value, "data", None)
    return len(data) if data is not None else 0


#: Store methods counted: the operation's name, and whether its bytes are read (from the
#: result) or written (from the ``data`` argument, the second).
_OPS = {
    "get": "read", "get_range": "read", "get_ranges": "read", "read_into": "read",
    "head": None, "delete": None, "copy": None,
    "put": "written", "put_hashed": "written",
}


def metered(store: Store) -> Store:
    """``store`` with each operation counted (by operation and outcome: ok, missing, conflict,
    error), timed and its bytes added up into `STORE`. The methods are wrapped on the object,
    so its class, and so the optional capabilities found from it, are unchanged."""
    if getattr(store, "_h5lake_metered", False):
        return store
    for name, direction in _OPS.items():
        method = getattr(store, name, None)
        if method is not None:
            setattr(store, name, _timed(name, direction, method))
    store._h5lake_metered = True  # type: ignore[attr-defined]
    return store


def _timed(op: str, direction: str | None, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """``method`` counted into `STORE` (per operation a microsecond or so: plain list updates)."""
    slot = STORE.slot(op)
    blob = op == "get"  # a Blob (its bytes in ``data``)
    clock = time.perf_counter
    bounds = DURATION_BUCKETS
    where = bisect.bisect_left

    @wraps(method)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            result = await method(*args, **kwargs)
        except BaseException as exc:
            seconds = clock() - start
            slot[2 if isinstance(exc, PreconditionFailed) else 3] += 1
            slot[_SUM] += seconds
            slot[_BUCKETS + where(bounds, seconds)] += 1
            raise
        seconds = clock() - start
        slot[1 if result is None else 0] += 1
        slot[_SUM] += seconds
        slot[_BUCKETS + where(bounds, seconds)] += 1
        if direction is not None:
            if direction == "read":
                if result is not None:
                    slot[_BYTES] += len(result.data) if blob else _size(result)
            elif len(args) > 1:
                slot[_BYTES] += _size(args[1])
        return result

    return timed


STORE = StoreTally()
_TALLY: Tally | None = None
_METRICS: dict[str, Any] = {}


def tally() -> Tally:
    """This process's request tally (one per process, whatever the number of applications)."""
    global _TALLY
    if _TALLY is None:
        _TALLY = Tally()
        _declare()
    return _TALLY


def _declare() -> None:
    if _METRICS:
        return
    buckets = (*DURATION_BUCKETS, float("inf"))
    m = _METRICS
    m["requests"] = Counter("h5lake_http_requests", "HTTP requests answered", ["method", "route", "status"])
    m["duration"] = Histogram(
        "h5lake_http_request_duration_seconds", "Time from a request's arrival to its reply's end",
        ["method", "route"], buckets=buckets,
    )
    m["bytes_in"] = Counter("h5lake_http_bytes_received", "Request body bytes (Content-Length)")
    m["bytes_out"] = Counter("h5lake_http_bytes_sent", "Reply body bytes")
    m["inflight"] = Gauge("h5lake_inflight_requests", "Requests being answered", multiprocess_mode="livesum")
    m["connections"] = Gauge("h5lake_connections", "Open client connections", multiprocess_mode="livesum")
    m["auth_failures"] = Counter("h5lake_auth_failures", "Requests whose credentials were refused (401)")
    m["storage_ops"] = Counter("h5lake_storage_operations", "Storage operations", ["op", "outcome"])
    m["storage_duration"] = Histogram(
        "h5lake_storage_operation_duration_seconds", "Time of one storage operation", ["op"], buckets=buckets,
    )
    m["storage_bytes"] = Counter("h5lake_storage_bytes", "Bytes read from and written to the store", ["direction"])
    m["budget_used"] = Gauge(
        "h5lake_reply_budget_used_bytes", "Bytes of the reply budget in use (--reply-memory-bytes)", multiprocess_mode="livesum"
    )
    m["budget_capacity"] = Gauge("h5lake_reply_budget_capacity_bytes", "The reply budget", multiprocess_mode="livesum")
    m["budget_waits"] = Counter("h5lake_reply_budget_waits", "Replies that waited for the reply budget")
    m["versions"] = Counter("h5lake_version_operations", "Version commits, restores, deletes and tag changes", ["op"])
    m["maps"] = Counter("h5lake_map_operations", "Requests on maps that succeeded", ["method", "route"])
    m["build"] = Gauge("h5lake_build_info", "The running h5lake", ["version"], multiprocess_mode="max")
    m["build"].labels(__version__).set(1)


def flush(requests: Tally, service: Any | None) -> None:
    """Write what this process counted since the last flush into the Prometheus values."""
    m = _METRICS
    taken = requests.take()
    for (method, route, status), n in taken.requests.items():
        m["requests"].labels(method, route, str(status)).inc(n)
        if 200 <= status < 300:
            op = VERSION_OPS.get((method, route))
            if op is not None:
                m["versions"].labels(op).inc(n)
            elif route.startswith(MAP_PREFIX):
                m["maps"].labels(method, route).inc(n)
    for (method, route), counts in taken.durations.items():
        _add_histogram(m["duration"].labels(method, route), counts)
    if taken.bytes_in:
        m["bytes_in"].inc(taken.bytes_in)
    if taken.bytes_out:
        m["bytes_out"].inc(taken.bytes_out)
    if taken.auth_failures:
        m["auth_failures"].inc(taken.auth_failures)
    m["inflight"].set(taken.inflight)
    m["connections"].set(open_connections())
    for op, numbers in STORE.take().items():
        for outcome, count in zip(OUTCOMES, numbers):
            if count:
                m["storage_ops"].labels(op, outcome).inc(count)
        _add_histogram(m["storage_duration"].labels(op), [*numbers[_BUCKETS:], numbers[_SUM]])
        if numbers[_BYTES]:
            m["storage_bytes"].labels("read" if _OPS[op] == "read" else "written").inc(numbers[_BYTES])
    budget = getattr(service, "replies", None)
    if budget is not None:
        m["budget_used"].set(budget.used)
        m["budget_capacity"].set(budget.capacity)
        waits = budget.waits - _SEEN.get("budget_waits", 0)
        if waits:
            m["budget_waits"].inc(waits)
        _SEEN["budget_waits"] = budget.waits


_SEEN: dict[str, int] = {}


def _add_histogram(child: Any, counts: list[float]) -> None:
    """Add a tally's bucket counts and sum to a histogram's values. prometheus-client offers
    only ``observe`` (one value at a time); its child keeps one value per bucket (not
    cumulative) and one for the sum, which are added to here."""
    for value, n in zip(child._buckets, counts[:-1]):
        if n:
            value.inc(n)
    child._sum.inc(counts[-1])


def open_connections() -> int:
    return connections.open_connections()


def start_flushing(requests: Tally, service: Any | None = None) -> asyncio.Task[None]:
    async def loop() -> None:
        while True:
            await asyncio.sleep(FLUSH_SECONDS)
            flush(requests, service)

    _SERVICE[0] = service
    return asyncio.ensure_future(loop())


_SERVICE: list[Any] = [None]


async def stop_flushing(task: asyncio.Task[None], requests: Tally | None) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    if requests is not None:
        flush(requests, _SERVICE[0])


def exposition() -> bytes:
    """The text of a scrape: every process's values when in multiprocess mode, else this one's."""
    folder = os.environ.get(MULTIPROC_ENV)
    if folder:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=folder)
        return generate_latest(registry)
    return generate_latest(DEFAULT_REGISTRY)


def allowed(request: Request) -> bool:
    token: str | None = getattr(request.app.state, "metrics_token", None)
    header = request.headers.get("authorization") or ""
    scheme, _, given = header.partition(" ")
    if token and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
        return True
    identity = request.scope.get("state", {}).get("identity")
    if identity is None or isinstance(identity, Unauthorized) or identity.user is None:
        return False
    return bool(identity.admin or identity.user in request.app.service.admins)


async def get_metrics(request: Request) -> Response:
    if not allowed(request):
        raise Unauthorized("metrics are for admins or the bearer token given with --metrics-token")
    if _TALLY is not None:
        flush(_TALLY, getattr(request.app, "service", None))
    return Response(await asyncio.to_thread(exposition), media_type=CONTENT_TYPE_LATEST)


ROUTES = [Route("/metrics", get_metrics, methods=["GET"])]
