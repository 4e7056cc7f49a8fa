"""The one bounded way to fan out, and the CPU pool codec work runs on.

`Workers` is made once by whoever owns the process's work (the service, a tool, a test) and
handed down: every fan-out runs at most ``limit`` tasks at once and cancels the rest on the
first failure (draining them before the error propagates); CPU work larger than a thread hop
runs on ``executor`` so the event loop keeps serving.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

INLINE_BYTES = 64 * 1024  # smaller codec jobs run inline: a thread hop costs more than they do


async def bounded(items: Iterable[T], work: Callable[[T], Awaitable[None]], limit: int) -> None:
    """Run ``work`` on every item, at most ``limit`` at once; the first failure cancels the rest.

    Each task tells the loop it ended (a done callback), so an item costs one task however many
    run (``asyncio.wait`` would hook and unhook every running task once per item)."""
    iterator = iter(items)
    running: set[asyncio.Task[None]] = set()
    failed: list[asyncio.Task[None]] = []
    wake: list[asyncio.Future[None]] = []  # the one future the loop below waits on, if any
    loop = asyncio.get_running_loop()

    def ended(task: asyncio.Task[None]) -> None:
        running.discard(task)
        if task.cancelled() or task.exception() is not None:  # (exception() also marks it seen)
            failed.append(task)
        if wake and not wake[0].done():
            wake[0].set_result(None)

    async def one_ends() -> None:
        wake.append(loop.create_future())
        try:
            await wake[0]
        finally:
            wake.clear()

    try:
        for item in iterator:
            while len(running) >= limit and not failed:
                await one_ends()
            if failed:
                break
            task = asyncio.ensure_future(work(item))
            running.add(task)
            task.add_done_callback(ended)
        while running and not failed:
            await one_ends()
        if failed:
            failed[0].result()  # raises the first failure
    finally:
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)


async def bounded_map(items: Iterable[T], work: Callable[[T], Awaitable[R]], limit: int) -> list[R]:
    """``[await work(i) for i in items]`` with at most ``limit`` running at once, in order."""
    listed = list(items)
    out: list[Any] = [None] * len(listed)

    async def one(pair: tuple[int, T]) -> None:
        out[pair[0]] = await work(pair[1])

    await bounded(enumerate(listed), one, limit)
    return out


def cpu_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="h5lake-cpu")


@dataclass(frozen=True, slots=True)
class Workers:
    """How much one operation may do at once: ``limit`` concurrent I/O tasks, CPU on ``executor``."""

    limit: int
    executor: Executor

    async def each(self, items: Iterable[T], work: Callable[[T], Awaitable[None]]) -> None:
        await bounded(items, work, self.limit)

    async def map(self, items: Iterable[T], work: Callable[[T], Awaitable[R]]) -> list[R]:
        return await bounded_map(items, work, self.limit)

    async def cpu(self, fn: Callable[..., R], *args: Any, size: int = INLINE_BYTES + 1) -> R:
        """``fn(*args)``, on the executor when ``size`` (bytes of work) is worth a thread hop."""
        if size <= INLINE_BYTES:
            return fn(*args)
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)
