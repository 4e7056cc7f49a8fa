"""Forking a version into a new, writable domain (docs/versions.md, "Restore, fork, forget, collect").

Object ids are bucket-global, so the fork's objects get new ids (the new root's prefix); their
documents are copied with links and datatype references renamed. No chunk is copied: each
dataset keeps the manifest hash of its source (``forkedChunks``) and reads those chunks until it
writes its own. Cost: one document write per object, whatever the data's size.
"""

from __future__ import annotations

from typing import Any

from h5lake.errors import AlreadyExists, InvalidInput
from h5lake.model.acl import Permission
from h5lake.model.ids import (
    FORKED,
    Collection,
    fork_base_key,
    is_valid_id,
    new_object_id,
    normalize_domain,
    strip_collection_prefix,
)
from h5lake.model.stored import VersionRecord
from h5lake.service.context import Caller, Service, now
from h5lake.service.documents import Doc, dumps
from h5lake.service.domains.core import create_domain, open_domain
from h5lake.service.objects.attributes import shown_value
from h5lake.service.versions import view as versions
from h5lake.service.versions.commit import commit, head_tree
from h5lake.service.views import Domain
from h5lake.versions.names import parse_ref, split_domain


def _rename(value: Any, ids: dict[str, str]) -> Any:
    """Every object id in a document (links, types, references in attributes) renamed, also one
    with its collection in front (``datasets/d-...``: a region reference's id, an object
    reference as h5pyd sends it)."""
    if isinstance(value, str):
        bare = strip_collection_prefix(value)
        if bare is not value and bare in ids:
            return value[: len(value) - len(bare)] + ids[bare]
        return ids.get(value, value) if is_valid_id(value) else value
    if isinstance(value, list):
        return [_rename(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _rename(v, ids) for k, v in value.items()}
    return value


def _regions_as_objects(doc: Doc) -> Doc:
    """A document with the region references of its attributes in h5json's object form (a
    domain loaded before that form kept them as base64 blobs), so their ids can be renamed."""
    attrs = doc.get("attributes")
    if not isinstance(attrs, dict):
        return doc
    shown = {name: {**a, "value": shown_value(a)} if isinstance(a, dict) and "value" in a else a for name, a in attrs.items()}
    return {**doc, "attributes": shown}


async def _source_version(svc: Service, caller: Caller, source: str) -> tuple[Domain, VersionRecord]:
    path, ref = split_domain(source)
    domain = await open_domain(svc, caller, path, Permission.READ)
    if ref is not None:
        return domain, await versions.resolve(svc, domain.path, parse_ref(ref))
    latest = await versions.latest(svc, domain.path)
    if latest is not None and not (await head_tree(svc, domain, latest, dry=True)).changed:
        return domain, latest
    made = await commit(svc, caller, domain.path, {"message": "fork"})
    return domain, await versions.require(svc, domain.path, int(made["id"][1:]))


async def fork(svc: Service, caller: Caller, path: str, body: Doc) -> Domain:
    """``PUT /?domain=NEW`` with ``{"from": "D@REF"}`` (or ``"D"``: the head, committed first)."""
    path = normalize_domain(path)
    source = body.get("from")
    if not isinstance(source, str) or not source.startswith("/"):
        raise InvalidInput('"from" names a domain (D or D@REF) by its absolute path')
    src_domain, record = await _source_version(svc, caller, source)
    root_tree = await svc.cas.get_tree(record["tree"])
    objects: dict[str, str] = root_tree["objects"]
    trees = dict(zip(objects, await svc.workers.map(list(objects.values()), svc.cas.get_tree)))

    async def prepare(new_root: str) -> Doc:
        ids = {old: new_object_id(Collection(old[0]), new_root) for old in objects if old != root_tree["root"]}
        ids[root_tree["root"]] = new_root
        ts = now()

        def copy(old: str) -> Doc:
            doc = _rename(_regions_as_objects(trees[old]["doc"]), ids)
            doc.pop(FORKED, None)
            if "chunks" in trees[old]:
                doc[FORKED] = objects[old]
            doc["lastModified"] = ts
            return doc

        base = {"from": src_domain.path, "version": record["id"], "tree": record["tree"], "created": ts, "ids": ids}
        await svc.store.put(fork_base_key(path, new_root), dumps(base))  # before any chunk it keeps alive is needed
        bases.append((new_root, base))
        others = [old for old in objects if old != root_tree["root"]]
        async def store(old: str) -> None:
            await svc.docs.create_object(path, copy(old))

        await svc.workers.each(others, store)
        return copy(root_tree["root"])

    bases: list[tuple[str, Doc]] = []
    try:
        domain = await create_domain(svc, caller, path, {}, prepare=prepare)
    except AlreadyExists:
        for root, _ in bases:  # another request made the domain first: our base is nobody's
            await svc.store.delete(fork_base_key(path, root))
        raise
    # Put again now the name is ours: another request making a domain at this path at the same
    # time may have cleared a deleted domain's history (domains.create_domain) after ours was put.
    root, base = bases[-1]
    await svc.store.put(fork_base_key(path, root), dumps(base))
    return domain
