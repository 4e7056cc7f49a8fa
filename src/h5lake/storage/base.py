"""The storage contract every backend (memory, local directory, S3) implements.

Keys are ``/``-separated strings without a leading slash. A missing object is ``None`` from
``get``/``head`` (never an exception). Conditional writes are the one concurrency primitive:

* ``put(key, data)`` replaces atomically (a reader sees the old bytes or the new, never a mix);
* ``put(key, data, if_none_match=True)`` creates only; it raises ``PreconditionFailed`` when the
  key exists;
* ``put(key, data, if_match=etag)`` replaces only while the object's ETag is still ``etag``;
  it raises ``PreconditionFailed`` when the object changed or vanished.

A ``put`` that returns has made the bytes durable. ETags are opaque strings that change
whenever the bytes change; every backend here uses the MD5 hex digest of the bytes (S3 objects
written by other tools in several parts have S3's ``<md5>-<parts>`` form), so equal ETags from
two backends mean equal bytes.

Keys are checked the same way by every backend (``check_key``), so a key a unit test accepts
on the memory store is one the local directory and S3 accept too. A portable key is at most
1024 UTF-8 bytes of segments of at most 255 bytes; it has no empty, ``.`` or ``..`` segment, no
backslash and no control character, and no segment starts with ``.h5lake-`` (reserved for the
backends' own temporary and lock files). The local directory adds one rule of a file system:
a key cannot also be the folder of other keys (``a`` and ``a/b``); such a put raises
``ValueError``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

MAX_KEY_BYTES = 1024
MAX_SEGMENT_BYTES = 255
RESERVED_SEGMENT_PREFIX = ".h5lake-"
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\\\ud800-\udfff]")
#: Keys that passed ``check_key`` lately: every request checks the same few (its domain's and
#: objects' documents), at ~9 us a check against a set lookup. Cleared when full.
_CHECKED: set[str] = set()
_CHECKED_MAX = 4096


class PreconditionFailed(Exception):
    """A conditional put lost: the object exists (create-only) or changed (if-match)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"precondition failed for {key!r}")
        self.key = key


def check_key(key: str) -> str:
    """Return ``key`` if it is a portable key (see the module docstring); else ``ValueError``."""
    if type(key) is str and key in _CHECKED:
        return key
    if not isinstance(key, str):
        raise TypeError(f"a storage key is a string, not {key!r}")
    if not key:
        raise ValueError("a storage key is not empty")
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"storage key {key!r} is not valid unicode") from None
    if size > MAX_KEY_BYTES:
        raise ValueError(f"storage key is longer than {MAX_KEY_BYTES} bytes: {key[:80]!r}...")
    for segment in key.split("/"):
        _check_segment(key, segment)
    if len(_CHECKED) >= _CHECKED_MAX:
        _CHECKED.clear()
    _CHECKED.add(key)
    return key


def check_prefix(prefix: str) -> str:
    """Return ``prefix`` if some portable key could start with it; else ``ValueError``.

    The last segment may be partial (``a/b`` matches ``a/b/c`` and ``a/bc``); a prefix ending
    in ``/`` names a folder.
    """
    if not isinstance(prefix, str):
        raise TypeError(f"a key prefix is a string, not {prefix!r}")
    if not prefix:
        return prefix
    *whole, partial = prefix.split("/")
    for segment in whole:
        _check_segment(prefix, segment)
    if partial:
        _check_chars(prefix, partial)
    return prefix


def _check_segment(key: str, segment: str) -> None:
    if segment in ("", ".", ".."):
        raise ValueError(f"storage key {key!r} has an empty, '.' or '..' segment")
    if segment.startswith(RESERVED_SEGMENT_PREFIX):
        raise ValueError(f"storage key {key!r} uses the reserved {RESERVED_SEGMENT_PREFIX!r}")
    if len(segment.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES:
        raise ValueError(f"storage key {key!r} has a segment over {MAX_SEGMENT_BYTES} bytes")
    _check_chars(key, segment)


def _check_chars(key: str, segment: str) -> None:
    if _BAD_CHARS.search(segment):
        raise ValueError(f"storage key {key!r} has a control character or a backslash")


def check_delimiter(delimiter: str | None) -> None:
    if delimiter not in (None, "/"):
        raise ValueError(f"the only list delimiter is '/', not {delimiter!r}")


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    key: str
    size: int
    etag: str
    last_modified: float


@dataclass(frozen=True, slots=True)
class Blob:
    data: bytes
    etag: str
    last_modified: float


@runtime_checkable
class ByteRangeSource(Protocol):
    """What a reader of byte ranges needs, and nothing more."""

    async def get_range(self, key: str, offset: int, length: int) -> bytes | None:
        """Up to ``length`` bytes from ``offset``; ``None`` when ``key`` is missing.

        A range running past the end is cut short; one starting at or past the end is ``b""``.
        A negative ``offset`` or ``length`` is a ``ValueError``.
        """
        ...


@runtime_checkable
class GetRanges(Protocol):
    """An optional capability: several byte ranges of one version of one object."""

    async def get_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes] | None:
        """The bytes of each ``(offset, length)`` range, all read from the same version of
        ``key``; ``None`` when ``key`` is missing. Ranges are cut short at the end as in
        ``get_range``; a negative offset or length is a ``ValueError``.
        """
        ...


@runtime_checkable
class ReadInto(Protocol):
    """An optional capability: a whole object read straight into the caller's buffer (one copy
    from the medium to where the bytes are wanted, e.g. a region of a reply's array)."""

    async def read_into(self, key: str, buffer: memoryview) -> int | None:
        """The size of ``key``, or ``None`` when it is missing. ``buffer`` (writable, bytes)
        holds the object's bytes only when the size equals ``len(buffer)``; otherwise its
        contents are unspecified and the caller decides (e.g. a chunk of the wrong size)."""
        ...


@dataclass(frozen=True, slots=True)
class MappedBlob:
    """A whole object as `GetMapped` gives it: ``data`` views the object's bytes, read-only."""

    data: memoryview
    etag: str
    last_modified: float


@runtime_checkable
class GetMapped(Protocol):
    """An optional capability: a whole object as a read-only view of its stored pages (the local
    store maps a large object's file instead of copying it into new memory), for a caller that
    only passes the bytes on (a chunk sent as stored). The view stays valid while referenced."""

    async def get_mapped(self, key: str) -> MappedBlob | None:
        """What ``get(key)`` answers, its bytes as a view; ``None`` when ``key`` is missing."""
        ...


@runtime_checkable
class PutHashed(Protocol):
    """An optional capability: an unconditional put whose MD5 the caller computed already (the
    chunks of one request hashed together, ``storage.md5.md5_hex_many``, at a quarter of the
    CPU of hashing each alone). The store keeps ``md5`` as the object's ETag without hashing."""

    async def put_hashed(self, key: str, data: bytes | memoryview, md5: str) -> str:
        """``put(key, data)`` where ``md5`` is the MD5 hex digest of ``data``; returns the ETag."""
        ...

    async def put_hashed_many(self, items: Sequence[tuple[str, bytes | memoryview, str]],
                              ready: Callable[[], Awaitable[object]] | None = None) -> None:
        """``put_hashed`` of each ``(key, data, md5)``, at once: every one is durable when this
        returns (a store may make their names durable together, e.g. one folder fsync for all).
        With ``ready``, none is visible under its key before ``await ready()`` has returned (a
        store may write the bytes meanwhile); its error fails the puts."""
        ...


@runtime_checkable
class CreateMany(Protocol):
    """An optional capability: many create-only puts whose durability is paid once for all (the
    objects of one batch request). Each object is whole or absent after a crash at any moment,
    as with single puts; nothing is durable before the call returns."""

    async def create_many(self, items: Sequence[tuple[str, bytes]]) -> list[str | None]:
        """``put(key, data, if_none_match=True)`` of each ``(key, data)`` (distinct keys); the
        ETag of each one made, or None where the key existed (that object is left as it was).
        On an error some may have been made; none is reported durable."""
        ...


@runtime_checkable
class CopyObject(Protocol):
    """An optional capability: an object made from another object of the same store without the
    caller sending its bytes (a hard link on a local directory, the same bytes in memory)."""

    async def copy(self, source: str, key: str, *, source_etag: str, if_none_match: bool = False) -> str:
        """Make ``key`` hold the bytes ``source`` holds while its ETag is ``source_etag``; return
        the new ETag (``source_etag``). ``key`` is replaced atomically as by ``put``, or with
        ``if_none_match`` only created. ``PreconditionFailed(source)`` when ``source`` is missing
        or holds other bytes, ``PreconditionFailed(key)`` when ``key`` exists (create-only): then
        nothing changed. Afterwards the two are independent objects: a later put or delete of
        either never changes the other's bytes or ETag, and ``key``'s ``last_modified`` is the
        time of the copy (``source``'s may move to it too: a hard link)."""
        ...


class Later:
    """`AnswersAtOnce.get_at_once`: the answer needs a wait (`Store.get`)."""


LATER = Later()


@runtime_checkable
class AnswersAtOnce(Protocol):
    """A store that can tell some gets' answers without waiting (the local store: a file read
    lately and unchanged, or one small enough to read on the event loop's thread)."""

    def get_at_once(self, key: str) -> Blob | None | Later:
        """What ``get(key)`` would answer now, or `LATER` when it needs a wait."""
        ...


@runtime_checkable
class Store(ByteRangeSource, Protocol):
    async def get(self, key: str) -> Blob | None: ...

    async def head(self, key: str) -> ObjectInfo | None: ...

    async def put(
        self,
        key: str,
        data: bytes | memoryview,
        *,
        if_match: str | None = None,
        if_none_match: bool = False,
    ) -> str:
        """Store ``data`` durably and return its new ETag.

        ``if_none_match`` and ``if_match`` together are a ``ValueError``. A failure of the
        medium is ``h5lake.errors.StorageError``; a put whose outcome is unknown (the
        connection broke after the request left) raises it rather than guess. Over a network,
        a conditional put retried after a lost answer may find its own first attempt and report
        ``PreconditionFailed``: callers that retry on it re-read first, which settles it.
        """
        ...

    async def delete(self, key: str) -> None:
        """Remove ``key``; deleting a missing key is not an error."""
        ...

    def list(
        self, prefix: str = "", *, delimiter: str | None = None, start_after: str | None = None
    ) -> AsyncIterator[str]:
        """Yield keys starting with ``prefix`` in lexical (code point = UTF-8 byte) order.

        With ``delimiter="/"``, keys below the next ``/`` after the prefix are rolled up into one
        entry ending in ``/`` (a "common prefix"), as S3 does; a common prefix appears only while
        some key lies below it. ``start_after`` skips every entry (key or common prefix) that is
        not greater than it, so the last entry of one page is the ``start_after`` of the next.

        The listing is not a snapshot: keys put or deleted while it runs may or may not appear.
        """
        ...

    async def close(self) -> None:
        """Release connections and threads; call it before the event loop ends."""
        ...
