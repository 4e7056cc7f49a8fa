"""POSIX pieces of the local-directory store: opening an object's file, reading it whole, its
identity for validating a remembered copy, the ETag kept in its extended attribute, group
commit of folder fsyncs, and the hop of a file operation to a thread (storage/local.py)."""

from __future__ import annotations

import asyncio
import os
import stat
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

T = TypeVar("T")


async def in_thread(executor: Executor, fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` on ``executor``, awaited. As ``loop.run_in_executor``, but the outcome comes
    back with one ``call_soon_threadsafe`` instead of the executor's future chained to an asyncio
    one (which takes the executor future's lock four or five times per call, a tenth of the event
    loop's work in a bulk write of 1 MiB chunks). Cancelled before it started, it does not run."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (fn(*args), None)
        except BaseException as e:  # noqa: BLE001 -- handed to the awaiting task, as run_in_executor does
            outcome = (None, e)
        try:
            loop.call_soon_threadsafe(_settle, done, *outcome)
        except RuntimeError:
            pass  # the loop closed meanwhile: nobody waits

    job = executor.submit(run)
    try:
        return await done
    except asyncio.CancelledError:
        job.cancel()
        raise


def _settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if done.done():
        return  # cancelled meanwhile
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)

ETAG_XATTR = "user.h5lake.etag"  # the ETag of an object's bytes, with the size and mtime it belongs to


class FolderSyncs:
    """Group commit of folder fsyncs: every put or delete in a folder must make its new name
    durable with an fsync of the folder *begun after* its rename or unlink. Concurrent callers
    share one: a caller takes a ticket after its rename; a sync that starts once tickets up to
    ``n`` were taken covers all of them, so a caller waits for the first sync that starts after
    its ticket (running it itself when none is running). Nothing returns before its own name is
    durable; N puts in flight in one folder (the chunks of one request, or small writes of many
    clients) pay one or two folder fsyncs instead of N."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._folders: dict[str, FolderSync] = {}

    def sync(self, folder: str) -> None:
        with self._lock:
            state = self._folders.get(folder)
            if state is None:
                state = self._folders[folder] = FolderSync()
        state.sync(folder)


class FolderSync:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.taken = 0  # tickets handed out
        self.durable = 0  # every ticket up to this one is covered by a finished fsync
        self.running = False

    def sync(self, folder: str) -> None:
        with self.cond:
            self.taken += 1
            ticket = self.taken
            while self.durable < ticket:
                if self.running:
                    self.cond.wait()
                    continue
                self.running = True
                covers = self.taken  # their renames happened before this fsync starts
                self.cond.release()
                try:
                    fsync_dir(folder)
                finally:
                    self.cond.acquire()
                    self.running = False
                    self.cond.notify_all()
                self.durable = max(self.durable, covers)  # not reached when the fsync failed


def file_identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def valid_etag(raw: bytes | None, st: os.stat_result) -> str | None:
    """The ETag of an xattr value, if it describes a file of ``st``'s size and mtime."""
    if raw is None:
        return None
    etag, _, stamp = raw.decode("ascii", "replace").partition(":")
    return etag if stamp == f"{st.st_size}:{st.st_mtime_ns}" else None


def open_regular(path: str) -> tuple[int, os.stat_result] | None:
    """An open fd and its stat when ``path`` is an object (a regular file), else ``None``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):  # a folder of other keys is not an object
        os.close(fd)
        return None
    return fd, st


def read_all(fd: int, size: int, offset: int = 0) -> bytes:
    data = os.pread(fd, size, offset)
    if len(data) == size:
        return data
    parts = [data]  # a short read: only for sizes past what one read returns (2 GiB on Linux)
    got = len(data)
    while got < size:
        chunk = os.pread(fd, size - got, offset + got)
        if not chunk:
            break  # cannot happen: objects are never truncated in place
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
