"""``storage.posix.in_thread``: a thread hop that returns the result or raises the error of the
call, and does not run a call cancelled before a thread took it."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from h5lake.storage.posix import in_thread


def test_result_error_and_cancellation() -> None:
    ran: list[str] = []
    gate = threading.Event()

    def blocked() -> None:
        gate.wait(30)  # holds the one thread until the test opens it

    def late() -> None:
        ran.append("late")

    def fails() -> None:
        raise OSError("no such thing")

    async def main() -> None:
        with ThreadPoolExecutor(1) as pool:
            assert await in_thread(pool, lambda a, b: a + b, 2, 3) == 5
            with pytest.raises(OSError, match="no such thing"):
                await in_thread(pool, fails)
            holder = asyncio.ensure_future(in_thread(pool, blocked))
            waiting = asyncio.ensure_future(in_thread(pool, late))
            await asyncio.sleep(0.05)
            waiting.cancel()  # still queued behind ``blocked``
            with pytest.raises(asyncio.CancelledError):
                await waiting
            gate.set()
            await holder
            assert await in_thread(pool, threading.get_ident) != threading.get_ident()

    asyncio.run(main())
    assert ran == []  # the cancelled call never ran
