"""Listing attributes (``GET .../attributes`` with and without data, HSDS's ``follow_links``
and the ``obj_ids`` batch): large values kept outside their documents (service.objects.attribute_values) are
read only for the attributes a listing shows with data."""

from __future__ import annotations

from typing import Any

from h5lake.errors import Gone, InvalidInput, NotFound
from h5lake.model.acl import Permission
from h5lake.model.globs import check_pattern, matches
from h5lake.model.ids import Collection, parse_id, strip_collection_prefix
from h5lake.service.access import load_object, open_object
from h5lake.service.context import Caller, Service
from h5lake.service.documents import ENTRY_BYTES, Doc, Versioned
from h5lake.service.objects import attribute_values as attrvalues
from h5lake.service.objects.attributes import (
    attribute_bytes,
    attribute_json,
    domain_and_attributes,
    ordered_attributes,
)
from h5lake.service.views import Domain


async def get_attributes(
    svc: Service,
    caller: Caller,
    domain_path: str,
    obj_id: str,
    *,
    names: list[str] | None = None,
    include_data: bool = False,
    create_order: bool = False,
    marker: str | None = None,
    limit: int | None = None,
    b64: bool = False,
    pattern: str | None = None,
    max_data_size: int = 0,
    skip_missing: bool = False,
) -> list[Doc]:
    """``skip_missing``: a name of ``names`` the object lacks is left out instead of 404 (the
    ``attr_names`` filter of a GET listing, which HSDS ignores: a listing of nothing is empty)."""
    domain, attrs = await domain_and_attributes(svc, caller, domain_path, obj_id)
    if skip_missing and names is not None:
        names = [n for n in names if n in attrs]
    if include_data:
        attrs = await _with_listed_values(svc, domain, obj_id, attrs, names, create_order, marker, limit, pattern,
                                          max_data_size, b64)
    return await svc.workers.cpu(  # many attributes: on a pool thread (docs/security.md, "Wide objects")
        _listed, attrs, names, include_data, create_order, marker, limit, b64, pattern, max_data_size,
        size=len(attrs) * ENTRY_BYTES,
    )


async def _with_listed_values(
    svc: Service, domain: Domain, obj_id: str, attrs: dict[str, Doc], names: list[str] | None, create_order: bool,
    marker: str | None, limit: int | None, pattern: str | None, max_data_size: int, b64: bool,
) -> dict[str, Doc]:
    """``attrs`` with the outside values a listing with data shows read (those it lists within
    ``max_data_size``); an error of the listing itself is left to `_listed`."""
    wanted = _listed_outside(attrs, names, create_order, marker, limit, pattern, max_data_size)
    if not wanted:
        return attrs
    return await attrvalues.loaded(svc, domain, obj_id, attrs, wanted, as_json=not b64)


def _listed_outside(
    attrs: dict[str, Doc], names: list[str] | None, create_order: bool, marker: str | None, limit: int | None,
    pattern: str | None, max_data_size: int,
) -> list[str]:
    """The attributes kept outside the document whose values a listing with data shows."""
    if not any(attrvalues.is_outside(a) for a in attrs.values()):
        return []
    try:
        shown = _listed({n: attrvalues.stored_entry(a) for n, a in attrs.items()}, names, False, create_order,
                        marker, limit, False, pattern)
    except (NotFound, InvalidInput):
        return []
    return [a["name"] for a in shown if attrvalues.is_outside(attrs[a["name"]]) and _fits(attrs[a["name"]], max_data_size)]


def _listed(
    attrs: dict[str, Doc],
    names: list[str] | None,
    include_data: bool,
    create_order: bool,
    marker: str | None,
    limit: int | None,
    b64: bool,
    pattern: str | None,
    max_data_size: int = 0,
) -> list[Doc]:
    """``max_data_size`` (HSDS): values of more bytes than that are left out (0: no limit)."""
    if pattern:
        check_pattern(pattern)
        attrs = {n: a for n, a in attrs.items() if matches(n, pattern)}
    if names is not None:
        missing = [n for n in names if n not in attrs]
        if missing:
            raise NotFound(f"attribute {missing[0]!r} not found")
        items = [(n, attrs[n]) for n in names]
    else:
        items = ordered_attributes(attrs, create_order)
        if marker is not None:
            keys = [k for k, _ in items]
            if marker not in keys:  # as HSDS: a marker must name an attribute of the listing
                raise NotFound(f"marker {marker!r} is not an attribute of the object")
            items = items[keys.index(marker) + 1 :]
        if limit is not None:
            items = items[:limit]
    return [
        attribute_json(n, a, include_data=include_data and _fits(a, max_data_size), b64=b64) for n, a in items
    ]


def _fits(attr: Doc, max_data_size: int) -> bool:
    if max_data_size <= 0:
        return True
    if attrvalues.is_outside(attr):
        return int(attr[attrvalues.OUTSIDE].get("size", 0)) <= max_data_size
    if attr.get("value") is None:
        return True
    return len(attribute_bytes(attr)) <= max_data_size


async def get_attributes_followed(
    svc: Service,
    caller: Caller,
    domain_path: str,
    group_id: str,
    *,
    include_data: bool = False,
    create_order: bool = False,
    limit: int | None = None,
    b64: bool = False,
    pattern: str | None = None,
    max_data_size: int = 0,
) -> Doc:
    """``GET /groups/{id}/attributes?follow_links=1`` (HSDS): the attributes of the group and of
    every object reached from it through hard links, keyed by object id."""
    parse_id(group_id, Collection.GROUPS)
    domain, start = await open_object(svc, caller, domain_path, group_id, Permission.READ)
    found: dict[str, Doc] = {group_id: start.doc}
    frontier = [start.doc]
    while frontier:
        targets = [
            link["id"]
            for doc in frontier
            for link in doc.get("links", {}).values()
            if link.get("id") and link["id"] not in found
        ]
        targets = list(dict.fromkeys(targets))
        loaded = await svc.workers.map(targets, lambda t: _existing(svc, domain, t))
        frontier = []
        for target, versioned in zip(targets, loaded):
            if versioned is None:
                continue  # a dangling link
            found[target] = versioned.doc
            frontier.append(versioned.doc)
    wanted = {oid: _listed_outside(doc.get("attributes", {}), None, create_order, None, limit, pattern, max_data_size)
              for oid, doc in found.items()} if include_data else {}
    attrvalues.check_asked(svc, sum(attrvalues.outside_size(found[oid].get("attributes", {}), names)
                                    for oid, names in wanted.items()))  # all objects' values together
    out: Doc = {}
    for oid, doc in found.items():
        attrs = doc.get("attributes", {})
        if wanted.get(oid):
            attrs = await attrvalues.loaded(svc, domain, oid, attrs, wanted[oid], as_json=not b64)
        out[oid] = _listed(attrs, None, include_data, create_order, None, limit, b64, pattern, max_data_size)
    return out


async def _existing(svc: Service, domain: Domain, obj_id: str) -> Versioned | None:
    try:
        return await load_object(svc, domain, obj_id)
    except (NotFound, Gone):
        return None


async def get_attributes_of_many(
    svc: Service,
    caller: Caller,
    domain_path: str,
    obj_ids: Any,
    names: list[str] | None,
    *,
    include_data: bool = True,
    b64: bool = False,
) -> Doc:
    """``POST /groups/{root}/attributes`` with ``obj_ids``: attributes of several objects."""
    if isinstance(obj_ids, dict):
        for listed in obj_ids.values():
            if listed is not None and not (isinstance(listed, list) and all(isinstance(n, str) for n in listed)):
                raise InvalidInput("obj_ids maps each object id to a list of attribute names")
        requests = {strip_collection_prefix(k): v for k, v in obj_ids.items()}
    elif isinstance(obj_ids, list):
        if not all(isinstance(k, str) for k in obj_ids):
            raise InvalidInput("obj_ids lists object ids (strings)")
        requests = {strip_collection_prefix(k): names for k in obj_ids}
    else:
        raise InvalidInput("obj_ids must be a list or an object")
    opened: dict[str, tuple[Domain, dict[str, Doc], list[str]]] = {}
    for oid, wanted in requests.items():
        domain, attrs = await domain_and_attributes(svc, caller, domain_path, oid)
        opened[oid] = domain, attrs, sorted(attrs) if wanted is None else [n for n in wanted if n in attrs]
    if include_data:  # all objects' values together
        attrvalues.check_asked(svc, sum(attrvalues.outside_size(attrs, chosen) for _, attrs, chosen in opened.values()))
    out: Doc = {}
    for oid, (domain, attrs, chosen) in opened.items():
        if include_data:
            attrs = await attrvalues.loaded(svc, domain, oid, attrs, chosen, as_json=not b64)
        out[oid] = [attribute_json(n, attrs[n], include_data=include_data, b64=b64) for n in chosen]
    return out
