"""``CopyObject`` on the local directory store: a copy is a hard link to the source's file.

Why it is safe: no object's file is ever written after it got its name. A put writes a new
temporary file and renames it into place (a new inode), a delete unlinks one name, and the ETag
attribute is set on the temporary file before its rename. So two names of one inode hold the
same bytes for as long as both exist, and a later put or delete of either changes only that
name. The link is checked before it gets its name: the source is linked to a temporary name in
the target's folder, its ETag read from that inode (the attribute, else by hashing) and
compared with ``source_etag``; only then is it linked (create-only) or renamed (replace) into
place, and the folder fsync'ed, as a put does. The bytes were made durable by the source's put.

Time: ``link(2)`` sets the inode's change time (ctime), and the store reports the later of
mtime and ctime as ``last_modified`` (``posix.changed_at``), so a copy is as young as the copy
(gc's grace period counts from it), not as old as the source's bytes.

Falls back to copying the bytes where a hard link cannot be made (another file system under
the root, too many links to one inode, a file system without hard links).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from h5lake.storage.base import Blob, PreconditionFailed
from h5lake.storage.md5 import md5_hex
from h5lake.storage.posix import (
    TEMP_PREFIX,
    DurableFolders,
    FolderSyncs,
    folder_conflict,
    open_regular,
    read_all,
)
from h5lake.storage.recent import RecentObjects

T = TypeVar("T")

_NO_LINK = {errno.EXDEV, errno.EMLINK, errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS}
_TRIES = 3  # a listing may sweep a temporary link of an old file as stale: link again


class HardLinkCopies:
    """The ``copy`` of `LocalStore` (a mixin: it uses the store's paths, locks and puts)."""

    if TYPE_CHECKING:
        _recent: RecentObjects
        _folder_syncs: FolderSyncs
        _folders: DurableFolders

        def _path(self, key: str) -> str: ...
        async def _run(self, fn: Callable[..., T], *args: object) -> T: ...
        def _locked(self, key: str) -> contextlib.AbstractContextManager[None]: ...
        def _make_folder(self, key: str, folder: str) -> None: ...
        def _stored_etag(self, fd: int, st: os.stat_result) -> str | None: ...
        def _read_blob(self, fd: int, st: os.stat_result, path: str | None = None) -> Blob: ...
        def _put(self, key: str, path: str, data: bytes | memoryview, if_match: str | None,
                 if_none_match: bool, md5: str | None = None) -> str: ...

    async def copy(self, source: str, key: str, *, source_etag: str, if_none_match: bool = False) -> str:
        """``CopyObject``: ``key`` becomes a hard link to ``source``'s file (module docstring)."""
        source_path, path = self._path(source), self._path(key)
        self._recent.forget(path)
        return await self._run(self._copy, source, source_path, key, path, source_etag, if_none_match)

    def _copy(self, source: str, source_path: str, key: str, path: str, etag: str, if_none_match: bool) -> str:
        folder = os.path.dirname(path)
        for _ in range(_TRIES):
            temp = os.path.join(folder, TEMP_PREFIX + secrets.token_hex(8))
            try:
                if not self._link_temp(source, source_path, key, folder, temp):
                    return self._copy_bytes(source, source_path, key, path, etag, if_none_match)
                if self._etag_of_link(source, temp) != etag:
                    raise PreconditionFailed(source)
                with self._locked(key):
                    if if_none_match:
                        try:
                            os.link(temp, path)
                        except FileExistsError:
                            if os.path.isdir(path):
                                raise folder_conflict(key) from None
                            raise PreconditionFailed(key) from None
                        except FileNotFoundError:
                            raise _Swept from None
                    else:
                        try:
                            os.replace(temp, path)  # a no-op when path is this very inode already
                        except IsADirectoryError:
                            raise folder_conflict(key) from None
                        except FileNotFoundError:
                            raise _Swept from None
                self._folder_syncs.sync_renamed(folder)  # the new name durable, as for a put
                return etag
            except _Swept:
                continue
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)
        return self._copy_bytes(source, source_path, key, path, etag, if_none_match)

    def _link_temp(self, source: str, source_path: str, key: str, folder: str, temp: str) -> bool:
        """Link ``source``'s file to ``temp``; false when this file system cannot."""
        for _ in range(_TRIES):
            try:
                self._make_folder(key, folder)
            except FileNotFoundError:
                # a parent known durable was removed (another process's delete emptied it)
                self._folders.forget(folder)
                continue
            try:
                os.link(source_path, temp, follow_symlinks=False)
                return True
            except FileNotFoundError:
                if os.path.isdir(folder) and not os.path.lexists(source_path):
                    raise PreconditionFailed(source) from None
                # a delete removed the emptied folder under our feet (and a put may have made
                # it again since): make it again
                self._folders.forget(folder)
            except (NotADirectoryError, IsADirectoryError):
                raise PreconditionFailed(source) from None
            except OSError as e:
                if e.errno not in _NO_LINK:
                    raise
                if e.errno == errno.EPERM and os.path.isdir(source_path):
                    raise PreconditionFailed(source) from None  # a folder of other keys
                return False
        raise OSError(f"could not create the folder of {key!r}")

    def _etag_of_link(self, source: str, temp: str) -> str:
        """The ETag of the file linked at ``temp`` (its bytes can no longer change)."""
        try:
            fd = os.open(temp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            raise _Swept from None
        except OSError as e:
            if e.errno == errno.ELOOP:  # a symbolic link, not an object
                raise PreconditionFailed(source) from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise PreconditionFailed(source)
            return self._stored_etag(fd, st) or md5_hex(read_all(fd, st.st_size))
        finally:
            os.close(fd)

    def _copy_bytes(self, source: str, source_path: str, key: str, path: str, etag: str, if_none_match: bool) -> str:
        opened = open_regular(source_path)
        if opened is None:
            raise PreconditionFailed(source)
        blob = self._read_blob(*opened)
        if blob.etag != etag:
            raise PreconditionFailed(source)
        return self._put(key, path, blob.data, None, if_none_match, blob.etag)


class _Swept(Exception):
    """The temporary link vanished (a listing swept it as stale: its file is old)."""

