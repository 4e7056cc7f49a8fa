"""How one request's storage work is scheduled, seen from the store.

* A metadata request never waits behind bulk transfers: a GET of a group goes through while a
  large value read holds every bulk slot of the S3 store and more of its chunk reads queue.
* A streamed write receives the next block of its body while the previous block's chunks are
  stored.

The service runs in this process (its store is the only place a held transfer can be made
deterministic): on the session's real SeaweedFS, whose store holds chunk GETs on the bulk lane
on an event *inside* their slot, and on a memory store whose chunk puts wait for the body to
be read past the first block. Timeouts only end a deadlock; nothing is timed.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest
from starlette.testclient import TestClient  # the service in this process, on a store we hold

from h5lake.api.app import create_app
from h5lake.config import Settings
from h5lake.service.values import core as value_use_cases
from h5lake.service.values.requests import ValueWrite
from h5lake.storage import lanes
from h5lake.storage.memory import MemoryStore
from h5lake.storage.s3 import S3Store
from tests.support.s3server import S3Server
from tests.support.server import USERS, write_passwd

T = TypeVar("T")
AUTH = ("test_user1", USERS["test_user1"])
BINARY = {"Content-Type": "application/octet-stream"}


class HeldChunkGets(S3Store):
    """Whole-object GETs on the bulk lane wait for ``release`` once ``hold`` is set."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.hold = False
        self.release = threading.Event()
        self.held = threading.Semaphore(0)

    async def _call(self, request: Callable[[], Awaitable[T]], kind: str, then: Any = None) -> Any:
        if not (self.hold and kind == "get" and lanes.in_bulk()):
            return await super()._call(request, kind, then)

        async def held() -> Any:
            self.held.release()
            await asyncio.to_thread(self.release.wait, 60)
            return await request()

        return await super()._call(held, kind, then)


@pytest.mark.slow
def test_group_get_passes_a_read_holding_every_bulk_slot(s3_server: S3Server, tmp_path: Path) -> None:
    store = HeldChunkGets(
        s3_server.bucket,
        prefix=f"lane-{uuid.uuid4().hex[:8]}",
        endpoint_url=s3_server.endpoint,
        bulk_concurrency=2,
        **s3_server.credentials,  # type: ignore[arg-type]
    )
    settings = Settings(passwd=write_passwd(tmp_path / "passwd"), compact_max_bytes=0)
    values = np.arange(64 * 64, dtype="<f4").reshape(64, 64)
    with TestClient(create_app(settings, store)) as http:
        http.auth = AUTH
        domain = {"domain": "/home/test_user1/lane.h5"}
        assert http.put("/", params={"domain": "/home/test_user1"}, json={"folder": True}).status_code in (201, 409)
        assert http.put("/", params=domain).status_code == 201
        root = http.get("/", params=domain).json()["root"]
        body = {"type": "H5T_IEEE_F32LE", "shape": [64, 64], "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [16, 16]}}}
        did = http.post("/datasets", params=domain, json={**body, "link": {"id": root, "name": "d"}}).json()["id"]
        assert http.put(f"/datasets/{did}/value", params=domain, content=values.tobytes(), headers=BINARY).status_code == 200
        assert http.get(f"/groups/{root}", params=domain).status_code == 200  # warm caches

        store.hold = True
        result: dict[str, Any] = {}

        def read_all() -> None:
            r = http.get(f"/datasets/{did}/value", params=domain, headers={"Accept": "application/octet-stream"})
            result["status"], result["body"] = r.status_code, r.content

        reader = threading.Thread(target=read_all)
        reader.start()
        try:
            for _ in range(2):  # both bulk slots hold a chunk GET; 14 more chunks wait for one
                assert store.held.acquire(timeout=60)
            gets = store.requests["get"]
            answers: list[Any] = []

            def metadata() -> None:
                answers.append(http.get(f"/groups/{root}", params=domain))
                answers.append(http.get(f"/datasets/{did}", params=domain))

            asker = threading.Thread(target=metadata)
            asker.start()
            asker.join(30)  # ends a deadlock only: without the lanes these requests never return
            assert not asker.is_alive(), "the metadata requests waited behind the held chunk reads"
            assert answers[0].status_code == 200 and answers[0].json()["id"] == root
            assert answers[1].status_code == 200
            assert reader.is_alive() and "status" not in result
            assert store.requests["get"] - gets >= 1  # documents were read meanwhile...
            assert not store.held.acquire(blocking=False)  # ...and no third chunk GET started
        finally:
            store.release.set()
            reader.join(60)
        assert result["status"] == 200
        np.testing.assert_array_equal(np.frombuffer(result["body"], "<f4").reshape(64, 64), values)


class PutsWaitForTheNextBlock(MemoryStore):
    """Chunk puts (the bulk lane) wait until the body has been read past its first block."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.read_past_first_block: asyncio.Event | None = None

    async def put(self, key: str, data: bytes | memoryview, **kw: Any) -> str:
        if self.armed and lanes.in_bulk():
            assert self.read_past_first_block is not None
            await asyncio.wait_for(self.read_past_first_block.wait(), 30)  # a deadlock's end, not a timing
        return await super().put(key, data, **kw)


class Body:
    """A packed body handed out in 64 KiB pieces, noting when it is read past ``mark`` bytes."""

    def __init__(self, data: bytes, mark: int, event: asyncio.Event) -> None:
        self.data, self.mark, self.event = data, mark, event

    async def stream(self) -> Any:
        for start in range(0, len(self.data), 64 * 1024):
            if start >= self.mark:
                self.event.set()
            yield self.data[start : start + 64 * 1024]

    async def read(self) -> bytes:
        raise AssertionError("a large body is streamed, never read whole")


def test_a_streamed_write_receives_the_next_block_while_one_is_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    block = 256 * 1024
    monkeypatch.setattr(value_use_cases, "STREAM_BLOCK_BYTES", block)
    store = PutsWaitForTheNextBlock()
    settings = Settings(passwd=write_passwd(tmp_path / "passwd"), compact_max_bytes=0)
    values = np.arange(256 * 1024, dtype="<f4").reshape(256, 1024)  # 1 MiB: four blocks of one chunk row
    with TestClient(create_app(settings, store)) as http:
        http.auth = AUTH
        domain = "/home/test_user1/overlap.h5"
        assert http.put("/", params={"domain": "/home/test_user1"}, json={"folder": True}).status_code in (201, 409)
        assert http.put("/", params={"domain": domain}).status_code == 201
        root = http.get("/", params={"domain": domain}).json()["root"]
        body = {"type": "H5T_IEEE_F32LE", "shape": [256, 1024], "creationProperties": {"layout": {"class": "H5D_CHUNKED", "dims": [64, 1024]}}}
        did = http.post("/datasets", params={"domain": domain}, json={**body, "link": {"id": root, "name": "d"}}).json()["id"]
        svc = http.app.state.service  # type: ignore[attr-defined]

        async def write() -> None:
            store.read_past_first_block = asyncio.Event()
            store.armed = True
            packed = Body(values.tobytes(), block, store.read_past_first_block)
            try:
                await value_use_cases.write_values(svc, svc.caller("test_user1"), domain, did, ValueWrite(packed))
            finally:
                store.armed = False

        assert http.portal is not None
        http.portal.call(write)  # without the overlap, the first block's puts wait forever
        r = http.get(f"/datasets/{did}/value", params={"domain": domain}, headers={"Accept": "application/octet-stream"})
        np.testing.assert_array_equal(np.frombuffer(r.content, "<f4").reshape(256, 1024), values)
