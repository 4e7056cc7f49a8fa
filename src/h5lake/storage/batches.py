"""``CreateMany`` on the local directory store: the objects of one batch made durable together.

A single put pays two fsyncs (its file, then its folder: about 1 ms here), so a request that
makes 300 objects paid 300 of each. A batch instead writes every object to a temporary file of
its own, makes them all durable with one ``syncfs(2)``, links each into place create-only
(``os.link`` under the key's lock, as a single create-only put does), and makes the new names
durable with a second ``syncfs``: two file system flushes for the batch (~5 ms here, measured
with 300 files) instead of about 600.

Why each object is whole or absent after a crash at any moment: an object gets its name only
after the ``syncfs`` that made its bytes (and its ETag attribute) durable, and ``link`` is
atomic; nothing is reported made before the second ``syncfs`` returned. A crash leaves at most
stray temporary files, which listings skip and remove once an hour old (as after a single put).
The cost that is shared is a whole file system's: ``syncfs`` also writes out dirty data of
other files on the same file system, so a batch is slower on a disk busy with other writers.
Where ``syncfs`` is missing (not Linux) or the batch is small, the objects are single puts.

``H5LAKE_TEST_KILL_BEFORE_CREATE=N`` (tests only): the process kills itself with SIGKILL just
before linking the N-th object of a batch, the batch's bytes written and durable, N-1 objects
made (tests/storage/test_batches.py, tests/scale/test_batch_crash.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from h5lake.storage.base import PreconditionFailed
from h5lake.storage.md5 import md5_hex
from h5lake.storage.posix import can_sync_filesystem, folder_conflict, sync_filesystem
from h5lake.storage.recent import RecentObjects

T = TypeVar("T")

SHARED_FROM = 4  # objects in a batch from which one shared flush beats fsyncs of each
_KILL_BEFORE = int(os.environ.get("H5LAKE_TEST_KILL_BEFORE_CREATE") or 0)


class BatchCreates:
    """The ``create_many`` of `LocalStore` (a mixin: it uses the store's paths, locks and puts)."""

    if TYPE_CHECKING:
        _root: str
        _recent: RecentObjects

        def _path(self, key: str) -> str: ...
        async def _run(self, fn: Callable[..., T], *args: object) -> T: ...
        def _locked(self, key: str) -> contextlib.AbstractContextManager[None]: ...
        def _write_temp(self, key: str, folder: str, data: bytes | memoryview, etag: str, fsync: bool = True) -> str: ...
        async def put(self, key: str, data: bytes | memoryview, *, if_match: str | None = None,
                      if_none_match: bool = False) -> str: ...

    async def create_many(self, items: Sequence[tuple[str, bytes]]) -> list[str | None]:
        if len(items) < SHARED_FROM or not can_sync_filesystem():
            return list(await asyncio.gather(*(self._create_one(key, data) for key, data in items)))
        paths = [self._path(key) for key, _ in items]
        for path in paths:
            self._recent.forget(path)
        # one thread call for the whole batch: a cancelled request leaves no temporary file
        # behind, as the call finishes (and cleans up) on its own
        return await self._run(self._create_batch, items, paths)

    async def _create_one(self, key: str, data: bytes) -> str | None:
        try:
            return await self.put(key, data, if_none_match=True)
        except PreconditionFailed:
            return None

    def _create_batch(self, items: Sequence[tuple[str, bytes]], paths: list[str]) -> list[str | None]:
        # opened before anything is written: syncfs reports writeback errors met since
        fd = os.open(self._root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        temps: list[str] = []
        try:
            etags = []
            for (key, data), path in zip(items, paths, strict=True):
                etag = md5_hex(data)
                temps.append(self._write_temp(key, os.path.dirname(path), data, etag, False))
                etags.append(etag)
            sync_filesystem(fd)  # every object's bytes durable before any gets its name
            made: list[str | None] = []
            for (key, _), path, temp, etag in zip(items, paths, temps, etags, strict=True):
                if _KILL_BEFORE and len(made) + 1 == _KILL_BEFORE:
                    os.kill(os.getpid(), signal.SIGKILL)
                with self._locked(key):
                    try:
                        os.link(temp, path)
                    except FileExistsError:
                        if os.path.isdir(path):
                            raise folder_conflict(key) from None
                        made.append(None)
                        continue
                made.append(etag)
            sync_filesystem(fd)  # the new names durable
            return made
        finally:
            os.close(fd)
            for temp in temps:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)
