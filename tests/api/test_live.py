"""Live data: a reader sees another client's appends (h5pyd's ``refresh()``), and the watch
(``GET /datasets/{id}/shape?wait=S``, ``GET /datasets/{id}?wait=S``) answers as soon as a dataset
changes. Many server processes on one store: tests/scale/test_live_processes.py."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
from tests.api.test_h5pyd_metadata import open_file
from tests.support.server import USERS

WRITER = """
import sys, numpy as np, h5pyd
endpoint, domain, start, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with h5pyd.File(domain, "a", endpoint=endpoint, username="test_user1", password={pw!r}) as f:
    d = f["data"]
    d.resize((stop,))
    d[start:stop] = np.arange(start, stop, dtype="f4")
    d.flush()
""".format(pw=USERS["test_user1"])


def append_in_another_process(endpoint: str, domain: str, start: int, stop: int) -> None:
    """h5pyd in a process of its own resizes ``data`` to ``stop`` and writes rows from ``start``."""
    subprocess.run([sys.executable, "-c", WRITER, endpoint, domain, str(start), str(stop)], check=True,
                   env=dict(os.environ), timeout=120)


def test_h5pyd_refresh_sees_another_process_append(endpoint: str, domain: str) -> None:
    """Two h5pyd files in two processes: the reader's ``refresh()`` shows each resize and its
    values (h5pyd 1.0 answers ``refresh()`` from ``domain_objs`` if the open listed the dataset)."""
    with open_file(endpoint, domain, "w") as f:
        f.create_dataset("data", shape=(0,), dtype="f4", chunks=(2,), maxshape=(None,))
        f.create_dataset("fixed", data=np.arange(3, dtype="i4"))
    with open_file(endpoint, domain, "r") as reader:
        d = reader["data"]
        assert d.shape == (0,)
        for stop in (4, 8):
            append_in_another_process(endpoint, domain, stop - 4, stop)
            d.refresh()
            assert d.shape == (stop,)
            np.testing.assert_array_equal(d[...], np.arange(stop, dtype="f4"))
        np.testing.assert_array_equal(reader["fixed"][...], np.arange(3))
