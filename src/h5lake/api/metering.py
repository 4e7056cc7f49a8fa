"""Storage operations counted for ``/metrics`` (`api/metrics.py`): a server's store is made as a
subclass of its class whose operations count (`metered_class`), each call adding to the plain
per-process numbers of `STORE` (by operation: outcomes, duration buckets and their sum, bytes),
which the once-a-second flush of `api/metrics.py` writes into prometheus-client's values.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any

from h5lake.api.observe import DURATION_BUCKETS
from h5lake.storage import AnswersAtOnce, Later, PreconditionFailed, Store

_clock = time.perf_counter
_SLOTS = len(DURATION_BUCKETS) + 1  # the buckets of `DURATION_BUCKETS`, then +Inf
_EMPTY = [0] * _SLOTS

OUTCOMES = ("ok", "missing", "conflict", "error")


class OpTally:
    """One storage operation's calls since the last flush: their durations already bucketed
    (`buckets`, by index into `DURATION_BUCKETS`, +Inf last, not cumulative; every call is in
    one) with their sum, how many found nothing, failed on a condition or failed otherwise (the
    rest were ``ok``: worked out by `take`), and the bytes they moved. A call adds to these
    numbers (one comparison for the first bucket, where most fall, else a ``bisect``, and a few
    additions) rather than keeping its duration for the flush: that way it costs less in all
    (the durations of a flush's many calls were a numpy conversion and freed floats). The
    wrappers hold `buckets` itself: `take` empties it in place."""

    __slots__ = ("buckets", "bytes", "conflict", "error", "missing", "ok", "seconds")

    def __init__(self) -> None:
        self.ok = self.missing = self.conflict = self.error = self.bytes = 0
        self.buckets = [0] * _SLOTS
        self.seconds = 0.0

    def take(self) -> OpTally | None:
        """The calls so far (None: none), this one emptied in place (the wrappers hold it)."""
        calls = sum(self.buckets)
        if not calls:
            return None
        taken = OpTally()
        taken.buckets = self.buckets[:]
        taken.missing, taken.conflict, taken.error = self.missing, self.conflict, self.error
        taken.ok = calls - self.missing - self.conflict - self.error
        taken.bytes, taken.seconds = self.bytes, self.seconds
        self.missing = self.conflict = self.error = self.bytes = 0
        self.buckets[:] = _EMPTY
        self.seconds = 0.0
        return taken


class StoreTally:
    """Storage operations of this process since the last flush, by operation."""

    __slots__ = ("ops",)

    def __init__(self) -> None:
        self.ops: dict[str, OpTally] = {}

    def slot(self, op: str) -> OpTally:
        found = self.ops.get(op)
        if found is None:
            found = self.ops[op] = OpTally()
        return found

    def take(self) -> dict[str, OpTally]:
        taken = {}
        for op, tally in self.ops.items():
            got = tally.take()
            if got is not None:
                taken[op] = got
        return taken


def _size(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, (bytes, bytearray, memoryview)):
        return len(value)
    if isinstance(value, int):
        return value
    if isinstance(value, list):
        return sum(_size(v) for v in value)
    data = getattr(value, "data", None)
    return len(data) if data is not None else 0


#: Store methods counted: the operation's name, and whether its bytes are read (from the
#: result) or written (from the ``data`` argument, the second).
_OPS = {
    "get": "read", "get_mapped": "read", "get_range": "read", "get_ranges": "read", "read_into": "read",
    "head": None, "delete": None, "copy": None,
    "put": "written", "put_hashed": "written",
}
#: Operations whose None answer means "no such object" (outcome ``missing``).
_FINDS = frozenset({"get", "get_mapped", "get_range", "get_ranges", "read_into", "head"})


def metered(store: Store) -> Store:
    """``store`` with each operation counted (by operation and outcome: ok, missing, conflict,
    error), timed and its bytes added up into `STORE`: an instance of `metered_class` of its
    class. A server makes its store one from the start (``open_store(settings, metered_class)``);
    another store is changed to that class here, which costs it Python's attribute caches (its
    attributes were laid out for its first class: a few thousand instructions a request). Its
    capabilities (``isinstance`` checks) are unchanged either way. A store whose class cannot
    change, or an operation the instance holds itself, is wrapped on the instance. Gets a store
    answers at once (`AnswersAtOnce.get_at_once`, called directly by walks over many objects)
    are not counted: the local store's ``get`` calls it too, through the same attribute."""
    if getattr(store, "_h5lake_metered", False):
        return store
    own = {name: m for name, m in getattr(store, "__dict__", {}).items() if name in _OPS}
    try:
        store.__class__ = metered_class(type(store))
    except TypeError:  # a class whose instances cannot change class: wrapped on the object
        own = {name: getattr(store, name) for name in _OPS if hasattr(store, name)}
        store._h5lake_metered = True  # type: ignore[attr-defined]
    for name, direction in _OPS.items():
        method = own.get(name)
        if method is not None:
            wrapped = _timed_get(name, direction, method, store) if name == "get" else _timed(name, direction, method)
            setattr(store, name, wrapped)
    return store


_METERED: dict[type, type] = {}


def metered_class(cls: type) -> type:
    """A subclass of the store class ``cls`` (of the same name) whose operations are counted
    into `STORE` (`_timed_method`): its methods wrap those of ``cls``. The wrappers are on the
    class, not on the instance, so Python's attribute caches keep working for the store."""
    found = _METERED.get(cls)
    if found is None:
        body: dict[str, Any] = {"__slots__": (), "_h5lake_metered": True, "__module__": cls.__module__}
        for name, direction in _OPS.items():
            function = getattr(cls, name, None)
            if function is not None:
                body[name] = _timed_method(name, direction, function, cls)
        found = _METERED[cls] = type(cls.__name__, (cls,), body)
        found.__qualname__ = cls.__qualname__
    return found


def _timed_method(
    op: str, direction: str | None, function: Callable[..., Awaitable[Any]], cls: type
) -> Callable[..., Awaitable[Any]]:
    """``function`` (a method of ``cls``) counted into `STORE`, as a method: `_timed_get` for
    ``get``, else `_timed` (whose ``args`` then start with the store)."""
    if op in _BY_KEY:
        return _timed_key(op, function)
    if op != "get":
        return _timed(op, direction, function, first=1)
    tally = STORE.slot(op)
    buckets, clock, bounds, first = tally.buckets, _clock, DURATION_BUCKETS, DURATION_BUCKETS[0]
    at_once = _class_answers_at_once(cls, function)

    @wraps(function)
    async def timed_get(self: Any, key: str) -> Any:
        if at_once:  # answered at once (no wait): counted in the first bucket, not timed
            try:
                blob = self.get_at_once(key)
            except BaseException as exc:
                _failed(tally, exc, 0.0)
                raise
            if not isinstance(blob, Later):
                buckets[0] += 1
                if blob is None:
                    tally.missing += 1
                else:
                    tally.bytes += len(blob.data)
                return blob
        start = clock()
        try:
            blob = await function(self, key)
        except BaseException as exc:
            _failed(tally, exc, clock() - start)
            raise
        seconds = clock() - start
        buckets[0 if seconds <= first else bisect_left(bounds, seconds)] += 1
        tally.seconds += seconds
        if blob is None:
            tally.missing += 1
        else:
            tally.bytes += len(blob.data)
        return blob

    return timed_get


#: Operations of the store's protocol called with a key, and written data second, as named
#: there: their wrappers take just that (no ``*args`` to pack, no size to work out by type).
_BY_KEY = frozenset({"head", "delete", "put", "put_hashed"})


def _timed_key(op: str, function: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """``function``, the class's ``head(key)``, ``delete(key)``, ``put(key, data, **options)``
    or ``put_hashed(key, data, md5)``, counted into `STORE` as `_timed` would."""
    tally = STORE.slot(op)
    buckets, clock, bounds, first = tally.buckets, _clock, DURATION_BUCKETS, DURATION_BUCKETS[0]

    if op in ("head", "delete"):
        finds = op == "head"

        @wraps(function)
        async def timed_key(self: Any, key: str) -> Any:
            start = clock()
            try:
                result = await function(self, key)
            except BaseException as exc:
                _failed(tally, exc, clock() - start)
                raise
            seconds = clock() - start
            buckets[0 if seconds <= first else bisect_left(bounds, seconds)] += 1
            tally.seconds += seconds
            if result is None and finds:
                tally.missing += 1
            return result

        return timed_key

    if op == "put_hashed":

        @wraps(function)
        async def timed_put_hashed(self: Any, key: str, data: Any, md5: str) -> Any:
            start = clock()
            try:
                etag = await function(self, key, data, md5)
            except BaseException as exc:
                _failed(tally, exc, clock() - start)
                raise
            seconds = clock() - start
            buckets[0 if seconds <= first else bisect_left(bounds, seconds)] += 1
            tally.seconds += seconds
            tally.bytes += len(data)
            return etag

        return timed_put_hashed

    @wraps(function)
    async def timed_put(self: Any, key: str, data: Any, **options: Any) -> Any:
        start = clock()
        try:
            etag = await function(self, key, data, **options)
        except BaseException as exc:
            _failed(tally, exc, clock() - start)
            raise
        seconds = clock() - start
        buckets[0 if seconds <= first else bisect_left(bounds, seconds)] += 1
        tally.seconds += seconds
        tally.bytes += len(data)
        return etag

    return timed_put


def _class_answers_at_once(cls: type, get: Any) -> bool:
    """Whether ``get`` is the ``get`` of the class of ``cls``'s that defines ``get_at_once``
    (which answers so whenever it can), not one a subclass put in its place."""
    if not issubclass(cls, AnswersAtOnce):
        return False
    owner = next((c for c in cls.__mro__ if "get_at_once" in vars(c)), None)
    return owner is not None and get is vars(owner).get("get")


def _failed(tally: OpTally, exc: BaseException, seconds: float) -> None:
    tally.buckets[bisect_left(DURATION_BUCKETS, seconds)] += 1
    tally.seconds += seconds
    if isinstance(exc, PreconditionFailed):
        tally.conflict += 1
    else:
        tally.error += 1


def _timed(
    op: str, direction: str | None, method: Callable[..., Awaitable[Any]], first: int = 0
) -> Callable[..., Awaitable[Any]]:
    """``method`` counted into `STORE`; ``first``: 1 when ``method`` is a class's function,
    called with the store first."""
    tally = STORE.slot(op)
    buckets, bounds, fast = tally.buckets, DURATION_BUCKETS, DURATION_BUCKETS[0]
    finds = op in _FINDS
    reads = direction == "read"
    writes = direction == "written"
    data_at = first + 1  # the written data's place in ``args``
    clock = _clock

    @wraps(method)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            result = await method(*args, **kwargs)
        except BaseException as exc:
            _failed(tally, exc, clock() - start)
            raise
        seconds = clock() - start
        buckets[0 if seconds <= fast else bisect_left(bounds, seconds)] += 1
        tally.seconds += seconds
        if result is None and finds:
            tally.missing += 1
            return result
        if reads:
            tally.bytes += _size(result)
        elif writes and len(args) > data_at:
            tally.bytes += _size(args[data_at])
        return result

    return timed


def _timed_get(
    op: str, direction: str | None, method: Callable[[str], Awaitable[Any]], store: Store
) -> Callable[[str], Awaitable[Any]]:
    """`_timed` for ``get(key)``, the most frequent operation, with its one argument. A store
    that tells some answers at once (`AnswersAtOnce`: the local store, for an object read lately)
    is asked that first, as its own ``get`` does, so such a get costs one coroutine, not two."""
    tally = STORE.slot(op)
    buckets, clock, bounds, first = tally.buckets, _clock, DURATION_BUCKETS, DURATION_BUCKETS[0]
    at_once = _answers_at_once(store, method)

    @wraps(method)
    async def timed_get(key: str) -> Any:
        if at_once is not None:  # answered at once (no wait): counted in the first bucket, not timed
            try:
                blob = at_once(key)
            except BaseException as exc:
                _failed(tally, exc, 0.0)
                raise
            if not isinstance(blob, Later):
                buckets[0] += 1
                if blob is None:
                    tally.missing += 1
                else:
                    tally.bytes += len(blob.data)
                return blob
        start = clock()
        try:
            blob = await method(key)
        except BaseException as exc:
            _failed(tally, exc, clock() - start)
            raise
        seconds = clock() - start
        buckets[0 if seconds <= first else bisect_left(bounds, seconds)] += 1
        tally.seconds += seconds
        if blob is None:
            tally.missing += 1
        else:
            tally.bytes += len(blob.data)
        return blob

    return timed_get


def _answers_at_once(store: Store, get: Callable[[str], Awaitable[Any]]) -> Callable[[str], Any] | None:
    """The store's ``get_at_once`` when ``get`` is the one of the class that defines it (which
    answers so whenever it can), not one a subclass or a wrapper put in its place."""
    if not isinstance(store, AnswersAtOnce):
        return None
    owner = next((c for c in type(store).__mro__ if "get_at_once" in vars(c)), None)
    if owner is None or getattr(get, "__func__", None) is not vars(owner).get("get"):
        return None
    return store.get_at_once


STORE = StoreTally()
