"""The embedded default: objects as files under one directory, shared safely by processes.

Key ``a/b/.domain.json`` is the file ``root/a/b/.domain.json``. What makes it a store and not
just files:

* **Atomic, durable writes.** Bytes go to a hidden temporary file in the target's folder, are
  fsync'ed, then renamed over the target, and the folder is fsync'ed. A crash leaves the old
  object or the new one, plus at most a stray temporary file that ``list`` never shows (and
  removes once it is an hour old). Folder fsyncs are a group commit (``FolderSyncs``): puts
  and deletes in flight in one folder (the chunks of a request, small writes of many clients)
  share one, and none returns before an fsync begun after its own rename has finished.
  A folder's own name is made durable in its parent before the first put in it that this
  process makes (``DurableFolders``), whoever made the folder.
* **Whole objects into the caller's buffer.** ``read_into`` preads an object straight into a
  given buffer (a chunk's place in a reply's array): one copy from the page cache. Up to
  ``NOWAIT_READ_BYTES`` it first tries that on the event loop's thread with ``RWF_NOWAIT``,
  which reads only when every byte is cached (a hot 1 MiB chunk: ~0.1 ms, less than a thread
  hop costs in CPU) and else fails at once; then the read runs on a thread.
* **Conditional writes across processes.** Every change of a key (put, conditional put,
  delete) holds an ``fcntl.flock`` on one of 256 lock files in ``root/.h5lake-locks``, picked
  by a stable hash of the key. If-match compares and renames under it; create-only links the
  temporary file into place with ``os.link``, which fails when the target exists. Reads take
  no lock: a rename is atomic, so a reader sees one whole version. A process keeps each lock
  file open once used (a thread lock in front, as threads share the open file): locking costs
  two ``flock`` calls instead of an open, a lock and a close (~5 against ~30-50 us here). The
  lock files are never removed (no key can name the reserved folder); removing them by hand
  under a running server would split the lock between old and new files.
* **Cheap ETags.** The ETag is the MD5 hex of the bytes, as on the other backends. It is
  computed once, on put, from bytes already in memory (or by the caller: ``put_hashed`` takes
  the MD5 of chunks hashed many at once, ``storage/md5.py``), and kept in the file's extended
  attribute ``user.h5lake.etag`` with the size and mtime it belongs to. Hashing on every read
  would cost ~6 ms for a 4 MiB chunk that takes ~0.6 ms to read (127 against 1400 gets/s
  here), so a get reads the attribute and hashes only when it is missing or stale (a file
  system without user xattrs, a file copied in or edited by hand): the ETag is the same
  either way, only slower. ``st_ino-st_mtime_ns-st_size`` would be cheaper still but is not
  safe: a freed inode number comes back, and ext4's mtime moves in coarse ticks.
* **The event loop never blocks on disk for long.** Writes, listings and big reads run on a
  bounded thread pool of the store's own. Reads of up to ``inline_read_bytes`` (and every
  ``head`` whose ETag is in its xattr) run inline: a warm 1 KiB get then takes ~7 us against
  ~170 us through a thread on this 2-core machine, and metadata reads are the latency-critical
  ones. The default, 256 KiB, covers the ranged read of a small hyperslab of a 1 MiB chunk:
  a warm 128 KiB pread costs ~20 us inline, and the thread hop it saves cost a 64x64 read
  about half its server CPU (bench/values.py). No file descriptor crosses to a thread, so a
  cancelled read leaks nothing.

A copy (``CopyObject``) is a hard link, checked before it gets its name: storage/hardlinks.py.
A large object read only to be passed on (``GetMapped``) is a mapping of its file: storage/mapped.py.
Many create-only puts of one batch request share their durability (``CreateMany``): storage/batches.py.
Limits: a key cannot also be the folder of other keys (``a`` and ``a/b``): such a put raises
``ValueError``. Symbolic links inside the root are not listed.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import errno
import logging
import os
import secrets
import stat
import threading
import zlib
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TypeVar

from h5lake.errors import StorageError
from h5lake.storage import direct
from h5lake.storage.base import (
    LATER,
    RESERVED_SEGMENT_PREFIX,
    Blob,
    Later,
    ObjectInfo,
    PreconditionFailed,
    check_delimiter,
    check_key,
    check_prefix,
)
from h5lake.storage.batches import BatchCreates
from h5lake.storage.hardlinks import HardLinkCopies
from h5lake.storage.lanes import in_bulk
from h5lake.storage.local_list import holding_keys, scan_folder
from h5lake.storage.local_puts import HashedPuts
from h5lake.storage.mapped import MappedReads
from h5lake.storage.md5 import md5_hex
from h5lake.storage.posix import (
    ETAG_XATTR,
    TEMP_PREFIX,
    DurableFolders,
    FolderSyncs,
    SlotLock,
    changed_at,
    file_identity,
    open_regular,
    read_all,
    valid_etag,
)
from h5lake.storage.posix import folder_conflict as _folder_conflict
from h5lake.storage.recent import RecentObjects
from h5lake.storage.threads import ThreadLane

log = logging.getLogger(__name__)

T = TypeVar("T")

LOCK_DIR = RESERVED_SEGMENT_PREFIX + "locks"
LOCK_SLOTS = 256
_NO_XATTR = {errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.E2BIG}
_MAKE_DIRS_TRIES = 50
_WINDOW = 256  # folder entries checked per thread hop when rolling up
NOWAIT_READ_BYTES = 4 * 1024 * 1024  # read_into inline up to this size when all is in the page cache


class _Deferred:
    """Returned by an inline attempt that must be finished on a thread."""


_DEFERRED = _Deferred()


class LocalStore(HardLinkCopies, BatchCreates, HashedPuts, MappedReads):
    """Objects as files under ``root`` (made if missing).

    ``max_threads`` bounds the disk calls in flight on each lane, bulk (chunks) and the rest
    (more threads than that gained little for puts and lost for reads, in GIL hand-offs);
    ``inline_read_bytes`` is the largest object (or range) read on the event loop's own thread,
    0 to never do so. Disk errors surface as ``StorageError``.
    """

    def __init__(self, root: Path, *, max_threads: int = 8, inline_read_bytes: int = 256 * 1024) -> None:
        self.root = Path(root).absolute()
        self._root = str(self.root)
        self._locks = os.path.join(self._root, LOCK_DIR)
        self._prefix = os.path.join(self._root, "")  # the root and its separator: keys are joined to it
        os.makedirs(self._locks, exist_ok=True)
        self._inline_read_bytes = inline_read_bytes
        self._threads = ThreadLane(max_threads, "h5lake-local")
        # chunk transfers (h5lake.storage.lanes) have threads of their own: a document read or
        # write never queues behind them
        self._bulk_threads = ThreadLane(max_threads, "h5lake-bulk")
        self._xattrs = hasattr(os, "getxattr")  # Linux; until the file system says otherwise
        self._direct = bool(direct.O_DIRECT)  # large aligned writes past the page cache (storage/direct.py)
        self._folder_syncs = FolderSyncs()
        self._folders = DurableFolders(self._root, self._folder_syncs)
        self._nowait = hasattr(os, "RWF_NOWAIT")  # reads from the page cache only (Linux)
        self._recent = RecentObjects()  # small objects read lately (storage/recent.py)
        self._slot_locks: list[SlotLock | None] = [None] * LOCK_SLOTS  # made on first use
        self._slot_made = threading.Lock()

    # --- the Store interface ---------------------------------------------------------------

    async def get(self, key: str) -> Blob | None:
        blob = self.get_at_once(key)
        if not isinstance(blob, Later):
            return blob
        read = await self._run(self._get, self._path(key), None)  # too big for the loop's thread
        assert not isinstance(read, _Deferred)
        return read

    def get_at_once(self, key: str) -> Blob | None | Later:
        """`get`'s answer for an object read lately and unchanged since (`RecentObjects`), or
        one small enough to read here; `LATER` for a larger one."""
        path = self._path(key)
        if self._recent.has(path):
            unchanged = self._inline(self._recent.unchanged, path)
            if unchanged is not None:
                return unchanged
        blob = self._inline(self._get, path, self._inline_read_bytes)
        return LATER if isinstance(blob, _Deferred) else blob

    async def head(self, key: str) -> ObjectInfo | None:
        path = self._path(key)
        info = self._inline(self._head, path, key, False)
        if info is _DEFERRED:  # no usable xattr: hashing the bytes may be long
            info = await self._run(self._head, path, key, True)
        assert not isinstance(info, _Deferred)
        return info

    async def get_range(self, key: str, offset: int, length: int) -> bytes | None:
        if offset < 0 or length < 0:
            raise ValueError(f"negative range {offset}+{length}")
        path = self._path(key)
        if length <= self._inline_read_bytes:
            return self._inline(self._read_range, path, offset, length)
        return await self._run(self._read_range, path, offset, length)

    async def read_into(self, key: str, buffer: memoryview) -> int | None:
        path = self._path(key)
        if len(buffer) <= self._inline_read_bytes:
            return self._inline(self._read_into, path, buffer)
        if self._nowait and len(buffer) <= NOWAIT_READ_BYTES:
            size = self._inline(self._read_into_cached, path, buffer)
            if not isinstance(size, _Deferred):
                await asyncio.sleep(0)  # other tasks (the socket writes of a reply) run between chunks
                return size
        return await self._run(self._read_into, path, buffer)

    async def get_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes] | None:
        """Several ranges from one open file: one version of the object, as a rename-replace
        never changes an open file's bytes."""
        if any(offset < 0 or length < 0 for offset, length in ranges):
            raise ValueError(f"negative range in {ranges!r}")
        path = self._path(key)
        if sum(length for _, length in ranges) <= self._inline_read_bytes:
            return self._inline(self._read_ranges, path, ranges)
        return await self._run(self._read_ranges, path, ranges)

    async def put(
        self,
        key: str,
        data: bytes | memoryview,
        *,
        if_match: str | None = None,
        if_none_match: bool = False,
    ) -> str:
        path = self._path(key)
        self._recent.forget(path)
        if if_match is not None and if_none_match:
            raise ValueError("if_match and if_none_match exclude each other")
        # No copy: the caller keeps its buffer unchanged until the put returns (the engine
        # hands over chunk arrays of its own), and the bytes are written before it does.
        view = data if isinstance(data, bytes) else memoryview(data).cast("B")
        return await self._run(self._put, key, path, view, if_match, if_none_match)

    async def put_hashed(self, key: str, data: bytes | memoryview, md5: str) -> str:
        """``put`` of bytes whose MD5 the caller computed (many chunks hashed at once)."""
        path = self._path(key)
        view = data if isinstance(data, bytes) else memoryview(data).cast("B")
        return await self._run(self._put, key, path, view, None, False, md5)

    async def delete(self, key: str) -> None:
        path = self._path(key)
        self._recent.forget(path)
        await self._run(self._delete, key, path)

    async def list(
        self, prefix: str = "", *, delimiter: str | None = None, start_after: str | None = None
    ) -> AsyncIterator[str]:
        check_prefix(prefix)
        check_delimiter(delimiter)
        folder, _, partial = prefix.rpartition("/")
        base = folder + "/" if folder else ""
        async for entry in self._walk(base, partial, delimiter is not None, start_after):
            yield entry

    async def close(self) -> None:
        await asyncio.to_thread(self._threads.close)
        await asyncio.to_thread(self._bulk_threads.close)
        for lock in self._slot_locks:
            if lock is not None:
                lock.close()

    # --- paths, threads, locks -------------------------------------------------------------

    def _path(self, key: str) -> str:
        # check_key refuses '..', '.', empty segments, backslashes and NUL, and a key never
        # starts with '/': the joined path cannot leave the root.
        return self._prefix + check_key(key)  # os.path.join's result, without its cost (every request)

    def _lane(self) -> ThreadLane:
        return self._bulk_threads if in_bulk() else self._threads

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        try:
            return await self._lane().run(fn, *args)
        except OSError as e:
            raise StorageError(f"local store {self._root}: {e}") from e

    def _inline(self, fn: Callable[..., T], *args: object) -> T:
        try:
            return fn(*args)
        except OSError as e:
            raise StorageError(f"local store {self._root}: {e}") from e

    def _locked(self, key: str) -> SlotLock:
        """Hold the lock of ``key``'s slot, against every thread and process (``with``)."""
        slot = zlib.crc32(key.encode()) % LOCK_SLOTS  # stable across processes, unlike hash()
        lock = self._slot_locks[slot]
        if lock is None:
            with self._slot_made:
                lock = self._slot_locks[slot]
                if lock is None:
                    lock = self._slot_locks[slot] = SlotLock(os.path.join(self._locks, f"{slot:02x}"))
        return lock

    # --- reading ---------------------------------------------------------------------------

    def _get(self, path: str, limit: int | None) -> Blob | None | _Deferred:
        """The object at ``path``; ``_DEFERRED`` when it is larger than ``limit``."""
        opened = open_regular(path)
        if opened is None:
            return None
        fd, st = opened
        if limit is not None and st.st_size > limit:
            os.close(fd)
            return _DEFERRED
        return self._read_blob(fd, st, path if limit is not None else None)

    def _read_blob(self, fd: int, st: os.stat_result, path: str | None = None) -> Blob:
        """Read the whole file behind ``fd`` and close it; remember it under ``path`` if given
        (``RecentObjects``)."""
        try:
            data = read_all(fd, st.st_size)
            raw = self._raw_etag(fd)
            etag = valid_etag(raw, st)
        finally:
            os.close(fd)
        blob = Blob(data, etag or md5_hex(data), changed_at(st))
        if path is not None and etag is not None and raw is not None:
            self._recent.remember(path, file_identity(st), raw, blob)
        return blob

    def _read_range(self, path: str, offset: int, length: int) -> bytes | None:
        opened = open_regular(path)
        if opened is None:
            return None
        fd, st = opened
        try:
            end = min(offset + length, st.st_size)
            return read_all(fd, end - offset, offset) if end > offset else b""
        finally:
            os.close(fd)

    def _read_into(self, path: str, buffer: memoryview) -> int | None:
        opened = open_regular(path)
        if opened is None:
            return None
        fd, st = opened
        try:
            if st.st_size == len(buffer):
                got = 0
                while got < st.st_size:
                    n = os.preadv(fd, [buffer[got:]], got)
                    if n == 0:
                        return got  # cannot happen: objects are never truncated in place
                    got += n
            return st.st_size
        finally:
            os.close(fd)

    def _read_into_cached(self, path: str, buffer: memoryview) -> int | None | _Deferred:
        """``_read_into`` when every byte is in the page cache (``RWF_NOWAIT``: no wait on the
        disk), else ``_DEFERRED`` (the caller reads on a thread)."""
        opened = open_regular(path)
        if opened is None:
            return None
        fd, st = opened
        try:
            if st.st_size != len(buffer):
                return st.st_size
            try:
                got = os.preadv(fd, [buffer], 0, os.RWF_NOWAIT)
            except BlockingIOError:
                return _DEFERRED
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                    raise
                self._nowait = False  # this kernel or file system cannot: threads from now on
                return _DEFERRED
            return st.st_size if got == st.st_size else _DEFERRED  # part cached: read it all on a thread
        finally:
            os.close(fd)

    def _read_ranges(self, path: str, ranges: Sequence[tuple[int, int]]) -> builtins.list[bytes] | None:
        opened = open_regular(path)
        if opened is None:
            return None
        fd, st = opened
        try:
            out = []
            for offset, length in ranges:
                end = min(offset + length, st.st_size)
                out.append(read_all(fd, end - offset, offset) if end > offset else b"")
            return out
        finally:
            os.close(fd)

    def _head(self, path: str, key: str, may_hash: bool) -> ObjectInfo | None | _Deferred:
        """Size and ETag; ``_DEFERRED`` when the ETag needs hashing and ``may_hash`` is false."""
        opened = open_regular(path)
        if opened is None:
            return None
        fd, st = opened
        try:
            etag = self._stored_etag(fd, st)
            if etag is None:
                if not may_hash:
                    return _DEFERRED
                etag = md5_hex(read_all(fd, st.st_size))
        finally:
            os.close(fd)
        return ObjectInfo(key, st.st_size, etag, changed_at(st))

    def _current_etag(self, path: str) -> str | None:
        """The ETag of the object at ``path`` (``None``: none there), for an if-match under the
        key's lock: a stat and a getxattr of the path when the xattr is valid (no open)."""
        if self._xattrs:
            try:
                st = os.stat(path)
            except (FileNotFoundError, NotADirectoryError):
                return None
            if not stat.S_ISREG(st.st_mode):
                return None
            try:
                etag = valid_etag(os.getxattr(path, ETAG_XATTR), st)
            except OSError as e:
                if e.errno not in _NO_XATTR and e.errno != errno.ENOENT:
                    raise
                etag = None
            if etag is not None:
                return etag
        info = self._head(path, "", True)  # no usable xattr (or replaced by hand meanwhile): hash
        return info.etag if isinstance(info, ObjectInfo) else None

    def _stored_etag(self, fd: int, st: os.stat_result) -> str | None:
        """The ETag kept in the xattr, if it still describes this file's size and mtime."""
        return valid_etag(self._raw_etag(fd), st)

    def _raw_etag(self, fd: int) -> bytes | None:
        """The xattr as stored (``etag:size:mtime_ns``), if any."""
        if not self._xattrs:
            return None
        try:
            return os.getxattr(fd, ETAG_XATTR)
        except OSError as e:
            if e.errno not in _NO_XATTR:
                raise
            return None

    # --- writing ---------------------------------------------------------------------------

    def _put(
        self,
        key: str,
        path: str,
        data: bytes | memoryview,
        if_match: str | None,
        if_none_match: bool,
        md5: str | None = None,
        sync_name: bool = True,
        temp: str | None = None,
    ) -> str:
        """Put ``data`` at ``path`` durably; with ``sync_name`` false the folder is not fsync'ed
        (the caller does it, once for many puts: ``put_hashed_many``); ``temp``: its file, written."""
        etag = md5_hex(data) if md5 is None else md5
        folder = os.path.dirname(path)
        temp = self._write_temp(key, folder, data, etag) if temp is None else temp
        renamed = False
        try:
            with self._locked(key):
                if if_none_match:
                    try:
                        os.link(temp, path)
                    except FileExistsError:
                        if os.path.isdir(path):
                            raise _folder_conflict(key) from None
                        raise PreconditionFailed(key) from None
                else:
                    if if_match is not None and self._current_etag(path) != if_match:
                        raise PreconditionFailed(key)
                    try:
                        os.replace(temp, path)
                        renamed = True
                    except IsADirectoryError:
                        raise _folder_conflict(key) from None
            if sync_name:
                self._folder_syncs.sync_renamed(folder)  # the new name durable; outside the lock, which only orders
        finally:
            if not renamed:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)  # still there after a link, a refusal or an error
        return etag

    def _write_temp(self, key: str, folder: str, data: bytes | memoryview, etag: str, fsync: bool = True) -> str:
        """Write ``data`` to a new temporary file in ``folder`` (fsync'ed unless ``fsync`` is
        false: the caller makes it durable, storage/batches.py) and return its path."""
        name = os.path.join(folder, TEMP_PREFIX + secrets.token_hex(8))
        for _ in range(_MAKE_DIRS_TRIES):
            try:
                if not self._folders.known(folder):
                    self._make_folder(key, folder)
                use_direct = self._direct and direct.wanted(data)
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
                try:
                    fd = os.open(name, flags | (direct.O_DIRECT if use_direct else 0), 0o644)
                except OSError as exc:
                    if not use_direct or exc.errno != errno.EINVAL:
                        raise
                    self._direct = use_direct = False  # the file system has no O_DIRECT
                    fd = os.open(name, flags, 0o644)
                break
            except FileNotFoundError:
                # a delete removed the emptied folder (or a parent) under our feet, which can
                # happen again while it is being made: make them again
                self._folders.forget(folder)
            except NotADirectoryError:
                raise _folder_conflict(key) from None
        else:
            raise OSError(f"could not create the folder of {key!r}")
        try:
            if not direct.write_all(fd, data, use_direct):
                self._direct = False
            if self._xattrs:  # before the fsync, which makes the stamp durable with the bytes
                st = os.fstat(fd)
                stamp = f"{etag}:{st.st_size}:{st.st_mtime_ns}".encode()
                try:
                    os.setxattr(fd, ETAG_XATTR, stamp)
                except OSError as e:
                    if e.errno not in _NO_XATTR:
                        raise
                    log.info("no user xattrs under %s: ETags are computed on read", self._root)
                    self._xattrs = False
            if fsync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
            raise
        os.close(fd)
        return name

    def _make_folder(self, key: str, folder: str) -> None:
        """Create ``folder`` and its missing parents, each name durable in its parent on return."""
        self._folders.make(key, folder)

    def _delete(self, key: str, path: str) -> None:
        with self._locked(key):
            try:
                os.unlink(path)
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                return
            folder = os.path.dirname(path)
        try:
            self._folder_syncs.sync(folder)
        except FileNotFoundError:
            return  # a concurrent delete found the folder empty and removed it, with our entry
        # Tidy now-empty folders up to the root; a put racing us recreates them (_write_temp).
        while folder != self._root:
            try:
                os.rmdir(folder)
            except OSError:
                break
            self._folders.removed(folder)
            folder = os.path.dirname(folder)

    # --- listing ---------------------------------------------------------------------------

    async def _walk(
        self, base: str, partial: str, rollup: bool, start_after: str | None
    ) -> AsyncIterator[str]:
        """Entries under folder ``base`` whose name starts with ``partial``, in key order."""
        entries = [
            (base + name + ("/" if is_folder else ""), is_folder)
            for name, is_folder in await self._run(scan_folder, self._root, base, partial)
        ]
        for i in range(0, len(entries), _WINDOW):
            window = [
                (entry, is_folder)
                for entry, is_folder in entries[i : i + _WINDOW]
                if start_after is None
                or entry > start_after
                or (is_folder and not rollup and start_after.startswith(entry))
            ]
            if rollup:  # a common prefix only while a key lies below: one thread hop a window
                folders = [entry for entry, is_folder in window if is_folder]
                held = await self._run(holding_keys, self._root, folders) if folders else set()
                window = [(e, is_folder) for e, is_folder in window if not is_folder or e in held]
            for entry, is_folder in window:
                if is_folder and not rollup:
                    async for key in self._walk(entry, "", rollup, start_after):
                        yield key
                else:
                    yield entry

