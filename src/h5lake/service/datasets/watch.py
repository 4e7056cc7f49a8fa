"""The watch: waiting, without a thread, until a dataset's document changes in the store.

A waiter (``GET /datasets/{id}/shape?wait=S``, ``GET /datasets/{id}?wait=S``, api/routes/watch.py)
waits on the stored document's ETag. Each process keeps one entry per watched document, shared by
all its waiters:

* a change made by this process wakes the waiters at once: `Documents` reports every document it
  writes or deletes (`Watch.changed`), which completes each waiting waiter's future;
* a change made by another process (any server on the same store) is seen by the process's one
  poller task, which asks the store for each watched document's ETag (one HEAD per watched
  document per ``interval``, however many wait on it) and wakes that document's waiters.

The waiters that saw one ETag and want the same thing made at the change (`Watcher.made_at_change`:
the route's reply) form a group with one follower task: at the change it makes the thing once,
then completes each waiter's future with it, so a change costs one make per group and one wake-up
per waiter. A waiter is a coroutine, a future and a timer handle: no thread, no task of its own.
The store pays ``1 / interval`` HEADs per second per watched document per process; at most
``most`` documents are watched at once per process, more get `Busy` (503), so one process never
asks more than ``most / interval`` HEADs per second (docs/api.md, "The watch").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from h5lake.errors import Busy
from h5lake.storage import Store

log = logging.getLogger(__name__)
T = TypeVar("T")

HEADS_AT_ONCE = 32
"""Store HEADs the poller has in flight at once."""


@dataclass
class _Group:
    """The waiters on one document that saw one ETag and want the same thing made at its change."""

    waiting: set[asyncio.Future[Any]] = field(default_factory=set)
    follower: asyncio.Task[None] | None = None


@dataclass
class _Watched:
    etag: str | None  # the document's ETag as last seen (None: no document)
    # a future per coroutine now waiting for a change, completed by it: a change costs one
    # ``set_result`` per waiting coroutine, not a task or an ``asyncio.wait`` each
    waiting: set[asyncio.Future[None]] = field(default_factory=set)
    groups: dict[tuple[str | None, Hashable], _Group] = field(default_factory=dict)
    waiters: int = 0


class Watcher:
    """One waiter's hold on a watched document (`Watch.watching`)."""

    def __init__(self, entry: _Watched) -> None:
        self._entry = entry

    @property
    def etag(self) -> str | None:
        """The document's ETag as this process last saw it."""
        return self._entry.etag

    async def changed_from(self, seen: str | None, deadline: float | None = None, stop: asyncio.Future[Any] | None = None) -> bool:
        """Wait until the document's ETag is seen to differ from ``seen`` (True), or until the
        loop's clock reaches ``deadline`` or ``stop`` is done (False, the ETag unchanged)."""
        entry = self._entry
        if entry.etag != seen:
            return True
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry.waiting.add(woken)
        try:
            await _until(woken, deadline, stop)
        finally:
            entry.waiting.discard(woken)
        return entry.etag != seen

    async def made_at_change(
        self, seen: str | None, what: Hashable, make: Callable[[], Awaitable[T]], deadline: float,
        stop: asyncio.Future[Any] | None = None,
    ) -> tuple[str | None, T] | None:
        """``(etag, make())`` once the document's ETag differs from ``seen`` (``etag`` the one
        seen before ``make`` began), or None when the loop's clock reaches ``deadline`` or
        ``stop`` is done first. The waiters that saw ``seen`` and want the same ``what`` share
        one ``make()`` per change, made by one follower task: a change wakes each of them once,
        with the result ready (an exception of ``make`` is raised in each)."""
        entry = self._entry
        key = (seen, what)
        group = entry.groups.get(key)
        if group is None:
            group = entry.groups[key] = _Group()
            group.follower = asyncio.get_running_loop().create_task(self._follow(key, group, make))
        mine: asyncio.Future[tuple[str | None, T] | None] = asyncio.get_running_loop().create_future()
        group.waiting.add(mine)
        try:
            return await _until(mine, deadline, stop)
        finally:
            group.waiting.discard(mine)
            if not group.waiting and entry.groups.get(key) is group:
                del entry.groups[key]
                if group.follower is not None:
                    group.follower.cancel()

    async def _follow(self, key: tuple[str | None, Hashable], group: _Group, make: Callable[[], Awaitable[Any]]) -> None:
        entry = self._entry
        await self.changed_from(key[0])
        if entry.groups.get(key) is group:
            del entry.groups[key]  # who comes now waits for the change after this one
        etag = entry.etag
        try:
            made = await make()
        except Exception as exc:  # noqa: BLE001 -- raised in each waiter, as awaiting make() would
            for waiter in group.waiting:
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        for waiter in group.waiting:
            if not waiter.done():
                waiter.set_result((etag, made))


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


def _wake(woken: asyncio.Future[Any]) -> None:
    if not woken.done():
        woken.set_result(None)


async def _until(woken: asyncio.Future[T], deadline: float | None, stop: asyncio.Future[Any] | None) -> T:
    """``woken``'s result; None (set by this) when the loop's clock reaches ``deadline`` or ``stop``
    is done first."""
    if stop is not None and stop.done():
        _wake(woken)
    timer = None if deadline is None else asyncio.get_running_loop().call_at(deadline, _wake, woken)

    def stopped(_: object) -> None:
        _wake(woken)

    if stop is not None:
        stop.add_done_callback(stopped)
    try:
        return await woken
    finally:
        if timer is not None:
            timer.cancel()
        if stop is not None:
            stop.remove_done_callback(stopped)
