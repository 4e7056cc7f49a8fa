"""The chunk engine's read paths against numpy: whole chunks, ranged point reads, partial
hyperslabs, fill and edge chunks, on the memory and local stores and on a store without
``get_ranges``; and the zero-copy encode and put of unfiltered chunks."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from h5lake.chunks import engine, writes
from h5lake.chunks.dataset import ChunkCodec, DatasetLayout
from h5lake.chunks.fanout import Workers, cpu_pool
from h5lake.chunks.locate import ChunkRef, NativeChunks
from h5lake.model.selection import PointSelection, Selection, Slice
from h5lake.chunks.dataset import codec_and_fill
from h5lake.storage import posix as posix_module
from h5lake.storage.base import Blob, GetRanges, ObjectInfo
from h5lake.storage.local import LocalStore
from h5lake.storage.memory import MemoryStore

WORKERS = Workers(4, cpu_pool())  # the fan-out bound and CPU pool a service would hand the engine

F4 = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}
I2 = {"class": "H5T_INTEGER", "base": "H5T_STD_I16BE"}
GZIP = [{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 1}]
SHAPE = (37, 50)  # edge chunks in both dimensions
CHUNKS = (16, 20)


class PlainStore:
    """A store with only the base contract (no ``get_ranges``): the whole-chunk fallback."""

    def __init__(self, inner: MemoryStore) -> None:
        self._inner = inner

    async def get(self, key: str) -> Blob | None:
        return await self._inner.get(key)

    async def head(self, key: str) -> ObjectInfo | None:
        return await self._inner.head(key)

    async def get_range(self, key: str, offset: int, length: int) -> bytes | None:
        return await self._inner.get_range(key, offset, length)

    async def put(self, key: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False) -> str:
        return await self._inner.put(key, data, if_match=if_match, if_none_match=if_none_match)

    async def delete(self, key: str) -> None:
        await self._inner.delete(key)

    async def close(self) -> None:
        pass


@pytest.fixture(params=["memory", "local", "plain"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "local":
        yield LocalStore(tmp_path / "store", inline_read_bytes=64)  # some reads go to threads
    else:
        yield PlainStore(MemoryStore())


def make_layout(
    store: Any, type_json: Any = F4, filters: Any = None, fill: Any = 7, shape: Any = SHAPE, chunks: Any = CHUNKS
) -> DatasetLayout:
    codec, fill_arr = codec_and_fill(type_json, chunks, filters, fill)
    return DatasetLayout("d-test", "/t.h5", shape, codec, fill_arr, NativeChunks(store, "d-00000000-0000-0000-0000-000000000000"))


async def filled(layout: DatasetLayout) -> np.ndarray:
    """Write all but the chunk (1, 1) and return what the dataset should read as."""
    rng = np.random.default_rng(3)
    data = (rng.random(SHAPE) * 1000).astype(layout.dtype)
    for rows in (Slice(0, 16), Slice(32, 37)):
        await writes.write_selection(layout, Selection((rows, Slice(0, 50))), data[rows.start : rows.stop], WORKERS)
    await writes.write_selection(layout, Selection((Slice(16, 32), Slice(0, 20))), data[16:32, 0:20], WORKERS)
    await writes.write_selection(layout, Selection((Slice(16, 32), Slice(40, 50))), data[16:32, 40:50], WORKERS)
    expected = data.copy()
    expected[16:32, 20:40] = layout.fill
    return expected


@pytest.mark.parametrize("type_json", [F4, I2])
@pytest.mark.parametrize("filters", [None, GZIP])
async def test_points_match_numpy(store: Any, type_json: Any, filters: Any) -> None:
    layout = make_layout(store, type_json, filters)
    expected = await filled(layout)
    rng = np.random.default_rng(5)
    for npoints in (1, 3, 40, 500, 3000):  # sparse (ranged) up to dense (whole chunks)
        coords = np.stack([rng.integers(0, n, npoints) for n in SHAPE], axis=1)
        got = await engine.read_points(layout, PointSelection.from_array(coords, SHAPE), WORKERS)
        np.testing.assert_array_equal(got, expected[coords[:, 0], coords[:, 1]])


async def test_points_in_big_chunks_match_numpy(store: Any) -> None:
    """Chunks big enough that several ranges, merged or not, serve one chunk's points."""
    shape, chunks = (300, 700), (128, 256)
    layout = make_layout(store, shape=shape, chunks=chunks, fill=-1)
    data = np.random.default_rng(8).random(shape, dtype=np.float32)
    await writes.write_selection(layout, Selection((Slice(0, 256), Slice(0, 700))), data[:256], WORKERS)
    expected = data.copy()
    expected[256:] = -1  # the last row of chunks was never written
    rng = np.random.default_rng(9)
    for npoints in (2, 50, 400, 5000):
        coords = np.stack([rng.integers(0, n, npoints) for n in shape], axis=1)
        coords[: npoints // 2, 1] = coords[: npoints // 2, 1] // 4 * 4  # neighbours and repeats
        got = await engine.read_points(layout, PointSelection.from_array(coords, shape), WORKERS)
        np.testing.assert_array_equal(got, expected[coords[:, 0], coords[:, 1]])


async def test_points_in_missing_chunk_read_fill(store: Any) -> None:
    layout = make_layout(store)
    coords = np.array([[0, 0], [36, 49], [20, 25]])
    got = await engine.read_points(layout, PointSelection.from_array(coords, SHAPE), WORKERS)
    np.testing.assert_array_equal(got, np.full(3, 7, np.float32))


async def test_partial_hyperslabs_match_numpy(store: Any) -> None:
    layout = make_layout(store)
    expected = await filled(layout)
    for rows, cols in [((0, 3), (0, 4)), ((14, 35), (5, 45)), ((33, 37), (47, 50)), ((20, 21), (22, 30))]:
        sel = Selection((Slice(*rows), Slice(*cols)))
        got = await engine.read_selection(layout, sel, WORKERS)
        np.testing.assert_array_equal(got, expected[slice(*rows), slice(*cols)])


async def test_point_ranges_plan() -> None:
    store = MemoryStore()
    layout = make_layout(store, shape=(64, 64), chunks=(64, 64))
    ref = ChunkRef(store, "k")
    coords = np.array([[0, 1], [0, 0], [63, 63], [0, 1]])
    plan = engine.point_ranges(layout, ref, coords)
    assert plan is not None
    requests, elements = plan
    assert requests.tolist() == [[0, 8], [4095 * 4, 4]]  # near points share a read
    assert elements.tolist() == [1, 0, 2, 1]
    assert isinstance(store, GetRanges)
    assert engine.point_ranges(layout, ChunkRef(PlainStore(store), "k"), coords) is None  # type: ignore[arg-type]
    dense = np.stack(np.unravel_index(np.arange(1500), (64, 64)), axis=1)
    assert engine.point_ranges(layout, ref, dense) is None  # most of the chunk: read it whole
    gz = make_layout(store, filters=GZIP, shape=(64, 64), chunks=(64, 64))
    assert engine.point_ranges(gz, ref, coords) is None


async def test_local_get_ranges(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, inline_read_bytes=4)
    assert await store.get_ranges("a/b", [(0, 1)]) is None
    await store.put("a/b", b"0123456789")
    assert await store.get_ranges("a/b", [(0, 2), (5, 3), (9, 5), (20, 1)]) == [b"01", b"567", b"9", b""]
    with pytest.raises(ValueError):
        await store.get_ranges("a/b", [(-1, 2)])
    await store.close()


async def test_unfiltered_encode_is_a_view_and_put_stores_it(tmp_path: Path) -> None:
    codec = ChunkCodec.for_dataset(F4, (4, 4), [])
    arr = np.arange(32, dtype=np.float32).reshape(8, 4)[::2]  # not contiguous: copied once
    data = codec.encode(arr)
    assert isinstance(data, memoryview)
    assert bytes(data) == np.ascontiguousarray(arr).tobytes()
    store = LocalStore(tmp_path)
    etag = await store.put("k", data)
    blob = await store.get("k")
    assert blob is not None and blob.data == bytes(data) and blob.etag == etag
    await store.close()


def test_codec_cache_shares_read_only_values() -> None:
    a = codec_and_fill(F4, (4, 4), None, 1.5)
    b = codec_and_fill(F4, (4, 4), None, 1.5)
    c = codec_and_fill(F4, (4, 4), None, 2.5)
    assert a[0] is b[0] and a[1] is b[1]
    assert c[1] == 2.5 and a[1] == 1.5
    assert not a[1].flags.writeable


async def test_whole_chunks_of_a_write_share_one_folder_fsync_per_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """48 whole raw chunks written in one call: stored in windows of ``HASH_WINDOW`` through
    ``put_hashed_many``, so the chunks' folder is fsync'ed once per window, not once per chunk;
    every chunk reads back."""
    store = LocalStore(tmp_path / "store")
    try:
        shape, chunks = (48 * 16, 20), (16, 20)
        layout = make_layout(store, shape=shape, chunks=chunks)
        data = np.arange(shape[0] * shape[1], dtype="<f4").reshape(shape)
        syncs: list[str] = []
        real_fsync_dir = posix_module.fsync_dir

        def counted(folder: str) -> None:
            syncs.append(folder)
            real_fsync_dir(folder)

        monkeypatch.setattr(posix_module, "fsync_dir", counted)
        written = await writes.write_selection(layout, Selection.all(shape), data, WORKERS)
        monkeypatch.undo()
        assert sorted(written) == [(i, 0) for i in range(48)]
        assert len(syncs) == 48 // writes.HASH_WINDOW, syncs
        np.testing.assert_array_equal(await engine.read_selection(layout, Selection.all(shape), WORKERS), data)
    finally:
        await store.close()


@pytest.mark.parametrize("filters", [None, GZIP])
async def test_every_chunk_of_a_write_is_durable_before_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filters: Any
) -> None:
    """A write whose windows mix whole interior chunks (``put_hashed_many``), edge chunks and
    partial chunks over stored ones (read, changed, put one by one), or a filtered dataset (no
    hashed chunk): every chunk it names in ``written`` (each once, every chunk it touched) has
    its file renamed or linked into place, and an fsync of its folder begun after that ended
    before the write returned; the values read back."""
    store = LocalStore(tmp_path / "store", max_threads=4)
    shape, chunks = (16 * 20 + 7, 45), (16, 20)
    try:
        layout = make_layout(store, filters=filters, shape=shape, chunks=chunks)
        data = np.arange(shape[0] * shape[1], dtype="<f4").reshape(shape)
        await writes.write_selection(layout, Selection((Slice(0, 16), Slice(0, 45))), data[0:16], WORKERS)
        named: dict[str, int] = {}
        syncs: list[tuple[str, int, int]] = []
        lock = threading.Lock()
        real_replace, real_link, real_fsync_dir = os.replace, os.link, posix_module.fsync_dir

        def timed_replace(src: str, dst: str) -> None:
            real_replace(src, dst)
            with lock:
                named[dst] = time.monotonic_ns()

        def timed_link(src: str, dst: str) -> None:
            real_link(src, dst)
            with lock:
                named[dst] = time.monotonic_ns()

        def timed_fsync_dir(folder: str) -> None:
            start = time.monotonic_ns()
            real_fsync_dir(folder)
            with lock:
                syncs.append((folder, start, time.monotonic_ns()))

        monkeypatch.setattr(os, "replace", timed_replace)
        monkeypatch.setattr(os, "link", timed_link)
        monkeypatch.setattr(posix_module, "fsync_dir", timed_fsync_dir)
        hashed: list[str] = []
        real_many = store.put_hashed_many

        async def counted_many(items: Any) -> None:
            hashed.extend(key for key, _, _ in items)
            await real_many(items)

        monkeypatch.setattr(store, "put_hashed_many", counted_many)
        sel = Selection((Slice(8, shape[0]), Slice(0, 45)))  # chunk row 0 partial, edges right and below
        written = await writes.write_selection(layout, sel, data[8:], WORKERS)
        returned = time.monotonic_ns()
        monkeypatch.undo()
        expected = sorted((i, j) for i in range(21) for j in range(3))
        assert sorted(written) == expected and len(written) == len(expected)
        assert len(hashed) == (0 if filters else 19 * 2)  # the whole interior chunks
        for index in written:
            path = str(tmp_path / "store" / NativeChunks(store, "d-00000000-0000-0000-0000-000000000000").key(index))
            assert path in named, index
            folder = os.path.dirname(path)
            assert any(f == folder and start >= named[path] and end <= returned for f, start, end in syncs), index
        np.testing.assert_array_equal(await engine.read_selection(layout, Selection.all(shape), WORKERS), data)
    finally:
        await store.close()


@pytest.mark.parametrize("filters", [None, GZIP])
async def test_a_write_with_ready_places_no_chunk_before_it(tmp_path: Path, filters: Any) -> None:
    """``write_selection(..., ready)`` (the intent written beside it): whole interior chunks are
    written meanwhile, but no chunk of the write, whole, edge or partial, is in place before
    ``ready()`` returned; all are after, and the values read back."""
    store = LocalStore(tmp_path / "store", max_threads=4)
    shape, chunks = (16 * 6 + 7, 45), (16, 20)
    try:
        layout = make_layout(store, filters=filters, shape=shape, chunks=chunks)
        data = np.arange(shape[0] * shape[1], dtype="<f4").reshape(shape)
        await writes.write_selection(layout, Selection((Slice(0, 16), Slice(0, 45))), data[0:16], WORKERS)
        before = {k async for k in store.list("")}
        seen: list[set[str]] = []

        async def ready() -> None:  # as ``Recording.ready``: its first return is the intent's durability
            if not seen:
                seen.append({k async for k in store.list("")})

        sel = Selection((Slice(8, shape[0]), Slice(0, 45)))  # chunk row 0 partial, edges right and below
        written = await writes.write_selection(layout, sel, data[8:], WORKERS, ready)
        assert seen == [before]  # no new chunk in place before ready() first returned
        assert sorted(written) == sorted((i, j) for i in range(7) for j in range(3))
        np.testing.assert_array_equal(await engine.read_selection(layout, Selection.all(shape), WORKERS), data)
    finally:
        await store.close()
