"""The `ChunkLocator` contract: every way of finding a dataset's chunks must pass it.

Native chunks (objects of their own), and chunks inside a real HDF5 file made with h5py
(contiguous, chunked with the chunk list in the layout, chunked through a chunk table) are
found by different locators; the chunk engine reads them all the same way. A new locator (a
version's content-addressed chunks) joins by adding a case to `CASES`.

Contract, for each case:
* reading the whole dataset through the engine gives the values written;
* `locate` answers a `ChunkRef` whose bytes decode to that chunk, or None for a chunk never
  written, which then reads as the fill value;
* an index past the dataset's extent reads as fill;
* answers are repeatable and safe to ask concurrently;
* `writable` says the truth: writes land through a writable locator (keeping the rest of a
  chunk written in part) and are refused as `ReadOnly` (nothing changed) through a read-only one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from h5lake.chunks import engine, writes
from h5lake.chunks.dataset import ChunkCodec, DatasetLayout
from h5lake.chunks.fanout import Workers, cpu_pool
from h5lake.chunks.filters import from_h5py_dcpl
from h5lake.chunks.inline import DocumentChunks, listed_chunks
from h5lake.chunks.locate import ChunkLocator, ChunkRef, NativeChunks
from h5lake.errors import ReadOnly
from h5lake.model.ids import Collection, new_object_id, new_root_id
from h5lake.model.selection import Selection, Slice
from h5lake.sources.files import default_registry
from h5lake.sources.inplace import ChunkTable, linked_locator
from h5lake.storage.memory import MemoryStore
from h5lake.versions.content import ContentStore, ForkedChunks, VersionChunks, index_name

WORKERS = Workers(4, cpu_pool())
SHAPE = (50, 30)
CHUNKS = (16, 16)
GRID = (4, 2)
FILL = -1.0
F4 = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}
UNWRITTEN = (3, 1)  # rows 48..49, columns 16..29: no value is ever written there
TABLE_TYPE = {
    "class": "H5T_COMPOUND",
    "fields": [
        {"name": "offset", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_U64LE"}},
        {"name": "size", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_U64LE"}},
        {"name": "filter_mask", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_U32LE"}},
    ],
}


def values() -> np.ndarray:
    return np.arange(np.prod(SHAPE), dtype="<f4").reshape(SHAPE) / 7


def expected_with_hole() -> np.ndarray:
    out = values()
    out[48:50, 16:30] = FILL
    return out


@dataclass
class Case:
    layout: DatasetLayout
    expected: np.ndarray
    has_unwritten_chunk: bool

    @property
    def locator(self) -> ChunkLocator:
        return self.layout.locator


def layout_of(locator: ChunkLocator, chunks: tuple[int, ...], filters: Any = None) -> DatasetLayout:
    codec = ChunkCodec.for_dataset(F4, chunks, filters or [])
    return DatasetLayout("d-test", "/contract.h5", SHAPE, codec, np.array(FILL, "<f4"), locator)


async def native_case(tmp_path: Path) -> Case:
    store = MemoryStore()
    dataset_id = new_object_id(Collection.DATASETS, new_root_id())
    layout = layout_of(NativeChunks(store, dataset_id), CHUNKS, [{"class": "H5Z_FILTER_DEFLATE", "level": 4}])
    data = values()
    await writes.write_selection(layout, Selection((Slice(0, 48), Slice(0, 30))), data[:48], WORKERS)
    await writes.write_selection(layout, Selection((Slice(48, 50), Slice(0, 16))), data[48:, :16], WORKERS)
    return Case(layout, expected_with_hole(), True)


async def document_case(tmp_path: Path) -> Case:
    """Compact values: the chunks held in the dataset's document (`chunks.inline`)."""
    dataset_id = new_object_id(Collection.DATASETS, new_root_id())
    layout = layout_of(NativeChunks(DocumentChunks({}, dataset_id), dataset_id), CHUNKS)  # type: ignore[arg-type]
    data = values()
    await writes.write_selection(layout, Selection((Slice(0, 48), Slice(0, 30))), data[:48], WORKERS)
    await writes.write_selection(layout, Selection((Slice(48, 50), Slice(0, 16))), data[48:, :16], WORKERS)
    # as the document keeps them, and read back from that listing
    listing = layout.locator.store.contents(dataset_id)  # type: ignore[attr-defined]
    assert len(listing) == GRID[0] * GRID[1] - 1
    reread = layout_of(NativeChunks(DocumentChunks(listed_chunks(listing), dataset_id), dataset_id), CHUNKS)  # type: ignore[arg-type]
    return Case(reread, expected_with_hole(), True)


def h5_file(tmp_path: Path) -> Path:
    path = tmp_path / "source.h5"
    data = values()
    with h5py.File(path, "w") as f:
        f.create_dataset("contiguous", data=data)
        c = f.create_dataset("chunked", shape=SHAPE, dtype="<f4", chunks=CHUNKS, fillvalue=FILL,
                             compression="gzip", shuffle=True)
        c[:48] = data[:48]
        c[48:, :16] = data[48:, :16]
    return path


def linked_doc(layout_json: dict[str, Any], uri: str, fingerprint: dict[str, Any]) -> dict[str, Any]:
    return {"layout": layout_json, "shape": {"class": "H5S_SIMPLE", "dims": list(SHAPE)}, "type": F4,
            "linked_sources": {uri: fingerprint}}


def chunk_list(dset: h5py.Dataset) -> dict[tuple[int, ...], tuple[int, int, int]]:
    found: dict[tuple[int, ...], tuple[int, int, int]] = {}

    def add(info: Any) -> None:
        index = tuple(o // c for o, c in zip(info.chunk_offset, CHUNKS))
        found[index] = (info.byte_offset, info.size, info.filter_mask)

    dset.id.chunk_iter(add)
    return found


async def linked_case(tmp_path: Path, kind: str) -> Case:
    path = h5_file(tmp_path)
    uri = str(path)
    registry = default_registry((str(tmp_path),))
    fingerprint = (await registry.fingerprint(registry.resolve(uri))).to_json()
    with h5py.File(path) as f:
        if kind == "contiguous":
            layout_json = {"class": "H5D_CONTIGUOUS_REF", "file_uri": uri,
                           "offset": f["contiguous"].id.get_offset(), "size": f["contiguous"].id.get_storage_size()}
            dims = (SHAPE[0] // 4, SHAPE[1])  # any whole rows: ask for virtual chunks of 12 rows
            layout_json["dims"] = list(dims)
            locator = linked_locator(linked_doc(layout_json, uri, fingerprint), registry, None, WORKERS)
            return Case(layout_of(locator, dims), values(), False)
        listed = chunk_list(f["chunked"])
        filters = from_h5py_dcpl(f["chunked"])
    assert UNWRITTEN not in listed and len(listed) == GRID[0] * GRID[1] - 1
    if kind == "chunked":
        chunks = {"_".join(map(str, i)): list(loc) for i, loc in listed.items()}
        layout_json = {"class": "H5D_CHUNKED_REF", "file_uri": uri, "dims": list(CHUNKS), "chunks": chunks}
        locator = linked_locator(linked_doc(layout_json, uri, fingerprint), registry, None, WORKERS)
        return Case(layout_of(locator, CHUNKS, filters), expected_with_hole(), True)
    # indirect: the chunk list lives in a native dataset, the chunk table
    table_id = new_object_id(Collection.DATASETS, new_root_id())
    table_codec = ChunkCodec.for_dataset(TABLE_TYPE, (2, 2), [])
    table_layout = DatasetLayout(table_id, "/contract.h5", GRID, table_codec, np.zeros((), table_codec.dtype),
                                 NativeChunks(MemoryStore(), table_id))
    entries = np.zeros(GRID, dtype=table_codec.dtype)
    for index, (offset, size, mask) in listed.items():
        entries[index] = (offset, size, mask)
    await writes.write_selection(table_layout, Selection.all(GRID), entries, WORKERS)
    table_doc = {"id": table_id, "type": TABLE_TYPE}
    layout_json = {"class": "H5D_CHUNKED_REF_INDIRECT", "file_uri": uri, "dims": list(CHUNKS), "chunk_table": table_id}
    doc = linked_doc(layout_json, uri, fingerprint)
    locator = linked_locator(doc, registry, ChunkTable(table_doc, table_layout), WORKERS)
    return Case(layout_of(locator, CHUNKS, filters), expected_with_hole(), True)


async def committed(store: MemoryStore) -> tuple[ContentStore, str, dict[str, list[str]]]:
    """The native case's chunks committed to a content store as a version does: its chunk table
    (index -> [sha256, etag]) in a manifest; returns (content store, manifest hash, table)."""
    case = await native_case(Path("."))
    native = case.locator
    assert isinstance(native, NativeChunks)
    cas = ContentStore(store)
    table: dict[str, list[str]] = {}
    for index in grid_of(case.layout):
        blob = await native.store.get(native.key(index))
        if blob is not None:
            table[index_name(index)] = [await cas.put_blob(blob.data), blob.etag]
    return cas, await cas.put_tree({"doc": {}, "etag": "-", "chunks": table}), table


async def version_case(tmp_path: Path) -> Case:
    store = MemoryStore()
    _, _, table = await committed(store)
    layout = layout_of(VersionChunks(store, table), CHUNKS, [{"class": "H5Z_FILTER_DEFLATE", "level": 4}])
    return Case(layout, expected_with_hole(), True)


async def forked_case(tmp_path: Path) -> Case:
    """A fork's dataset before it wrote anything: every chunk read from the version's table."""
    cas, tree, _ = await committed(MemoryStore())
    dataset_id = new_object_id(Collection.DATASETS, new_root_id())
    layout = layout_of(ForkedChunks(cas, dataset_id, tree), CHUNKS, [{"class": "H5Z_FILTER_DEFLATE", "level": 4}])
    return Case(layout, expected_with_hole(), True)


CASES: dict[str, Callable[[Path], Awaitable[Case]]] = {
    "native": native_case,
    "document": document_case,
    "version": version_case,
    "forked": forked_case,
    "linked-contiguous": lambda p: linked_case(p, "contiguous"),
    "linked-chunked": lambda p: linked_case(p, "chunked"),
    "linked-indirect": lambda p: linked_case(p, "indirect"),
}


@pytest.fixture(params=sorted(CASES))
async def case(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Case]:
    yield await CASES[request.param](tmp_path)


def grid_of(layout: DatasetLayout) -> list[tuple[int, ...]]:
    counts = [-(-n // c) for n, c in zip(layout.shape, layout.chunk_shape)]
    return [tuple(int(i) for i in ix) for ix in np.ndindex(*counts)]


def chunk_region(layout: DatasetLayout, index: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(i * c, min(n, (i + 1) * c)) for i, c, n in zip(index, layout.chunk_shape, layout.shape))


async def test_whole_dataset_reads_back_what_was_written(case: Case) -> None:
    got = await engine.read_selection(case.layout, Selection.all(SHAPE), WORKERS)
    assert np.array_equal(got, case.expected)


async def test_each_located_chunk_decodes_to_its_values(case: Case) -> None:
    layout = case.layout
    for index in grid_of(layout):
        ref = await case.locator.locate(index)
        region = chunk_region(layout, index)
        want = case.expected[region]
        if ref is None:
            assert (want == FILL).all(), f"chunk {index} has values but is not located"
            continue
        assert isinstance(ref, ChunkRef)
        inside = tuple(slice(0, s.stop - s.start) for s in region)
        part = await engine.load_selected(layout, index, inside, WORKERS, ref)
        if part is None:  # a native chunk never written: its key holds nothing
            assert (want == FILL).all()
            continue
        assert np.array_equal(part, want), f"chunk {index}"


@pytest.mark.parametrize("case", [k for k in sorted(CASES) if k != "linked-contiguous"], indirect=True)
async def test_a_chunk_never_written_reads_as_fill(case: Case) -> None:
    assert case.has_unwritten_chunk
    region = chunk_region(case.layout, UNWRITTEN)
    inside = tuple(slice(0, s.stop - s.start) for s in region)
    assert await engine.load_selected(case.layout, UNWRITTEN, inside, WORKERS) is None
    sel = Selection(tuple(Slice(s.start, s.stop) for s in region))
    got = await engine.read_selection(case.layout, sel, WORKERS)
    assert (got == FILL).all()


async def test_indexes_past_the_extent_read_as_fill(case: Case) -> None:
    beyond = tuple(-(-n // c) + 1 for n, c in zip(case.layout.shape, case.layout.chunk_shape))
    corner = tuple(slice(0, 1) for _ in beyond)
    assert await engine.load_selected(case.layout, beyond, corner, WORKERS) is None


def ref_key(ref: ChunkRef | None) -> tuple[Any, ...] | None:
    return None if ref is None else (ref.key, ref.offset, ref.length, ref.filter_mask)


async def test_answers_are_repeatable_and_safe_to_ask_at_once(case: Case) -> None:
    indexes = grid_of(case.layout) * 3
    first = await asyncio.gather(*(case.locator.locate(i) for i in indexes))
    again = [await case.locator.locate(i) for i in indexes]
    assert [ref_key(r) for r in first] == [ref_key(r) for r in again]


async def test_writable_says_whether_writes_land(case: Case) -> None:
    layout = case.layout
    patch = np.full((2, 3), 42.0, dtype="<f4")
    sel = Selection((Slice(1, 3), Slice(2, 5)))
    if case.locator.writable:
        await writes.write_selection(layout, sel, patch, WORKERS)
        assert np.array_equal(await engine.read_selection(layout, sel, WORKERS), patch)
        want = case.expected.copy()
        want[1:3, 2:5] = patch  # the rest of the chunk written in part is kept
        assert np.array_equal(await engine.read_selection(layout, Selection.all(SHAPE), WORKERS), want)
        return
    with pytest.raises(ReadOnly):
        await writes.write_selection(layout, sel, patch, WORKERS)
    assert np.array_equal(await engine.read_selection(layout, Selection.all(SHAPE), WORKERS), case.expected)


async def test_a_version_locator_made_before_the_document_is_read_finds_every_chunk() -> None:
    """`VersionView.chunks` asked before `VersionView.object` (the manifest not read yet) reads
    the dataset's manifest itself: every committed chunk is found, none reads as fill."""
    from types import SimpleNamespace

    from h5lake.service.versions.view import VersionView

    store = MemoryStore()
    cas, manifest, table = await committed(store)
    dataset_id = new_object_id(Collection.DATASETS, new_root_id())
    root = await cas.get_root(await cas.put_tree({"root": "g-root", "objects": {dataset_id: manifest}}))
    svc: Any = SimpleNamespace(store=store, cas=cas)
    view = VersionView(svc, {"id": "v1", "number": 1, "tree": "-"}, root)
    first = view.chunks(dataset_id)  # before view.object(dataset_id)
    assert table
    for name in table:
        index = tuple(int(i) for i in name.split("_"))
        ref = await first.locate(index)
        assert ref is not None and ref.key == (await VersionChunks(store, table).locate(index)).key
    assert await view.object(dataset_id) is not None
    assert await view.chunks("d-not-in-this-version").locate((0, 0)) is None
