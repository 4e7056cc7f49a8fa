"""CPU per request of the h5lake application alone: the ASGI app driven in this process, no
uvicorn and no sockets, so the figures move less with a busy machine than bench/server_cost.py.

    python bench/app_cost.py                          # group GETs and attribute PUTs
    python bench/app_cost.py --profile PUT            # and a cProfile of one case (CPU time)
    python bench/app_cost.py --gets 0 --puts 0 --objects 1000 --opens 50   # GET /?getobjs=1 only
    python bench/app_cost.py --instructions --gets 300 --puts 100   # metrics on and off, instructions

The app is the one `h5lake serve` runs (`create_app`, its lifespan, a local store in a temporary
folder, Basic authentication with a passwd file), called with one request at a time. Cases, as in
bench/server_cost.py: ``GET /groups/{root}`` and durable ``PUT /groups/{root}/attributes/a{i}`` of a
scalar int32 (``--attrs`` names, each PUT a new value, so every PUT replaces one and writes). For
each it prints the process CPU per request and its split between the event loop's thread and the
others (the store's thread pool: the durable writes), and the collector's share. With ``--objects
N``: ``GET /?getobjs=1`` (h5pyd's open) of a domain whose group ``many`` links N empty groups,
``--opens`` times. Add the HTTP
floor of uvicorn (a bare ASGI app: ~0.13-0.16 ms here, see docs/performance.md) for a server.

``--instructions`` runs this twice under valgrind's callgrind, with metrics on and with
``--no-metrics``, at once, and prints the instructions each executed per request: counted only
around a case's second pass (the first, under instrumentation too, warms it), independent of
the machine's load. The metrics' fold (once a second natively, `api/metrics.FLUSH_SECONDS`)
is left out: under callgrind the code runs ~50 times slower while the fold keeps to the clock,
so it would count ~50 times over per request; ``python bench/observe_cost.py --fold`` measures
it apart.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import cProfile
import gc
import os
import pstats
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import uvloop
from tests.support.server import USERS  # the test users (run with PYTHONPATH=src:. as the other benches)

from h5lake.api import metrics
from h5lake.api.app import create_app
from h5lake.auth import hash_password
from h5lake.config import Settings

USER = "test_user1"


def thread_cpu() -> dict[str, float]:
    """CPU seconds of this process's threads: the main (event loop) thread and all others."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {"loop thread": 0.0, "other threads": 0.0}
    for tid in os.listdir("/proc/self/task"):
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        which = "loop thread" if tid == str(os.getpid()) else "other threads"
        out[which] += (int(fields[11]) + int(fields[12])) / tick
    return out


class App:
    def __init__(self, folder: Path, metrics: bool = True) -> None:
        passwd = folder / "passwd"
        passwd.write_text("".join(f"{u}:{hash_password(p)}\n" for u, p in USERS.items()))
        self.app = create_app(Settings(data=folder / "data", passwd=passwd, metrics=metrics))
        token = base64.b64encode(f"{USER}:{USERS[USER]}".encode())
        self.headers = [
            (b"host", b"127.0.0.1:5101"),
            (b"authorization", b"Basic " + token),
            (b"accept", b"*/*"),
        ]
        self._lifespan: asyncio.Queue[dict[str, str]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        started = asyncio.Event()

        async def send(message: dict[str, Any]) -> None:
            started.set()

        await self._lifespan.put({"type": "lifespan.startup"})
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        self._task = asyncio.create_task(self.app(scope, self._lifespan.get, send))  # type: ignore[arg-type]
        await started.wait()

    async def stop(self) -> None:
        await self._lifespan.put({"type": "lifespan.shutdown"})
        if self._task is not None:
            await self._task

    async def call(self, method: str, path: str, query: str, body: bytes = b"") -> tuple[int, bytes]:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [*self.headers, (b"content-length", str(len(body)).encode())],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 5101),
            "state": {},
        }
        messages = [{"type": "http.request", "body": body, "more_body": False}]
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return messages.pop() if messages else {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)  # type: ignore[arg-type]
        return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


async def measure(
    label: str, fn: Callable[[], Awaitable[None]], count: int, profile: bool, args: argparse.Namespace
) -> None:
    if args.callgrind_out:
        await _control("--instr=on")
        await fn()  # warm, instrumented: caches, the first request's imports, code run once
        await _control("--zero")
        await fn()
        await _control("--dump")
        dumps = sorted(Path(args.callgrind_out).parent.glob(Path(args.callgrind_out).name + ".*"))
        found = re.search(r"^totals:\s+(\d+)", max(dumps, key=lambda f: f.stat().st_mtime).read_text(), re.MULTILINE)
        print(f"{label}\t{int(found.group(1)) / count:.0f}" if found else f"{label}\t?", flush=True)
        return
    await fn()  # warm: caches, the first request's imports
    collected = [0.0, 0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collected[1] = time.thread_time()
        else:
            collected[0] += time.thread_time() - collected[1]

    gc.callbacks.append(on_gc)
    before, c0 = thread_cpu(), time.process_time()
    await fn()
    cpu, after = time.process_time() - c0, thread_cpu()
    gc.callbacks.remove(on_gc)
    split = ", ".join(f"{k} {(after[k] - before[k]) * 1000 / count:.3f}" for k in after)
    print(
        f"  {label:<14} CPU {cpu * 1000 / count:6.3f} ms/request ({split}; collector {collected[0] * 1000 / count:.3f})"
    )
    if profile:
        profiler = cProfile.Profile(time.thread_time)  # CPU of the loop thread, not wall time
        profiler.enable()
        await fn()
        profiler.disable()
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.lines)


async def _control(option: str) -> None:
    """Tell the callgrind this process runs under (from a thread: the event loop keeps going)."""
    command = ["callgrind_control", option, str(os.getpid())]
    await asyncio.to_thread(subprocess.run, command, check=True, capture_output=True)


def instructions(args: argparse.Namespace) -> None:
    """This script with metrics on and off, each under callgrind, at once; instructions per request."""
    with tempfile.TemporaryDirectory(prefix="h5lake-app-cost-cg-") as tmp:
        runs = {}
        for mode in ("on", "off"):
            out = f"{tmp}/{mode}.out"
            command = [
                "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                sys.executable, __file__, "--callgrind-out", out, "--gets", str(args.gets), "--puts", str(args.puts),
                "--attrs", str(args.attrs), *(["--no-metrics"] if mode == "off" else []),
            ]
            runs[mode] = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        found = {mode: dict(line.split("\t") for line in run.communicate()[0].splitlines() if "\t" in line) for mode, run in runs.items()}
    print(f"  {'case':<14} {'k instructions per request':>27}: metrics on, off, on/off")
    for label, on in found["on"].items():
        off = found["off"].get(label, "?")
        ratio = f"{float(on) / float(off):.4f}" if "?" not in (on, off) else "?"
        print(f"  {label:<14} {float(on) / 1000:19.1f} {float(off) / 1000:9.1f}  {ratio}")


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="h5lake-app-cost-") as tmp:
        app = App(Path(tmp), metrics=not args.no_metrics)
        await app.start()
        try:
            domain = f"domain=/home/{USER}/cost.h5"
            await app.call("PUT", "/", f"domain=/home/{USER}", b'{"folder": true}')
            status, body = await app.call("PUT", "/", domain)
            if status != 201:
                raise RuntimeError(f"domain: {status} {body[:200]!r}")
            root = orjson.loads(body)["root"]
            counter = [0]

            async def gets() -> None:
                for _ in range(args.gets):
                    status, reply = await app.call("GET", f"/groups/{root}", domain)
                    if status != 200:
                        raise RuntimeError(f"group GET: {status} {reply[:200]!r}")

            async def puts() -> None:
                for _ in range(args.puts):
                    counter[0] += 1
                    name = f"a{counter[0] % args.attrs}"
                    doc = orjson.dumps({"type": "H5T_STD_I32LE", "shape": "H5S_SCALAR", "value": counter[0]})
                    status, reply = await app.call("PUT", f"/groups/{root}/attributes/{name}", domain, doc)
                    if status >= 300:
                        raise RuntimeError(f"attribute PUT: {status} {reply[:200]!r}")

            if args.gets:
                await measure("group GET", gets, args.gets, "GET" in args.profile, args)
            if args.puts:
                await measure("attribute PUT", puts, args.puts, "PUT" in args.profile, args)
            if args.objects:
                await measure("getobjs", await listed(app, root, domain, args), args.opens, "OBJS" in args.profile, args)
        finally:
            await app.stop()


async def listed(app: App, root: str, domain: str, args: argparse.Namespace) -> Callable[[], Awaitable[None]]:
    """The domain's group ``many`` with ``args.objects`` groups linked in it; the opens that list them."""
    status, reply = await app.call("POST", "/groups", domain, orjson.dumps({"link": {"id": root, "name": "many"}}))
    many = orjson.loads(reply)["id"]
    for i in range(args.objects):
        link = orjson.dumps({"link": {"id": many, "name": f"m{i:04d}"}})
        status, reply = await app.call("POST", "/groups", domain, link)
        if status != 201:
            raise RuntimeError(f"group POST: {status} {reply[:200]!r}")

    async def opens() -> None:
        for _ in range(args.opens):
            status, reply = await app.call("GET", "/", domain + "&getobjs=1&include_attrs=1")
            if status != 200 or len(orjson.loads(reply).get("domain_objs", ())) != args.objects + 2:
                raise RuntimeError(f"getobjs: {status} {reply[:200]!r}")

    return opens


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gets", type=int, default=4000, help="group GETs per pass [4000]")
    parser.add_argument("--puts", type=int, default=500, help="attribute PUTs per pass [500]")
    parser.add_argument("--attrs", type=int, default=250, help="attribute names the PUTs cycle through [250]")
    parser.add_argument("--objects", type=int, default=0, help="groups in the domain GET /?getobjs=1 lists [0: no such case]")
    parser.add_argument("--opens", type=int, default=50, help="GET /?getobjs=1 per pass [50]")
    parser.add_argument(
        "--profile", action="append", default=[], choices=["GET", "PUT", "OBJS"], help="cProfile this case"
    )
    parser.add_argument("--sort", default="tottime", help="cProfile order: tottime, cumtime, ... [tottime]")
    parser.add_argument("--lines", type=int, default=30, help="cProfile lines shown [30]")
    parser.add_argument("--no-metrics", action="store_true", help="the app as h5lake serve --no-metrics makes it")
    parser.add_argument("--instructions", action="store_true", help="instructions per request, metrics on and off (callgrind)")
    parser.add_argument("--callgrind-out", help=argparse.SUPPRESS)  # set by --instructions for the run under callgrind
    args = parser.parse_args()
    if args.callgrind_out:  # the once-a-second fold of the metrics is left out: see `instructions`
        metrics.FLUSH_SECONDS = 3600.0
    if args.instructions:
        instructions(args)
    else:
        uvloop.run(run(args))


if __name__ == "__main__":
    main()
