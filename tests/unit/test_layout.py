"""Chunk layout arithmetic and chunk-shape choice (h5lake.model.layout)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from h5lake.errors import InvalidInput
from h5lake.model.layout import (
    MAX_CHUNK_BYTES,
    MIB,
    MIN_CHUNK_BYTES,
    adjust_chunk_shape,
    chunk_bounds,
    chunk_grid,
    guess_chunk_shape,
)


class TestGrid:
    def test_chunk_grid(self) -> None:
        assert chunk_grid((10, 8), (4, 8)) == (3, 1)
        assert chunk_grid((0, 5), (4, 2)) == (0, 3)
        assert chunk_grid((), ()) == ()

    def test_chunk_grid_errors(self) -> None:
        with pytest.raises(InvalidInput):
            chunk_grid((10,), (4, 4))
        with pytest.raises(InvalidInput):
            chunk_grid((10,), (0,))

    def test_chunk_bounds(self) -> None:
        assert chunk_bounds((1, 0), (10, 10), (4, 4)) == (slice(4, 8), slice(0, 4))
        assert chunk_bounds((2,), (10,), (4,)) == (slice(8, 10),)
        assert chunk_bounds((), (), ()) == ()
        for bad in [(3,), (-1,), (0, 0)]:
            with pytest.raises(InvalidInput):
                chunk_bounds(bad, (10,), (4,))

    @given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 7)), min_size=1, max_size=3))
    def test_bounds_tile_the_dataspace(self, dims: list[tuple[int, int]]) -> None:
        shape = tuple(n for n, _ in dims)
        chunks = tuple(c for _, c in dims)
        grid = chunk_grid(shape, chunks)
        covered = 0
        for index in _all_indices(grid):
            region = chunk_bounds(index, shape, chunks)
            assert all(0 < s.stop - s.start <= c for s, c in zip(region, chunks))
            covered += math.prod(s.stop - s.start for s in region)
        assert covered == math.prod(shape)


def _all_indices(grid: tuple[int, ...]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for g in grid:
        out = [i + (k,) for i in out for k in range(g)]
    return out


class TestGuessChunkShape:
    def test_small_dataset_is_one_chunk(self) -> None:
        assert guess_chunk_shape((10, 20), None, 8) == (10, 20)
        assert guess_chunk_shape((512, 1024), None, 8) == (512, 1024)  # exactly 4 MiB

    def test_zero_extent_gets_one(self) -> None:
        assert guess_chunk_shape((0, 5), None, 4) == (1, 5)

    def test_scalar(self) -> None:
        assert guess_chunk_shape((), None, 8) == ()

    def test_resizable_bounded_sized_for_maximum(self) -> None:
        assert guess_chunk_shape((10,), (1000,), 8) == (1000,)

    def test_unlimited_is_sized_for_appends(self) -> None:
        chunk = guess_chunk_shape((0,), (None,), 8)
        assert MIN_CHUNK_BYTES <= chunk[0] * 8 <= MAX_CHUNK_BYTES
        chunk = guess_chunk_shape((0, 100), (None, 100), 8)
        assert chunk[1] == 100 and MIN_CHUNK_BYTES <= math.prod(chunk) * 8 <= MAX_CHUNK_BYTES

    def test_shaped_to_the_dataspace(self) -> None:
        assert guess_chunk_shape((2, 1_000_000), None, 4)[0] == 2
        square = guess_chunk_shape((2000, 1000), None, 8)
        assert square == (512, 512)

    def test_huge_element(self) -> None:
        assert guess_chunk_shape((100, 100), None, 16 * MIB) == (1, 1)

    @pytest.mark.parametrize(
        "args",
        [
            ((10,), (None, None), 8),  # maxdims rank
            ((10,), None, 0),  # item size
            ((10,), None, 8, 10, 5),  # min_bytes > max_bytes
            ((10,), None, 8, 0, 5),
        ],
    )
    def test_errors(self, args: tuple[Any, ...]) -> None:
        with pytest.raises(InvalidInput):
            guess_chunk_shape(*args)

    @given(
        st.lists(
            st.tuples(
                st.integers(0, 3_000_000),
                st.sampled_from(["fixed", "unlimited", "bounded"]),
                st.integers(0, 3_000_000),
            ),
            min_size=1,
            max_size=4,
        ),
        st.sampled_from([1, 2, 4, 8, 16, 48, 1000, 100_000]),
    )
    def test_sizes_within_bounds(self, dims: list[tuple[int, str, int]], item_size: int) -> None:
        shape = tuple(n for n, _, _ in dims)
        maxdims = tuple(
            None if kind == "unlimited" else (n if kind == "fixed" else n + extra)
            for n, kind, extra in dims
        )
        chunk = guess_chunk_shape(shape, maxdims, item_size)
        assert len(chunk) == len(shape)
        limits = [max(m, 1) if m is not None else None for m in maxdims]
        for c, m in zip(chunk, limits):
            assert c >= 1
            assert m is None or c <= m
        nbytes = math.prod(chunk) * item_size
        if None not in limits and math.prod(m for m in limits if m) * item_size <= MAX_CHUNK_BYTES:
            assert chunk == tuple(limits)  # the whole (maximum) dataspace is one chunk
        else:
            assert MIN_CHUNK_BYTES <= nbytes <= MAX_CHUNK_BYTES
        # the client's validator accepts whatever we guess
        assert adjust_chunk_shape(list(chunk), shape, item_size, maxdims=maxdims) == chunk


class TestAdjustChunkShape:
    def test_keeps_client_shape_exactly(self) -> None:
        assert adjust_chunk_shape([1000, 1000], (2000, 1000), 8) == (1000, 1000)  # 8 MB kept
        assert adjust_chunk_shape([1, 1], (2000, 1000), 8) == (1, 1)  # tiny kept
        assert adjust_chunk_shape([50, 7], (10, 5), 4, maxdims=(None, 7)) == (50, 7)

    def test_zero_extent_allows_one(self) -> None:
        assert adjust_chunk_shape([1], (0,), 8) == (1,)

    @pytest.mark.parametrize(
        "requested, shape, maxdims",
        [
            ([10], (10, 10), None),  # wrong rank
            ([10, 10, 1], (10, 10), None),
            ([0, 5], (10, 10), None),  # not positive
            ([-1, 5], (10, 10), None),
            ([2.5, 5], (10, 10), None),  # not an int
            (["5", 5], (10, 10), None),
            ([True, 5], (10, 10), None),
            ([11, 5], (10, 10), None),  # beyond a fixed extent
            ([5, 21], (10, 10), (None, 20)),  # beyond a bounded maxdims
        ],
    )
    def test_errors(
        self, requested: list[Any], shape: tuple[int, ...], maxdims: tuple[int | None, ...] | None
    ) -> None:
        with pytest.raises(InvalidInput):
            adjust_chunk_shape(requested, shape, 8, maxdims=maxdims)

    def test_service_byte_limit(self) -> None:
        with pytest.raises(InvalidInput):
            adjust_chunk_shape([1000, 1000], (2000, 1000), 8, max_bytes=4 * MIB)
        assert adjust_chunk_shape([500, 1000], (2000, 1000), 8, max_bytes=4 * MIB) == (500, 1000)

    def test_one_element_is_never_too_large(self) -> None:
        """Elements larger than the limit can only be chunked one by one: that chunk is kept."""
        assert adjust_chunk_shape([1], (3,), 100_000_000, max_bytes=64 * MIB) == (1,)
        assert adjust_chunk_shape([1, 1], (3, 2), 100_000_000, max_bytes=64 * MIB) == (1, 1)
        with pytest.raises(InvalidInput, match="exceeds the limit"):
            adjust_chunk_shape([2], (3,), 100_000_000, max_bytes=64 * MIB)

    def test_maxdims_rank_mismatch(self) -> None:
        with pytest.raises(InvalidInput):
            adjust_chunk_shape([5], (10,), 8, maxdims=(None, None))
