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

import time
from dataclasses import dataclass

import orjson

from h5lake.chunks.fanout import bounded
from h5lake.model.ids import VERSIONS, blob_key, is_sha, tree_key
from h5lake.storage.base import Store

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
