"""``LocalStore.put_hashed_many`` with ``ready``: the chunks' bytes are written and fsync'ed
while the caller's intent is written, and renamed into place only after ``ready()`` returned
(storage/local_puts.py)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from h5lake.errors import StorageError
from h5lake.storage import local as local_module
from h5lake.storage.local import LocalStore
from h5lake.storage.posix import TEMP_PREFIX


def items_of(n: int) -> list[tuple[str, bytes | memoryview, str]]:
    datas = [os.urandom(3000 + i) for i in range(n)]
    return [(f"d/c{i}", memoryview(bytearray(d)), hashlib.md5(d).hexdigest()) for i, d in enumerate(datas)]


def temps(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.startswith(TEMP_PREFIX)]


async def test_nothing_is_placed_before_ready_and_the_bytes_are_written_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path / "root")
    items = items_of(6)
    fsynced: list[int] = []
    real_fsync: Callable[[int], None] = os.fsync

    def counted_fsync(fd: int) -> None:
        real_fsync(fd)
        fsynced.append(fd)

    seen: dict[str, Any] = {}

    async def ready() -> None:
        seen["heads"] = [await store.head(key) for key, _, _ in items]
        seen["temps"] = len(temps(tmp_path / "root"))
        seen["fsyncs"] = len(fsynced)

    try:
        monkeypatch.setattr(local_module.os, "fsync", counted_fsync)
        await store.put_hashed_many(items, ready)
        monkeypatch.undo()
        assert seen["heads"] == [None] * len(items)  # no key visible before ready() returned
        assert seen["temps"] == len(items) and seen["fsyncs"] >= len(items)  # each file written, fsync'ed
        for key, data, md5 in items:
            blob = await store.get(key)
            assert blob is not None and blob.data == bytes(data) and blob.etag == md5
        assert temps(tmp_path / "root") == []
    finally:
        await store.close()


async def test_a_failed_ready_places_nothing_and_removes_the_files(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "root")
    items = items_of(4)

    async def ready() -> None:
        raise StorageError("the intent could not be written")

    try:
        with pytest.raises(StorageError, match="intent"):
            await store.put_hashed_many(items, ready)
        assert [await store.head(key) for key, _, _ in items] == [None] * len(items)
        assert temps(tmp_path / "root") == []
    finally:
        await store.close()


async def test_a_failed_write_does_not_wait_for_ready_and_leaves_no_file(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "root")
    called: list[bool] = []

    async def ready() -> None:
        called.append(True)

    try:
        await store.put("d", b"x")  # a file: keys "d/..." cannot be written in it
        with pytest.raises(ValueError, match="collides"):
            await store.put_hashed_many([*items_of(3), ("e/c", b"1", hashlib.md5(b"1").hexdigest())], ready)
        assert called == [] and temps(tmp_path / "root") == []
        assert await store.head("e/c") is None  # written, then removed: its neighbours failed
    finally:
        await store.close()
