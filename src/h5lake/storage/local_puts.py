"""``put_hashed_many`` of `LocalStore`: the chunks of one window put at once, their folder fsync'ed once.

Each chunk is written to a temporary file, fsync'ed and renamed into place on the store's
threads, all at once; then each folder they are in is fsync'ed once, begun after every rename
(the chunks of a request share one folder: one folder fsync for many puts instead of nearly one
each). Every one is durable when the call returns; after a failure some may be in place (as
after failed single puts), none is reported durable.

With ``ready`` (the catalog's intent of the write, being written: `ChunkCatalog.recording`
with ``early``), the files are written and fsync'ed first and renamed only once ``await
ready()`` returned; an error of either removes them. The intent's own put (a small file, its
fsync and its folder's) then runs beside the chunks' writes instead of before them: an 8 MiB
value PUT of two 4 MiB chunks waited ~55 ms for its intent before its chunks' ~150 ms
(bench/ingest.py --bulk-mib, 16 workers). A crash before the rename leaves temporary files,
removed once an hour old as after any put.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from h5lake.errors import StorageError

if TYPE_CHECKING:
    from h5lake.storage.posix import FolderSyncs
    from h5lake.storage.threads import ThreadLane

T = TypeVar("T")


class HashedPuts:
    """The ``put_hashed_many`` of `LocalStore` (a mixin: it uses the store's paths, threads and puts)."""

    if TYPE_CHECKING:
        _root: Any
        _folder_syncs: FolderSyncs

        def _path(self, key: str) -> str: ...
        def _lane(self) -> ThreadLane: ...
        async def _run(self, fn: Callable[..., T], *args: object) -> T: ...
        def _write_temp(self, key: str, folder: str, data: bytes | memoryview, etag: str, fsync: bool = True) -> str: ...
        def _put(self, key: str, path: str, data: bytes | memoryview, if_match: str | None, if_none_match: bool,
                 md5: str | None = None, sync_name: bool = True, temp: str | None = None) -> str: ...

    async def put_hashed_many(self, items: Sequence[tuple[str, bytes | memoryview, str]],
                              ready: Callable[[], Awaitable[object]] | None = None) -> None:
        """``put_hashed`` of each ``(key, data, md5)`` (see the module's text)."""
        lane = self._lane()
        paths = [self._path(key) for key, _, _ in items]
        views = [data if isinstance(data, bytes) else memoryview(data).cast("B") for _, data, _ in items]
        temps: list[str | None] = [None] * len(items)
        if ready is not None:
            made = await self._all([lane.run(self._write_temp, key, os.path.dirname(path), view, md5)
                                    for (key, _, md5), path, view in zip(items, paths, views, strict=True)])
            try:
                _raise_first(made)
                await ready()
            except BaseException:
                for temp in made:
                    if isinstance(temp, str):
                        with contextlib.suppress(OSError):
                            os.unlink(temp)
                raise
            temps = [temp for temp in made if isinstance(temp, str)]
        _raise_first(await self._all([
            lane.run(self._put, key, path, view, None, False, md5, False, temp)
            for (key, _, md5), path, view, temp in zip(items, paths, views, temps, strict=True)]))
        for folder in dict.fromkeys(os.path.dirname(path) for path in paths):
            await self._run(self._folder_syncs.sync_renamed, folder)

    async def _all(self, futures: list[asyncio.Future[T]]) -> list[T | BaseException]:
        """The outcomes of calls on a lane once all ended (an ``OSError`` as a ``StorageError``);
        when cancelled, the calls not begun are dropped and the begun ones end on their own."""
        try:
            outcomes = await asyncio.gather(*futures, return_exceptions=True)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        return [_storage_error(self._root, o) if isinstance(o, OSError) else o for o in outcomes]


def _storage_error(root: object, exc: OSError) -> StorageError:
    error = StorageError(f"local store {root}: {exc}")
    error.__cause__ = exc
    return error


def _raise_first(outcomes: Sequence[object]) -> None:
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
