"""SeaweedFS's CPU per small request (documents of ~1 KB), by ``weed mini`` flags, side by side.

    PYTHONPATH=src:. python bench/s3_small.py                     # default, and -filer.saveToFilerLimit=65536
    PYTHONPATH=src:. python bench/s3_small.py --config '' --config GOGC=400 --rounds 4

One SeaweedFS per configuration runs for the whole bench; each round sends, to each in turn,
``--n`` create-only PUTs (``If-None-Match: *``, as h5lake creates a document), as many GETs of
them, HEADs, and if-match PUTs (an update), ``--concurrency`` at once, through ``S3Store``.
Printed per request: SeaweedFS's CPU (its process's user + system time, idle time not
subtracted: the idle cost is printed once per server), the client's CPU and the wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable

from tests.support.procgroup import group_cpu
from tests.support.s3server import S3Server, start_s3_server

from h5lake.storage.s3 import S3Store


def body(i: int, size: int) -> bytes:
    text = f'{{"id": "g-{uuid.uuid4()}", "n": {i}, "pad": "'
    return (text + "x" * max(0, size - len(text) - 2) + '"}').encode()


async def measure(
    srv: S3Server, label: str, op: str, n: int, concurrency: int, fn: Callable[[int], Awaitable[object]]
) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            await fn(i)

    weed, client, wall = group_cpu(srv.process.pid), time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    weed = group_cpu(srv.process.pid) - weed
    client, wall = time.process_time() - client, time.perf_counter() - wall
    print(f"  {label:<40} {op:<10} {n / wall:7.0f}/s  weed {weed * 1000 / n:.3f}  client {client * 1000 / n:.3f}"
          f"  wall {wall * 1000 / n:.3f} ms/request", flush=True)


async def round_on(srv: S3Server, label: str, args: argparse.Namespace, rnd: int) -> None:
    store = S3Store(srv.bucket, prefix=f"small-{rnd}", endpoint_url=srv.endpoint, **srv.credentials)  # type: ignore[arg-type]
    keys = [f"{uuid.uuid4().hex[:5]}-g-{uuid.uuid4()}" for _ in range(args.n)]
    etags: list[str] = [""] * args.n

    async def create(i: int) -> None:
        etags[i] = await store.put(keys[i], body(i, args.size), if_none_match=True)

    async def get(i: int) -> None:
        assert await store.get(keys[i]) is not None

    async def head(i: int) -> None:
        assert await store.head(keys[i]) is not None

    async def update(i: int) -> None:
        etags[i] = await store.put(keys[i], body(i, args.size), if_match=etags[i])

    for op, fn in (("create", create), ("get", get), ("head", head), ("update", update)):
        await measure(srv, label, op, args.n, args.concurrency, fn)
    await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", action="append",
                        help="weed mini flags and NAME=VALUE environment, space-separated (repeatable; '' = default)")
    parser.add_argument("--n", type=int, default=2000, help="requests of each kind per round")
    parser.add_argument("--size", type=int, default=1000, help="bytes per object")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    configs = args.config if args.config is not None else ["", "-filer.saveToFilerLimit=65536"]
    servers = []
    for c in configs:
        flags = [w for w in c.split() if w.startswith("-")]
        env = dict(w.split("=", 1) for w in c.split() if not w.startswith("-"))
        servers.append((c or "default", start_s3_server(extra=flags, env=env)))
    try:
        time.sleep(2)
        idle = [group_cpu(s.process.pid) for _, s in servers]
        time.sleep(5)
        for (label, s), before in zip(servers, idle):
            print(f"# {label}: idle {(group_cpu(s.process.pid) - before) * 1000 / 5:.1f} ms CPU/s")
        print(f"# load average {os.getloadavg()[0]:.1f}; {args.n} requests of {args.size} bytes, {args.concurrency} at once")
        for rnd in range(args.rounds):
            for label, s in servers:
                asyncio.run(round_on(s, label, args, rnd))
        print(f"# load average {os.getloadavg()[0]:.1f}")
    finally:
        for _, s in servers:
            s.stop()


if __name__ == "__main__":
    main()
