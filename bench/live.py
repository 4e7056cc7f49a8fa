"""Wake-up latency of the watch (``GET /datasets/{id}/shape?wait=S``, docs/api.md "Live data").

    python bench/live.py                      # local store and S3 (a SeaweedFS it starts)
    python bench/live.py --stores local --rounds 3

Starts two ``h5lake serve`` processes on one store (``--watch-interval`` as given, 0.5 s by
default) and makes an extensible dataset. For 1, 100 and 1,000 watchers it opens that many
waiting requests on the first server (one keep-alive connection each, ``If-None-Match`` the
current ETag), waits until that server counts them in flight (/metrics) and is idle again
(under 10% of a core: every waiter's first reply made), then extends the dataset through the
first server (same process) or the second (across processes). A watcher's latency is the time from the writer's acknowledgement to that
watcher's 200, both stamped when their first byte reaches this client (negative: the watcher's
answer arrived before the writer's); the change is made at a random point of the watching
server's poll cycle. Then the latency of ordinary GETs (the dataset's document,
one after another on one connection) on the first server without waiters and with 1,000 held.

The client is one asyncio loop (uvloop when installed) of bare protocols: a reply is stamped in
``data_received`` and parsed with httptools (uvicorn's parser), so 1,000 replies cost it a few
milliseconds. Its own share is printed: ``client lag``, the longest this loop was busy
elsewhere while the replies came in (a probe sleeping 1 ms at a time), which bounds how late a
stamp can be; and ``client cpu``, the CPU time the client used during the wake-up. ``watched
server cpu`` is the waiting server's CPU over the same time (median of the rounds, /proc; 10 ms
steps). ``PYTHONPATH=OTHER/src python bench/live.py`` measures another build with this client.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httptools

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.s3server import start_s3_server
from tests.support.server import USERS, Server, start_server

USER = "test_user1"
METRICS_TOKEN = "live-bench-metrics"
TOKEN = base64.b64encode(f"{USER}:{USERS[USER]}".encode()).decode()


@dataclass
class Reply:
    status: int = 0
    first_byte: float = 0.0  # perf_counter when its first byte arrived
    headers: dict[str, str] = field(default_factory=dict)
    body: bytearray = field(default_factory=bytearray)


class Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection, one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.reply = Reply()
        self.done: asyncio.Future[Reply] | None = None
        self._header = ""

    @classmethod
    async def open(cls, port: int) -> Connection:
        _, conn = await asyncio.get_running_loop().create_connection(cls, "127.0.0.1", port)
        return conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no asyncio.Transport subclass

    def send(self, method: str, target: str, port: int, headers: dict[str, str] | None = None, body: bytes = b"") -> asyncio.Future[Reply]:
        fields = {"Host": f"127.0.0.1:{port}", "Authorization": f"Basic {TOKEN}", "Content-Length": str(len(body)), **(headers or {})}
        lines = [f"{method} {target} HTTP/1.1", *(f"{k}: {v}" for k, v in fields.items())]
        self.reply = Reply()
        self.done = asyncio.get_running_loop().create_future()
        assert self.transport is not None
        self.transport.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        return self.done

    def data_received(self, data: bytes) -> None:
        if not self.reply.first_byte:
            self.reply.first_byte = time.perf_counter()
        self.parser.feed_data(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_exception(ConnectionError("the server closed the connection"))

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.reply.headers[name.decode().lower()] = value.decode()

    def on_body(self, body: bytes) -> None:
        self.reply.body += body

    def on_message_complete(self) -> None:
        self.reply.status = self.parser.get_status_code()
        if self.done is not None and not self.done.done():
            self.done.set_result(self.reply)

    def close(self) -> None:
        if self.done is not None:
            self.done.cancel()  # a waiter let go
        if self.transport is not None:
            self.transport.close()


class LagProbe:
    """The longest this loop was busy (a 1 ms sleep that took longer) while running."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            self.worst = max(self.worst, time.perf_counter() - t - 0.001)

    def stop(self) -> float:
        self._task.cancel()
        return self.worst


@dataclass
class Round:
    latencies: list[float]
    client_lag: float
    client_cpu: float
    server_cpu: float


def cpu_of(pid: int) -> float:
    """Seconds of CPU process ``pid`` has used (/proc/PID/stat: every thread, ended ones too)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def settled(pid: int) -> None:
    """Return once process ``pid`` uses under 10% of a core (0.3 s at a time): done with the
    requests that came in (each waiter's first reply) before the change is made."""
    for _ in range(200):
        before = cpu_of(pid)
        await asyncio.sleep(0.3)
        if cpu_of(pid) - before < 0.03:
            return
    raise TimeoutError(f"process {pid} stays busy")


async def etag_now(port: int, url: str) -> str:
    conn = await Connection.open(port)
    try:
        rsp = await conn.send("GET", url, port)
        assert rsp.status == 200, (rsp.status, bytes(rsp.body))
        return rsp.headers["etag"]
    finally:
        conn.close()


async def all_in(port: int, n: int) -> None:
    """Return once the server counts ``n`` requests in flight (its /metrics, published once a
    second)."""
    conn = await Connection.open(port)
    try:
        for _ in range(240):
            rsp = await conn.send("GET", "/metrics", port, {"Authorization": f"Bearer {METRICS_TOKEN}"})
            text = bytes(rsp.body).decode()
            found = [float(line.split()[-1]) for line in text.splitlines() if line.startswith("h5lake_inflight_requests")]
            if found and sum(found) >= n:
                break
            await asyncio.sleep(0.25)
        else:
            raise TimeoutError(f"the server never had {n} requests in flight")
    finally:
        conn.close()


async def round_trip(watched: int, writer: int, domain: str, dset: str, n: int, pid: int, interval: float) -> Round:
    """Seconds from the writer's acknowledgement to each of ``n`` watchers' answers."""
    url = f"/datasets/{dset}/shape?domain={domain}"
    etag = await etag_now(watched, url)
    conns = await asyncio.gather(*(Connection.open(watched) for _ in range(n)))
    answers = [c.send("GET", url + "&wait=60", watched, {"If-None-Match": etag}) for c in conns]
    await all_in(watched, n)
    await settled(pid)
    assert not any(a.done() for a in answers), "a watcher was answered before the change"
    put = await Connection.open(writer)
    await asyncio.sleep(random.uniform(0, interval))  # anywhere in the watching server's poll cycle
    probe = LagProbe()
    cpu, server_cpu = time.process_time(), cpu_of(pid)
    ack = await put.send("PUT", url, writer, {"Content-Type": "application/json"}, b'{"extend": 1}')
    assert ack.status == 201, (ack.status, bytes(ack.body))
    replies = await asyncio.wait_for(asyncio.gather(*answers), 60)
    cpu, server_cpu = time.process_time() - cpu, cpu_of(pid) - server_cpu
    lag = probe.stop()
    for c in (*conns, put):
        c.close()
    assert all(r.status == 200 for r in replies), {r.status for r in replies}
    return Round([r.first_byte - ack.first_byte for r in replies], lag, cpu, server_cpu)


async def gets(port: int, url: str, count: int) -> list[float]:
    """Round trips of ``count`` GETs of ``url``, one after another on one connection."""
    conn = await Connection.open(port)
    took = []
    try:
        for _ in range(count):
            t = time.perf_counter()
            rsp = await conn.send("GET", url, port)
            assert rsp.status == 200, rsp.status
            took.append(time.perf_counter() - t)
    finally:
        conn.close()
    return took


async def others(port: int, domain: str, dset: str, n: int, count: int, pid: int) -> tuple[list[float], list[float]]:
    """Ordinary GETs' round trips without waiters, then while ``n`` waiters wait."""
    shape = f"/datasets/{dset}/shape?domain={domain}"
    doc = f"/datasets/{dset}?domain={domain}"
    await gets(port, doc, 20)  # warm
    before = await gets(port, doc, count)
    etag = await etag_now(port, shape)
    conns = await asyncio.gather(*(Connection.open(port) for _ in range(n)))
    answers = [c.send("GET", shape + "&wait=60", port, {"If-None-Match": etag}) for c in conns]
    await all_in(port, n)
    await settled(pid)
    during = await gets(port, doc, count)
    assert not any(a.done() for a in answers), "a waiter was answered without a change"
    for c in conns:
        c.close()
    return before, during


async def setup(port: int) -> tuple[str, str]:
    conn = await Connection.open(port)
    try:
        await conn.send("PUT", f"/?domain=/home/{USER}", port, {"Content-Type": "application/json"}, b'{"folder": 1}')
        domain = f"/home/{USER}/live-bench.h5"
        assert (await conn.send("PUT", f"/?domain={domain}", port)).status == 201
        body = b'{"type": "H5T_STD_I32LE", "shape": [0], "maxdims": ["H5S_UNLIMITED"]}'
        rsp = await conn.send("POST", f"/datasets?domain={domain}", port, {"Content-Type": "application/json"}, body)
        assert rsp.status == 201, bytes(rsp.body)
        return domain, str(json.loads(bytes(rsp.body))["id"])
    finally:
        conn.close()


def ms(values: list[float], q: float) -> str:
    ordered = sorted(values)
    return f"{1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]:7.1f}"


def percentiles(values: list[float]) -> str:
    return f"p50 {ms(values, 0.5)} p95 {ms(values, 0.95)} p99 {ms(values, 0.99)} max {1000 * max(values):7.1f} ms"


def port_of(server: Server) -> int:
    return int(server.endpoint.rsplit(":", 1)[1])


def run_store(kind: str, work: Path, args: argparse.Namespace) -> None:
    extra = ["--watch-interval", str(args.interval), "--max-connections", "1100", "--metrics-token", METRICS_TOKEN]
    env: dict[str, str] = {}
    s3 = None
    if kind == "s3":
        s3 = start_s3_server(work / "s3")
        extra += ["--storage", f"s3://{s3.bucket}/live", "--s3-endpoint", s3.endpoint, "--s3-region", "us-east-1"]
        env = {"AWS_ACCESS_KEY_ID": s3.access_key_id, "AWS_SECRET_ACCESS_KEY": s3.secret_access_key}
    one = start_server(work / "one", extra=extra, env=env)
    two = start_server(work / "two", extra=extra, env=env, data=one.data)
    try:
        domain, dset = run(setup(port_of(one)))
        for n in [int(w) for w in args.watchers.split(",")]:
            for path, writer in (("same process", one), ("across processes", two)):
                rounds = [run(round_trip(port_of(one), port_of(writer), domain, dset, n, one.process.pid, args.interval)) for _ in range(args.rounds)]
                lat = [t for r in rounds for t in r.latencies]
                print(f"{kind:5} {path:16} {n:5} watchers: {percentiles(lat)} (mean {1000 * statistics.mean(lat):.1f}, "
                      f"{len(lat)} answers; client lag max {1000 * max(r.client_lag for r in rounds):.1f} ms, "
                      f"client cpu {1000 * max(r.client_cpu for r in rounds):.1f} ms; watched server cpu "
                      f"{1000 * statistics.median(r.server_cpu for r in rounds):.1f} ms)", flush=True)
        n = max(int(w) for w in args.watchers.split(","))
        before, during = run(others(port_of(one), domain, dset, n, args.gets, one.process.pid))
        print(f"{kind:5} ordinary GETs, no waiters:     {percentiles(before)} ({len(before)} GETs)", flush=True)
        print(f"{kind:5} ordinary GETs, {n:5} waiting:  {percentiles(during)} ({len(during)} GETs)", flush=True)
    finally:
        one.stop()
        two.stop()
        if s3 is not None:
            s3.stop()


def run(coro):  # type: ignore[no-untyped-def]
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stores", default="local,s3")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--watchers", default="1,100,1000", help="numbers of watchers, comma-separated")
    p.add_argument("--gets", type=int, default=300, help="ordinary GETs measured without and with waiters")
    p.add_argument("--interval", type=float, default=0.5, help="the servers' --watch-interval")
    args = p.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.stores.split(","):
            run_store(kind, Path(tmp) / kind, args)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()
