"""Reading and writing 2 GiB through one request with bounded server memory: the resident
memory of the server's whole process group (the supervisor and every worker process, summed),
sampled from /proc while the transfers run, stays under 512 MiB with one worker or several."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import requests
from tests.support.server import USERS, start_server

pytestmark = pytest.mark.slow  # 2 GiB through one request: minutes, left to CI by -m "not slow"

ROWS, COLS = 16384, 32768  # float32: 2 GiB
BLOCK_ROWS = 256
LIMIT = 512 * 1024 * 1024


def group_rss(pgid: int) -> int:
    """Resident bytes of every live process of process group ``pgid``, summed."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        if int(fields[2]) == pgid:  # after the name: state ppid pgrp ... rss is the 22nd
            total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return total


class GroupPeak:
    """The largest ``group_rss`` seen, sampled every 20 ms on a thread until ``stop``."""

    def __init__(self, pgid: int) -> None:
        self.pgid = pgid
        self.peak = group_rss(pgid)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.02):
            self.peak = max(self.peak, group_rss(self.pgid))

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return self.peak


def rows(start: int, count: int) -> np.ndarray:
    base = np.arange(start, start + count, dtype=np.float32)[:, None]
    return base + np.arange(COLS, dtype=np.float32)[None, :] / 65536


# Two workers: the whole group (supervisor and both workers) must stay under the bound; one
# worker's group is a subset of that (measured 240 MiB against 433 MiB, docs/performance.md).
@pytest.mark.parametrize("workers", [2])
def test_two_gib_through_one_request(tmp_path: Path, workers: int) -> None:
    srv = start_server(tmp_path / "srv", extra=["--workers", str(workers)])
    sampler: GroupPeak | None = None
    try:
        s = requests.Session()
        s.auth = ("admin", USERS["admin"])
        params = {"domain": "/home/big.h5"}
        ep = srv.endpoint
        assert s.put(ep + "/", params=params).status_code == 201
        root = s.get(ep + "/", params=params).json()["root"]
        body = {"type": "H5T_IEEE_F32LE", "shape": [ROWS, COLS],
                "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [512, 512]}},
                "link": {"id": root, "name": "big"}}
        did = s.post(ep + "/datasets", params=params, json=body).json()["id"]
        baseline = group_rss(srv.process.pid)  # the server leads its own process group
        sampler = GroupPeak(srv.process.pid)

        def generate() -> Iterator[bytes]:
            for start in range(0, ROWS, BLOCK_ROWS):
                yield rows(start, BLOCK_ROWS).tobytes()

        r = s.put(ep + f"/datasets/{did}/value", params=params, data=generate(),
                  headers={"Content-Type": "application/octet-stream"}, timeout=600)
        assert r.status_code == 200, r.text
        r = s.get(ep + f"/datasets/{did}/value", params=params, headers={"Accept": "application/octet-stream"},
                  stream=True, timeout=600)
        assert r.status_code == 200
        assert int(r.headers["Content-Length"]) == ROWS * COLS * 4
        pending = b""
        row = 0
        row_bytes = COLS * 4
        for piece in r.iter_content(chunk_size=8 * 1024 * 1024):
            pending += piece
            n = len(pending) // row_bytes
            if n:
                got = np.frombuffer(pending[: n * row_bytes], np.float32).reshape(n, COLS)
                if row % 2048 == 0 or row + n >= ROWS:  # spot-check rows as they stream by
                    np.testing.assert_array_equal(got, rows(row, n))
                else:
                    assert got[0, 0] == row and got[-1, 1] == np.float32(row + n - 1 + 1 / 65536)
                row += n
                pending = pending[n * row_bytes :]
        assert row == ROWS and not pending
        peak = sampler.stop()
        assert peak < LIMIT, (
            f"server process group peak RSS {peak / 2**20:.0f} MiB with {workers} worker(s) "
            f"(baseline {baseline / 2**20:.0f} MiB)"
        )
    finally:
        if sampler is not None:
            sampler.stop()
        srv.stop()
