"""Dataset value benchmark through h5pyd, against h5lake or any HDF REST server.

    python bench/values.py                        # starts its own h5lake on a free port
    python bench/values.py --endpoint http://host:5101 --user u --password p

Figures printed (each the best of --repeat runs, median beside it):
  * full write of a 4096x4096 float32 dataset in 512x512 chunks (64 MiB), MiB/s; the time runs
    from ``d[...] = data`` to the end of ``f.flush()`` (h5pyd sends the values at flush);
  * full read of it (``d[...]``), MiB/s;
  * 200 random 64x64 hyperslab reads, ops/s;
  * one 1000-point selection (``d.points[coords]``, a binary POST), ms;
  * the same full write and read with gzip + shuffle.

Reference HSDS figures for the same runs: 60 MiB/s write, 105 MiB/s read, 150 hyperslab
reads/s, 90 ms per 1000-point selection.

The values are random float32 in [0, 1) (``--values smooth`` for a compressible field instead);
every read is checked against what was written.

Under each figure a ``cpu:`` line gives the CPU milliseconds per operation of the server (only
when this script started it) and of this client, beside the wall time. When their sum is well
below the wall time, the time goes to waiting: fsync, or a busy machine's scheduler.
"""

from __future__ import annotations

import argparse
import statistics
import time

import h5pyd
import numpy as np
from common import CpuMeter, Target, add_target_args, cpu_row, describe, maybe_pause, row, target

SHAPE = (4096, 4096)
CHUNKS = (512, 512)
MIB = 1024 * 1024
HSDS = {"write": 60.0, "read": 105.0, "hyperslab": 150.0, "points_ms": 90.0}


def make_data(kind: str) -> np.ndarray:
    rng = np.random.default_rng(20240601)
    if kind == "random":
        return rng.random(SHAPE, dtype=np.float32)
    y, x = np.mgrid[0 : SHAPE[0], 0 : SHAPE[1]].astype(np.float32) / 512
    noise = rng.normal(0, 0.01, SHAPE).astype(np.float32)
    return (np.sin(x) * np.cos(y) + noise).astype(np.float32)


def best_and_median(samples: list[float]) -> tuple[float, float]:
    return min(samples), statistics.median(samples)


def write_once(
    t: Target, domain: str, name: str, data: np.ndarray, meter: CpuMeter | None = None, **create: object
) -> float:
    """Seconds from ``d[...] = data`` to the end of ``flush()`` (dataset creation excluded)."""
    with h5pyd.File(domain, "a", **t.h5pyd_opts()) as f:
        d = f.create_dataset(name, shape=SHAPE, dtype="f4", chunks=CHUNKS, **create)
        f.flush()
        if meter:
            meter.start()
        start = time.perf_counter()
        d[...] = data
        f.flush()
        elapsed = time.perf_counter() - start
        if meter:
            meter.stop()
        return elapsed


def read_once(t: Target, domain: str, name: str, data: np.ndarray, meter: CpuMeter | None = None) -> float:
    with h5pyd.File(domain, "r", **t.h5pyd_opts()) as f:
        d = f[name]
        if meter:
            meter.start()
        start = time.perf_counter()
        out = d[...]
        elapsed = time.perf_counter() - start
        if meter:
            meter.stop()
    if not np.array_equal(out, data):
        raise AssertionError(f"{name}: full read does not match what was written")
    return elapsed


def full_write_read(
    t: Target, folder: str, label: str, data: np.ndarray, repeat: int, **create: object
) -> tuple[float, float]:
    domain = folder + f"{label}.h5"
    h5pyd.File(domain, "w", **t.h5pyd_opts()).close()
    wmeter, rmeter = CpuMeter(t.server_pid), CpuMeter(t.server_pid)
    writes = [write_once(t, domain, f"d{i}", data, wmeter, **create) for i in range(repeat)]
    reads = [read_once(t, domain, f"d{i % repeat}", data, rmeter) for i in range(repeat)]
    mib = data.nbytes / MIB
    (wb, wm), (rb, rm) = best_and_median(writes), best_and_median(reads)
    row(
        f"{label}: full write 4096x4096 f4 (incl. flush)",
        f"{mib / wb:.0f} MiB/s",
        f"median {mib / wm:.0f}, {wb:.2f} s",
    )
    cpu_row(wmeter, repeat, "write")
    row(f"{label}: full read", f"{mib / rb:.0f} MiB/s", f"median {mib / rm:.0f}, {rb:.2f} s")
    cpu_row(rmeter, repeat, "read")
    return mib / wb, mib / rb


def hyperslabs(t: Target, domain: str, name: str, data: np.ndarray, count: int, repeat: int) -> float:
    rng = np.random.default_rng(7)
    corners = rng.integers(0, [SHAPE[0] - 64, SHAPE[1] - 64], size=(count, 2))
    rates = []
    meter = CpuMeter(t.server_pid)
    with h5pyd.File(domain, "r", **t.h5pyd_opts()) as f:
        d = f[name]
        for _ in range(repeat):
            meter.start()
            start = time.perf_counter()
            for y, x in corners:
                block = d[y : y + 64, x : x + 64]
                if block.shape != (64, 64):
                    raise AssertionError("wrong hyperslab shape")
            rates.append(count / (time.perf_counter() - start))
            meter.stop()
        y, x = corners[-1]
        if not np.array_equal(d[y : y + 64, x : x + 64], data[y : y + 64, x : x + 64]):
            raise AssertionError("hyperslab read does not match")
    best, median = max(rates), statistics.median(rates)
    row(f"{count} random 64x64 hyperslab reads", f"{best:.0f} ops/s", f"median {median:.0f}")
    cpu_row(meter, count * repeat, "read")
    return best


def points(t: Target, domain: str, name: str, data: np.ndarray, npoints: int, repeat: int) -> float:
    rng = np.random.default_rng(11)
    flat = np.sort(rng.choice(SHAPE[0] * SHAPE[1], size=npoints, replace=False))
    coords = np.stack(np.unravel_index(flat, SHAPE), axis=1)
    times = []
    meter = CpuMeter(t.server_pid)
    with h5pyd.File(domain, "r", **t.h5pyd_opts()) as f:
        d = f[name]
        for _ in range(repeat):
            meter.start()
            start = time.perf_counter()
            got = d.points[coords]
            times.append(time.perf_counter() - start)
            meter.stop()
            if not np.array_equal(got, data[coords[:, 0], coords[:, 1]]):
                raise AssertionError("point selection does not match")
    best, median = best_and_median(times)
    row(f"one {npoints}-point selection", f"{best * 1000:.1f} ms", f"median {median * 1000:.1f} ms")
    cpu_row(meter, repeat, "selection")
    return best * 1000


def verdict(label: str, ours: float, ref: float, factor: float, lower_is_better: bool = False) -> None:
    ratio = ref / ours if lower_is_better else ours / ref
    status = "meets" if ratio >= factor else "below"
    print(f"  {label:<44} {ratio:5.1f}x HSDS  (target {factor:g}x: {status})")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_target_args(parser)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement")
    parser.add_argument("--values", dest="kind", choices=["random", "smooth"], default="random")
    parser.add_argument("--skip-gzip", action="store_true")
    args = parser.parse_args()
    data = make_data(args.kind)
    with target(args) as t:
        describe(t)
        print(
            f"# data: {args.kind} float32 {SHAPE[0]}x{SHAPE[1]} ({data.nbytes / MIB:.0f} MiB), chunks {CHUNKS}"
        )
        folder = t.new_folder("values")
        maybe_pause(args, t)
        warm = folder + "warmup.h5"
        h5pyd.File(warm, "w", **t.h5pyd_opts()).close()
        write_once(t, warm, "w", data)  # first-touch costs (imports, thread pools, folders)

        print("\n## plain (no filters)")
        write, read = full_write_read(t, folder, "plain", data, args.repeat)
        slabs = hyperslabs(t, folder + "plain.h5", "d0", data, 200, args.repeat)
        point_ms = points(t, folder + "plain.h5", "d0", data, 1000, args.repeat)

        gz: tuple[float, float] | None = None
        if not args.skip_gzip:
            print("\n## gzip + shuffle")
            gz = full_write_read(t, folder, "gzip", data, args.repeat, compression="gzip", shuffle=True)

        print("\n## against the HSDS reference (target: 5x throughput, 3x rates)")
        checks: list[tuple[str, float, float, float, bool]] = [
            ("full write (plain)", write, HSDS["write"], 5, False),
            ("full read (plain)", read, HSDS["read"], 5, False),
            ("64x64 hyperslab reads", slabs, HSDS["hyperslab"], 3, False),
            ("1000-point selection", point_ms, HSDS["points_ms"], 3, True),
        ]
        for label, ours, ref, factor, lower in checks:
            verdict(label, ours, ref, factor, lower)
        if gz is not None:
            print(f"  gzip+shuffle: write {gz[0]:.0f} MiB/s, read {gz[1]:.0f} MiB/s (no HSDS reference)")


if __name__ == "__main__":
    main()
