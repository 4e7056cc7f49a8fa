"""A small thread pool for the local store's blocking calls, with a cheap hop to and from it.

``loop.run_in_executor`` on a ``ThreadPoolExecutor`` costs ~90 us of CPU per call here (the
executor's idle semaphore and the ``concurrent.futures.Future`` are Python-level conditions,
and the result is chained into an asyncio future by callbacks); a durable attribute PUT makes
one such hop. ``ThreadLane.run`` puts the call on a ``queue.SimpleQueue`` (C) and the thread
hands the result back with one ``call_soon_threadsafe``: ~25 us. As with the executor, a call
whose awaiting future was cancelled before a thread took it is not run; one already running
runs to its end (its result is dropped).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]


class ThreadLane:
    """Up to ``max_threads`` threads (started when needed) running calls for event loops."""

    def __init__(self, max_threads: int, name: str) -> None:
        self._max = max_threads
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a job (about: a thread may be counted just before it waits)
        self._closed = False

    def run(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(*args)`` on one of the threads; await the returned future for its result."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"thread lane {self._name} is closed")
            if self._idle:
                self._idle -= 1
            elif len(self._threads) < self._max:
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}_{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
        self._jobs.put((loop, future, fn, args))
        return future

    def close(self) -> None:
        """Let the calls queued so far finish, then end the threads (blocks until they end)."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._jobs.put(None)
        for thread in threads:
            thread.join()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            _run_one(*job)
            del job  # nothing of the call outlives it in this thread
            with self._lock:
                self._idle += 1


def _run_one(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], fn: Callable[..., Any], args: tuple[Any, ...]
) -> None:
    if future.cancelled():
        return
    try:
        result = fn(*args)
    except BaseException as e:  # noqa: BLE001 -- handed to the awaiting task, as an executor does
        _deliver(loop, _fail, future, e)
    else:
        _deliver(loop, _succeed, future, result)


def _deliver(loop: asyncio.AbstractEventLoop, how: Callable[..., None], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(how, *args)
    except RuntimeError:
        pass  # the loop is closed: nobody waits any more


def _succeed(future: asyncio.Future[Any], result: Any) -> None:
    if not future.cancelled():
        future.set_result(result)


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.cancelled():
        future.set_exception(error)
