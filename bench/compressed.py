"""Compressed dataset writes and reads through h5pyd: wall time, server CPU, and where the CPU went.

    python bench/compressed.py                          # gzip 4 + shuffle, 5 writes and reads
    python bench/compressed.py --filters gzip,lz4,zstd,blosc --rounds 3
    python bench/compressed.py --server-env PYTHONPATH=/path/to/other/src   # another build
    python bench/compressed.py --codec                  # the filters alone, in this process

The dataset is bench/values.py's: 4096x4096 float32 in 512x512 chunks (64 MiB, 64 chunks of
1 MiB) of the "smooth" field (it compresses to ~73% with gzip + shuffle), written whole
(``d[...] = data`` to the end of ``flush()``: h5pyd sends one 64 MiB PUT) and read whole, every
read checked. Filters (``--filters``): ``gzip`` (gzip level 4 + shuffle, as
bench/side_by_side.py's gzip_write), ``gzip1`` (level 1 + shuffle), ``lz4`` (HDF5's LZ4 filter
32004), ``zstd`` (32015), ``blosc`` (32001, lz4 with its byte shuffle), ``plain`` (none).

Each round writes then reads once per filter. Printed per filter and direction: wall time and
the server's CPU per operation (its process group, from /proc), median and range over the
rounds, then the server's CPU split by thread (from /proc/PID/task: the event loop
``MainThread``, the CPU pool ``h5lake-cpu``, the store's threads ``h5lake-*`` else) and the
server's CPU over the wall time ("cores": 2.0 is both cores of this machine busy throughout).

Against a running server (``--endpoint URL``, e.g. HSDS from bench/hsds_local.sh) its CPU is read
from its process group with ``--pgid PGID``. ``--settle S`` waits S seconds after each write and
prints the server CPU spent in that wait ("after"): HSDS answers a value PUT once the chunks are
in its data nodes' memory and compresses and writes them later (its ``s3_sync_interval``, 1 s),
so the CPU of its compression falls after the request; h5lake's 2xx is durable, nothing is left.

    bench/hsds_local.sh start
    python bench/compressed.py --endpoint http://localhost:5101 --pgid $HSDS_PGID --settle 3 --rounds 3

``--codec`` times the encode and decode of the 64 chunks in this process with h5lake's own
filter pipeline, on one thread and on a pool of two (no server, no HTTP, no store).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import h5pyd
import numpy as np
from common import CpuMeter, add_target_args, describe, target
from tests.support.procgroup import TICK, worker_pids
from values import CHUNKS, SHAPE, make_data, read_once, write_once

FILTERS: dict[str, dict[str, Any]] = {
    "gzip": {"compression": "gzip", "compression_opts": 4, "shuffle": True},
    "gzip1": {"compression": "gzip", "compression_opts": 1, "shuffle": True},
    "lz4": {"compression": "lz4"},
    "zstd": {"compression": "zstd"},
    "blosc": {"compression": "blosclz", "shuffle": True},
    "plain": {},
}

PIPELINES: dict[str, list[dict[str, Any]]] = {
    "gzip": [{"class": "H5Z_FILTER_SHUFFLE"}, {"class": "H5Z_FILTER_DEFLATE", "level": 4}],
    "gzip1": [{"class": "H5Z_FILTER_SHUFFLE"}, {"class": "H5Z_FILTER_DEFLATE", "level": 1}],
    "lz4": [{"class": "H5Z_FILTER_LZ4"}],
    "zstd": [{"class": "H5Z_FILTER_ZSTD"}],
    "blosc": [{"class": "H5Z_FILTER_BLOSC", "compressor": "lz4", "shuffle": 1}],
    "plain": [],
}


def thread_cpu(pids: list[int]) -> Counter[str]:
    """CPU seconds of every thread of ``pids``, summed by thread name (digits dropped)."""
    out: Counter[str] = Counter()
    for pid in pids:
        base = Path(f"/proc/{pid}/task")
        try:
            tids = list(base.iterdir())
        except OSError:
            continue
        for task in tids:
            try:
                name = (task / "comm").read_text().strip()
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            label = name.rstrip("0123456789_") or name
            out[label] += (int(fields[11]) + int(fields[12])) / TICK
    return out


class Split:
    """Server CPU by thread name over many operations."""

    def __init__(self, server_pid: int | None) -> None:
        self.pids = worker_pids(server_pid) if server_pid else []
        self.total: Counter[str] = Counter()
        self._before: Counter[str] = Counter()

    def start(self) -> None:
        self._before = thread_cpu(self.pids)

    def stop(self) -> None:
        after = thread_cpu(self.pids)
        for name, seconds in after.items():
            self.total[name] += seconds - self._before.get(name, 0.0)


def spread(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{statistics.median(ms):6.0f} ({min(ms):.0f}-{max(ms):.0f})"


def served(args: argparse.Namespace, data: np.ndarray) -> None:
    names = args.filters.split(",")
    with target(args) as t:
        describe(t)
        folder = t.new_folder("compressed")
        domain = folder + "c.h5"
        h5pyd.File(domain, "w", **t.h5pyd_opts()).close()
        for name in names:  # first-touch costs (imports, pools, folders) of each codec
            write_once(t, domain, f"warm-{name}", data, **FILTERS[name])
        if args.pgid:
            t.server_pid = args.pgid
        walls: dict[tuple[str, str], list[float]] = {}
        after: dict[str, list[float]] = {}
        cpus: dict[tuple[str, str], list[float]] = {}
        splits: dict[tuple[str, str], Split] = {}
        for rnd in range(args.rounds):
            for name in names:
                for op in ("write", "read"):
                    meter = CpuMeter(t.server_pid)
                    split = splits.setdefault((name, op), Split(t.server_pid))
                    split.start()
                    if op == "write":
                        write_once(t, domain, f"{name}{rnd}", data, meter, **FILTERS[name])
                    else:
                        read_once(t, domain, f"{name}{rnd}", data, meter)
                    split.stop()
                    if op == "write" and args.settle:
                        late = CpuMeter(t.server_pid).start()
                        time.sleep(args.settle)
                        after.setdefault(name, []).append(late.stop().server)
                    walls.setdefault((name, op), []).append(meter.wall)
                    cpus.setdefault((name, op), []).append(meter.server)
                    if args.progress:
                        print(f"  {name} {op} round {rnd}: wall {meter.wall * 1000:.0f} ms, "
                              f"server CPU {meter.server * 1000:.0f} ms", flush=True)
        print(f"\n# {args.rounds} rounds; median (min-max), ms per operation")
        print(f"{'filter':8} {'op':6} {'wall':>18} {'server CPU':>18}  cores  server CPU by thread (median-free mean)")
        for name in names:
            for op in ("write", "read"):
                key = (name, op)
                split = splits[key]
                per = {k: v / args.rounds * 1000 for k, v in split.total.most_common() if v > 0.001 * args.rounds}
                threads = ", ".join(f"{k} {v:.0f}" for k, v in per.items())
                cores = sum(cpus[key]) / sum(walls[key])
                print(f"{name:8} {op:6} {spread(walls[key]):>18} {spread(cpus[key]):>18}  {cores:4.2f}  {threads}")
                if op == "write" and name in after:
                    print(f"{'':8} {'after':6} {'':>18} {spread(after[name]):>18}  (server CPU in the {args.settle:g} s after each write)")


def codec(args: argparse.Namespace, data: np.ndarray) -> None:
    from h5lake.chunks.dataset import ChunkCodec

    names = args.filters.split(",")
    rows, cols = CHUNKS
    views = [data[i : i + rows, j : j + cols] for i in range(0, SHAPE[0], rows) for j in range(0, SHAPE[1], cols)]
    type_json = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}
    print(f"# {len(views)} chunks of {rows}x{cols} float32; best of {args.rounds}, ms of wall (CPU of this process)")
    with ThreadPoolExecutor(2) as pool:
        for name in names:
            c = ChunkCodec.for_dataset(type_json, CHUNKS, PIPELINES[name])
            stored = [c.encode(v) for v in views]
            ratio = sum(len(s) for s in stored) / data.nbytes
            for label, fn in (
                ("encode, 1 thread", lambda c=c: [c.encode(v) for v in views]),
                ("encode, 2 threads", lambda c=c: list(pool.map(c.encode, views))),
                ("decode, 1 thread", lambda c=c, stored=stored: [c.decode(s) for s in stored]),
                ("decode, 2 threads", lambda c=c, stored=stored: list(pool.map(c.decode, stored))),
            ):
                best = (float("inf"), 0.0)
                for _ in range(args.rounds):
                    w, p = time.perf_counter(), time.process_time()
                    fn()
                    best = min(best, (time.perf_counter() - w, time.process_time() - p))
                print(f"{name:6} {label:18} {best[0] * 1000:7.0f} ({best[1] * 1000:.0f})   stored {ratio:.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(parser)
    parser.add_argument("--filters", default="gzip", help=f"comma-separated, of {', '.join(FILTERS)}")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--progress", action="store_true", help="print each figure as it is measured")
    parser.add_argument("--pgid", type=int, help="process group of the --endpoint server, for its CPU")
    parser.add_argument("--settle", type=float, default=0.0, help="seconds to wait after each write, CPU counted")
    parser.add_argument("--codec", action="store_true", help="time the filters alone, in this process")
    args = parser.parse_args()
    unknown = set(args.filters.split(",")) - set(FILTERS)
    if unknown:
        sys.exit(f"unknown filters: {', '.join(sorted(unknown))}")
    data = make_data("smooth")
    if args.codec:
        codec(args, data)
    else:
        served(args, data)


if __name__ == "__main__":
    main()
