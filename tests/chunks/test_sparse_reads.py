"""Reads touching many chunks of which few were ever written (docs/security.md, "Sparse reads").

A read touching more than `engine.SPARSE_AFTER` chunks asks once which chunks may exist (the
chunk catalog and the pending write intents) and fills the others without a store call. These
tests check that the answer is the same as reading chunk by chunk: every written value comes
back, also one written an instant before by another server process (so before the catalog has
caught up), and also once the catalog has merged it and the intent is gone; and that the store
is asked a few times, not once per chunk."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import orjson
from starlette.testclient import TestClient  # the service in this process, on a store we count
from tests.conftest import Backing, Client, RawStore
from tests.support.server import USERS, write_passwd

from h5lake.api.app import create_app
from h5lake.catalog.written import written_chunks
from h5lake.chunks import engine
from h5lake.config import Settings
from h5lake.model import ids
from h5lake.storage.memory import MemoryStore

N = 10**12  # elements: 10**9 chunks of 1000
STEP = 10**7  # the read takes every 10**7-th element: 100_000 values, each in a chunk of its own
SELECT = f"[0:{N}:{STEP}]"
OCTET = {"Content-Type": "application/octet-stream"}


def new_dataset(c: Client) -> str:
    root = c.get("/").json()["root"]
    body = {"type": "H5T_IEEE_F32LE", "shape": [N], "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [1000]}}}
    r = c.post("/datasets", json=body)
    assert r.status_code == 201, r.text
    did = r.json()["id"]
    assert c.put(f"/groups/{root}/links/d", json={"id": did}).status_code == 201
    return str(did)


def write_one(c: Client, did: str, at: int, value: float) -> None:
    r = c.put(f"/datasets/{did}/value", params={"select": f"[{at}:{at + 1}]"}, data=np.float32([value]).tobytes(), headers=OCTET)
    assert r.status_code == 200, r.text


def read_both(c: Client, did: str) -> np.ndarray:
    """The strided read, as binary and as JSON (they must agree)."""
    r = c.get(f"/datasets/{did}/value", params={"select": SELECT}, headers={"Accept": "application/octet-stream"})
    assert r.status_code == 200, r.text[:300]
    binary = np.frombuffer(r.content, "<f4")
    r = c.get(f"/datasets/{did}/value", params={"select": SELECT})
    assert r.status_code == 200, r.text[:300]
    as_json = np.array(r.json()["value"], "f4")
    np.testing.assert_array_equal(binary, as_json)
    return binary


def expected(written: dict[int, float]) -> np.ndarray:
    want = np.zeros(N // STEP, "f4")
    for at, value in written.items():
        if at % STEP == 0:
            want[at // STEP] = value
    return want


def test_sparse_strided_read_returns_written_values(client: Client) -> None:
    did = new_dataset(client)
    written = {0: 1.5, 5 * 10**10: 2.5, N - STEP: 3.5, 123 * STEP: -4.0, 7: 9.0}  # 7: in chunk 0, not selected
    for at, value in written.items():
        write_one(client, did, at, value)
    np.testing.assert_array_equal(read_both(client, did), expected(written))  # right after: intents
    # Points in 300 chunks (past SPARSE_AFTER), two of them written.
    points = [[k * STEP] for k in range(300)]
    r = client.post(f"/datasets/{did}/value", json={"points": points}, headers={"Accept": "application/octet-stream"})
    assert r.status_code == 200, r.text
    want = np.zeros(300, "f4")
    want[0], want[123] = 1.5, -4.0
    np.testing.assert_array_equal(np.frombuffer(r.content, "<f4"), want)


def test_chunk_written_by_another_process_is_seen(client: Client, backing: Backing, raw_store: RawStore,
                                                  tmp_path: Path) -> None:
    did = new_dataset(client)
    assert not read_both(client, did).any()  # nothing written yet: all fill
    other = backing.start(tmp_path / "other")
    try:
        b = Client(other.endpoint, "test_user1", client.domain)
        written = {3 * STEP: 7.0}
        write_one(b, did, 3 * STEP, 7.0)  # acknowledged by the other process: the catalog lags
        np.testing.assert_array_equal(read_both(client, did), expected(written))
        # Once the catalog lists it (its intent deleted), it is still seen; then one more, fresh.
        catalog = ids.chunk_catalog_key(client.domain, did)
        deadline = time.monotonic() + 30
        while not listed(raw_store, catalog, "30000") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert listed(raw_store, catalog, "30000")
        written[99_999 * STEP] = 8.0
        write_one(b, did, 99_999 * STEP, 8.0)
        np.testing.assert_array_equal(read_both(client, did), expected(written))
    finally:
        other.stop()


def listed(raw: RawStore, catalog: str, name: str) -> bool:
    lines = (raw.read(catalog) or b"").decode().splitlines()
    return any(line.split(" ", 1)[0] == name for line in lines)


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def get(self, key: str):  # type: ignore[no-untyped-def]
        self.calls += 1
        return await super().get(key)

    async def head(self, key: str):  # type: ignore[no-untyped-def]
        self.calls += 1
        return await super().head(key)

    async def get_range(self, key: str, offset: int, length: int) -> bytes | None:
        self.calls += 1
        return await super().get_range(key, offset, length)

    async def read_into(self, key: str, buffer: memoryview) -> int | None:
        self.calls += 1
        return await super().read_into(key, buffer)


def test_sparse_read_costs_few_store_calls(tmp_path: Path) -> None:
    store = CountingStore()
    settings = Settings(passwd=write_passwd(tmp_path / "passwd"))
    with TestClient(create_app(settings, store)) as http:
        http.auth = ("test_user1", USERS["test_user1"])
        assert http.put("/", params={"domain": "/home/test_user1"}, json={"folder": True}).status_code in (201, 409)
        dom = {"domain": "/home/test_user1/sparse.h5"}
        assert http.put("/", params=dom).status_code == 201
        root = http.get("/", params=dom).json()["root"]
        body = {"type": "H5T_IEEE_F32LE", "shape": [N], "link": {"id": root, "name": "d"},
                "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [1000]}}}
        did = http.post("/datasets", params=dom, json=body).json()["id"]
        r = http.put(f"/datasets/{did}/value", params={**dom, "select": f"[{5 * STEP}:{5 * STEP + 1}]"},
                     content=np.float32([6]).tobytes(), headers=OCTET)
        assert r.status_code == 200, r.text
        store.calls = 0
        r = http.get(f"/datasets/{did}/value", params={**dom, "select": SELECT}, headers={"Accept": "application/octet-stream"})
        assert r.status_code == 200, r.text
        np.testing.assert_array_equal(np.frombuffer(r.content, "<f4"), expected({5 * STEP: 6.0}))
        assert N // STEP > 100 * engine.SPARSE_AFTER  # the read touches 100_000 chunks ...
        assert store.calls < 50, store.calls  # ... and asks the store a few times, not once per chunk


async def test_written_chunks_reads_intents_and_catalog_within_bounds() -> None:
    """What `written_chunks` answers from a store holding a catalog and intents, and when it
    declines (more intents, or a larger catalog, than its bounds)."""
    store = MemoryStore()
    did = "d-" + "0" * 8 + "-" + "1" * 4 + "-" + "2" * 4 + "-" + "3" * 4 + "-" + "4" * 12
    await store.put(ids.chunk_catalog_key("/home/u/f.h5", did), b"5 etag 1 4000\n7 etag 1 4000\n")
    await store.put(ids.intent_key("a" * 32), orjson.dumps({"domain": "/home/u/f.h5", "dataset": did, "lo": [100], "hi": [110]}))
    await store.put(ids.intent_key("b" * 32), orjson.dumps({"domain": "/home/u/f.h5", "dataset": did, "chunks": [[900]]}))
    await store.put(ids.intent_key("c" * 32), orjson.dumps({"domain": "/home/u/f.h5", "dataset": "d-other", "chunks": [[1]]}))
    found = await written_chunks(store, "/home/u/f.h5", did, max_intents=3, max_catalog_bytes=1000)
    assert found is not None
    assert [i for i in range(1000) if (i,) in found] == [5, 7, *range(100, 110), 900]
    assert await written_chunks(store, "/home/u/f.h5", did, max_intents=2, max_catalog_bytes=1000) is None
    assert await written_chunks(store, "/home/u/f.h5", did, max_intents=3, max_catalog_bytes=10) is None
    # No catalog yet, no intent for it: nothing may exist.
    none = await written_chunks(store, "/home/u/g.h5", "d-other2", max_intents=3, max_catalog_bytes=10)
    assert none is not None and (1,) not in none
