"""Catalogs of a domain's objects and of each dataset's chunks (seed 001, "Domain catalog" and
"Dataset catalog"); what they add up to is `h5lake.catalog.totals`. One line per entry:

* ``<domain>/.groups.txt``, ``.datatypes.txt``: ``id etag lastmodified size`` (no root group);
* ``<domain>/.datasets.txt``: ``id etag lastmodified size allocated_chunks allocated_bytes``;
* ``<domain>/.<dataset-id>.chunks.txt``: ``i_j etag lastmodified size``, sorted by index.

Contract: catalogs lag writes by about ``delay`` seconds, converge, survive restarts and never
block a write. Chunk keys cannot be listed per dataset, so catalogs follow write events:
`ChunkCatalog.note` (synchronous, in memory) after each write, merged by a background flusher.

Several processes may share a store. A catalog change reads the catalog, *then* HEADs the objects
concerned, then writes if unchanged since the read (if-match / create-only), else retries from
the read. So a line always reflects a HEAD made after the last flushed write of its object: no
process loses another's lines or puts back an older one. An object this process created and
has not changed since takes its line from the create's answer (ETag, size) instead of a HEAD
(`ChunkCatalog.note_made`), when the catalog read has no line for it: a change made by another
process since is either flushed already (its line is there, so it is HEADed) or flushed later
(that process HEADs after reading this line). Left open: another process deleting the object
within the flush delay of its creation, and flushing first, leaves its line behind.

Crash convergence: a process may die after acknowledging a write but before flushing its note,
so the write path awaits `ChunkCatalog.begin` before writing chunks: a create-only intent
``.h5lake/pending/<uuid>.json`` naming the dataset and the chunks the write may touch (a box, or
a list for scattered points), deleted once the note is merged. `ChunkCatalog.recover` (run by
`start` every ``recover_every`` s in every process) merges intents older than ``stale_after``,
left by dead processes or `abort`, by HEADing their chunks. Probing chunk grids instead was
rejected: after a crash nothing says which datasets were written, and probing all is unbounded.
Price: one create-only put per write request (~1 ms on a local disk, like a small chunk put),
and one delete after the flush, off the request path.

An intent names its process (``owner``) and how often that process says it is alive
(``renew``: a quarter of its ``stale_after``): while it holds intents, a process puts its
heartbeat ``.h5lake/alive/<owner>.json`` that often (and before an intent, when the last one
is older than that; `h5lake.catalog.liveness`). Another process recovers an intent older than
its ``stale_after`` only when the owner's heartbeat is absent or older than
``max(stale_after, 3 * renew)``:
a write that runs longer than that (a slow client streaming a large body) keeps its intent, so
the chunks it stores after a recovery would have merged and deleted the intent are not left
out of both the catalog and the intents (docs/storage.md, "Crashes and races"; reads of many
chunks, shrinks and commits would miss them for good had the writer died before its flush).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, cast

import orjson

from h5lake.catalog.changed import advance
from h5lake.catalog.intents import Intent, Recording, region_indexes, region_json
from h5lake.catalog.liveness import Liveness
from h5lake.chunks.fanout import bounded
from h5lake.errors import Conflict, InvalidInput, NotFound
from h5lake.model import ids
from h5lake.model.layout import chunk_span, is_linked, span_count
from h5lake.model.ordering import sorted_in_runs
from h5lake.model.shapes import SpaceClass, space_from_json
from h5lake.model.stored import DatasetDoc, IntentRecord, as_dataset
from h5lake.storage.base import ObjectInfo, PreconditionFailed, Store

log = logging.getLogger(__name__)

PENDING_PREFIX = ids.PENDING_PREFIX
_CATALOGS = {c.value: name for c, name in ids.CATALOG_FILES.items()}
DATASETS_CATALOG = _CATALOGS["d"]  # .datasets.txt
_MAX_ATTEMPTS = 50
HEAD_CONCURRENCY = 32
GRID_PROBE_LIMIT = 100_000  # delete_dataset_chunks deletes whole grids up to this many chunks
OFF_LOOP_LINES = 1024
"""A catalog of more lines (or an intent of more chunks) is parsed, rendered and summed on a
thread: a dataset of 100,000 chunks made every merge of its catalog cost ~0.6 s of the event
loop (docs/security.md, "Wide objects")."""

Index = tuple[int, ...]
Lines = dict[str, str]  # first field -> whole line
Known = dict[str, tuple[str | None, int, int]]  # dataset id -> (chunk catalog etag, count, bytes)
Made = dict[str, ObjectInfo]  # id -> what the store answered for its create (`ChunkCatalog.note_made`)


# --- catalog text ---------------------------------------------------------------------------------


index_name = ids.index_name
_index_of = ids.parse_index_name


def _line(name: str, info: ObjectInfo, *extra: int) -> str:
    etag = info.etag.strip('"').replace(" ", "") or "-"
    return " ".join([name, etag, str(int(info.last_modified)), str(info.size), *map(str, extra)])


def parse_lines(data: bytes, *, chunks: bool = False) -> Lines:
    """Parse a catalog, dropping malformed lines (logged)."""
    out: Lines = {}
    for fields in (raw.split() for raw in data.decode("utf-8", "replace").splitlines()):
        try:
            if len(fields) < 4 or float(fields[2]) < 0 or any(int(f) < 0 for f in fields[3:]):
                raise ValueError
            if chunks:
                _index_of(fields[0])  # a ValueError unless it is ``i_j...``
        except ValueError:
            if fields:
                log.warning("dropping malformed catalog line %r", " ".join(fields))
            continue
        out[fields[0]] = " ".join(fields)
    return out


def _render(lines: Lines, chunks: bool) -> bytes:
    names = sorted_in_runs(lines, key=_index_of if chunks else None)
    return "".join(lines[n] + "\n" for n in names).encode()


async def _off_loop(count: int, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, on a thread when it works through more than `OFF_LOOP_LINES` lines."""
    if count <= OFF_LOOP_LINES:
        return fn(*args)
    return await asyncio.to_thread(fn, *args)


async def _parsed(data: bytes, chunks: bool) -> Lines:
    return await _off_loop(len(data) // 32, lambda: parse_lines(data, chunks=chunks))


def _totals(lines: Lines) -> tuple[int, int, float]:
    """(chunk count, bytes, newest lastmodified) of a chunk catalog."""
    fields = [line.split() for line in lines.values()]
    newest = max((float(f[2]) for f in fields), default=0.0)
    return len(fields), sum(int(f[3]) for f in fields), newest


async def _edit(store: Store, key: str, edit: Callable[[Lines], Awaitable[None]], *,
                chunks: bool = False) -> tuple[Lines, str | None]:
    """Read ``key``, let ``edit`` change its lines (HEADing what it needs *after* the read) and
    write it back if unchanged since the read; retry on a lost race. Returns (lines, etag)."""
    for attempt in range(_MAX_ATTEMPTS):
        blob = await store.get(key)
        lines = await _parsed(blob.data, chunks) if blob is not None else {}
        await edit(lines)
        after = await _off_loop(len(lines), _render, lines, chunks)
        if blob is None and not lines or blob is not None and after == blob.data:
            return lines, blob.etag if blob else None
        try:
            etag = blob.etag if blob else None
            return lines, await store.put(key, after, if_match=etag, if_none_match=blob is None)
        except PreconditionFailed:
            await asyncio.sleep(random.uniform(0, 0.005 * (attempt + 1)))
    raise Conflict(f"catalog {key!r} is being updated too often")


async def _head_all(store: Store, keys: Iterable[str]) -> dict[str, ObjectInfo | None]:
    found: dict[str, ObjectInfo | None] = {}

    async def one(key: str) -> None:
        found[key] = await store.head(key)

    await bounded(keys, one, HEAD_CONCURRENCY)
    return found


# --- merging what changed -----------------------------------------------------------------------


async def _merge_chunks(store: Store, domain: str, dataset_id: str,
                        indexes: Iterable[Index]) -> tuple[str | None, int, int]:
    """Bring the lines of ``indexes`` in the dataset's chunk catalog up to date with storage (a
    missing chunk loses its line); returns (catalog etag, chunk count, bytes)."""
    indexes = list(indexes)
    wanted: dict[str, str] = await _off_loop(
        len(indexes), lambda: {index_name(i): ids.chunk_key(dataset_id, i) for i in indexes})

    async def edit(lines: Lines) -> None:
        infos = await _head_all(store, wanted.values())

        def apply() -> None:
            for name, key in wanted.items():
                if (info := infos[key]) is None:
                    lines.pop(name, None)
                else:
                    lines[name] = _line(name, info)

        await _off_loop(len(wanted), apply)

    lines, etag = await _edit(store, ids.chunk_catalog_key(domain, dataset_id), edit, chunks=True)
    count, size, _ = await _off_loop(len(lines), _totals, lines)
    return etag, count, size


async def _read_chunk_lines(store: Store, domain: str, dataset_id: str) -> Lines:
    blob = await store.get(ids.chunk_catalog_key(domain, dataset_id))
    return {} if blob is None else await _parsed(blob.data, True)


async def listed_totals(store: Store, domain: str, dataset_id: str) -> tuple[int, int, float]:
    """`_totals` of the dataset's chunk catalog."""
    lines = await _read_chunk_lines(store, domain, dataset_id)
    return await _off_loop(len(lines), _totals, lines)


async def listed_chunk_indexes(store: Store, domain: str, dataset_id: str) -> list[Index]:
    """The chunk indexes the dataset's chunk catalog lists (it lags writes by about its delay)."""
    names = list(await _read_chunk_lines(store, domain, dataset_id))
    return await _off_loop(len(names), lambda: [_index_of(name) for name in names])


async def _chunk_totals(store: Store, domain: str, dataset_id: str,
                        known: Known) -> tuple[int, int]:
    """Chunk count and bytes of the chunk catalog as it is now (``known`` may save the read)."""
    if dataset_id in known:
        info = await store.head(ids.chunk_catalog_key(domain, dataset_id))
        etag, count, size = known[dataset_id]
        if (info.etag if info else None) == etag:
            return count, size
    count, size, _ = await listed_totals(store, domain, dataset_id)
    return count, size


_ROOT_SHIFT = str.maketrans("0123456789abcdefABCDEF", "89abcdef01234567234567")  # each hex digit plus 8, mod 16


def _is_root(obj_id: str) -> bool:
    digits = ids.hex_digits(obj_id)
    return digits[16:] == digits[:16].translate(_ROOT_SHIFT)


async def record_objects(store: Store, domain: str, obj_ids: Iterable[str],
                         known: Known | None = None, made: Made | None = None) -> None:
    """Bring the domain catalog lines of ``obj_ids`` up to date: a missing object loses its line,
    the root group has none, a dataset's line carries its chunk totals. ``made``: objects this
    process created and has not changed since, with what the store answered for the create;
    one the catalog has no line for takes its line from that, without a HEAD (and, with no
    chunk write noted, without reading a chunk catalog: none is listed). One it has a line for
    was recorded by another process since (a change made there): it is HEADed."""
    by_kind: dict[str, set[str]] = {}
    for obj_id in obj_ids:
        if ids.is_valid_id(obj_id) and not (ids.Collection.of(obj_id) is ids.Collection.GROUPS and _is_root(obj_id)):
            by_kind.setdefault(obj_id[0], set()).add(obj_id)
    made, known = made or {}, known or {}
    for kind, group in sorted(by_kind.items()):

        async def edit(lines: Lines, group: set[str] = group) -> None:
            fresh = {o: made[o] for o in group if o in made and o not in lines}
            infos = await _head_all(store, (ids.object_key(o) for o in group if o not in fresh))
            for obj_id in group:
                if (info := fresh.get(obj_id) or infos[ids.object_key(obj_id)]) is None:
                    lines.pop(obj_id, None)
                    continue
                totals: tuple[int, ...] = ()
                if obj_id in fresh and obj_id not in known:
                    totals = (0, 0) if obj_id[0] in "dm" else ()
                elif obj_id[0] in "dm":  # datasets and maps: their chunks (a map's pair buckets)
                    totals = await _chunk_totals(store, domain, obj_id, known)
                lines[obj_id] = _line(obj_id, info, *totals)

        await _edit(store, ids.catalog_key(domain, _CATALOGS[kind]), edit)


# --- the write-event catalog ----------------------------------------------------------------------


class ChunkCatalog:
    """Buffers write events and merges them into the catalogs in the background."""

    def __init__(self, store: Store, *, delay: float = 0.5, stale_after: float = 30.0,
                 recover_every: float = 30.0, autostart: bool = True) -> None:
        self.store, self.delay, self.autostart = store, delay, autostart
        self.stale_after, self.recover_every = stale_after, recover_every
        self._chunks: dict[tuple[str, str], set[Index]] = {}
        self._objects: dict[str, set[str]] = {}
        self._made: dict[tuple[str, str], ObjectInfo] = {}  # (domain, id) -> its create's answer
        self._done: set[str] = set()  # intents to delete after the next flush
        self._changed: dict[str, float] = {}  # domain -> time of its newest write noted
        self._mine: set[str] = set()  # intents this process has begun and not yet deleted
        self._wake, self._stop = asyncio.Event(), asyncio.Event()  # stop: cut pauses short
        self._lock = asyncio.Lock()
        self._flusher: asyncio.Task[None] | None = None
        self._recovery: asyncio.Task[None] | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._closing = False
        self.alive = Liveness(store, stale_after)  # this process's heartbeat, other processes' checked

    # -- the write path
    @contextlib.asynccontextmanager
    async def recording(self, domain: str, dataset_id: str, indexes: Iterable[Index], *,
                        early: bool = False) -> AsyncIterator[Recording]:
        """The write protocol, in one place: ``async with catalog.recording(...) as rec:`` begins
        the intent naming chunks ``indexes`` (durable before the body runs), and on leaving notes
        ``rec.written`` with it, or aborts it when the body raised (the intent is then left to
        recovery, which probes its chunks: a cancelled put may still land). With ``early`` the
        body runs while the intent is written and awaits ``rec.ready()`` before it places
        anything in the store (its chunks' bytes are written and fsync'ed meanwhile)."""
        indexes = indexes if isinstance(indexes, (list, set, tuple)) else list(indexes)
        begun = self.begin(domain, dataset_id, indexes)
        rec = Recording(asyncio.ensure_future(begun) if early else await begun, indexes)
        try:
            yield rec
            intent = await rec.ready()
        except BaseException:
            if (failed := rec.failed()) is not None:
                self.abort(failed)
            raise
        if rec.written is not None:
            self.note(domain, dataset_id, rec.written, intent)

    async def begin(self, domain: str, dataset_id: str, indexes: Iterable[Index]) -> Intent:
        """Durably record that chunks ``indexes`` are about to be written. Await it before the
        chunk writes; then ``note(..., intent)`` on success or ``abort(intent)`` on failure
        (`recording` does the three)."""
        indexes = indexes if isinstance(indexes, (list, set, tuple)) else list(indexes)
        region = await _off_loop(len(indexes), region_json, indexes)
        if region == {"chunks": []}:
            return Intent(None)
        if self._heartbeat is not None and self.alive.due():
            await self.alive.beat()  # other processes see this one alive before they see the intent
        key = ids.intent_key(uuid.uuid4().hex)
        body = orjson.dumps({"domain": domain, "dataset": dataset_id, **region, **self.alive.stamp()})
        await self.store.put(key, body, if_none_match=True)
        self._mine.add(key)
        return Intent(key)

    def note(self, domain: str, dataset_id: str, indexes: Iterable[Index],
             intent: Intent | None = None) -> None:
        """Chunks ``indexes`` of the dataset were written (or deleted). Never blocks."""
        self._chunks.setdefault((domain, dataset_id), set()).update(tuple(i) for i in indexes)
        self._changed[domain] = time.time()
        if intent is not None and intent.key is not None:
            self._done.add(intent.key)
        self._kick()

    def abort(self, intent: Intent) -> None:
        """The write failed part-way: leave its intent to `recover`, which probes its chunks once
        it is stale (a cancelled put may still land after we gave up on it)."""
        if intent.key is not None:
            self._mine.discard(intent.key)

    def note_object(self, domain: str, obj_id: str) -> None:
        """A group, dataset or datatype was created, updated or deleted. Never blocks."""
        self._made.pop((domain, obj_id), None)  # changed since made: HEADed
        self._objects.setdefault(domain, set()).add(obj_id)
        self._changed[domain] = time.time()
        self._kick()

    def note_made(self, domain: str, obj_id: str, info: ObjectInfo) -> None:
        """An object was created, and the store answered ``info``: its line needs no HEAD
        unless something else is noted of it first (`record_objects`). Never blocks."""
        pending = self._objects.setdefault(domain, set())
        if obj_id in pending:
            self._made.pop((domain, obj_id), None)
        else:
            self._made[(domain, obj_id)] = info
        pending.add(obj_id)
        self._changed[domain] = time.time()
        self._kick()

    # -- lifecycle
    async def start(self) -> None:
        """Start the flusher and the periodic recovery of stale intents (server start-up)."""
        self._start_flusher()
        if self._recovery is None:
            self._recovery = asyncio.create_task(self._recover_loop())
        if self._heartbeat is None:
            self._heartbeat = asyncio.create_task(self._heartbeat_loop())

    async def close(self) -> None:
        """Flush what is buffered and stop (server shutdown); what fails is left to recovery."""
        self._closing = True
        self._stop.set()
        for task in (self._recovery, self._heartbeat):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.alive.end()
        self._start_flusher()  # merges what is left, logs a failure (never raises) and ends
        self._wake.set()
        if self._flusher is not None:
            await self._flusher

    async def flush(self) -> None:
        """Merge everything noted so far (after a flush already under way)."""
        async with self._lock:
            chunks, objects, done, changed = self._chunks, self._objects, self._done, self._changed
            made = self._made
            self._chunks, self._objects, self._done, self._changed, self._made = {}, {}, set(), {}, {}
            try:
                await self._merge(chunks, objects, made)
                await bounded(changed.items(), lambda dc: advance(self.store, *dc), 8)
            except BaseException:  # put the batch back for the next try
                for (d, obj_id), info in made.items():
                    if obj_id not in self._objects.get(d, ()):  # else noted since: HEADed
                        self._made[(d, obj_id)] = info
                for k, v in chunks.items():
                    self._chunks.setdefault(k, set()).update(v)
                for d, group in objects.items():
                    self._objects.setdefault(d, set()).update(group)
                self._done |= done
                for d, at in changed.items():
                    self._changed[d] = max(at, self._changed.get(d, 0.0))
                raise
            keys = sorted(done)
            results = await asyncio.gather(*map(self.store.delete, keys), return_exceptions=True)
            for key, result in zip(keys, results):
                failed = isinstance(result, BaseException)  # merged already; delete it next time
                (self._done.add if failed else self._mine.discard)(key)

    async def recover(self, older_than: float | None = None) -> int:
        """Merge the intents other processes (or failed writes) left for more than
        ``older_than`` seconds (default ``stale_after``); returns how many were merged."""
        limit = self.stale_after if older_than is None else older_than
        merged = 0
        for key in [k async for k in self.store.list(PENDING_PREFIX, delimiter="/")]:
            if not ids.is_intent_key(key) or key in self._mine:
                continue
            blob = await self.store.get(key)
            if blob is None or time.time() - blob.last_modified < limit:
                continue
            if await self.alive.held(blob.data, limit):
                continue
            try:
                doc = orjson.loads(blob.data)
                domain, dataset_id = ids.normalize_domain(doc["domain"]), doc["dataset"]
                if ids.parse_id(dataset_id) not in (ids.Collection.DATASETS, ids.Collection.MAPS):
                    raise ValueError(dataset_id)
                indexes = set(region_indexes(doc))
            except (ValueError, KeyError, TypeError, InvalidInput, NotFound):
                log.warning("dropping unreadable catalog intent %s", key)
            else:
                await self._merge({(domain, dataset_id): indexes}, {})
                await advance(self.store, domain, blob.last_modified)
                merged += 1
            await self.store.delete(key)
        await self.alive.forget_dead(limit)
        return merged

    async def settle(self, domain: str, timeout: float) -> None:
        """Bring ``domain``'s catalogs up to date for a commit: flush this process's notes, wait
        up to ``timeout`` s for the write intents other processes hold on it *now* to go (their
        writes end and are flushed; intents begun later are not waited for), then merge what is
        left of them as `recover` would (a dead process's)."""
        await self.flush()
        deadline = time.monotonic() + timeout
        waiting: set[str] | None = None
        while True:
            left: list[tuple[str, IntentRecord]] = []
            for key in [k async for k in self.store.list(PENDING_PREFIX, delimiter="/")]:
                if key in self._done or waiting is not None and key not in waiting:
                    continue  # merged already (only its delete failed), or begun after we started
                blob = await self.store.get(key) if ids.is_intent_key(key) else None
                with contextlib.suppress(ValueError, TypeError, AttributeError):
                    doc = orjson.loads(blob.data) if blob is not None else None
                    if isinstance(doc, dict) and doc.get("domain") == domain:
                        left.append((key, cast(IntentRecord, doc)))
            if waiting is None:
                waiting = {key for key, _ in left}
            if not left:
                return
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(min(0.02 + self.delay / 4, 0.5))
        for key, doc in left:
            with contextlib.suppress(KeyError, TypeError, ValueError):
                await self._merge({(domain, doc["dataset"]): set(region_indexes(doc))}, {})
                if not await self.alive.held(orjson.dumps(doc), self.stale_after):
                    await self.store.delete(key)  # a live process's write still runs: it deletes its own

    # -- internals
    def _kick(self) -> None:
        if self.autostart:
            self._start_flusher()
        self._wake.set()

    def _start_flusher(self) -> None:
        if self._flusher is None or self._flusher.done():
            with contextlib.suppress(RuntimeError):  # no event loop: stay buffered until one runs
                self._flusher = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while not self._closing or self._chunks or self._objects or self._done or self._changed:
            await self._wake.wait()
            await self._pause(self.delay)  # coalesce a burst of writes into one merge
            self._wake.clear()
            try:
                await self.flush()
            except Exception:
                log.exception("catalog flush failed; retrying")
                if self._closing:
                    return  # the intents stay behind for recovery
                await self._pause(max(1.0, self.delay))
                self._wake.set()

    async def _pause(self, seconds: float) -> None:
        # Not wait_for: on Python 3.11 it can swallow a cancellation that races the event.
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({stop}, timeout=seconds)
        finally:
            stop.cancel()

    async def _heartbeat_loop(self) -> None:
        """While this process holds intents, say it is alive every ``renew`` seconds (`close`
        deletes the heartbeat)."""
        while not self._closing:
            if self._mine and self.alive.due(0.5):
                try:
                    await self.alive.beat()
                except Exception:
                    log.exception("catalog heartbeat failed")
            await self._pause(self.alive.renew / 2)

    async def _recover_loop(self) -> None:
        while not self._closing:
            try:
                await self.recover()
            except Exception:
                log.exception("catalog recovery failed")
            await self._pause(self.recover_every)

    async def _merge(self, chunks: dict[tuple[str, str], set[Index]],
                     objects: dict[str, set[str]], made: dict[tuple[str, str], ObjectInfo] | None = None) -> None:
        touched: dict[str, set[str]] = {d: set(group) for d, group in objects.items()}
        known: Known = {}

        async def one(item: tuple[tuple[str, str], set[Index]]) -> None:
            (domain, dataset_id), indexes = item
            touched.setdefault(domain, set()).add(dataset_id)
            if await self.store.head(ids.object_key(dataset_id)) is not None:  # else: deleted
                known[dataset_id] = await _merge_chunks(self.store, domain, dataset_id, indexes)

        await bounded(list(chunks.items()), one, 8)
        by_domain: dict[str, Made] = {}
        for (domain, obj_id), info in (made or {}).items():
            by_domain.setdefault(domain, {})[obj_id] = info
        await bounded(touched.items(),
                      lambda d: record_objects(self.store, d[0], d[1], known, by_domain.get(d[0])), 8)


# --- datasets: deletion ----------------------------------------------------------



def logical_grid(doc: DatasetDoc) -> tuple[range, ...] | None:
    """The chunk indexes of the dataset along each dimension (negative ones too, for a dataset
    grown at the front: the layout's ``origin``); None for a null dataspace (no chunks at all)."""
    space = space_from_json(doc["shape"])
    if space.kind is SpaceClass.NULL:
        return None
    layout = doc.get("layout", {})
    chunk_shape = layout.get("dims") or [max(1, d) for d in space.dims]
    return chunk_span(space.dims, chunk_shape, layout.get("origin") or ())


async def delete_dataset_chunks(store: Store, domain: str, dataset_doc: dict[str, Any],
                                more: Iterable[Index] = ()) -> int:
    """Delete a deleted dataset's chunks (those its catalog lists and, as the catalog may lag,
    every chunk of a grid of up to ``GRID_PROBE_LIMIT`` chunks), its chunk catalog and its
    ``.datasets.txt`` line. A map's pair buckets likewise: those its catalog lists and ``more``
    (those found from its root bucket), and its ``.maps.txt`` line. Returns the number of chunk
    keys deleted (present or not)."""
    dataset_id = dataset_doc["id"]
    more = list(more)
    listed: Lines = {}
    grid = None
    if ids.Collection.of(dataset_id) is ids.Collection.MAPS:
        listed = await _read_chunk_lines(store, domain, dataset_id)
    elif not is_linked(dataset_doc):
        more = []
        listed = await _read_chunk_lines(store, domain, dataset_id)
        grid = logical_grid(as_dataset(dataset_doc))
        if grid is not None and span_count(grid) > GRID_PROBE_LIMIT:
            grid = None

    def every_key() -> list[str]:
        keys = {ids.chunk_key(dataset_id, i) for i in more}
        keys.update(ids.chunk_key(dataset_id, _index_of(n)) for n in listed)
        if grid is not None:  # a blind delete costs one request, as a HEAD would; deleting a missing key is fine
            keys.update(ids.chunk_key(dataset_id, i) for i in itertools.product(*grid))
        return sorted_in_runs(keys)

    count = len(more) + len(listed) + (span_count(grid) if grid is not None else 0)
    keys = await _off_loop(count, every_key)
    await bounded(keys, store.delete, HEAD_CONCURRENCY)
    await store.delete(ids.chunk_catalog_key(domain, dataset_id))

    async def drop(lines: Lines) -> None:  # even while a domain delete still has the object
        lines.pop(dataset_id, None)

    await _edit(store, ids.catalog_key(domain, _CATALOGS[dataset_id[0]]), drop)
    return len(keys)
