"""Chunks stored as byte ranges of a larger object (chunks inside .h5 files): whether one can be
read in part, and neighbouring ones read together in few requests (``get_ranges``), a window
fetched while the previous one is decoded."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from h5lake.chunks.capability import gets_ranges
from h5lake.chunks.dataset import DatasetLayout
from h5lake.chunks.fanout import Workers
from h5lake.chunks.locate import ChunkRef
from h5lake.model.projection import ChunkProjection, PointProjection
from h5lake.storage.base import ByteRangeSource

P = TypeVar("P", ChunkProjection, PointProjection)


def reads_in_part(layout: DatasetLayout, ref: ChunkRef) -> bool:
    """True when the chunk is a byte range holding the raw array (no filter applied to it), so
    a selection can be read from the byte ranges it touches instead of the whole chunk."""
    codec = layout.codec
    if ref.offset is None or codec.variable or codec.reduced:  # reduced: bytes are not the values
        return False
    return all(ref.filter_mask >> i & 1 for i in range(len(codec.pipeline.filters)))


READ_AHEAD_CHUNK = 1024 * 1024  # ranged chunks up to this size are read together with neighbours
READ_AHEAD_PART = 64 * 1024  # ...also when only part of them is selected, up to this size
READ_AHEAD_WINDOW = 8 * 1024 * 1024  # bytes read ahead at once (two windows in flight)
READ_AHEAD_CHUNKS = 4096  # chunks in one window
LOCATE_BATCH = 64


class ReadAhead:
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


def here_whole(layout: DatasetLayout, ref: ChunkRef) -> bool:
    """Whether a whole raw chunk's bytes were read ahead (then decoding beats ``read_part``; a
    contiguous dataset's last virtual chunk may be shorter, and is read in part)."""
    return isinstance(ref.source, ReadAhead) and ref.length == layout.codec.chunk_bytes


def _ahead_bytes(layout: DatasetLayout, ref: ChunkRef | None, complete: bool) -> int:
    """How many bytes reading ``ref`` ahead takes, or 0 when it is read on its own."""
    if ref is None or ref.offset is None or not gets_ranges(ref.source):
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
            out[i] = (located[i][0], dataclasses.replace(ref, source=ReadAhead(ref.source, ref.offset, data)))

    await workers.each((m for m in groups.values() if len(m) > 1), fetch)
    return out


async def each_read_ahead(
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
