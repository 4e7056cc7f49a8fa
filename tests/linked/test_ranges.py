"""Partial reads of raw chunks: the byte-range plan is exact, and the engine reads little."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h5lake.chunks import chunkspans as ranges
from h5lake.chunks import engine
from h5lake.chunks.dataset import ChunkCodec, DatasetLayout
from h5lake.chunks.fanout import Workers, cpu_pool
from h5lake.chunks.locate import ChunkRef
from h5lake.model.projection import project
from h5lake.model.selection import Coords, Selection, Slice

WORKERS = Workers(4, cpu_pool())  # the fan-out bound and CPU pool a service would hand the engine


class CountingSource:
    """A ByteRangeSource over one bytes object that counts requests and bytes served."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.requests = 0
        self.bytes = 0

    async def get_range(self, key: str, offset: int, length: int) -> bytes | None:
        self.requests += 1
        self.bytes += length
        return self.data[offset : offset + length]


class OneChunk:
    writable = False

    def __init__(self, source: CountingSource, offset: int, length: int) -> None:
        self.source, self.offset, self.length = source, offset, length

    async def locate(self, index: tuple[int, ...]) -> ChunkRef | None:
        return ChunkRef(self.source, "k", self.offset, self.length)


@st.composite
def chunk_and_selection(draw: st.DrawFn) -> tuple[tuple[int, ...], Selection]:
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.integers(1, 9)) for _ in range(rank))
    parts = []
    for n in shape:
        if draw(st.booleans()):
            start = draw(st.integers(0, n - 1))
            stop = draw(st.integers(start + 1, n))
            parts.append(Slice(start, stop, draw(st.integers(1, 3))))
        else:
            idx = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=5, unique=True))
            parts.append(Coords(np.asarray(sorted(idx), dtype=np.int64)))
    return shape, Selection(tuple(parts))


@settings(max_examples=300, deadline=None)
@given(chunk_and_selection(), st.sampled_from([1, 2, 8]), st.integers(0, 64), st.integers(1, 200))
def test_plan_reads_exactly_the_selection(case: tuple[tuple[int, ...], Selection], itemsize: int, gap: int, max_request: int) -> None:
    shape, sel = case
    chunk = np.arange(int(np.prod(shape)) * itemsize, dtype=np.uint8) % 251
    chunk_view = chunk.view(f"V{itemsize}").reshape(shape)
    (p,) = list(project(sel, shape, shape))
    plan = ranges.plan_part(p.chunk_selection, shape, itemsize)
    box = np.zeros(plan.nbytes, dtype=np.uint8)
    for req in ranges.group_requests(plan, max_gap=gap, max_request=max_request):
        assert req.length <= max(max_request, 0) or req.src.size == 1
        ranges.assemble(box, req, chunk.tobytes()[req.start : req.start + req.length])
    got = box.view(f"V{itemsize}").reshape(plan.box_shape)[plan.box_selection]
    assert np.array_equal(got, chunk_view[p.chunk_selection])


@pytest.mark.asyncio
async def test_one_row_of_a_big_chunk_reads_one_row() -> None:
    shape = (2048, 1024)  # 8 MiB of float32 in one chunk
    data = np.arange(np.prod(shape), dtype="<f4").reshape(shape)
    source = CountingSource(b"\0" * 100 + data.tobytes())
    codec = ChunkCodec.for_dataset({"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}, shape, [])
    layout = DatasetLayout("d", "/x", shape, codec, np.zeros((), "<f4"), OneChunk(source, 100, data.nbytes))
    row = await engine.read_selection(layout, Selection((Slice(700, 701), Slice(0, 1024))), WORKERS)
    assert np.array_equal(row[0], data[700])
    assert source.bytes == 1024 * 4 and source.requests == 1
    source.bytes = source.requests = 0
    block = await engine.read_selection(layout, Selection((Slice(10, 20), Slice(100, 110))), WORKERS)
    assert np.array_equal(block, data[10:20, 100:110])
    assert source.bytes < 10 * 1024 * 4 + 4096  # rows merged, no more than the rows spanned
    source.bytes = source.requests = 0
    whole = await engine.read_selection(layout, Selection.all(shape), WORKERS)
    assert np.array_equal(whole, data)
    assert source.bytes == data.nbytes and source.requests == -(-data.nbytes // ranges.MAX_REQUEST)
