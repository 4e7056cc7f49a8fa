"""Ranged reads of HDF5 files where they are, pinned to the version that was linked.

A source registry maps a URI scheme to a `FileSource`: ``file`` to `LocalFiles` (``pread`` in a
thread), ``s3`` to `S3Files` (the S3 backend's ranged GETs, one store per bucket). Every linked
file carries the `Fingerprint` taken when it was linked (size, and mtime for a local file or
ETag for an S3 object). A read through `PinnedFile` fails with `SourceChanged` (409) when the
file no longer matches, or when it is shorter than a chunk reference says, rather than return
bytes of some other version of the file.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from h5lake.errors import Conflict, InvalidInput, StorageError
from h5lake.sources.uri import SourcePolicy, SourceScheme, SourceURI, parse_source_uri

INLINE_READ_BYTES = 64 * 1024  # smaller local reads run on the event loop: a thread hop costs more
S3_CHECK_SECONDS = 2.0  # how long one S3 HEAD vouches for an object (per process)


class SourceChanged(Conflict):
    """A linked file differs from the version whose chunk locations were recorded."""


class SourceMissing(Conflict):
    """A linked file is gone."""


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What identifies a version of a file: its size and its ETag (S3) or mtime (local)."""

    size: int
    etag: str | None = None
    mtime_ns: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"size": self.size}
        if self.etag is not None:
            out["etag"] = self.etag
        if self.mtime_ns is not None:
            out["mtime_ns"] = self.mtime_ns
        return out

    @classmethod
    def from_json(cls, value: Any) -> Fingerprint:
        if not isinstance(value, dict) or not isinstance(value.get("size"), int):
            raise InvalidInput(f"a source fingerprint needs an integer size, not {value!r}")
        return cls(int(value["size"]), value.get("etag"), value.get("mtime_ns"))


class FileSource(Protocol):
    """One URI scheme's files: their fingerprint now, and ranged reads checked against one."""

    async def fingerprint(self, key: str) -> Fingerprint | None:
        """The file's fingerprint, or None when it does not exist."""
        ...

    async def read(self, key: str, offset: int, length: int, expected: Fingerprint) -> bytes:
        """Exactly ``length`` bytes from ``offset`` of the file as it was when ``expected`` was
        taken; `SourceChanged` or `SourceMissing` otherwise."""
        ...

    async def read_ranges(self, key: str, ranges: Sequence[tuple[int, int]], expected: Fingerprint) -> list[bytes]:
        """``read`` of several ``(offset, length)`` ranges at once, in as few requests as the
        backend can (neighbouring ranges of an S3 object are merged into one GET)."""
        ...


def _changed(key: str) -> SourceChanged:
    return SourceChanged(
        f"the linked file {key} has changed since it was linked; link it again to read it"
    )


class LocalFiles:
    """Local files, read with ``pread``; the fingerprint is checked on the descriptor read."""

    def __init__(self, max_threads: int = 32) -> None:
        self._executor = ThreadPoolExecutor(max_threads, thread_name_prefix="h5lake-source")

    async def fingerprint(self, key: str) -> Fingerprint | None:
        try:
            st = os.stat(key)
        except FileNotFoundError:
            return None
        return Fingerprint(st.st_size, mtime_ns=st.st_mtime_ns)

    async def read(self, key: str, offset: int, length: int, expected: Fingerprint) -> bytes:
        if length <= INLINE_READ_BYTES:
            return self._read(key, offset, length, expected)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._read, key, offset, length, expected)

    async def read_ranges(self, key: str, ranges: Sequence[tuple[int, int]], expected: Fingerprint) -> list[bytes]:
        if sum(length for _, length in ranges) <= INLINE_READ_BYTES:
            return self._read_ranges(key, ranges, expected)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._read_ranges, key, ranges, expected)

    @classmethod
    def _read(cls, key: str, offset: int, length: int, expected: Fingerprint) -> bytes:
        return cls._read_ranges(key, ((offset, length),), expected)[0]

    @staticmethod
    def _read_ranges(key: str, ranges: Sequence[tuple[int, int]], expected: Fingerprint) -> list[bytes]:
        try:
            fd = os.open(key, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            raise SourceMissing(f"the linked file {key} no longer exists") from None
        out = []
        try:
            st = os.fstat(fd)
            if st.st_size != expected.size or (
                expected.mtime_ns is not None and st.st_mtime_ns != expected.mtime_ns
            ):
                raise _changed(key)
            for offset, length in ranges:
                parts = []
                got = 0
                while got < length:
                    piece = os.pread(fd, length - got, offset + got)
                    if not piece:
                        break
                    parts.append(piece)
                    got += len(piece)
                data = parts[0] if len(parts) == 1 else b"".join(parts)
                if len(data) != length:
                    raise _changed(key)
                out.append(data)
        finally:
            os.close(fd)
        return out

    async def close(self) -> None:
        self._executor.shutdown(wait=False)


class S3Files:
    """Objects in S3 buckets, one `S3Store` per bucket, made on first use.

    A changed object is detected by a HEAD (size and ETag) at most every `S3_CHECK_SECONDS`
    per object and process, and by a short read; a rewrite inside that window can go unseen.
    """

    def __init__(self, make_store: Callable[[str], Any]) -> None:
        self._make_store = make_store
        self._stores: dict[str, Any] = {}
        self._checked: dict[tuple[str, str], tuple[float, Fingerprint | None]] = {}

    def _store(self, bucket: str) -> Any:
        store = self._stores.get(bucket)
        if store is None:
            store = self._stores[bucket] = self._make_store(bucket)
        return store

    @staticmethod
    def _split(key: str) -> tuple[str, str]:
        bucket, _, name = key.partition("/")
        return bucket, name

    async def fingerprint(self, key: str) -> Fingerprint | None:
        bucket, name = self._split(key)
        info = await self._store(bucket).head(name)
        found = None if info is None else Fingerprint(info.size, etag=info.etag)
        self._checked[(bucket, name)] = (time.monotonic(), found)
        return found

    async def read(self, key: str, offset: int, length: int, expected: Fingerprint) -> bytes:
        await self._check(key, expected)
        bucket, name = self._split(key)
        data = await self._store(bucket).get_range(name, offset, length)
        if data is None:
            raise SourceMissing(f"the linked object s3://{key} no longer exists")
        if len(data) != length:
            raise _changed(f"s3://{key}")
        return data

    async def read_ranges(self, key: str, ranges: Sequence[tuple[int, int]], expected: Fingerprint) -> list[bytes]:
        await self._check(key, expected)
        bucket, name = self._split(key)
        pieces = await self._store(bucket).get_ranges(name, ranges)
        if pieces is None:
            raise SourceMissing(f"the linked object s3://{key} no longer exists")
        if any(len(piece) != length for piece, (_, length) in zip(pieces, ranges)):
            raise _changed(f"s3://{key}")
        return pieces

    async def _check(self, key: str, expected: Fingerprint) -> None:
        bucket, name = self._split(key)
        seen = self._checked.get((bucket, name))
        current = seen[1] if seen and time.monotonic() - seen[0] < S3_CHECK_SECONDS else await self.fingerprint(key)
        if current is None:
            raise SourceMissing(f"the linked object s3://{key} no longer exists")
        if current.size != expected.size or (expected.etag is not None and current.etag != expected.etag):
            raise _changed(f"s3://{key}")

    async def close(self) -> None:
        for store in self._stores.values():
            await store.close()
        self._stores.clear()


@dataclass(frozen=True, slots=True)
class ResolvedSource:
    """A linked file this server may read: its backend, key there, and the URI as written."""

    files: FileSource
    key: str
    uri: str


class SourceRegistry:
    """URI scheme -> `FileSource`, behind the allowed-roots policy.

    ``resolve`` is the one gate: it parses, checks the roots (symlinks resolved) and returns
    where to read. It is called when a reference is created and again before every read.
    """

    def __init__(self, policy: SourcePolicy, backends: dict[SourceScheme, FileSource]) -> None:
        self.policy = policy
        self._backends = backends

    def resolve(self, uri: str | bytes | SourceURI) -> ResolvedSource:
        parsed = uri if isinstance(uri, SourceURI) else parse_source_uri(uri)
        key = self.policy.authorize(parsed)
        files = self._backends.get(parsed.scheme)
        if files is None:
            raise InvalidInput(f"{parsed.text}: {parsed.scheme.value}:// sources are not configured on this server")
        if parsed.scheme is SourceScheme.S3:
            key = f"{parsed.location}/{key}"
        return ResolvedSource(files, key, parsed.text)

    async def fingerprint(self, source: ResolvedSource) -> Fingerprint:
        """The fingerprint to record when linking; ``InvalidInput`` when the file is missing."""
        try:
            found = await source.files.fingerprint(source.key)
        except StorageError:
            raise
        except OSError as exc:
            raise InvalidInput(f"{source.uri} cannot be read: {exc.strerror or exc}") from None
        if found is None:
            raise InvalidInput(f"{source.uri} does not exist")
        return found

    async def close(self) -> None:
        for backend in self._backends.values():
            close = getattr(backend, "close", None)
            if close is not None:
                await close()


class PinnedFile:
    """A `ByteRangeSource` over one linked file, failing if it is not the recorded version.

    The chunk engine reads ``get_range(key, offset, length)`` from a `ChunkRef`; the key is
    ignored here (the file is fixed) and kept only for messages.
    """

    def __init__(self, source: ResolvedSource, expected: Fingerprint) -> None:
        self.source = source
        self.expected = expected

    async def get_range(self, key: str, offset: int, length: int) -> bytes | None:
        if offset < 0 or length < 0:
            raise ValueError(f"negative range {offset}+{length}")
        if offset + length > self.expected.size:
            raise _changed(self.source.uri)  # a reference past the end: wrong file or version
        return await self.source.files.read(self.source.key, offset, length, self.expected)

    async def get_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes] | None:
        """Several ranges at once (`h5lake.storage.base.GetRanges`): the chunk engine reads
        neighbouring chunks of one request so, merged where the backend can."""
        if any(offset < 0 or length < 0 for offset, length in ranges):
            raise ValueError(f"negative range in {ranges!r}")
        if any(offset + length > self.expected.size for offset, length in ranges):
            raise _changed(self.source.uri)
        return await self.source.files.read_ranges(self.source.key, ranges, self.expected)


def default_registry(roots: tuple[str, ...], s3_store: Callable[[str], Any] | None = None) -> SourceRegistry:
    """Local files under ``roots``; S3 objects too when ``s3_store(bucket)`` makes a store."""
    backends: dict[SourceScheme, FileSource] = {SourceScheme.LOCAL: LocalFiles()}
    if s3_store is not None:
        backends[SourceScheme.S3] = S3Files(s3_store)
    return SourceRegistry(SourcePolicy.from_roots(roots), backends)
