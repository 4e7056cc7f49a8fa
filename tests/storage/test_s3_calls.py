"""How `S3Store` sends a request: obstore's futures are awaited as they are (shielded from a
caller's cancellation), with no asyncio task made per request; a GET's body is read in the same
call (and bulk slot) as its answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.storage.conftest import s3_store
from tests.support.s3server import S3Server

from h5lake.storage import lanes
from h5lake.storage.s3 import S3Store


@pytest.mark.slow
async def test_s3_requests_make_no_task(s3_server: S3Server) -> None:
    store = s3_store(s3_server)
    loop = asyncio.get_running_loop()
    made: list[Any] = []

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        made.append(coro)
        return asyncio.Task(coro, loop=loop, **kw)

    try:
        await store.put("warm", b"{}")
        loop.set_task_factory(counting)  # type: ignore[arg-type]
        try:
            etag = await store.put("doc", b'{"a": 1}', if_none_match=True)
            blob = await store.get("doc")
            info = await store.head("doc")
            ranges = await store.get_ranges("doc", [(0, 2), (3, 2)])
            missing = await store.get("nothing")
        finally:
            loop.set_task_factory(None)
        assert blob is not None and blob.data == b'{"a": 1}' and blob.etag == etag
        assert info is not None and info.etag == etag and info.size == 8
        assert ranges == [b'{"', b'":'] and missing is None
        assert [getattr(c, "__qualname__", c) for c in made] == []
    finally:
        await store.close()


@pytest.mark.slow
async def test_s3_a_cancelled_get_finishes_and_is_dropped(s3_server: S3Server) -> None:
    store = s3_store(s3_server)
    try:
        await store.put("doc", b"x" * 100_000)
        for _ in range(5):
            task = asyncio.ensure_future(store.get("doc"))
            await asyncio.sleep(0)  # sent, not answered
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        got = await store.get("doc")  # the store still works
        assert got is not None and got.data == b"x" * 100_000
    finally:
        await store.close()
    assert not store._in_flight  # close() waited for the cancelled requests


@pytest.mark.slow
async def test_s3_a_bulk_get_reads_its_body_inside_its_slot(s3_server: S3Server) -> None:
    """A chunk GET holds its bulk slot until its body is read: the slots bound the bodies in
    flight, not only the requests waiting for headers."""
    plain = s3_store(s3_server)
    store = _Watched(plain.bucket, plain.prefix, s3_server.endpoint, bulk_concurrency=1, **s3_server.credentials)  # type: ignore[arg-type]
    try:
        await store.put("chunk", b"c" * 10_000)
        with lanes.bulk():
            got = await store.get("chunk")
        assert got is not None and got.data == b"c" * 10_000
        assert store.slot_taken_at_body == [True]
    finally:
        await store.close()
        await plain.close()


class _Watched(S3Store):
    """Notes whether the (one) bulk slot is taken when a GET's body is asked for."""

    slot_taken_at_body: list[bool]

    async def _call(self, request: Any, kind: str, then: Any = None) -> Any:
        if then is None:
            return await super()._call(request, kind)
        self.slot_taken_at_body = getattr(self, "slot_taken_at_body", [])

        def watched(answer: Any) -> Any:
            slots = self.bulk._slots
            self.slot_taken_at_body.append(slots is not None and slots.locked())
            return then(answer)

        return await super()._call(request, kind, watched)
