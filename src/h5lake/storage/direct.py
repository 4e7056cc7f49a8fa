"""Large writes past the page cache: a new file's bytes written with ``O_DIRECT``.

A buffered ``write`` copies every byte into the page cache (``copy_folio_from_iter_atomic``,
a third of the server's CPU for a 4 MiB chunk PUT), and the ``fsync`` that follows then writes
those pages out. With ``O_DIRECT`` the disk reads the caller's buffer itself: writing 4 MiB and
fsync'ing it cost ~0.5 ms of CPU here against 1.3-6.6 ms buffered (docs/performance.md, "A
chunk PUT"). Durability is the same: the file is still fsync'ed (its size and extents, and the
disk's write cache), then renamed.

``O_DIRECT`` wants the buffer's address, the file offset and the length aligned to the device's
logical block: a write is direct only for a buffer of at least ``DIRECT_MIN`` bytes that starts
on a page boundary (``ALIGN``, a multiple of any logical block size); its last partial page is
written buffered after it. Only writable buffers are looked at (their address is found with
``ctypes``): the request bodies read whole into aligned buffers (chunks/buffers.py,
``BodyPool``). A file system that refuses ``O_DIRECT`` (``EINVAL``: tmpfs before Linux 6.6,
some FUSE) is written buffered from then on.

The bytes so written are not in the page cache afterwards: the first read of such an object
reads the disk (a chunk written once and read much later, the usual case for chunk PUTs, is
read from the disk either way once its pages are evicted). Small objects (documents, intents),
read back soon and often, stay buffered.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os

DIRECT_MIN = 1024 * 1024  # smaller writes stay buffered: small objects are read back soon
ALIGN = 4096
O_DIRECT: int = getattr(os, "O_DIRECT", 0)


def address(data: bytes | memoryview) -> int | None:
    """The address of a writable buffer's first byte; None for a read-only one."""
    view = memoryview(data)
    if view.readonly or not view.c_contiguous or not view.nbytes:
        return None
    held = ctypes.c_char.from_buffer(view)  # an export of the buffer, dropped at once
    try:
        return ctypes.addressof(held)
    finally:
        del held


def wanted(data: bytes | memoryview) -> bool:
    """Whether ``data`` can be written with ``O_DIRECT`` (large, page-aligned, writable)."""
    if not O_DIRECT or memoryview(data).nbytes < DIRECT_MIN:
        return False
    at = address(data)
    return at is not None and at % ALIGN == 0


def write_all(fd: int, data: bytes | memoryview, direct: bool) -> bool:
    """Write all of ``data`` at ``fd``'s position. With ``direct`` (``fd`` opened with
    ``O_DIRECT``), its whole pages are written direct and the rest buffered; False when the
    file system refused the first direct write (the bytes are then written buffered)."""
    view = memoryview(data).cast("B")
    total, honoured = len(view), True
    if direct:
        head = len(view) - len(view) % ALIGN
        try:
            while head:
                n = os.write(fd, view[:head])
                view, head = view[n:], head - n
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
            # the refused call placed nothing (a short write may leave the rest unaligned):
            # the rest goes buffered from where the file's position is
            honoured = len(view) != total  # refused from the start: the file system's answer
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~O_DIRECT)
    while view:
        view = view[os.write(fd, view) :]
    return honoured
