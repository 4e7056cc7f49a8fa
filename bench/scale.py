"""Throughput with one and two server processes, on S3 (a local SeaweedFS) and a local directory.

    python bench/scale.py                      # every setting below
    python bench/scale.py --backends s3 --workers 2 --clients 8

For each backend (``s3``: SeaweedFS started here on loopback; ``local``: a temporary directory)
and each number of ``--workers`` processes of one ``h5lake serve``, two workloads through h5pyd:

* one client: full write of a 4096x4096 float32 dataset in 512x512 chunks (64 MiB; timed from
  ``d[...] = data`` to the end of ``f.flush()``), full read, 200 random 64x64 hyperslab reads;
* ``--clients`` concurrent h5pyd clients (processes), each writing, reading and hyperslab-reading
  its own 2048x2048 float32 dataset (16 MiB) in step with the others (a barrier between phases).

Printed per phase: aggregate MiB/s or ops/s, and the CPU the server processes, SeaweedFS and the
clients used, in cores (CPU seconds / wall seconds): on this 2-core machine a sum near 2 means
the phase is CPU-bound, wherever the CPU goes. Every read is checked against what was written.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.procgroup import process_cpu
from tests.support.s3server import S3Server, start_s3_server
from tests.support.server import USERS, Server, start_server

MIB = 1024 * 1024
USER = "test_user1"
SINGLE = (4096, 4096)
EACH = (2048, 2048)
CHUNKS = (512, 512)
SLAB = 64


# --- CPU accounting ---------------------------------------------------------------------------


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and every live descendant."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += process_cpu(p)
        todo.extend(children.get(p, []))
    return total


@dataclass
class Meter:
    server: int
    weed: int | None

    def sample(self) -> tuple[float, float, float]:
        return (time.monotonic(), tree_cpu(self.server), tree_cpu(self.weed) if self.weed else 0.0)


def cores(before: tuple[float, float, float], after: tuple[float, float, float], client: float) -> str:
    wall = after[0] - before[0]
    server, weed = after[1] - before[1], after[2] - before[2]
    parts = [f"server {server / wall:.2f}"]
    if weed:
        parts.append(f"weed {weed / wall:.2f}")
    parts.append(f"clients {client / wall:.2f}")
    return "cores: " + ", ".join(parts)


# --- one client's work ------------------------------------------------------------------------


def opts(endpoint: str) -> dict[str, Any]:
    return {"endpoint": endpoint, "username": USER, "password": USERS[USER]}


def client_run(endpoint: str, domain: str, shape: tuple[int, int], slabs: int, seed: int,
               barrier: Any, out: Any) -> None:
    """Write, read and hyperslab-read one dataset; put per-phase (start, end, cpu) on ``out``."""
    import h5pyd

    rng = np.random.default_rng(seed)
    data = rng.random(shape, dtype=np.float32)
    corners = [(int(rng.integers(0, shape[0] - SLAB)), int(rng.integers(0, shape[1] - SLAB))) for _ in range(slabs)]
    phases: dict[str, tuple[float, float, float]] = {}

    def timed(name: str, work: Any) -> Any:
        barrier.wait()
        c0, t0 = time.process_time(), time.time()
        result = work()
        phases[name] = (t0, time.time(), time.process_time() - c0)
        return result

    with h5pyd.File(domain, "w", **opts(endpoint)) as f:
        d = f.create_dataset("d", shape, "f4", chunks=CHUNKS)
        f.flush()

        def write() -> None:
            d[...] = data
            f.flush()

        timed("write", write)
        back = timed("read", lambda: d[...])
        assert np.array_equal(back, data), "read differs from what was written"
        slab = timed("hyperslab", lambda: [d[i:i + SLAB, j:j + SLAB] for i, j in corners])
        i, j = corners[-1]
        assert np.array_equal(slab[-1], data[i:i + SLAB, j:j + SLAB])
    out.put(phases)


def workload(endpoint: str, folder: str, clients: int, shape: tuple[int, int], slabs: int,
             meter: Meter) -> dict[str, str]:
    """``clients`` processes in step; returns phase -> printed figure."""
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(clients + 1), ctx.Queue()
    procs = [ctx.Process(target=client_run, args=(endpoint, f"{folder}c{k}.h5", shape, slabs, k, barrier, out))
             for k in range(clients)]
    for p in procs:
        p.start()
    samples = []
    for _ in range(3):  # the three phases: sample the servers' CPU as each starts and ends
        barrier.wait()
        samples.append(meter.sample())
    results = [out.get(timeout=1800) for _ in procs]
    samples.append(meter.sample())
    for p in procs:
        p.join()
        if p.exitcode:
            raise RuntimeError(f"a client failed (exit {p.exitcode})")
    figures = {}
    mib = clients * shape[0] * shape[1] * 4 / MIB
    for n, phase in enumerate(("write", "read", "hyperslab")):
        start = min(r[phase][0] for r in results)
        end = max(r[phase][1] for r in results)
        client_cpu = sum(r[phase][2] for r in results)
        wall = end - start
        # The next barrier's sample closes a phase; the last phase closes after every result.
        use = cores(samples[n], samples[n + 1], client_cpu)
        if phase == "hyperslab":
            figures[phase] = f"{clients * slabs / wall:8.0f} ops/s   ({use})"
        else:
            figures[phase] = f"{mib / wall:8.1f} MiB/s  ({use})"
    return figures


# --- settings ----------------------------------------------------------------------------------


def new_folder(endpoint: str) -> str:
    import requests

    s = requests.Session()
    s.auth = (USER, USERS[USER])
    for path in (f"/home/{USER}", f"/home/{USER}/scale-{uuid.uuid4().hex[:8]}"):
        r = s.put(endpoint + "/", params={"domain": path}, json={"folder": True}, timeout=60)
        if r.status_code not in (201, 409):
            raise RuntimeError(f"{path}: {r.status_code} {r.text[:200]}")
    return path + "/"


def start(backend: str, workers: int, workdir: Path, s3: S3Server | None) -> Server:
    extra, env = ["--workers", str(workers)], {}
    if backend == "s3":
        assert s3 is not None
        extra += ["--storage", f"s3://{s3.bucket}/scale-{uuid.uuid4().hex[:8]}", "--s3-endpoint", s3.endpoint,
                  "--s3-region", "us-east-1"]
        env = {"AWS_ACCESS_KEY_ID": s3.access_key_id, "AWS_SECRET_ACCESS_KEY": s3.secret_access_key}
    return start_server(workdir / f"{backend}-{workers}-{uuid.uuid4().hex[:6]}", extra=extra, env=env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backends", nargs="+", default=["s3", "local"], choices=["s3", "local"])
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--slabs", type=int, default=200, help="hyperslab reads of the single client")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="h5lake-scale-") as tmp:
        workdir = Path(tmp)
        s3 = start_s3_server(workdir / "weed") if "s3" in args.backends else None
        try:
            print(f"h5lake scale bench: {os.cpu_count()} CPUs; SINGLE {SINGLE} f4, {args.clients} clients x {EACH} f4, "
                  f"chunks {CHUNKS}")
            for backend in args.backends:
                for workers in args.workers:
                    srv = start(backend, workers, workdir, s3)
                    try:
                        meter = Meter(srv.process.pid, s3.process.pid if backend == "s3" and s3 else None)
                        folder = new_folder(srv.endpoint)
                        one = workload(srv.endpoint, folder + "one-", 1, SINGLE, args.slabs, meter)
                        many = workload(srv.endpoint, folder + "many-", args.clients, EACH,
                                        max(1, args.slabs // 4), meter)
                    finally:
                        srv.stop()
                    print(f"\n{backend}, {workers} server process{'es' if workers > 1 else ''}")
                    for label, figures in ((" 1 client ", one), (f"{args.clients:2d} clients", many)):
                        for phase, text in figures.items():
                            print(f"  {label} {phase:9s} {text}")
        finally:
            if s3 is not None:
                s3.stop()


if __name__ == "__main__":
    main()
