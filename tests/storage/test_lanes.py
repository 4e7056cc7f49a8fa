"""What the S3 and local stores promise beyond the contract: coalesced ranged GETs of one
version (S3), and a document request never waiting behind bulk transfers (both).

The S3 tests run against the session's real SeaweedFS and count requests with the store's own
``requests`` counter. Blocking is done by subclasses that hold a bulk request on an event
*inside* its slot, so what is tested is the stores' scheduling, deterministically.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.storage.conftest import s3_store
from tests.support.s3server import S3Server

from h5lake.storage import lanes
from h5lake.storage.local import LocalStore
from h5lake.storage.s3 import S3Store

T = TypeVar("T")
KIB = 1024


@pytest.mark.slow
async def test_s3_neighbouring_ranges_are_one_get(s3_server: S3Server) -> None:
    store = s3_store(s3_server, coalesce_gap=4 * KIB, max_span=256 * KIB)
    try:
        data = os.urandom(1024 * KIB)
        await store.put("obj", data)
        near = [(i * 3000, 1000) for i in range(50)]  # holes of 2000 bytes: one span
        far = [(600 * KIB, 10), (600 * KIB + 20, 10)]  # far from the others: a second span
        asked = near[::-1] + far  # any order
        store.requests.clear()
        assert await store.get_ranges("obj", asked) == [data[o : o + n] for o, n in asked]
        assert store.requests["range"] == 2
        # a span stops at max_span: 600 KiB of neighbours in 4 KiB pieces are three requests
        store.requests.clear()
        pieces = [(i * 4 * KIB, 4 * KIB) for i in range(150)]
        assert await store.get_ranges("obj", pieces) == [data[o : o + n] for o, n in pieces]
        assert store.requests["range"] == 3
        # no coalescing: one request per range
        store.coalesce_gap = 0
        store.requests.clear()
        assert await store.get_ranges("obj", near) == [data[o : o + n] for o, n in near]
        assert store.requests["range"] == 50
    finally:
        await store.close()


class _ReplacedAfterFirstGet(S3Store):
    """Replaces its object with ``new`` right after the first ranged GET answers."""

    new = b""
    replaced = False

    async def _call(self, request: Callable[[], Awaitable[T]], kind: str, then: Any = None) -> Any:
        result = await super()._call(request, kind, then)
        if kind == "range" and not self.replaced:
            self.replaced = True
            await self.put("obj", self.new)
        return result


@pytest.mark.slow
async def test_s3_ranges_come_from_one_version(s3_server: S3Server) -> None:
    old, new = os.urandom(64 * KIB), os.urandom(64 * KIB)
    store = s3_store(s3_server, coalesce_gap=0)
    swapping = _ReplacedAfterFirstGet(
        store.bucket, store.prefix, s3_server.endpoint, coalesce_gap=0, **s3_server.credentials  # type: ignore[arg-type]
    )
    try:
        await store.put("obj", old)
        swapping.new = new
        asked = [(0, 100), (30 * KIB, 100), (60 * KIB, 100)]
        got = await swapping.get_ranges("obj", asked)
        assert swapping.replaced
        # the later GETs found another version (If-Match failed): the read started over
        assert got == [new[o : o + n] for o, n in asked]
        assert swapping.requests["range"] == 3 + 3
    finally:
        await swapping.close()
        await store.close()


class _HeldBulkReads(S3Store):
    """Ranged GETs on the bulk lane wait for ``release`` inside their bulk slot."""

    release: asyncio.Event
    held = 0

    async def _call(self, request: Callable[[], Awaitable[T]], kind: str, then: Any = None) -> Any:
        if kind != "range" or not lanes.in_bulk():
            return await super()._call(request, kind, then)

        async def held() -> Any:
            self.held += 1
            await self.release.wait()
            return await request()

        return await super()._call(held, kind, then)


@pytest.mark.slow
async def test_s3_document_requests_pass_held_bulk_transfers(s3_server: S3Server) -> None:
    plain = s3_store(s3_server)
    store = _HeldBulkReads(
        plain.bucket, plain.prefix, s3_server.endpoint, bulk_concurrency=2, **s3_server.credentials  # type: ignore[arg-type]
    )
    store.release = asyncio.Event()
    try:
        await store.put("chunk", b"c" * 1000)
        await store.put("doc", b"{}")
        with lanes.bulk():
            transfers = [asyncio.ensure_future(store.get_range("chunk", i, 10)) for i in range(3)]
        while store.held < 2:
            await asyncio.sleep(0)
        # both bulk slots are held and a third transfer queues for one; documents go through
        # (the timeouts only end a deadlock: without the lanes these calls never return)
        blob = await asyncio.wait_for(store.get("doc"), 30)
        assert blob is not None and blob.data == b"{}"
        assert await asyncio.wait_for(store.put("doc2", b"{}"), 30)
        assert await asyncio.wait_for(store.head("doc"), 30) is not None
        assert store.held == 2 and not any(t.done() for t in transfers)
        assert store.requests["range"] == 2  # the third was not sent: it waits for a slot
        store.release.set()
        assert await asyncio.gather(*transfers) == [b"c" * 10] * 3
        assert store.requests["range"] == 3
    finally:
        await store.close()
        await plain.close()


class _HeldLocalBulk(LocalStore):
    """Reads of ``chunk`` on the bulk lane block their thread until ``release``."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, max_threads=2, inline_read_bytes=0)
        self.release = threading.Event()
        self.held = threading.Semaphore(0)

    def _read_range(self, path: str, offset: int, length: int) -> bytes | None:
        if path.endswith("chunk"):
            self.held.release()
            self.release.wait(60)
        return super()._read_range(path, offset, length)


async def test_local_document_requests_pass_held_bulk_transfers(tmp_path: Path) -> None:
    store = _HeldLocalBulk(tmp_path / "store")
    try:
        await store.put("chunk", b"c" * 1000)
        await store.put("doc", b"{}")
        with lanes.bulk():
            transfers = [asyncio.ensure_future(store.get_range("chunk", i, 10)) for i in range(3)]
        for _ in range(2):  # both bulk threads are held
            await asyncio.to_thread(store.held.acquire)
        blob = await asyncio.wait_for(store.get("doc"), 30)  # the timeouts only end a deadlock
        assert blob is not None and blob.data == b"{}"
        assert await asyncio.wait_for(store.put("doc2", b"{}"), 30)
        assert await asyncio.wait_for(store.get_range("doc", 0, 1), 30) == b"{"
        assert not any(t.done() for t in transfers)
        store.release.set()
        assert await asyncio.gather(*transfers) == [b"c" * 10] * 3
    finally:
        store.release.set()
        await store.close()
