"""CPU that request ids and metrics add to one request, measured apart from the rest.

    python bench/observe_cost.py [--requests 200000]

End-to-end figures (``bench/server_cost.py --compare-metrics``) differ by less than their noise
on a shared machine; this measures the added work itself, in one process, with
``time.process_time``:

* **request**: `api/observe.Observe` around an application that answers a 500-byte reply
  (start and body messages), with nothing (the bare application), request ids only
  (``--no-metrics``) and request ids with counting (metrics on);
* **storage operation**: a store ``get`` with and without the wrapper of `api/metering.metered`.

A group GET makes two storage operations (docs/operations.md): metrics add the difference
"ids + metrics" minus "ids only" plus two storage wrappers to its server CPU.

    python bench/observe_cost.py --fold
    python bench/observe_cost.py --scrape

``--fold`` measures the once-a-second fold (`api/metrics.flush`) of 150 group GETs (each with
two storage gets) into prometheus-client's values of multiprocess mode, per request folded.

measures instead what the values a worker makes at start-up (`api/metrics.prepare`) cost: the
time to make them, and the CPU of one scrape of a worker's multiprocess files (one request
counted) with them and without them (each in a process of its own, in a new folder).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from h5lake.api.metering import _timed
from h5lake.api.observe import Observe, Tally


class _Route:
    path = "/groups/{id}"


ROUTE = _Route()
HEADERS = [(b"host", b"x"), (b"authorization", b"Basic abc"), (b"accept", b"*/*"), (b"connection", b"keep-alive")]


async def app(scope: Any, receive: Any, send: Any) -> None:
    scope["route"] = ROUTE
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b"x" * 500})


async def send(message: Any) -> None:
    return None


async def receive() -> Any:
    return {"type": "http.request", "body": b""}


class Blob:
    data = b"x" * 300


async def get(key: str) -> Blob:
    return Blob()


async def per_request(wrapped: Any, n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        scope = {"type": "http", "method": "GET", "path": "/groups/g-1", "query_string": b"domain=/a.h5", "headers": HEADERS}
        await wrapped(scope, receive, send)
    return (time.process_time() - start) / n * 1e6


async def per_get(fn: Any, n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        await fn("k")
    return (time.process_time() - start) / n * 1e6


async def main(n: int, rounds: int) -> None:
    cases = {
        "request, bare": lambda: per_request(app, n),
        "request, ids only": lambda: per_request(Observe(app, None, None), n),
        "request, ids + metrics": lambda: per_request(Observe(app, Tally(), None), n),
        "storage get, bare": lambda: per_get(get, n),
        "storage get, metered": lambda: per_get(_timed("get", "read", get), n),
    }
    found: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, case in cases.items():
            found[name].append(await case())
    for name, values in found.items():
        values.sort()
        print(f"{name:24s} {values[len(values) // 2]:6.2f} us CPU (median of {rounds}; min {values[0]:.2f})")


def fold(requests: int = 150, folds: int = 300) -> None:
    """CPU of `api/metrics.flush` after ``requests`` group GETs, per request (``PROMETHEUS_MULTIPROC_DIR``
    set by the caller)."""
    from h5lake.api import metrics
    from h5lake.api.routes import domains, objects, values

    tally = metrics.tally()
    metrics.prepare([*domains.ROUTES, *values.ROUTES, *objects.ROUTES])
    get = metrics.STORE.slot("get")
    key = ("GET", "/groups/{id}", 200)

    def answer() -> None:
        for i in range(requests):
            tally.answered.setdefault(key, []).append(0.0002 + i * 1e-6)
            tally.started += 1
            tally.bytes_out += 600
            get.buckets[0] += 2
            get.bytes += 1000

    answer()
    metrics.flush(tally, None)
    spent = 0.0
    for _ in range(folds):
        answer()
        start = time.process_time()
        metrics.flush(tally, None)
        spent += time.process_time() - start
    print(f"fold of {requests} group GETs: {spent / folds * 1e6:.1f} us CPU, {spent / folds / requests * 1e6:.3f} us a request")


def scrape_one(prepared: bool, scrapes: int = 20) -> None:
    """In this process (``PROMETHEUS_MULTIPROC_DIR`` set by the caller): make the values ahead
    or not, count one group GET, and time scrapes."""
    from h5lake.api import metrics
    from h5lake.api.exposition import exposition
    from h5lake.api.routes import domains, objects, values

    metrics.tally()
    start = time.process_time()
    if prepared:
        metrics.prepare([*domains.ROUTES, *values.ROUTES, *objects.ROUTES])
    made = time.process_time() - start
    metrics._child("requests", ("GET", "/groups/{id}", "200")).inc(1)
    metrics._child("duration", ("GET", "/groups/{id}")).observe(0.0005)
    exposition()
    start = time.process_time()
    for _ in range(scrapes):
        text = exposition()
    each = (time.process_time() - start) / scrapes
    lines = text.count(b"\n")
    print(f"values made {'at start-up' if prepared else 'on first use'}: {made * 1000:6.1f} ms to make, "
          f"{each * 1000:6.2f} ms CPU a scrape ({len(metrics._CHILDREN)} label sets, {lines} lines shown)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scrape", action="store_true", help="the cost of values made at start-up, to scrapes")
    parser.add_argument("--scrape-one", choices=("prepared", "lazy"), help=argparse.SUPPRESS)
    parser.add_argument("--fold", action="store_true", help="the once-a-second fold, per request")
    args = parser.parse_args()
    if args.fold and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        with tempfile.TemporaryDirectory() as folder:
            env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": folder}
            subprocess.run([sys.executable, __file__, "--fold"], env=env, check=True)
    elif args.fold:
        fold()
    elif args.scrape_one:
        scrape_one(args.scrape_one == "prepared")
    elif args.scrape:
        for mode in ("lazy", "prepared"):
            with tempfile.TemporaryDirectory() as folder:
                env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": folder}
                subprocess.run([sys.executable, __file__, "--scrape-one", mode], env=env, check=True)
    else:
        asyncio.run(main(args.requests, args.rounds))
