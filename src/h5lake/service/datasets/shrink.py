"""Shrinking a dataset with HDF5's semantics: the elements cut off are gone, so growing the
dataset again shows the fill value there (HDF5 prunes the chunks wholly outside the new extent
and writes fill into the cut-off part of the chunks the new boundary crosses).

Order, and why it is crash-safe. The smaller shape is stored *first*, in the same conditional
update of the document that records the cleaning still owed:

    "shrinking": {"keep": [k0, k1, ...], "upto": [u0, u1, ...]}

``keep`` is the smallest extent since the last cleaning (what may still hold values) and
``upto`` the largest (how far stale values may reach). Then chunks wholly outside ``keep`` are
deleted and those it crosses get their outside part reset to fill (read-modify-write through
the chunk engine), and a last conditional update drops the mark if it is still the one cleaned.

* Reads never see the stale values meanwhile: every read is bounded by the stored shape, which
  is already the smaller one (cleaning first, under the old shape, would show fill in values
  that are still inside the extent, and a crash there would lose them without any resize).
* A crash between the steps leaves the mark. Nothing may make the cut-off region visible
  while a mark is there: a resize that grows any dimension past ``keep`` (or a prepend) first
  finishes the cleaning (`finish`, safe to repeat by anyone, like a compact move) and only then
  grows. Shrinking again while marked narrows ``keep`` and widens ``upto``.
* A compact dataset (values in its document) is trimmed inside the very update that shrinks it:
  one atomic step, no mark (`service.datasets.compact.trim`).
* A forked dataset falls back to its source version's chunk where it has none of its own, so a
  chunk wholly outside is replaced by a chunk of fill there (a tombstone) instead of deleted;
  a crossed chunk is rewritten from the source's bytes as any partial write of a fork is.

Limit: a value write that was checked against the old extent and lands after the cleaning may
leave values beyond the new extent (HDF5 has no concurrent writers to compare with).
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from collections.abc import Iterator
from typing import Any, Final

import numpy as np

from h5lake.catalog.catalogs import GRID_PROBE_LIMIT
from h5lake.catalog.written import written_chunks
from h5lake.chunks import writes
from h5lake.chunks.dataset import DatasetLayout
from h5lake.chunks.locate import NativeChunks
from h5lake.model.layout import chunk_span, span_count
from h5lake.model.projection import project
from h5lake.model.selection import Selection, Slice
from h5lake.model.stored import DatasetDoc
from h5lake.service.context import Service, now
from h5lake.service.datasets.dataset_layout import native_layout
from h5lake.service.documents import Unchanged
from h5lake.service.views import Domain
from h5lake.versions.content import ForkedChunks

KEY: Final = "shrinking"

Index = tuple[int, ...]


def pending(doc: DatasetDoc) -> dict[str, list[int]] | None:
    mark = doc.get(KEY)
    return mark if isinstance(mark, dict) else None


def blocks_growth(doc: DatasetDoc, dims: tuple[int, ...]) -> bool:
    """Whether growing to ``dims`` would show values a pending cleaning has not removed yet."""
    mark = pending(doc)
    return mark is not None and any(n > k for n, k in zip(dims, mark["keep"]))


def mark(doc: DatasetDoc, old: tuple[int, ...], new: tuple[int, ...]) -> None:
    """In the update that stores the smaller shape: record (or widen) the cleaning owed."""
    before = pending(doc) or {"keep": list(old), "upto": list(old)}
    doc[KEY] = {
        "keep": [min(k, n) for k, n in zip(before["keep"], new)],
        "upto": [max(u, o) for u, o in zip(before["upto"], old)],
    }


def kept_region(layout: DatasetLayout, index: Index) -> tuple[slice, ...] | None:
    """The part of chunk ``index`` inside ``layout.shape`` (chunk-relative), None when the
    chunk is wholly outside. Through the engine's projection, so a grid origin (prepend,
    negative chunk indexes) is honoured as everywhere else."""
    origin = layout.origin or (0,) * len(layout.shape)
    parts = []
    for i, c, n, o in zip(index, layout.chunk_shape, layout.shape, origin):
        lo, hi = max(0, i * c + o), min(n, (i + 1) * c + o)  # the chunk's elements, clipped
        if lo >= hi:
            return None
        parts.append(Slice(lo, hi))
    projections = list(project(Selection(tuple(parts)), layout.shape, layout.chunk_shape, layout.origin))
    assert len(projections) == 1 and projections[0].chunk_index == tuple(index), (index, projections)
    region = projections[0].chunk_selection
    assert all(isinstance(s, slice) for s in region)
    return tuple(region)  # type: ignore[arg-type]


def reset_outside(chunk: np.ndarray, region: tuple[slice, ...] | None, fill: np.ndarray) -> None:
    """Fill in place every element of ``chunk`` outside ``region`` (None: the whole chunk)."""
    kept = None if region is None else chunk[region].copy()
    chunk[...] = fill
    if region is not None:
        chunk[region] = kept


def _shell(keep_layout: DatasetLayout, upto: tuple[int, ...]) -> tuple[int, Iterator[Index]]:
    """The chunks of extent ``upto`` not wholly inside ``keep_layout.shape``: their count and
    the chunks (box minus box, each once). Along each dimension the chunks wholly inside form
    one run of the span, so the count is arithmetic: a shrink from an extent of 2**62 rows costs
    no more than one from 10 (the positions were once listed, ~1 s per 10**7 on the event loop)."""
    spans = chunk_span(upto, keep_layout.chunk_shape, keep_layout.origin)
    rank = len(spans)
    inner = [_inside_span(keep_layout, d, spans[d]) for d in range(rank)]
    outer = [(range(spans[d].start, inner[d].start), range(inner[d].stop, spans[d].stop)) if inner[d]
             else (spans[d], range(0)) for d in range(rank)]
    sizes = [
        span_count(inner[:d]) * sum(span_count((part,)) for part in outer[d]) * span_count(spans[d + 1 :])
        for d in range(rank)
    ]

    def walk() -> Iterator[Index]:
        for d in range(rank):
            if sizes[d]:  # itertools.product lists every factor first, even beside an empty one
                for part in outer[d]:
                    yield from itertools.product(*inner[:d], part, *spans[d + 1 :])

    return sum(sizes), walk()


def _inside_span(layout: DatasetLayout, d: int, span: range) -> range:
    """The positions of ``span`` (dimension ``d``) whose chunk lies wholly inside the extent
    there: ``i * c >= -o`` and ``(i + 1) * c <= n - o``."""
    c, n = layout.chunk_shape[d], layout.shape[d]
    o = layout.origin[d] if layout.origin else 0
    first, stop = -(o // c), (n - o) // c
    return range(max(span.start, first), max(max(span.start, first), min(span.stop, stop)))


async def _candidates(svc: Service, domain: Domain, layout: DatasetLayout, upto: tuple[int, ...]) -> list[Index]:
    """The chunks that may hold values outside the kept extent: the shell between the two
    extents when it is small enough to probe, else those that may exist outside the kept
    interior: the catalog's, the pending write intents' (the catalog lags writes by its delay,
    so a chunk written just before the shrink is named only by its intent) and a fork's
    source's."""
    count, shell = _shell(layout, upto)
    if count <= GRID_PROBE_LIMIT:
        return list(shell)
    written = await written_chunks(svc.store, domain.path, layout.dataset_id, max_intents=sys.maxsize,
                                   max_catalog_bytes=sys.maxsize)
    assert written is not None  # only past the bounds, and there are none
    found = set(written.listed)
    for lo, hi in written.boxes:  # chunks a write wrote, so no more than it sent
        found.update(itertools.product(*(range(a, b) for a, b in zip(lo, hi))))
    if isinstance(layout.locator, ForkedChunks):
        found.update(await layout.locator.source_indexes())
    return sorted(i for i in found if not layout.is_interior(i))


async def clean(svc: Service, domain: Domain, doc: DatasetDoc) -> None:
    """Remove the values outside ``keep`` (the document's mark) from the dataset's chunks."""
    mark_ = pending(doc)
    base = native_layout(domain, doc)
    if mark_ is None or base is None or not isinstance(base.locator, NativeChunks):
        return
    layout = dataclasses.replace(base, shape=tuple(mark_["keep"]))
    chunks = base.locator
    indexes = await _candidates(svc, domain, layout, tuple(mark_["upto"]))
    if not indexes:
        return
    tombstone: list[Any] = []

    async def one(index: Index) -> None:
        region = kept_region(layout, index)
        forked = isinstance(chunks, ForkedChunks) and await chunks.in_source(index)
        if region is None:
            if not forked:
                await chunks.store.delete(chunks.key(index))
                return
            if not tombstone:  # a chunk of fill hides the source's chunk
                tombstone.append(await svc.workers.cpu(layout.codec.encode, layout.empty_chunk()))
            await chunks.store.put(chunks.key(index), tombstone[0])
            return
        if not forked and await chunks.store.head(chunks.key(index)) is None:
            return  # never written: already fill

        def modify(chunk: np.ndarray) -> bool:
            before = chunk.copy()
            reset_outside(chunk, region, layout.fill)
            return layout.dtype.hasobject or before.tobytes() != chunk.tobytes()

        await writes.update_chunk(layout, index, modify, False, svc.workers)

    async with svc.catalog.recording(domain.path, layout.dataset_id, indexes):
        await svc.workers.each(indexes, one)


async def finish(svc: Service, domain: Domain, doc: DatasetDoc) -> DatasetDoc:
    """Clean what ``doc``'s mark owes, then drop the mark if it is still that one (a shrink
    made meanwhile widened it and cleans itself). Returns the document after."""
    done = pending(doc)
    if done is None:
        return doc
    await clean(svc, domain, doc)

    def drop(current: DatasetDoc) -> Any:
        if pending(current) != done:
            return Unchanged(None)
        del current[KEY]
        current["lastModified"] = now()
        return None

    after, _ = await svc.docs.update_object(domain.path, doc["id"], drop, f"dataset {doc['id']}")
    return after
