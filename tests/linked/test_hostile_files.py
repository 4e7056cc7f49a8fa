"""A linked HDF5 file crafted to hurt: a 260 KB gzip chunk that inflates to 256 MiB. Reading
four elements of it stops at the chunk's declared size, answers at once with an error naming
the filter, and leaves the server answering others."""

from __future__ import annotations

import zlib
from pathlib import Path

import h5py
import numpy as np
import requests

from tests.conftest import Client
from tests.linked.helpers import OCTET, create_linked
from tests.support.server import Server


def _peak_rss(server: Server) -> int:
    """The server process's peak resident size so far (VmHWM), in bytes."""
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc")


def test_a_gzip_bomb_is_not_inflated(lc: Client, sources: Path, linked_server: Server) -> None:
    path = sources / "bomb.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=(4096,), dtype="u1", chunks=(1024,), compression="gzip")
        d[:] = np.arange(4096) % 251
        d.id.write_direct_chunk((1024,), zlib.compress(bytes(256 * 1024 * 1024), 9), filter_mask=0)
    with h5py.File(path, "r") as f:
        did = create_linked(lc, f["x"], str(path))
    good = lc.get(f"/datasets/{did}/value", params={"select": "[0:4]"}, headers=OCTET)
    assert good.status_code == 200 and list(good.content) == [0, 1, 2, 3]
    peak_before = _peak_rss(linked_server)
    bad = lc.get(f"/datasets/{did}/value", params={"select": "[1024:1028]"}, headers=OCTET)
    assert bad.status_code >= 400
    assert "gzip" in bad.json()["error"]["message"]
    # decoding stopped at the declared 1 KiB: the server never held the 256 MiB it inflates to
    assert _peak_rss(linked_server) - peak_before < 128 * 2**20
    assert requests.get(linked_server.endpoint + "/about", timeout=5).status_code == 200
    assert linked_server.process.poll() is None
