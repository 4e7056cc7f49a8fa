"""The watch's waiting (service/datasets/watch.py): how the waiters on one document are woken."""

from __future__ import annotations

import asyncio

from h5lake.service.datasets.watch import Watch
from h5lake.storage.memory import MemoryStore

KEY = "d-0000/.dataset.json"


async def test_waiters_woken_by_one_change_share_one_make_and_each_gets_it() -> None:
    watch = Watch(MemoryStore(), interval=60)
    made: list[str | None] = []

    async def waiter(what: str) -> tuple[str | None, str] | None:
        async with watch.watching(KEY) as watcher:

            async def make() -> str:
                made.append(watcher.etag)
                return f"reply for {what} at {watcher.etag}"

            return await watcher.made_at_change(watcher.etag, what, make, asyncio.get_running_loop().time() + 30)

    tasks = [asyncio.ensure_future(waiter("shape")) for _ in range(50)] + [asyncio.ensure_future(waiter("doc"))]
    await asyncio.sleep(0.05)
    assert not any(t.done() for t in tasks) and made == []
    watch.changed(KEY, '"e2"')
    results = await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert results[:50] == [('"e2"', 'reply for shape at "e2"')] * 50
    assert results[50] == ('"e2"', 'reply for doc at "e2"')
    assert made == ['"e2"', '"e2"']  # one per thing asked, not one per waiter
    assert watch.watched == 0
    await watch.close()


async def test_a_waiter_stopped_or_past_its_deadline_gets_none_and_the_others_still_wake() -> None:
    watch = Watch(MemoryStore(), interval=60)
    loop = asyncio.get_running_loop()
    makes = 0

    async def make() -> str:
        nonlocal makes
        makes += 1
        return "new"

    stop: asyncio.Future[None] = loop.create_future()

    async def waiter(deadline: float, stopping: asyncio.Future[None] | None) -> tuple[str | None, str] | None:
        async with watch.watching(KEY) as watcher:
            return await watcher.made_at_change(watcher.etag, "shape", make, deadline, stopping)

    stopped = asyncio.ensure_future(waiter(loop.time() + 30, stop))
    early = asyncio.ensure_future(waiter(loop.time() + 0.05, None))
    patient = asyncio.ensure_future(waiter(loop.time() + 30, None))
    assert await asyncio.wait_for(early, 10) is None
    stop.set_result(None)
    assert await asyncio.wait_for(stopped, 10) is None
    assert not patient.done()
    watch.changed(KEY, '"e2"')
    assert await asyncio.wait_for(patient, 10) == ('"e2"', "new")
    assert makes == 1
    await watch.close()


async def test_a_group_left_by_every_waiter_makes_nothing_at_the_next_change() -> None:
    watch = Watch(MemoryStore(), interval=60)
    loop = asyncio.get_running_loop()
    makes = 0

    async def make() -> str:
        nonlocal makes
        makes += 1
        return "new"

    async def waiter() -> tuple[str | None, str] | None:
        async with watch.watching(KEY) as watcher:
            return await watcher.made_at_change(watcher.etag, "shape", make, loop.time() + 0.05)

    assert await asyncio.wait_for(waiter(), 10) is None
    async with watch.watching(KEY):  # the document stays watched, so its changes are still seen
        watch.changed(KEY, '"e2"')
        await asyncio.sleep(0.05)
    assert makes == 0
    await watch.close()


async def test_an_exception_of_make_is_raised_in_each_waiter() -> None:
    watch = Watch(MemoryStore(), interval=60)
    loop = asyncio.get_running_loop()

    async def make() -> str:
        raise LookupError("gone from the store")

    async def waiter() -> tuple[str | None, str] | None:
        async with watch.watching(KEY) as watcher:
            return await watcher.made_at_change(watcher.etag, "shape", make, loop.time() + 30)

    tasks = [asyncio.ensure_future(waiter()) for _ in range(3)]
    await asyncio.sleep(0.01)
    watch.changed(KEY, '"e2"')
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)
    assert [type(r) for r in results] == [LookupError] * 3
    await watch.close()
