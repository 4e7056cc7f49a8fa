"""The memory of ``h5lake serve``'s whole process group while 2 GiB go through one streamed PUT
and come back through one streamed GET (issue 35: the group's peak RSS summed must stay under
512 MiB with the default settings).

    python bench/transfer_memory.py                    # defaults: --workers auto, the dataset's default layout
    python bench/transfer_memory.py --chunks 512,512   # a dataset with 1 MiB chunks
    python bench/transfer_memory.py --server-arg=--workers --server-arg=1

Prints the group's memory idle (after start-up and the dataset's creation), its peak during the
PUT and during the GET (sampled every 20 ms from /proc: RSS summed, PSS, footprint; see
tests/support/procgroup.py) and each process's own peak RSS. The server is started from this
interpreter's ``h5lake`` (set PYTHONPATH to measure another checkout).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import requests

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.procgroup import GroupPeak, group_memory, group_pids, rss
from tests.support.server import USERS, start_server

MIB = 2**20


class ProcessPeaks:
    """The largest RSS of each process of a group, sampled on a thread."""

    def __init__(self, pgid: int, every: float = 0.02) -> None:
        self.pgid, self.every = pgid, every
        self.peaks: dict[int, int] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(self.every):
            for pid in group_pids(self.pgid):
                self.peaks[pid] = max(self.peaks.get(pid, 0), rss(pid))

    def stop(self) -> dict[int, int]:
        self._done.set()
        self._thread.join()
        return self.peaks


class Sized:
    """A body of known length read from an iterator of pieces (requests sends a Content-Length)."""

    def __init__(self, pieces: Iterator[bytes], size: int) -> None:
        self.pieces, self.size, self.left = pieces, size, b""

    def __len__(self) -> int:
        return self.size

    def read(self, n: int = -1) -> bytes:
        if not self.left:
            self.left = next(self.pieces, b"")
        n = len(self.left) if n < 0 else n
        out, self.left = self.left[:n], self.left[n:]
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="16384,32768", help="float32 dataset shape [16384,32768: 2 GiB]")
    parser.add_argument("--chunks", help="chunk shape, e.g. 512,512 (default: the server's choice)")
    parser.add_argument("--server-arg", action="append", default=[], help="extra argument of h5lake serve")
    parser.add_argument("--content-length", action="store_true",
                        help="send the body with a Content-Length (as curl -T does), not chunked")
    parser.add_argument("--server-env", action="append", default=[], help="NAME=VALUE in the server's environment")
    args = parser.parse_args()
    shape = [int(x) for x in args.shape.split(",")]
    total = int(np.prod(shape))
    piece = 2 * MIB  # elements per piece sent: 8 MiB
    with tempfile.TemporaryDirectory() as tmp:
        srv = start_server(Path(tmp), workers=None, extra=args.server_arg,
                           env=dict(e.split("=", 1) for e in args.server_env))
        try:
            pgid = srv.process.pid
            s = requests.Session()
            s.auth = ("admin", USERS["admin"])
            params = {"domain": "/home/big.h5"}
            ep = srv.endpoint
            assert s.put(ep + "/", params=params).status_code == 201
            root = s.get(ep + "/", params=params).json()["root"]
            body: dict = {"type": "H5T_IEEE_F32LE", "shape": shape, "link": {"id": root, "name": "big"}}
            if args.chunks:
                dims = [int(x) for x in args.chunks.split(",")]
                body["creationProperties"] = {"layout": {"class": "H5D_CHUNKED", "dims": dims}}
            r = s.post(ep + "/datasets", params=params, json=body)
            assert r.status_code == 201, r.text
            did = r.json()["id"]
            layout = s.get(ep + f"/datasets/{did}", params=params).json().get("layout")
            idle = group_memory(pgid)
            print(f"layout {layout}")
            print(f"idle: {idle}")

            def generate() -> Iterator[bytes]:
                for start in range(0, total, piece):
                    stop = min(total, start + piece)
                    yield (np.arange(start, stop, dtype=np.uint32) % 65521).astype(np.float32).tobytes()

            group, each = GroupPeak(pgid), ProcessPeaks(pgid)
            body_data: object = Sized(generate(), total * 4) if args.content_length else generate()
            r = s.put(ep + f"/datasets/{did}/value", params=params, data=body_data,
                      headers={"Content-Type": "application/octet-stream"}, timeout=1200)
            assert r.status_code == 200, r.text
            put_peak, put_each = group.stop(), each.stop()
            print(f"PUT peak: {put_peak}")
            print("  per process: " + ", ".join(f"{pid}: {v / MIB:.0f}" for pid, v in sorted(put_each.items())))
            group, each = GroupPeak(pgid), ProcessPeaks(pgid)
            r = s.get(ep + f"/datasets/{did}/value", params=params, headers={"Accept": "application/octet-stream"},
                      stream=True, timeout=1200)
            assert r.status_code == 200, r.text
            got = 0
            for piece in r.iter_content(chunk_size=8 * MIB):
                got += len(piece)
            assert got == total * 4, got
            get_peak, get_each = group.stop(), each.stop()
            print(f"GET peak: {get_peak}")
            print("  per process: " + ", ".join(f"{pid}: {v / MIB:.0f}" for pid, v in sorted(get_each.items())))
            print(f"after: {group_memory(pgid)}")
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
