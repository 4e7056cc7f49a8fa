"""``GetMapped`` of the local store (storage/mapped.py): a large object as a mapping of its file."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from h5lake.chunks.capability import maps
from h5lake.storage import mapped
from h5lake.storage.local import LocalStore
from h5lake.storage.memory import MemoryStore


async def test_get_mapped_answers_what_get_answers_small_or_mapped(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "root", inline_read_bytes=1024)
    try:
        assert maps(store) and not maps(MemoryStore())
        for size in (0, 100, 5000, 3 * 4096 + 1):  # read inline, and mapped (past 1024 bytes)
            data = os.urandom(size)
            await store.put(f"o{size}", data)
            got, want = await store.get_mapped(f"o{size}"), await store.get(f"o{size}")
            assert got is not None and want is not None
            assert isinstance(got.data, memoryview) and got.data.readonly
            assert bytes(got.data) == data == want.data
            assert (got.etag, got.last_modified) == (want.etag, want.last_modified)
        assert await store.get_mapped("missing") is None
    finally:
        await store.close()


async def test_a_mapped_object_keeps_its_bytes_when_the_key_is_replaced_or_deleted(tmp_path: Path) -> None:
    """A reply still holding a mapping sends the version it mapped: a put renames a new file
    into place and a delete unlinks the name, neither writes the mapped file."""
    store = LocalStore(tmp_path / "root", inline_read_bytes=1024)
    try:
        first = os.urandom(64 * 1024)
        await store.put("c/0", first)
        held = await store.get_mapped("c/0")
        assert held is not None
        await store.put("c/0", os.urandom(64 * 1024))
        assert bytes(held.data) == first
        again = await store.get_mapped("c/0")
        assert again is not None and bytes(again.data) != first and again.etag != held.etag
        await store.delete("c/0")
        assert bytes(held.data) == first and await store.get_mapped("c/0") is None
    finally:
        await store.close()


async def test_a_file_system_that_cannot_map_files_is_read_instead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalStore(tmp_path / "root", inline_read_bytes=1024)
    try:
        data = os.urandom(8192)
        await store.put("big", data)

        def no_mapping(*args: object, **kwargs: object) -> None:
            raise OSError(errno.ENODEV, "No such device")

        monkeypatch.setattr(mapped.mmap, "mmap", no_mapping)
        got = await store.get_mapped("big")
        assert got is not None and bytes(got.data) == data and got.etag == (await store.head("big")).etag  # type: ignore[union-attr]
    finally:
        await store.close()
