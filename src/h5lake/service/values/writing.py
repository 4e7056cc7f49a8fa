"""Writing values: a chunk write between the catalog's intent and its note (``recorded``), and a
packed body of any size streamed block by block into the chunks (``write_stream``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from h5lake.chunks import engine, writes
from h5lake.chunks.blocks import row_split
from h5lake.chunks.dataset import DatasetLayout
from h5lake.errors import InvalidInput
from h5lake.model.projection import project
from h5lake.model.selection import Selection, Slice
from h5lake.model.types import elements_from_buffer, item_size, wire_dtype
from h5lake.service.context import Service
from h5lake.service.datasets import compact
from h5lake.service.datasets.dataset_layout import native_layout
from h5lake.service.datasets.linked import is_chunk_table, register_table_sources
from h5lake.service.datasets.opened import OpenDataset
from h5lake.service.values.requests import PackedBody

Ready = Callable[[], Awaitable[object]]


def wire_size(ds: OpenDataset) -> int:
    """Bytes per element in a binary body (packed, unlike a compound with explicit offsets)."""
    size = item_size(ds.type_json)
    if size is None:
        raise InvalidInput("variable-length values have no fixed size")
    return size


async def recorded(
    svc: Service,
    ds: OpenDataset,
    layout: DatasetLayout,
    indexes: list[tuple[int, ...]],
    work: Callable[[DatasetLayout], Awaitable[Any]],
    written: Callable[[], list[tuple[int, ...]]] | None = None,
    staged: Callable[[DatasetLayout, Ready], Awaitable[Any]] | None = None,
) -> None:
    """Run a chunk write between the catalog's durable intent and its note of what changed
    (``written()``, when given, narrows the chunks ``indexes`` the write may touch).
    ``staged``, when given, is the write run while the intent is written: it awaits its
    ``ready()`` before it places anything (``writes.write_selection``'s ``ready``).

    A compact dataset's write is instead one conditional update of its document (no chunk
    object, no intent), unless its values moved to chunk objects meanwhile."""
    if compact.is_compact(ds.doc):
        moved = await compact.write(svc, ds.domain, ds.doc, ds.etag, ds.id, work)
        if moved is None:
            return
        moved_layout = native_layout(ds.domain, moved)
        assert moved_layout is not None
        layout = moved_layout
    async with svc.catalog.recording(layout.domain, layout.dataset_id, indexes, early=staged is not None) as rec:
        await (work(layout) if staged is None else staged(layout, rec.ready))
        if written:
            rec.written = written()


def chunks_of(layout: DatasetLayout, sel: Selection) -> list[tuple[int, ...]]:
    return [p.chunk_index for p in project(sel, layout.shape, layout.chunk_shape, layout.origin)]


async def chunks_in(svc: Service, layout: DatasetLayout, sel: Selection) -> list[tuple[int, ...]]:
    """`chunks_of`, on the CPU pool for a selection of more than a few thousand elements: a
    write of 100,000 chunks spent ~0.3-0.5 s of the event loop listing them (docs/security.md,
    "Wide objects")."""
    return await svc.workers.cpu(chunks_of, layout, sel, size=sel.count * 16)


async def register_linked_files(svc: Service, ds: OpenDataset, values: np.ndarray) -> None:
    """A linked dataset's chunk table names files: check and record them before storing."""
    if is_chunk_table(ds.doc):
        await register_table_sources(svc, ds.doc, values)


async def write_stream(
    svc: Service,
    ds: OpenDataset,
    layout: DatasetLayout,
    selection: Selection | None,
    body: PackedBody,
    block_bytes: int,
) -> None:
    """Write a packed body of any size block by block as it arrives (fixed-size types only).

    Memory stays bounded by one block: the body is never held whole, so the request-size limit
    (which bounds buffered bodies) does not apply; the selection bounds the body instead.
    The body is read straight into each block when it can be (``PackedBody.readinto``).
    """
    sel = selection if selection is not None else Selection.all(layout.shape)
    itemsize = wire_size(ds)
    wire = wire_dtype(ds.type_json)
    expected = sel.count * itemsize
    readinto = _body_reader(body)
    pieces = row_split(sel, layout, block_bytes)
    # Two blocks at a time: one block's chunks are stored while the next block of the body is
    # received into another (one at a time when a block is larger than ``block_bytes``). Blocks
    # are kept ones (engine.BLOCKS: fresh memory would cost a page fault and a zero fill per 4
    # KiB); a block is free again once its chunks are stored and its views dropped. One catalog intent covers the whole request (it names every chunk the
    # selection touches); each block's chunks are noted once stored.
    one_intent = await _intent_chunks(svc, ds, layout, sel)
    async with contextlib.AsyncExitStack() as stack:
        rec = None if one_intent is None else await stack.enter_async_context(
            svc.catalog.recording(layout.domain, layout.dataset_id, one_intent, early=True))
        written = await _stream_blocks(svc, ds, layout, readinto, pieces, None if rec is None else rec.ready, wire,
                                       itemsize, expected, block_bytes)
        if rec is not None:
            rec.written = written


async def _stream_blocks(svc: Service, ds: OpenDataset, layout: DatasetLayout, readinto: Reader,
                         pieces: Sequence[Selection], intent_ready: Ready | None, wire: np.dtype[Any], itemsize: int,
                         expected: int, block_bytes: int) -> list[tuple[int, ...]]:
    """The blocks of a streamed write, each stored while the next is received; returns the chunks
    of the last block when one intent covers the whole write (``intent_ready``, that intent's ``ready``; the
    caller notes them with it; the first block is written while the intent is)."""
    received = 0
    storing: asyncio.Future[list[tuple[int, ...]]] | None = None

    async def store_block(values: np.ndarray, piece: Selection, last: bool) -> list[tuple[int, ...]]:
        await register_linked_files(svc, ds, values)
        if intent_ready is None:
            work = lambda at: writes.write_selection(at, piece, values, svc.workers)
            staged = lambda at, ready: writes.write_selection(at, piece, values, svc.workers, ready)
            await recorded(svc, ds, layout, await chunks_in(svc, layout, piece), work, staged=staged)
            return []
        written = await writes.write_selection(layout, piece, values, svc.workers, intent_ready)
        if not last:  # the last block's chunks are noted with the intent, once all went well
            svc.catalog.note(layout.domain, layout.dataset_id, written)
        return written

    held = 0  # bytes of the block being stored
    with engine.BLOCKS.streaming():  # blocks kept until the last stream ends
        try:
            for i, piece in enumerate(pieces):
                need = piece.count * itemsize
                if storing is not None and max(need, held) > block_bytes:
                    # a block made larger to hold a whole row of chunks (up to four times): stored
                    # before the next is received, as two of them would pass the memory bound
                    done, storing = storing, None
                    await done
                block = engine.BLOCKS.array((need,), np.dtype(np.uint8)).data
                got = await readinto(block)
                received += got
                if got < need:
                    raise InvalidInput(f"body has {received} bytes, expected {expected}")
                if received == expected and await readinto(memoryview(bytearray(1))):
                    raise InvalidInput(f"body has more than the {expected} bytes the selection needs")
                values = elements_from_buffer(block, wire, piece.shape)
                if wire != layout.dtype:
                    values = values.astype(layout.dtype.base)
                if storing is not None:
                    done, storing = storing, None
                    await done
                storing = asyncio.ensure_future(store_block(values, piece, i + 1 == len(pieces)))
                held = need
                del block, values
            written: list[tuple[int, ...]] = []
            if storing is not None:
                done, storing = storing, None
                written = await done
            return written
        finally:
            if storing is not None:  # the body failed: the block being stored is stored, then the error
                await asyncio.gather(storing, return_exceptions=True)


ONE_INTENT_CHUNKS = 4096  # a streamed write touching at most this many chunks has one intent


async def _intent_chunks(svc: Service, ds: OpenDataset, layout: DatasetLayout,
                         sel: Selection) -> list[tuple[int, ...]] | None:
    """The chunks of the one catalog intent of a whole streamed write, or None when each block
    records its own:
    a compact dataset's block is one conditional update of its document, and a write over more
    chunks than ``ONE_INTENT_CHUNKS`` would make its intent (and a recovery) too large."""
    if compact.is_compact(ds.doc) or not layout.chunk_shape:
        return None
    box = 1
    for part, c in zip(
        sel.parts, layout.chunk_shape
    ):  # chunks of the box around the selection, +1 for an origin
        if not isinstance(part, Slice):
            return None
        box *= part.last // c - part.start // c + 2 if part.count else 1
    if box > ONE_INTENT_CHUNKS:
        return None
    return await chunks_in(svc, layout, sel)


Reader = Callable[[memoryview], Awaitable[int]]


def _body_reader(body: PackedBody) -> Reader:
    """``await readinto(view)``: fills ``view`` with the body's next bytes (fewer only at its
    end); the body's own ``readinto`` when it has one, else copied from its pieces."""
    direct = getattr(body, "readinto", None)
    if direct is not None:
        return direct
    it = body.stream().__aiter__()
    left = memoryview(b"")

    async def readinto(view: memoryview) -> int:
        nonlocal left
        filled = 0
        while filled < len(view):
            if not left:
                try:
                    left = memoryview(await it.__anext__())
                except StopAsyncIteration:
                    break
            take = min(len(left), len(view) - filled)
            view[filled : filled + take] = left[:take]
            left = left[take:]
            filled += take
        return filled

    return readinto
