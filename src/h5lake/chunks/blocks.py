"""Splitting a selection into pieces of bounded size, so a huge read or write streams in order
with bounded memory (the blocks of streamed values: service/values/core.py, engine.stream_selection)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import overload

from h5lake.chunks.dataset import DatasetLayout
from h5lake.model.selection import Selection, Slice


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


def row_split(selection: Selection, layout: DatasetLayout, max_bytes: int) -> Sequence[Selection]:
    row_elems = 1
    for n in selection.shape[1:]:
        row_elems *= n
    return blocks(
        selection, layout.chunk_shape[0] if layout.chunk_shape else 1, row_elems * layout.dtype.itemsize, max_bytes
    )
