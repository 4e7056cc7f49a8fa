"""The ceilings of a bulk load on this machine: what each part of ``h5lake load``'s value path
costs alone, in MiB/s and in CPU per MiB (docs/performance.md, "Bulk values").

    python bench/bulk_floor.py                     # all four, 256 MiB each, files under /tmp
    python bench/bulk_floor.py --dir /dev/shm      # the disk part on tmpfs
    python bench/bulk_floor.py --only disk --mib 1024 --threads 4

* ``md5``: hashlib's MD5 of 4 MiB buffers on one thread (the ETag every chunk needs).
* ``disk``: 4 MiB files as the local store writes chunks (new temporary file, write, fsync,
  rename, one folder fsync per 16), with ``O_DIRECT`` from an aligned buffer and buffered.
* ``http``: PUTs of 8 MiB bodies over loopback from ``--threads`` threads (requests, as
  ``h5lake load`` sends them, bodies sent from memory) to uvicorn with h5lake's protocol and a
  bare application that receives each body into a kept aligned buffer (as a value PUT does)
  and answers ``{}``; ``http+md5`` also hashes each body on a thread before answering.
* ``read``: an uncompressed float64 dataset in 4 MiB chunks read with h5py in boxes of two
  chunks from ``--threads`` threads into buffers each thread keeps (the file in the page cache),
  through ``H5Dread`` and as the chunks' stored bytes (``read_direct_chunk``).

CPU is this process's (client side, threads included) and, for ``http``, the server's, from
/proc. Compare ``h5lake load``'s figure (``python bench/ingest.py --bulk-mib 256``) with these.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

MIB = 1024 * 1024
CHUNK = 4 * MIB
BODY = 8 * MIB
ROOT = Path(__file__).resolve().parents[1]


def aligned(nbytes: int) -> memoryview:
    raw = np.empty(nbytes + 4096, dtype=np.uint8)
    at = -raw.__array_interface__["data"][0] % 4096
    view = raw[at : at + nbytes]
    view[...] = 7
    return view.data


def row(what: str, mib: float, wall: float, cpu: float, server: float | None = None) -> None:
    per = f"client {cpu * 1000 / mib:.2f}" + ("" if server is None else f", server {server * 1000 / mib:.2f}")
    print(f"  {what:<50} {mib / wall:8.0f} MiB/s   cpu ms/MiB: {per}   load {os.getloadavg()[0]:.1f}")


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def md5(mib: int) -> None:
    buf = aligned(CHUNK)
    wall, cpu = timed(lambda: [hashlib.md5(buf).digest() for _ in range(mib * MIB // CHUNK)])
    row("md5, one thread", mib, wall, cpu)


def disk(mib: int, folder: Path, threads: int) -> None:
    buf = aligned(CHUNK)
    for direct in (True, False):
        where = Path(tempfile.mkdtemp(prefix="bulk-floor-", dir=folder))

        def one(i: int, direct: bool = direct, where: Path = where) -> None:
            temp = where / f".tmp-{secrets.token_hex(8)}"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | (os.O_DIRECT if direct else 0)
            fd = os.open(temp, flags, 0o644)
            try:
                os.write(fd, buf)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(temp, where / f"c{i}")
            if i % 16 == 15:
                dfd = os.open(where, os.O_RDONLY | os.O_DIRECTORY)
                os.fsync(dfd)
                os.close(dfd)

        try:
            with ThreadPoolExecutor(threads) as pool:
                wall, cpu = timed(lambda: list(pool.map(one, range(mib * MIB // CHUNK))))
            row(f"disk {'O_DIRECT' if direct else 'buffered'} + fsync, {threads} threads", mib, wall, cpu)
        except OSError as exc:
            print(f"  disk {'O_DIRECT' if direct else 'buffered'}: {exc}")
        finally:
            for p in where.iterdir():
                p.unlink()
            where.rmdir()


async def upload_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The bare application of ``http``: each body into a kept aligned buffer, then ``{}``."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    from h5lake.api.connections import READINTO
    from h5lake.api.http import BODIES

    length = int(dict(scope["headers"]).get(b"content-length", b"0"))
    with BODIES.using():
        body = BODIES.view(length)
        got = 0
        readinto = scope["extensions"][READINTO]
        while got < length:
            n = await readinto(body[got:])
            if not n:
                break
            got += n
        if os.environ.get("BULK_FLOOR_MD5"):
            import asyncio
            from functools import partial

            await asyncio.get_running_loop().run_in_executor(None, partial(hashlib.md5, body))
        del body
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"2"), (b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b"{}"})


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def http(mib: int, threads: int, hashed: bool) -> None:
    import requests

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    args = [sys.executable, "-m", "uvicorn", "bench.bulk_floor:upload_app", "--port", str(port), "--no-access-log",
            "--loop", "uvloop", "--http", "h5lake.api.connections:BufferedHttpProtocol", "--log-level", "warning"]
    env = dict(os.environ, BULK_FLOOR_MD5="1" if hashed else "")
    server = subprocess.Popen(args, cwd=ROOT, env=env)
    local = threading.local()
    bodies = [aligned(BODY) for _ in range(threads)]
    ids = iter(range(threads))

    def put(_: int) -> None:
        if not hasattr(local, "session"):
            local.session, local.body = requests.Session(), bodies[next(ids)]
        r = local.session.put(f"http://127.0.0.1:{port}/x", data=local.body,
                              headers={"Content-Type": "application/octet-stream"}, timeout=60)
        r.raise_for_status()

    try:
        for _ in range(100):
            try:
                requests.get(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except requests.ConnectionError:
                time.sleep(0.1)
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(put, range(threads * 2)))  # connections made, warm
            before = _cpu(server.pid)
            wall, cpu = timed(lambda: list(pool.map(put, range(mib * MIB // BODY))))
            server_cpu = _cpu(server.pid) - before
        row(f"http{'+md5' if hashed else ''} PUT 8 MiB bodies, {threads} threads", mib, wall, cpu, server_cpu)
    finally:
        server.terminate()
        server.wait()


def read(mib: int, folder: Path, threads: int) -> None:
    import h5py
    from h5py import h5s

    rows = mib * MIB // 8 // 1024
    with tempfile.TemporaryDirectory(prefix="bulk-floor-", dir=folder) as tmp:
        path = Path(tmp) / "bulk.h5"
        with h5py.File(path, "w") as f:
            d = f.create_dataset("bulk", shape=(rows, 1024), dtype="<f8", chunks=(512, 1024))
            for start in range(0, rows, 8192):
                d[start : start + 8192] = 1.5
        local = threading.local()
        with h5py.File(path, "r") as f:
            dsid = f["bulk"].id

            def box(start: int) -> None:
                if not hasattr(local, "buf"):
                    local.buf = np.empty(BODY, dtype=np.uint8)
                fspace = dsid.get_space()
                fspace.select_hyperslab((start, 0), (1024, 1024))
                dsid.read(h5s.create_simple((1024, 1024)), fspace, local.buf, mtype=dsid.get_type())

            def chunks(start: int) -> None:  # the two chunks' stored bytes (client/h5bulk.py)
                if not hasattr(local, "buf"):
                    local.buf = np.empty(BODY, dtype=np.uint8)
                dsid.read_direct_chunk((start, 0), out=local.buf[: BODY // 2])
                dsid.read_direct_chunk((start + 512, 0), out=local.buf[BODY // 2 :])

            with ThreadPoolExecutor(threads) as pool:
                for how, fn in (("H5Dread", box), ("read_direct_chunk", chunks)):
                    list(pool.map(fn, range(0, min(rows, 4096), 1024)))  # warm
                    wall, cpu = timed(lambda fn=fn: list(pool.map(fn, range(0, rows, 1024))))
                    row(f"h5py {how} of 8 MiB boxes, {threads} threads", mib, wall, cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=256, help="MiB each part moves [256]")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()), help="where files are written [/tmp]")
    parser.add_argument("--threads", type=int, default=8, help="threads of disk, http and read [8]")
    parser.add_argument("--only", action="append", choices=["md5", "disk", "http", "read"], help="only these parts")
    args = parser.parse_args()
    parts = args.only or ["md5", "disk", "http", "read"]
    print(f"# {args.mib} MiB each; {os.cpu_count()} cores; files under {args.dir}")
    if "md5" in parts:
        md5(args.mib)
    if "disk" in parts:
        disk(args.mib, args.dir, args.threads)
    if "http" in parts:
        http(args.mib, args.threads, hashed=False)
        http(args.mib, args.threads, hashed=True)
    if "read" in parts:
        read(args.mib, args.dir, args.threads)


if __name__ == "__main__":
    main()
