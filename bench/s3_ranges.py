"""Ranged GETs on S3 (a local SeaweedFS): what one costs, and reading a linked .h5 object of
many small neighbouring chunks.

    python bench/s3_ranges.py                    # both parts
    python bench/s3_ranges.py --part linked --repeat 5
    PYTHONPATH=/path/to/other/src:$PWD python bench/s3_ranges.py --part linked   # another build

``gap``: sequential ranged GETs of 1 KiB to 4 MiB at random offsets of a 64 MiB object, one at a
time and 8 at once; a least-squares line through (bytes, seconds) gives the fixed cost of a GET
and the cost per byte, and their ratio is the hole worth reading to save a GET (the break-even
gap of ``S3Store(coalesce_gap=...)``).

``server``: the same file linked into an ``h5lake serve`` of this build (``--allow-source`` on the
bucket; the domain on a local directory) and read over HTTP as binary: the whole of each dataset
and 50 random 256x256 hyperslabs; wall seconds and CPU seconds of the server and SeaweedFS.

``linked``: an HDF5 file of float32 (2048, 2048) in 32x32 chunks (4 KiB each, 4096 chunks;
uncompressed, and gzip) is put in the bucket and read through the source registry and the chunk
engine as a request of the service would read it: the whole dataset, and 50 random 256x256
hyperslabs (64 chunks each). Printed: ranged GETs (counted at obstore, so any build can be
measured), wall seconds, and the CPU seconds of this process and of SeaweedFS.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import obstore

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.scale import tree_cpu
from tests.conftest import Client
from tests.linked.helpers import create_linked
from tests.support.procgroup import process_cpu
from tests.support.s3server import S3Server, start_s3_server
from tests.support.server import start_server

from h5lake.chunks import engine
from h5lake.chunks.dataset import ChunkCodec, DatasetLayout
from h5lake.chunks.fanout import Workers, cpu_pool
from h5lake.chunks.filters import from_h5py_dcpl
from h5lake.model.selection import Selection, Slice
from h5lake.sources.files import default_registry
from h5lake.sources.inplace import ChunkedRefChunks, _Pins
from h5lake.sources.refs import parse_ref_layout
from h5lake.storage.s3 import S3Store

KIB = 1024
MIB = 1024 * KIB
SHAPE = (2048, 2048)
CHUNK = (32, 32)
SLAB = 256

COUNTS: Counter[str] = Counter()


def count_obstore_requests() -> None:
    """Count every GET obstore is asked for, whichever h5lake build makes them."""
    for name in ("get_async", "get_range_async", "get_ranges_async", "head_async"):
        original = getattr(obstore, name)

        def counted(*args: Any, _original: Any = original, _name: str = name, **kw: Any) -> Any:
            COUNTS[_name] += 1
            return _original(*args, **kw)

        setattr(obstore, name, counted)


def store_of(s3: S3Server, **kw: Any) -> S3Store:
    return S3Store(s3.bucket, endpoint_url=s3.endpoint, **s3.credentials, **kw)  # type: ignore[arg-type]


# --- the cost of one ranged GET ---------------------------------------------------------------


async def gap_part(s3: S3Server, repeat: int) -> None:
    store = store_of(s3)
    key = f"gap-{uuid.uuid4().hex[:8]}"
    size = 64 * MIB
    await store.put(key, os.urandom(size))
    rng = np.random.default_rng(0)
    print("ranged GET cost on SeaweedFS (ms per GET; median of runs)")
    for concurrency in (1, 8):
        xs, ys = [], []
        for n in (1 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, 1 * MIB, 4 * MIB):
            count = max(8, min(200, (32 * MIB) // n)) // concurrency * concurrency
            runs = []
            for _ in range(repeat):
                offsets = rng.integers(0, size - n, count).tolist()
                t0 = time.perf_counter()
                for i in range(0, count, concurrency):
                    await asyncio.gather(*(store.get_range(key, o, n) for o in offsets[i : i + concurrency]))
                runs.append((time.perf_counter() - t0) / count)
            per_get = statistics.median(runs)
            xs.append(n)
            ys.append(per_get)
            print(f"  {concurrency} at once  {n // KIB:6d} KiB  {per_get * 1e3:7.3f} ms  {n / per_get / MIB:8.1f} MiB/s")
        slope, intercept = np.polyfit(np.array(xs, float), np.array(ys), 1)
        print(
            f"  {concurrency} at once: fixed {intercept * 1e3:.3f} ms per GET, {slope * MIB * 1e3:.3f} ms per MiB"
            f" -> break-even hole {intercept / slope / KIB:.0f} KiB"
        )
    await store.delete(key)
    await store.close()


# --- a linked file of small chunks ------------------------------------------------------------


def make_file(path: Path) -> np.ndarray:
    data = np.sin(np.arange(SHAPE[0] * SHAPE[1], dtype="<f4") / 1000).reshape(SHAPE)
    with h5py.File(path, "w") as f:
        f.create_dataset("raw", data=data, chunks=CHUNK)
        f.create_dataset("gz", data=data, chunks=CHUNK, compression="gzip", compression_opts=1)
    return data


async def linked_part(s3: S3Server, repeat: int, folder: Path) -> None:
    path = folder / "small.h5"
    data = make_file(path)
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    key = f"{prefix}/small.h5"
    uploader = store_of(s3)
    await uploader.put(key, path.read_bytes())
    uri = f"s3://{s3.bucket}/{key}"
    registry = default_registry((f"s3://{s3.bucket}/{prefix}",), lambda b: store_of(s3))
    workers = Workers(16, cpu_pool())  # the service's default fan-out
    fingerprint = await registry.fingerprint(registry.resolve(uri))
    t = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}
    rng = np.random.default_rng(1)
    print(f"linked {SHAPE} float32 in {CHUNK} chunks ({np.prod(SHAPE) // np.prod(CHUNK)} chunks of 4 KiB) on S3")
    with h5py.File(path) as f:
        for name in ("raw", "gz"):
            chunks: dict[str, list[int]] = {}
            f[name].id.chunk_iter(
                lambda i: chunks.__setitem__("_".join(str(o // c) for o, c in zip(i.chunk_offset, CHUNK)), [i.byte_offset, i.size])
            )
            ref = parse_ref_layout({"class": "H5D_CHUNKED_REF", "file_uri": uri, "dims": list(CHUNK), "chunks": chunks}, SHAPE, 4)
            codec = ChunkCodec.for_dataset(t, CHUNK, from_h5py_dcpl(f[name]))
            slabs = [(int(r), int(c)) for r, c in rng.integers(0, SHAPE[0] - SLAB, (50, 2))]
            for case in ("whole", "slabs"):
                walls, cpus, weeds, gets = [], [], [], []
                for _ in range(repeat):
                    pins = _Pins(registry, {uri: fingerprint.to_json()})  # a new request's pins
                    layout = DatasetLayout("d", "/x", SHAPE, codec, np.zeros((), "<f4"), ChunkedRefChunks(ref, pins))  # type: ignore[arg-type]
                    COUNTS.clear()
                    w0, c0, s0 = time.perf_counter(), time.process_time(), process_cpu(s3.process.pid)
                    if case == "whole":
                        out = await engine.read_selection(layout, Selection.all(SHAPE), workers)
                        assert np.array_equal(out, data)
                    else:
                        for r, c in slabs:
                            sel = Selection((Slice(r, r + SLAB), Slice(c, c + SLAB)))
                            out = await engine.read_selection(layout, sel, workers)
                            assert np.array_equal(out, data[r : r + SLAB, c : c + SLAB])
                    walls.append(time.perf_counter() - w0)
                    cpus.append(time.process_time() - c0)
                    weeds.append(process_cpu(s3.process.pid) - s0)
                    gets.append(COUNTS["get_async"] + COUNTS["get_range_async"] + COUNTS["get_ranges_async"])
                label = "whole (4096 chunks)" if case == "whole" else "50 hyperslabs 256x256"
                print(
                    f"  {name:3s} {label:22s} GETs {int(statistics.median(gets)):5d}  wall {statistics.median(walls):6.3f} s"
                    f"  cpu: h5lake {statistics.median(cpus):6.3f} s, weed {statistics.median(weeds):6.3f} s"
                )
    workers.executor.shutdown(wait=False)
    await registry.close()
    await uploader.delete(key)
    await uploader.close()


def server_part(s3: S3Server, repeat: int, folder: Path) -> None:
    path = folder / "served.h5"
    data = make_file(path)
    prefix = f"served-{uuid.uuid4().hex[:8]}"

    async def upload() -> None:
        store = store_of(s3)
        await store.put(f"{prefix}/served.h5", path.read_bytes())
        await store.close()

    asyncio.run(upload())
    env = {"AWS_ACCESS_KEY_ID": s3.access_key_id, "AWS_SECRET_ACCESS_KEY": s3.secret_access_key, "AWS_REGION": "us-east-1"}
    extra = ["--allow-source", f"s3://{s3.bucket}/{prefix}", "--s3-endpoint", s3.endpoint, "--s3-region", "us-east-1"]
    srv = start_server(folder / "srv", extra=extra, env=env)
    rng = np.random.default_rng(2)
    slabs = [(int(r), int(c)) for r, c in rng.integers(0, SHAPE[0] - SLAB, (50, 2))]
    octet = {"Accept": "application/octet-stream"}
    print(f"served over HTTP: linked {SHAPE} float32 in {CHUNK} chunks on S3")
    try:
        c = Client(srv.endpoint, "admin", "/home/served.h5")
        assert c.put("/").status_code == 201
        with h5py.File(path) as f:
            ids = {name: create_linked(c, f[name], f"s3://{s3.bucket}/{prefix}/served.h5") for name in ("raw", "gz")}
        for name, did in ids.items():
            for case in ("whole", "slabs"):
                walls, cpus, weeds = [], [], []
                for _ in range(repeat):
                    w0, c0, s0 = time.perf_counter(), tree_cpu(srv.process.pid), process_cpu(s3.process.pid)
                    if case == "whole":
                        r = c.get(f"/datasets/{did}/value", headers=octet)
                        assert np.array_equal(np.frombuffer(r.content, "<f4").reshape(SHAPE), data)
                    else:
                        for row, col in slabs:
                            select = f"[{row}:{row + SLAB},{col}:{col + SLAB}]"
                            r = c.get(f"/datasets/{did}/value", params={"select": select}, headers=octet)
                            got = np.frombuffer(r.content, "<f4").reshape(SLAB, SLAB)
                            assert np.array_equal(got, data[row : row + SLAB, col : col + SLAB])
                    walls.append(time.perf_counter() - w0)
                    cpus.append(tree_cpu(srv.process.pid) - c0)
                    weeds.append(process_cpu(s3.process.pid) - s0)
                label = "whole (4096 chunks)" if case == "whole" else "50 hyperslabs 256x256"
                print(
                    f"  {name:3s} {label:22s} wall {statistics.median(walls):6.3f} s"
                    f"  cpu: server {statistics.median(cpus):6.3f} s, weed {statistics.median(weeds):6.3f} s"
                )
    finally:
        srv.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["gap", "linked", "server", "all"], default="all")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    count_obstore_requests()
    import h5lake

    print(f"h5lake from {Path(h5lake.__file__).parent}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        s3 = start_s3_server(Path(tmp) / "weed")
        try:
            if args.part in ("gap", "all"):
                asyncio.run(gap_part(s3, args.repeat))
            if args.part in ("linked", "all"):
                asyncio.run(linked_part(s3, args.repeat, Path(tmp)))
            if args.part in ("server", "all"):
                server_part(s3, args.repeat, Path(tmp))
        finally:
            s3.stop()


if __name__ == "__main__":
    main()
