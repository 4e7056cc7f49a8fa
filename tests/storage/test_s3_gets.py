"""What an S3 get awaits: a small body (documents) is taken with its headers, one await of
obstore per GET instead of two (storage/s3.py, ``BODY_AT_ONCE``); a larger body is awaited."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from tests.storage.conftest import s3_store
from tests.support.s3server import S3Server

from h5lake.storage import s3


class _Counted:
    """obstore's GetResult, with its body's awaits counted."""

    def __init__(self, result: Any, awaited: list[int]) -> None:
        self._result = result
        self._awaited = awaited
        self.meta = result.meta

    def bytes(self) -> Any:
        return self._result.bytes()

    async def bytes_async(self) -> Any:
        self._awaited.append(self.meta["size"])
        return await self._result.bytes_async()


@pytest.mark.slow
async def test_a_small_body_is_not_awaited_again(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    awaited: list[int] = []
    get_async = s3.obstore.get_async

    async def counted(*args: Any, **kwargs: Any) -> _Counted:
        return _Counted(await get_async(*args, **kwargs), awaited)

    monkeypatch.setattr(s3.obstore, "get_async", counted)
    store = s3_store(s3_server)
    try:
        sizes = [0, 1, 900, s3.BODY_AT_ONCE, s3.BODY_AT_ONCE + 1, 3 * s3.BODY_AT_ONCE]
        for size in sizes:
            body = bytes(i % 251 for i in range(size))
            await store.put(f"k{size}", body)
            blob = await store.get(f"k{size}")
            assert blob is not None and blob.data == body, size
            assert blob.etag == hashlib.md5(body, usedforsecurity=False).hexdigest()
        assert awaited == [s3.BODY_AT_ONCE + 1, 3 * s3.BODY_AT_ONCE]
    finally:
        await store.close()
