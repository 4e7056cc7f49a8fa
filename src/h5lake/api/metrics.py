"""``GET /metrics``: the Prometheus text format, summed over every worker process.

Requests are counted into plain per-process numbers (`api/observe.Tally`, storage operations
into `api/metering.STORE`) and written into prometheus-client's values once a second
(`FLUSH_SECONDS`) by a task of each worker, and at its end; a scrape first flushes the process
that answers it. With several processes (``h5lake serve`` always sets it up) prometheus-client's
multiprocess mode keeps each process's values in files of a folder of the server's own
(``PROMETHEUS_MULTIPROC_DIR``, made empty at start-up by ``h5lake serve``) and a scrape sums
them (`api/exposition.py`). Counters of other workers may so lag by up to `FLUSH_SECONDS`.
The values of every label set the flush is likely to meet are made as a worker starts
(`prepare`), so that no request pays for making them.

Labels are bounded: methods, route templates (``/datasets/{id}/value``, never an id), statuses,
storage operations and outcomes. No label carries a domain, a user or an id.

Who may read it: an admin (``--admin``, or a token's admin claim), or anyone with the bearer
token given with ``--metrics-token`` (compared in constant time); anyone else gets 401.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import time
from bisect import bisect_left
from collections.abc import Iterable
from typing import Any

import numpy as np
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from h5lake import __version__
from h5lake.api import connections
from h5lake.api.exposition import exposition
from h5lake.api.metering import _OPS, _SLOTS, OUTCOMES, STORE, OpTally
from h5lake.api.observe import DURATION_BUCKETS, READY_TIMEOUT, Tally
from h5lake.errors import Unauthorized
from h5lake.versions.gc import GcRecord, read_record

FLUSH_SECONDS = 1.0
_clock = time.perf_counter

#: Requests whose route tells what happened, counted as named operations (2xx replies only).
VERSION_OPS = {
    ("POST", "/versions"): "commit",
    ("POST", "/versions/{vid}/restore"): "restore",
    ("DELETE", "/versions/{vid}"): "delete",
    ("PUT", "/versions/tags/{name}"): "tag",
    ("DELETE", "/versions/tags/{name}"): "untag",
}
MAP_PREFIX = "/maps"


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


#: The statuses of success whose request counts `prepare` makes for a route, by method.
SUCCESS = {"GET": ("200",), "PUT": ("200", "201"), "POST": ("200", "201"), "DELETE": ("200",)}


def prepare(routes: Iterable[BaseRoute]) -> None:
    """Make, as a worker starts, the prometheus-client values the flush would otherwise make the
    first time it meets their labels, for the traffic every client makes: each storage
    operation's histogram, outcome counts and bytes, and for each route template of ``routes``
    (the HDF REST API's) and method but HEAD its duration histogram and its counts of success
    (`SUCCESS`). Making a value costs prometheus-client a JSON key and a slot in its file (a
    histogram's 18: ~0.45 ms with several processes, a counter's ~0.04 ms), which the flush
    would otherwise pay while requests wait. Other label sets (errors, HEAD, the viewer's and
    Zarr's routes) are still made on first use: each value made costs every scrape ~20 us to
    read back (prometheus-client parses its key each time), so making all of them (~3,800
    values) would cost each scrape ~75 ms per worker. Series at zero are left out of a scrape
    (`api/exposition.counted`)."""
    _declare()
    for route in routes:
        path = getattr(route, "path", None)
        for method in sorted(getattr(route, "methods", None) or ()):
            if path is None or method not in SUCCESS:
                continue
            _child("duration", (method, path))
            for status in SUCCESS[method]:
                _child("requests", (method, path, status))
    for op in _OPS:
        _child("storage_duration", (op,))
        for outcome in OUTCOMES:
            _child("storage_ops", (op, outcome))
    for direction in ("read", "written"):
        _child("storage_bytes", (direction,))


def flush(requests: Tally, service: Any | None) -> None:
    """Write what this process counted since the last flush into the Prometheus values. Each
    value written costs prometheus-client a lock, a ``getpid`` and, with several processes, a
    write into its file, so only values that changed are written, and label lookups are kept
    (`_child`)."""
    m = _METRICS
    answered = requests.take()
    if answered:
        fold_requests(answered)
    _add_new(m["bytes_in"], "bytes_in", requests.bytes_in)
    _add_new(m["bytes_out"], "bytes_out", requests.bytes_out)
    _add_new(m["auth_failures"], "auth_failures", requests.auth_failures)
    _set_new(m["inflight"], "inflight", requests.started - requests.count)
    _set_new(m["connections"], "connections", open_connections())
    moved = {"read": 0, "written": 0}
    for op, tally in STORE.take().items():
        fold_store(op, tally, moved)
    for direction, n in moved.items():
        if n:
            _child("storage_bytes", (direction,)).inc(n)
    budget = getattr(service, "replies", None)
    if budget is not None:
        _set_new(m["budget_used"], "budget_used", budget.used)
        _set_new(m["budget_capacity"], "budget_capacity", budget.capacity)
        _add_new(m["budget_waits"], "budget_waits", budget.waits)


_SEEN: dict[str, int] = {}
_CHILDREN: dict[tuple[str, tuple[str, ...]], Any] = {}
_BOUNDS = np.array(DURATION_BUCKETS)
_FEW = 32  # durations bucketed one by one below this many; with numpy from it


def _child(name: str, labels: tuple[str, ...]) -> Any:
    """The metric ``name``'s child of these label values (prometheus-client's ``labels()``
    validates and locks on every call; the children are kept here)."""
    found = _CHILDREN.get((name, labels))
    if found is None:
        found = _CHILDREN[name, labels] = _METRICS[name].labels(*labels)
    return found


def _add_new(counter: Any, name: str, ever: int) -> None:
    """Add to ``counter`` what the running total ``ever`` grew by since the last flush."""
    grown = ever - _SEEN.get(name, 0)
    if grown:
        counter.inc(grown)
        _SEEN[name] = ever


def _set_new(gauge: Any, name: str, now: int) -> None:
    """Set ``gauge`` to ``now`` when that differs from what the last flush set."""
    if _SEEN.get(name) != now:
        gauge.set(now)
        _SEEN[name] = now


def _histogram(durations: list[float]) -> tuple[dict[int, int], float]:
    """Bucket counts (index into `DURATION_BUCKETS`, its length for +Inf; not cumulative, only
    buckets that got any) and the sum of durations."""
    if len(durations) < _FEW:
        counts: dict[int, int] = {}
        for d in durations:
            slot = bisect_left(DURATION_BUCKETS, d)
            counts[slot] = counts.get(slot, 0) + 1
        return counts, sum(durations)
    values = np.fromiter(durations, dtype=np.float64, count=len(durations))
    binned = np.bincount(np.searchsorted(_BOUNDS, values), minlength=_SLOTS)
    return {int(i): int(binned[i]) for i in np.flatnonzero(binned)}, float(values.sum())


def fold_requests(answered: dict[tuple[str, str | None, int], list[float]]) -> None:
    """Add requests answered (`api/observe.Tally`) to the request counters and histogram."""
    by_route: dict[tuple[str, str], list[float]] = {}
    for (method, route, status), durations in answered.items():
        route = route or "unmatched"
        status = status or 500  # an error before any reply: the server's 500
        n = len(durations)
        _child("requests", (method, route, str(status))).inc(n)
        if 200 <= status < 300:
            op = VERSION_OPS.get((method, route))
            if op is not None:
                _child("versions", (op,)).inc(n)
            elif route.startswith(MAP_PREFIX):
                _child("maps", (method, route)).inc(n)
        same = by_route.get((method, route))
        if same is None:
            by_route[method, route] = durations
        else:
            same.extend(durations)
    for (method, route), durations in by_route.items():
        _add_histogram(_child("duration", (method, route)), *_histogram(durations))


def fold_store(op: str, tally: OpTally, moved: dict[str, int]) -> None:
    """Add one storage operation's calls (`OpTally`) to the storage counters and histogram, and
    its bytes to ``moved`` (by direction: written once for all operations)."""
    for outcome in OUTCOMES:
        n = getattr(tally, outcome)
        if n:
            _child("storage_ops", (op, outcome)).inc(n)
    counts = {slot: n for slot, n in enumerate(tally.buckets) if n}
    if counts:
        _add_histogram(_child("storage_duration", (op,)), counts, tally.seconds)
    if tally.bytes:
        moved["read" if _OPS[op] == "read" else "written"] += tally.bytes


def _add_histogram(child: Any, counts: dict[int, int], total: float) -> None:
    """Add bucket counts (by bucket index, not cumulative, +Inf last) and a sum to a histogram's
    values. prometheus-client offers only ``observe`` (one value at a time); its child keeps one
    value per bucket (not cumulative) and one for the sum, which are added to here."""
    buckets = child._buckets
    for slot, n in counts.items():
        buckets[slot].inc(n)
    child._sum.inc(total)


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


async def _gc_record(service: Any) -> GcRecord | None:
    """The store's gc record, or None when the store does not answer within `READY_TIMEOUT`."""
    store = getattr(service, "store", None)
    if store is None:
        return None
    try:
        record, _ = await asyncio.wait_for(read_record(store), READY_TIMEOUT)
    except Exception:  # noqa: BLE001  (the store's failure: the scrape still answers, without these)
        return None
    return record


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
    service = getattr(request.app, "service", None)
    if _TALLY is not None:
        flush(_TALLY, service)
    record = await _gc_record(service)
    return Response(await asyncio.to_thread(exposition, record), media_type=CONTENT_TYPE_LATEST)


ROUTES = [Route("/metrics", get_metrics, methods=["GET"])]
