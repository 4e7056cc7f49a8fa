"""The elements of a selection where a query holds (``GET /datasets/{id}/value?query=...``), at
a bounded cost.

The fill value is tested once per query. When it does not match and the chunk locator can say
which chunks may exist (`ListsWritten`: native head chunks, from the chunk catalog and pending
write intents), only those chunks are read: a query over a huge dataset of which little was
written costs what the written chunks cost. Otherwise the selection is read in blocks, in order.
Either way the elements examined are counted, and a query that would examine more than
``limits.max_query_elements`` is refused (`TooLarge`) before it reads them; see docs/api.md,
"Queries", and docs/security.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from h5lake.catalog.written import Written
from h5lake.chunks import engine
from h5lake.chunks.blocks import row_split
from h5lake.chunks.dataset import DatasetLayout
from h5lake.errors import TooLarge
from h5lake.model.projection import grid_shift
from h5lake.model.query import parse_query
from h5lake.model.selection import Coords, Part, Selection, Slice
from h5lake.service.context import Service
from h5lake.service.values.requests import Query

BLOCK_BYTES = 32 * 1024 * 1024  # values read and tested at once
MAX_BOX_CHUNKS = 65_536  # chunks a pending write intent's box may name before the query scans instead
QUERY_SETTING = "--max-query-elements"

Mask = Callable[[np.ndarray], np.ndarray]


class _Work:
    """The elements a query has examined, against ``limits.max_query_elements``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.done = 0

    def take(self, count: int) -> None:
        if self.done + count > self.limit:
            raise TooLarge(
                f"the query would examine more than {self.limit} elements (the server's "
                f"{QUERY_SETTING}); query a smaller selection at a time (select=...) or give a Limit"
            )
        self.done += count

    def block_bytes(self, itemsize: int) -> int:
        """How many bytes to read at once: a block, or what is left of the bound (a query with
        a Limit may end within it)."""
        size = max(1, itemsize)
        return max(size, min(BLOCK_BYTES, (self.limit - self.done) * size))


async def query_values(svc: Service, layout: DatasetLayout, sel: Selection, q: Query) -> tuple[np.ndarray, np.ndarray]:
    """Matching elements and their positions in the dataset (its indexes for one dimension, C-order
    flat indexes for more), as HSDS answers ``index`` (h5pyd 0.24's ``Table.read_where`` reads it so
    with ``start``/``stop``)."""
    predicate = parse_query(q.expression)
    work = _Work(svc.limits.max_query_elements)
    if not fill_matches(predicate, layout) and sel.rank and sel.count:
        chunks = await _written_chunks(layout, sel)
        if chunks is not None:
            flat, values = await _only_written(svc, layout, sel, chunks, predicate, q.limit, work)
            return values, sel.dataset_positions(flat, layout.shape)
    flat, values = await _scan(svc, layout, sel, predicate, q.limit, work)
    return values, sel.dataset_positions(flat, layout.shape)


def _check_reply(svc: Service, found: int, itemsize: int) -> None:
    if found * itemsize > svc.limits.max_request_size:
        raise TooLarge(
            f"the query matches more than {found} elements, over the reply limit of "
            f"{svc.limits.max_request_size} bytes; give a Limit or query a selection at a time"
        )


async def _scan(
    svc: Service, layout: DatasetLayout, sel: Selection, predicate: Mask, limit: int | None, work: _Work
) -> tuple[np.ndarray, np.ndarray]:
    """Every element of the selection, a block at a time, in order (until ``limit`` matched)."""
    found_values: list[np.ndarray] = []
    found_index: list[np.ndarray] = []
    total = 0
    offset = 0
    for piece in row_split(sel, layout, work.block_bytes(layout.dtype.itemsize)):
        work.take(piece.count)
        arr = await engine.read_selection(layout, piece, svc.workers)
        idx = np.flatnonzero(await svc.workers.cpu(predicate, arr, size=arr.nbytes))
        if limit is not None:
            idx = idx[: max(0, limit - total)]
        found_values.append(arr.reshape(-1)[idx])
        found_index.append(idx + offset)
        offset += arr.size
        total += idx.size
        _check_reply(svc, total, layout.dtype.itemsize)
        if limit is not None and total >= limit:
            break
    flat = np.concatenate(found_index) if found_index else np.empty(0, np.int64)
    values = np.concatenate(found_values) if found_values else np.empty(0, layout.dtype)
    return flat, values


# --- only the chunks that may exist ------------------------------------------------------------


def _dim_range(part: Part, extent: int, chunk: int, lead: int, base: int) -> tuple[int, int]:
    """The chunk indexes (first, last + 1) a part of a selection touches in one dimension."""
    if isinstance(part, Slice):
        first, last = part.start, part.last
    else:
        first, last = int(part.index.min()), int(part.index.max())
    return base + (first + lead) // chunk, base + (last + lead) // chunk + 1


def _touched(layout: DatasetLayout, sel: Selection) -> int:
    """The chunks a selection touches, at most (its bounding box of chunks)."""
    n = 1
    for lo, hi in _ranges(layout, sel):
        n *= hi - lo
    return n


def _ranges(layout: DatasetLayout, sel: Selection) -> list[tuple[int, int]]:
    origin = layout.origin or (0,) * sel.rank
    return [
        _dim_range(p, extent, c, *grid_shift(o, c))
        for p, extent, c, o in zip(sel.parts, layout.shape, layout.chunk_shape, origin)
    ]


async def _written_chunks(layout: DatasetLayout, sel: Selection) -> list[tuple[int, ...]] | None:
    """The chunks of the selection's bounding box that may exist, in C order; None when the
    locator cannot tell at a bounded price (then every element is read)."""
    written = getattr(layout.locator, "written", None)
    if written is None:
        return None
    touched = _touched(layout, sel)
    if touched <= engine.SPARSE_AFTER:
        return None  # a few chunks: reading them is as cheap as asking
    known = await written(layout.domain, touched)
    if not isinstance(known, Written):
        return None
    ranges = _ranges(layout, sel)
    rank = len(ranges)

    def inside(index: tuple[int, ...]) -> bool:
        return len(index) == rank and all(lo <= i < hi for i, (lo, hi) in zip(index, ranges))

    found = {index for index in known.listed if inside(index)}
    for box_lo, box_hi in known.boxes:
        if len(box_lo) != rank or len(box_hi) != rank:
            continue
        clipped = [range(max(a, lo), min(b, hi)) for a, b, (lo, hi) in zip(box_lo, box_hi, ranges)]
        count = 1
        for r in clipped:
            count *= len(r)
        if count > MAX_BOX_CHUNKS:
            return None  # a large write in progress: read in order instead
        found.update(itertools.product(*clipped))
    return sorted(found)


@dataclass(frozen=True, slots=True)
class _Piece:
    """The part of the selection inside one chunk: its selection, and where each of its
    elements sits in the whole selection's output (per dimension: an offset or positions)."""

    selection: Selection
    places: tuple[int | np.ndarray, ...]


class _Geometry:
    """Per-dimension intersections of a selection with chunks, remembered (many chunks share a
    row or a column)."""

    def __init__(self, layout: DatasetLayout, sel: Selection) -> None:
        self.sel = sel
        self.shape = layout.shape
        self.chunk_shape = layout.chunk_shape
        origin = layout.origin or (0,) * sel.rank
        self.shifts = [grid_shift(o, c) for o, c in zip(origin, layout.chunk_shape)]
        self.sorted: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.known: dict[tuple[int, int], tuple[Part, int | np.ndarray] | None] = {}

    def piece(self, index: tuple[int, ...]) -> _Piece | None:
        parts: list[Part] = []
        places: list[int | np.ndarray] = []
        for d, k in enumerate(index):
            key = (d, k)
            if key not in self.known:
                self.known[key] = self._dim(d, k)
            found = self.known[key]
            if found is None:
                return None
            parts.append(found[0])
            places.append(found[1])
        return _Piece(Selection(tuple(parts)), tuple(places))

    def _dim(self, d: int, k: int) -> tuple[Part, int | np.ndarray] | None:
        part, chunk = self.sel.parts[d], self.chunk_shape[d]
        lead, base = self.shifts[d]
        lo = max(0, (k - base) * chunk - lead)
        hi = min(self.shape[d], (k - base + 1) * chunk - lead)
        if lo >= hi:
            return None
        if isinstance(part, Slice):
            j_lo = max(0, -(-(lo - part.start) // part.step))
            j_hi = min(part.count, -(-(hi - part.start) // part.step))
            if j_lo >= j_hi:
                return None
            first = part.start + j_lo * part.step
            return Slice(first, first + (j_hi - j_lo - 1) * part.step + 1, part.step), j_lo
        if d not in self.sorted:
            order = np.argsort(part.index, kind="stable")
            self.sorted[d] = order, part.index[order]
        order, values = self.sorted[d]
        a, b = np.searchsorted(values, [lo, hi])
        if a >= b:
            return None
        positions = np.sort(order[a:b])
        return Coords(part.index[positions]), positions

    def first_place(self, piece: _Piece) -> int:
        """The smallest output position (C-order flat) any element of ``piece`` can have, when
        the first dimension is a slice (chunks in C order then come in order of it); else 0."""
        place = piece.places[0]
        if not isinstance(place, int):
            return 0
        inner = 1
        for n in self.sel.shape[1:]:
            inner *= n
        return place * inner


def _test(predicate: Mask, arr: np.ndarray, piece: _Piece, out_shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The flat output positions and values of the elements of ``arr`` (the piece's values)
    where the predicate holds."""
    hits = np.nonzero(predicate(arr))
    outs = [place + hit if isinstance(place, int) else place[hit] for place, hit in zip(piece.places, hits)]
    flat = np.ravel_multi_index(outs, out_shape) if outs else np.zeros(0, np.int64)
    return np.asarray(flat, dtype=np.int64), arr[hits]


async def _only_written(
    svc: Service,
    layout: DatasetLayout,
    sel: Selection,
    chunks: Sequence[tuple[int, ...]],
    predicate: Mask,
    limit: int | None,
    work: _Work,
) -> tuple[np.ndarray, np.ndarray]:
    """The matches within the chunks that may exist (every other element is fill, which does
    not match), read a batch of chunks at a time and kept in output order."""
    geometry = _Geometry(layout, sel)
    pieces = [p for p in (geometry.piece(index) for index in chunks) if p is not None]
    flat = np.empty(0, np.int64)
    values = np.empty(0, layout.dtype)

    async def one(piece: _Piece) -> tuple[np.ndarray, np.ndarray]:
        arr = await engine.read_selection(layout, piece.selection, svc.workers)
        return await svc.workers.cpu(_test, predicate, arr, piece, sel.shape, size=arr.nbytes)

    i = 0
    while i < len(pieces):
        batch: list[_Piece] = []
        elements = 0
        batch_elements = work.block_bytes(layout.dtype.itemsize) // max(1, layout.dtype.itemsize)
        while i < len(pieces) and (not batch or elements + pieces[i].selection.count <= batch_elements):
            batch.append(pieces[i])
            elements += pieces[i].selection.count
            i += 1
        work.take(elements)
        found = await svc.workers.map(batch, one)
        flat = np.concatenate([flat, *(f for f, _ in found)])
        values = np.concatenate([values, *(v for _, v in found)])
        order = np.argsort(flat, kind="stable")
        if limit is not None:
            order = order[:limit]
        flat, values = flat[order], values[order]
        _check_reply(svc, flat.size, layout.dtype.itemsize)
        done = limit is not None and flat.size >= limit
        if done and i < len(pieces) and int(flat[-1]) < geometry.first_place(pieces[i]):
            break  # every later chunk's elements come after the ones kept
    return flat, values


# --- query updates (service/values/core.update_where: one dimension) ----------------------------------


def fill_matches(predicate: Mask, layout: DatasetLayout) -> bool:
    return bool(np.asarray(predicate(layout.fill.reshape(1))).any())


def check_update_work(svc: Service, elements: int) -> None:
    """A query update examines whole chunks; refused before any is changed past the bound (a
    partial update would be durable and the reply could not say so)."""
    if elements > svc.limits.max_query_elements:
        raise TooLarge(
            f"the query update would examine up to {elements} elements, more than {svc.limits.max_query_elements} "
            f"(the server's {QUERY_SETTING}); update a smaller selection at a time (select=...)"
        )


async def written_rows(
    layout: DatasetLayout, part: Part | None, looked_at: int, grid: tuple[int, int, int]
) -> list[int] | None:
    """The chunks (numbered from the grid's first) of a one-dimensional dataset that may exist
    and hold an element of ``part`` (None: all), in order; None when the locator cannot tell at
    a bounded price or the read is small."""
    written = getattr(layout.locator, "written", None)
    if written is None or looked_at <= engine.SPARSE_AFTER:
        return None
    known = await written(layout.domain, looked_at)
    if not isinstance(known, Written):
        return None
    lead, base, per_chunk = grid
    rows = layout.shape[0]
    found = {index[0] - base for index in known.listed if len(index) == 1}
    for lo, hi in known.boxes:
        if len(lo) != 1 or len(hi) != 1:
            continue
        run = range(max(0, lo[0] - base), min(hi[0] - base, -(-(rows + lead) // per_chunk)))
        if len(run) > MAX_BOX_CHUNKS:
            return None
        found.update(run)
    held = None if part is None or isinstance(part, Slice) else np.unique(part.index)

    def holds(c: int) -> bool:
        lo, hi = max(0, c * per_chunk - lead), min(rows, (c + 1) * per_chunk - lead)
        if lo >= hi:
            return False
        if part is None:
            return True
        if isinstance(part, Slice):
            return max(0, -(-(lo - part.start) // part.step)) < min(part.count, -(-(hi - part.start) // part.step))
        assert held is not None
        a, b = np.searchsorted(held, [lo, hi])
        return bool(a < b)

    return sorted(c for c in found if holds(c))
