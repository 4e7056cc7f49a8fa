"""Writing a version to a domain's head (restore, merge, cherry-pick) as one unit, and the marks
on the domain document that make it so (docs/versions.md, "Writing a version to the head").

The head is many objects, written one by one; a process dying part-way would leave a head that
is neither what it was nor the version. So before its first write the writer records the intent
``applying`` (``{"version", "tree", "parent"}``) in the domain document, under its
``committing`` lease, and removes it after the last. Every process loading the domain's head
(`domains.core.load_domain`) sees it: while the lease is live it waits (reads too: the head is
half written); once the lease has lapsed the writer is dead, and the loader finishes its work:

* a version record with that number and tree exists: the version is written to the head again
  (roll forward; only what still differs is written);
* none: a merge died before its commit point. A stub record (a forgotten version) is put
  create-only at that number, so the merge can never complete later; the head, not yet
  touched, stays as it was (undo).

Who finishes is decided by a conditional put of the domain document taking the lapsed lease;
every step is idempotent, so a finisher that dies in turn is finished by the next process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, Final

from h5lake.chunks.capability import copies
from h5lake.errors import CallerGone, Conflict, H5LakeError, StorageUnavailable
from h5lake.model.ids import blob_key, chunk_key, domain_key, parse_index_name, version_key
from h5lake.model.stored import DomainDoc, VersionRecord, as_domain
from h5lake.service.context import Service, now
from h5lake.service.documents import Doc, dumps
from h5lake.service.faults import crash_point
from h5lake.service.objects import attribute_values as attrvalues
from h5lake.service.versions.snapshot import head_tree
from h5lake.service.views import Domain
from h5lake.storage.base import PreconditionFailed
from h5lake.versions.names import parse_version_id

log = logging.getLogger(__name__)
Trees = dict[str, dict[str, Any]]
COMMITTING: Final = "committing"  # the domain document's lease while a commit, restore or merge runs
APPLYING: Final = "applying"  # the domain document's intent while a version is written to the head
_POLL = 0.02
_HELD: Counter[tuple[int, str]] = Counter()  # (id of the service, domain) held by this process now


def _leaser(svc: Service) -> Callable[[DomainDoc], None]:
    """Marks a domain document as held for ``svc.commit_lease`` seconds from now (a crashed
    commit holds the domain's changes back at most that long)."""

    def lease(doc: DomainDoc) -> None:
        doc[COMMITTING] = {"until": time.time() + svc.commit_lease}

    return lease


def _live(svc: Service, path: str, doc: DomainDoc) -> bool:
    """The writer holding the domain is alive: its lease runs, or this very service holds it
    (its lease may have lapsed while the process was too busy to renew it)."""
    mark = doc.get(COMMITTING)
    return isinstance(mark, dict) and float(mark.get("until", 0)) > now() or (id(svc), path) in _HELD


@asynccontextmanager
async def _holding(svc: Service, path: str) -> AsyncIterator[None]:
    """Renew the lease while the body runs; remove it after."""
    key, what = domain_key(path), f"domain {path}"

    async def renew() -> None:
        while True:
            await asyncio.sleep(svc.commit_lease / 4)
            await svc.docs.update(key, _leaser(svc), what)

    renewing = asyncio.create_task(renew())
    held = (id(svc), path)
    _HELD[held] += 1
    try:
        yield
    finally:
        _HELD[held] -= 1
        if not _HELD[held]:
            del _HELD[held]
        renewing.cancel()
        with suppress(asyncio.CancelledError):
            await renewing
        await asyncio.shield(svc.docs.update(key, lambda doc: doc.pop(COMMITTING, None), what))


@asynccontextmanager
async def commit_flag(svc: Service, domain: Domain) -> AsyncIterator[None]:
    """Mark the domain document ``committing`` while a commit runs: every process reads that
    document for each change request anyway, and holds the change until the mark is gone
    (`domains.wait_for_commit`). The mark is a lease of ``svc.commit_lease`` s, renewed while the
    commit runs, so the mark of a commit whose process died expires soon."""
    await svc.docs.update(domain_key(domain.path), _leaser(svc), f"domain {domain.path}")
    async with _holding(svc, domain.path):
        yield


async def version_trees(svc: Service, record: VersionRecord) -> Trees:
    objects = (await svc.cas.get_tree(record["tree"]))["objects"]
    found = await svc.workers.map(list(objects.values()), svc.cas.get_tree)
    return dict(zip(objects, found))


async def begin(svc: Service, domain: Domain, version: str, tree: str, parent: str | None) -> Doc:
    """Record that ``version`` (root manifest ``tree``) is about to be written to the head (called
    under `commit_flag`, before the version's record is put when that is still to come)."""
    intent: Doc = {"version": version, "tree": tree, "parent": parent}

    def mark(doc: DomainDoc) -> None:
        doc[APPLYING] = intent

    await svc.docs.update(domain_key(domain.path), mark, f"domain {domain.path}")
    crash_point("apply-intent")
    return intent


async def end(svc: Service, domain: Domain, intent: Doc) -> None:
    """The head is the version (or the version will never be): the intent goes."""
    crash_point("apply-done")

    def unmark(doc: DomainDoc) -> None:
        if doc.get(APPLYING) == intent:
            doc.pop(APPLYING)

    await svc.docs.update(domain_key(domain.path), unmark, f"domain {domain.path}")


async def write(svc: Service, domain: Domain, intent: Doc, want: Trees, have: Trees) -> tuple[int, int]:
    """`apply_trees` under ``intent`` (from `begin`), which it ends. Interrupted (the store
    unavailable, the request cancelled, the process killed) the intent stays, and the next
    request finishes the work; failing for good (a blob missing from the content store) the
    intent goes and the error is raised: the head stays as written so far, the domain usable."""
    try:
        written = await apply_trees(svc, domain, want, have)
    except (StorageUnavailable, CallerGone):
        raise
    except H5LakeError:
        await end(svc, domain, intent)
        raise
    await end(svc, domain, intent)
    return written


class _Taken(Exception):
    """Another process holds the lease (it is finishing), or the intent is gone."""


async def finish(svc: Service, domain: Domain) -> Domain:
    """The domain as loaded once no version is being written to its head: waits while the writer
    lives, finishes the work of a dead one (module docstring). ``domain`` is a loaded head whose
    document has the intent."""
    path = domain.path
    key, what = domain_key(path), f"domain {path}"
    while (intent := domain.doc.get(APPLYING)) is not None:
        if _live(svc, domain.path, domain.doc):
            await asyncio.sleep(_POLL)
        else:

            def take(doc: DomainDoc, intent: Doc = intent) -> None:
                if doc.get(APPLYING) != intent or _live(svc, path, doc):
                    raise _Taken
                _leaser(svc)(doc)

            with contextlib.suppress(_Taken):
                await svc.docs.update(key, take, what)
                async with _holding(svc, domain.path):
                    try:
                        await _roll(svc, domain, intent)
                    except (StorageUnavailable, CallerGone):
                        raise
                    except H5LakeError as e:  # it cannot be finished (`write`): serve the head as it is
                        log.warning("could not finish writing %s to the head of %s: %s", intent["version"], path, e)
                        await end(svc, domain, intent)
        found = await svc.docs.require(key, what)
        domain = Domain(domain.path, as_domain(found.doc), found.etag, domain.view)
    return domain


async def _roll(svc: Service, domain: Domain, intent: Doc) -> None:
    """Forward when the version's record is there, else make sure it never will be."""
    number = parse_version_id(intent["version"])
    key = version_key(domain.path, number)
    found = await svc.docs.get(key)
    if found is None:
        stub = {"id": intent["version"], "number": number, "parent": intent.get("parent"), "created": now(),
                "deleted": True}
        try:
            await svc.store.put(key, dumps(stub), if_none_match=True)
        except PreconditionFailed:  # the record was put after all (just now)
            found = await svc.docs.get(key)
        else:
            await end(svc, domain, intent)  # undone: the head was not touched before the record
            return
    record = None if found is None else found.doc
    if record is None or record.get("deleted") or record.get("tree") != intent["tree"]:
        await end(svc, domain, intent)  # another commit took the number: this merge never happened
        return
    await svc.catalog.settle(domain.path, 0)  # the dead writer's chunk intents, into the catalogs
    want = await version_trees(svc, record)  # type: ignore[arg-type]
    have = (await head_tree(svc, domain, record, memory=True)).trees  # type: ignore[arg-type]
    await write(svc, domain, intent, want, have)


async def apply_trees(svc: Service, domain: Domain, want: Trees, have: Trees) -> tuple[int, int]:
    """Make the head equal to ``want`` (a version's manifests) from ``have`` (the head's): only
    documents and chunks that differ are written. Idempotent: run again from any point, it ends
    the same. The counts of objects and chunks written."""
    objects = chunks = 0
    for obj_id, tree in want.items():
        old = have.get(obj_id, {})
        table, old_table = tree.get("chunks") or {}, old.get("chunks") or {}
        put = [n for n in table if (old_table.get(n) or [0, None])[1] != table[n][1]]
        drop = [n for n in old_table if n not in table]

        async def copy(name: str, obj_id: str = obj_id, table: dict[str, Any] = table) -> None:
            if copies(svc.store):  # the head's chunk shares the blob's bytes (a hard link on a local directory)
                with contextlib.suppress(PreconditionFailed):  # missing, or kept with another ETag: below
                    await svc.store.copy(blob_key(table[name][0]), chunk_key(obj_id, parse_index_name(name)),
                                         source_etag=table[name][1])
                    crash_point("apply-chunk")
                    return
            blob = await svc.store.get(blob_key(table[name][0]))
            if blob is None:
                raise Conflict(f"chunk {name} of {obj_id} is missing from the content store")
            await svc.store.put(chunk_key(obj_id, parse_index_name(name)), blob.data)
            crash_point("apply-chunk")

        # An intent, as for a value write: a crash part-way leaves no chunk the catalog misses
        # (reads of many chunks trust the catalog and intents, docs/storage.md).
        async def remove(name: str, obj_id: str = obj_id) -> None:
            await svc.store.delete(chunk_key(obj_id, parse_index_name(name)))

        async with svc.catalog.recording(domain.path, obj_id, [parse_index_name(n) for n in put]) as rec:
            await svc.workers.each(put, copy)
            await svc.workers.each(drop, remove)
            rec.written = [parse_index_name(n) for n in put + drop] if put or drop else None
        if old.get("etag") != tree["etag"]:
            await attrvalues.restore_values(svc, obj_id, tree["doc"])  # the values first, then the document
            await svc.docs.put_object(domain.path, obj_id, tree["doc"])
            kept = {r["key"] for r in attrvalues.outside_refs(tree["doc"].get("attributes") or {}).values()}
            before = attrvalues.outside_refs((old.get("doc") or {}).get("attributes") or {}).values()
            await attrvalues.drop(svc, obj_id, [r for r in before if r["key"] not in kept])
            crash_point("apply-object")
            objects += 1
        chunks += len(put) + len(drop)
    for obj_id in set(have) - set(want):
        for name in have[obj_id].get("chunks") or {}:
            await svc.store.delete(chunk_key(obj_id, parse_index_name(name)))
        await svc.docs.delete_object(domain.path, obj_id)
        await attrvalues.collect(svc, obj_id, None)
        objects += 1
    await svc.catalog.flush()
    return objects, chunks
