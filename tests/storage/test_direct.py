"""Large page-aligned puts on the local store are written past the page cache (storage/direct.py),
and the aligned request-body buffers that feed them are used again only when free
(chunks/buffers.py ``BodyPool``)."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from h5lake.chunks import engine, writes
from h5lake.chunks.buffers import BODY_ALIGN, BodyPool
from h5lake.chunks.dataset import DatasetLayout, codec_and_fill
from h5lake.chunks.fanout import Workers, cpu_pool
from h5lake.chunks.locate import NativeChunks
from h5lake.model.selection import Selection
from h5lake.storage import direct
from h5lake.storage import local as local_module
from h5lake.storage.local import LocalStore

SIZE = 4 * 1024 * 1024 + 1000  # whole pages written direct, the last partial page buffered


def _spy_open(monkeypatch: pytest.MonkeyPatch, refuse_direct: bool = False) -> list[int]:
    """The flags of every file the local store opens for writing (the real open runs)."""
    flags: list[int] = []
    real = os.open

    def spy(path: str, how: int, *args: Any) -> int:
        if how & os.O_WRONLY:
            flags.append(how)
            if refuse_direct and how & direct.O_DIRECT:
                raise OSError(errno.EINVAL, "no O_DIRECT here")
        return real(path, how, *args)

    monkeypatch.setattr(local_module.os, "open", spy)
    return flags


def _filled(pool: BodyPool, n: int, seed: int) -> memoryview:
    view = pool.view(n)
    view[:] = bytes((seed + i) % 251 for i in range(256)) * (n // 256) + bytes(n % 256)
    return view


async def test_a_large_aligned_put_is_written_direct_whole_and_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalStore(tmp_path / "root")
    flags = _spy_open(monkeypatch)
    fsyncs: list[int] = []
    real_fsync = os.fsync

    def spy_fsync(fd: int) -> None:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            fsyncs.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(local_module.os, "fsync", spy_fsync)
    pool = BodyPool()
    with pool.using():
        body = _filled(pool, SIZE, 3)
        assert direct.wanted(body)
        etag = await store.put("a/chunk", body)
        want = bytes(body)
    assert flags and flags[-1] & direct.O_DIRECT  # the chunk's temporary file
    assert len(fsyncs) == 1  # the file's own; the rest are folders'
    blob = await store.get("a/chunk")
    assert blob is not None and bytes(blob.data) == want
    assert etag == blob.etag == hashlib.md5(want).hexdigest()
    assert await store.put("b/small", b"x" * 100) == hashlib.md5(b"x" * 100).hexdigest()
    assert not flags[-1] & direct.O_DIRECT  # small objects stay buffered
    assert not direct.wanted(want)  # read-only bytes: their address is not looked at
    await store.close()


async def test_a_file_system_without_o_direct_is_written_buffered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalStore(tmp_path / "root")
    flags = _spy_open(monkeypatch, refuse_direct=True)
    pool = BodyPool()
    with pool.using():
        body = _filled(pool, SIZE, 5)
        await store.put("a/one", body)
        want = bytes(body)
        await store.put("a/two", body)
    for key in ("a/one", "a/two"):
        blob = await store.get(key)
        assert blob is not None and bytes(blob.data) == want
    assert [bool(f & direct.O_DIRECT) for f in flags] == [True, False, False]  # refused once, then not asked
    await store.close()


def test_body_buffers_are_aligned_and_used_again_only_when_free() -> None:
    pool = BodyPool(kept=2)
    with pool.using():
        first = pool.view(1_000_000)
        at = direct.address(first)
        assert at is not None and at % BODY_ALIGN == 0
        held = first[10:20]  # a view still alive (a store thread still writing it)
        del first
        second = pool.view(1_000_000)
        assert direct.address(second) != at  # the first block is still referenced
        del held
        third = pool.view(900_000)
        assert direct.address(third) == at  # free again: used again, no new block
        assert pool.made == 2
        del second, third
    with pool.using():
        pool.view(1_000_000)
        assert pool.made == 3  # the last user left: the kept blocks were dropped


@pytest.mark.parametrize(("shape", "chunks"), [((4 * 512, 256), (512, 256)), ((1024, 512), (512, 256))],
                         ids=["views", "gathered"])
async def test_whole_chunks_of_a_streamed_value_write_are_written_direct(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: tuple[int, int], chunks: tuple[int, int]
) -> None:
    """A binary value PUT receives its body into a kept block (``engine.BLOCKS``) and stores its
    whole raw chunks as views of it, or, when a chunk is narrower than the body's rows, as one
    copy into page-aligned memory: each chunk of 1 MiB or more goes past the page cache, and
    reads back whole."""
    store = LocalStore(tmp_path / "root")
    flags = _spy_open(monkeypatch)  # four chunks of 1 MiB (float64)
    codec, fill = codec_and_fill({"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}, chunks, None, 0)
    layout = DatasetLayout("d-test", "/t.h5", shape, codec, fill, NativeChunks(store, "d-00000000-0000-0000-0000-000000000000"))
    try:
        with engine.BLOCKS.streaming():
            values = engine.BLOCKS.array(shape, np.dtype("<f8"))
            values[...] = np.arange(shape[0] * shape[1], dtype="<f8").reshape(shape)
            written = await writes.write_selection(layout, Selection.all(shape), values, Workers(4, cpu_pool()))
            want = values.copy()
            del values
        assert len(set(written)) == 4
        assert [bool(f & direct.O_DIRECT) for f in flags] == [True] * 4
        np.testing.assert_array_equal(await engine.read_selection(layout, Selection.all(shape), Workers(4, cpu_pool())), want)
    finally:
        await store.close()
