"""The point of compact values: reading a small dataset costs one stored object fewer.

The service runs in this process on a memory store that counts its reads (the only way to see
storage requests from outside is to count them at the store), once keeping small datasets'
values in their documents and once not; a value read of the same dataset then differs by
exactly one read, and a compact dataset's read fetches no chunk object at all."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from starlette.testclient import TestClient  # the service in this process, on a store we count

from h5lake.api.app import create_app
from h5lake.config import Settings
from h5lake.storage.memory import MemoryStore
from tests.support.server import USERS, write_passwd

AUTH = ("test_user1", USERS["test_user1"])


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    async def get(self, key: str):  # type: ignore[no-untyped-def]
        self.reads.append(key)
        return await super().get(key)

    async def get_range(self, key: str, offset: int, length: int) -> bytes | None:
        self.reads.append(key)
        return await super().get_range(key, offset, length)

    async def get_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes] | None:
        self.reads.append(key)
        return await super().get_ranges(key, ranges)

    async def read_into(self, key: str, buffer: memoryview) -> int | None:
        self.reads.append(key)
        return await super().read_into(key, buffer)


def reads_of_one_value_read(tmp_path: Path, compact_max: int) -> tuple[list[str], str]:
    store = CountingStore()
    settings = Settings(passwd=write_passwd(tmp_path / f"passwd-{compact_max}"), compact_max_bytes=compact_max)
    with TestClient(create_app(settings, store)) as http:
        http.auth = AUTH
        domain = {"domain": "/home/test_user1/small.h5"}
        assert http.put("/", params={"domain": "/home/test_user1"}, json={"folder": True}).status_code in (201, 409)
        assert http.put("/", params=domain).status_code == 201
        root = http.get("/", params=domain).json()["root"]
        body = {"type": "H5T_IEEE_F64LE", "shape": [100], "link": {"id": root, "name": "d"}}
        did = http.post("/datasets", params=domain, json=body).json()["id"]
        values = np.arange(100.0)
        r = http.put(f"/datasets/{did}/value", params=domain, content=values.tobytes(), headers={"Content-Type": "application/octet-stream"})
        assert r.status_code == 200, r.text
        http.get(f"/datasets/{did}/value", params=domain)  # warm: caches of the domain and the user
        store.reads.clear()
        r = http.get(f"/datasets/{did}/value", params=domain, headers={"Accept": "application/octet-stream"})
        assert r.status_code == 200
        np.testing.assert_array_equal(np.frombuffer(r.content, "<f8"), values)
        return list(store.reads), did


def test_compact_value_read_reads_one_object_fewer(tmp_path: Path) -> None:
    compact_reads, did = reads_of_one_value_read(tmp_path, 64 * 1024)
    chunk_reads, other = reads_of_one_value_read(tmp_path, 0)
    assert sum(k.endswith(other) for k in chunk_reads) == 1
    assert not any("-c-" in k for k in compact_reads), compact_reads
    assert sum("-c-" in k for k in chunk_reads) == 1, chunk_reads
    assert sum(k.endswith(did) for k in compact_reads) == 1  # the document, read once
    assert len(compact_reads) == len(chunk_reads) - 1, (compact_reads, chunk_reads)
