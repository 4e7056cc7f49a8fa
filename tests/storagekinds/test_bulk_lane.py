"""A metadata request never waits behind bulk transfers: a GET of a group goes through while a
large value read holds every bulk slot of the S3 store and more of its chunk reads queue.

The service runs in this process (its store is the only place a held transfer can be made
deterministic) on the session's real SeaweedFS; the store holds chunk GETs on the bulk lane on
an event *inside* their slot, so the scheduling above the store is what is tested.
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
from h5lake.storage import lanes
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

    async def _call(self, request: Callable[[], Awaitable[T]], kind: str) -> T:
        if not (self.hold and kind == "get" and lanes.in_bulk()):
            return await super()._call(request, kind)

        async def held() -> Any:
            self.held.release()
            await asyncio.to_thread(self.release.wait, 60)
            return await request()

        return await super()._call(held, kind)


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
            r = http.get(f"/groups/{root}", params=domain)
            assert r.status_code == 200 and r.json()["id"] == root
            assert http.get(f"/datasets/{did}", params=domain).status_code == 200
            assert reader.is_alive() and "status" not in result
            assert store.requests["get"] - gets >= 1  # documents were read meanwhile...
            assert not store.held.acquire(blocking=False)  # ...and no third chunk GET started
        finally:
            store.release.set()
            reader.join(60)
        assert result["status"] == 200
        np.testing.assert_array_equal(np.frombuffer(result["body"], "<f4").reshape(64, 64), values)
