"""JSON documents in the store, updated only by conditional writes.

Every metadata change is read, mutate, write-if-unchanged; a lost race re-reads and re-applies
the mutation, so concurrent writers in any number of processes never lose each other's changes.

Updates that opt in (``reuse=True``: attributes and links, whose documents grow with them)
skip the read and the parse when this process wrote the document last: the written document
is kept (``DocumentMemo``) with the ETag the store gave it, and the next update applies its
mutation to a copy of it and writes with ``If-Match`` on that ETag. The store's compare is
the check: if anything else changed the object since (another process, another writer here),
the put fails and the update starts over from a fresh read, as after any lost race. A mutation
that decides nothing needs writing, or raises, is re-run on a fresh read too, so no answer
comes from a remembered document alone. Two guarantees make a remembered document the same
as the one a read would give: it holds JSON's own types only (exact ``dict`` with ``str``
keys, ``list``, ``str``, ``int``, ``bool``, finite ``float``, ``None``; a tuple, an enum, a
NaN would come back from the store as something else), checked on every part a mutation
added; and nothing changes it after it is remembered: a mutation works on a copy of the top
level and of each dictionary in it, and a ``reuse`` mutation may only set or delete entries at
those two levels (``doc[k] = v``, ``doc["attributes"][name] = attr``), never change a value
deeper in place; callers do not change the document an update returns.

What a mutation added is known without comparing the documents: the copies of the
second-level dictionaries it is handed record the keys set in them (`_Tracked`), and the top
level (a few keys) is compared by identity. Comparing every entry of a 250-attribute document
by identity cost more than serializing it (~40 us of the ~70 a PUT spent on the document).

The same knowledge serializes the document: a remembered document keeps, for each of its
second-level dictionaries, the serialization of each entry (an ``orjson.Fragment``), and the
next update serializes only the entries its mutation set; the document is written as
``orjson.dumps`` of its top level with each second-level dictionary replaced by the
dictionary of those pieces, in the same order: the same bytes as serializing it whole, for a
tenth of the cost at 250 attributes (docs/performance.md, "Attribute PUT"). This relies on the
rule above: an entry a mutation did not set is the very value serialized before, unchanged.
"""

from __future__ import annotations

import asyncio
import enum
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self, TypeVar, cast

import orjson

from h5lake.catalog import metatoken
from h5lake.chunks.capability import capable
from h5lake.errors import AlreadyExists, Conflict, DataCorruption, NotFound
from h5lake.model.ids import meta_token_key, object_id_of_key, object_key
from h5lake.model.slicedjson import NotSliceable, parse_in_slices
from h5lake.model.stored import Doc
from h5lake.storage import PreconditionFailed, Store
from h5lake.storage.base import CreateMany, ObjectInfo

#: serialized entries of a document's second-level dictionaries: by top-level key, the
#: dictionary serialized and its entries' serializations, in its order
Pieces = dict[str, tuple[Doc, dict[Any, orjson.Fragment]]]
_MAX_ATTEMPTS = 50
MEMO_DOCS = 256  # documents remembered by an update (DocumentMemo)
MEMO_BYTES = 2 * 1024 * 1024  # their serialized size together (parsed: ~7x that, and their pieces ~1x: ~16 MiB at most)
MEMO_DOC_BYTES = 256 * 1024  # a larger document is not remembered
ENTRY_BYTES = 64
"""About what one link or attribute costs to select and show, as bytes of work for
`Workers.cpu`: a listing or description of more than ~1,000 of them is made on a pool thread
(docs/security.md, "Wide objects")."""
SLICED_ABOVE = 1024 * 1024
"""A stored document larger than this is parsed a slice at a time, others running in between
(`parse`): orjson takes ~15 ms per MB in one call that holds the interpreter."""
PARSED_AT_ONCE = 2
"""Large documents one process parses at once; more wait their turn (`parse`)."""
_MISSING = object()
D = TypeVar("D", bound=Mapping[str, Any])  # the kind of document an update changes (`Doc`, `model.stored.DatasetDoc`, ...)


@dataclass(frozen=True, slots=True)
class Versioned:
    doc: Doc
    etag: str


def dumps(doc: Any) -> bytes:
    return orjson.dumps(doc)


def loads(data: bytes, key: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DataCorruption(f"stored object {key!r} is not valid JSON") from exc


async def parse(data: bytes, key: str, gate: asyncio.Semaphore) -> Any:
    """`loads`, in slices with other tasks running between them for a large document (a group
    of many links: docs/security.md, "Wide objects"); the same value either way. At most
    large documents are parsed at once (``gate``): the event loop runs each ready task in turn,
    so a request waits a slice of every parse in progress at each of its steps."""
    if len(data) <= SLICED_ABOVE:
        return loads(data, key)
    async with gate:
        steps = parse_in_slices(data)
        try:
            while True:
                next(steps)
                await asyncio.sleep(0)
        except StopIteration as done:
            return done.value
        except NotSliceable:
            return loads(data, key)


class Documents:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.memo = DocumentMemo()
        self.parsing = asyncio.Semaphore(PARSED_AT_ONCE)  # large documents parsed at once (`parse`)
        # told of each document this process stores (its new ETag) or deletes (None): the watch
        # (service.datasets.watch) wakes the waiters on it at once
        self.written: Callable[[str, str | None], None] = _nobody
        # told of each object (group, dataset, datatype, map) of a domain changed through the
        # ``*_object`` methods below, after its document is written, whether or not the update
        # changed it: the catalog (`ChunkCatalog.note_object`, wired by `context.Service`)
        self.object_changed: Callable[[str, str], None] = _nobody
        # told instead of ``object_changed`` of each object `create_objects` made: what the store
        # answered for it (a catalog line without a HEAD: `ChunkCatalog.note_made`)
        self.object_made: Callable[[str, str, ObjectInfo], None] = _nobody

    async def get(self, key: str) -> Versioned | None:
        blob = await self.store.get(key)
        if blob is None:
            return None
        return Versioned(await parse(blob.data, key, self.parsing), blob.etag)

    async def parsed(self, data: bytes, key: str) -> Any:
        """The document stored at ``key`` as ``data`` (read by the caller), parsed as `get` does."""
        return await parse(data, key, self.parsing)

    async def require(self, key: str, what: str) -> Versioned:
        found = await self.get(key)
        if found is None:
            raise NotFound(f"{what} not found")
        return found

    async def create(self, key: str, doc: Mapping[str, Any], what: str) -> str:
        try:
            etag = await self.store.put(key, dumps(doc), if_none_match=True)
        except PreconditionFailed:
            raise AlreadyExists(f"{what} already exists") from None
        await self.changed(key)
        self.written(key, etag)
        return etag

    async def put(self, key: str, doc: Mapping[str, Any]) -> str:
        etag = await self.store.put(key, dumps(doc))
        await self.changed(key)
        self.written(key, etag)
        return etag

    async def changed(self, key: str) -> None:
        """The document at ``key`` was stored or deleted (by this class or by a caller writing
        it directly): an object document's domain gets a new metadata change token
        (`h5lake.catalog.metatoken`) before the change is acknowledged."""
        obj_id = object_id_of_key(key)
        if obj_id is not None:
            await metatoken.changed(self.store, obj_id)

    async def update(
        self,
        key: str,
        mutate: Callable[[D], Any],
        what: str,
        *,
        reuse: bool = False,
        check: Callable[[D, int], None] | None = None,
    ) -> tuple[D, Any]:
        """Apply ``mutate(doc)`` (which changes ``doc`` in place and returns a result) atomically.

        ``mutate`` may raise to abort; it may return the sentinel ``UNCHANGED`` as the first
        element of a tuple result to skip the write. Returns (new doc, mutate's result).
        ``reuse``: start from the document this process wrote last, if any (module docstring:
        ``mutate`` then changes only the top two levels of the document, and the caller does not
        change the document returned).
        ``check(doc, size)``: called with the changed document and the length of its serialization
        before it is written; it may raise to abort, as ``mutate`` may (a bound on what the
        document holds, checked without serializing it a second time).
        """
        attempt = 0
        while attempt < _MAX_ATTEMPTS:
            taken = self.memo.take_pieces(key) if reuse else None
            remembered, pieces = taken if taken is not None else (None, None)
            if remembered is not None:
                base, etag = remembered.doc, remembered.etag
            else:
                current = await self.require(key, what)
                base, etag = current.doc, current.etag
            doc = _copy_two_levels(base) if reuse else base
            try:
                result = mutate(cast(D, doc))
            except Exception:
                if remembered is not None:
                    continue  # decided on a remembered document: decide again on a fresh read
                raise
            native, touched = True, None
            if reuse:
                doc, native, touched = _settle(base, doc)
            if isinstance(result, Unchanged):
                if remembered is not None:
                    continue
                return cast(D, doc), result.value
            if pieces is not None and touched is not None:  # remembered: serialize what the mutation set
                data, pieces = _serialized(doc, pieces, touched)
            else:
                data = dumps(doc)
            if check is not None:
                try:
                    check(cast(D, doc), len(data))
                except Exception:
                    if remembered is not None:
                        continue  # as for mutate: decide again on a fresh read
                    raise
            try:
                new_etag = await self.store.put(key, data, if_match=etag)
            except PreconditionFailed:
                if remembered is None:
                    attempt += 1
                    await asyncio.sleep(random.uniform(0, 0.002 * attempt))
                continue  # a remembered document that was not the stored one: read it now
            if reuse and native:
                self.memo.keep(key, Versioned(doc, new_etag), len(data), pieces)
            await self.changed(key)
            self.written(key, new_etag)
            return cast(D, doc), result
        raise Conflict(f"{what} is changing too fast; try again")

    async def delete(self, key: str) -> None:
        await self.store.delete(key)
        await self.changed(key)
        self.written(key, None)

    # -- an object of a domain: its document, and the domain told it changed (`object_changed`)

    async def create_object(self, domain: str, doc: Mapping[str, Any], same: Callable[[Doc], bool] | None = None) -> None:
        """Store the new object ``doc`` of ``domain``; when one with its id exists already it is
        taken as made when ``same(existing)`` (a request sent again), else `AlreadyExists`."""
        key = object_key(doc["id"])
        try:
            await self.create(key, doc, f"object {doc['id']}")
        except AlreadyExists:
            existing = await self.get(key) if same is not None else None
            if existing is None or same is None or not same(existing.doc):
                raise
        self.object_changed(domain, doc["id"])

    async def create_objects(
        self, domain: str, docs: Sequence[Mapping[str, Any]], same: Callable[[Doc, Mapping[str, Any]], bool],
        each: Callable[[list[int], Callable[[int], Awaitable[None]]], Awaitable[None]],
    ) -> None:
        """`create_object` of many (a batch request's objects). A store that can (``CreateMany``,
        the local directory) makes them durable together; else they are single create-only puts
        run through ``each`` (a bounded fan-out). Each is whole or absent after a crash; one
        already there is taken as made when ``same(existing, new)``, else `AlreadyExists`."""
        data = [(object_key(doc["id"]), dumps(doc)) for doc in docs]
        made: list[str | None]
        if capable(self.store, CreateMany):
            made = await self.store.create_many(data)  # type: ignore[attr-defined]
        else:
            made = [None] * len(data)

            async def one(i: int) -> None:
                try:
                    made[i] = await self.store.put(data[i][0], data[i][1], if_none_match=True)
                except PreconditionFailed:
                    pass

            await each(list(range(len(data))), one)
        tokens: dict[str, str] = {}  # one metadata token a domain, dropped once for the batch
        for (key, _), etag in zip(data, made, strict=True):
            if etag is not None:
                tokens.setdefault(meta_token_key(object_id_of_key(key) or ""), key)
        for key in tokens.values():
            await self.changed(key)

        async def check(i: int) -> None:
            existing = await self.get(data[i][0])
            if existing is None or not same(existing.doc, docs[i]):
                raise AlreadyExists(f"object {docs[i]['id']} already exists")

        await each([i for i, etag in enumerate(made) if etag is None], check)
        at = time.time()
        for (key, body), etag, doc in zip(data, made, docs, strict=True):
            if etag is not None:
                self.written(key, etag)
            if etag:  # made by this request, as the store answered
                self.object_made(domain, doc["id"], ObjectInfo(key, len(body), etag, at))
            else:
                self.object_changed(domain, doc["id"])

    async def put_object(self, domain: str, obj_id: str, doc: Mapping[str, Any], if_match: str | None = None) -> str:
        """Store ``doc`` as object ``obj_id`` of ``domain`` (``if_match``: only over that ETag,
        else `PreconditionFailed`); its new ETag."""
        key = object_key(obj_id)
        etag = await self.store.put(key, dumps(doc), if_match=if_match)
        await self.changed(key)
        self.written(key, etag)
        self.object_changed(domain, obj_id)
        return etag

    async def update_object(
        self,
        domain: str,
        obj_id: str,
        mutate: Callable[[D], Any],
        what: str,
        *,
        reuse: bool = False,
        check: Callable[[D, int], None] | None = None,
    ) -> tuple[D, Any]:
        """`update` of object ``obj_id`` of ``domain``, then the domain told (also when
        ``mutate`` left it unchanged; not when it raised)."""
        result = await self.update(object_key(obj_id), mutate, what, reuse=reuse, check=check)
        self.object_changed(domain, obj_id)
        return result

    async def delete_object(self, domain: str, obj_id: str) -> None:
        await self.delete(object_key(obj_id))
        self.object_changed(domain, obj_id)


def _nobody(*told: object) -> None:
    """`Documents.written` and `object_changed` when nothing listens."""


class PutOutcome(enum.Enum):
    """What a PUT of links or attributes did: something was added or replaced, or all was there."""

    CREATED = enum.auto()
    UNCHANGED = enum.auto()


@dataclass(frozen=True, slots=True)
class Unchanged:
    """Returned by a mutation that decided nothing needs writing."""

    value: Any = None


class DocumentMemo:
    """Documents this process wrote last, by key, each with the ETag the store gave it."""

    def __init__(self) -> None:
        self._docs: dict[str, tuple[Versioned, int, Pieces]] = {}
        self._bytes = 0

    def take(self, key: str) -> Versioned | None:
        """The document remembered for ``key``, now no longer remembered: its taker owns it
        (two updates of one key at once never share one)."""
        found = self.take_pieces(key)
        return None if found is None else found[0]

    def take_pieces(self, key: str) -> tuple[Versioned, Pieces] | None:
        """`take`, with the serialized entries of the document's second-level dictionaries."""
        found = self._docs.pop(key, None)
        if found is None:
            return None
        self._bytes -= found[1]
        return found[0], found[2]

    def keep(self, key: str, doc: Versioned, size: int, pieces: Pieces | None = None) -> None:
        """Remember ``doc``, whose serialization takes ``size`` bytes; ``pieces``: the
        serialized entries of (some of) its second-level dictionaries, by top-level key, each
        with the very dictionary it serializes (`_serialized`)."""
        self.take(key)
        if size > MEMO_DOC_BYTES:
            return
        if len(self._docs) >= MEMO_DOCS or self._bytes + size > MEMO_BYTES:
            self._docs.clear()  # simpler than an LRU; the next update of each reads again
            self._bytes = 0
        self._docs[key] = (doc, size, {} if pieces is None else pieces)
        self._bytes += size

    def __len__(self) -> int:
        return len(self._docs)


class ByEtag:
    """Values derived from documents, each by the document's key and the ETag it was read with.

    The ETag names the stored bytes (their MD5 here), so a value derived from a document read
    with it is the value derived from any later read that gives the same ETag: a caller that
    reads the document again (the store's own freshness check) and finds the ETag unchanged
    reuses the value instead of deriving it again. Nothing is trusted without that read.
    Values are shared between requests: they must not be changed after they are kept. At most
    ``most`` values and ``most_bytes`` of them together, by the size the caller gives (their
    JSON's; parsed they take ~7x that: ~30 MiB at most), none above ``most_one``; cleared when
    full."""

    def __init__(self, most: int = 8192, most_bytes: int = 4 * 1024 * 1024, most_one: int = 64 * 1024) -> None:
        self._values: dict[tuple[str, str], Any] = {}
        self._most = most
        self._most_bytes = most_bytes
        self._most_one = most_one
        self._bytes = 0

    def get(self, key: str, etag: str) -> Any:
        return self._values.get((key, etag))

    def keep(self, key: str, etag: str, value: Any, size: int) -> None:
        if size > self._most_one:
            return
        if len(self._values) >= self._most or self._bytes + size > self._most_bytes:
            self._values.clear()  # simpler than an LRU; each is derived again at its next use
            self._bytes = 0
        self._values[(key, etag)] = value
        self._bytes += size


class _Tracked(dict):
    """A copy of a second-level dictionary of a document being mutated, recording the keys a
    mutation sets in it (``added``, in the order first set: the order new keys take in the
    dictionary) and whether it deleted any (``dropped``); ``source`` is
    the dictionary it copies. Reads are the dictionary's own; every method that adds or
    replaces an entry is overridden here. No ``__init__``: the dictionary's own copies the
    entries in C, and ``added`` and ``dropped`` exist once set (`_touched`)."""

    __slots__ = ("added", "dropped", "source")
    added: dict[Any, None]
    dropped: bool
    source: Doc

    def __setitem__(self, key: Any, value: Any) -> None:
        try:
            self.added[key] = None
        except AttributeError:
            self.added = {key: None}
        super().__setitem__(key, value)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return super().__getitem__(key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other: Any) -> Self:  # type: ignore[misc]
        self.update(other)
        return self

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self.dropped = True

    def pop(self, key: Any, *default: Any) -> Any:
        self.dropped = True
        return super().pop(key, *default)

    def popitem(self) -> tuple[Any, Any]:
        self.dropped = True
        return super().popitem()

    def clear(self) -> None:
        self.dropped = True
        super().clear()


def _copy_two_levels(doc: Doc) -> Doc:
    """``doc`` with its top level and each dictionary in it copied (values below shared), the
    latter as `_Tracked` copies."""
    return {k: _tracked(v) if type(v) is dict else v for k, v in doc.items()}


def _tracked(source: Doc) -> _Tracked:
    copy = _Tracked(source)
    copy.source = source
    return copy


def _touched(copy: _Tracked) -> tuple[dict[Any, None], bool]:
    """The keys set in ``copy`` (in the order first set) and whether any was deleted."""
    return getattr(copy, "added", {}), getattr(copy, "dropped", False)


#: second-level dictionaries a mutation touched, by top-level key: the dictionary copied, the
#: keys set in the copy (in the order first set), whether any was deleted
_Touched = dict[str, tuple[Doc, dict[Any, None], bool]]


def _settle(before: Doc, after: Doc) -> tuple[Doc, bool, _Touched]:
    """``after`` (``before`` copied by `_copy_two_levels`, then mutated) made of plain
    dictionaries again, and whether everything it holds that ``before`` did not is made of
    JSON's own types (``json_native``; what both share was read from the store or checked when
    it was added). A second-level copy the mutation did not change is replaced by the
    dictionary it was copied from (wherever the mutation put it); the others are listed with
    what was set in them (for `_serialized`)."""
    out: Doc = {}
    native = True
    touched: _Touched = {}
    for k, v in after.items():
        if type(v) is _Tracked:
            added, dropped = _touched(v)
            if not added and not dropped:
                v = v.source  # unchanged: the very dictionary it was copied from
            else:
                for k2 in added:
                    if k2 in v and native and not (type(k2) is str and json_native(v[k2])):
                        native = False
                touched[k] = (v.source, added, dropped)
                v = dict(v)
        elif native and v is not before.get(k, _MISSING) and not (type(k) is str and json_native(v)):
            native = False
        out[k] = v
    return out, native, touched


def _serialized(doc: Doc, before: Pieces, touched: _Touched) -> tuple[bytes, Pieces]:
    """``dumps(doc)``, made from the serialized entries of the second-level dictionaries of
    the document ``doc`` was copied from (``before``) and those the mutation set (``touched``,
    from `_settle`), and the pieces of ``doc`` for the next update."""
    pieces: Pieces = {}
    top: Doc = {}
    for k, v in doc.items():
        if type(v) is dict:
            entries = _entries(v, before, touched.get(k))
            pieces[k] = (v, entries)
            top[k] = entries
        else:
            top[k] = v
    return dumps(top), pieces


def _entries(d: Doc, before: Pieces, touched: tuple[Doc, dict[Any, None], bool] | None) -> dict[Any, orjson.Fragment]:
    """The serialized entries of the second-level dictionary ``d``: those of the dictionary it
    is (untouched: `_settle` put the very dictionary back) or was copied from, with the entries
    the mutation set serialized anew; all of them anew for a dictionary of unknown origin."""
    source, added, dropped = touched if touched is not None else (d, None, False)
    for old, entries in before.values():
        if old is source:
            if added is None:
                return entries
            if not dropped:  # a set entry keeps its place, new ones come last in the order set: as in ``d``
                out = entries.copy()
                for key in added:
                    out[key] = orjson.Fragment(dumps(d[key]))
                return out
            return {
                key: entries[key] if key in entries and key not in added else orjson.Fragment(dumps(value))
                for key, value in d.items()
            }
    return {key: orjson.Fragment(dumps(value)) for key, value in d.items()}


def json_native(value: Any) -> bool:
    """Whether ``value`` is made only of the types ``orjson.loads`` gives back, so that
    serializing and parsing it again gives an equal value of the same types."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return True
    if t is float:
        return math.isfinite(value)
    if t is dict:  # loops, not all(<generator>): this runs for every attribute written
        for k, v in value.items():
            if type(k) is not str or not json_native(v):
                return False
        return True
    if t is list:
        for v in value:
            if not json_native(v):
                return False
        return True
    return False
