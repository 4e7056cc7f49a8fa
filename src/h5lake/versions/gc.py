"""Collecting content-addressed chunks and manifests no version references (``h5lake gc``).

Safe to run from many hosts at once and while servers commit: it deletes only a blob or
manifest that no live version record, tag-kept version or fork base reaches, and whose last
write is older than the grace period. A commit that reuses an existing blob older than half the
default grace period puts it again (same bytes; or copies the head's chunk to it, a hard link
on a local directory, whose time is the link's), restarting its grace period, so a commit
shorter than that is never robbed. What is left: a blob HEADed as old by gc, then reused and
refreshed by a commit in the instant before gc's delete; a commit then reading it back fails
loudly (404 of the chunk), never silently.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import orjson

from h5lake.chunks.fanout import bounded
from h5lake.model.ids import GC_RECORD, VERSIONS, blob_key, is_sha, tree_key
from h5lake.storage.base import PreconditionFailed, Store

GRACE = 3600.0


@dataclass
class Collected:
    roots: int = 0
    trees_live: int = 0
    blobs_live: int = 0
    trees_deleted: int = 0
    blobs_deleted: int = 0
    bytes_deleted: int = 0
    young_kept: int = 0


async def collect(store: Store, grace: float = GRACE, dry_run: bool = False) -> Collected:
    out = Collected()
    blobs: set[str] = set()
    trees: set[str] = set()
    roots: list[str] = []
    async for key in store.list(""):
        name = key.rsplit("/", 1)[-1]
        if "/" not in key and name.endswith(".blob") and is_sha(name[:-5]):
            blobs.add(name[:-5])
        elif "/" not in key and name.endswith(".tree") and is_sha(name[:-5]):
            trees.add(name[:-5])
        elif f"/{VERSIONS}/" in "/" + key and key.endswith(".json") and f"/{VERSIONS}/tags/" not in "/" + key:
            roots.append(key)
    live_trees: set[str] = set()
    live_blobs: set[str] = set()

    async def mark(sha: str) -> None:
        if sha in live_trees or not is_sha(sha):
            return
        live_trees.add(sha)
        blob = await store.get(tree_key(sha))
        if blob is None:
            return
        tree = orjson.loads(blob.data)
        for entry in (tree.get("chunks") or {}).values():
            live_blobs.add(entry[0])
        live_blobs.update(v for v in tree.get("values") or () if isinstance(v, str))  # large attribute values
        await bounded(list((tree.get("objects") or {}).values()), mark, 16)

    for key in roots:
        blob = await store.get(key)
        try:
            doc = orjson.loads(blob.data) if blob is not None else {}
        except orjson.JSONDecodeError:
            continue
        if isinstance(doc, dict) and not doc.get("deleted") and isinstance(doc.get("tree"), str):
            out.roots += 1
            await mark(doc["tree"])
    out.trees_live, out.blobs_live = len(live_trees & trees), len(live_blobs & blobs)
    doomed = [blob_key(s) for s in sorted(blobs - live_blobs)] + [tree_key(s) for s in sorted(trees - live_trees)]
    now = time.time()

    async def drop(key: str) -> None:
        info = await store.head(key)  # read again just before the delete: a reuse refreshes it
        if info is None:
            return
        if now - info.last_modified < grace:
            out.young_kept += 1
            return
        if not dry_run:
            await store.delete(key)
        out.bytes_deleted += info.size
        if key.endswith(".blob"):
            out.blobs_deleted += 1
        else:
            out.trees_deleted += 1

    await bounded(doomed, drop, 16)
    return out


@dataclass
class GcRecord:
    """The store's record of ``h5lake gc`` runs that deleted (not ``--dry-run``), at `GC_RECORD`:
    the last one's end and length, what it reclaimed, and the totals of every run. Runs on
    several hosts add to it with conditional writes, so none is lost."""

    runs: int = 0
    last_finished: float = 0.0  # Unix time
    last_seconds: float = 0.0
    last_objects: int = 0  # chunks and manifests deleted by the last run
    last_bytes: int = 0
    objects: int = 0  # by every run
    bytes: int = 0


async def read_record(store: Store) -> tuple[GcRecord, str | None]:
    """The record and its ETag (None: no run has recorded yet, or it cannot be read as one)."""
    blob = await store.get(GC_RECORD)
    if blob is None:
        return GcRecord(), None
    try:
        doc = orjson.loads(blob.data)
        names = {f.name for f in dataclasses.fields(GcRecord)}
        return GcRecord(**{k: v for k, v in doc.items() if k in names}), blob.etag
    except (orjson.JSONDecodeError, TypeError, AttributeError):
        return GcRecord(), blob.etag  # replaced by the next run


async def record_run(store: Store, found: Collected, started: float, finished: float) -> GcRecord:
    """Add one run that deleted to the store's record (re-read and retried when another run
    changed it meanwhile)."""
    while True:
        record, etag = await read_record(store)
        objects = found.blobs_deleted + found.trees_deleted
        record.runs += 1
        record.last_finished, record.last_seconds = finished, max(0.0, finished - started)
        record.last_objects, record.last_bytes = objects, found.bytes_deleted
        record.objects += objects
        record.bytes += found.bytes_deleted
        data = orjson.dumps(dataclasses.asdict(record))
        try:
            if etag is None:
                await store.put(GC_RECORD, data, if_none_match=True)
            else:
                await store.put(GC_RECORD, data, if_match=etag)
        except PreconditionFailed:
            continue
        return record
