"""zarr-python through the Zarr bridge (/zarr{domain}, docs/zarr.md) beside h5pyd, on the same
data in one run.

    python bench/zarr.py                      # 1 GiB of float32, 3 rounds
    python bench/zarr.py --mib 256 --rounds 1 # a quicker look
    python bench/zarr.py --only open10k       # the open figures alone (seconds)
    python bench/zarr.py --only read          # the two reads alone (data written by h5pyd, untimed)
    python bench/zarr.py --only write         # the writes alone

Starts an h5lake (``h5lake serve``'s default workers; or ``--endpoint``) and measures, per round,
median over the rounds, wall seconds, GB/s (of the float32 values, 10^9 bytes) and the CPU
seconds of the client (this process, all its threads) and of the server (its process group), for
three clients in turn: h5pyd, zarr-python over ``FsspecStore`` (fsspec's HTTP, aiohttp) and
zarr-python over ``ObjectStore`` on obstore's ``HTTPStore`` (Rust), zarr-python with its default
concurrency:

  read        a MIB MiB float32 dataset (4 MiB chunks, uncompressed) read whole: h5pyd
              ``d[...]`` against zarr-python ``a[...]``, all on the one dataset h5pyd wrote
  gzip_read   the same values with gzip (level 4) and shuffle, written by h5pyd; zarr-python
              reads the stored chunks as they are (codecs numcodecs.shuffle, numcodecs.zlib)
  write       writing the MIB MiB whole: h5pyd ``d[...] = v`` to the end of ``flush()`` against
              zarr-python ``a[...] = v`` into an array it made (uncompressed), one per store
  open10k     opening a domain of 10,000 objects (100 groups of 99 datasets, and the root) and listing every
              object: h5pyd ``File`` + ``visit`` against zarr-python ``open_group`` with the
              consolidated metadata + ``members(max_depth=None)``
  root GET    the server's part of that open: one GET of the root ``zarr.json``, first when it
              is made from the 10,000 documents, then kept (docs/zarr.md, "Opening a domain")
  parse alone zarr-python's own part: the same ``open_group`` + ``members`` on an in-memory store
              holding that root ``zarr.json`` (no HTTP): the floor of open10k whatever the
              server does

Values read (and the arrays zarr-python wrote) are checked against what was written (a sample
of rows).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

# this file is named zarr.py: the library is imported before its folder (where Python looks
# first for a script's imports) is searched, and the folder only then, for bench/common.py
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
import zarr

sys.path.append(str(_HERE))
from common import CpuMeter, Target, add_target_args, describe, maybe_pause, target

CHUNK = (1024, 1024)  # 4 MiB of float32


ZARR_STORES = ("fsspec", "obstore")  # zarr-python's stores measured, each a column
CLIENTS = ("h5pyd", *ZARR_STORES)


def _store(t: Target, domain: str, path: str = "", read_only: bool = True, kind: str = "fsspec") -> Any:
    """zarr-python's store of ``/zarr{domain}{path}``: ``FsspecStore`` (fsspec's HTTP, aiohttp)
    or ``ObjectStore`` over obstore's ``HTTPStore`` (Rust: reqwest on tokio)."""
    import base64

    token = "Basic " + base64.b64encode(f"{t.user}:{t.password}".encode()).decode()
    url = f"{t.endpoint}/zarr{domain}{path}"
    if kind == "obstore":
        from obstore.store import HTTPStore
        from zarr.storage import ObjectStore

        return ObjectStore(HTTPStore.from_url(url, client_options={"default_headers": {"Authorization": token},
                                                                   "allow_http": True}), read_only=read_only)
    from zarr.storage import FsspecStore

    return FsspecStore.from_url(url, read_only=read_only, storage_options={"client_kwargs": {"headers": {"Authorization": token}}})


def _values(mib: int) -> np.ndarray:
    rows = max(CHUNK[0], mib * 1024 * 1024 // 4 // 16384)
    y = np.linspace(0, 40, rows, dtype="f4")[:, None]
    x = np.linspace(0, 40, 16384, dtype="f4")[None, :]
    return (np.sin(y) * np.cos(x) * 1000).astype("f4")  # smooth: gzip+shuffle compresses it


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _check(got: np.ndarray, want: np.ndarray) -> None:
    rows = np.linspace(0, want.shape[0] - 1, 17).astype(int)
    if not np.array_equal(got[rows], want[rows]):
        raise SystemExit("values read differ from the values written")


def _h5pyd_file(t: Target, domain: str, mode: str) -> Any:
    import h5pyd

    return h5pyd.File(domain, mode, **t.h5pyd_opts())


def _many(t: Target, domain: str) -> None:
    """100 groups of 99 datasets (10,000 objects and the root), made in a few requests."""
    s = t.session()
    p = {"domain": domain}
    r = s.post(f"{t.endpoint}/groups", params=p, json=[{"h5path": f"/g{i:03d}"} for i in range(100)], timeout=600)
    r.raise_for_status()
    bodies = [{"type": "H5T_IEEE_F32LE", "shape": [10], "h5path": f"/g{i:03d}/d{j:02d}"} for i in range(100) for j in range(99)]
    for start in range(0, len(bodies), 1000):
        r = s.post(f"{t.endpoint}/datasets", params=p, json=bodies[start : start + 1000], timeout=600)
        r.raise_for_status()


def _open_h5pyd(t: Target, many: str) -> None:
    seen: list[str] = []

    def note(name: str) -> None:  # h5pyd's visit reads its callback's argument count
        seen.append(name)

    with _h5pyd_file(t, many, "r") as f:
        f.visit(note)
    assert len(seen) == 10000, len(seen)


def _open_zarr(t: Target, many: str, kind: str = "fsspec") -> None:
    g = zarr.open_group(_store(t, many, kind=kind), mode="r", zarr_format=3, use_consolidated=True)
    found = list(g.members(max_depth=None))
    assert len(found) == 10000, len(found)


def _open(t: Target, many: str, kind: str) -> None:
    (_open_h5pyd(t, many) if kind == "h5pyd" else _open_zarr(t, many, kind))


def _get_root(t: Target, many: str) -> bytes:
    """The server's part of an open: one GET of the root zarr.json (the whole hierarchy inline)."""
    r = t.session().get(f"{t.endpoint}/zarr{many}/zarr.json", timeout=600)
    r.raise_for_status()
    assert len(r.json()["consolidated_metadata"]["metadata"]) == 10000
    return r.content


def _parse_alone(root: bytes) -> None:
    """zarr-python's part of an open: the root zarr.json from memory, opened and listed."""
    from zarr.core.buffer import default_buffer_prototype
    from zarr.storage import MemoryStore

    store = MemoryStore({"zarr.json": default_buffer_prototype().buffer.from_bytes(root)})
    g = zarr.open_group(store, mode="r", zarr_format=3, use_consolidated=True)
    found = list(g.members(max_depth=None))
    assert len(found) == 10000, len(found)


Times = dict[tuple[str, str], list[CpuMeter]]


def _measure(t: Target, times: Times, op: str, client: str, fn: Callable[[], Any]) -> None:
    meter = CpuMeter(t.server_pid).start()
    fn()
    times.setdefault((op, client), []).append(meter.stop())


def one_round(t: Target, big: str, many: str, data: np.ndarray, rnd: int, only: str | None, times: Times) -> None:
    """One round; each operation by every client in turn (h5pyd, then each zarr-python store)."""
    if only in (None, "open10k"):
        root: list[bytes] = []
        _measure(t, times, "root_get", "server", lambda: root.append(_get_root(t, many)))
        _measure(t, times, "parse", "zarr", lambda: _parse_alone(root[0]))
        for client in CLIENTS:
            _measure(t, times, "open10k", client, partial(_open, t, many, client))
    if only == "open10k":
        return
    with _h5pyd_file(t, big, "a") as f:
        if only == "read":  # the data to read, written untimed
            f.create_dataset(f"h{rnd}", data=data, chunks=CHUNK)
        else:
            d = f.create_dataset(f"h{rnd}", shape=data.shape, dtype="f4", chunks=CHUNK)

            def write_h5pyd() -> None:
                d[...] = data
                f.flush()

            _measure(t, times, "write", "h5pyd", write_h5pyd)
        if only != "write":
            f.create_dataset(f"gz{rnd}", data=data, chunks=CHUNK, compression="gzip", compression_opts=4, shuffle=True)
    if only in (None, "write"):
        for kind in ZARR_STORES:
            a = zarr.create_array(_store(t, big, f"/z{rnd}{kind}", read_only=False, kind=kind), shape=data.shape,
                                  chunks=CHUNK, dtype="f4", compressors=None, fill_value=0, zarr_format=3)
            _measure(t, times, "write", kind, partial(a.__setitem__, Ellipsis, data))
            _check(zarr.open_array(_store(t, big, f"/z{rnd}{kind}"), mode="r", zarr_format=3)[...], data)
    if only == "write":
        return
    for op, name in (("read", f"h{rnd}"), ("gzip_read", f"gz{rnd}")):
        _reads(t, times, op, big, name, data)


def _read_into(out: list[np.ndarray], arr: Any) -> None:
    out.append(arr[...])


def _reads(t: Target, times: Times, op: str, domain: str, name: str, data: np.ndarray) -> None:
    """Dataset ``name`` read whole through h5pyd, then through zarr-python over each store."""
    out: list[np.ndarray] = []
    with _h5pyd_file(t, domain, "r") as f:
        _measure(t, times, op, "h5pyd", lambda: out.append(f[name][...]))
    _check(out.pop(), data)
    for kind in ZARR_STORES:
        arr = zarr.open_array(_store(t, domain, f"/{name}", kind=kind), mode="r", zarr_format=3)
        _measure(t, times, op, kind, partial(_read_into, out, arr))
        _check(out.pop(), data)


def _report(times: Times, what: str, rounds: int, gb: float, ops: tuple[str, ...]) -> None:
    def med(op: str, client: str, part: str) -> float:
        return statistics.median(getattr(m, part) for m in times[(op, client)])

    print(f"\n# {what}; median of {rounds} rounds; zarr-python over FsspecStore (fsspec) and over"
          " ObjectStore(obstore HTTPStore) (obstore); x: h5pyd's time over the client's")
    print(f"{'operation':10}" + "".join(f" {c + ' s':>10}" for c in CLIENTS) + "".join(f" {c + ' GB/s':>12}" for c in CLIENTS)
          + "".join(f" {'x ' + c:>10}" for c in ZARR_STORES))
    for op in ops:
        walls = [med(op, c, "wall") for c in CLIENTS]
        rates = [f"{gb / w:.2f}" if op != "open10k" else "" for w in walls]
        print(f"{op:10}" + "".join(f" {w:10.2f}" for w in walls) + "".join(f" {r:>12}" for r in rates)
              + "".join(f" {walls[0] / w:9.1f}x" for w in walls[1:]))
    print("# CPU seconds, client (this process, all its threads) + server (its processes)")
    print(f"{'operation':10}" + "".join(f" {c:>14}" for c in CLIENTS))
    for op in ops:
        print(f"{op:10}" + "".join(f" {med(op, c, 'client'):6.2f}+{med(op, c, 'server'):<7.2f}" for c in CLIENTS))


def run(args: argparse.Namespace) -> None:
    import warnings

    warnings.filterwarnings("ignore", message=".*Numcodecs codecs.*")
    data = _values(args.mib) if args.only != "open10k" else np.zeros((1, 1), "f4")
    gb = data.nbytes / 1e9
    with target(args) as t:
        describe(t)
        folder = t.new_folder("zarr")
        big, many = folder + "big.h5", folder + "many.h5"
        with _h5pyd_file(t, big, "w"):
            pass
        with _h5pyd_file(t, many, "w"):
            pass
        if args.only not in ("read", "write"):
            _many(t, many)
            first_get = _timed(lambda: _get_root(t, many))  # made from the 10,000 documents
            first = _timed(lambda: _open_zarr(t, many))
        maybe_pause(args, t)
        times: Times = {}
        for rnd in range(args.rounds):
            one_round(t, big, many, data, rnd, args.only, times)
            if args.progress:
                print(f"  round {rnd}: " + ", ".join(f"{k[0]}/{k[1]} {v[-1].wall:.2f} s" for k, v in times.items()), flush=True)
        what = "opening 10,000 objects" if args.only == "open10k" else f"{data.nbytes / 2**20:.0f} MiB float32 in {CHUNK[0]}x{CHUNK[1]} chunks"
        ops = {None: ("read", "gzip_read", "write", "open10k"), "read": ("read", "gzip_read"), "write": ("write",),
               "open10k": ("open10k",)}[args.only]
        _report(times, what, args.rounds, gb, ops)
        if args.only in ("read", "write"):
            return
        root_get = statistics.median(m.wall for m in times[("root_get", "server")])
        print(f"open10k first (zarr-python over fsspec, the consolidated metadata kept by then): {first:.2f} s")
        print(f"root zarr.json GET alone (the server's part of an open): {first_get:.3f} s made, {root_get:.3f} s kept"
              " (the rest of a zarr-python open is its own parsing of 10,000 array metadata)")
        parse = statistics.median(m.wall for m in times[("parse", "zarr")])
        print(f"zarr-python alone on that root zarr.json in memory (the floor of its open): {parse:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(parser)
    parser.add_argument("--mib", type=int, default=1024, help="size of the float32 dataset (MiB)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--progress", action="store_true", help="print each round's figures")
    parser.add_argument("--only", choices=["open10k", "read", "write"], help="measure this operation alone")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
