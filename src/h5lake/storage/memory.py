"""A dict-backed store for unit tests: the whole contract, no I/O.

Safe to share between tasks and threads: every operation runs under one lock and never awaits
while holding it. Keys are kept in a sorted list beside the dict, so ``list`` walks from its
starting point instead of sorting everything on each call.
"""

from __future__ import annotations

import bisect
import hashlib
import threading
import time
from collections.abc import AsyncIterator, Sequence

from h5lake.storage.base import (
    Blob,
    ObjectInfo,
    PreconditionFailed,
    check_delimiter,
    check_key,
    check_prefix,
)


def md5_etag(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


class MemoryStore:
    def __init__(self) -> None:
        self._objects: dict[str, Blob] = {}
        self._keys: list[str] = []
        self._lock = threading.Lock()

    async def get(self, key: str) -> Blob | None:
        check_key(key)
        with self._lock:
            return self._objects.get(key)

    async def read_into(self, key: str, buffer: memoryview) -> int | None:
        check_key(key)
        with self._lock:
            blob = self._objects.get(key)
        if blob is None:
            return None
        if len(blob.data) == len(buffer):
            buffer[:] = blob.data
        return len(blob.data)

    async def head(self, key: str) -> ObjectInfo | None:
        check_key(key)
        with self._lock:
            blob = self._objects.get(key)
        if blob is None:
            return None
        return ObjectInfo(key, len(blob.data), blob.etag, blob.last_modified)

    async def get_range(self, key: str, offset: int, length: int) -> bytes | None:
        check_key(key)
        if offset < 0 or length < 0:
            raise ValueError(f"negative range {offset}+{length}")
        with self._lock:
            blob = self._objects.get(key)
        return None if blob is None else blob.data[offset : offset + length]

    async def get_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes] | None:
        check_key(key)
        if any(offset < 0 or length < 0 for offset, length in ranges):
            raise ValueError(f"negative range in {ranges!r}")
        with self._lock:
            blob = self._objects.get(key)
        return None if blob is None else [blob.data[o : o + n] for o, n in ranges]

    async def put(
        self,
        key: str,
        data: bytes | memoryview,
        *,
        if_match: str | None = None,
        if_none_match: bool = False,
    ) -> str:
        check_key(key)
        if if_match is not None and if_none_match:
            raise ValueError("if_match and if_none_match exclude each other")
        data = bytes(data)  # a caller's bytearray must not change what we stored
        blob = Blob(data, md5_etag(data), time.time())
        with self._lock:
            current = self._objects.get(key)
            if if_none_match and current is not None:
                raise PreconditionFailed(key)
            if if_match is not None and (current is None or current.etag != if_match):
                raise PreconditionFailed(key)
            if current is None:
                bisect.insort(self._keys, key)
            self._objects[key] = blob
        return blob.etag

    async def copy(self, source: str, key: str, *, source_etag: str, if_none_match: bool = False) -> str:
        """``CopyObject``: ``key`` shares ``source``'s bytes (immutable, so nothing can change them)."""
        check_key(source)
        check_key(key)
        with self._lock:
            found = self._objects.get(source)
            if found is None or found.etag != source_etag:
                raise PreconditionFailed(source)
            current = self._objects.get(key)
            if if_none_match and current is not None:
                raise PreconditionFailed(key)
            if current is None:
                bisect.insort(self._keys, key)
            self._objects[key] = Blob(found.data, found.etag, time.time())
        return found.etag

    async def delete(self, key: str) -> None:
        check_key(key)
        with self._lock:
            if self._objects.pop(key, None) is not None:
                del self._keys[bisect.bisect_left(self._keys, key)]

    async def list(
        self, prefix: str = "", *, delimiter: str | None = None, start_after: str | None = None
    ) -> AsyncIterator[str]:
        check_prefix(prefix)
        check_delimiter(delimiter)
        # The next entry is the first key >= lo (or > lo when ``inclusive`` is false).
        lo, inclusive = prefix, True
        if start_after is not None and start_after >= prefix:
            lo, inclusive = start_after, False
        while True:
            # Find the next entry under the lock, yield it without: callers may mutate between.
            with self._lock:
                find = bisect.bisect_left if inclusive else bisect.bisect_right
                i = find(self._keys, lo)
                key = self._keys[i] if i < len(self._keys) else None
            if key is None or not key.startswith(prefix):
                return
            slash = key.find("/", len(prefix)) if delimiter else -1
            if slash < 0:
                lo, inclusive = key, False
                yield key
                continue
            common = key[: slash + 1]
            # start_after may point inside a common prefix that an earlier page handed out.
            if start_after is None or common > start_after:
                yield common
            lo, inclusive = key[:slash] + "0", True  # "0" follows "/": past every key under common

    async def close(self) -> None:
        return None
