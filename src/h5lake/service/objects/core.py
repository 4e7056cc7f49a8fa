"""Groups, datasets and committed datatypes as stored documents: find, show, create, delete."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from h5lake.catalog.totals import dataset_stats
from h5lake.chunks.inline import KEY as COMPACT_KEY
from h5lake.errors import Forbidden, InvalidInput
from h5lake.model.acl import Permission
from h5lake.model.ids import FORKED, Collection, parse_id, tombstone_key
from h5lake.model.stored import as_dataset, as_group
from h5lake.model.typecheck import validate_type
from h5lake.model.types import client_type
from h5lake.service.access import (
    base_doc,
    bodies,
    new_id_for,
    open_object,
    parse_link_request,
)
from h5lake.service.context import Caller, Service
from h5lake.service.datasets.creation import answered_creation_properties, group_creation_properties
from h5lake.service.datasets.linked import linked_storage
from h5lake.service.documents import ENTRY_BYTES, Doc
from h5lake.service.domains import reclaim
from h5lake.service.domains.core import open_domain
from h5lake.service.objects import attribute_values as attrvalues
from h5lake.service.objects.attributes import ordered_attributes, parse_attributes, shown_value
from h5lake.service.objects.links import link_json, link_new_object, parse_links, path_of, place_new_object
from h5lake.service.values.appends import KEY as APPENDS_KEY
from h5lake.service.views import Domain
from h5lake.service.walk import walk_objects

_ADMIN_KEYS = ("acls", FORKED)
_NOT_SHOWN = frozenset(("links", "attributes", "stats", COMPACT_KEY, APPENDS_KEY) + _ADMIN_KEYS)


def object_json(
    domain: Domain, doc: Mapping[str, Any], *, include_links: bool = True, include_attrs: bool = False, create_order: bool = False
) -> Doc:
    """An object as ``GET /{collection}/{id}`` shows it; its attributes (``include_attrs``) by
    name, or by creation with ``create_order`` (the HDF5 REST VOL connector's H5Aopen_by_idx
    takes the n-th key of this object)."""
    out = {k: v for k, v in doc.items() if k not in _NOT_SHOWN}
    collection = parse_id(doc["id"])
    out["attributeCount"] = len(doc.get("attributes", {}))
    if collection is Collection.GROUPS:
        out["linkCount"] = len(doc.get("links", {}))
        if include_links:
            out["links"] = {name: link_json(link) for name, link in doc.get("links", {}).items()}
    if collection is Collection.DATASETS and "creationProperties" in out:
        out["creationProperties"] = answered_creation_properties(out["creationProperties"], out.get("type"))
    if "type" in out:
        out["type"] = client_type(out["type"])
    if include_attrs:
        attrs = ordered_attributes(doc.get("attributes", {}), create_order)
        out["attributes"] = {name: _shown_attribute(a) for name, a in attrs}
    out["domain"] = domain.path
    return out


def _shown_attribute(a: Doc) -> Doc:
    shown = {**attrvalues.shown_entry(a), "type": client_type(a.get("type"))}
    if "value" in a:
        shown["value"] = shown_value(a)
    return shown


async def shown_object(
    svc: Service, domain: Domain, doc: Doc, *, include_links: bool, include_attrs: bool, create_order: bool = False
) -> Doc:
    """`object_json`, on a pool thread when it shows many links or attributes: a group of
    200,000 links took ~0.1 s of the event loop to show (docs/security.md, "Wide objects")."""
    shown = len(doc.get("links", ())) if include_links else 0
    shown += len(doc.get("attributes", ())) if include_attrs else 0
    if include_attrs and any(attrvalues.is_outside(a) for a in doc.get("attributes", {}).values()):
        # the values h5pyd reads from here (it never asks for one attribute): read now
        # (past the request's limit together, the rest are shown without their values)
        doc = {**doc, "attributes": await attrvalues.loaded(svc, domain, doc["id"], doc["attributes"], leave_out=True)}
    return await svc.workers.cpu(
        lambda: object_json(domain, doc, include_links=include_links, include_attrs=include_attrs,
                            create_order=create_order),
        size=shown * ENTRY_BYTES,
    )


async def store_new_objects(
    svc: Service,
    caller: Caller,
    domain: Domain,
    docs: Sequence[Mapping[str, Any]],
    link_requests: Sequence[tuple[Mapping[str, Any], Any]],
    implicit: bool = False,
) -> None:
    """Create documents (create-only), then any ``link`` requests that came with them.

    A repeated POST of an identical object is accepted (h5pyd resends after a failed flush).
    Placements by ``h5path`` are checked before anything is created.
    """
    link_requests = [(doc, await place_new_object(svc, domain, link, implicit)) for doc, link in link_requests]

    # made together (one shared flush on the local store), each whole or absent after a crash
    await svc.docs.create_objects(domain.path, docs, _same_object, svc.workers.each)
    for doc, link in link_requests:
        await link_new_object(svc, caller, domain, doc, link)


def _same_object(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    skip = {"created", "lastModified", "attributes", "links", "stats"}
    return {k: v for k, v in a.items() if k not in skip} == {
        k: v for k, v in b.items() if k not in skip
    }


# --- groups -----------------------------------------------------------------------------------


async def create_groups(
    svc: Service, caller: Caller, domain_path: str, body: Any, implicit: bool = False
) -> tuple[list[Doc], bool]:
    items, many = bodies(body)
    domain = await open_domain(svc, caller, domain_path, Permission.CREATE)
    docs, links = [], []
    for item in items:
        if "type" in item:  # as HSDS: a committed datatype is made by POST /datatypes
            raise InvalidInput("a group has no type (POST /datatypes commits a datatype)")
        doc = as_group(base_doc(new_id_for(Collection.GROUPS, item, domain), domain, item))
        # links made with the group, as HSDS takes them: {name: link} as PUT .../links takes
        doc["links"] = parse_links(item["links"], domain) if item.get("links") is not None else {}
        doc["creationProperties"] = group_creation_properties(item.get("creationProperties"))
        doc["attributes"] = await parse_attributes(svc, domain, item.get("attributes"), doc["id"])
        docs.append(doc)
        link = parse_link_request(item)
        if link is not None:
            links.append((doc, link))
    await store_new_objects(svc, caller, domain, docs, links, implicit)
    return [object_json(domain, d, include_links=False) for d in docs], many


# --- committed datatypes ----------------------------------------------------------------------


async def create_datatypes(
    svc: Service, caller: Caller, domain_path: str, body: Any, implicit: bool = False
) -> tuple[list[Doc], bool]:
    items, many = bodies(body)
    domain = await open_domain(svc, caller, domain_path, Permission.CREATE)
    docs, links = [], []
    for item in items:
        if "type" not in item:
            raise InvalidInput("a datatype needs a type")
        doc = base_doc(new_id_for(Collection.DATATYPES, item, domain), domain, item)
        doc["type"] = validate_type(item["type"])
        props = item.get("creationProperties", {})
        doc["creationProperties"] = props if isinstance(props, dict) else {}
        doc["attributes"] = await parse_attributes(svc, domain, item.get("attributes"), doc["id"])
        docs.append(doc)
        link = parse_link_request(item)
        if link is not None:
            links.append((doc, link))
    await store_new_objects(svc, caller, domain, docs, links, implicit)
    return [object_json(domain, d) for d in docs], many


# --- any collection ---------------------------------------------------------------------------


async def get_object(
    svc: Service,
    caller: Caller,
    domain_path: str,
    obj_id: str,
    collection: Collection,
    *,
    include_links: bool,
    include_attrs: bool,
    verbose: bool = False,
    alias: bool = False,
    create_order: bool = False,
) -> Doc:
    domain, found = await open_object(svc, caller, domain_path, obj_id, Permission.READ, collection)
    out = await shown_object(svc, domain, found.doc, include_links=include_links, include_attrs=include_attrs,
                             create_order=create_order)
    if alias:  # HSDS's getalias=1: the paths that lead to the object (the first one found)
        path = await path_of(svc, domain, obj_id)
        out["alias"] = [] if path is None else [path]
    if verbose and collection is Collection.DATASETS:
        dataset = as_dataset(found.doc)
        stats = await dataset_stats(svc.store, domain.path, dataset)
        if stats["storage"] == "linked":  # a chunk table's entries, counted when it is short enough
            counted = await linked_storage(svc, domain, dataset, count=True)
            if "allocatedChunks" in counted:
                stats["allocatedChunkCount"], stats["allocatedSize"] = counted["allocatedChunks"], counted["allocatedBytes"]
        out["stats"] = stats
        # HSDS's keys, which h5pyd's Dataset.num_chunks and .allocated_size read
        out["num_chunks"] = stats["allocatedChunkCount"]
        out["allocated_size"] = stats["allocatedSize"]
    return out


async def delete_object(
    svc: Service, caller: Caller, domain_path: str, obj_id: str, collection: Collection
) -> None:
    domain, found = await open_object(svc, caller, domain_path, obj_id, Permission.DELETE, collection)
    if obj_id == domain.root:
        raise Forbidden("the root group cannot be deleted")
    await svc.store.put(tombstone_key(domain.path, obj_id), b"")
    await svc.docs.delete_object(domain.path, obj_id)
    if collection in (Collection.DATASETS, Collection.MAPS):
        svc.spawn(reclaim.reclaim_dataset_chunks(svc, domain.path, found.doc))
    if attrvalues.outside_refs(found.doc.get("attributes") or {}):
        svc.spawn(attrvalues.collect(svc, obj_id, None))


async def list_objects(
    svc: Service, caller: Caller, domain_path: str, collection: Collection, limit: int | None, marker: str | None
) -> list[str]:
    """Ids of the collection's objects reachable from the root (``GET /groups`` and kin)."""
    domain = await open_domain(svc, caller, domain_path, Permission.READ)
    ids = sorted(
        [
            doc["id"]
            async for doc in walk_objects(svc, domain)
            if parse_id(doc["id"]) is collection and doc["id"] != domain.root
        ]
    )
    if marker:
        ids = [i for i in ids if i > marker]
    return ids[:limit] if limit else ids
