"""Wake-up latency of the watch (``GET /datasets/{id}/shape?wait=S``, docs/api.md "Live data").

    python bench/live.py                      # local store and S3 (a SeaweedFS it starts)
    python bench/live.py --stores local --rounds 3

Starts two ``h5lake serve`` processes on one store (``--watch-interval`` as given, 0.5 s by
default), makes an extensible dataset, and for 1, 100 and 1,000 watchers: opens that many
waiting requests on the first server (raw connections, ``If-None-Match`` the current ETag), then
extends the dataset through the first server (same process) or the second (across processes).
The latency of a watcher is the time from the writer's reply (its acknowledgement) to that
watcher's 200, both seen by this client; with 1,000 watchers it includes this client reading
1,000 replies in one Python thread. Negative: the watcher was answered before the writer's
acknowledgement arrived. Prints the percentiles per store, path and number of watchers.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.s3server import start_s3_server
from tests.support.server import USERS, Server, start_server

USER = "test_user1"
TOKEN = base64.b64encode(f"{USER}:{USERS[USER]}".encode()).decode()


async def reply(reader: asyncio.StreamReader) -> int:
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def round_trip(watched: Server, writer: Server, domain: str, dset: str, n: int) -> list[float]:
    """Seconds from the writer's acknowledgement to each of ``n`` watchers' answers."""
    s = requests.Session()
    s.auth = (USER, USERS[USER])
    url = f"/datasets/{dset}/shape"
    etag = s.get(watched.endpoint + url, params={"domain": domain}, timeout=60).headers["ETag"]
    port = int(watched.endpoint.rsplit(":", 1)[1])
    conns = []
    for _ in range(n):
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(f"GET {url}?wait=60&domain={domain} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Authorization: Basic {TOKEN}\r\nIf-None-Match: {etag}\r\n\r\n".encode())
        conns.append((r, w))
    for _, w in conns:
        await w.drain()
    await asyncio.sleep(0.5 + n / 1000)  # every request is in and waiting
    answered: list[float] = []

    async def watch(r: asyncio.StreamReader) -> None:
        status = await reply(r)
        assert status == 200, status
        answered.append(time.perf_counter())

    watchers = [asyncio.ensure_future(watch(r)) for r, _ in conns]
    loop = asyncio.get_running_loop()
    w_url = writer.endpoint + url

    def extend() -> float:
        rsp = s.put(w_url, params={"domain": domain}, json={"extend": 1}, timeout=60)
        assert rsp.status_code == 201, rsp.text
        return time.perf_counter()

    acked = await loop.run_in_executor(None, extend)
    await asyncio.wait_for(asyncio.gather(*watchers), 60)
    for _, w in conns:
        w.close()
    return [t - acked for t in answered]


def setup(srv: Server) -> tuple[str, str]:
    s = requests.Session()
    s.auth = (USER, USERS[USER])
    s.put(srv.endpoint + "/", params={"domain": f"/home/{USER}"}, json={"folder": 1}, timeout=60)
    domain = f"/home/{USER}/live-bench.h5"
    assert s.put(srv.endpoint + "/", params={"domain": domain}, timeout=60).status_code == 201
    r = s.post(srv.endpoint + "/datasets", params={"domain": domain}, timeout=60,
               json={"type": "H5T_STD_I32LE", "shape": [0], "maxdims": ["H5S_UNLIMITED"]})
    return domain, str(r.json()["id"])


def ms(values: list[float], q: float) -> str:
    ordered = sorted(values)
    return f"{1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]:7.1f}"


def run_store(kind: str, work: Path, args: argparse.Namespace) -> None:
    extra = ["--watch-interval", str(args.interval), "--max-connections", "1100"]
    env: dict[str, str] = {}
    s3 = None
    if kind == "s3":
        s3 = start_s3_server(work / "s3")
        extra += ["--storage", f"s3://{s3.bucket}/live", "--s3-endpoint", s3.endpoint, "--s3-region", "us-east-1"]
        env = {"AWS_ACCESS_KEY_ID": s3.access_key_id, "AWS_SECRET_ACCESS_KEY": s3.secret_access_key}
    one = start_server(work / "one", extra=extra, env=env)
    two = start_server(work / "two", extra=extra, env=env, data=one.data)
    try:
        domain, dset = setup(one)
        for n in (1, 100, 1000):
            for path, writer in (("same process", one), ("across processes", two)):
                lat: list[float] = []
                for _ in range(args.rounds):
                    lat += asyncio.run(round_trip(one, writer, domain, dset, n))
                print(f"{kind:5} {path:16} {n:5} watchers: p50 {ms(lat, 0.5)} p90 {ms(lat, 0.9)} "
                      f"p99 {ms(lat, 0.99)} max {1000 * max(lat):7.1f} ms (mean {1000 * statistics.mean(lat):.1f}, "
                      f"{len(lat)} answers)", flush=True)
    finally:
        one.stop()
        two.stop()
        if s3 is not None:
            s3.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stores", default="local,s3")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--interval", type=float, default=0.5, help="the servers' --watch-interval")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.stores.split(","):
            run_store(kind, Path(tmp) / kind, args)


if __name__ == "__main__":
    main()
