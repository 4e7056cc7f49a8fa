"""Block buffers used again: the arrays a streamed read or write fills, without page faults.

A streamed request moves its values through 32 MiB blocks. A fresh block is fresh memory: the
kernel maps and zero-fills every page on first touch, which cost a third of the CPU of a binary
read of raw chunks (perf: ``clear_page`` under page faults). A ``BufferPool`` keeps a few
blocks and hands them out again once nothing uses them any more.

"Nothing uses it" is decided by the buffer itself: blocks are ``bytearray``s, and a
``bytearray`` cannot change size while any view of it is alive (the arrays made from it and
every ``memoryview`` of them, including the slices a transport still holds to send). So a
block is free exactly when it can be resized; no caller has to give it back.

Blocks are kept only while some stream uses the pool (``with pool.streaming():``): when the
last one ends, the free blocks are dropped, so an idle server process holds none (four kept
blocks are 128 MiB; with several workers, one worker's kept blocks would add to another's
transfer: docs/performance.md, "Memory"). A stream's own blocks are used again block after
block; a new request faults its blocks in once.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

BLOCK_SIZES = 32 * 1024 * 1024  # blocks of up to this many bytes are kept
KEPT = 4  # at most this many blocks kept per process (idle ones cost resident memory)
MIN_BYTES = 1024 * 1024  # smaller arrays are fresh memory: a kept block is zero-filled whole when made


class BufferPool:
    def __init__(self, max_bytes: int = BLOCK_SIZES, kept: int = KEPT, min_bytes: int = MIN_BYTES) -> None:
        self.max_bytes = max_bytes
        self.min_bytes = min_bytes
        self.kept = kept
        self._blocks: list[bytearray] = []
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
        return sum(len(b) for b in self._blocks)

    def array(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
        """An uninitialised C-ordered array (as ``np.empty``), on a kept block when one is free.
        An array under ``min_bytes`` never takes one: a small read alone in its process would
        otherwise make (and zero-fill) a whole block, dropped when its stream ends."""
        nbytes = math.prod(shape) * dtype.itemsize
        if not self.min_bytes <= nbytes <= self.max_bytes or nbytes == 0 or dtype.hasobject or dtype.subdtype is not None or not self._streams:
            return np.empty(shape, dtype=dtype)  # (an array type's dims add to the shape)
        with self._lock:  # the array's view of the block is made before another caller looks
            block = next((b for b in self._blocks if _unused(b)), None)
            if block is None:
                if len(self._blocks) >= self.kept:
                    return np.empty(shape, dtype=dtype)  # all busy: fresh memory
                block = bytearray(self.max_bytes + 1)  # zero-filled once, here
                del block[-1]  # one spare byte: the test in ``_unused`` never moves the block
                self._blocks.append(block)
            # frombuffer holds a view (an export) of the block for as long as the array or any
            # array or memoryview made from it lives; np.ndarray(buffer=...) would not
            return np.frombuffer(block, dtype=dtype, count=math.prod(shape)).reshape(shape)


def _unused(block: bytearray) -> bool:
    """Whether no view of ``block`` is alive: only then may it grow (and shrink back)."""
    try:
        block.append(0)
    except BufferError:
        return False
    del block[-1]
    return True
