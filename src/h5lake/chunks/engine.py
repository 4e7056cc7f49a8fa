"""Reading and writing selections chunk by chunk.

Every operation is: selection -> chunk projections -> locate each chunk's bytes -> fetch and
decode (or modify, encode and store). Chunk work runs concurrently with a bound; codec and numpy
work runs in a thread pool so the event loop keeps serving; the first failure cancels the rest.

Writes are durable and lose nothing: a chunk covered completely is replaced outright; a chunk
covered in part is read, modified and written back only if it did not change meanwhile
(if-match, or create-only for a new chunk), retrying on a lost race.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import math
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeGuard, TypeVar, overload

import numpy as np

from h5lake.chunks import ranges
from h5lake.chunks.buffers import BufferPool
from h5lake.chunks.fanout import Workers, bounded
from h5lake.chunks.layout import DatasetLayout
from h5lake.chunks.locate import ChunkRef, NativeChunks
from h5lake.errors import Conflict, DataCorruption, ReadOnly
from h5lake.model.projection import ChunkProjection, PointProjection, project, project_points
from h5lake.model.selection import PointSelection, Selection, Slice
from h5lake.model.types import elements_from_buffer
from h5lake.storage import lanes
from h5lake.storage.base import ByteRangeSource, GetRanges, PreconditionFailed, PutHashed, ReadInto
from h5lake.storage.md5 import md5_hex_many

log = logging.getLogger(__name__)

P = TypeVar("P", ChunkProjection, PointProjection)

_MAX_RETRIES = 100
BLOCKS = BufferPool()  # the blocks of streamed reads and writes, used again (chunks/buffers.py)


async def fetch(ref: ChunkRef) -> bytes | None:
    if ref.offset is None:
        blob = await ref.source.get(ref.key)  # type: ignore[attr-defined]
        return None if blob is None else bytes(blob.data)
    return await ref.source.get_range(ref.key, ref.offset, ref.length or 0)


async def load_chunk(layout: DatasetLayout, index: tuple[int, ...], workers: Workers) -> np.ndarray | None:
    ref = await layout.locator.locate(index)
    if ref is None:
        return None
    stored = await fetch(ref)
    if stored is None:
        return None
    return await workers.cpu(layout.codec.decode, stored, ref.filter_mask, size=len(stored) * 4)


PART_CONCURRENCY = 8  # ranged reads at once within one chunk


def reads_in_part(layout: DatasetLayout, ref: ChunkRef) -> bool:
    """True when the chunk is a byte range holding the raw array (no filter applied to it), so
    a selection can be read from the byte ranges it touches instead of the whole chunk."""
    codec = layout.codec
    if ref.offset is None or codec.variable or codec.reduced:  # reduced: bytes are not the values
        return False
    return all(ref.filter_mask >> i & 1 for i in range(len(codec.pipeline.filters)))


async def read_part(
    layout: DatasetLayout, ref: ChunkRef, chunk_selection: tuple[Any, ...], workers: Workers
) -> np.ndarray:
    """``chunk[chunk_selection]`` of a raw chunk, fetching only the byte ranges it touches
    (nearby ranges merged into one request, large ones split and fetched concurrently)."""
    plan = ranges.plan_part(chunk_selection, layout.chunk_shape, layout.dtype.itemsize)
    box = np.empty(plan.nbytes, dtype=np.uint8)
    base = ref.offset or 0

    async def one(request: ranges.Request) -> None:
        data = await ref.source.get_range(ref.key, base + request.start, request.length)
        if data is None or len(data) < request.length:
            raise DataCorruption(f"chunk bytes of {ref.key} end before the chunk does")
        await workers.cpu(ranges.assemble, box, request, data, size=request.length)

    await bounded(ranges.group_requests(plan), one, PART_CONCURRENCY)
    return elements_from_buffer(box.data, layout.dtype, plan.box_shape)[plan.box_selection]


NATIVE_PART_FRACTION = 4  # read a native chunk in part only when that saves 3/4 of its bytes


def native_part(
    layout: DatasetLayout, ref: ChunkRef, chunk_selection: tuple[Any, ...]
) -> tuple[ranges.PartPlan, ranges.Request] | None:
    """The one ranged read that holds ``chunk_selection`` of a whole-object, unfiltered chunk
    (stored as the raw C-order array), when it is much smaller than the chunk; else None.

    Only a single range: one read sees one version of the object, so a part read stays as
    consistent as a whole one while a writer replaces the chunk.
    """
    codec = layout.codec
    if ref.offset is not None or codec.variable or codec.reduced or codec.pipeline.filters or not layout.chunk_shape:
        return None
    if not all(isinstance(s, slice) for s in chunk_selection):
        return None  # points and lists: their planning costs more than a whole read saves
    # The bytes from the first selected element to the last bound the one request: skip the
    # planning when even that is too much.
    itemsize = layout.dtype.itemsize
    first = last = 0
    stride = itemsize
    for s, n in zip(reversed(chunk_selection), reversed(layout.chunk_shape)):
        count = len(range(s.start, s.stop, s.step or 1))
        if count == 0:
            return None
        first += s.start * stride
        last += (s.start + (count - 1) * (s.step or 1)) * stride
        stride *= n
    if (last + itemsize - first) * NATIVE_PART_FRACTION > codec.chunk_bytes:
        return None
    plan = ranges.plan_part(chunk_selection, layout.chunk_shape, itemsize)
    requests = ranges.group_requests(plan)
    if len(requests) != 1 or requests[0].length * NATIVE_PART_FRACTION > codec.chunk_bytes:
        return None
    return plan, requests[0]


async def read_native_part(
    layout: DatasetLayout, ref: ChunkRef, plan: ranges.PartPlan, request: ranges.Request, workers: Workers
) -> np.ndarray | None:
    data = await ref.source.get_range(ref.key, request.start, request.length)
    if data is None:
        return None  # never written: reads as fill, as a whole read would
    if len(data) < request.length:
        raise DataCorruption(f"chunk {ref.key} holds fewer bytes than its shape needs")
    box = np.empty(plan.nbytes, dtype=np.uint8)
    await workers.cpu(ranges.assemble, box, request, data, size=plan.nbytes)  # the copy is what it costs
    return elements_from_buffer(box.data, layout.dtype, plan.box_shape)[plan.box_selection]


POINT_GAP = 4096  # points of one chunk closer than this share one ranged read
MAX_POINT_RANGES = 256  # more ranges than this in one chunk: read the chunk whole
POINT_FRACTION = 4  # read points in part only when their ranges save 3/4 of the chunk's bytes


def point_ranges(layout: DatasetLayout, ref: ChunkRef, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The ranged reads (``(n, 2)`` start, length) that hold the points ``coords`` (``(k, rank)``,
    chunk-relative) of a whole-object, unfiltered chunk, and each point's element index in the
    concatenated ranges; None when a whole read is the better (or the only) way."""
    codec = layout.codec
    if ref.offset is not None or codec.variable or codec.reduced or codec.pipeline.filters or not layout.chunk_shape:
        return None
    if not _gets_ranges(ref.source):
        return None
    itemsize = layout.dtype.itemsize
    if coords.shape[0] * itemsize * POINT_FRACTION > codec.chunk_bytes:
        return None
    flat = np.ravel_multi_index(tuple(coords.T), layout.chunk_shape) * itemsize
    starts = np.unique(flat)
    breaks = np.flatnonzero(np.diff(starts) > POINT_GAP) + 1
    if breaks.size + 1 > MAX_POINT_RANGES:
        return None
    first = starts[np.concatenate(([0], breaks))]
    last = starts[np.concatenate((breaks - 1, [starts.size - 1]))] + itemsize
    lengths = last - first
    if int(lengths.sum()) * POINT_FRACTION > codec.chunk_bytes:
        return None
    base = np.concatenate(([0], np.cumsum(lengths)[:-1]))  # where each range lands when joined
    which = np.searchsorted(first, flat, side="right") - 1
    return np.stack((first, lengths), axis=1), (base[which] + flat - first[which]) // itemsize


async def read_point_ranges(
    layout: DatasetLayout, ref: ChunkRef, plan: tuple[np.ndarray, np.ndarray]
) -> np.ndarray | None:
    requests, elements = plan
    pieces = await ref.source.get_ranges(ref.key, requests.tolist())  # type: ignore[attr-defined]
    if pieces is None:
        return None  # never written: reads as fill, as a whole read would
    if any(len(piece) != n for piece, n in zip(pieces, requests[:, 1].tolist())):
        raise DataCorruption(f"chunk {ref.key} holds fewer bytes than its shape needs")
    joined = pieces[0] if len(pieces) == 1 else b"".join(pieces)
    return elements_from_buffer(joined, layout.dtype, (len(joined) // layout.dtype.itemsize,))[elements]


async def load_points(
    layout: DatasetLayout, p: PointProjection, workers: Workers, ref: ChunkRef | None = None
) -> np.ndarray | None:
    """The points of one chunk, from their own bytes when that is much less than the chunk.

    ``ref`` is the chunk's location when the caller has already looked it up."""
    if ref is None:
        ref = await layout.locator.locate(p.chunk_index)
    if ref is None:
        return None
    plan = point_ranges(layout, ref, p.chunk_coords)
    if plan is not None:
        return await read_point_ranges(layout, ref, plan)
    return await load_selected(layout, p.chunk_index, p.chunk_selection, workers, ref)


async def load_selected(
    layout: DatasetLayout,
    index: tuple[int, ...],
    chunk_selection: tuple[Any, ...],
    workers: Workers,
    ref: ChunkRef | None = None,
) -> np.ndarray | None:
    """``chunk[chunk_selection]`` of one chunk, or None when the chunk reads as fill.

    ``ref`` is the chunk's location when the caller has already looked it up."""
    if ref is None:
        ref = await layout.locator.locate(index)
    if ref is None:
        return None
    if reads_in_part(layout, ref) and not _here_whole(layout, ref):
        return await read_part(layout, ref, chunk_selection, workers)
    part = native_part(layout, ref, chunk_selection)
    if part is not None:
        return await read_native_part(layout, ref, *part, workers)
    stored = await fetch(ref)
    if stored is None:
        return None
    chunk = await workers.cpu(layout.codec.decode, stored, ref.filter_mask, size=len(stored) * 4)
    return chunk[chunk_selection]


# --- optional store capabilities ---------------------------------------------------------------

# isinstance() against a runtime-checkable Protocol walks the protocol's members each time (~10 us
# on Python 3.11, a few per cent of reading a cached chunk): the answer is kept per class.
_CAPABLE: dict[tuple[type, type], bool] = {}


def _capable(source: object, capability: type) -> bool:
    key = (type(source), capability)
    found = _CAPABLE.get(key)
    if found is None:
        found = _CAPABLE[key] = isinstance(source, capability)
    return found


def _reads_into(source: object) -> TypeGuard[ReadInto]:
    return _capable(source, ReadInto)


def _gets_ranges(source: object) -> TypeGuard[GetRanges]:
    return _capable(source, GetRanges)


def _puts_hashed(source: object) -> TypeGuard[PutHashed]:
    return _capable(source, PutHashed)


# --- reads ------------------------------------------------------------------------------------


async def read_selection(
    layout: DatasetLayout, selection: Selection, workers: Workers, out: np.ndarray | None = None
) -> np.ndarray:
    """The values of ``selection``, in ``out`` when given (shape ``selection.shape``, the
    layout's dtype: every element is written) or in a new array."""
    if out is None:
        out = np.empty(selection.shape, dtype=layout.dtype)
    direct = _stores_raw(layout)

    async def placed(p: ChunkProjection, ref: ChunkRef | None) -> None:
        if direct and ref is not None and p.is_complete_chunk and await _read_in_place(layout, ref, p, out):
            return
        part = None if ref is None else await load_selected(layout, p.chunk_index, p.chunk_selection, workers, ref)
        out[p.out_selection + (...,)] = layout.fill if part is None else part

    async def one(p: ChunkProjection) -> None:
        await placed(p, await layout.locator.locate(p.chunk_index))

    projections = project(selection, layout.shape, layout.chunk_shape, layout.origin)
    with lanes.bulk():
        if getattr(layout.locator, "ranged", False):
            await _each_read_ahead(layout, projections, workers, placed)
        else:
            await workers.each(projections, one)
    return out


# --- reading neighbouring byte-range chunks together --------------------------------------------

READ_AHEAD_CHUNK = 1024 * 1024  # ranged chunks up to this size are read together with neighbours
READ_AHEAD_PART = 64 * 1024  # ...also when only part of them is selected, up to this size
READ_AHEAD_WINDOW = 8 * 1024 * 1024  # bytes read ahead at once (two windows in flight)
READ_AHEAD_CHUNKS = 4096  # chunks in one window
LOCATE_BATCH = 64


class _ReadAhead:
    """One chunk's bytes, read together with its neighbours: answers the engine's ranged reads
    inside them (``read_part`` asks for pieces) and passes any other to the source."""

    def __init__(self, source: ByteRangeSource, offset: int, data: bytes) -> None:
        self.source = source
        self.offset = offset
        self.data = data

    async def get_range(self, key: str, offset: int, length: int) -> bytes | None:
        start = offset - self.offset
        if start == 0 and length == len(self.data):
            return self.data
        if 0 <= start and start + length <= len(self.data):
            return self.data[start : start + length]
        return await self.source.get_range(key, offset, length)


def _here_whole(layout: DatasetLayout, ref: ChunkRef) -> bool:
    """Whether a whole raw chunk's bytes were read ahead (then decoding beats ``read_part``; a
    contiguous dataset's last virtual chunk may be shorter, and is read in part)."""
    return isinstance(ref.source, _ReadAhead) and ref.length == layout.codec.chunk_bytes


def _ahead_bytes(layout: DatasetLayout, ref: ChunkRef | None, complete: bool) -> int:
    """How many bytes reading ``ref`` ahead takes, or 0 when it is read on its own."""
    if ref is None or ref.offset is None or not _gets_ranges(ref.source):
        return 0
    size = ref.length or 0
    if size > READ_AHEAD_CHUNK or (not complete and size > READ_AHEAD_PART and reads_in_part(layout, ref)):
        return 0  # a part of a large raw chunk: read_part reads just that part
    return size


async def _read_ahead(
    located: list[tuple[P, ChunkRef | None]], sizes: list[int], workers: Workers
) -> list[tuple[P, ChunkRef | None]]:
    """``located`` with the refs of neighbouring chunks (same object) read in one ``get_ranges``
    call per object, which merges them into few requests."""
    groups: dict[tuple[int, str], list[int]] = {}
    for i, ((_, ref), size) in enumerate(zip(located, sizes)):
        if size:
            assert ref is not None
            groups.setdefault((id(ref.source), ref.key), []).append(i)
    out = list(located)

    async def fetch(members: list[int]) -> None:
        refs = [located[i][1] for i in members]
        first = refs[0]
        assert first is not None
        pieces = await first.source.get_ranges(  # type: ignore[attr-defined]
            first.key, [(r.offset, r.length) for r in refs if r is not None]
        )
        if pieces is None:
            return  # missing: each chunk finds that out the usual way
        for i, ref, data in zip(members, refs, pieces):
            assert ref is not None and ref.offset is not None
            out[i] = (located[i][0], dataclasses.replace(ref, source=_ReadAhead(ref.source, ref.offset, data)))

    await workers.each((m for m in groups.values() if len(m) > 1), fetch)
    return out


async def _each_read_ahead(
    layout: DatasetLayout,
    projections: Iterable[P],
    workers: Workers,
    placed: Callable[[P, ChunkRef | None], Awaitable[None]],
) -> None:
    """``placed(p, ref)`` for every projection, in windows whose small byte-range chunks are
    read together (`_read_ahead`). Two stages: while one window's chunks are decoded and placed
    (``workers.limit`` at a time, as without read-ahead), the next window is fetched."""

    async def place(window: list[tuple[P, ChunkRef | None]]) -> None:
        await workers.each(window, lambda pair: placed(*pair))

    placing: asyncio.Future[None] | None = None
    fetching: asyncio.Future[list[tuple[P, ChunkRef | None]]] | None = None
    try:
        window: list[tuple[P, ChunkRef | None]] = []
        sizes: list[int] = []
        ahead = 0
        remaining = iter(projections)
        while True:
            batch = list(itertools.islice(remaining, LOCATE_BATCH))
            added = 0
            for p in batch:
                # one after another: a linked locator answers from memory, or from a table
                # chunk it reads once for many chunks; a task per chunk cost more than that
                ref = await layout.locator.locate(p.chunk_index)
                size = _ahead_bytes(layout, ref, getattr(p, "is_complete_chunk", False))
                window.append((p, ref))
                sizes.append(size)
                added += size
            ahead += added
            if window and (not batch or not added or ahead >= READ_AHEAD_WINDOW or len(window) >= READ_AHEAD_CHUNKS):
                fetching = asyncio.ensure_future(_read_ahead(window, sizes, workers))
                window, sizes, ahead = [], [], 0
                if placing is not None:
                    done, placing = placing, None
                    await done
                ready, fetching = fetching, None
                placing = asyncio.ensure_future(place(await ready))
            if not batch:
                break
        if placing is not None:
            done, placing = placing, None
            await done
    finally:
        pending = [f for f in (placing, fetching) if f is not None]
        for f in pending:
            f.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


def _stores_raw(layout: DatasetLayout) -> bool:
    """Whether a stored chunk is the C-order array itself (no filter, fixed size, full bits)."""
    codec = layout.codec
    return not (codec.pipeline.filters or codec.variable or codec.reduced or layout.dtype.shape)


def _whole_chunk(p: ChunkProjection, chunk_shape: tuple[int, ...]) -> bool:
    """Whether ``p`` takes the whole chunk in order, to or from a plain slice of the request's
    array (so ``array[p.out_selection]`` is a view shaped like the chunk, or an edge's part)."""
    if not chunk_shape or not all(isinstance(s, slice) for s in p.out_selection):
        return False  # a scalar's "view" would be a copy
    return all(
        isinstance(s, slice) and s.start in (0, None) and s.stop == c and s.step in (1, None)
        for s, c in zip(p.chunk_selection, chunk_shape)
    ) and len(p.chunk_selection) == len(chunk_shape)


async def _read_in_place(layout: DatasetLayout, ref: ChunkRef, p: ChunkProjection, out: np.ndarray) -> bool:
    """Read a whole raw chunk straight from the store into its place in ``out`` (one copy, no
    decode) when the chunk is selected whole and its place is one contiguous run of ``out``.
    False when that does not apply (the caller reads the usual way)."""
    if ref.offset is not None or not _reads_into(ref.source):
        return False
    if not _whole_chunk(p, layout.chunk_shape):
        return False
    place = out[p.out_selection]
    if place.shape != layout.chunk_shape or not place.flags.c_contiguous:
        return False
    size = await ref.source.read_into(ref.key, place.reshape(-1).view(np.uint8).data)
    if size is None:
        place[...] = layout.fill
    elif size != place.nbytes:
        raise DataCorruption(f"chunk holds {size} bytes, expected {place.nbytes}")
    return True


async def read_points(layout: DatasetLayout, points: PointSelection, workers: Workers) -> np.ndarray:
    out = np.empty((points.npoints,), dtype=layout.dtype)

    async def placed(p: PointProjection, ref: ChunkRef | None) -> None:
        part = None if ref is None else await load_points(layout, p, workers, ref)
        out[(p.out_positions, ...)] = layout.fill if part is None else part

    async def one(p: PointProjection) -> None:
        await placed(p, await layout.locator.locate(p.chunk_index))

    projections = project_points(points, layout.chunk_shape, layout.origin)
    with lanes.bulk():
        if getattr(layout.locator, "ranged", False):
            await _each_read_ahead(layout, projections, workers, placed)
        else:
            await workers.each(projections, one)
    return out


class Blocks(Sequence[Selection]):
    """The pieces of a split selection, made on demand.

    Dimensions before ``dim`` are taken one index at a time and ``dim`` in runs of ``per_block``
    selected indexes; later dimensions are whole. A selection of 10**9 rows has 10**9 pieces,
    so planning costs nothing until a piece is asked for (and memory stays bounded).
    """

    def __init__(self, selection: Selection, dim: int, per_block: int) -> None:
        self.selection = selection
        self.dim = dim
        self.per_block = per_block
        parts = selection.parts
        self._outer = [p.count for p in parts[:dim]]
        self._runs = -(-parts[dim].count // per_block)
        self._len = math.prod(self._outer) * self._runs

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> Selection: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Selection]: ...

    def __getitem__(self, i: int | slice) -> Selection | Sequence[Selection]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._len))]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError(i)
        outer, run = divmod(i, self._runs)
        parts = list(self.selection.parts)
        for d in range(self.dim - 1, -1, -1):
            outer, j = divmod(outer, self._outer[d])
            p = parts[d]
            assert isinstance(p, Slice)
            index = p.start + j * p.step
            parts[d] = Slice(index, index + 1)
        p = parts[self.dim]
        assert isinstance(p, Slice)
        count = min(self.per_block, p.count - run * self.per_block)
        start = p.start + run * self.per_block * p.step
        parts[self.dim] = Slice(start, start + (count - 1) * p.step + 1, p.step)
        return Selection(tuple(parts))


def blocks(selection: Selection, chunk_rows: int, row_bytes: int, max_bytes: int) -> Sequence[Selection]:
    """Split a regular selection into pieces of about ``max_bytes`` output, in C order, so a huge
    read or write streams in order with bounded memory (``row_bytes`` is one first-dimension
    row's bytes in the output).

    Pieces are cut along the first dimension, at chunk boundaries whenever one row of chunks
    fits in four times ``max_bytes``, so that a streamed write replaces whole chunks instead of
    rewriting each chunk once per piece. When a single row is larger than ``max_bytes`` the cut
    moves inward, one index at a time on the outer dimensions.
    """
    if selection.rank == 0 or not isinstance(selection.parts[0], Slice):
        return [selection]
    first = selection.parts[0]
    if first.count * row_bytes <= max_bytes:
        return [selection]
    row_bytes = max(1, row_bytes)
    if row_bytes > max_bytes:
        return _inner_blocks(selection, row_bytes, max_bytes)
    rows_per_chunk_row = max(1, -(-chunk_rows // first.step))  # selected rows per row of chunks
    if rows_per_chunk_row * row_bytes <= 4 * max_bytes and first.start % chunk_rows == 0:
        rows_per_block = rows_per_chunk_row * max(1, max_bytes // (rows_per_chunk_row * row_bytes))
    else:
        rows_per_block = max(1, max_bytes // row_bytes)
    return Blocks(selection, 0, rows_per_block)


def _inner_blocks(selection: Selection, row_bytes: int, max_bytes: int) -> Sequence[Selection]:
    """Pieces of a selection whose single rows exceed ``max_bytes``: the first dimension whose
    one index fits decides the cut (regular parts only; otherwise the largest regular prefix)."""
    parts = selection.parts
    inner = row_bytes  # bytes of one index of dimension ``dim``
    dim = 0
    while inner > max_bytes and dim + 1 < len(parts) and isinstance(parts[dim + 1], Slice):
        dim += 1
        inner //= max(1, parts[dim].count)
    return Blocks(selection, dim, max(1, max_bytes // max(1, inner)))


async def stream_selection(
    layout: DatasetLayout,
    selection: Selection,
    workers: Workers,
    encode: Callable[[np.ndarray], bytes | memoryview],
    block_bytes: int,
) -> AsyncIterator[bytes | memoryview]:
    """Yield the encoded selection block by block, reading the next block while one is sent.

    A block made larger than ``block_bytes`` to hold whole rows of chunks (up to four times)
    is sent before the next is read: two of them at once would pass the memory bound."""
    pieces = row_split(selection, layout, block_bytes)

    def read(piece: Selection) -> asyncio.Task[np.ndarray]:
        out = BLOCKS.array(piece.shape, layout.dtype)  # a kept block: no page faults
        return asyncio.ensure_future(read_selection(layout, piece, workers, out))

    pending: asyncio.Task[np.ndarray] | None = read(pieces[0])
    try:
        for i in range(len(pieces)):
            assert pending is not None
            arr = await pending
            pending = None
            more = i + 1 < len(pieces)
            if more and arr.nbytes <= block_bytes:
                pending = read(pieces[i + 1])
            yield await workers.cpu(encode, arr, size=arr.nbytes)
            del arr  # sent: not held while the next block is read
            if more and pending is None:
                pending = read(pieces[i + 1])
    finally:
        if pending is not None:
            pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)


# --- writes -----------------------------------------------------------------------------------


def _native(layout: DatasetLayout) -> NativeChunks:
    """The chunks a write replaces. Whether a dataset may be written is the service's decision
    (made before any write starts); this only guards against a locator that cannot be written."""
    if not isinstance(layout.locator, NativeChunks) or not layout.locator.writable:
        raise ReadOnly(f"the chunks of {layout.dataset_id} cannot be written")
    return layout.locator


async def update_chunk(
    layout: DatasetLayout,
    index: tuple[int, ...],
    modify: Callable[[np.ndarray], bool | None],
    complete: bool,
    workers: Workers,
    whole: np.ndarray | None = None,
) -> None:
    """Apply ``modify`` to one chunk and store it durably, without losing concurrent updates.

    ``modify`` changes the chunk in place; it returns False when it changed nothing, and then
    nothing is written. On a lost race it runs again on the chunk as it is now. ``whole``, when
    given, is what ``modify`` would make of a complete chunk (the new values, chunk-shaped).
    """
    chunks = _native(layout)
    key = chunks.key(index)
    store = chunks.store
    if complete:
        interior = layout.is_interior(index)

        if interior and whole is not None and whole.shape == layout.chunk_shape + layout.dtype.shape:
            # the new values are the chunk: encoded from the caller's array (a view when raw)
            await store.put(key, await workers.cpu(layout.codec.encode, whole, size=layout.codec.chunk_bytes))
            return

        def build() -> bytes | memoryview:
            # A chunk inside the dataset is overwritten whole: no fill pass. An edge chunk
            # keeps fill beyond the dataset's extent.
            chunk = np.empty(layout.chunk_shape, dtype=layout.dtype) if interior else layout.empty_chunk()
            modify(chunk)
            return layout.codec.encode(chunk)

        data = await workers.cpu(build, size=layout.codec.chunk_bytes)
        await store.put(key, data)
        return
    for attempt in range(_MAX_RETRIES):
        blob = await store.get(key)
        if blob is None:
            base = await chunks.original(index)
            chunk = layout.empty_chunk() if base is None else (
                await workers.cpu(layout.codec.decode, base, 0, size=len(base) * 4)
            ).copy()
        else:
            chunk = (await workers.cpu(layout.codec.decode, blob.data, 0, size=len(blob.data) * 4)).copy()
        if modify(chunk) is False:
            return
        data = await workers.cpu(layout.codec.encode, chunk, size=chunk.nbytes)
        try:
            if blob is None:
                await store.put(key, data, if_none_match=True)
            else:
                await store.put(key, data, if_match=blob.etag)
            return
        except PreconditionFailed:
            await asyncio.sleep(random.uniform(0, 0.001 * (attempt + 1)))
    raise Conflict(f"chunk {index} is being written too often; try again")


HASH_WINDOW = 16  # whole chunks of a write encoded and hashed in one call on the CPU pool, then stored


async def write_selection(
    layout: DatasetLayout, selection: Selection, values: np.ndarray, workers: Workers
) -> list[tuple[int, ...]]:
    """Store ``values`` (shape ``selection.shape``); returns the chunk indexes written.

    Whole chunks stored as they are (no filter) go to a store that takes a known MD5
    (``PutHashed``) in windows of ``HASH_WINDOW``: each window's chunks are made contiguous
    (a view when they already are) and hashed together in one call on the CPU pool
    (``md5_hex_many``), the next window while this one is stored."""
    chunks = _native(layout)
    written: list[tuple[int, ...]] = []
    raw = not layout.dtype.shape and values.shape == selection.shape
    store = chunks.store

    async def one(item: tuple[ChunkProjection, str | None, bytes | memoryview | None]) -> None:
        p, md5, data = item
        if md5 is not None and data is not None:
            assert _puts_hashed(store)
            await store.put_hashed(chunks.key(p.chunk_index), data, md5)
        else:
            whole = values[p.out_selection] if raw and p.is_complete_chunk and _whole_chunk(p, layout.chunk_shape) else None

            def modify(chunk: np.ndarray) -> None:
                chunk[p.chunk_selection] = values[p.out_selection]

            await update_chunk(layout, p.chunk_index, modify, p.is_complete_chunk, workers, whole)
        written.append(p.chunk_index)

    projections = project(selection, layout.shape, layout.chunk_shape, layout.origin)
    if not (raw and _stores_raw(layout) and _puts_hashed(store)):
        with lanes.bulk():
            await workers.each(((p, None, None) for p in projections), one)
        return written

    def prepare(window: list[ChunkProjection]) -> list[tuple[ChunkProjection, str | None, bytes | memoryview | None]]:
        direct = [i for i, p in enumerate(window) if _stored_as_is(layout, p, values)]
        buffers = [layout.codec.encode(values[window[i].out_selection]) for i in direct]
        items: list[tuple[ChunkProjection, str | None, bytes | memoryview | None]] = [(p, None, None) for p in window]
        for i, data, md5 in zip(direct, buffers, md5_hex_many(buffers)):
            items[i] = (window[i], md5, data)
        return items

    async def next_window() -> list[tuple[ChunkProjection, str | None, bytes | memoryview | None]]:
        window = list(itertools.islice(projections, HASH_WINDOW))
        return await workers.cpu(prepare, window, size=len(window) * layout.codec.chunk_bytes) if window else []

    with lanes.bulk():
        pending: asyncio.Task[list[Any]] | None = asyncio.ensure_future(next_window())
        try:
            while pending is not None:
                items = await pending
                pending = asyncio.ensure_future(next_window()) if len(items) == HASH_WINDOW else None
                await workers.each(items, one)
                del items
        finally:
            if pending is not None:
                pending.cancel()
                await asyncio.gather(pending, return_exceptions=True)
    return written


def _stored_as_is(layout: DatasetLayout, p: ChunkProjection, values: np.ndarray) -> bool:
    """Whether chunk ``p`` is a whole chunk inside the extent, taken from a plain slice of
    ``values`` shaped like it: its bytes are that slice made contiguous, known before it is
    stored (so its MD5 can be taken with others')."""
    if not (p.is_complete_chunk and _whole_chunk(p, layout.chunk_shape) and layout.is_interior(p.chunk_index)):
        return False
    return values[p.out_selection].shape == layout.chunk_shape


async def write_points(
    layout: DatasetLayout, points: PointSelection, values: np.ndarray, workers: Workers
) -> list[tuple[int, ...]]:
    _native(layout)
    written: list[tuple[int, ...]] = []

    async def one(p: PointProjection) -> None:
        def modify(chunk: np.ndarray) -> None:
            chunk[p.chunk_selection] = values[p.out_positions]

        await update_chunk(layout, p.chunk_index, modify, False, workers)
        written.append(p.chunk_index)

    with lanes.bulk():
        await workers.each(project_points(points, layout.chunk_shape, layout.origin), one)
    return written


def row_split(selection: Selection, layout: DatasetLayout, max_bytes: int) -> Sequence[Selection]:
    row_elems = 1
    for n in selection.shape[1:]:
        row_elems *= n
    return blocks(
        selection, layout.chunk_shape[0] if layout.chunk_shape else 1, row_elems * layout.dtype.itemsize, max_bytes
    )
