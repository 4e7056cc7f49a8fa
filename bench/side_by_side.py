"""h5lake beside another HDF REST server (HSDS, or another h5lake build), through h5pyd, interleaved.

    bench/hsds_local.sh start        # prints HSDS_ENDPOINT and HSDS_PGID
    python bench/side_by_side.py --remote hsds=http://localhost:5101,PGID
    python bench/side_by_side.py --start base=/path/to/other/checkout --start new=$PWD   # two builds
    python bench/side_by_side.py --remote hsds=URL,PGID --only write64,attr_put --rounds 5

Every ``--start NAME=CHECKOUT`` is an ``h5lake serve`` of that checkout (its ``src`` first on
PYTHONPATH; ``--start h5lake`` alone: this one; ``--start x=CHECKOUT,H5LAKE_SETTING=VALUE``
adds settings to its environment) started here, with ``h5lake serve``'s default
workers unless ``--server-arg`` says otherwise; every ``--remote NAME=ENDPOINT,PGID`` is a running
server whose process group PGID is read for its CPU (``bench/hsds_local.sh`` prints both).
Users: tests/support/server.py's (test_user1). Default: ``--start h5lake`` and the remotes.

Each round runs every operation on every server before the next operation (the servers' order
reversed every other round), so a busy spell of the shared machine falls on both. Printed per
operation and server: the median wall time per operation over the rounds and the server's CPU
per operation (its process group, from /proc); then the ratio of the medians (other / first).

Operations (h5pyd 1.0, as a user runs them; every read checked):
  write64, read64  a 4096x4096 float32 dataset in 512x512 chunks (bench/values.py's), write to
                   the end of ``flush()``, full read
  slab             64x64 hyperslab read (40 a round)
  points           1000-point selection (3 a round)
  groups           200 groups x 2 attributes in a new file, open .. close (bench/metadata.py's)
  list1000         fresh ``File`` + ``list(f["many"].keys())`` of 1,000 links (5 a round)
  walk1000         fresh ``File`` + every object of ``f["many"].values()`` (bench/metadata.py's walk)
  open             fresh ``File`` + ``f[name]`` on the 200-group file (20 a round)
  attr_put         one attribute through h5pyd, ``g.attrs[n] = v`` then ``f.flush()`` (50 a round)
  attr_get         one attribute read through h5pyd, not cached (``g.attrs[n]``, 50 a round)
  attr_rest_put    one durable attribute PUT by plain ``requests`` (100 a round)
  dset_create      ``create_dataset`` of a small chunked dataset + ``flush()`` (20 a round)
  hsload           ``hsload`` of a small HDF5 file (20 groups, 20 datasets, attributes), a process
  hsls             ``hsls -r`` of that domain, a process
  gzip_write, gzip_read  the 64 MiB dataset again with gzip (level 4) and shuffle, of smooth
                   values (bench/values.py's "smooth": they compress), written and read whole
  vlen_write, vlen_read  10^5 variable-length strings (3-40 characters) in one dataset, written
                   at its creation and read whole
  cmpd_write, cmpd_read, cmpd_field  10^6 rows of a compound (i8, f8, f4, i4: 24 MB), written at
                   its creation, read whole, one field read (``d["x"]``)
  small500         500 datasets of 1 KiB: create, write, read back each (per dataset)
  attrs200         fresh ``File`` + every attribute of each of 200 groups (``dict(g.attrs)``)
  attrs200_rest    ``GET /groups/{id}/attributes`` of each of 200 groups, plain ``requests``
  rows100          100 row reads ``d[i, :]`` of the 4096x4096 dataset (per row)
  append100        resize + write of 1000 float64 values, 100 times (per append)
  hsget            ``hsget`` of a 50 MiB domain (one 3200x4096 float32 dataset in 512x512 chunks,
                   20 groups with attributes) to a local HDF5 file, a process
  conc8            8 client processes at once, each a 2048x2048 float32 write and read (16 MiB) in
                   a file of its own; wall from the barrier to the last one done (with 20 groups
                   made by each as well, HSDS 1.0.2 failed here: h5pyd re-sent a slow POST of
                   groups and HSDS answered the second with 500, "Post with existing group_id")
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import h5pyd
import numpy as np
from common import ROOT, CpuMeter, Target
from metadata import create_groups, make_link_group
from tests.support.server import USERS, start_server
from values import CHUNKS, SHAPE, make_data, read_once, write_once

USER = "test_user1"
BIN = Path(sys.executable).parent


class Job:
    """One server's state for the run: its folder, the domains it was given, and the figures."""

    def __init__(self, name: str, t: Target) -> None:
        self.name = name
        self.t = t
        self.folder = ""
        self.n = 0
        self.figures: dict[str, list[tuple[float, float, float]]] = {}
        self.values = self.groups = self.links = self.attrs = self.loaded = ""
        self.small = self.scratch = Path()
        self.zipped = self.vlen = self.cmpd = self.big = ""

    def fresh(self, tag: str) -> str:
        self.n += 1
        return f"{self.folder}{tag}{self.n}.h5"

    def record(self, op: str, meter: CpuMeter, count: int) -> None:
        self.figures.setdefault(op, []).append((meter.wall / count, meter.server / count, meter.client / count))


def measured(job: Job, op: str, count: int, fn: Callable[[CpuMeter], None]) -> None:
    meter = CpuMeter(job.t.server_pid)
    fn(meter)
    job.record(op, meter, count)


def prepare(job: Job, data: np.ndarray, small: Path) -> None:
    t = job.t
    job.folder = t.new_folder("sbs")
    job.values = job.folder + "values.h5"
    h5pyd.File(job.values, "w", **t.h5pyd_opts()).close()
    write_once(t, job.values, "warm", data)  # first-touch costs, and the dataset reads use it
    job.groups = job.folder + "groups.h5"
    create_groups(t, job.groups, 200)
    job.links = job.folder + "links.h5"
    make_link_group(t, job.links, 1000)
    job.attrs = job.folder + "attrs.h5"
    with h5pyd.File(job.attrs, "w", **t.h5pyd_opts()) as f:
        g = f.create_group("g")
        for i in range(50):
            g.attrs[f"r{i:03d}"] = np.arange(4, dtype="i4") + i
    job.small = small
    job.scratch = small.parent
    job.loaded = job.fresh("loaded")
    app(t, "hsload", str(small), job.loaded, stdout=subprocess.DEVNULL)


def op_write64(job: Job, data: np.ndarray, rnd: int) -> None:
    meter = CpuMeter(job.t.server_pid)
    write_once(job.t, job.values, f"w{rnd}", data, meter)
    job.record("write64", meter, 1)


def op_read64(job: Job, data: np.ndarray, rnd: int) -> None:
    meter = CpuMeter(job.t.server_pid)
    read_once(job.t, job.values, "warm", data, meter)
    job.record("read64", meter, 1)


def op_slab(job: Job, data: np.ndarray, rnd: int) -> None:
    rng = np.random.default_rng(rnd)
    corners = rng.integers(0, [SHAPE[0] - 64, SHAPE[1] - 64], size=(40, 2))
    with h5pyd.File(job.values, "r", **job.t.h5pyd_opts()) as f:
        d = f["warm"]

        def run(meter: CpuMeter) -> None:
            meter.start()
            got = [d[y : y + 64, x : x + 64] for y, x in corners]
            meter.stop()
            y, x = corners[-1]
            assert np.array_equal(got[-1], data[y : y + 64, x : x + 64])

        measured(job, "slab", len(corners), run)


def op_points(job: Job, data: np.ndarray, rnd: int) -> None:
    rng = np.random.default_rng(100 + rnd)
    flat = np.sort(rng.choice(SHAPE[0] * SHAPE[1], size=1000, replace=False))
    coords = np.stack(np.unravel_index(flat, SHAPE), axis=1)
    with h5pyd.File(job.values, "r", **job.t.h5pyd_opts()) as f:
        d = f["warm"]

        def run(meter: CpuMeter) -> None:
            for _ in range(3):
                meter.start()
                got = d.points[coords]
                meter.stop()
                assert np.array_equal(got, data[coords[:, 0], coords[:, 1]])

        measured(job, "points", 3, run)


def op_groups(job: Job, data: np.ndarray, rnd: int) -> None:
    domain = job.fresh("groups")

    def run(meter: CpuMeter) -> None:
        meter.start()
        create_groups(job.t, domain, 200)
        meter.stop()

    measured(job, "groups", 1, run)


def op_list1000(job: Job, data: np.ndarray, rnd: int) -> None:
    def run(meter: CpuMeter) -> None:
        for _ in range(5):
            meter.start()
            with h5pyd.File(job.links, "r", **job.t.h5pyd_opts()) as f:
                names = list(f["many"].keys())
            meter.stop()
            assert len(names) == 1000

    measured(job, "list1000", 5, run)


def op_walk1000(job: Job, data: np.ndarray, rnd: int) -> None:
    def run(meter: CpuMeter) -> None:
        for _ in range(5):
            meter.start()
            with h5pyd.File(job.links, "r", **job.t.h5pyd_opts()) as f:
                count = sum(obj.id.id is not None for obj in f["many"].values())
            meter.stop()
            assert count == 1000

    measured(job, "walk1000", 5, run)


def op_open(job: Job, data: np.ndarray, rnd: int) -> None:
    def run(meter: CpuMeter) -> None:
        for _ in range(20):
            meter.start()
            with h5pyd.File(job.groups, "r", **job.t.h5pyd_opts()) as f:
                g = f["g0100"]
            meter.stop()
            assert g.name == "/g0100"

    measured(job, "open", 20, run)


def op_attr_put(job: Job, data: np.ndarray, rnd: int) -> None:
    with h5pyd.File(job.attrs, "a", **job.t.h5pyd_opts()) as f:
        g = f["g"]

        def run(meter: CpuMeter) -> None:
            meter.start()
            for i in range(50):
                g.attrs[f"p{rnd}_{i:03d}"] = np.float64(i)
                f.flush()
            meter.stop()

        measured(job, "attr_put", 50, run)
        assert g.attrs[f"p{rnd}_049"] == 49.0


def op_attr_get(job: Job, data: np.ndarray, rnd: int) -> None:
    with h5pyd.File(job.attrs, "r", **job.t.h5pyd_opts()) as f:
        g = f["g"]
        ids = g.id

        def run(meter: CpuMeter) -> None:
            meter.start()
            for i in range(50):
                value = g.attrs[f"r{i:03d}"]
                assert value[3] == i + 3
            meter.stop()

        measured(job, "attr_get", 50, run)
        del ids


def op_attr_rest_put(job: Job, data: np.ndarray, rnd: int) -> None:
    t = job.t
    with h5pyd.File(job.attrs, "r", **t.h5pyd_opts()) as f:
        gid = f["g"].id.id
    s = t.session()
    params = {"domain": job.attrs}
    body: dict[str, Any] = {"type": "H5T_STD_I32LE", "shape": [4], "value": [1, 2, 3, 4]}

    def run(meter: CpuMeter) -> None:
        meter.start()
        for i in range(100):
            r = s.put(f"{t.endpoint}/groups/{gid}/attributes/q{rnd}_{i:03d}", params=params, json=body, timeout=60)
            assert r.status_code == 201, (r.status_code, r.text[:200])
        meter.stop()

    measured(job, "attr_rest_put", 100, run)


def op_dset_create(job: Job, data: np.ndarray, rnd: int) -> None:
    with h5pyd.File(job.attrs, "a", **job.t.h5pyd_opts()) as f:

        def run(meter: CpuMeter) -> None:
            meter.start()
            for i in range(20):
                f.create_dataset(f"ds{rnd}_{i:02d}", shape=(1000, 100), dtype="f4", chunks=(100, 100))
                f.flush()
            meter.stop()

        measured(job, "dset_create", 20, run)


def app(t: Target, *argv: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    """One of h5pyd's command-line apps against ``t`` (hsls 1.0.0 needs the endpoint in the
    environment: its domain check ignores ``-e``)."""
    env = {**os.environ, "HS_ENDPOINT": t.endpoint, "HS_USERNAME": t.user, "HS_PASSWORD": t.password}
    return subprocess.run([str(BIN / argv[0]), *argv[1:]], env=env, check=True, text=True, **kw)


def op_hsload(job: Job, data: np.ndarray, rnd: int) -> None:
    job.loaded = job.fresh("loaded")

    def run(meter: CpuMeter) -> None:
        meter.start()
        app(job.t, "hsload", str(job.small), job.loaded, stdout=subprocess.DEVNULL)
        meter.stop()

    measured(job, "hsload", 1, run)


def op_hsls(job: Job, data: np.ndarray, rnd: int) -> None:
    def run(meter: CpuMeter) -> None:
        meter.start()
        out = app(job.t, "hsls", "-r", job.loaded, capture_output=True).stdout
        meter.stop()
        assert "/g19/d19 Dataset" in out, out[-500:]

    measured(job, "hsls", 1, run)


def conc_client(t: Target, domain: str, seed: int, barrier: Any) -> None:
    rng = np.random.default_rng(seed)
    block = rng.random((2048, 2048), dtype=np.float32)
    h5pyd.File(domain, "w", **t.h5pyd_opts()).close()  # the domain made before the clock starts
    barrier.wait(timeout=600)
    with h5pyd.File(domain, "a", **t.h5pyd_opts()) as f:
        d = f.create_dataset("d", shape=block.shape, dtype="f4", chunks=CHUNKS)
        d[...] = block
        f.flush()
    with h5pyd.File(domain, "r", **t.h5pyd_opts()) as f:
        if not np.array_equal(f["d"][...], block):
            raise AssertionError("concurrent client read back other values")
    barrier.wait(timeout=600)


def op_conc8(job: Job, data: np.ndarray, rnd: int) -> None:
    ctx = mp.get_context("spawn")  # not fork: h5py and open connections do not survive it
    barrier = ctx.Barrier(9)
    t = Target(job.t.endpoint, job.t.user, job.t.password)
    procs = [ctx.Process(target=conc_client, args=(t, job.fresh("conc"), i, barrier)) for i in range(8)]
    for p in procs:
        p.start()
    meter = CpuMeter(job.t.server_pid)
    barrier.wait(timeout=600)  # every client has made its data
    meter.start()
    barrier.wait(timeout=600)  # every client is done
    meter.stop()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    job.record("conc8", meter, 1)


@contextlib.contextmanager
def dataset_made(job: Job, name: str) -> Any:
    """The dataset ``name`` of the job's values domain, opened fresh. HSDS lists a domain's
    objects at an open from a summary its background scan writes, which can lag a dataset made
    a moment ago (h5pyd then raises KeyError): wait for it, outside any measurement."""
    for _ in range(30):
        f = h5pyd.File(job.values, "a", **job.t.h5pyd_opts())
        try:
            if name in f:
                yield f[name]
                return
        finally:
            f.close()
        time.sleep(1)
    raise AssertionError(f"{job.name}: {name} not listed after 30 s")


def smooth() -> np.ndarray:
    if "smooth" not in _MADE:
        _MADE["smooth"] = make_data("smooth")
    return _MADE["smooth"]


_MADE: dict[str, Any] = {}


def op_gzip_write(job: Job, data: np.ndarray, rnd: int) -> None:
    meter = CpuMeter(job.t.server_pid)
    write_once(job.t, job.values, f"z{rnd}", smooth(), meter, compression="gzip", compression_opts=4, shuffle=True)
    job.record("gzip_write", meter, 1)
    job.zipped = f"z{rnd}"


def op_gzip_read(job: Job, data: np.ndarray, rnd: int) -> None:
    if not job.zipped:
        op_gzip_write(job, data, rnd)
        job.figures.pop("gzip_write")
    with dataset_made(job, job.zipped) as d:

        def run(meter: CpuMeter) -> None:
            meter.start()
            got = d[...]
            meter.stop()
            assert np.array_equal(got, smooth())

        measured(job, "gzip_read", 1, run)


def strings() -> np.ndarray:
    if "strings" not in _MADE:
        rng = np.random.default_rng(7)
        lengths = rng.integers(3, 41, size=100_000)
        letters = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        text = "".join(rng.choice(list(letters), size=int(lengths.sum())))
        ends = np.cumsum(lengths)
        out = np.empty(len(lengths), dtype=object)
        out[:] = [text[e - n : e] for e, n in zip(ends, lengths)]
        _MADE["strings"] = out
    return _MADE["strings"]


def op_vlen_write(job: Job, data: np.ndarray, rnd: int) -> None:
    values = strings()
    with h5pyd.File(job.values, "a", **job.t.h5pyd_opts()) as f:

        def run(meter: CpuMeter) -> None:
            meter.start()
            f.create_dataset(f"s{rnd}", data=values, dtype=h5pyd.string_dtype())
            f.flush()
            meter.stop()

        measured(job, "vlen_write", 1, run)
    job.vlen = f"s{rnd}"


def op_vlen_read(job: Job, data: np.ndarray, rnd: int) -> None:
    if not job.vlen:
        op_vlen_write(job, data, rnd)
        job.figures.pop("vlen_write")
    with dataset_made(job, job.vlen) as d:

        def run(meter: CpuMeter) -> None:
            meter.start()
            got = d[...]
            meter.stop()
            assert len(got) == 100_000
            last = got[-1].decode() if isinstance(got[-1], bytes) else got[-1]
            assert last == strings()[-1], (last, strings()[-1])

        measured(job, "vlen_read", 1, run)


ROW = np.dtype([("id", "<i8"), ("x", "<f8"), ("y", "<f4"), ("n", "<i4")])


def table() -> np.ndarray:
    if "table" not in _MADE:
        rng = np.random.default_rng(11)
        t = np.empty(1_000_000, dtype=ROW)
        t["id"] = np.arange(len(t))
        t["x"] = rng.random(len(t))
        t["y"] = rng.random(len(t), dtype=np.float32)
        t["n"] = rng.integers(0, 1000, size=len(t))
        _MADE["table"] = t
    return _MADE["table"]


def op_cmpd_write(job: Job, data: np.ndarray, rnd: int) -> None:
    values = table()
    with h5pyd.File(job.values, "a", **job.t.h5pyd_opts()) as f:

        def run(meter: CpuMeter) -> None:
            meter.start()
            f.create_dataset(f"c{rnd}", data=values, chunks=(65536,))
            f.flush()
            meter.stop()

        measured(job, "cmpd_write", 1, run)
    job.cmpd = f"c{rnd}"


def op_cmpd_read(job: Job, data: np.ndarray, rnd: int) -> None:
    if not job.cmpd:
        op_cmpd_write(job, data, rnd)
        job.figures.pop("cmpd_write")
    with dataset_made(job, job.cmpd) as d:

        def run(meter: CpuMeter) -> None:
            meter.start()
            got = d[...]
            meter.stop()
            assert np.array_equal(got, table())

        measured(job, "cmpd_read", 1, run)


def op_cmpd_field(job: Job, data: np.ndarray, rnd: int) -> None:
    if not job.cmpd:
        op_cmpd_write(job, data, rnd)
        job.figures.pop("cmpd_write")
    with dataset_made(job, job.cmpd) as d:

        def run(meter: CpuMeter) -> None:
            meter.start()
            got = d["x"]
            meter.stop()
            assert np.array_equal(got, table()["x"])

        measured(job, "cmpd_field", 1, run)


def op_small500(job: Job, data: np.ndarray, rnd: int) -> None:
    domain = job.fresh("small")
    h5pyd.File(domain, "w", **job.t.h5pyd_opts()).close()
    block = np.arange(256, dtype="f4")
    with h5pyd.File(domain, "a", **job.t.h5pyd_opts()) as f:

        def run(meter: CpuMeter) -> None:
            meter.start()
            for i in range(500):
                d = f.create_dataset(f"d{i:03d}", shape=(256,), dtype="f4")
                d[...] = block + i
                got = d[...]
                assert got[255] == 255 + i
            f.flush()
            meter.stop()

        measured(job, "small500", 500, run)


def op_attrs200(job: Job, data: np.ndarray, rnd: int) -> None:
    def run(meter: CpuMeter) -> None:
        meter.start()
        with h5pyd.File(job.groups, "r", **job.t.h5pyd_opts()) as f:
            got = [dict(f[f"g{i:04d}"].attrs) for i in range(200)]
        meter.stop()
        assert got[199]["index"] == 199 and got[199]["label"] == "group number 199"

    measured(job, "attrs200", 1, run)


def op_attrs200_rest(job: Job, data: np.ndarray, rnd: int) -> None:
    t = job.t
    with h5pyd.File(job.groups, "r", **t.h5pyd_opts()) as f:
        ids = [f[f"g{i:04d}"].id.id for i in range(200)]
    s = t.session()
    params = {"domain": job.groups}

    def run(meter: CpuMeter) -> None:
        meter.start()
        for gid in ids:
            r = s.get(f"{t.endpoint}/groups/{gid}/attributes", params=params, timeout=60)
            assert r.status_code == 200 and len(r.json()["attributes"]) == 2, (r.status_code, r.text[:200])
        meter.stop()

    measured(job, "attrs200_rest", 200, run)


def op_rows100(job: Job, data: np.ndarray, rnd: int) -> None:
    rows = np.random.default_rng(200 + rnd).integers(0, SHAPE[0], size=100)
    with h5pyd.File(job.values, "r", **job.t.h5pyd_opts()) as f:
        d = f["warm"]

        def run(meter: CpuMeter) -> None:
            meter.start()
            got = [d[int(i), :] for i in rows]
            meter.stop()
            assert np.array_equal(got[-1], data[rows[-1], :])

        measured(job, "rows100", 100, run)


def op_append100(job: Job, data: np.ndarray, rnd: int) -> None:
    block = np.arange(1000, dtype="f8")
    with h5pyd.File(job.values, "a", **job.t.h5pyd_opts()) as f:
        d = f.create_dataset(f"a{rnd}", shape=(0,), maxshape=(None,), dtype="f8", chunks=(8192,))
        f.flush()

        def run(meter: CpuMeter) -> None:
            meter.start()
            for i in range(100):
                n = d.shape[0]
                d.resize((n + 1000,))
                d[n:] = block + i
            f.flush()
            meter.stop()

        measured(job, "append100", 100, run)
        assert d.shape == (100_000,) and d[99_999] == 999 + 99


def prepare_big(job: Job) -> None:
    """The 50 MiB domain hsget copies (made once per server, not timed)."""
    job.big = job.folder + "big.h5"
    values = smooth()[:3200]
    with h5pyd.File(job.big, "w", **job.t.h5pyd_opts()) as f:
        d = f.create_dataset("data", shape=values.shape, dtype="f4", chunks=CHUNKS)
        d[...] = values
        d.attrs["units"] = "K"
        for i in range(20):
            g = f.create_group(f"g{i:02d}")
            g.attrs["index"] = i
            g.create_dataset("small", data=np.arange(100, dtype="i4") + i)


def op_hsget(job: Job, data: np.ndarray, rnd: int) -> None:
    if not job.big:
        prepare_big(job)
    out = job.scratch / f"got{rnd}.h5"

    def run(meter: CpuMeter) -> None:
        meter.start()
        app(job.t, "hsget", job.big, str(out), stdout=subprocess.DEVNULL)
        meter.stop()

    measured(job, "hsget", 1, run)
    with h5py.File(out, "r") as f:
        assert np.array_equal(f["data"][3199], smooth()[3199]) and f["g19/small"][99] == 99 + 19
    out.unlink()


OPS: dict[str, Callable[[Job, np.ndarray, int], None]] = {
    "write64": op_write64,
    "read64": op_read64,
    "slab": op_slab,
    "points": op_points,
    "groups": op_groups,
    "list1000": op_list1000,
    "walk1000": op_walk1000,
    "open": op_open,
    "attr_put": op_attr_put,
    "attr_get": op_attr_get,
    "attr_rest_put": op_attr_rest_put,
    "dset_create": op_dset_create,
    "hsload": op_hsload,
    "hsls": op_hsls,
    "conc8": op_conc8,
    "gzip_write": op_gzip_write,
    "gzip_read": op_gzip_read,
    "vlen_write": op_vlen_write,
    "vlen_read": op_vlen_read,
    "cmpd_write": op_cmpd_write,
    "cmpd_read": op_cmpd_read,
    "cmpd_field": op_cmpd_field,
    "small500": op_small500,
    "attrs200": op_attrs200,
    "attrs200_rest": op_attrs200_rest,
    "rows100": op_rows100,
    "append100": op_append100,
    "hsget": op_hsget,
}


def make_small(path: Path) -> Path:
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "small file for hsload"
        for i in range(20):
            g = f.create_group(f"g{i:02d}")
            g.attrs["index"] = i
            d = g.create_dataset(f"d{i:02d}", data=np.arange(1000, dtype="f8") * i, chunks=(250,))
            d.attrs["units"] = "m"
    return path


def report(jobs: list[Job], ops: list[str]) -> None:
    first = jobs[0]
    head = f"{'operation':<14}"
    for job in jobs:
        head += f" {job.name + ' wall ms':>16} {job.name + ' cpu ms':>14}"
    for job in jobs[1:]:
        head += f" {job.name + '/' + first.name:>12}"
    print("\n" + head)
    for op in ops:
        line = f"{op:<14}"
        walls = {}
        for job in jobs:
            samples = job.figures.get(op, [])
            if not samples:
                line += f" {'-':>16} {'-':>14}"
                continue
            walls[job.name] = statistics.median(w for w, _, _ in samples)
            cpu = statistics.median(c for _, c, _ in samples)
            line += f" {walls[job.name] * 1000:>16.2f} {cpu * 1000:>14.2f}"
        for job in jobs[1:]:
            if job.name in walls and first.name in walls:
                line += f" {walls[job.name] / walls[first.name]:>11.2f}x"
        print(line)
    print("\nper round (wall ms; server cpu ms; this client's cpu ms, not its subprocesses'):")
    for op in ops:
        for job in jobs:
            samples = job.figures.get(op, [])
            text = ", ".join(f"{w * 1000:.2f};{c * 1000:.2f};{k * 1000:.2f}" for w, c, k in samples)
            print(f"  {op:<14} {job.name:<8} {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--start", action="append", default=[], metavar="NAME[=CHECKOUT[,VAR=VALUE...]]")
    parser.add_argument("--remote", action="append", default=[], metavar="NAME=ENDPOINT,PGID")
    parser.add_argument("--server-arg", action="append", default=[], help="for the h5lakes started here")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", help="comma-separated operations (default: all)")
    parser.add_argument("--skip", default="", help="comma-separated operations to leave out")
    parser.add_argument("--progress", action="store_true", help="print each figure as it is measured")
    args = parser.parse_args()
    ops = args.only.split(",") if args.only else list(OPS)
    ops = [op for op in ops if op not in args.skip.split(",")]
    for op in ops:
        if op not in OPS:
            parser.error(f"unknown operation {op}; known: {', '.join(OPS)}")
    starts = args.start or ([] if any(r.startswith("h5lake=") for r in args.remote) else ["h5lake"])
    data = make_data("random")
    password = USERS[USER]
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="h5lake-sbs-")))
        small = make_small(tmp / "small.h5")
        jobs: list[Job] = []
        for spec in starts:
            name, _, rest = spec.partition("=")
            checkout, *settings = rest.split(",") if rest else [""]
            tree = Path(checkout).resolve() if checkout else ROOT
            env = {"PYTHONPATH": f"{tree}/src:{tree}", **dict(s.split("=", 1) for s in settings)}
            server = start_server(tmp / name, extra=list(args.server_arg), env=env, workers=None)
            stack.callback(server.stop)
            print(f"# {name}: h5lake of {tree} at {server.endpoint}, process group {server.process.pid}")
            jobs.append(Job(name, Target(server.endpoint, USER, password, server.process.pid)))
        for spec in args.remote:
            name, _, rest = spec.partition("=")
            endpoint, _, pgid = rest.rpartition(",")
            print(f"# {name}: {endpoint}, process group {pgid}")
            jobs.append(Job(name, Target(endpoint.rstrip("/"), USER, password, int(pgid))))
        for job in jobs:
            stack.callback(job.t.cleanup)
            prepare(job, data, small)
        print(f"# h5pyd {h5pyd.version.version}; operations: {', '.join(ops)}; {args.rounds} rounds")
        for rnd in range(args.rounds):
            order = jobs if rnd % 2 == 0 else jobs[::-1]
            start = time.perf_counter()
            for op in ops:
                for job in order:
                    OPS[op](job, data, rnd)
                    if args.progress and job.figures.get(op):
                        w, c, k = job.figures[op][-1]
                        print(f"  {op:<14} {job.name:<8} round {rnd + 1}: {w * 1000:.2f};{c * 1000:.2f};{k * 1000:.2f}", flush=True)
            load = os.getloadavg()[0]
            print(f"# round {rnd + 1} done in {time.perf_counter() - start:.0f} s, load {load:.1f}", flush=True)
        report(jobs, ops)


if __name__ == "__main__":
    main()
