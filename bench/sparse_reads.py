"""Server time of a strided read of a huge, almost empty dataset (docs/security.md, "Sparse reads").

    python bench/sparse_reads.py

A ``[10**12]`` float32 dataset in chunks of 1,000 with one element written (at 5*10**10), read
with ``select=[0:10**12:10**7]`` (100,000 values, one per chunk touched) as binary and as JSON.
The service runs in this process (`create_app`, a local store in a temporary folder); it prints
each request's wall time, the store calls it made (get, head, read_into, get_range) and checks
the values.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from starlette.testclient import TestClient

from h5lake.api.app import create_app
from h5lake.config import Settings
from h5lake.storage.local import LocalStore
from tests.support.server import USERS, write_passwd

N, STEP, AT = 10**12, 10**7, 5 * 10**10


class Counting(LocalStore):
    calls = 0

    async def get(self, key: str) -> Any:
        Counting.calls += 1
        return await super().get(key)

    async def head(self, key: str) -> Any:
        Counting.calls += 1
        return await super().head(key)

    async def read_into(self, key: str, buffer: memoryview) -> int | None:
        Counting.calls += 1
        return await super().read_into(key, buffer)

    async def get_range(self, key: str, offset: int, length: int) -> bytes | None:
        Counting.calls += 1
        return await super().get_range(key, offset, length)


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    store = Counting(tmp / "store")
    with TestClient(create_app(Settings(passwd=write_passwd(tmp / "passwd")), store)) as http:
        http.auth = ("test_user1", USERS["test_user1"])
        http.put("/", params={"domain": "/home/test_user1"}, json={"folder": True})
        dom = {"domain": "/home/test_user1/sparse.h5"}
        assert http.put("/", params=dom).status_code == 201
        root = http.get("/", params=dom).json()["root"]
        body = {"type": "H5T_IEEE_F32LE", "shape": [N], "link": {"id": root, "name": "d"},
                "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [1000]}}}
        did = http.post("/datasets", params=dom, json=body).json()["id"]
        r = http.put(f"/datasets/{did}/value", params={**dom, "select": f"[{AT}:{AT + 1}]"},
                     content=np.float32([7]).tobytes(), headers={"Content-Type": "application/octet-stream"})
        assert r.status_code == 200, r.text
        want = np.zeros(N // STEP, "f4")
        want[AT // STEP] = 7
        sel = {**dom, "select": f"[0:{N}:{STEP}]"}
        for kind, headers in (("binary", {"Accept": "application/octet-stream"}), ("json", {})):
            Counting.calls = 0
            start = time.perf_counter()
            r = http.get(f"/datasets/{did}/value", params=sel, headers=headers)
            took = time.perf_counter() - start
            assert r.status_code == 200, r.text[:200]
            got = np.frombuffer(r.content, "<f4") if kind == "binary" else np.array(r.json()["value"], "f4")
            np.testing.assert_array_equal(got, want)
            print(f"{kind}: {took:.2f} s, {Counting.calls} store calls, {got.size} values (correct)")


if __name__ == "__main__":
    main()
