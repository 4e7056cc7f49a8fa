"""Kept blocks (chunks/buffers.py): a block is handed out again only once no view of it lives."""

from __future__ import annotations

import gc

import numpy as np

from h5lake.chunks.buffers import BODY_ALIGN, BufferPool
from h5lake.storage import direct


def test_a_block_in_use_is_never_handed_out_twice() -> None:
    pool = BufferPool(max_bytes=1 << 20, min_bytes=1, kept=2)
    with pool.streaming():
        a = pool.array((256, 256), np.dtype(np.float32))
        b = pool.array((256, 256), np.dtype(np.float32))
        c = pool.array((1000,), np.dtype(np.int64))  # both kept blocks busy: fresh memory
        a[...] = 1
        b[...] = 2
        c[...] = 3
        assert (a == 1).all() and (b == 2).all()
        assert not np.shares_memory(a, b) and not np.shares_memory(a, c) and not np.shares_memory(b, c)
        view = memoryview(a.reshape(-1).view(np.uint8))[1000:2000]  # as a transport holds a slice
        base = a.__array_interface__["data"][0]
        del a
        gc.collect()
        d = pool.array((256, 256), np.dtype(np.float32))
        assert d.__array_interface__["data"][0] != base  # the slice still uses a's block
        d[...] = 4
        assert bytes(view) == np.ones(250, dtype=np.float32).tobytes()
        del view, d
        gc.collect()
        e = pool.array((128,), np.dtype(np.uint8))
        assert e.__array_interface__["data"][0] == base  # a's block, free again
        assert not np.shares_memory(e, b)


def test_blocks_are_used_again_once_free() -> None:
    pool = BufferPool(max_bytes=1 << 20, min_bytes=1, kept=1)
    with pool.streaming():
        a = pool.array((1 << 18,), np.dtype(np.float32))
        first = a.__array_interface__["data"][0]
        del a
        b = pool.array((1000,), np.dtype(np.float64))
        assert b.__array_interface__["data"][0] == first
        big = pool.array((1 << 21,), np.dtype(np.uint8))  # larger than a kept block: its own memory
        assert big.nbytes == 1 << 21 and not np.shares_memory(big, b)


def test_arrays_are_shaped_as_np_empty_makes_them() -> None:
    pool = BufferPool(max_bytes=1 << 20, min_bytes=1, kept=2)
    with pool.streaming():
        for shape, dtype in [((), np.dtype("<i4")), ((3,), np.dtype(("<f8", (2, 2)))), ((), np.dtype(("<i2", (3,)))),
                             ((4, 5), np.dtype([("a", "<i4"), ("b", "<f8")]))]:
            made = pool.array(shape, dtype)
            expected = np.empty(shape, dtype=dtype)
            assert made.shape == expected.shape and made.dtype == expected.dtype


def test_blocks_are_kept_only_while_a_stream_runs() -> None:
    """An idle process holds no blocks: the last stream to end drops them, also the ones still
    in use (they live on as long as their views, then their memory goes)."""
    pool = BufferPool(max_bytes=1 << 20, min_bytes=1, kept=2)
    outside = pool.array((1 << 18,), np.dtype(np.float32))
    assert pool.kept_bytes == 0 and outside.nbytes == 1 << 20  # no stream: fresh memory, not kept
    with pool.streaming():
        a = pool.array((1 << 18,), np.dtype(np.float32))
        with pool.streaming():
            b = pool.array((1 << 18,), np.dtype(np.float32))
            a[...], b[...] = 1, 2
        assert pool.kept_bytes == 2 << 20  # the other stream still runs: both blocks kept
        del b
    assert pool.kept_bytes == 0
    assert (a == 1).all()  # a block in use when the streams ended still holds its values


def test_a_small_array_takes_no_block() -> None:
    """A read of a few values alone in its process makes no block (zero-filling 32 MiB each)."""
    pool = BufferPool()
    with pool.streaming():
        small = pool.array((10,), np.dtype(np.int32))
        small[...] = 7
        assert pool.kept_bytes == 0
        big = pool.array((pool.min_bytes // 8,), np.dtype(np.float64))
        assert pool.kept_bytes == pool.max_bytes and np.shares_memory(big, np.frombuffer(pool._blocks[0][0], np.uint8))
        assert (small == 7).all()


def test_arrays_on_kept_blocks_start_on_a_page_boundary() -> None:
    """A streamed write's whole chunks are views of its block: aligned, the local store writes
    them past the page cache (storage/direct.py wants a page-aligned, writable buffer)."""
    pool = BufferPool(max_bytes=4 << 20, min_bytes=1, kept=2)
    with pool.streaming():
        a = pool.array((2 << 20,), np.dtype(np.uint8))
        b = pool.array((1 << 18,), np.dtype(np.float64))
        for arr in (a, b):
            assert arr.__array_interface__["data"][0] % BODY_ALIGN == 0
            assert direct.wanted(arr.data)
        base = a.__array_interface__["data"][0]
        del a
        gc.collect()
        again = pool.array((3 << 20,), np.dtype(np.uint8))
        assert again.__array_interface__["data"][0] == base  # the same block, the same aligned start
        again[-1] = 1  # the whole array lies inside its block
        assert pool.kept_bytes == 8 << 20


def test_arrays_beyond_the_kept_blocks_start_on_a_page_boundary_too() -> None:
    """With every kept block busy (more streams than blocks) the array is fresh memory, still
    aligned, and shares nothing with the blocks."""
    pool = BufferPool(max_bytes=2 << 20, min_bytes=1, kept=1)
    with pool.streaming():
        a = pool.array((1 << 20,), np.dtype(np.uint8))
        b = pool.array((512, 256), np.dtype(np.float64))
        assert b.shape == (512, 256) and b.flags.c_contiguous and b.flags.writeable
        assert b.__array_interface__["data"][0] % BODY_ALIGN == 0 and direct.wanted(b.data)
        a[...] = 1
        b[...] = 2
        assert (a == 1).all() and not np.shares_memory(a, b)
