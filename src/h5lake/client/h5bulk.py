"""Large values read for ``h5lake load`` into memory kept per thread, sent from there.

A box of values (up to ``loadplan.BLOCK_BYTES``, 8 MiB) read into fresh memory costs its page
faults and zero fill (``clear_page``, a fifth of the client's CPU of a bulk load) and the unmap
when it is freed; turning that into ``bytes`` copies it once more. When a type's bytes in memory
are its wire bytes (fixed-size, no references, the file's order the wire's), :func:`read_box`
reads into a buffer its thread keeps and returns a view of it, which the request sends as it is
(``RestClient.put_bytes`` takes a view). The view is good until the thread's next
:func:`read_box`: a load's worker reads a box and sends it before it reads the next.

A box of whole chunks of an unfiltered dataset, laid one after the other in the box's C order
(chunks spanning the box in every dimension but the first), whose file type is its memory
type, is read with ``read_direct_chunk``: each chunk's stored bytes straight into its place,
one ``pread`` each, without HDF5's selection and copy (0.12 against 0.31-0.35 ms of CPU per
MiB here). Any chunk not stored, or stored with a filter skipped, sends the box the general way.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
from h5py import h5d

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
    mtype = memory_type_id(tid, t)
    chunk = None if sel is None else _direct_chunks(dsid, tid, mtype, sel)
    if sel is not None and chunk is not None:
        buf = scratch(math.prod(s.stop - s.start for s in sel) * mtype.get_size())
        if _read_chunks(dsid, sel, chunk, buf):
            return buf.data
    mspace, fspace, shape = h5values.spaces(dsid, sel)
    buf = scratch(h5values.raw_size(mtype, shape))
    if buf.nbytes:
        dsid.read(mspace, fspace, buf, mtype=mtype)
    return buf.data


def _direct_chunks(dsid: Any, tid: Any, mtype: Any, sel: h5values.Selection) -> tuple[int, ...] | None:
    """The chunk shape when the box ``sel`` can be read from its chunks' stored bytes (see the
    module's text), else None."""
    if mtype != tid:
        return None
    dcpl = dsid.get_create_plist()
    if dcpl.get_layout() != h5d.CHUNKED or dcpl.get_nfilters():
        return None
    chunk = tuple(dcpl.get_chunk())
    if len(chunk) != len(sel) or not sel:
        return None
    lead, rest = sel[0], zip(sel[1:], chunk[1:], strict=True)
    if lead.start % chunk[0] or (lead.stop - lead.start) % chunk[0] or lead.stop == lead.start:
        return None
    if any(s.start % c or s.stop - s.start != c for s, c in rest):
        return None
    return chunk


def _read_chunks(dsid: Any, sel: h5values.Selection, chunk: tuple[int, ...], buf: np.ndarray) -> bool:
    """Each chunk of the box into its place in ``buf``; False (``buf`` to be read again the
    general way) when a chunk is not stored (its values are the fill value), not whole, or
    stored with a filter skipped."""
    step = buf.nbytes // ((sel[0].stop - sel[0].start) // chunk[0])  # one chunk's bytes
    corner = [s.start for s in sel]
    for i, row in enumerate(range(sel[0].start, sel[0].stop, chunk[0])):
        corner[0] = row
        try:
            mask, data = dsid.read_direct_chunk(tuple(corner), out=buf[i * step : (i + 1) * step])
        except (OSError, ValueError, RuntimeError):  # not stored: HDF5 refuses it
            return False
        if mask or memoryview(data).nbytes != step:
            return False
    return True
