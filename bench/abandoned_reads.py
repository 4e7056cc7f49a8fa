"""Server CPU spent on plots and whole reads whose clients leave early, from /proc.

    python bench/abandoned_reads.py                                  # starts its own h5lake (1 worker)
    python bench/abandoned_reads.py --server-env PYTHONPATH=/tmp/old/src   # an older build, to compare

Makes a 1-D float64 dataset of ``--mib`` MiB (256: a line plot scans it whole, 16 MiB windows
at a time). Then, each measured as the CPU seconds of the server's process group until it is
idle again (no 50 ms of CPU within a second):

* **one plot**: ``GET /view/api/preview`` of the whole line, answered and read;
* **abandoned plots**: ``--clients`` such plots whose clients close their connection
  ``--leave-after`` seconds after sending the request (the page moved on, a tab was closed);
* **abandoned h5grove reads**: ``--clients`` ``GET /h5grove/data?format=bin`` of the whole
  dataset (made whole in memory; they take turns through the reply budget) whose clients leave
  alike.

Without stopping, each abandoned request costs what a finished one does.
"""

from __future__ import annotations

import argparse
import base64
import socket
import sys
import time
import urllib.parse
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import add_target_args, target
from tests.support.procgroup import group_cpu


def idle_cpu(pgid: int) -> float:
    """The group's CPU seconds once it has been idle for a second."""
    last = group_cpu(pgid)
    while True:
        time.sleep(1.0)
        now = group_cpu(pgid)
        if now - last < 0.05:
            return now
        last = now


def leave_early(endpoint: str, path: str, auth: str, leave_after: float) -> socket.socket:
    url = urllib.parse.urlsplit(endpoint)
    sock = socket.create_connection((url.hostname, url.port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: Basic {auth}\r\n\r\n".encode())
    return sock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(parser)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--leave-after", type=float, default=0.3)
    args = parser.parse_args()
    if not any(a.startswith("--workers") for a in args.server_arg):
        args.server_arg += ["--workers", "1"]
    with target(args) as t:
        if t.server_pid is None:
            raise SystemExit("this bench measures a server it starts itself (its CPU from /proc)")
        s = t.session()
        folder = t.new_folder("abandoned")
        domain = folder + "line.h5"
        params = {"domain": domain}
        assert s.put(t.endpoint + "/", params=params).status_code == 201
        root = s.get(t.endpoint + "/", params=params).json()["root"]
        n = args.mib * 2**20 // 8
        body = {"type": "H5T_IEEE_F64LE", "shape": [n], "link": {"id": root, "name": "line"}}
        did = s.post(t.endpoint + "/datasets", params=params, json=body).json()["id"]
        piece = 8 * 2**20
        for start in range(0, n, piece):
            stop = min(n, start + piece)
            r = s.put(t.endpoint + f"/datasets/{did}/value", params={**params, "select": f"[{start}:{stop}]"},
                      data=np.sin(np.arange(start, stop) / 5e4).tobytes(),
                      headers={"Content-Type": "application/octet-stream"}, timeout=600)
            assert r.status_code == 200, r.text
        auth = base64.b64encode(f"{t.user}:{t.password}".encode()).decode()
        q = urllib.parse.quote(domain)
        plot = f"/view/api/preview?domain={q}&path=/line&width=800&height=400"
        grove = f"/h5grove/data?file={q}&path=/line&format=bin"
        print(f"# {args.mib} MiB line, {args.clients} clients leaving after {args.leave_after} s")

        base = idle_cpu(t.server_pid)
        r = s.get(t.endpoint + plot, timeout=600)
        assert r.status_code == 200, r.text[:200]
        one = idle_cpu(t.server_pid) - base
        print(f"one plot (answered)            server cpu {one:.2f} s")
        for label, path in (("abandoned plots", plot), ("abandoned h5grove bin reads", grove)):
            base = idle_cpu(t.server_pid)
            socks = [leave_early(t.endpoint, path, auth, args.leave_after) for _ in range(args.clients)]
            time.sleep(args.leave_after)
            for sock in socks:
                sock.close()
            spent = idle_cpu(t.server_pid) - base
            print(f"{args.clients} {label:<28} server cpu {spent:.2f} s ({spent / max(one, 1e-9):.1f} x one plot)")
        t.cleanup()


if __name__ == "__main__":
    main()
