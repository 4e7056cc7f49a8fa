"""``GET /`` and ``POST /``: a domain, or the objects its HDF5 paths lead to, each one use case."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from functools import partial
from typing import Any

from h5lake.errors import Gone, InvalidInput, NotFound
from h5lake.model.acl import Permission
from h5lake.model.ids import Collection, object_key, parse_id
from h5lake.model.types import client_type
from h5lake.service.context import Caller, Service
from h5lake.service.documents import ENTRY_BYTES, Doc, dumps
from h5lake.service.domains.core import domain_json, open_domain
from h5lake.service.domains.summary import domain_stats
from h5lake.service.objects import attribute_values as attrvalues
from h5lake.service.objects import listing
from h5lake.service.objects.core import object_json, shown_object
from h5lake.service.objects.links import OpenExternal, resolve_path_in
from h5lake.service.views import Domain, HeadView
from h5lake.service.walk import TooMany, linked_ids, walk_graph, walk_versioned
from h5lake.storage import LATER, Blob, Later

KEEP_SHOWN_BYTES = 256 * 1024
"""Descriptions of objects showing more entries than this estimates (``ENTRY_BYTES`` each) are
not remembered (`ByEtag`, ``Service.described``, keeps none above 256 KiB of JSON)."""


async def describe(
    svc: Service,
    caller: Caller,
    domain_path: str,
    *,
    h5path: str | None = None,
    include_links: bool = False,
    include_attrs: bool = False,
    verbose: bool = False,
    dn_ids: bool = False,
    follow_external_links: bool = False,
    follow_soft_links: bool = False,
    parent_id: str | None = None,
    objects: bool = False,
    objects_limit: int | None = None,
    objects_marker: str | None = None,
    objects_values: bool = False,
) -> Doc:
    """The domain (with its size summary when ``verbose``, every object's description in
    ``domain_objs`` when ``objects``, HSDS's ``getobjs``), or the object at ``h5path`` (which
    may be in another domain when ``follow_external_links``; its ``domain`` says which).
    With ``objects_limit`` or ``objects_marker``, ``domain_objs`` holds one page of the objects
    (`listing.objects_page`, at most ``objects_limit``, cut to `listing.MAX_PAGE`) and
    ``nextMarker`` when more follow; ``objects_values`` adds small datasets' values."""
    if parent_id is not None:
        parse_id(parent_id, Collection.GROUPS)
    domain = await open_domain(svc, caller, domain_path, Permission.READ)
    if h5path is not None:
        opener = _external_opener(svc, caller) if follow_external_links else None
        where, target = await resolve_path_in(
            svc, domain, h5path, start=parent_id, open_external=opener, follow_soft=follow_soft_links
        )
        found = await shown_object(svc, where, target, include_links=include_links, include_attrs=include_attrs)
        for name in ("key_type", "value_type"):  # a map's types, as clients see types
            if name in found:
                found[name] = client_type(found[name])
        return _with_class(found)
    out = domain_json(svc, domain)
    if dn_ids:
        out["dn_ids"] = []  # no data nodes: every h5lake process serves every request
    if verbose and not domain.is_folder:
        out.update(await domain_stats(svc, domain))
    if objects and not domain.is_folder and (objects_limit is not None or objects_marker is not None):
        limit = min(objects_limit or listing.MAX_PAGE, listing.MAX_PAGE)
        page = await listing.objects_page(svc, domain, limit, objects_marker)
        out["domain_objs"] = await _page_described(svc, domain, page.objects, objects_values)
        if page.next_marker is not None:
            out["nextMarker"] = page.next_marker
    elif objects and not domain.is_folder:
        objs = await _every_object(svc, domain, svc.domain_objects_limit)
        if objs is not None:
            out["domain_objs"] = objs
    return out


async def _every_object(svc: Service, domain: Domain, limit: int) -> Doc | None:
    """Every object of ``domain`` described by id, or None when it has more than ``limit``: the
    walk stops as soon as the links it has read name more. As HSDS (``domain_req_max_objects_limit``, 500), a large
    domain's open leaves ``domain_objs`` out; clients then GET the objects they use, instead of
    the server reading and the client parsing every object at every open (1,000 groups: ~70 ms
    of server CPU and more of h5pyd's, for a `list(g.keys())` that needs two small GETs)."""
    out: Doc = {}
    view = domain.view
    if isinstance(view, HeadView):
        read: dict[str, Blob] = {}  # documents read at once whose description is to be made
        walk: AsyncGenerator[_Listed, None] = walk_graph(
            svc, domain.require_root(), limit, partial(_listed, svc, domain, view, read), partial(_listed_at_once, svc, domain, view, read)
        )
        try:
            async for listed in walk:
                if listed.complete:
                    out[listed.id] = listed.shown
        except TooMany:
            return None
        finally:
            await walk.aclose()
        return out
    versioned = walk_versioned(svc, domain, limit)  # a version's view: documents as committed
    try:
        async for item in versioned:
            doc = item.doc
            shown = len(doc.get("links", ())) + len(doc.get("attributes", ()))
            if _complete(doc, head=False):  # a version's extents never change
                out[doc["id"]] = await svc.workers.cpu(_described, domain, doc, size=shown * ENTRY_BYTES)
    except TooMany:
        return None
    finally:
        await versioned.aclose()
    return out


async def _page_described(svc: Service, domain: Domain, docs: dict[str, Doc], values: bool) -> Doc:
    """A page's documents as ``domain_objs`` shows objects, small values added when asked."""
    shown = sum(len(d.get("links", ())) + len(d.get("attributes", ())) + 1 for d in docs.values())
    out: Doc = await svc.workers.cpu(
        lambda: {oid: _described(domain, doc) for oid, doc in docs.items()}, size=shown * ENTRY_BYTES
    )
    if values:
        small = [doc for doc in docs.values() if listing.small_value_size(doc) is not None]
        found = await svc.workers.map(small, lambda doc: listing.value_base64(svc, domain, doc))
        for doc, value in zip(small, found, strict=True):
            if value is not None:
                out[doc["id"]]["value_base64"] = value
    return out


@dataclass(frozen=True, slots=True)
class _Listed:
    """One object as a listing shows it, with what the walk goes on with."""

    id: str
    shown: Doc
    root: str | None
    targets: tuple[str, ...]
    complete: bool = True  # False: left out of the listing (`_complete`)


async def _listed(
    svc: Service, domain: Domain, view: HeadView, read: dict[str, Blob], obj_id: str
) -> tuple[_Listed, str | None, tuple[str, ...]] | None:
    """An object of the head read again (the store's freshness check: a stat and an attribute
    read of a document read lately), then described, or what was derived from its document's
    bytes (by ETag) at an earlier open: its description and the ids it links to, neither
    parsed nor derived again while the ETag is unchanged, so a reopen of an unchanged domain
    reads each document and derives nothing (the description is as fresh as a new one). A
    description depends on the document and the domain's path alone. One of many links or
    attributes is derived on a pool thread, as `objects.shown_object` does; one of more than
    ``KEEP_SHOWN_BYTES`` is not kept. A document `_listed_at_once` read in this walk (``read``)
    is not read again."""
    blob = read.pop(obj_id, None) or await view.stored(obj_id)
    if blob is None:
        return None
    key = domain.path + "\0" + obj_id
    found: _Listed | None = svc.described.get(key, blob.etag)
    if found is None:
        doc = await view.docs.parsed(blob.data, object_key(obj_id))
        shown = len(doc.get("links", ())) + len(doc.get("attributes", ()))
        description = await svc.workers.cpu(_described, domain, doc, size=shown * ENTRY_BYTES)
        found = _Listed(doc["id"], description, doc.get("root"), tuple(linked_ids(doc)), _complete(doc))
        if shown * ENTRY_BYTES <= KEEP_SHOWN_BYTES:  # a wide one is not kept: no serialization to size it
            svc.described.keep(key, blob.etag, found, len(dumps(description)))  # (its size, once per change)
    return found, found.root, found.targets


def _listed_at_once(
    svc: Service, domain: Domain, view: HeadView, read: dict[str, Blob], obj_id: str
) -> tuple[_Listed, str | None, tuple[str, ...]] | None | Later:
    """`_listed`'s answer when the store has the document without waiting and its ETag's
    description is remembered; else `LATER` (the document, when read, left in ``read`` for
    `_listed` to describe)."""
    blob = view.stored_at_once(obj_id)
    if blob is None or isinstance(blob, Later):
        return blob
    found: _Listed | None = svc.described.get(domain.path + "\0" + obj_id, blob.etag)
    if found is None:
        read[obj_id] = blob
        return LATER
    return found, found.root, found.targets


LEFT_OUT_OF_LISTINGS = ("root", "domain", "linkCount", "attributeCount")
"""Keys of an object's description a listing leaves out: the root and domain are the reply's
own, and the counts those of the ``links`` and ``attributes`` it holds (h5pyd 1.0 deletes them
from what it GETs). The ``id`` stays, as in HSDS's ``domain_objs``: h5pyd 0.24 builds the root
group of a file opened ``r`` from its entry and needs it."""


def _complete(doc: Doc, head: bool = True) -> bool:
    """Whether a listing shows the object: not when an attribute's value is kept outside its
    document (service.objects.attribute_values), which a listing does not read; h5pyd then GETs the object
    with ``include_attrs``, which does. Nor, in the head, a dataset whose extent may change
    (`resizable`): h5pyd 1.0 keeps what ``domain_objs`` held for as long as its file is open and
    answers ``Dataset.refresh()`` from it without asking, so a reader would never see another
    client's resize; left out, each refresh GETs the dataset (docs/api.md, "Live data")."""
    if head and resizable(doc):
        return False
    return not any(attrvalues.is_outside(a) for a in (doc.get("attributes") or {}).values())


def resizable(doc: Doc) -> bool:
    """Whether a stored dataset document's extent may still change: a maxdims unlike its dims."""
    shape = doc.get("shape")
    if not isinstance(shape, dict) or "maxdims" not in shape:
        return False
    return list(shape["maxdims"]) != list(shape.get("dims") or ())


def _described(domain: Domain, doc: Doc) -> Doc:
    out = object_json(domain, doc, include_links=True, include_attrs=True)
    for name in LEFT_OUT_OF_LISTINGS:
        out.pop(name, None)
    for name in ("key_type", "value_type"):  # a map's types, as clients see types
        if name in out:
            out[name] = client_type(out[name])
    return out


async def object_at_path(
    svc: Service,
    caller: Caller,
    domain_path: str,
    h5path: str,
    collection: Collection,
    *,
    start: str | None = None,
    include_links: bool = False,
    include_attrs: bool = False,
    follow_external_links: bool = False,
    follow_soft_links: bool = False,
) -> Doc:
    """``GET /groups/?h5path=/a/b`` (absolute), or ``GET /groups/{id}?h5path=b`` (relative to
    group ``start``); likewise for datasets and datatypes: 404 when the path leads to an object
    of another kind."""
    if start is None and not h5path.startswith("/"):
        raise InvalidInput("h5path must be absolute when no parent group id is given")
    if start is not None:
        parse_id(start, Collection.GROUPS)
    domain = await open_domain(svc, caller, domain_path, Permission.READ)
    opener = _external_opener(svc, caller) if follow_external_links else None
    where, target = await resolve_path_in(
        svc, domain, h5path, start=start, open_external=opener, follow_soft=follow_soft_links
    )
    if parse_id(target["id"]) is not collection:
        raise NotFound(f"{h5path} is not one of the domain's {collection.path}")
    return await shown_object(svc, where, target, include_links=include_links, include_attrs=include_attrs)


_CLASS = {Collection.GROUPS: "group", Collection.DATASETS: "dataset", Collection.DATATYPES: "datatype",
          Collection.MAPS: "map"}


def _with_class(out: Doc) -> Doc:
    """An object found by path says what it is (HSDS's ``class``): the client may not know."""
    out["class"] = _CLASS[parse_id(out["id"])]
    return out


def _external_opener(svc: Service, caller: Caller) -> OpenExternal:
    async def open_external(path: str) -> Domain:
        return await open_domain(svc, caller, path, Permission.READ)

    return open_external


async def resolve_paths(
    svc: Service,
    caller: Caller,
    domain_path: str,
    h5paths: Any,
    parent_id: str | None = None,
    *,
    follow_soft_links: bool = False,
    follow_external_links: bool = False,
) -> Doc:
    """The objects several paths lead to; a path that does not resolve is left out (HSDS
    answers 404 for the whole request instead), and when none does the answer is 404 as HSDS
    gives it: the HDF5 REST VOL connector resolves every path by a request of one path and
    takes any 2xx answer for a found object."""
    if not isinstance(h5paths, list):
        raise InvalidInput("body must be an object with an h5paths list")
    if parent_id is not None:
        parse_id(parent_id, Collection.GROUPS)
    domain = await open_domain(svc, caller, domain_path, Permission.READ)
    opener = _external_opener(svc, caller) if follow_external_links else None
    found: Doc = {}
    for h5path in h5paths:
        if not isinstance(h5path, str):
            raise InvalidInput("h5paths must be strings")
        try:
            where, target = await resolve_path_in(
                svc, domain, h5path, start=parent_id, open_external=opener, follow_soft=follow_soft_links
            )
        except (NotFound, Gone):
            continue
        found[h5path] = _with_class(object_json(where, target, include_links=False, include_attrs=False))
    if h5paths and not found:
        raise NotFound("no object found at " + (repr(h5paths[0]) if len(h5paths) == 1 else "any of the paths"))
    return found
