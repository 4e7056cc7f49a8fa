"""CPU that request ids and metrics add to one request, measured apart from the rest.

    python bench/observe_cost.py [--requests 200000]

End-to-end figures (``bench/server_cost.py --compare-metrics``) differ by less than their noise
on a shared machine; this measures the added work itself, in one process, with
``time.process_time``:

* **request**: `api/observe.Observe` around an application that answers a 500-byte reply
  (start and body messages), with nothing (the bare application), request ids only
  (``--no-metrics``) and request ids with counting (metrics on);
* **storage operation**: a store ``get`` with and without the wrapper of `api/metrics.metered`.

A group GET makes two storage operations (docs/operations.md): metrics add the difference
"ids + metrics" minus "ids only" plus two storage wrappers to its server CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from h5lake.api.metrics import _timed
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.rounds))
