"""Splitting a selection into streamed pieces: C order, complete, bounded, and lazy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from h5lake.chunks.blocks import blocks
from h5lake.model.selection import Selection, Slice


def _elements(sel: Selection, shape: tuple[int, ...]) -> list[int]:
    index = np.arange(int(np.prod(shape))).reshape(shape)
    return index[tuple(slice(p.start, p.stop, p.step) for p in sel.parts)].reshape(-1).tolist()


@pytest.mark.parametrize("shape", [(7,), (5, 6), (4, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("max_bytes", [1, 3, 8, 20, 64])
def test_pieces_cover_the_selection_in_c_order_within_the_bound(shape: tuple[int, ...], max_bytes: int) -> None:
    for steps in itertools.product([1, 2], repeat=len(shape)):
        sel = Selection(tuple(Slice(0, n, s) for n, s in zip(shape, steps)))
        row_bytes = int(np.prod(sel.shape[1:])) if len(shape) > 1 else 1
        pieces = blocks(sel, 2, row_bytes, max_bytes)
        got = [e for piece in pieces for e in _elements(piece, shape)]
        assert got == _elements(sel, shape)
        if row_bytes > max_bytes:  # a row that does not fit is cut further: pieces stay small
            innermost = sel.shape[-1]
            assert all(p.count <= max(max_bytes, innermost) for p in pieces)


def test_a_billion_rows_plan_in_no_time_and_memory() -> None:
    sel = Selection((Slice(0, 10**9), Slice(0, 2**26)))
    pieces = blocks(sel, 1024, 2**26, 32 * 2**20)
    assert len(pieces) == 2 * 10**9
    last = pieces[-1]
    assert last.parts[0] == Slice(10**9 - 1, 10**9) and last.parts[1] == Slice(2**25, 2**26)
    assert pieces[0].count == 2**25
