"""Two lanes for storage requests: bulk transfers (chunks) and everything else (documents).

The chunk engine marks its chunk reads and writes with ``bulk()``; the mark is a context
variable, so it follows the tasks a fan-out starts and nothing has to pass it down. A backend
queues bulk requests on their own bounded lane (`BulkSlots` on S3, a thread pool of their own in
the local directory), so a document read or write never waits behind a large transfer: a GET of
a group goes through while a 1 GiB read holds every bulk slot.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar

_BULK: ContextVar[bool] = ContextVar("h5lake_bulk_lane", default=False)


@contextlib.contextmanager
def bulk() -> Iterator[None]:
    """Storage requests made inside (and in tasks started inside) go on the bulk lane."""
    token = _BULK.set(True)
    try:
        yield
    finally:
        _BULK.reset(token)


def in_bulk() -> bool:
    return _BULK.get()


class BulkSlots:
    """At most ``limit`` bulk requests at once; requests off the bulk lane never wait here."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a bulk lane needs at least one slot, not {limit}")
        self.limit = limit
        self._slots: asyncio.Semaphore | None = None  # made inside the loop that uses it
        self._loop: asyncio.AbstractEventLoop | None = None

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if not in_bulk():
            yield
            return
        loop = asyncio.get_running_loop()
        if self._slots is None or self._loop is not loop:  # a tool may run several loops in turn
            self._slots, self._loop = asyncio.Semaphore(self.limit), loop
        async with self._slots:
            yield
