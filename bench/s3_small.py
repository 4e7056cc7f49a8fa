"""SeaweedFS's CPU per small request (documents of ~1 KB), by ``weed mini`` flags, side by side.

    PYTHONPATH=src:. python bench/s3_small.py                     # default, and -filer.saveToFilerLimit=65536
    PYTHONPATH=src:. python bench/s3_small.py --config '' --config GOGC=400 --rounds 4
    PYTHONPATH=src:. python bench/s3_small.py --compare-src /tmp/old/src --rounds 6   # S3Store of two builds

With ``--compare-src`` one default SeaweedFS serves every round, and each round runs the
requests in a process of each build in turn (``PYTHONPATH``: the given ``src``, then this
one's): the client's CPU per request is the figure to compare; ``--instructions`` counts
the client's instructions instead (valgrind's callgrind; independent of the machine's load).

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
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from tests.support.procgroup import group_cpu
from tests.support.s3server import S3Server, start_s3_server

from h5lake.storage.s3 import S3Store


class Callgrind:
    """This process's instructions (every thread's, user space) when it runs under valgrind's
    callgrind with ``--instr-atstart=no``: switched on, zeroed and dumped by ``callgrind_control``."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.on = False

    async def _control(self, *options: str) -> None:
        proc = await asyncio.create_subprocess_exec("callgrind_control", *options, str(os.getpid()),
                                                    stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        await proc.wait()

    async def zero(self) -> None:
        if not self.on:
            await self._control("--instr=on")
            self.on = True
        await self._control("--zero")

    async def dump(self) -> float:
        import re

        await self._control("--dump")
        dumps = sorted(self.out.parent.glob(self.out.name + ".*"), key=lambda f: int(f.suffix[1:]))
        text = dumps[-1].read_text(errors="replace")
        found = re.search(r"^totals:\s+(\d+)", text, re.MULTILINE) or re.search(r"^summary:\s+(\d+)", text, re.MULTILINE)
        for old in dumps:
            old.unlink()
        if found is None:
            raise RuntimeError(f"no totals in {dumps[-1]}")
        return float(found.group(1))


COUNTER: Callgrind | None = None


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

    if COUNTER is not None:
        await COUNTER.zero()
    weed, client, wall = group_cpu(srv.process.pid), time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    weed = group_cpu(srv.process.pid) - weed
    client, wall = time.process_time() - client, time.perf_counter() - wall
    if COUNTER is not None:
        print(f"  {label:<40} {op:<10} client {await COUNTER.dump() / n / 1000:.0f} k instructions/request", flush=True)
        return
    print(f"  {label:<40} {op:<10} {n / wall:7.0f}/s  weed {weed * 1000 / n:.3f}  client {client * 1000 / n:.3f}"
          f"  wall {wall * 1000 / n:.3f} ms/request", flush=True)


async def round_on(srv: S3Server, label: str, args: argparse.Namespace, rnd: int) -> None:
    store = S3Store(srv.bucket, prefix=f"small-{rnd}-{uuid.uuid4().hex[:6]}", endpoint_url=srv.endpoint, **srv.credentials)  # type: ignore[arg-type]
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


def compare(args: argparse.Namespace) -> None:
    import json
    import subprocess
    import sys

    srv = start_s3_server()
    here = str(Path(__file__).resolve().parents[1])
    try:
        print(f"# load average {os.getloadavg()[0]:.1f}; {args.n} requests of {args.size} bytes, {args.concurrency} at once")
        spec = json.dumps({"endpoint": srv.endpoint, "bucket": srv.bucket, **srv.credentials})
        for rnd in range(args.rounds):
            for src in (args.compare_src, str(Path(here) / "src")):
                env = dict(os.environ, PYTHONPATH=f"{src}:{here}")
                out = Path(tempfile.gettempdir()) / f"s3small-cg-{os.getpid()}.out"
                valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                            "--quiet"] if args.instructions else []
                subprocess.run([*valgrind, sys.executable, __file__, "--client-of", spec, "--label", src, "--n", str(args.n),
                                "--size", str(args.size), "--concurrency", str(args.concurrency), "--round", str(rnd),
                                *(["--instructions", str(out)] if args.instructions else [])],
                               env=env, check=True)
        print(f"# load average {os.getloadavg()[0]:.1f}")
    finally:
        srv.stop()


def client_of(args: argparse.Namespace) -> None:
    import json

    spec = json.loads(args.client_of)
    srv = S3Server(spec["endpoint"], spec["bucket"], spec["access_key_id"], spec["secret_access_key"],
                   Path("."), None, Path("."))  # type: ignore[arg-type]
    srv.process = _NoProcess()  # type: ignore[assignment]
    if args.instructions:
        global COUNTER
        COUNTER = Callgrind(Path(args.instructions))
    asyncio.run(round_on(srv, args.label, args, args.round))


class _NoProcess:
    """No SeaweedFS pid in a client process: its CPU is not measured there."""

    pid = os.getpid()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", action="append",
                        help="weed mini flags and NAME=VALUE environment, space-separated (repeatable; '' = default)")
    parser.add_argument("--n", type=int, default=2000, help="requests of each kind per round")
    parser.add_argument("--size", type=int, default=1000, help="bytes per object")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compare-src", help="another build's src folder: compare S3Store's client CPU with it")
    parser.add_argument("--instructions", nargs="?", const="on", default=None,
                        help="with --compare-src: count the client's instructions (valgrind's callgrind) instead of CPU time")
    parser.add_argument("--client-of", help=argparse.SUPPRESS)
    parser.add_argument("--label", default="", help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client_of:
        return client_of(args)
    if args.compare_src:
        return compare(args)
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
