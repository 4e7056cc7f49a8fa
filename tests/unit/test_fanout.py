"""``fanout.bounded``: every item runs, never more than ``limit`` at once, and the first failure
cancels and drains the rest before it propagates (no task left behind, no error unreported)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from h5lake.chunks.fanout import bounded


def test_every_item_runs_at_most_limit_at_once() -> None:
    async def main() -> tuple[list[int], int]:
        done: list[int] = []
        now = peak = 0

        async def work(i: int) -> None:
            nonlocal now, peak
            now += 1
            peak = max(peak, now)
            for _ in range(1 + i % 4):
                await asyncio.sleep(0)
            now -= 1
            done.append(i)

        await bounded(range(100), work, 7)
        return done, peak

    done, peak = asyncio.run(main())
    assert sorted(done) == list(range(100))
    assert peak == 7


def test_the_first_failure_cancels_the_rest_and_propagates() -> None:
    async def main() -> tuple[list[int], list[int], list[dict[str, Any]]]:
        started: list[int] = []
        cancelled: list[int] = []
        unreported: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: unreported.append(ctx))

        async def work(i: int) -> None:
            started.append(i)
            if i in (3, 4):
                await asyncio.sleep(0)
                raise ValueError(i)
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.append(i)
                raise

        with pytest.raises(ValueError):
            await bounded(range(50), work, 5)
        await asyncio.sleep(0)
        return started, cancelled, unreported

    started, cancelled, unreported = asyncio.run(main())
    assert started == [0, 1, 2, 3, 4]  # nothing new starts once one failed
    assert sorted(cancelled) == [0, 1, 2]
    assert unreported == []  # the second failure's exception was seen, not left to the loop
