"""Other clients' waits while many web-view plots of a long line (or a large image) run at once.

    python bench/view_contention.py                         # 16 plots of a 458 MiB float64 line
    python bench/view_contention.py --plots 8 --points 16000000
    python bench/view_contention.py --image 4096            # plots of a 4096 x 4096 float32 image

Loads (copies) an HDF5 file with the long dataset and a small gzip dataset (one 512 KiB chunk)
into a local server, then sends ``--plots`` plot requests (``/view/api/preview``, as the page
opens the dataset) at once while another client, every 50 ms, reads the small dataset, reads
the root group and rewrites half of the small dataset (its chunk decoded and encoded on the
server's CPU pool). Prints that client's waits idle and under the plots, the plots' wall time
and the server's CPU time (from /proc).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import h5py
import numpy as np
import requests
from tests.support.server import USERS, start_server

A = ("admin", USERS["admin"])
DOMAIN = "/home/admin/contention.h5"


def make_file(path: Path, points: int, image: int) -> None:
    with h5py.File(path, "w") as f:
        if image:
            d = f.create_dataset("big", (image, image), "f4", chunks=(512, 512))
            for r in range(0, image, 512):
                d[r : r + 512] = np.sin(np.arange(r, min(image, r + 512))[:, None] / 300.0) * np.arange(image)
        else:
            d = f.create_dataset("big", (points,), "f8", chunks=(1 << 20,))
            for b in range(0, points, 1 << 23):
                i = np.arange(b, min(points, b + (1 << 23)))
                d[b : b + i.size] = np.sin(i / 5e4)
        f.create_dataset("small", data=np.random.default_rng(0).random(1 << 16), chunks=(1 << 16,), compression="gzip")


def server_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=60_000_000, help="float64 points of the line")
    parser.add_argument("--image", type=int, default=0, help="side of a square float32 image to plot instead")
    parser.add_argument("--plots", type=int, default=16, help="plot requests at once")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="h5lake-contention-"))
    srv = None
    try:
        make_file(work / "f.h5", args.points, args.image)
        srv = start_server(work / "srv")
        ep = srv.endpoint
        requests.put(ep + "/", params={"domain": "/home/admin/"}, json={"folder": 1}, auth=A, timeout=10)
        subprocess.run([sys.executable, "-m", "h5lake.cli.command", "load", str(work / "f.h5"), DOMAIN, "-e", ep,
                        "-u", A[0], "-p", A[1], "-q"], check=True)
        (work / "f.h5").unlink()
        s = requests.Session()
        s.auth = A
        dom = {"domain": DOMAIN}
        root = s.get(ep + "/", params=dom, timeout=10).json()["root"]
        ids = {link["title"]: link["id"] for link in s.get(ep + f"/groups/{root}/links", params=dom, timeout=10).json()["links"]}
        small = ep + f"/datasets/{ids['small']}/value"
        binary = {"Content-Type": "application/octet-stream", "Accept": "application/octet-stream"}

        def other() -> tuple[float, float, float]:
            took = []
            for call in (lambda: s.get(small, params=dom, headers=binary, timeout=120),
                         lambda: s.get(ep + f"/groups/{root}", params=dom, timeout=120),
                         lambda: s.put(small, params={**dom, "select": "[0:32768]"},
                                       data=np.random.random(1 << 15).tobytes(), headers=binary, timeout=120)):
                t0 = time.monotonic()
                r = call()
                took.append(time.monotonic() - t0)
                r.raise_for_status()
            return took[0], took[1], took[2]

        idle = [other() for _ in range(10)]
        busy: list[tuple[float, float, float]] = []
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                busy.append(other())
                stop.wait(0.05)

        def plot(_: int) -> str:
            with requests.get(ep + "/view/api/preview", params={**dom, "path": "/big", "width": 1000, "height": 750},
                              auth=A, timeout=600) as r:
                r.raise_for_status()
                return r.headers.get("Server-Timing", "")

        cpu0 = server_cpu(srv.process.pid)
        watcher = threading.Thread(target=watch)
        watcher.start()
        t0 = time.monotonic()
        with ThreadPoolExecutor(args.plots) as pool:
            list(pool.map(plot, range(args.plots)))
        wall = time.monotonic() - t0
        stop.set()
        watcher.join()
        cpu = server_cpu(srv.process.pid) - cpu0
        what = f"{args.image} x {args.image} float32 image" if args.image else f"{args.points * 8 / 2**20:.0f} MiB line"
        print(f"{args.plots} plots of a {what} at once: wall {wall:.1f} s, server CPU {cpu:.1f} s")
        for k, name in enumerate(("small read", "group GET", "small gzip rewrite")):
            i = [w[k] * 1000 for w in idle]
            b = [w[k] * 1000 for w in busy]
            print(f"  {name:19s} idle max {max(i):5.0f} ms | during the plots max {max(b):5.0f} ms, "
                  f"median {statistics.median(b):5.0f} ms ({len(b)} asks)")
    finally:
        if srv is not None:
            srv.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
