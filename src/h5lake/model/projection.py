"""Chunk projection: which chunks a selection touches, and which elements of each.

This is the one planning type shared by reads, writes, versions and HDF5-file sources: a
`ChunkProjection` says "elements ``chunk_selection`` of chunk ``chunk_index`` are elements
``out_selection`` of the request's output array". Reading is ``out[p.out_selection] =
chunk[p.chunk_selection]``; writing is the reverse. Both sides are plain numpy indexes, so no
caller needs to know how a selection was expressed.

Contract of `project` (and why):

* Chunks come in C order of ``chunk_index``; only chunks holding at least one selected element
  are yielded, and each at most once.
* A chunk array always has the full ``chunk_shape``, also on the upper edge of the dataspace;
  ``chunk_selection`` indexes within it and never beyond the dataset extent.
* Regular parts become slices (cheap basic indexing, and views rather than copies). Coordinate
  lists become int64 arrays, or slices when the coordinates falling in one chunk happen to be
  evenly spaced. Each dimension is planned once, arithmetically, and the chunks are the
  cartesian product of the per-dimension plans, so the cost is proportional to the number of
  chunks touched, never to the number of elements or to the chunks a large step skips.
* With one coordinate dimension numpy's mixed indexing already keeps dimensions in place. With
  two or more, both selections are given as broadcasting index arrays (as `numpy.ix_` builds) so
  the combination stays orthogonal, matching `Selection.numpy_index`.
* ``is_complete_chunk`` is True when every element of the chunk that lies inside the dataset
  extent is selected (repeats allowed). A writer may then build the chunk from the new data
  alone, without reading the old chunk, but must fill the part beyond the extent of an edge
  chunk with the fill value, because a later resize makes it visible.
* Arguments are validated when `project` is called, not on the first iteration, so a bad
  request fails before any chunk I/O starts.
* ``origin`` (a dataset grown at the front, h5lake's ``prepend``): element ``i`` of dimension
  ``d`` sits at grid position ``i - origin[d]``, so chunk ``floor((i - origin[d]) / chunk)``,
  which is negative for elements added at the front. Elements of a chunk before the dataset's
  first one are outside its extent, like those past an upper edge.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from h5lake.errors import InvalidInput
from h5lake.model.distinct import distinct
from h5lake.model.layout import chunk_grid
from h5lake.model.selection import (
    Coords,
    IndexArray,
    PointSelection,
    Selection,
    Slice,
    orthogonal_index,
)

DimIndex: TypeAlias = slice | IndexArray


@dataclass(frozen=True, slots=True, eq=False)
class ChunkProjection:
    """Selected elements of one chunk and where they go in the output (see module docstring)."""

    chunk_index: tuple[int, ...]
    chunk_selection: tuple[DimIndex, ...]
    out_selection: tuple[DimIndex, ...]
    is_complete_chunk: bool


@dataclass(frozen=True, slots=True, eq=False)
class PointProjection:
    """The points of a `PointSelection` that fall in one chunk.

    ``chunk_coords`` is ``(k, rank)`` int64, relative to the chunk origin; ``out_positions`` is
    ``(k,)`` int64, the positions of those points in the request (and so in the 1-D output).
    Read with ``out[p.out_positions] = chunk[p.chunk_selection]``.
    """

    chunk_index: tuple[int, ...]
    chunk_coords: IndexArray
    out_positions: IndexArray

    @property
    def chunk_selection(self) -> tuple[IndexArray, ...]:
        """``chunk_coords`` as a numpy fancy index into the chunk array."""
        return tuple(self.chunk_coords.T)


# One dimension's plan: (chunk number, index within chunk, index within output, complete).
_DimPlan: TypeAlias = tuple[int, DimIndex, DimIndex, bool]


@dataclass(frozen=True, slots=True)
class Projections:
    """The chunks a selection touches, planned per dimension: ``count`` of them without building
    a projection; iterating yields them all, `only` those a caller wants."""

    plans: tuple[list[_DimPlan], ...]

    @property
    def count(self) -> int:
        return math.prod(len(p) for p in self.plans)

    def __iter__(self) -> Iterator[ChunkProjection]:
        return _combine(list(self.plans))

    def only(self, keep: Container[tuple[int, ...]]) -> Iterator[ChunkProjection]:
        """The projections of the chunks in ``keep``, in C order; the others cost a lookup each."""
        return _combine(list(self.plans), keep)


def project(
    selection: Selection, shape: Sequence[int], chunk_shape: Sequence[int], origin: Sequence[int] = ()
) -> Iterator[ChunkProjection]:
    """Yield one `ChunkProjection` per chunk touched by ``selection`` (see module docstring)."""
    return iter(plan(selection, shape, chunk_shape, origin))


def plan(
    selection: Selection, shape: Sequence[int], chunk_shape: Sequence[int], origin: Sequence[int] = ()
) -> Projections:
    """`project` as `Projections`: counted before any is built, and filtered (`Projections.only`).

    ``shape`` is the dataset's current extent; raises `InvalidInput` if the selection does not
    fit it or ``chunk_shape`` is invalid. A scalar dataset yields one projection with empty
    tuples. A selection with no elements yields nothing.
    """
    shape = tuple(int(n) for n in shape)
    chunk_shape = tuple(int(c) for c in chunk_shape)
    chunk_grid(shape, chunk_shape)  # validates rank and positivity
    selection.check_within(shape)
    if selection.count == 0:
        return Projections(([],))
    shifts = [grid_shift(o, c) for o, c in zip(origin, chunk_shape)] or [(0, 0)] * len(shape)
    plans = [
        _plan_slice(p, n, c, *shift) if isinstance(p, Slice) else _plan_coords(p, n, c, *shift)
        for p, n, c, shift in zip(selection.parts, shape, chunk_shape, shifts)
    ]
    return Projections(tuple(plans))


def grid_shift(origin: int, chunk: int) -> tuple[int, int]:
    """(lead, base) of a dimension whose element 0 sits at grid position ``-origin``: ``base``
    is the chunk holding element 0 and ``lead`` (0 <= lead < chunk) the elements of that chunk
    before it. Element ``i`` is element ``(i + lead) % chunk`` of chunk ``base + (i + lead) // chunk``."""
    before = -(-origin // chunk)  # chunks wholly or partly before element 0
    return before * chunk - origin, -before


def _combine(
    plans: list[list[_DimPlan]], keep: Container[tuple[int, ...]] | None = None
) -> Iterator[ChunkProjection]:
    """The cartesian product of per-dimension plans, in C order of chunk index (only the chunks
    in ``keep`` when given)."""
    if plans and not any(
        _array_dims(tuple(d[1] for d in plan)) or _array_dims(tuple(d[2] for d in plan)) for plan in plans
    ):
        for combo in itertools.product(*plans):  # slices only (every hyperslab): nothing to broadcast
            index, chunk_sel, out_sel, complete = zip(*combo)
            if keep is None or index in keep:
                yield ChunkProjection(index, chunk_sel, out_sel, all(complete))
        return
    for combo in itertools.product(*plans):
        if keep is not None and tuple(d[0] for d in combo) not in keep:
            continue
        chunk_sel = tuple(d[1] for d in combo)
        out_sel = tuple(d[2] for d in combo)
        if _array_dims(chunk_sel) > 1 or _array_dims(out_sel) > 1:
            lengths = [_length(s) for s in out_sel]
            if _array_dims(chunk_sel) > 1:
                chunk_sel = orthogonal_index(chunk_sel, lengths)
            if _array_dims(out_sel) > 1:
                out_sel = orthogonal_index(out_sel, lengths)
        yield ChunkProjection(tuple(d[0] for d in combo), chunk_sel, out_sel, all(d[3] for d in combo))


def _array_dims(sel: tuple[DimIndex, ...]) -> int:
    return sum(not isinstance(s, slice) for s in sel)


def _length(sel: DimIndex) -> int:
    if isinstance(sel, slice):
        return len(range(sel.start, sel.stop, sel.step or 1))
    return int(sel.size)


def _plan_slice(part: Slice, extent: int, chunk: int, lead: int = 0, base: int = 0) -> list[_DimPlan]:
    """Per-chunk pieces of a regular slice, computed arithmetically.

    With ``step < chunk`` every chunk between the first and last selected element holds at
    least one, so we walk those chunks; otherwise each element has a chunk of its own and we
    walk the elements. Either way no empty chunk is visited.
    """
    start, step, count = part.start + lead, part.step, part.count
    if count == 0:
        return []
    last = part.last + lead
    extent += lead  # positions from the first chunk's start; [0, lead) is before the dataset
    plans: list[_DimPlan] = []
    if step >= chunk:
        for k in range(count):
            i = start + k * step
            c, local = divmod(i, chunk)
            chunk_len = min(chunk * (c + 1), extent) - max(c * chunk, lead)
            plans.append((base + c, slice(local, local + 1, 1), slice(k, k + 1, 1), chunk_len == 1))
        return plans
    for c in range(start // chunk, last // chunk + 1):
        lo = c * chunk
        hi = min(lo + chunk, extent)
        first = start if start >= lo else start + -(-(lo - start) // step) * step
        end = min(hi, last + 1)
        n = (end - 1 - first) // step + 1
        local = first - lo
        out = (first - start) // step
        inside = max(lo, lead)
        complete = first == inside and n == hi - inside  # with step > 1 only when hi - inside == 1
        plans.append(
            (base + c, slice(local, local + (n - 1) * step + 1, step), slice(out, out + n, 1), complete)
        )
    return plans


def _plan_coords(part: Coords, extent: int, chunk: int, lead: int = 0, base: int = 0) -> list[_DimPlan]:
    """Group a coordinate list by chunk with one stable sort (repeats keep their order)."""
    coords = part.index + lead if lead else part.index
    extent += lead
    if coords.size == 0:
        return []
    chunk_of = coords // chunk
    order = np.argsort(chunk_of, kind="stable")
    sorted_chunks = chunk_of[order]
    cuts = np.flatnonzero(np.diff(sorted_chunks)) + 1
    bounds = np.concatenate(([0], cuts, [coords.size]))
    plans: list[_DimPlan] = []
    for a, b in itertools.pairwise(bounds.tolist()):
        c = int(sorted_chunks[a])
        positions = order[a:b]
        local = coords[positions] - c * chunk
        chunk_len = min(chunk * (c + 1), extent) - max(c * chunk, lead)
        complete = local.size >= chunk_len and distinct(local).size == chunk_len
        plans.append((base + c, _as_slice_if_regular(local), _as_slice_if_regular(positions), complete))
    return plans


def _as_slice_if_regular(index: IndexArray) -> DimIndex:
    """An evenly increasing index array as the equivalent slice, else the array (int64)."""
    n = index.size
    if n == 1:
        i = int(index[0])
        return slice(i, i + 1, 1)
    step = int(index[1] - index[0])
    if step > 0 and bool((np.diff(index) == step).all()):
        first = int(index[0])
        return slice(first, first + (n - 1) * step + 1, step)
    return np.ascontiguousarray(index, dtype=np.int64)


def project_points(
    points: PointSelection | npt.NDArray[np.integer], chunk_shape: Sequence[int], origin: Sequence[int] = ()
) -> Iterator[PointProjection]:
    """Group points by chunk, vectorised (one stable lexsort; no Python loop per point).

    Chunks come in C order of their index; within a chunk points keep request order, so on a
    write the last of repeated points wins, as in numpy. ``points`` is a validated
    `PointSelection`, or an ``(npoints, rank)`` array the caller has already bounds-checked.
    """
    coords = points.coords if isinstance(points, PointSelection) else np.asarray(points)
    chunk_arr = np.asarray([int(c) for c in chunk_shape], dtype=np.int64)
    if coords.ndim != 2 or coords.shape[1] != chunk_arr.size:
        raise InvalidInput(f"points of shape {coords.shape} do not match chunk rank {chunk_arr.size}")
    if chunk_arr.size == 0 or bool((chunk_arr < 1).any()):
        raise InvalidInput(f"chunk shape {tuple(chunk_shape)} must be positive with rank >= 1")
    if coords.dtype.kind not in "iu":
        raise InvalidInput("point coordinates must be integers")
    if coords.shape[0] == 0:
        return iter(())
    coords = coords.astype(np.int64, copy=False)
    if any(origin):
        coords = coords - np.asarray(origin, dtype=np.int64)  # grid positions (floor division below)
    return _group_points(coords, chunk_arr)


def _group_points(coords: IndexArray, chunk_arr: IndexArray) -> Iterator[PointProjection]:
    chunk_of = coords // chunk_arr
    order = np.lexsort(chunk_of.T[::-1])  # stable; the first dimension is the primary key
    sorted_chunks = chunk_of[order]
    changed = (np.diff(sorted_chunks, axis=0) != 0).any(axis=1)
    bounds = np.concatenate(([0], np.flatnonzero(changed) + 1, [coords.shape[0]])).tolist()
    local_all = coords[order] - sorted_chunks * chunk_arr
    order = order.astype(np.int64, copy=False)
    for a, b in itertools.pairwise(bounds):
        yield PointProjection(tuple(sorted_chunks[a].tolist()), local_all[a:b], order[a:b])
