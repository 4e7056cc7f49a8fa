"""A server-wide budget of bytes for replies that are read and encoded whole.

Most reads never hold their whole selection: binary REST reads stream a block at a time, plots
scan a window at a time. A few answers are made whole in memory: h5grove's ``data`` and
``stats`` (H5Web), the web view's tables and ``.npy``/``.csv`` downloads, REST reads in JSON,
of variable-length types or of fields, and point reads. Each may hold up to the request limit
(512 MiB by default) several times over (the values, then their encoding); forty at once would
be tens of gigabytes. Such a reply reserves an estimate of the bytes it will hold here before it
reads, and gives them back once its answer is sent; when the budget is spent, the next large one
waits its turn (first come, first served), or after ``wait`` seconds is answered 503 with a
``Retry-After``. A reservation below ``small`` bytes is counted but never waits, so small reads
are not held behind large ones; one above the whole budget takes all of it (it runs alone).

The budget is per server process (each worker has its own): docs/security.md, "Replies made whole".
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import Any, Self, TypeVar

import numpy as np

from h5lake.errors import Busy
from h5lake.model.values import json_item_chars

T = TypeVar("T")

SMALL_BYTES = 16 * 1024 * 1024
"""Reservations below this never wait for the budget (they are still counted)."""
WAIT_SECONDS = 60.0
"""How long a large reply waits for the budget before it is answered 503."""


class Reservation:
    """Bytes held from a ``ByteBudget`` until ``release`` (idempotent; also on context exit)."""

    __slots__ = ("_budget", "nbytes")

    def __init__(self, budget: ByteBudget | None, nbytes: int) -> None:
        self._budget = budget
        self.nbytes = nbytes

    @property
    def small(self) -> bool:
        """Whether it was granted without waiting (below the budget's ``small``)."""
        return self._budget is None or self.nbytes < self._budget.small

    def release(self) -> None:
        budget, self._budget = self._budget, None
        if budget is not None:
            budget._give_back(self.nbytes)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


NOTHING = Reservation(None, 0)
"""A reservation of nothing (for replies that hold no budget)."""


class ByteBudget:
    """``capacity`` bytes shared by the replies of one process, granted in arrival order."""

    def __init__(self, capacity: int, *, small: int = SMALL_BYTES, wait: float = WAIT_SECONDS) -> None:
        self.capacity = capacity
        self.small = min(small, capacity // 4)  # a small budget still bounds: not all of it small
        self.wait = wait
        self.used = 0
        self.large = 0  # of ``used``, the bytes of large reservations (those that may wait)
        self.peak = 0
        self.waits = 0  # reservations that had to queue (for /metrics)
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    async def reserve(self, nbytes: int) -> Reservation:
        """``nbytes`` held (at most the whole budget), waiting for them if a large reply."""
        nbytes = max(0, min(int(nbytes), self.capacity))
        if nbytes < self.small or (not self._waiters and self.used + nbytes <= self.capacity):
            self._take(nbytes)
            return Reservation(self, nbytes)
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waits += 1
        entry = (nbytes, granted)
        self._waiters.append(entry)
        self._grant()  # granted at once if only small reservations are in its way
        try:
            await asyncio.wait_for(asyncio.shield(granted), self.wait)
        except TimeoutError:
            self._abandon(entry)
            raise Busy(
                f"the server is busy with other large reads (a reply of about {nbytes} bytes waited "
                f"{self.wait:.0f} s for memory); retry later or read a smaller selection"
            ) from None
        except BaseException:  # cancelled: the client went away
            self._abandon(entry)
            raise
        return Reservation(self, nbytes)

    def _abandon(self, entry: tuple[int, asyncio.Future[None]]) -> None:
        nbytes, granted = entry
        if granted.done() and not granted.cancelled():
            self._give_back(nbytes)  # granted as the waiter gave up: hand it on
            return
        granted.cancel()
        self._waiters.remove(entry)
        self._grant()  # the ones behind may fit now

    def _take(self, nbytes: int) -> None:
        self.used += nbytes
        if nbytes >= self.small:
            self.large += nbytes
        self.peak = max(self.peak, self.used)

    def _give_back(self, nbytes: int) -> None:
        self.used -= nbytes
        if nbytes >= self.small:
            self.large -= nbytes
        self._grant()

    def _grant(self) -> None:
        # The first waiter goes when it fits, or when no other large reservation is held: small
        # ones come and go without waiting, and under steady small reads the budget may never
        # be wholly free, so waiting for them too would starve large reads (503 after `wait`).
        while self._waiters:
            nbytes, granted = self._waiters[0]
            if self.used + nbytes > self.capacity and self.large > 0:
                return
            self._waiters.popleft()
            if not granted.done():
                self._take(nbytes)
                granted.set_result(None)



def reply_bytes(count: int, dtype: np.dtype[Any], binary: bool) -> int:
    """The bytes a REST reply of ``count`` values read whole holds at most while made and sent:
    the values and their packed copy; for JSON the values, their Python objects and the text.
    A number is up to 44 bytes of objects (itself and its slot in a list: a 64-bit integer);
    an element of several (a compound's fields, an array type's members) is a list of them,
    ~56 bytes a number besides the list's own."""
    nbytes = count * dtype.itemsize
    if binary:
        return 2 * nbytes
    leaves = _leaves(dtype)
    objects = 48 if leaves == 1 else 64 + 56 * leaves
    return nbytes + count * (objects + (json_item_chars(dtype) or 4 * dtype.itemsize + 64))


def _leaves(dtype: np.dtype[Any]) -> int:
    """The scalars (Python objects in JSON) one element of ``dtype`` holds."""
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return _leaves(base) * int(np.prod(shape))
    if dtype.names is not None:
        fields: Any = dtype.fields
        return sum(int(_leaves(fields[name][0])) for name in dtype.names) or 1
    return 1


@contextmanager
def released_on_error(held: Reservation) -> Iterator[None]:
    try:
        yield
    except BaseException:
        held.release()
        raise


async def held_read(held: Reservation, read: Awaitable[T]) -> T:
    """``await read``, releasing ``held`` if it fails."""
    with released_on_error(held):
        return await read
