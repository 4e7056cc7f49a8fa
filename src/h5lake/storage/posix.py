"""POSIX pieces of the local-directory store: opening an object's file, reading it whole, its
identity for validating a remembered copy, the ETag kept in its extended attribute, group
commit of folder fsyncs, folders made durable before use, the per-key-slot lock shared with
other processes (storage/local.py)."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import stat
import threading
from collections.abc import Callable
from typing import cast

from h5lake.storage.base import RESERVED_SEGMENT_PREFIX

ETAG_XATTR = "user.h5lake.etag"  # the ETag of an object's bytes, with the size and mtime it belongs to
TEMP_PREFIX = RESERVED_SEGMENT_PREFIX + "tmp-"


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

    def sync_renamed(self, folder: str) -> None:
        """`sync` after a rename (or link) into ``folder``. A folder gone meanwhile was emptied
        and removed by a delete, our new entry with it: the put happened and was then deleted,
        and nothing of it is left to make durable (as `_delete` takes its own vanished folder)."""
        try:
            self.sync(folder)
        except FileNotFoundError:
            pass


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


class DurableFolders:
    """The folders under ``root`` whose names this process has seen made durable in their
    parents. A folder found already there is not taken as durable: another request may have
    made it and not yet finished its fsync, or a process may have died between its ``mkdir``
    and the fsync. So each folder not known here costs one fsync of its parent (shared through
    ``FolderSyncs``) the first time this process puts into it; after that a set lookup.

    A folder this process removes is forgotten (``removed``), and so is one a put finds gone
    (``forget``). One that *another* process removes and a third makes again in the moment
    before a put here stays remembered: that put may return before the maker's fsync of the
    parent (the window of one fsync, after a folder was emptied and removed)."""

    def __init__(self, root: str, syncs: FolderSyncs, remember: int = 100_000) -> None:
        self._root = root
        self._syncs = syncs
        self._remember = remember  # folders remembered at most (~10 MB of paths)
        self._known: set[str] = set()

    def known(self, folder: str) -> bool:
        return folder in self._known

    def make(self, key: str, folder: str) -> None:
        """Create ``folder`` and its missing parents; on return each one's name is durable."""
        chain = []
        while folder != self._root and folder not in self._known:
            chain.append(folder)
            folder = os.path.dirname(folder)
        for folder in reversed(chain):
            try:
                os.mkdir(folder)
            except FileExistsError:
                if not os.path.isdir(folder):
                    if not os.path.lexists(folder):  # a delete removed it since: make it again
                        raise FileNotFoundError(errno.ENOENT, "removed while being made", folder) from None
                    raise folder_conflict(key) from None
            except NotADirectoryError:
                raise folder_conflict(key) from None
            self._syncs.sync(os.path.dirname(folder))
            if len(self._known) >= self._remember:
                self._known.clear()  # forgetting costs one more parent fsync each
            self._known.add(folder)

    def forget(self, folder: str) -> None:
        """``folder`` or a parent was found removed: each is made again on its next use."""
        while folder != self._root:
            self._known.discard(folder)
            folder = os.path.dirname(folder)

    def removed(self, folder: str) -> None:
        self._known.discard(folder)


def changed_at(st: os.stat_result) -> float:
    """An object's ``last_modified``: when its file was written or last given a name. A copy
    (storage/hardlinks.py) is a hard link to an older file; ``link(2)`` sets the inode's ctime, so the
    copy counts as new (gc's grace period runs from it). The old file's other name looks newer
    too, which only ever delays a collection."""
    return max(st.st_mtime, st.st_ctime)


def folder_conflict(key: str) -> ValueError:
    return ValueError(f"storage key {key!r} collides with a folder of other keys, or lies in one")


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


def _load_syncfs() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.syncfs
    except (OSError, AttributeError):  # not Linux
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    return cast("Callable[[int], int]", fn)


_SYNCFS = _load_syncfs()


def can_sync_filesystem() -> bool:
    return _SYNCFS is not None


def sync_filesystem(fd: int) -> None:
    """``syncfs(2)``: every file and name on the file system holding ``fd`` durable, in one
    call (ext4: one journal commit and one cache flush for all). It also reports a writeback
    error of any file of the file system met since ``fd`` was opened (Linux 5.8 and later), so
    the caller opens ``fd`` before writing what it must make durable."""
    assert _SYNCFS is not None
    if _SYNCFS(fd) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SlotLock:
    """The lock of one slot of keys: a thread lock (threads of this process, which share the
    open file) then an exclusive ``flock`` of the slot's file (other processes). The file stays
    open (opened without inheritance, as ``os.open`` does) and is locked and unlocked per use:
    two syscalls a put instead of an open, a lock and a close."""

    __slots__ = ("fd", "path", "threads")

    def __init__(self, path: str) -> None:
        self.path = path
        self.threads = threading.Lock()
        self.fd = -1

    def __enter__(self) -> None:
        self.threads.acquire()
        try:
            if self.fd < 0:
                self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            self.threads.release()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            self.threads.release()

    def close(self) -> None:
        with self.threads:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
