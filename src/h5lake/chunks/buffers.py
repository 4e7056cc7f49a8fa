"""Block buffers used again: the arrays a streamed read or write fills, without page faults.

A streamed request moves its values through 32 MiB blocks. A fresh block is fresh memory: the
kernel maps and zero-fills every page on first touch, which cost a third of the CPU of a binary
read of raw chunks (perf: ``clear_page`` under page faults). A ``BufferPool`` keeps a few
blocks and hands them out again once nothing uses them any more.

"Nothing uses it" is decided by the buffer itself: blocks are ``bytearray``s, and a
``bytearray`` cannot change size while any view of it is alive (the arrays made from it and
every ``memoryview`` of them, including the slices a transport still holds to send). So a
block is free exactly when it can be resized; no caller has to give it back.

A block's arrays start on a page boundary (``BODY_ALIGN``), so a streamed write's whole chunks,
views of its block, can be written past the page cache (storage/direct.py): a ``bytearray`` of
this size is ``mmap``'ed memory whose first byte sits 16 bytes past a page boundary.

Blocks are kept only while some stream uses the pool (``with pool.streaming():``): when the
last one ends, the free blocks are dropped, so an idle server process holds none (four kept
blocks are 128 MiB; with several workers, one worker's kept blocks would add to another's
transfer: docs/performance.md, "Memory"). A stream's own blocks are used again block after
block; a new request faults its blocks in once.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

BLOCK_SIZES = 32 * 1024 * 1024  # blocks of up to this many bytes are kept
KEPT = 4  # at most this many blocks kept per process (idle ones cost resident memory)
MIN_BYTES = 1024 * 1024  # smaller arrays are fresh memory: a kept block is 32 MiB of pages, kept while streams run
BODY_ALIGN = 4096  # a buffer's first byte on a page boundary: it can be written with O_DIRECT


class BufferPool:
    def __init__(self, max_bytes: int = BLOCK_SIZES, kept: int = KEPT, min_bytes: int = MIN_BYTES) -> None:
        self.max_bytes = max_bytes
        self.min_bytes = min_bytes
        self.kept = kept
        self._blocks: list[tuple[bytearray, int]] = []  # (block, offset of its aligned start)
        self._lock = threading.Lock()
        self._streams = 0  # streams using the pool now

    @contextlib.contextmanager
    def streaming(self) -> Iterator[None]:
        """Blocks are kept for the streams inside; when the last one leaves, the free ones go."""
        with self._lock:
            self._streams += 1
        try:
            yield
        finally:
            with self._lock:
                self._streams -= 1
                if self._streams == 0:
                    self._blocks = []  # one still in use lives on as long as its views

    @property
    def kept_bytes(self) -> int:
        return self.max_bytes * len(self._blocks)

    def array(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
        """An uninitialised C-ordered array (as ``np.empty``), on a kept block when one is free.
        An array under ``min_bytes`` never takes one: a small read alone in its process would
        otherwise make a whole block, dropped when its stream ends."""
        nbytes = math.prod(shape) * dtype.itemsize
        if not self.min_bytes <= nbytes <= self.max_bytes or nbytes == 0 or dtype.hasobject or dtype.subdtype is not None or not self._streams:
            return np.empty(shape, dtype=dtype)  # (an array type's dims add to the shape)
        with self._lock:  # the array's view of the block is made before another caller looks
            found = next(((b, at) for b, at in self._blocks if _unused(b)), None)
            if found is None:
                if len(self._blocks) >= self.kept:
                    return aligned_empty(shape, dtype)  # all busy: fresh memory
                _, block, at = _aligned(self.max_bytes)  # its pages fault in once, as used
                found = (block, at)
                self._blocks.append(found)
            block, at = found
            # frombuffer holds a view (an export) of the block for as long as the array or any
            # array or memoryview made from it lives; np.ndarray(buffer=...) would not
            return np.frombuffer(block, dtype=dtype, count=math.prod(shape), offset=at).reshape(shape)


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """``np.empty(shape, dtype)`` starting on a page boundary (its pages untouched until used):
    a store may write it past the page cache (storage/direct.py)."""
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + BODY_ALIGN, dtype=np.uint8)
    at = -raw.__array_interface__["data"][0] % BODY_ALIGN
    return raw[at : at + nbytes].view(dtype).reshape(shape)


def _unused(block: bytearray) -> bool:
    """Whether no view of ``block`` is alive: only then may it grow (and shrink back)."""
    try:
        block.append(0)
    except BufferError:
        return False
    del block[-1]
    return True


BODY_KEPT = 8  # request bodies kept per process (10 chunk PUTs at once from one zarr-python client)
BODY_MAX = 16 * 1024 * 1024  # larger bodies are fresh memory (kept blocks: at most 8 x 16 MiB while PUTs run)


class BodyPool:
    """Page-aligned buffers for request bodies read whole (a chunk PUT's), used again.

    A fresh 4 MiB ``bytearray`` is fresh memory: the socket's bytes fault in and zero-fill its
    pages (``clear_page``, ~6% of the server's CPU of a chunk PUT), and freeing it unmaps them.
    A kept block is free again once no view of it is alive (as ``BufferPool``'s), so a body still
    referenced (a store thread still writing it after its request was cancelled) is never
    handed out twice. The view starts on a page boundary, so the store can write it past the
    page cache (storage/direct.py). Blocks are kept while some request uses the pool
    (``with pool.using():``), and dropped when the last one ends."""

    def __init__(self, kept: int = BODY_KEPT, max_bytes: int = BODY_MAX) -> None:
        self.kept = kept
        self.max_bytes = max_bytes
        self._blocks: list[tuple[bytearray, int]] = []  # (block, offset of its aligned start)
        self._lock = threading.Lock()
        self._users = 0
        self.made = 0  # blocks made (kept or not): how often the pool missed

    @contextlib.contextmanager
    def using(self) -> Iterator[None]:
        with self._lock:
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    self._blocks = []

    def view(self, nbytes: int) -> memoryview:
        """A writable, page-aligned view of ``nbytes`` uninitialised bytes (inside ``using``)."""
        if nbytes > self.max_bytes or not self._users:
            return _aligned(nbytes)[0]
        with self._lock:  # the view is made before another caller looks
            free = [i for i, (b, at) in enumerate(self._blocks) if _unused(b)]
            fits = [i for i in free if len(self._blocks[i][0]) - self._blocks[i][1] >= nbytes]
            if fits:
                block, at = self._blocks[min(fits, key=lambda i: len(self._blocks[i][0]))]
                return memoryview(block)[at : at + nbytes]
            view, block, at = _aligned(nbytes)
            self.made += 1
            if len(self._blocks) < self.kept:
                self._blocks.append((block, at))
            elif free:  # a free one too small: replaced by this larger one
                self._blocks[free[0]] = (block, at)
            return view


_uninitialised = ctypes.pythonapi.PyByteArray_FromStringAndSize
_uninitialised.restype = ctypes.py_object
_uninitialised.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t)


def _aligned(nbytes: int) -> tuple[memoryview, bytearray, int]:
    """A view of ``nbytes`` starting on a page boundary of a new block (one spare byte past
    its end, so the test of ``_unused`` never moves it). The block is not zero-filled
    (``bytearray(n)`` writes every byte, with the GIL held: 10% of the server's GIL time in a
    bulk load); it is filled before it is read (a body received into it, values written)."""
    size = -(-nbytes // BODY_ALIGN) * BODY_ALIGN
    block: bytearray = _uninitialised(None, size + BODY_ALIGN + 1)
    del block[-1]
    held = ctypes.c_char.from_buffer(block)
    at = -ctypes.addressof(held) % BODY_ALIGN
    del held
    return memoryview(block)[at : at + nbytes], block, at
