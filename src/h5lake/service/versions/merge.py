"""Bringing changes back: merging a fork into the domain it was forked from, and cherry-picking
one version's change (docs/versions.md, "Merge and cherry-pick").

Both are a three-way merge (`versions_merge3`) of manifests in the target's ids: a base, ours
(the target's head, committed first when it differs from its latest version) and theirs (the
fork's version, its ids mapped back as the fork recorded them; an object the fork made gets a new
id of the target). The result is put as a new version of the target (the create-only record is
the commit point) and then the head is made equal to it, all under the commit fence and mark, so
a write to the target lands wholly before (and is in ours) or wholly after; the intent recorded
first (`applying`) makes the head's change all or nothing should the process die.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any, cast

import numpy as np

from h5lake.chunks.dataset import ChunkCodec
from h5lake.errors import Conflict, H5LakeError, InvalidInput
from h5lake.model.acl import Permission
from h5lake.model.ids import FORKED, Collection, blob_key, derived_object_id, fork_base_key, version_key
from h5lake.model.stored import VersionRecord
from h5lake.service.context import Caller, Service, now
from h5lake.service.documents import Doc, dumps
from h5lake.service.domains.core import open_domain
from h5lake.service.faults import crash_point
from h5lake.service.versions import applying
from h5lake.service.versions import view as versions
from h5lake.service.versions.applying import commit_flag
from h5lake.service.versions.applying import version_trees as _version_trees
from h5lake.service.versions.commit import MAX_DESCRIPTION_BYTES
from h5lake.service.versions.diff_restore import _paths
from h5lake.service.versions.fork import _rename, _source_version
from h5lake.service.versions.snapshot import consistent_tree
from h5lake.service.versions.three_way import Entry, Merge, Trees, doc_etag
from h5lake.service.views import Domain
from h5lake.storage.base import PreconditionFailed
from h5lake.versions.names import parse_ref, split_domain, version_id

CHOICES = ("ours", "theirs")
DEFAULT_LIMIT = 1000  # conflicts listed in one 409 (``Limit``; ``Marker`` pages on)
MAX_RESOLVE = 10_000  # entries of a resolution


def _body(body: Any) -> tuple[str, str, dict[str, str]]:
    if not isinstance(body, dict):
        raise InvalidInput('a merge body is a JSON object {"from": "D or D@REF", "message": ..., "resolve": ...}')
    source = body.get("from")
    if not isinstance(source, str) or not source.startswith("/"):
        raise InvalidInput('"from" names a domain (D or D@REF) by its absolute path')
    message = body.get("message", "")
    if not isinstance(message, str) or len(message.encode()) > MAX_DESCRIPTION_BYTES:
        raise InvalidInput(f"message is a string of at most {MAX_DESCRIPTION_BYTES} bytes")
    given = body.get("resolve")
    if given is None:
        resolve: dict[str, str] = {}
    elif isinstance(given, str):
        resolve = {"*": given}
    elif isinstance(given, dict) and len(given) <= MAX_RESOLVE:
        resolve = given
    else:
        raise InvalidInput(f'resolve is "ours", "theirs" or an object of at most {MAX_RESOLVE} paths to one of them')
    for path, choice in resolve.items():
        if choice not in CHOICES or not isinstance(path, str) or not (path == "*" or path.startswith("/")):
            raise InvalidInput(f'resolve maps "*" or an absolute path to "ours" or "theirs", not {path!r}: {choice!r}'[:300])
    return source, message, resolve


async def _target(svc: Service, caller: Caller, path: str) -> Domain:
    if "@" in path:
        raise InvalidInput(f"a merge goes into the head of a domain, not into the version {path[:120]!r}")
    return await open_domain(svc, caller, path, Permission.UPDATE)


async def _fork_base(svc: Service, fork: Domain) -> Doc:
    found = await svc.docs.get(fork_base_key(fork.path, fork.require_root()))
    if found is None:
        raise InvalidInput(f"{fork.path} is not a fork: it has nothing to merge back")
    return found.doc


def _names(ids: dict[str, str], fork_ids: Any, root: str) -> dict[str, str]:
    """Fork ids to the target's: ``ids`` as the fork recorded them; an object the fork made gets
    an id of the target derived from its fork id, the same at every merge (so merging a fork
    again, or retrying a merge, finds the object it brought before and adds no second one)."""
    names = dict(ids)
    for fid in fork_ids:
        if fid not in names:
            names[fid] = derived_object_id(Collection(fid[0]), root, f"{root} {fid}")
    return names


def _mapped(trees: Trees, names: dict[str, str]) -> Trees:
    """Fork manifests in the target's ids, documents renamed as a fork renames them."""
    out: Trees = {}
    for fid, tree in trees.items():
        doc = _rename(tree["doc"], names)
        doc.pop(FORKED, None)
        out[names[fid]] = {**tree, "doc": doc}
    return out


def _ids_by_path(base: Trees, fork: Trees, base_root: str, fork_root: str) -> dict[str, str]:
    """A fork made before forks recorded their ids: matched by hard-link paths."""
    pb, pf = _paths(base, base_root), _paths(fork, fork_root)
    at = {p: i for i, p in pb.items()}
    return {fid: at[p] for fid, p in pf.items() if p in at and at[p][0] == fid[0]}


def _elementwise(svc: Service, docs: Trees) -> Any:
    """Merge one chunk changed on both sides in disjoint elements (compared with the base)."""

    async def merge(obj_id: str, name: str, b: Entry, o: Entry, t: Entry) -> tuple[Entry, str]:
        if b is None or o is None or t is None:
            return None, "a side has no such chunk"
        doc = docs[obj_id]["doc"]
        try:
            chunk_shape = tuple(doc.get("layout", {}).get("dims", []))
            codec = ChunkCodec.for_dataset(doc["type"], chunk_shape, (doc.get("creationProperties") or {}).get("filters"))
        except (H5LakeError, KeyError, TypeError, ValueError):
            return None, "its type cannot be compared element by element"
        if codec.variable or codec.reduced:
            return None, "variable-length or reduced-precision elements"
        if isinstance(b, str) and isinstance(o, str) and isinstance(t, str):  # compact: held in the document
            stored = [base64.b64decode(x) for x in (b, o, t)]
        elif isinstance(b, list) and isinstance(o, list) and isinstance(t, list):
            blobs = [await svc.store.get(blob_key(e[0])) for e in (b, o, t)]
            if any(x is None for x in blobs):
                return None, "a chunk is missing from the content store"
            stored = [bytes(x.data) for x in blobs]  # type: ignore[union-attr]
        else:
            return None, "the chunks are kept in different ways"
        size = codec.dtype.itemsize
        base, ours, theirs = (
            np.frombuffer(codec.pipeline.decode(x, 0), dtype=np.uint8).reshape(-1, size) for x in stored
        )
        if not base.shape == ours.shape == theirs.shape:
            return None, "the chunks differ in size"
        mine, yours = (ours != base).any(axis=1), (theirs != base).any(axis=1)
        both = mine & yours
        if (ours[both] != theirs[both]).any():
            return None, "the same elements changed differently"
        out = base.copy()
        out[mine] = ours[mine]
        out[yours] = theirs[yours]
        raw = out.tobytes()
        encoded = bytes(codec.pipeline.encode(raw)) if codec.pipeline.filters else raw
        if isinstance(b, str):
            return base64.b64encode(encoded).decode(), ""
        sha = await svc.cas.put_blob(encoded)
        return [sha, hashlib.md5(encoded, usedforsecurity=False).hexdigest()], ""

    return merge


async def _ours(svc: Service, caller: Caller, target: Domain) -> VersionRecord:
    """The target's head as a version: its latest, or the head committed first (called under
    the fence and the mark)."""
    number = await versions.highest_number(svc, target.path) + 1
    latest = await versions.latest(svc, target.path, below=number)
    tree = await consistent_tree(svc, target, latest)
    if latest is not None and tree == latest["tree"]:
        return latest
    return await _publish(svc, target, number, {
        "parent": None if latest is None else latest["id"], "author": caller.user,
        "message": "head before merge", "metadata": {}, "tree": tree,
    })


async def _publish(svc: Service, target: Domain, number: int, fields: Doc) -> VersionRecord:
    record = cast(VersionRecord, {"id": version_id(number), "number": number, "created": now(), **fields})
    try:
        await svc.store.put(version_key(target.path, number), dumps(record), if_none_match=True)
    except PreconditionFailed:
        raise Conflict(f"another commit of {target.path} won; try again") from None
    await versions.set_hint(svc, target.path, number)
    return record


async def _three_way(
    svc: Service, caller: Caller, target: Domain, base: Trees, theirs: Trees, resolve: dict[str, str],
    message: str, extra: Doc, limit: int | None, marker: int,
) -> tuple[Doc, int]:
    """Merge ``theirs`` into the target's head against ``base``; the reply and
    its status (201: a new version; 409: the conflicts, nothing changed)."""
    async with svc.fences.committing(target.path), commit_flag(svc, target):
        ours_record = await _ours(svc, caller, target)
        ours = await _version_trees(svc, ours_record)
        root = target.require_root()
        paths = {**_paths(base, root), **_paths(theirs, root), **_paths(ours, root)}
        merge = Merge(base, ours, theirs, paths, resolve, _elementwise(svc, {**base, **ours}))
        await merge.run()
        if merge.conflicts:
            limit = DEFAULT_LIMIT if limit is None else limit
            page = merge.conflicts[marker: marker + limit]
            reply: Doc = {"conflicts": page, "count": len(merge.conflicts), "ours": ours_record["id"], **extra}
            if marker + limit < len(merge.conflicts):
                reply["nextMarker"] = marker + limit
            message_text = f"{len(merge.conflicts)} conflicts: give resolve (\"ours\"/\"theirs\", per path or for all)"
            return {"error": {"status": 409, "message": message_text}, **reply}, 409
        ts = now()
        objects: dict[str, str] = dict((await svc.cas.get_tree(ours_record["tree"]))["objects"])
        changed: list[str] = []
        for obj_id, tree in merge.merged.items():
            if tree is not ours.get(obj_id):  # ours unchanged keeps its manifest (no store request)
                tree = {**tree, "doc": {**tree["doc"], "lastModified": ts}}
                if ours.get(obj_id, {}).get("doc", {}).get(FORKED):
                    tree["doc"][FORKED] = ours[obj_id]["doc"][FORKED]  # the target's own source stays
                tree["etag"] = doc_etag(tree["doc"])
                tree.pop("catalog", None)
                merge.merged[obj_id] = tree
                changed.append(obj_id)
        shas = await svc.workers.map([merge.merged[i] for i in changed], svc.cas.put_tree)
        objects = {i: objects[i] for i in merge.merged if i not in changed} | dict(zip(changed, shas))
        root_sha = await svc.cas.put_tree({"root": root, "objects": dict(sorted(objects.items()))})
        number = await versions.highest_number(svc, target.path) + 1
        parents = [ours_record["id"], extra["merged"]] if "merged" in extra else [ours_record["id"]]
        # The intent first, then the commit point, then the head: a crash anywhere is finished
        # or undone by the next process loading the domain (`applying`).
        intent = await applying.begin(svc, target, version_id(number), root_sha, ours_record["id"])
        try:
            record = await _publish(svc, target, number, {
                "parent": ours_record["id"], "parents": parents, "author": caller.user, "message": message,
                "metadata": {}, "tree": root_sha, **extra,
            })
        except Conflict:
            await applying.end(svc, target, intent)  # the head was not touched
            raise
        crash_point("merge-record")
        written = await applying.write(svc, target, intent, merge.merged, ours)
    out = versions.public(record)
    out.update({"objects": written[0], "chunks": written[1], "elementwise": merge.elementwise, "resolved": merge.taken})
    return out, 201


async def merge(svc: Service, caller: Caller, path: str, body: Any, limit: int | None = None,
                marker: int = 0) -> tuple[Doc, int]:
    """``POST /versions/merge``: the fork named by ``from`` (at its REF, else its head committed
    first) merged into the target's head against the version the fork was made from."""
    source, message, resolve = _body(body)
    target = await _target(svc, caller, path)
    fork_path, _ = split_domain(source)
    fork = await open_domain(svc, caller, fork_path, Permission.READ)
    if fork.path == target.path:
        raise InvalidInput("a domain is not merged into itself: cherry-pick one of its versions instead")
    base_info = await _fork_base(svc, fork)
    if base_info.get("from") != target.path:
        raise InvalidInput(f"{fork.path} was forked from {base_info.get('from')}, not from {target.path}")
    base_record = await versions.require(svc, target.path, int(base_info["version"][1:]))
    if (await svc.cas.get_tree(base_record["tree"]))["root"] != target.require_root():
        raise InvalidInput(f"{fork.path} was forked from an earlier domain at {target.path} (another lineage)")
    _, fork_record = await _source_version(svc, caller, source)
    base = await _version_trees(svc, base_record)
    fork_trees = await _version_trees(svc, fork_record)
    fork_root = (await svc.cas.get_tree(fork_record["tree"]))["root"]
    given = base_info.get("ids")
    ids = {new: old for old, new in given.items()} if isinstance(given, dict) else _ids_by_path(
        base, fork_trees, target.require_root(), fork_root)
    ids[fork_root] = target.require_root()
    theirs = _mapped(fork_trees, _names(ids, fork_trees, target.require_root()))
    extra = {"merged": f"{fork.path}@{fork_record['id']}"}
    out, status = await _three_way(svc, caller, target, base, theirs, resolve, message or f"merge {extra['merged']}",
                                   extra, limit, marker)
    return out, status


async def cherry_pick(svc: Service, caller: Caller, path: str, body: Any, limit: int | None = None,
                      marker: int = 0) -> tuple[Doc, int]:
    """``POST /versions/cherry-pick``: the change version ``from`` (D@REF) made to its parent,
    applied to the target's head. D is the target itself or a fork of it."""
    source, message, resolve = _body(body)
    target = await _target(svc, caller, path)
    src_path, ref = split_domain(source)
    if ref is None:
        raise InvalidInput('cherry-pick names one version: "from": "D@REF"')
    src = await open_domain(svc, caller, src_path, Permission.READ)
    record = await versions.resolve(svc, src.path, parse_ref(ref))
    picked = await _version_trees(svc, record)
    root = target.require_root()
    parent_id = record.get("parent")
    if src.path == target.path:
        base = {} if parent_id is None else await _version_trees(svc, await versions.require(svc, src.path, int(parent_id[1:])))
        theirs = picked
    else:
        base_info = await _fork_base(svc, src)
        if base_info.get("from") != target.path:
            raise InvalidInput(f"{src.path} is neither {target.path} nor a fork of it")
        fork_base = await versions.require(svc, target.path, int(base_info["version"][1:]))
        if (await svc.cas.get_tree(fork_base["tree"]))["root"] != root:
            raise InvalidInput(f"{src.path} was forked from an earlier domain at {target.path} (another lineage)")
        src_root = (await svc.cas.get_tree(record["tree"]))["root"]
        given = base_info.get("ids")
        target_base = await _version_trees(svc, fork_base)
        ids = {new: old for old, new in given.items()} if isinstance(given, dict) else _ids_by_path(
            target_base, picked, root, src_root)
        ids[src_root] = root
        if parent_id is None:
            base = target_base  # the fork's first version: its change is against what it was made from
            names = _names(ids, picked, root)
        else:
            before = await _version_trees(svc, await versions.require(svc, src.path, int(parent_id[1:])))
            names = _names(ids, [*before, *picked], root)
            base = _mapped(before, names)
        theirs = _mapped(picked, names)
    name = f"{src.path}@{record['id']}"
    out, status = await _three_way(svc, caller, target, base, theirs, resolve, message or f"cherry-pick {name}",
                                   {"cherryPicked": name}, limit, marker)
    return out, status

