"""Writes of selections and points into a dataset's chunks: whole chunks written as they are,
partial chunks read, modified and written back under the chunk's ETag (``update_chunk``). The
reads they share live in ``chunks/engine.py``."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

from h5lake.chunks.capability import puts_hashed
from h5lake.chunks.dataset import DatasetLayout
from h5lake.chunks.engine import POINT_WORK, group_points, stores_raw, whole_chunk
from h5lake.chunks.fanout import Workers
from h5lake.chunks.locate import NativeChunks
from h5lake.errors import Conflict, ReadOnly
from h5lake.model.projection import (
    ChunkProjection,
    PointProjection,
    project,
)
from h5lake.model.selection import PointSelection, Selection
from h5lake.storage import lanes
from h5lake.storage.base import PreconditionFailed
from h5lake.storage.md5 import md5_hex_many

_MAX_RETRIES = 100  # conditional replaces of one chunk lost to concurrent writers before giving up


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
    work: int = 0,
) -> None:
    """Apply ``modify`` to one chunk and store it durably, without losing concurrent updates.

    ``modify`` changes the chunk in place; it returns False when it changed nothing, and then
    nothing is written. On a lost race it runs again on the chunk as it is now. ``whole``, when
    given, is what ``modify`` would make of a complete chunk (the new values, chunk-shaped).
    ``modify`` runs on the CPU pool when the chunk, or ``work`` (bytes of work it does beyond
    the chunk's size, e.g. millions of points), is large: it may evaluate a query over the
    whole chunk or scatter millions of values, seconds the event loop would otherwise hold.
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

        data = await workers.cpu(build, size=max(layout.codec.chunk_bytes, work))
        await store.put(key, data)
        return
    for attempt in range(_MAX_RETRIES):
        blob = await store.get(key)
        if blob is None:
            base = await chunks.original(index)
            chunk = (
                layout.empty_chunk()
                if base is None
                else (await workers.cpu(layout.codec.decode, base, 0, size=len(base) * 4)).copy()
            )
        else:
            chunk = (await workers.cpu(layout.codec.decode, blob.data, 0, size=len(blob.data) * 4)).copy()
        if await workers.cpu(modify, chunk, size=max(chunk.nbytes, work)) is False:
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
HASH_WINDOW_BYTES = 8 * 1024 * 1024  # and at most this many bytes of them (at least one chunk): two
# windows are held at once, copies when the chunks are not contiguous in the values


async def write_selection(
    layout: DatasetLayout, selection: Selection, values: np.ndarray, workers: Workers,
    ready: Callable[[], Awaitable[object]] | None = None,
) -> list[tuple[int, ...]]:
    """Store ``values`` (shape ``selection.shape``); returns the chunk indexes written. With
    ``ready`` (the catalog's intent being written, ``ChunkCatalog.recording(early=True)``),
    nothing is placed in the store before ``ready()`` returns: whole chunks are encoded, hashed
    and written (``put_hashed_many``'s ``ready``) meanwhile, other chunks wait for it.

    Whole chunks stored as they are (no filter) go to a store that takes a known MD5
    (``PutHashed``) in windows of ``HASH_WINDOW``: each window's chunks are made contiguous
    (a view when they already are) and hashed together in one call on the CPU pool
    (``md5_hex_many``), the next window while this one is stored, all of a window's in one
    ``put_hashed_many`` (one folder fsync for the window, not one per chunk)."""
    chunks = _native(layout)
    written: list[tuple[int, ...]] = []
    raw = not layout.dtype.shape and values.shape == selection.shape
    store = chunks.store

    async def one(item: tuple[ChunkProjection, str | None, bytes | memoryview | None]) -> None:
        p = item[0]
        whole = (
            values[p.out_selection]
            if raw and p.is_complete_chunk and whole_chunk(p, layout.chunk_shape)
            else None
        )

        def modify(chunk: np.ndarray) -> None:
            chunk[(*p.chunk_selection, ...)] = values[(*p.out_selection, ...)]

        await update_chunk(layout, p.chunk_index, modify, p.is_complete_chunk, workers, whole)
        written.append(p.chunk_index)

    async def store_window(items: list[tuple[ChunkProjection, str | None, bytes | memoryview | None]]) -> None:
        """The window's hashed chunks in one ``put_hashed_many`` (their names made durable
        together), the others one by one."""
        assert puts_hashed(store)
        hashed = [(p, md5, data) for p, md5, data in items if md5 is not None and data is not None]
        others = [item for item in items if item[1] is None or item[2] is None]
        if hashed:
            puts = [(chunks.key(p.chunk_index), data, md5) for p, md5, data in hashed]
            await (store.put_hashed_many(puts) if ready is None else store.put_hashed_many(puts, ready))
            written.extend(p.chunk_index for p, _, _ in hashed)
        if others:
            if ready is not None:
                await ready()
            await workers.each(others, one)

    projections = project(selection, layout.shape, layout.chunk_shape, layout.origin)
    if not (raw and stores_raw(layout) and puts_hashed(store)):
        if ready is not None:
            await ready()
        with lanes.bulk():
            await workers.each(((p, None, None) for p in projections), one)
        return written

    def prepare(
        window: list[ChunkProjection],
    ) -> list[tuple[ChunkProjection, str | None, bytes | memoryview | None]]:
        direct = [i for i, p in enumerate(window) if _stored_as_is(layout, p, values)]
        buffers = [layout.codec.encode(values[window[i].out_selection]) for i in direct]
        items: list[tuple[ChunkProjection, str | None, bytes | memoryview | None]] = [
            (p, None, None) for p in window
        ]
        for i, data, md5 in zip(direct, buffers, md5_hex_many(buffers)):
            items[i] = (window[i], md5, data)
        return items

    per_window = max(1, min(HASH_WINDOW, HASH_WINDOW_BYTES // max(1, layout.codec.chunk_bytes)))

    async def next_window() -> list[tuple[ChunkProjection, str | None, bytes | memoryview | None]]:
        window = list(itertools.islice(projections, per_window))
        return (
            await workers.cpu(prepare, window, size=len(window) * layout.codec.chunk_bytes) if window else []
        )

    with lanes.bulk():
        pending: asyncio.Task[list[Any]] | None = asyncio.ensure_future(next_window())
        try:
            while pending is not None:
                items = await pending
                pending = asyncio.ensure_future(next_window()) if len(items) == per_window else None
                await store_window(items)
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
    if not (
        p.is_complete_chunk and whole_chunk(p, layout.chunk_shape) and layout.is_interior(p.chunk_index)
    ):
        return False
    return values[p.out_selection].shape == layout.chunk_shape


async def write_points(
    layout: DatasetLayout,
    points: PointSelection,
    values: np.ndarray,
    workers: Workers,
    grouped: list[PointProjection] | None = None,
    fields: list[str] | None = None,
) -> list[tuple[int, ...]]:
    """Write ``values[i]`` at point ``i`` (only its ``fields`` of a compound, when given: the
    values are of those fields); ``grouped`` is ``group_points(points, layout)`` when the caller
    has it already."""
    _native(layout)
    written: list[tuple[int, ...]] = []

    async def one(p: PointProjection) -> None:
        def modify(chunk: np.ndarray) -> None:
            if fields:
                part = chunk[p.chunk_selection]
                for f in fields:
                    part[f] = values[f][p.out_positions]
                chunk[p.chunk_selection] = part
                return
            chunk[p.chunk_selection] = values[p.out_positions]

        await update_chunk(layout, p.chunk_index, modify, False, workers, work=POINT_WORK * p.out_positions.size)
        written.append(p.chunk_index)

    if grouped is None:
        grouped = await group_points(points, layout, workers)
    with lanes.bulk():
        await workers.each(grouped, one)
    return written
