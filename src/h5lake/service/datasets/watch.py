"""The watch: waiting, without a thread, until a dataset's document changes in the store.

A waiter (``GET /datasets/{id}/shape?wait=S``, ``GET /datasets/{id}?wait=S``, api/routes/watch.py)
waits on the stored document's ETag. Each process keeps one entry per watched document, shared by
all its waiters:

* a change made by this process wakes the waiters at once: `Documents` reports every document it
  writes or deletes (`Watch.changed`), which completes each waiting waiter's future;
* a change made by another process (any server on the same store) is seen by the process's one
  poller task, which asks the store for each watched document's ETag (one HEAD per watched
  document per ``interval``, however many wait on it) and wakes that document's waiters.

So a waiter is a coroutine, a future and a timer handle: no thread, no task, a few hundred bytes.
The store pays ``1 / interval`` HEADs per second per watched document per process; at most
``most`` documents are watched at once per process, more get `Busy` (503), so one process never
asks more than ``most / interval`` HEADs per second (docs/api.md, "The watch").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from h5lake.errors import Busy
from h5lake.storage import Store

log = logging.getLogger(__name__)

HEADS_AT_ONCE = 32
"""Store HEADs the poller has in flight at once."""


@dataclass
class _Watched:
    etag: str | None  # the document's ETag as last seen (None: no document)
    # one future per waiter now waiting, each done at the next change: a change costs one
    # ``set_result`` per waiter (one wake-up of its task), not a task or an ``asyncio.wait``
    waiting: set[asyncio.Future[None]] = field(default_factory=set)
    waiters: int = 0


class Watcher:
    """One waiter's hold on a watched document (`Watch.watching`)."""

    def __init__(self, entry: _Watched) -> None:
        self._entry = entry

    @property
    def etag(self) -> str | None:
        """The document's ETag as this process last saw it."""
        return self._entry.etag

    async def changed_from(self, seen: str | None, deadline: float, stop: asyncio.Future[None] | None = None) -> bool:
        """Wait until the document's ETag is seen to differ from ``seen`` (True), or until the
        loop's clock reaches ``deadline`` or ``stop`` is done (False, the ETag unchanged)."""
        entry = self._entry
        if entry.etag != seen:
            return True
        if stop is not None and stop.done():
            return False
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()
        entry.waiting.add(woken)
        timer = loop.call_at(deadline, _wake, woken)

        def stopped(_: object) -> None:
            _wake(woken)

        if stop is not None:
            stop.add_done_callback(stopped)
        try:
            await woken
        finally:
            timer.cancel()
            entry.waiting.discard(woken)
            if stop is not None:
                stop.remove_done_callback(stopped)
        return entry.etag != seen


class Watch:
    """The documents watched by this process, and the poller that looks at them in the store."""

    def __init__(self, store: Store, *, interval: float = 0.5, most: int = 256) -> None:
        self.store = store
        self.interval = interval
        self.most = most
        self._watched: dict[str, _Watched] = {}
        self._poller: asyncio.Task[None] | None = None

    @property
    def watched(self) -> int:
        """Documents with a waiter now."""
        return len(self._watched)

    @contextlib.asynccontextmanager
    async def watching(self, key: str) -> AsyncIterator[Watcher]:
        """Hold the document at ``key`` watched while inside: a new one is looked up once (its
        current ETag); `Busy` when ``most`` documents are watched already."""
        entry = self._watched.get(key)
        if entry is None:
            if len(self._watched) >= self.most:
                raise Busy(f"this server watches {self.most} datasets already; try again later")
            info = await self.store.head(key)
            entry = self._watched.get(key)  # another waiter may have made it meanwhile
            if entry is None:
                if len(self._watched) >= self.most:
                    raise Busy(f"this server watches {self.most} datasets already; try again later")
                entry = self._watched[key] = _Watched(None if info is None else info.etag)
        entry.waiters += 1
        self._start_polling()
        try:
            yield Watcher(entry)
        finally:
            entry.waiters -= 1
            if entry.waiters == 0 and self._watched.get(key) is entry:
                del self._watched[key]

    def changed(self, key: str, etag: str | None) -> None:
        """This process stored (or, with None, deleted) the document at ``key``."""
        entry = self._watched.get(key)
        if entry is not None:
            _seen(entry, etag)

    def _start_polling(self) -> None:
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll())

    async def _poll(self) -> None:
        """Look at every watched document once per ``interval`` while any is watched."""
        gate = asyncio.Semaphore(HEADS_AT_ONCE)

        async def look(key: str, entry: _Watched) -> None:
            async with gate:
                try:
                    info = await self.store.head(key)
                except Exception:  # the store failing now: keep the last ETag, look again later
                    log.warning("watch: cannot look at %s", key, exc_info=True)
                    return
            _seen(entry, None if info is None else info.etag)

        while self._watched:
            await asyncio.sleep(self.interval)
            await asyncio.gather(*(look(k, e) for k, e in list(self._watched.items())))

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller


def _seen(entry: _Watched, etag: str | None) -> None:
    if etag != entry.etag:
        entry.etag = etag
        for woken in entry.waiting:
            _wake(woken)


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)
