"""``GetMapped`` on the local directory store: a large object as a read-only mapping of its file.

A chunk served as stored (the Zarr bridge's chunk GET) is only passed on to a socket. Read into
new memory, a 4 MiB object costs a copy from the page cache plus the new memory itself: fresh
pages faulted in and zeroed by the kernel, unmapped again when freed, about half the server's
CPU for such a GET on this 2-core machine (``perf`` of ``bench/zarr.py``'s read, docs/zarr.md).
Mapped, the reply is written to the socket straight from the page cache's pages.

Why it is safe: no object's file is ever written after it got its name (a put renames a new
file into place, a delete unlinks a name; storage/hardlinks.py), so a mapping keeps the bytes
of the version it was made from, as an open file does, for as long as a reply holds it. A file
truncated by hand under a running server would make a reader of its mapping fail (``SIGBUS``);
the store's own writes never do that.

Objects up to the store's inline read size are read as ``get`` reads them (a copy costs less
than a mapping there). The mapping is made on the store's threads with ``MAP_POPULATE``: the
page tables are filled in one call, and a file not in the page cache is read there, not on the
event loop's thread when the reply is written.
"""

from __future__ import annotations

import errno
import mmap
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from h5lake.storage.base import Blob, Later, MappedBlob
from h5lake.storage.md5 import md5_hex
from h5lake.storage.posix import changed_at, open_regular, read_all, valid_etag

T = TypeVar("T")

_POPULATE = getattr(mmap, "MAP_POPULATE", 0)  # Linux


def map_view(fd: int, size: int) -> memoryview:
    """The ``size`` bytes of the file behind ``fd``, mapped read-only (an empty view for 0); read
    into memory where the file system cannot map files."""
    if size == 0:
        return memoryview(b"")
    try:
        return memoryview(mmap.mmap(fd, size, flags=mmap.MAP_SHARED | _POPULATE, prot=mmap.PROT_READ))
    except OSError as exc:
        if exc.errno not in (errno.ENODEV, errno.EACCES, errno.EINVAL):
            raise
        return memoryview(read_all(fd, size))


class MappedReads:
    """The ``get_mapped`` of `LocalStore` (a mixin: it uses the store's paths, threads and gets)."""

    if TYPE_CHECKING:

        def _path(self, key: str) -> str: ...
        async def _run(self, fn: Callable[..., T], *args: object) -> T: ...
        def _inline(self, fn: Callable[..., T], *args: object) -> T: ...
        def _raw_etag(self, fd: int) -> bytes | None: ...
        def get_at_once(self, key: str) -> Blob | None | Later: ...

    async def get_mapped(self, key: str) -> MappedBlob | None:
        blob = self.get_at_once(key)  # small, or read lately: as ``get`` answers
        if blob is None:
            return None
        if not isinstance(blob, Later):
            return MappedBlob(memoryview(blob.data), blob.etag, blob.last_modified)
        return await self._run(self._get_mapped, self._path(key))

    def _get_mapped(self, path: str) -> MappedBlob | None:
        opened = open_regular(path)
        if opened is None:
            return None
        fd, st = opened
        try:
            data = map_view(fd, st.st_size)
            etag = valid_etag(self._raw_etag(fd), st)
        finally:
            os.close(fd)
        return MappedBlob(data, etag or md5_hex(data), changed_at(st))
