"""Reading part of an unfiltered chunk: which byte ranges a chunk selection touches (pure).

Why: a chunk kept unfiltered at a byte range (contiguous data in an HDF5 file, an uncompressed
HDF5 chunk) may be huge, and one row of it must not cost the whole chunk. A chunk is a C-order
array of ``chunk_shape`` elements of ``itemsize`` bytes; a selection of it (the
``chunk_selection`` of a `ChunkProjection`) touches a set of *runs*: equal-length byte ranges,
one per selected index of the leading dimensions, covering the selected span of the last
partly-selected dimension and the whole of the dimensions after it.

`plan_part` finds those runs and the *box*, the compact array the runs fill, with the selection
rewritten to index the box. `group_requests` merges runs closer than ``max_gap`` into one
request and splits requests at ``max_request`` bytes, so a column read becomes one sieved
request while a 300 MiB chunk becomes several that can run at once. `assemble` copies the
fetched bytes into the box.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from h5lake.model.distinct import distinct
from h5lake.model.projection import DimIndex

MAX_GAP = 256 * 1024  # bytes of unwanted data worth reading to save a request
MAX_REQUEST = 16 * 1024 * 1024  # larger reads are split so their parts run concurrently


@dataclass(frozen=True, slots=True, eq=False)
class PartPlan:
    """``run_starts`` (int64, increasing): byte offset in the chunk of each run, whose bytes go
    to ``box`` bytes ``[r * run_bytes, (r + 1) * run_bytes)``; ``box_selection`` indexes the
    box as ``chunk_selection`` indexed the chunk."""

    run_starts: np.ndarray
    run_bytes: int
    box_shape: tuple[int, ...]
    box_selection: tuple[DimIndex, ...]

    @property
    def nbytes(self) -> int:
        return int(self.run_starts.size) * self.run_bytes


@dataclass(frozen=True, slots=True, eq=False)
class Request:
    """One ranged read: ``length`` bytes from ``start`` (relative to the chunk); the segments
    are ``(offset in this read, offset in the box, nbytes)`` copies, as parallel arrays."""

    start: int
    length: int
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray


def _dim_indexes(sel: DimIndex) -> np.ndarray:
    if isinstance(sel, slice):
        return np.arange(sel.start, sel.stop, sel.step or 1, dtype=np.int64)
    return distinct(np.asarray(sel, dtype=np.int64))


def _span(sel: DimIndex) -> tuple[int, int]:
    if isinstance(sel, slice):
        step = sel.step or 1
        n = len(range(sel.start, sel.stop, step))
        return sel.start, sel.start + (n - 1) * step + 1
    arr = np.asarray(sel)
    return int(arr.min()), int(arr.max()) + 1


def _shifted(sel: DimIndex, lo: int) -> DimIndex:
    if isinstance(sel, slice):
        return slice(sel.start - lo, sel.stop - lo, sel.step)
    return np.asarray(sel, dtype=np.int64) - lo


def plan_part(chunk_selection: Sequence[DimIndex], chunk_shape: Sequence[int], itemsize: int) -> PartPlan:
    """The runs of ``chunk_selection`` in a C-order chunk of ``chunk_shape`` (see module doc)."""
    shape = tuple(int(c) for c in chunk_shape)
    rank = len(shape)
    if rank == 0:
        return PartPlan(np.zeros(1, np.int64), itemsize, (), ())
    spans = [_span(s) for s in chunk_selection]
    # Trailing dimensions read whole fold into the run; k is the last dimension read in part.
    k = rank - 1
    while k > 0 and spans[k] == (0, shape[k]):
        k -= 1
    strides = [itemsize * math.prod(shape[d + 1 :]) for d in range(rank)]
    lo_k, hi_k = spans[k]
    run_bytes = (hi_k - lo_k) * strides[k]
    lead = [_dim_indexes(chunk_selection[d]) for d in range(k)]
    starts = np.full(1, lo_k * strides[k], dtype=np.int64)
    for d, idx in enumerate(lead):
        starts = (starts[:, None] + idx[None, :] * strides[d]).ravel()
    box_shape = tuple(len(i) for i in lead) + (hi_k - lo_k,) + shape[k + 1 :]
    box_sel: list[DimIndex] = []
    for d, sel in enumerate(chunk_selection):
        if d < k:
            if isinstance(sel, slice):
                box_sel.append(slice(0, len(lead[d]), 1))
            else:
                box_sel.append(np.searchsorted(lead[d], np.asarray(sel, dtype=np.int64)))
        elif d == k:
            box_sel.append(_shifted(sel, lo_k))
        else:
            box_sel.append(sel)
    return PartPlan(starts, run_bytes, box_shape, tuple(box_sel))


def group_requests(plan: PartPlan, max_gap: int = MAX_GAP, max_request: int = MAX_REQUEST) -> list[Request]:
    """Merge the plan's runs into ranged reads (see module doc); runs longer than
    ``max_request`` are split into pieces of at most that size."""
    rb = plan.run_bytes
    starts = plan.run_starts
    dst = np.arange(starts.size, dtype=np.int64) * rb
    size = np.full(starts.size, rb, dtype=np.int64)
    if rb > max_request:  # split each run into pieces
        pieces = -(-rb // max_request)
        off = np.arange(pieces, dtype=np.int64) * max_request
        starts = (starts[:, None] + off[None, :]).ravel()
        dst = (dst[:, None] + off[None, :]).ravel()
        size = np.tile(np.minimum(max_request, rb - off), plan.run_starts.size)
    ends = starts + size
    requests: list[Request] = []
    n = starts.size
    gaps = starts[1:] - ends[:-1] if n > 1 else np.zeros(0, np.int64)
    cuts = np.flatnonzero(gaps > max_gap) + 1
    bounds = np.concatenate(([0], cuts, [n])).tolist()
    for a, b in itertools.pairwise(bounds):
        # within a group, split further where a request would pass max_request bytes
        first = a
        while first < b:
            limit = int(starts[first]) + max_request
            last = int(np.searchsorted(ends[first:b], limit, side="right")) + first
            last = max(last, first + 1)
            s = int(starts[first])
            requests.append(Request(s, int(ends[last - 1]) - s, starts[first:last] - s, dst[first:last], size[first:last]))
            first = last
    return requests


def assemble(box: np.ndarray, request: Request, data: bytes) -> None:
    """Copy one request's bytes into ``box`` (a flat uint8 array of the plan's ``nbytes``)."""
    src = np.frombuffer(data, dtype=np.uint8)
    n = request.src.size
    if n == 1:
        s, d, k = int(request.src[0]), int(request.dst[0]), int(request.size[0])
        box[d : d + k] = src[s : s + k]
        return
    k = int(request.size[0])
    same = bool((request.size == k).all())
    if same and bool((np.diff(request.dst) == k).all()):
        steps = np.diff(request.src)
        if steps.size and bool((steps == steps[0]).all()):
            stride = int(steps[0])
            s0 = int(request.src[0])
            rows = np.lib.stride_tricks.as_strided(src[s0:], shape=(n, k), strides=(stride, 1), writeable=False)
            d0 = int(request.dst[0])
            box[d0 : d0 + n * k].reshape(n, k)[...] = rows
            return
    for s, d, k2 in zip(request.src.tolist(), request.dst.tolist(), request.size.tolist()):
        box[d : d + k2] = src[s : s + k2]
