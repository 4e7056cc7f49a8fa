"""Large values read for ``h5lake load`` into memory kept per thread, sent from there.

A box of values (up to ``loadplan.BLOCK_BYTES``, 8 MiB) read into fresh memory costs its page
faults and zero fill (``clear_page``, a fifth of the client's CPU of a bulk load) and the unmap
when it is freed; turning that into ``bytes`` copies it once more. When a type's bytes in memory
are its wire bytes (fixed-size, no references, the file's order the wire's), :func:`read_box`
reads into a buffer its thread keeps and returns a view of it, which the request sends as it is
(``RestClient.put_bytes`` takes a view). The view is good until the thread's next
:func:`read_box`: a load's worker reads a box and sends it before it reads the next.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from h5lake.client import h5values
from h5lake.client.h5types import memory_type_id
from h5lake.model.types import TypeJson, array_dims, to_dtype, wire_dtype

KEEP_BYTES = 64 * 1024 * 1024  # a larger box is read into fresh memory, not kept by its thread


class _Kept(threading.local):
    buffer: np.ndarray | None = None


_KEPT = _Kept()


def scratch(nbytes: int) -> np.ndarray:
    """``nbytes`` of this thread's kept memory (uninitialised), or fresh memory beyond
    ``KEEP_BYTES``."""
    if nbytes > KEEP_BYTES:
        return np.empty(nbytes, dtype=np.uint8)
    buffer = _KEPT.buffer
    if buffer is None or buffer.nbytes < nbytes:
        buffer = _KEPT.buffer = np.empty(max(nbytes, 1), dtype=np.uint8)
    return buffer[:nbytes]


def wire_is_memory(t: TypeJson) -> bool:
    """Whether values of ``t`` have the same bytes in memory (as HDF5 reads them) and on the wire."""
    if not h5values.is_raw(t):
        return False
    _, leaf = array_dims(t)
    return to_dtype(leaf) == wire_dtype(leaf)


def read_box(dsid: Any, tid: Any, t: TypeJson, sel: h5values.Selection | None, refs: h5values.References) -> bytes | memoryview:
    """``h5values.read_dataset``, into this thread's kept memory when ``t``'s memory bytes are
    its wire bytes: a view valid until this thread's next call."""
    if not wire_is_memory(t):
        return h5values.read_dataset(dsid, tid, t, sel, refs)
    mspace, fspace, shape = h5values.spaces(dsid, sel)
    mtype = memory_type_id(tid, t)
    buf = scratch(h5values.raw_size(mtype, shape))
    if buf.nbytes:
        dsid.read(mspace, fspace, buf, mtype=mtype)
    return buf.data
