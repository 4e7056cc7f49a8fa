"""Reading and writing 2 GiB through one request with bounded server memory: the memory of
``h5lake serve``'s whole process group with its default settings (the supervisor and every
worker process, ``--workers auto``), sampled from /proc while the transfers run, stays under
512 MiB. The bound is on the RSS summed over the group, each shared page counted once per
process (tests/support/procgroup.py): the figure a machine running nothing else pays."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import requests
from tests.support.procgroup import GroupPeak, Memory, group_memory, worker_pids
from tests.support.server import USERS, start_server

from h5lake.config import auto_workers

pytestmark = pytest.mark.slow  # 2 GiB through one request: minutes, left to CI by -m "not slow"

# float32, 2 GiB (less 44 KiB). The default layout's chunks are 724 x 724, so a row of chunks is
# 128 MiB, just under the largest block a stream makes to keep whole chunks (chunks/blocks.py):
# the costliest shape of this size for a streamed write or read.
ROWS, COLS = 11585, 46341
BLOCK_ROWS = 256
LIMIT = 512 * 1024 * 1024


def rows(start: int, count: int) -> np.ndarray:
    base = np.arange(start, start + count, dtype=np.float32)[:, None]
    return base + np.arange(COLS, dtype=np.float32)[None, :] / 65536


def two_gib_through_one_request(workdir: Path, workers: int | None) -> tuple[Memory, Memory, int]:
    """Write 2 GiB with one PUT and read them back with one GET, on another connection (so
    possibly by another worker), from a server with ``workers`` processes (None: ``h5lake
    serve``'s default); (the group's memory before the transfers, its peak during them, the
    number of workers)."""
    srv = start_server(workdir, workers=workers)
    sampler: GroupPeak | None = None
    try:
        count = len(worker_pids(srv.process.pid)) or 1  # no supervisor: the one process serves
        s = requests.Session()
        s.auth = ("admin", USERS["admin"])
        params = {"domain": "/home/big.h5"}
        ep = srv.endpoint
        assert s.put(ep + "/", params=params).status_code == 201
        root = s.get(ep + "/", params=params).json()["root"]
        body = {"type": "H5T_IEEE_F32LE", "shape": [ROWS, COLS], "link": {"id": root, "name": "big"}}  # its default layout
        did = s.post(ep + "/datasets", params=params, json=body).json()["id"]
        baseline = group_memory(srv.process.pid)  # the server leads its own process group
        sampler = GroupPeak(srv.process.pid)

        def generate() -> Iterator[bytes]:
            for start in range(0, ROWS, BLOCK_ROWS):
                yield rows(start, min(BLOCK_ROWS, ROWS - start)).tobytes()

        r = s.put(ep + f"/datasets/{did}/value", params=params, data=generate(),
                  headers={"Content-Type": "application/octet-stream"}, timeout=600)
        assert r.status_code == 200, r.text
        s.close()  # the read on a new connection: the worker that wrote must not hold its blocks
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
        return baseline, sampler.stop(), count
    finally:
        if sampler is not None:
            sampler.stop()
        srv.stop()


def test_two_gib_through_one_request(tmp_path: Path) -> None:
    """With ``h5lake serve``'s defaults (here ``--workers auto``: one worker per usable core) the
    group's RSS summed stays under 512 MiB, the idle processes and the transfer together."""
    baseline, peak, count = two_gib_through_one_request(tmp_path / "srv", None)
    assert count == auto_workers()
    assert peak.rss < LIMIT, f"server process group peak: {peak}, with {count} worker(s) (before: {baseline})"
