"""Map benchmark: HDF5 Map objects through ``h5lake.client.Map`` against h5lake on a local
directory, beside the usual emulation (a compound dataset written with h5py to a local file plus
a Python dict from key to row).

    python bench/maps.py                          # 1,000,000 pairs of each workload
    python bench/maps.py --pairs 100000 --opaque-pairs 10000     # a quick run

Two workloads: int64 -> float64, and 32-byte string -> 1 KiB opaque. For each, figures printed:
  * batch put of all pairs (``Map.update`` in batches of ``--batch``): pairs/s;
  * single get of random present keys (``m[k]``, one GET each): median and p99 latency;
  * batch get of ``--bulk`` random keys (``Map.get_many``, one POST): time;
  * full iteration (``Map.pages(values=True)``, pages of 10,000, packed): time and pairs/s;
  * storage: bytes stored per pair (bucket objects, from ``GET /maps/{id}?verbose=1``) against
    the packed (key, value) bytes before compression.
Targets of issue 13 on a 2-core machine: numeric batch put >= 200,000 pairs/s, batch get of
10,000 keys < 200 ms, storage <= 1.5x the packed bytes. The same workload on the h5py file plus
dict is timed the same way and printed beside (its single get is an in-process dict lookup and
one h5py read, no network).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import h5py
import h5pyd
import numpy as np
import requests
from common import Target, add_target_args, describe, row, target

from h5lake.client import Map


def _workloads(n_numeric: int, n_opaque: int, seed: int) -> list[tuple[str, np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
    rng = np.random.default_rng(seed)
    numeric_keys = rng.permutation(np.arange(n_numeric, dtype="<i8") * 7919)
    numeric_values = rng.random(n_numeric)
    opaque_keys = np.array([f"key-{i:027d}".encode() for i in rng.permutation(n_opaque)], dtype="S32")
    opaque_values = rng.integers(0, 256, (n_opaque, 1024), dtype=np.uint8).view("V1024").reshape(n_opaque)
    return [("int64 -> float64", numeric_keys, numeric_values), ("32-byte string -> 1 KiB opaque", opaque_keys, opaque_values)]


def _latency(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"median {statistics.median(ordered) * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms"


def bench_map(t: Target, domain: str, name: str, keys: np.ndarray[Any, Any], values: np.ndarray[Any, Any],
              args: argparse.Namespace) -> dict[str, float]:
    n = len(keys)
    rng = np.random.default_rng(1)
    with h5pyd.File(domain, "w", **t.h5pyd_opts()) as f:
        m = Map.create(f, "m", key_dtype=keys.dtype, value_dtype=values.dtype)
        start = time.perf_counter()
        m.update(keys=keys, values=values, batch=args.batch)
        put = time.perf_counter() - start
        assert len(m) == n
        singles = []
        for k in keys[rng.integers(0, n, args.gets)]:
            s = time.perf_counter()
            m[k]
            singles.append(time.perf_counter() - s)
        want = keys[rng.integers(0, n, args.bulk)]
        m.get_many(want)  # warm-up
        start = time.perf_counter()
        got, found = m.get_many(want)
        bulk = time.perf_counter() - start
        assert found.all()
        start = time.perf_counter()
        count = sum(len(k) for k, _ in m.pages(values=True, page=10_000))
        iterate = time.perf_counter() - start
        assert count == n
        stats = requests.get(f"{t.endpoint}/maps/{m.id}", params={"domain": domain, "verbose": 1},
                             auth=(t.user, t.password), timeout=600).json()["stats"]
    packed = keys.dtype.itemsize + values.dtype.itemsize
    per_pair = stats["allocatedSize"] / n
    print(f"\n## h5lake Map, {name}: {n:,} pairs")
    row("batch put", f"{n / put:,.0f} pairs/s", f"{put:.2f} s, batches of {args.batch or 'client default'}")
    row(f"single get ({args.gets} random keys)", _latency(singles))
    row(f"batch get of {args.bulk:,} random keys", f"{bulk * 1000:.0f} ms")
    row("full iteration (pages of 10,000, packed)", f"{n / iterate:,.0f} pairs/s", f"{iterate:.2f} s")
    row("storage per pair", f"{per_pair:.1f} B", f"packed {packed} B: {per_pair / packed:.2f}x, "
        f"{stats['bucketCount']} buckets")
    return {"put": n / put, "bulk_ms": bulk * 1000, "ratio": per_pair / packed}


def bench_h5py(folder: Path, name: str, keys: np.ndarray[Any, Any], values: np.ndarray[Any, Any],
               args: argparse.Namespace) -> None:
    n = len(keys)
    rng = np.random.default_rng(1)
    path = folder / "emulated.h5"
    records = np.empty(n, dtype=[("key", keys.dtype), ("value", values.dtype)])
    start = time.perf_counter()
    index: dict[Any, int] = {}
    with h5py.File(path, "w") as f:
        rows_per_chunk = max(1, 2**20 // records.dtype.itemsize)  # 1 MiB chunks
        dset = f.create_dataset("pairs", shape=(0,), maxshape=(None,), dtype=records.dtype,
                                chunks=(rows_per_chunk,), compression="lzf")
        step = args.batch or 100_000
        for b in range(0, n, step):
            part = records[b : b + step]
            part["key"], part["value"] = keys[b : b + step], values[b : b + step]
            rows = dset.shape[0]
            dset.resize((rows + len(part),))
            dset[rows:] = part
            index.update(zip(part["key"].tolist(), range(rows, rows + len(part))))
    put = time.perf_counter() - start
    with h5py.File(path, "r") as f:
        dset = f["pairs"]
        singles = []
        for k in keys[rng.integers(0, n, args.gets)].tolist():
            s = time.perf_counter()
            dset[index[k]]
            singles.append(time.perf_counter() - s)
        want = keys[rng.integers(0, n, args.bulk)].tolist()
        start = time.perf_counter()
        rows = np.array([index[k] for k in want])
        order = np.argsort(rows)
        got = np.empty(len(rows), dtype=dset.dtype)
        got[order] = dset[np.unique(rows[order])][np.searchsorted(np.unique(rows[order]), rows[order])]
        bulk = time.perf_counter() - start
        start = time.perf_counter()
        count = sum(len(dset[b : b + 10_000]) for b in range(0, n, 10_000))
        iterate = time.perf_counter() - start
        assert count == n
    size = os.path.getsize(path)
    packed = keys.dtype.itemsize + values.dtype.itemsize
    print(f"## h5py compound dataset (lzf) + dict index, {name}")
    row("batch put", f"{n / put:,.0f} pairs/s", f"{put:.2f} s")
    row(f"single get ({args.gets} random keys)", _latency(singles), "in process, no network")
    row(f"batch get of {args.bulk:,} random keys", f"{bulk * 1000:.0f} ms")
    row("full iteration (slices of 10,000)", f"{n / iterate:,.0f} pairs/s", f"{iterate:.2f} s")
    row("storage per pair", f"{size / n:.1f} B", f"packed {packed} B: {size / n / packed:.2f}x "
        "(the dict index lives in memory only)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(parser)
    parser.add_argument("--pairs", type=int, default=1_000_000, help="pairs of the numeric workload")
    parser.add_argument("--opaque-pairs", type=int, default=1_000_000, help="pairs of the 32 B -> 1 KiB workload")
    parser.add_argument("--batch", type=int, default=None,
                        help="pairs per batch put (default: the client's, up to 1,000,000 pairs or 256 MiB)")
    parser.add_argument("--gets", type=int, default=1000, help="single gets timed")
    parser.add_argument("--bulk", type=int, default=10_000, help="keys of the batch get")
    args = parser.parse_args()
    with target(args) as t, tempfile.TemporaryDirectory(prefix="h5lake-bench-maps-") as tmp:
        describe(t)
        folder = t.new_folder("maps")
        for i, (name, keys, values) in enumerate(_workloads(args.pairs, args.opaque_pairs, 7)):
            if not len(keys):
                continue  # --pairs 0 or --opaque-pairs 0: that workload is skipped
            bench_map(t, f"{folder}maps{i}.h5", name, keys, values, args)
            bench_h5py(Path(tmp), name, keys, values, args)


if __name__ == "__main__":
    main()
