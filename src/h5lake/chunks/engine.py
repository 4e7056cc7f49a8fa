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
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, TypeVar

import numpy as np

from h5lake.chunks import chunkspans as ranges
from h5lake.chunks.blocks import row_split
from h5lake.chunks.buffers import BufferPool
from h5lake.chunks.capability import gets_ranges, reads_into
from h5lake.chunks.dataset import DatasetLayout
from h5lake.chunks.fanout import Workers, bounded
from h5lake.chunks.locate import ChunkRef, lists_written, reads_ranged
from h5lake.chunks.ranged import each_read_ahead, here_whole, reads_in_part
from h5lake.errors import DataCorruption
from h5lake.model.distinct import distinct
from h5lake.model.projection import (
    ChunkProjection,
    PointProjection,
    Projections,
    plan,
    project_points,
)
from h5lake.model.selection import PointSelection, Selection
from h5lake.model.types import elements_from_buffer
from h5lake.storage import lanes

log = logging.getLogger(__name__)

P = TypeVar("P", ChunkProjection, PointProjection)

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
    found = elements_from_buffer(box.data, layout.dtype, plan.box_shape)
    return await workers.cpu(_pick, found, plan.box_selection, size=_picking_work(plan.box_selection))


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
    if (
        ref.offset is not None
        or codec.variable
        or codec.reduced
        or codec.pipeline.filters
        or not layout.chunk_shape
    ):
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


def point_ranges(
    layout: DatasetLayout, ref: ChunkRef, coords: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The ranged reads (``(n, 2)`` start, length) that hold the points ``coords`` (``(k, rank)``,
    chunk-relative) of a whole-object, unfiltered chunk, and each point's element index in the
    concatenated ranges; None when a whole read is the better (or the only) way."""
    codec = layout.codec
    if (
        ref.offset is not None
        or codec.variable
        or codec.reduced
        or codec.pipeline.filters
        or not layout.chunk_shape
    ):
        return None
    if not gets_ranges(ref.source):
        return None
    itemsize = layout.dtype.itemsize
    if coords.shape[0] * itemsize * POINT_FRACTION > codec.chunk_bytes:
        return None
    flat = np.ravel_multi_index(tuple(coords.T), layout.chunk_shape) * itemsize
    starts = distinct(flat)
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
    layout: DatasetLayout, ref: ChunkRef, plan: tuple[np.ndarray, np.ndarray], workers: Workers
) -> np.ndarray | None:
    requests, elements = plan
    pieces = await ref.source.get_ranges(ref.key, requests.tolist())  # type: ignore[attr-defined]
    if pieces is None:
        return None  # never written: reads as fill, as a whole read would
    if any(len(piece) != n for piece, n in zip(pieces, requests[:, 1].tolist())):
        raise DataCorruption(f"chunk {ref.key} holds fewer bytes than its shape needs")
    joined = pieces[0] if len(pieces) == 1 else b"".join(pieces)
    found = elements_from_buffer(joined, layout.dtype, (len(joined) // layout.dtype.itemsize,))
    return await workers.cpu(_pick, found, (elements,), size=POINT_WORK * elements.size)


async def load_points(
    layout: DatasetLayout, p: PointProjection, workers: Workers, ref: ChunkRef | None = None
) -> np.ndarray | None:
    """The points of one chunk, from their own bytes when that is much less than the chunk.

    ``ref`` is the chunk's location when the caller has already looked it up."""
    if ref is None:
        ref = await layout.locator.locate(p.chunk_index)
    if ref is None:
        return None
    # sorting the points' offsets: on the CPU pool for many points, as their grouping is
    plan = await workers.cpu(point_ranges, layout, ref, p.chunk_coords, size=POINT_WORK * p.chunk_coords.shape[0])
    if plan is not None:
        return await read_point_ranges(layout, ref, plan, workers)
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
    if reads_in_part(layout, ref) and not here_whole(layout, ref):
        return await read_part(layout, ref, chunk_selection, workers)
    part = native_part(layout, ref, chunk_selection)
    if part is not None:
        return await read_native_part(layout, ref, *part, workers)
    stored = await fetch(ref)
    if stored is None:
        return None
    chunk = await workers.cpu(layout.codec.decode, stored, ref.filter_mask, size=len(stored) * 4)
    return await workers.cpu(_pick, chunk, chunk_selection, size=_picking_work(chunk_selection))


def _pick(array: np.ndarray, selection: tuple[Any, ...]) -> np.ndarray:
    # the Ellipsis keeps an array where every index is an integer: ``chunk[()]`` of a scalar
    # dataset of a variable-length type would be its element (a sequence), not a 0-d array
    return array[(*selection, ...)]


def _picking_work(selection: tuple[Any, ...]) -> int:
    """Bytes of work of ``_pick``: slices make a view, index arrays (points, coordinate lists)
    a copy of as many elements."""
    return sum(POINT_WORK * s.size for s in selection if isinstance(s, np.ndarray))


def _place(out: np.ndarray, positions: np.ndarray, value: Any) -> None:
    out[(positions, ...)] = value


# --- optional store capabilities ---------------------------------------------------------------


# isinstance() against a runtime-checkable Protocol walks the protocol's members each time (~10 us
# on Python 3.11, a few per cent of reading a cached chunk): the answer is kept per class.
async def read_selection(
    layout: DatasetLayout, selection: Selection, workers: Workers, out: np.ndarray | None = None
) -> np.ndarray:
    """The values of ``selection``, in ``out`` when given (shape ``selection.shape``, the
    layout's dtype: every element is written) or in a new array."""
    if out is None:
        out = np.empty(selection.shape, dtype=layout.dtype)
    direct = stores_raw(layout)

    async def placed(p: ChunkProjection, ref: ChunkRef | None) -> None:
        if direct and ref is not None and p.is_complete_chunk and await _read_in_place(layout, ref, p, out):
            return
        part = (
            None
            if ref is None
            else await load_selected(layout, p.chunk_index, p.chunk_selection, workers, ref)
        )
        out[p.out_selection + (...,)] = layout.fill if part is None else part

    async def one(p: ChunkProjection) -> None:
        await placed(p, await layout.locator.locate(p.chunk_index))

    projections = await _maybe_written(
        layout, plan(selection, layout.shape, layout.chunk_shape, layout.origin), out
    )
    with lanes.bulk():
        if reads_ranged(layout.locator):
            await each_read_ahead(layout, projections, workers, placed)
        else:
            await workers.each(projections, one)
    return out


SPARSE_AFTER = 256  # a read touching more chunks first asks the locator which may exist


async def _maybe_written(
    layout: DatasetLayout, projections: Projections, out: np.ndarray
) -> Iterable[ChunkProjection]:
    """The projections whose chunks may exist, after filling ``out`` for all, when the read touches
    more than SPARSE_AFTER chunks and the locator can tell (`ListsWritten`) at that price; else
    all. So a read of many chunks never written costs a few store calls, not one miss (and a
    task and a projection) per chunk."""
    if not lists_written(layout.locator) or projections.count <= SPARSE_AFTER:
        return projections
    known = await layout.locator.written(layout.domain, projections.count)
    if known is None:
        return projections
    out[...] = layout.fill
    return projections.only(known)


async def _points_written(
    layout: DatasetLayout, projections: Iterable[PointProjection], out: np.ndarray
) -> Iterable[PointProjection]:
    """`_maybe_written` for points (grouped per chunk already, so the projections are listed)."""
    if not lists_written(layout.locator):
        return projections
    listed = list(projections)
    if len(listed) <= SPARSE_AFTER:
        return listed
    known = await layout.locator.written(layout.domain, len(listed))
    if known is None:
        return listed
    out[...] = layout.fill
    return [p for p in listed if p.chunk_index in known]


def stores_raw(layout: DatasetLayout) -> bool:
    """Whether a stored chunk is the C-order array itself (no filter, fixed size, full bits)."""
    codec = layout.codec
    return not (codec.pipeline.filters or codec.variable or codec.reduced or layout.dtype.shape)


def whole_chunk(p: ChunkProjection, chunk_shape: tuple[int, ...]) -> bool:
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
    if ref.offset is not None or not reads_into(ref.source):
        return False
    if not whole_chunk(p, layout.chunk_shape):
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
        value = layout.fill if part is None else part
        await workers.cpu(_place, out, p.out_positions, value, size=POINT_WORK * p.out_positions.size)

    async def one(p: PointProjection) -> None:
        await placed(p, await layout.locator.locate(p.chunk_index))

    grouped = await group_points(points, layout, workers)
    projections = await _points_written(layout, grouped, out)
    with lanes.bulk():
        if reads_ranged(layout.locator):
            await each_read_ahead(layout, projections, workers, placed)
        else:
            await workers.each(projections, one)
    return out


POINT_WORK = 16  # bytes of work counted per point (their coordinates and position), for Workers.cpu


async def group_points(points: PointSelection, layout: DatasetLayout, workers: Workers) -> list[PointProjection]:
    """``points`` grouped by chunk. Grouping millions of points is seconds of sorting (numpy
    lets go of the interpreter for it): on the CPU pool, so the event loop serves others."""
    return await workers.cpu(_grouped_points, points, layout, size=POINT_WORK * points.npoints)


def _grouped_points(points: PointSelection, layout: DatasetLayout) -> list[PointProjection]:
    return list(project_points(points, layout.chunk_shape, layout.origin))


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

    with BLOCKS.streaming():  # blocks kept until the last stream ends
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
