"""S3 and S3-compatible object stores, through obstore (Rust ``object_store``).

Why obstore: against a local SeaweedFS it served 1.5x (one at a time) to 2.4x (16 at once) the
small GETs, HEADs and PUTs per second of aiobotocore, for 40-50% of the client CPU; 4 MiB
transfers were bound by the server either way. Failures surface as ``StorageError``.

The contract on S3:

* ``if_none_match`` sends ``If-None-Match: *`` and ``if_match`` sends ``If-Match: "<etag>"``;
  S3's 412 (and a 409 conflict, or a 404 for if-match on a missing key) is
  ``PreconditionFailed``. Puts are single requests (conditional writes cannot be multipart).
* ETags are S3's, without the quotes: the MD5 hex of the bytes for a single-part object.
* ``list`` sorts every folder itself: S3 lists in UTF-8 byte order, but some compatible servers
  (SeaweedFS) list in directory order, which differs when a name continues with a character
  below ``/`` (``run 1``, ``run-1``, ``run.h5`` next to a folder ``run/``). A listing without a
  delimiter walks the folders in order, one delimited listing (paged by 1000) each, holding
  one folder's names at a time. SeaweedFS also keeps folders emptied by deletes and lists
  them as common prefixes; with ``verify_common_prefixes`` (the default) each common prefix
  is checked to hold a key, 32 at a time, before it is yielded. AWS S3, MinIO and Ceph never
  list an empty prefix: there it can be turned off to save one LIST per common prefix.
* ``get_ranges`` merges ranges closer than ``coalesce_gap`` (512 KiB: below the hole that costs
  as much as a GET on a local SeaweedFS, docs/performance.md; -1 never merges) into one ranged
  GET of at most ``max_span`` bytes, ``range_concurrency`` at once; the later GETs carry
  ``If-Match`` on the first one's ETag, so every range comes from one version.
* Lanes (``h5lake.storage.lanes``): requests made on the bulk lane (chunk transfers) wait for
  one of ``bulk_concurrency`` slots; other requests (documents) never wait. ``requests`` counts
  the requests sent, by kind.
* Retries: obstore retries 5xx (S3's SlowDown throttling included) and broken connections with
  exponential backoff and jitter; we add the same for 429 Too Many Requests, which some
  S3-compatible servers use for throttling and obstore does not retry. A request that may have
  been applied before its answer was lost is not repeated blindly: its error is raised.
* Hashing: h5lake computes no checksum of what it puts on S3; the ETag S3 answers (the MD5
  of the bytes for a single-part put) is the catalog's checksum. obstore sends no additional
  checksum (``x-amz-checksum-*``: none unless ``checksum_algorithm`` is set; boto3's CRC32 by
  default does not apply, boto3 is not used). SigV4 signs the SHA-256 of every body unless the
  payload is unsigned: over HTTPS (AWS itself: no ``endpoint_url``) the body is sent as
  ``UNSIGNED-PAYLOAD``, as botocore does for S3 over HTTPS, since TLS already guards it in
  transit (~0.8 ms of CPU per MiB put here, docs/performance.md); over plain HTTP it stays
  signed, the only check that the bytes S3 stored are the ones sent. ``unsigned_payload``
  overrides that choice.
* Credentials: arguments, else the standard AWS environment (``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, ...), else the usual AWS
  providers (instance metadata, web identity).

Shutdown: obstore answers on its own Tokio threads, which wake the event loop through
``call_soon_threadsafe``. A thread still inside that call when the interpreter finalizes makes
the process abort (SIGABRT, about one short-lived process in six here). ``close()`` lets
in-flight requests finish, then waits until no thread is delivering a result; an ``atexit``
hook does the same wait for processes that never call ``close()``. Make the store after any
``fork()``: obstore is not fork-safe.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import random
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar, overload

import obstore
from obstore.exceptions import (
    AlreadyExistsError,
    BaseError,
    GenericError,
    PreconditionError,
)
from obstore.store import S3Store as _ObstoreS3

from h5lake.errors import StorageError
from h5lake.storage.base import (
    Blob,
    ObjectInfo,
    PreconditionFailed,
    check_delimiter,
    check_key,
    check_prefix,
)
from h5lake.storage.coalesce import Span, coalesce
from h5lake.storage.lanes import BulkSlots, in_bulk

if TYPE_CHECKING:
    from obstore import GetResult, ObjectMeta

log = logging.getLogger(__name__)

T = TypeVar("T")
U = TypeVar("U")

_THROTTLED = re.compile(r"status code: 429\b")  # object_store's wording
_THROTTLE_TRIES = 6
_DELIVERY_FRAMES = {"call_soon_threadsafe", "_write_to_self"}
_VERIFY_WINDOW = 32
_RANGE_TRIES = 3  # get_ranges starts over when the object changes between its requests

# Ranged GETs of one object closer than this are one request (docs/performance.md, "S3").
COALESCE_GAP = 512 * 1024
MAX_SPAN = 8 * 1024 * 1024  # a merged request stops growing here, so large reads run in parallel
RANGE_CONCURRENCY = 8  # requests of one get_ranges at once
BULK_CONCURRENCY = 32  # bulk-lane requests of one store at once (h5lake.storage.lanes)

FolderEntries = list[tuple[str, bool]]  # (name, is_folder); `list` is a method in the class


def _flat(data: Any) -> memoryview:
    """``data`` (any buffer) as one-dimensional unsigned bytes, copied only when it is not contiguous."""
    view = memoryview(data)
    if not view.c_contiguous:
        return memoryview(view.tobytes())
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


class S3Store:
    """A bucket, or the part of it under ``prefix``, as a Store."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        region: str | None = None,
        *,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        virtual_hosted_style: bool = False,
        verify_common_prefixes: bool = True,
        max_retries: int = 10,
        retry_timeout: float = 60.0,
        connect_timeout: float = 5.0,
        request_timeout: float = 300.0,
        close_timeout: float = 10.0,
        coalesce_gap: int = COALESCE_GAP,
        max_span: int = MAX_SPAN,
        range_concurrency: int = RANGE_CONCURRENCY,
        bulk_concurrency: int = BULK_CONCURRENCY,
        unsigned_payload: bool | None = None,
    ) -> None:
        config: dict[str, Any] = {"virtual_hosted_style_request": virtual_hosted_style}
        if unsigned_payload is None:  # module docstring, "Hashing": sign bodies only without TLS
            unsigned_payload = endpoint_url is None or endpoint_url.lower().startswith("https://")
        config["unsigned_payload"] = unsigned_payload
        if endpoint_url:
            config["endpoint"] = endpoint_url
        if region:
            config["region"] = region
        if access_key_id:
            config["access_key_id"] = access_key_id
        if secret_access_key:
            config["secret_access_key"] = secret_access_key
        if session_token:
            config["session_token"] = session_token
        client_options: dict[str, Any] = {
            "connect_timeout": timedelta(seconds=connect_timeout),
            "timeout": timedelta(seconds=request_timeout),
        }
        if endpoint_url and endpoint_url.startswith("http://"):
            client_options["allow_http"] = True  # else as AWS_ALLOW_HTTP says
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self._store: _ObstoreS3 | None = _ObstoreS3(
            bucket,
            prefix=self.prefix or None,
            config=config,  # type: ignore[arg-type]
            client_options=client_options,  # type: ignore[arg-type]
            retry_config={
                "max_retries": max_retries,
                "retry_timeout": timedelta(seconds=retry_timeout),
                "backoff": {
                    "init_backoff": timedelta(milliseconds=100),
                    "max_backoff": timedelta(seconds=15),
                    "base": 2,
                },
            },
        )
        self._verify_common_prefixes = verify_common_prefixes
        self._close_timeout = close_timeout
        self._in_flight: set[asyncio.Future[Any]] = set()
        self.coalesce_gap = coalesce_gap
        self.max_span = max_span
        self._range_concurrency = range_concurrency
        self.bulk = BulkSlots(bulk_concurrency)
        self.requests: Counter[str] = Counter()  # requests sent, by kind (get, range, head, ...)
        _install_exit_hook()

    def __repr__(self) -> str:
        return f"S3Store({self.bucket!r}, prefix={self.prefix!r})"

    # --- the Store interface ---------------------------------------------------------------

    async def get(self, key: str) -> Blob | None:
        check_key(key)
        store = self._client()

        try:
            result, data = await self._call(lambda: obstore.get_async(store, key), "get", _body)
        except FileNotFoundError:
            return None
        return _blob(bytes(data), result.meta)

    async def head(self, key: str) -> ObjectInfo | None:
        check_key(key)
        store = self._client()
        try:
            meta = await self._call(lambda: obstore.head_async(store, key), "head")
        except FileNotFoundError:
            return None
        return ObjectInfo(key, meta["size"], _etag(meta["e_tag"]), meta["last_modified"].timestamp())

    async def get_range(self, key: str, offset: int, length: int) -> bytes | None:
        check_key(key)
        if offset < 0 or length < 0:
            raise ValueError(f"negative range {offset}+{length}")
        if length == 0:
            return None if await self.head(key) is None else b""
        store = self._client()
        try:
            data = await self._call(lambda: obstore.get_range_async(store, key, start=offset, length=length), "range")
        except FileNotFoundError:
            return None
        except StorageError:
            # S3 answers 416 for a range starting at or past the end; tell that from a failure.
            info = await self.head(key)
            if info is None:
                return None
            if offset >= info.size:
                return b""
            raise
        return bytes(data)

    async def get_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes] | None:
        """Several ranges of one version of ``key``, in few GETs.

        Ranges closer than ``coalesce_gap`` are fetched as one span (`coalesce`), up to
        ``range_concurrency`` spans at once. The first span's answer names the version (its
        ETag); the others are asked with ``If-Match`` on it, and a change in between starts
        the read over.
        """
        check_key(key)
        if any(offset < 0 or length < 0 for offset, length in ranges):
            raise ValueError(f"negative range in {ranges!r}")
        spans = coalesce(ranges, self.coalesce_gap, self.max_span)
        if not spans:
            return None if await self.head(key) is None else [b"" for _ in ranges]
        for _ in range(_RANGE_TRIES):
            try:
                fetched = await self._get_spans(key, spans)
            except PreconditionError:
                continue  # replaced between two of its GETs: read the new version whole again
            if fetched is None:
                return None
            out = [b""] * len(ranges)
            for span, data in zip(spans, fetched):
                view = memoryview(data)
                for i in span.members:
                    offset, length = ranges[i]
                    out[i] = bytes(view[offset - span.start : offset - span.start + length])
            return out
        raise StorageError(f"S3: {key!r} kept changing while its ranges were read")

    async def _get_spans(self, key: str, spans: list[Span]) -> list[Any] | None:
        """The bytes of each span (cut short at the end of the object), or None when missing."""
        store = self._client()

        async def span_get(span: Span, etag: str | None) -> Any:
            options: dict[str, Any] = {"range": (span.start, span.end)}
            if etag:
                options["if_match"] = f'"{etag}"'

            result, data = await self._call(
                lambda: obstore.get_async(store, key, options=options), "range", _body  # type: ignore[arg-type]
            )
            return data, result.meta

        first = spans[0]
        try:
            data, meta = await span_get(first, None)
        except FileNotFoundError:
            return None
        except StorageError:
            # S3 answers 416 for a range starting at or past the end; tell that from a failure.
            info = await self.head(key)
            if info is None:
                return None
            if first.start >= info.size:
                return [b""] * len(spans)  # the first span is the lowest: all are past the end
            raise
        size, etag = meta["size"], _etag(meta["e_tag"])
        out: list[Any] = [data] + [b""] * (len(spans) - 1)
        rest = [(i, span) for i, span in enumerate(spans[1:], 1) if span.start < size]
        gate = asyncio.Semaphore(self._range_concurrency)

        async def one(i: int, span: Span) -> None:
            async with gate:
                try:
                    out[i] = (await span_get(Span(span.start, min(span.end, size), span.members), etag))[0]
                except FileNotFoundError:
                    raise PreconditionError(f"{key} was deleted during a ranged read") from None

        failures = [e for e in await asyncio.gather(*(one(i, span) for i, span in rest), return_exceptions=True) if e]
        if failures:
            raise failures[0]
        return out

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
        # a buffer is sent as it is (no copy; obstore takes flat bytes, so a view of another
        # format is cast): the caller awaits the put and does not change the bytes meanwhile
        body: bytes | memoryview = data if isinstance(data, bytes) else _flat(data)
        mode: Any = "overwrite"
        if if_none_match:
            mode = "create"
        elif if_match is not None:
            mode = {"e_tag": f'"{if_match}"'}
        store = self._client()
        try:
            result = await self._call(
                lambda: obstore.put_async(store, key, body, mode=mode, use_multipart=False), "put"
            )
        except (AlreadyExistsError, PreconditionError) as e:
            if mode == "overwrite":
                raise StorageError(f"S3 put of {key!r}: {e}") from e
            raise PreconditionFailed(key) from None
        except FileNotFoundError:
            if if_match is None:
                raise StorageError(f"S3 put of {key!r} found no bucket") from None
            raise PreconditionFailed(key) from None  # AWS: If-Match on a missing key is a 404
        etag = result["e_tag"]
        if etag is None:  # not every compatible server answers with one
            info = await self.head(key)
            return "" if info is None else info.etag
        return _etag(etag)

    async def delete(self, key: str) -> None:
        check_key(key)
        store = self._client()
        try:
            await self._call(lambda: obstore.delete_async(store, key), "delete")
        except FileNotFoundError:
            pass

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
        """Let requests in flight finish (bounded), then drop the client cleanly."""
        if self._store is None:
            return
        self._store = None
        if self._in_flight:
            await asyncio.wait(set(self._in_flight), timeout=self._close_timeout)
        deadline = time.monotonic() + 1.0
        while _results_in_delivery() and time.monotonic() < deadline:
            await asyncio.sleep(0.001)  # frees the GIL for the delivering thread

    # --- requests --------------------------------------------------------------------------

    def _client(self) -> _ObstoreS3:
        if self._store is None:
            raise RuntimeError(f"{self!r} is closed")
        return self._store

    @overload
    async def _call(self, request: Callable[[], Awaitable[T]], kind: str) -> T: ...

    @overload
    async def _call(
        self, request: Callable[[], Awaitable[T]], kind: str, then: Callable[[T], Awaitable[U]]
    ) -> tuple[T, U]: ...

    async def _call(
        self,
        request: Callable[[], Awaitable[T]],
        kind: str,
        then: Callable[[T], Awaitable[U]] | None = None,
    ) -> T | tuple[T, U]:
        """Run one obstore request: throttling retried, errors mapped, shielded from cancel.

        ``then`` (a GET's body, `_body`) is awaited on the request's answer in the same way and
        in the same bulk slot; the result is then ``(answer, then's result)``. A request on the
        bulk lane waits for one of the store's bulk slots first; others never wait
        (h5lake.storage.lanes). A caller's cancellation does not cancel the request under way;
        ``close()`` waits for it. Cancelling obstore's own future would leave a Tokio task to
        answer into a cancelled future, possibly while the interpreter shuts down. obstore's
        calls return futures, which are shielded as they are: no task per request.
        """
        for attempt in range(_THROTTLE_TRIES):
            try:
                if in_bulk():
                    async with self.bulk.slot():
                        return await self._send(request, kind, then)
                return await self._send(request, kind, then)
            except _Throttled as e:
                if attempt + 1 == _THROTTLE_TRIES:
                    raise StorageError(f"S3: {e.__cause__}") from e.__cause__
            await asyncio.sleep(random.uniform(0, 0.1 * 2**attempt))  # throttled: the slot is free meanwhile
        raise AssertionError("unreachable")

    async def _send(
        self, request: Callable[[], Awaitable[T]], kind: str, then: Callable[[T], Awaitable[U]] | None
    ) -> T | tuple[T, U]:
        self.requests[kind] += 1
        answer = await self._shielded(request())
        if then is None:
            return answer
        return answer, await self._shielded(then(answer))

    async def _shielded(self, awaitable: Awaitable[T]) -> T:
        future = asyncio.ensure_future(awaitable)  # obstore's futures as they are; a coroutine as a task
        self._in_flight.add(future)
        future.add_done_callback(self._settled)
        try:
            return await asyncio.shield(future)
        except (FileNotFoundError, AlreadyExistsError, PreconditionError):
            raise
        except GenericError as e:
            if _THROTTLED.search(str(e)):
                raise _Throttled() from e
            raise StorageError(f"S3: {e}") from e
        except BaseError as e:
            raise StorageError(f"S3: {e}") from e

    def _settled(self, future: asyncio.Future[Any]) -> None:
        self._in_flight.discard(future)
        if not future.cancelled():
            future.exception()  # retrieved: a caller that was cancelled will not look at it

    # --- listing ---------------------------------------------------------------------------

    async def _walk(
        self, base: str, partial: str, rollup: bool, start_after: str | None
    ) -> AsyncIterator[str]:
        """Entries under folder ``base`` whose name starts with ``partial``, in key order."""
        entries = [
            (base + name + ("/" if is_folder else ""), is_folder)
            for name, is_folder in await self._folder(base, partial)
        ]
        for i in range(0, len(entries), _VERIFY_WINDOW):
            window = [
                (entry, is_folder)
                for entry, is_folder in entries[i : i + _VERIFY_WINDOW]
                if start_after is None
                or entry > start_after
                or (is_folder and not rollup and start_after.startswith(entry))
            ]
            if rollup and self._verify_common_prefixes:
                folders = [entry for entry, is_folder in window if is_folder]
                held = dict(zip(folders, await asyncio.gather(*map(self._holds_a_key, folders))))
                window = [(e, is_folder) for e, is_folder in window if not is_folder or held[e]]
            for entry, is_folder in window:
                if is_folder and not rollup:
                    async for key in self._walk(entry, "", rollup, start_after):
                        yield key
                else:
                    yield entry

    async def _holds_a_key(self, base: str) -> bool:
        for name, is_folder in await self._folder(base, ""):
            if not is_folder or await self._holds_a_key(base + name + "/"):
                return True
        return False

    async def _folder(self, base: str, partial: str) -> FolderEntries:
        """(name, is_folder) in folder ``base``, sorted as keys sort: a folder ``a`` as ``a/``.

        obstore pages through ListObjectsV2 (1000 entries a page) and collects the folder.
        """
        store = self._client()
        listing = await self._call(
            lambda: obstore.list_with_delimiter_async(store, base.rstrip("/") or None), "list"
        )
        cut = len(base)
        entries = [(meta["path"][cut:], False) for meta in listing["objects"]]
        entries += [(path[cut:], True) for path in listing["common_prefixes"]]
        # Drop folder markers ("base/" itself: SeaweedFS lists a folder emptied by deletes so,
        # consoles make them) and names outside the prefix.
        entries = [e for e in entries if e[0] and e[0].startswith(partial) and "/" not in e[0]]
        entries.sort(key=lambda e: e[0] + "/" if e[1] else e[0])
        return entries


class _Throttled(Exception):
    """A 429 answer (its error is the cause): `S3Store._call` sends the request again."""


def _body(result: GetResult) -> Awaitable[Any]:
    """A GET's body, read after its answer's headers (obstore's ``bytes_async``)."""
    return result.bytes_async()


def _etag(raw: str | None) -> str:
    return (raw or "").strip('"')


def _blob(data: bytes, meta: ObjectMeta) -> Blob:
    return Blob(data, _etag(meta["e_tag"]), meta["last_modified"].timestamp())


# --- clean interpreter exit ------------------------------------------------------------------

_hook_lock = threading.Lock()
_hook_installed = False


def _results_in_delivery() -> bool:
    """Whether a thread other than this one is inside ``call_soon_threadsafe``."""
    me = threading.get_ident()
    for ident, frame in sys._current_frames().items():
        if ident == me:
            continue
        f: Any = frame
        while f is not None:
            if f.f_code.co_name in _DELIVERY_FRAMES:
                return True
            f = f.f_back
    return False


def _wait_for_deliveries(timeout: float = 1.0) -> None:
    deadline = time.monotonic() + timeout
    while _results_in_delivery() and time.monotonic() < deadline:
        time.sleep(0.001)


def _install_exit_hook() -> None:
    global _hook_installed
    with _hook_lock:
        if not _hook_installed:
            atexit.register(_wait_for_deliveries)
            _hook_installed = True
