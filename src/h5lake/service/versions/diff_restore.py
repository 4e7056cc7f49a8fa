"""Comparing versions (diff) and making the head equal to one (restore)."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from h5lake.errors import Conflict, InvalidInput
from h5lake.model.acl import Permission
from h5lake.model.layout import COMPACT_KEY
from h5lake.model.links import LinkClass
from h5lake.service.context import Caller, Service
from h5lake.service.documents import Doc
from h5lake.service.domains.core import open_domain
from h5lake.service.versions import applying
from h5lake.service.versions import view as versions
from h5lake.service.versions.applying import commit_flag, version_trees
from h5lake.service.versions.snapshot import CHUNKED, Snapshot, head_tree
from h5lake.versions.names import parse_ref, parse_version_id

Trees = dict[str, dict[str, Any]]
DEFAULT_LIMIT = 1000


def _paths(trees: Trees, root: str) -> dict[str, str]:
    """The first path (breadth first) of every object reachable from the root."""
    out, queue = {root: "/"}, [root]
    while queue:
        nxt = []
        for gid in queue:
            for name, link in sorted((trees.get(gid, {}).get("doc", {}).get("links") or {}).items()):
                target = link.get("id") if link.get("class") == LinkClass.HARD.value else None
                if target in trees and target not in out:
                    out[target] = out[gid].rstrip("/") + "/" + name
                    nxt.append(target)
        queue = nxt
    return out


def _keyed_changes(a: dict[str, Any], b: dict[str, Any]) -> dict[str, list[str]]:
    return {
        "added": sorted(set(b) - set(a)),
        "removed": sorted(set(a) - set(b)),
        "changed": sorted(k for k in set(a) & set(b) if a[k] != b[k]),
    }


def _chunk_changes(a: dict[str, list[Any]], b: dict[str, list[Any]]) -> list[str]:
    """Chunk indices whose bytes differ (by ETag, the MD5 of the bytes; absent = fill)."""
    return sorted(n for n in set(a) | set(b) if (a.get(n) or [0, None])[1] != (b.get(n) or [0, None])[1])


def _chunk_entries(tree: dict[str, Any]) -> dict[str, list[Any]]:
    """An object's chunks as [hash, ETag] by index name; a compact dataset's (held in its
    document, `service.datasets.compact`) with the MD5 of their bytes as the ETag."""
    held = (tree["doc"].get(COMPACT_KEY) or {}).get("chunks")
    if held is None:
        return tree.get("chunks") or {}
    return {n: [None, hashlib.md5(base64.b64decode(v), usedforsecurity=False).hexdigest()] for n, v in held.items()}


def compare(a: Trees, b: Trees, root: str, limit: int) -> Doc:
    pa, pb = _paths(a, root), _paths(b, root)

    def where(obj_id: str) -> Doc:
        return {"id": obj_id, "path": pb.get(obj_id, pa.get(obj_id))}

    changed = []
    for obj_id in sorted(set(a) & set(b)):
        ta, tb = a[obj_id], b[obj_id]
        diffs = _chunk_changes(_chunk_entries(ta), _chunk_entries(tb)) if obj_id[0] in CHUNKED else []
        if ta.get("etag") == tb.get("etag") and not diffs:
            continue  # the same document and chunk bytes (a head's table has ETags, not hashes)
        da, db = ta["doc"], tb["doc"]
        entry = where(obj_id)
        attrs = _keyed_changes(da.get("attributes") or {}, db.get("attributes") or {})
        links = _keyed_changes(da.get("links") or {}, db.get("links") or {})
        if any(attrs.values()):
            entry["attributes"] = attrs
        if any(links.values()):
            entry["links"] = links
        if da.get("shape") != db.get("shape"):
            entry["shape"] = {"from": da.get("shape"), "to": db.get("shape")}
        if diffs:
            entry["chunks"] = {"count": len(diffs), "indices": diffs[:limit]}
        changed.append(entry)
    return {
        "added": [where(i) for i in sorted(set(b) - set(a))],
        "removed": [where(i) for i in sorted(set(a) - set(b))],
        "changed": changed,
    }


async def diff(svc: Service, caller: Caller, path: str, from_ref: str | None, to_ref: str | None,
               limit: int | None) -> Doc:
    """``GET /versions/diff``: from version ``from_ref`` to ``to_ref`` (default: the head)."""
    if not from_ref:
        raise InvalidInput("diff needs from=<version>")
    domain = await open_domain(svc, caller, path, Permission.READ)
    if domain.view is not svc.head:
        raise InvalidInput("name the domain without a version; use from= and to=")
    a_record = await versions.resolve(svc, domain.path, parse_ref(from_ref))
    a = await version_trees(svc, a_record)
    if to_ref:
        b_record = await versions.resolve(svc, domain.path, parse_ref(to_ref))
        b, to_id = await version_trees(svc, b_record), b_record["id"]
    else:
        await svc.catalog.settle(domain.path, 0)
        snap = await head_tree(svc, domain, a_record, memory=True)
        b, to_id = snap.trees, "head"
    out = compare(a, b, domain.require_root(), DEFAULT_LIMIT if limit is None else limit)
    return {"from": a_record["id"], "to": to_id, **out}


async def restore(svc: Service, caller: Caller, path: str, vid: str, body: Any) -> Doc:
    """``POST /versions/{id}/restore``: the head becomes equal to version ``vid``."""
    force = bool(isinstance(body, dict) and body.get("force"))
    domain = await open_domain(svc, caller, path, Permission.UPDATE)
    if domain.view is not svc.head:
        raise InvalidInput("restore names the head domain, without a version")
    target = await versions.require(svc, domain.path, parse_version_id(vid))
    # Fenced as a commit is: this process's change requests wait, and other processes' wait
    # for the domain's mark (a write racing the restore from another process was left half
    # applied: some of its chunks put back to the version's, others not).
    async with svc.fences.committing(domain.path), commit_flag(svc, domain):
        await svc.catalog.settle(domain.path, svc.catalog.stale_after)
        latest = await versions.latest(svc, domain.path)
        if not force and (latest is None or (await head_tree(svc, domain, latest, dry=True)).changed):
            raise Conflict(f"{domain.path} has uncommitted changes; commit them or restore with force")
        want = await version_trees(svc, target)
        have = (await head_tree(svc, domain, target, memory=True)).trees
        intent = await applying.begin(svc, domain, target["id"], target["tree"], target.get("parent"))
        written = await applying.write(svc, domain, intent, want, have)
    return {"restored": target["id"], "objects": written[0], "chunks": written[1]}


__all__ = ["Snapshot", "compare", "diff", "restore"]
