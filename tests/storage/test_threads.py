"""ThreadLane: the local store's thread pool (storage/threads.py) behaves as the executor it
replaced: results and errors come back, at most ``max_threads`` run at once, a call cancelled
before a thread took it never runs, and close lets queued calls finish."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from h5lake.storage.threads import ThreadLane


async def test_results_and_errors_come_back() -> None:
    lane = ThreadLane(2, "t")
    assert await lane.run(lambda a, b: a + b, 2, 3) == 5
    assert await lane.run(threading.current_thread) is not threading.current_thread()

    def boom() -> None:
        raise OSError("disk on fire")

    with pytest.raises(OSError, match="disk on fire"):
        await lane.run(boom)
    await asyncio.to_thread(lane.close)


async def test_at_most_max_threads_at_once() -> None:
    lane = ThreadLane(3, "t")
    lock = threading.Lock()
    running, peak, names = 0, 0, set()

    def work() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
            names.add(threading.current_thread().name)
        time.sleep(0.01)
        with lock:
            running -= 1

    await asyncio.gather(*(lane.run(work) for _ in range(30)))
    assert peak == 3
    assert len(names) == 3
    await asyncio.to_thread(lane.close)


async def test_a_call_cancelled_before_it_starts_never_runs() -> None:
    lane = ThreadLane(1, "t")
    gate = threading.Event()
    ran: list[str] = []
    first = asyncio.ensure_future(lane.run(gate.wait))
    await asyncio.sleep(0.01)  # the only thread now waits on the gate
    second = lane.run(ran.append, "second")
    second.cancel()
    gate.set()
    assert await first is True
    assert await lane.run(ran.append, "third") is None
    assert ran == ["third"]
    await asyncio.to_thread(lane.close)


async def test_a_call_cancelled_while_running_finishes_and_its_result_is_dropped() -> None:
    lane = ThreadLane(1, "t")
    started, gate = threading.Event(), threading.Event()
    done: list[int] = []

    def slow() -> int:
        started.set()
        gate.wait()
        done.append(1)
        return 1

    task = asyncio.ensure_future(lane.run(slow))
    await asyncio.to_thread(started.wait)
    task.cancel()
    gate.set()
    assert await lane.run(lambda: 2) == 2  # the thread finished slow() first
    assert done == [1]
    assert task.cancelled()
    await asyncio.to_thread(lane.close)


async def test_close_lets_queued_calls_finish() -> None:
    lane = ThreadLane(1, "t")
    done: list[int] = []
    futures = [lane.run(lambda i=i: (time.sleep(0.005), done.append(i))) for i in range(5)]
    await asyncio.to_thread(lane.close)
    assert done == [0, 1, 2, 3, 4]
    await asyncio.gather(*futures)
    with pytest.raises(RuntimeError):
        lane.run(print)
