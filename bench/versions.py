"""Versions benchmark (docs/versions.md, issue 12 "Speed and storage"), through h5pyd and REST.

    python bench/versions.py                    # 1 GiB float32 dataset in 1 MiB chunks, 100 commits
    python bench/versions.py --size-mib 128     # a quicker run: the same figures at 1/8 the size
    python bench/versions.py --merge-only       # only the merges: 1% and 5% of the chunks, side by side

Starts its own h5lake on a local directory (storage is measured there) and prints:
  * the first commit of the whole dataset: time, bytes stored;
  * a commit after changing 1% of the chunks: time, bytes stored (target: about 1% of the data);
  * N successive commits each changing 1% of the chunks: the content store against the head's
    data (target: at most 2x; a full copy per version would be N+1 times); the head and the
    content store together, counted by name (apparent) and with each file once (by inode, and
    in disk blocks: on a local directory the latest version's blobs are hard links to the
    head's chunks); the time per commit over the first and the last ten (must not grow with the
    number of versions);
  * a full read of the version 50 commits back against the same read of the head (target: within
    1.2), best of three each;
  * a fork of the domain from a version: time (target: under 1 s, independent of size);
  * merging a fork back after it changed 1% and, from a new fork, 5% of the chunks
    (``--merge-shares``), side by side: the merge's time (it should follow the change), the
    chunks it wrote to the head, the time per changed chunk, and the fork's commit before it;
  * with versioned-hdf5 installed, the same workload on a local file with it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import h5pyd
import numpy as np
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.server import USERS, start_server

MIB = 1024 * 1024
CHUNK = MIB // 4  # float32 elements in a 1 MiB chunk


def _stats(data: Path, pick: Callable[[str], bool]) -> list[os.stat_result]:
    return [p.stat() for p in data.iterdir() if p.is_file() and pick(p.name)]


def stored_bytes(data: Path, suffixes: tuple[str, ...]) -> int:
    """Apparent size: the bytes of every name ending in ``suffixes`` (a hard link counts again)."""
    return sum(st.st_size for st in _stats(data, lambda name: name.endswith(suffixes)))


def head_bytes(data: Path) -> int:
    return sum(st.st_size for st in _stats(data, lambda name: "-c-" in name))


def unique_bytes(data: Path) -> tuple[int, int]:
    """Head chunks, blobs and manifests with each file counted once (by device and inode): its
    size, and the disk blocks it takes (``st_blocks``, as ``du`` counts)."""
    stats = _stats(data, lambda name: "-c-" in name or name.endswith((".blob", ".tree")))
    once = {(st.st_dev, st.st_ino): st for st in stats}
    return sum(st.st_size for st in once.values()), sum(st.st_blocks * 512 for st in once.values())


def change(d: h5pyd.Dataset, chunks: int, rng: np.random.Generator, count: int) -> None:
    for i in rng.choice(chunks, size=count, replace=False):
        d[i * CHUNK : (i + 1) * CHUNK] = rng.random(CHUNK, dtype=np.float32)


def commit(s: requests.Session, endpoint: str, domain: str) -> float:
    start = time.perf_counter()
    r = s.post(endpoint + "/versions", params={"domain": domain}, json={"message": "bench"}, timeout=3600)
    r.raise_for_status()
    return time.perf_counter() - start


def best_read(domain: str, opts: dict[str, str]) -> tuple[float, np.ndarray]:
    times, out = [], None
    for _ in range(3):
        with h5pyd.File(domain, "r", **opts) as f:
            start = time.perf_counter()
            out = f["x"][...]
            times.append(time.perf_counter() - start)
    assert out is not None
    return min(times), out


def row(label: str, value: str) -> None:
    print(f"{label:<58} {value}")


def run_h5lake(args: argparse.Namespace, workdir: Path) -> None:
    server = start_server(workdir)
    data = server.data
    try:
        endpoint, user = server.endpoint, "test_user1"
        opts = {"endpoint": endpoint, "username": user, "password": USERS[user]}
        s = requests.Session()
        s.auth = (user, USERS[user])
        s.put(endpoint + "/", params={"domain": "/home/test_user1"}, json={"folder": True}).raise_for_status()
        domain = "/home/test_user1/bench.h5"
        s.put(endpoint + "/", params={"domain": domain}).raise_for_status()
        chunks = args.size_mib
        per_commit = max(1, round(chunks * args.fraction))
        rng = np.random.default_rng(7)
        with h5pyd.File(domain, "a", **opts) as f:
            d = f.create_dataset("x", shape=(chunks * CHUNK,), dtype="f4", chunks=(CHUNK,))
            for i in range(0, chunks, 16):
                n = min(16, chunks - i)
                d[i * CHUNK : (i + n) * CHUNK] = rng.random(n * CHUNK, dtype=np.float32)
        head = head_bytes(data)
        print(f"# h5lake at {endpoint}, data in {data}; dataset {chunks} MiB in 1 MiB chunks, "
              f"{per_commit} chunk(s) changed per commit")
        if args.merge_only:
            commit(s, endpoint, domain)
            merges(args, s, endpoint, domain, opts, rng)
            return
        before, before_unique = stored_bytes(data, (".blob", ".tree")), unique_bytes(data)[0]
        t = commit(s, endpoint, domain)
        row("first commit (whole dataset)", f"{t:.2f} s, {(stored_bytes(data, ('.blob', '.tree')) - before) / MIB:.1f} MiB "
            f"in the content store's names, {(unique_bytes(data)[0] - before_unique) / MIB:.1f} MiB new files")
        with h5pyd.File(domain, "a", **opts) as f:
            change(f["x"], chunks, rng, per_commit)
        before_blobs, before_trees = stored_bytes(data, (".blob",)), stored_bytes(data, (".tree",))
        before_unique = unique_bytes(data)[0]
        t = commit(s, endpoint, domain)
        blobs = stored_bytes(data, (".blob",)) - before_blobs
        trees = stored_bytes(data, (".tree",)) - before_trees
        grown = unique_bytes(data)[0] - before_unique
        row(f"commit after changing {args.fraction:.0%} of chunks", f"{t * 1000:.0f} ms, {blobs / MIB:.2f} MiB chunks "
            f"({blobs / head:.2%} of the data) + {trees / 1024:.1f} KiB manifests; new files {grown / MIB:.2f} MiB")
        times = []
        for _ in range(args.commits):
            with h5pyd.File(domain, "a", **opts) as f:
                change(f["x"], chunks, rng, per_commit)
            times.append(commit(s, endpoint, domain))
        total = stored_bytes(data, (".blob", ".tree"))
        versions = args.commits + 2
        head = head_bytes(data)
        row(f"{args.commits} more commits, each {args.fraction:.0%}: content store",
            f"{total / MIB:.0f} MiB = {total / head:.2f}x the head's {head / MIB:.0f} MiB "
            f"({versions} versions; full copies: {versions}x)")
        apparent = total + head
        unique, disk = unique_bytes(data)
        row("head + content store, apparent (every name)", f"{apparent / MIB:.0f} MiB = {apparent / head:.2f}x the head")
        row("head + content store, each file once (by inode)",
            f"{unique / MIB:.0f} MiB = {unique / head:.2f}x the head; on disk (st_blocks) {disk / MIB:.0f} MiB "
            f"= {disk / head:.2f}x")
        first, last = np.median(times[:10]), np.median(times[-10:])
        row("time per commit, median of first 10 / last 10", f"{first * 1000:.0f} ms / {last * 1000:.0f} ms")
        back = min(50, versions - 1)
        latest = versions
        t_head, head_values = best_read(domain, opts)
        t_old, old_values = best_read(f"{domain}@v{latest - back}", opts)
        assert old_values.shape == head_values.shape and not np.array_equal(old_values, head_values)
        row(f"full read of v{latest - back} ({back} commits old) vs the head",
            f"{t_old:.2f} s vs {t_head:.2f} s: ratio {t_old / t_head:.2f}")
        start = time.perf_counter()
        r = s.put(endpoint + "/", params={"domain": "/home/test_user1/fork.h5"}, json={"from": f"{domain}@v{latest}"})
        r.raise_for_status()
        t_fork = time.perf_counter() - start
        with h5pyd.File("/home/test_user1/fork.h5", "r", **opts) as f:
            assert np.array_equal(f["x"][0:CHUNK], head_values[0:CHUNK])
        row("fork of the domain from a version", f"{t_fork * 1000:.0f} ms")
        merges(args, s, endpoint, domain, opts, rng)
    finally:
        server.stop()


def merges(args: argparse.Namespace, s: requests.Session, endpoint: str, domain: str, opts: dict[str, str],
           rng: np.random.Generator) -> None:
    """Merging a fork back, for each share of the chunks changed in it (side by side): each time a
    new fork of the latest version, the share of its chunks rewritten, the fork committed (timed
    apart), then the merge timed alone. Its time should follow the change, not the dataset."""
    chunks = args.size_mib
    shares = [float(x) for x in args.merge_shares.split(",")]
    figures = []
    for n, share in enumerate(shares):
        fork = f"/home/test_user1/merge-{n}.h5"
        r = s.put(endpoint + "/", params={"domain": fork}, json={"from": domain}, timeout=3600)
        r.raise_for_status()
        count = max(1, round(chunks * share))
        with h5pyd.File(fork, "a", **opts) as f:
            change(f["x"], chunks, rng, count)
        t_commit = commit(s, endpoint, fork)
        start = time.perf_counter()
        r = s.post(endpoint + "/versions/merge", params={"domain": domain}, timeout=3600, json={"from": fork})
        r.raise_for_status()
        figures.append((share, count, time.perf_counter() - start, r.json()["chunks"], t_commit))
    row("merge of a fork that changed " + " | ".join(f"{f[0]:.0%}" for f in figures) + " of the chunks",
        " | ".join(f"{f[2] * 1000:.0f} ms" for f in figures))
    row("  chunks written to the head", " | ".join(str(f[3]) for f in figures))
    first = figures[0]
    row("  ms per chunk changed beyond the first column's",
        " | ".join("-" if f[1] == first[1] else f"{(f[2] - first[2]) * 1000 / (f[1] - first[1]):.1f}" for f in figures))
    row("  the fork's commit before (not in the merge's time)", " | ".join(f"{f[4] * 1000:.0f} ms" for f in figures))


def run_versioned_hdf5(args: argparse.Namespace, workdir: Path) -> None:
    try:
        import h5py
        import versioned_hdf5
        from versioned_hdf5 import VersionedHDF5File
    except ImportError:
        print("# versioned-hdf5 is not installed: its figures are skipped (pip install versioned-hdf5)")
        return
    path = workdir / "vh5.h5"
    chunks = args.size_mib
    per_commit = max(1, round(chunks * args.fraction))
    rng = np.random.default_rng(7)
    print(f"# versioned-hdf5 {versioned_hdf5.__version__} on {path}")

    def stage(name: str, work) -> float:  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        with h5py.File(path, "a") as f, VersionedHDF5File(f).stage_version(name) as g:
            work(g)
        return time.perf_counter() - start

    def changed(g) -> None:  # type: ignore[no-untyped-def]
        for i in rng.choice(chunks, size=per_commit, replace=False):
            g["x"][i * CHUNK : (i + 1) * CHUNK] = rng.random(CHUNK, dtype=np.float32)

    t = stage("v1", lambda g: g.create_dataset("x", data=rng.random(chunks * CHUNK, dtype=np.float32), chunks=(CHUNK,)))
    row("first version (whole dataset)", f"{t:.2f} s, file {path.stat().st_size / MIB:.0f} MiB")
    size = path.stat().st_size
    t = stage("v2", changed)
    row(f"version after changing {args.fraction:.0%} of chunks", f"{t * 1000:.0f} ms, file grew {(path.stat().st_size - size) / MIB:.2f} MiB")
    times = [stage(f"v{k + 3}", changed) for k in range(args.commits)]
    head = chunks * MIB
    row(f"{args.commits} more versions: file size", f"{path.stat().st_size / MIB:.0f} MiB = {path.stat().st_size / head:.2f}x the data")
    row("time per version, median of first 10 / last 10",
        f"{np.median(times[:10]) * 1000:.0f} ms / {np.median(times[-10:]) * 1000:.0f} ms")
    latest = args.commits + 2
    back = min(50, latest - 1)

    def read(name: str) -> float:
        best = float("inf")
        for _ in range(3):
            with h5py.File(path, "r") as f:
                start = time.perf_counter()
                VersionedHDF5File(f)[name]["x"][...]
                best = min(best, time.perf_counter() - start)
        return best

    t_old, t_new = read(f"v{latest - back}"), read(f"v{latest}")
    row(f"full read of v{latest - back} vs v{latest}", f"{t_old:.2f} s vs {t_new:.2f} s: ratio {t_old / t_new:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mib", type=int, default=1024, help="dataset size in MiB (= chunks) [1024]")
    parser.add_argument("--commits", type=int, default=100, help="successive commits [100]")
    parser.add_argument("--fraction", type=float, default=0.01, help="share of chunks changed per commit [0.01]")
    parser.add_argument("--skip-versioned-hdf5", action="store_true")
    parser.add_argument("--merge-only", action="store_true",
                        help="only the merge figures (no commit series, no versioned-hdf5)")
    parser.add_argument("--merge-shares", default="0.01,0.05",
                        help="shares of the chunks a fork changes before each merge, comma-separated [0.01,0.05]")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="h5lake-bench-versions-", dir=os.environ.get("TMPDIR")) as tmp:
        run_h5lake(args, Path(tmp) / "h5lake")
        if not args.skip_versioned_hdf5 and not args.merge_only:
            run_versioned_hdf5(args, Path(tmp))


if __name__ == "__main__":
    main()
