"""Attributes of groups, datasets and committed datatypes.

Sizes (docs/security.md, "Attributes"): an object's attributes live in its document, which every
read of the object parses, so one attribute takes at most ``limits.max_attribute_size`` bytes as
stored (JSON) and an object's attributes together ``ATTRIBUTES_PER_OBJECT`` times that; larger
values belong in a dataset. A value is refused from its declared size before it is converted
when its type has a fixed size, else from its JSON text.

A PUT of an attribute that already exists with a different value replaces it. HSDS answers 409
unless ``replace=1`` is given, but h5pyd 1.0 never sends ``replace`` and re-sends an overwritten
attribute as a plain PUT, so a 409 would leave the client's file impossible to close; users of
the h5py API expect ``attrs[name] = value`` to overwrite. An identical PUT answers 200.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import Any, NoReturn

import orjson

from h5lake.errors import Gone, InvalidInput, NotFound, TooLarge
from h5lake.model.acl import Permission
from h5lake.model.fromjson import int_scalar, json_to_array
from h5lake.model.globs import check_pattern, matches
from h5lake.model.ids import Collection, parse_id, strip_collection_prefix
from h5lake.model.links import MAX_NAME_BYTES
from h5lake.model.shapes import SpaceClass, parse_space
from h5lake.model.types import (
    CharSet,
    TypeClass,
    client_type,
    empty_array,
    holds_region_reference,
    item_size,
    type_class,
)
from h5lake.model.values import array_to_bytes, array_to_json, bytes_to_array
from h5lake.service.access import client_timestamp, load_object, open_object, resolve_type, update_object
from h5lake.service.context import Caller, Service, now
from h5lake.service.documents import ENTRY_BYTES, Doc, PutOutcome, Unchanged, Versioned
from h5lake.service.domains import open_domain
from h5lake.service.views import Domain

ATTRIBUTES_PER_OBJECT = 4  # an object's attributes together: this many times the limit of one


def validate_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidInput("attribute name must be a non-empty string")
    if "\x00" in name:  # HDF5 keeps names as C strings: the file could not hold it
        raise InvalidInput(f"attribute name {name[:40]!r} may not contain a NUL character")
    if len(name.encode()) > MAX_NAME_BYTES:
        raise InvalidInput(f"attribute name is too long (at most {MAX_NAME_BYTES} bytes)")
    return name


async def parse_attribute(svc: Service, domain: Domain, body: Any, *, base64_values: bool = False) -> Doc:
    if not isinstance(body, dict):
        raise InvalidInput("an attribute must be a JSON object")
    if "type" not in body:
        raise InvalidInput("an attribute needs a type")
    type_json = await resolve_type(svc, domain, body["type"])
    space = parse_space(body.get("shape"))
    if space.maxdims is not None:
        raise InvalidInput("attributes cannot have maxdims")
    attr: Doc = {"type": type_json, "shape": space.to_json(), "created": client_timestamp(body, "created", now())}
    cset = body.get("nameCharSet")
    if cset is not None:  # the character set HDF5 records for the name (h5lake load/export)
        if cset not in (CharSet.ASCII.value, CharSet.UTF8.value):
            raise InvalidInput("nameCharSet must be H5T_CSET_ASCII or H5T_CSET_UTF8")
        attr["nameCharSet"] = cset
    if space.kind is SpaceClass.NULL:
        if body.get("value") is not None:
            raise InvalidInput("a null-space attribute has no value")
        attr["value"] = None
        return attr
    _check_declared_size(svc, body, type_json, space.dims)
    attr = _parse_value(attr, body, type_json, space.dims, base64_values)
    _check_stored_size(svc, attr)
    return attr


def _too_large(svc: Service, what: str, size: int) -> TooLarge:
    limit = svc.limits.max_attribute_size
    return TooLarge(
        f"{what} takes {size} bytes, over the limit of {limit} for one attribute (--max-attribute-bytes; "
        "every read of its object parses its attributes): store large values in a dataset"
    )


def _check_declared_size(svc: Service, body: Doc, type_json: Doc, dims: tuple[int, ...]) -> None:
    """Refuse a value larger than the limit before converting it: from its shape when its type
    has a fixed size, from its base64 text, else from its JSON text."""
    limit = svc.limits.max_attribute_size
    size = item_size(type_json)
    if size is not None:
        declared = math.prod(dims) * size
        if declared > limit:
            raise _too_large(svc, "the attribute's value", declared)
        return
    for key in ("value_base64", "value"):
        value = body.get(key)
        if isinstance(value, str) and len(value) > limit:
            raise _too_large(svc, "the attribute's value", len(value))
    if isinstance(body.get("value"), list) and len(orjson.dumps(body["value"])) > limit:
        raise _too_large(svc, "the attribute's value", len(orjson.dumps(body["value"])))


def _check_stored_size(svc: Service, attr: Doc) -> None:
    stored = len(orjson.dumps(attr))
    if stored > svc.limits.max_attribute_size:
        raise _too_large(svc, "the attribute as stored", stored)


def _parse_value(attr: Doc, body: Doc, type_json: Doc, dims: tuple[int, ...], base64_values: bool) -> Doc:
    """``attr`` with the value of ``body`` (JSON, or base64 bytes), checked against its type."""
    if "value" not in body and "value_base64" not in body:
        # HSDS keeps a null value; h5lake stores the type's zeros, which every reader can use
        attr["value"] = array_to_json(empty_array(type_json, dims), type_json)
        return attr
    encoded = body.get("value_base64")
    if encoded is None and (base64_values or body.get("encoding") == "base64"):
        encoded = body.get("value")
    if encoded is not None:
        if not isinstance(encoded, str):
            raise InvalidInput("a base64 value must be a string")
        try:
            raw = base64.b64decode(encoded, validate=True)
        except ValueError:  # binascii.Error, and non-ASCII text
            raise InvalidInput("value is not valid base64") from None
        arr = bytes_to_array(raw, type_json, dims)
        attr["value"] = array_to_json(arr, type_json)
        if not _json_is_exact(attr["value"], type_json, dims, raw):
            attr["value_base64"] = base64.b64encode(raw).decode("ascii")
        return attr
    value = int_scalar(body["value"], type_json) if not dims else None
    if value is None:
        value = array_to_json(json_to_array(body["value"], type_json, dims), type_json)
    attr["value"] = value
    return attr


def _json_is_exact(value: Any, type_json: Doc, dims: tuple[int, ...], raw: bytes) -> bool:
    """Whether the JSON ``value`` gives back exactly the bytes ``raw`` it was made from.

    Not so for bytes that are not UTF-8 in strings (a pickle in a fixed-length string, as hickle
    writes) and for NaN payloads: such an attribute keeps its bytes as ``value_base64`` beside
    the JSON value (which h5pyd reads), and its binary and base64 forms and exports use them.
    Only types with strings or floats can lose anything, so only those are checked.
    """
    if not _may_lose(type_json):
        return True
    try:
        return array_to_bytes(json_to_array(value, type_json, dims), type_json) == raw
    except InvalidInput:
        return False


def _may_lose(t: Doc) -> bool:
    match type_class(t):
        case TypeClass.STRING | TypeClass.FLOAT:
            return True
        case TypeClass.VLEN | TypeClass.ARRAY:
            return _may_lose(t["base"])
        case TypeClass.COMPOUND:
            return any(_may_lose(f["type"]) for f in t["fields"])
    return False


def _same(a: Doc, b: Doc) -> bool:
    keys = ("type", "shape", "value", "value_base64", "nameCharSet")
    return all(a.get(k) == b.get(k) for k in keys)


def _add_attributes(doc: Doc, new: dict[str, Doc], limit: int) -> Any:
    """Set the ``new`` attributes in ``doc``; ``limit``: the bytes its attributes may take."""
    attrs = doc.setdefault("attributes", {})
    changed = False
    for name, attr in new.items():
        existing = attrs.get(name)
        if existing is not None and _same(existing, attr):
            continue
        if existing is not None:
            attr = dict(attr, created=existing.get("created", attr["created"]))
        attrs[name] = attr
        changed = True
    if not changed:
        return Unchanged(PutOutcome.UNCHANGED)
    doc["lastModified"] = now()
    return PutOutcome.CREATED


def _total_within(limit: int) -> Callable[[Doc, int], None]:
    """The check of `_check_total` on a changed document whose serialization takes ``size``
    bytes: its attributes' serialization is a part of the document's, so a document within the
    limit needs no second serialization of them (a PUT's second largest cost at 250 attributes)."""

    def check(doc: Doc, size: int) -> None:
        if size > limit:
            _check_total(doc.get("attributes", {}), limit)

    return check


def _check_total(attrs: dict[str, Doc], limit: int) -> None:
    total = len(orjson.dumps(attrs))
    if total > limit:
        raise TooLarge(
            f"the object's attributes would take {total} bytes, over the limit of {limit} for one object "
            f"({ATTRIBUTES_PER_OBJECT} x --max-attribute-bytes; every read of the object parses them): "
            "store large values in a dataset"
        )


async def _put_attributes(svc: Service, domain: Domain, obj_id: str, new: dict[str, Doc]) -> PutOutcome:
    # reuse: _add_attributes sets whole attributes and lastModified (Documents.update)
    limit = ATTRIBUTES_PER_OBJECT * svc.limits.max_attribute_size
    _, outcome = await update_object(svc, domain, obj_id, lambda d: _add_attributes(d, new, limit), reuse=True, check=_total_within(limit))
    svc.catalog.note_object(domain.path, obj_id)
    return outcome


async def _parse_many(svc: Service, domain: Domain, body: Any, b64: bool) -> dict[str, Doc]:
    if not isinstance(body, dict):
        raise InvalidInput("attributes must be an object keyed by attribute name")
    names = [validate_name(n) for n in body]
    parsed = await svc.workers.map(names, lambda n: parse_attribute(svc, domain, body[n], base64_values=b64))
    return dict(zip(names, parsed))


async def parse_attributes(svc: Service, domain: Domain, body: Any) -> dict[str, Doc]:
    """The inline ``attributes`` of a POST that creates an object (absent: none), given as in
    ``PUT .../attributes``: an object keyed by name, or a list of objects with a ``name``."""
    if body is None:
        return {}
    if isinstance(body, list):
        if not all(isinstance(a, dict) and "name" in a for a in body):
            raise InvalidInput("a list of attributes needs a name in each")
        body = {a["name"]: a for a in body}
    parsed = await _parse_many(svc, domain, body, False)
    _check_total(parsed, ATTRIBUTES_PER_OBJECT * svc.limits.max_attribute_size)
    return parsed


async def put_attribute(
    svc: Service, caller: Caller, domain_path: str, obj_id: str, name: str, body: Any, *, b64: bool = False
) -> PutOutcome:
    parse_id(obj_id)
    domain = await open_domain(svc, caller, domain_path, Permission.CREATE)
    attr = await parse_attribute(svc, domain, body, base64_values=b64)
    return await _put_attributes(svc, domain, obj_id, {validate_name(name): attr})


async def put_attributes(
    svc: Service, caller: Caller, domain_path: str, obj_id: str, body: Any, *, b64: bool = False
) -> PutOutcome:
    """Batch: ``{"attributes": {...}}`` for this object, or ``{"obj_ids": {id: {"attributes": ...}}}``
    (h5pyd sends every object's attributes through the root group's URL)."""
    parse_id(obj_id)
    domain = await open_domain(svc, caller, domain_path, Permission.CREATE)
    if not isinstance(body, dict):
        raise InvalidInput("body must be a JSON object")
    per_object: dict[str, dict[str, Doc]] = {}
    if "obj_ids" in body:
        obj_ids = body["obj_ids"]
        if isinstance(obj_ids, list):
            shared = await _parse_many(svc, domain, body.get("attributes"), b64)
            for oid in obj_ids:
                per_object[strip_collection_prefix(oid)] = shared
        elif isinstance(obj_ids, dict):
            for oid, item in obj_ids.items():
                attrs = item.get("attributes") if isinstance(item, dict) else None
                per_object[strip_collection_prefix(oid)] = await _parse_many(svc, domain, attrs, b64)
        else:
            raise InvalidInput("obj_ids must be a list or an object")
    elif "attributes" in body:
        per_object[obj_id] = await _parse_many(svc, domain, body["attributes"], b64)
    elif "attr_names" in body:
        raise InvalidInput("use POST to read attributes by name")
    else:
        raise InvalidInput("body needs attributes or obj_ids")
    for oid in per_object:
        parse_id(oid)
    outcomes = await svc.workers.map(per_object.items(), lambda item: _put_attributes(svc, domain, *item))
    return PutOutcome.CREATED if PutOutcome.CREATED in outcomes else PutOutcome.UNCHANGED


def attribute_json(name: str, attr: Doc, *, include_data: bool = True, b64: bool = False) -> Doc:
    out: Doc = {"name": name, "type": client_type(attr["type"]), "shape": attr["shape"], "created": attr.get("created")}
    if "nameCharSet" in attr:
        out["nameCharSet"] = attr["nameCharSet"]
    out["lastModified"] = attr.get("created")
    if include_data:
        value = attr.get("value")
        if b64 and value is not None:
            out["value"] = base64.b64encode(attribute_bytes(attr)).decode()
            out["encoding"] = "base64"
        else:
            out["value"] = shown_value(attr)
            if "value_base64" in attr:
                out["value_base64"] = attr["value_base64"]
    return out


def shown_value(attr: Doc) -> Any:
    """An attribute's stored JSON value with its region references in h5json's object form,
    which h5pyd 1.0 reads: attributes stored before that form was answered keep them as base64
    blobs (docs/fidelity.md, "Region references")."""
    value, type_json, shape = attr.get("value"), attr.get("type"), attr.get("shape")
    if value is None or not isinstance(type_json, dict) or not holds_region_reference(type_json):
        return value
    dims = tuple(shape.get("dims") or ()) if isinstance(shape, dict) else ()
    if type_class(type_json) is TypeClass.REFERENCE and not _any_text(value, len(dims)):
        # region references stored as objects (or null) are answered as stored: made again,
        # each checked, a 1 MB attribute took ~0.1 s of the event loop at every read
        # (bench/region_attrs.py)
        return value
    try:
        return array_to_json(json_to_array(value, type_json, dims), type_json)
    except InvalidInput:  # as stored: shown as it is
        return value


def _any_text(value: Any, depth: int) -> bool:
    """True if an element of ``value`` (lists ``depth`` deep) is a string: a blob in base64."""
    if depth == 0:
        return isinstance(value, str)
    return isinstance(value, list) and any(_any_text(v, depth - 1) for v in value)


def attribute_bytes(attr: Doc) -> bytes:
    """The attribute's value in the binary form: its exact bytes when it was sent so and JSON
    could not hold them (``value_base64``), else made from the JSON value."""
    if "value_base64" in attr:
        return base64.b64decode(attr["value_base64"])
    dims = tuple(attr["shape"].get("dims", ()))
    return array_to_bytes(json_to_array(attr["value"], attr["type"], dims), attr["type"])


async def _attributes_of(svc: Service, caller: Caller, domain_path: str, obj_id: str) -> dict[str, Doc]:
    return (await _domain_and_attributes(svc, caller, domain_path, obj_id))[1]


async def _domain_and_attributes(
    svc: Service, caller: Caller, domain_path: str, obj_id: str
) -> tuple[Domain, dict[str, Doc]]:
    parse_id(obj_id)
    domain, found = await open_object(svc, caller, domain_path, obj_id, Permission.READ)
    attrs: dict[str, Doc] = found.doc.get("attributes", {})
    return domain, attrs


async def get_attribute(svc: Service, caller: Caller, domain_path: str, obj_id: str, name: str) -> Doc:
    domain, attrs = await _domain_and_attributes(svc, caller, domain_path, obj_id)
    if name not in attrs:
        _missing_attribute(svc, domain, obj_id, name)
    return attrs[name]


def _missing_attribute(svc: Service, domain: Domain, obj_id: str, name: str) -> NoReturn:
    """404 for an attribute the object lacks; 410 when this process deleted it (HSDS's answer,
    see service.deleted_names; a version's contents are not the head's)."""
    if _deleted_here(svc, domain, obj_id, "attribute", name):
        raise Gone(f"attribute {name!r} has been deleted")
    raise NotFound(f"attribute {name!r} not found")


def _deleted_here(svc: Service, domain: Domain, obj_id: str, kind: str, name: str) -> bool:
    """``name`` (an attribute or link of ``obj_id``) was deleted through this process.

    Deleting it again is a success, as HSDS answers (its data node skips a name it remembers
    deleting): h5pyd 1.0 keeps a deleted name marked and sends its delete again with the next
    flush that touches the object."""
    return domain.view is svc.head and svc.deleted_names.was_deleted(domain.path, obj_id, kind, name)


async def put_attribute_value(
    svc: Service, caller: Caller, domain_path: str, obj_id: str, name: str, body: Any = None, packed: bytes | None = None
) -> PutOutcome:
    """``PUT .../attributes/{name}/value`` (HSDS): a new value for an existing attribute, of
    its type and shape: packed bytes, or ``{"value": ...}`` (``"encoding": "base64"`` for
    packed bytes in base64; a null value stores zeros, as HSDS does)."""
    existing = await get_attribute(svc, caller, domain_path, obj_id, name)
    attr: Doc = {"type": existing["type"], "shape": existing["shape"]}
    if packed is not None:
        attr["value_base64"] = base64.b64encode(packed).decode("ascii")
    else:
        if not isinstance(body, dict) or "value" not in body:
            raise InvalidInput("body must be a JSON object with a value")
        if body["value"] is not None:
            attr["value_base64" if body.get("encoding") == "base64" else "value"] = body["value"]
    return await put_attribute(svc, caller, domain_path, obj_id, name, attr)


def ordered_attributes(attrs: dict[str, Doc], create_order: bool) -> list[tuple[str, Doc]]:
    """By name, or (``CreateOrder``) by creation time."""
    if create_order:
        return sorted(attrs.items(), key=lambda kv: (kv[1].get("created", 0), kv[0]))
    return sorted(attrs.items())


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
    attrs = await _attributes_of(svc, caller, domain_path, obj_id)
    if skip_missing and names is not None:
        names = [n for n in names if n in attrs]
    return await svc.workers.cpu(  # many attributes: on a pool thread (docs/security.md, "Tenth attack pass")
        _listed, attrs, names, include_data, create_order, marker, limit, b64, pattern, max_data_size,
        size=len(attrs) * ENTRY_BYTES,
    )


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
    if max_data_size <= 0 or attr.get("value") is None:
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
    return {
        oid: _listed(doc.get("attributes", {}), None, include_data, create_order, None, limit, b64, pattern, max_data_size)
        for oid, doc in found.items()
    }


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
        requests = {strip_collection_prefix(k): v for k, v in obj_ids.items()}
    elif isinstance(obj_ids, list):
        requests = {strip_collection_prefix(k): names for k in obj_ids}
    else:
        raise InvalidInput("obj_ids must be a list or an object")
    out: Doc = {}
    for oid, wanted in requests.items():
        attrs = await _attributes_of(svc, caller, domain_path, oid)
        chosen = sorted(attrs) if wanted is None else [n for n in wanted if n in attrs]
        out[oid] = [attribute_json(n, attrs[n], include_data=include_data, b64=b64) for n in chosen]
    return out


async def delete_attributes(svc: Service, caller: Caller, domain_path: str, obj_id: str, names: list[str]) -> None:
    parse_id(obj_id)
    if not names:
        raise InvalidInput("no attribute names given")
    domain = await open_domain(svc, caller, domain_path, Permission.DELETE)

    def remove(doc: Doc) -> Unchanged | None:
        attrs = doc.get("attributes", {})
        present = [n for n in names if n in attrs]
        for n in names:
            if n not in attrs and not _deleted_here(svc, domain, obj_id, "attribute", n):
                raise NotFound(f"attribute {n!r} not found")
        if not present:
            return Unchanged()
        for n in present:
            del attrs[n]
        doc["lastModified"] = now()
        return None

    await update_object(svc, domain, obj_id, remove, reuse=True)  # deletes entries only
    svc.deleted_names.note(domain.path, obj_id, "attribute", names)
    svc.catalog.note_object(domain.path, obj_id)


def binary_value(attr: Doc) -> bytes:
    if attr.get("value") is None:
        return b""
    return attribute_bytes(attr)
