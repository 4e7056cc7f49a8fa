"""Attributes of groups, datasets and committed datatypes.

Sizes (docs/security.md, "Attributes"): an object's attributes live in its document, which every
read of the object parses, so an attribute taking more than ``limits.max_attribute_size`` bytes
as stored (JSON) keeps its value outside the document, in an object of its own
(service.objects.attribute_values), read only when asked for; one attribute's value takes at most what one
request carries (`attrvalues.one_attribute_limit`). Attributes holding references stay inline
(a fork renames the ids in them), so for them the inline size is the limit. The attributes kept
in a document take at most ``ATTRIBUTES_PER_OBJECT`` times the inline size together. A value is
refused from its declared size before it is converted when its type has a fixed size, else from
its JSON text.

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

import numpy as np
import orjson

from h5lake.errors import Gone, InvalidInput, NotFound, TooLarge
from h5lake.model.acl import Permission
from h5lake.model.directjson import direct_json
from h5lake.model.fromjson import int_scalar, json_to_array
from h5lake.model.ids import parse_id, strip_collection_prefix
from h5lake.model.links import MAX_NAME_BYTES
from h5lake.model.shapes import SpaceClass, parse_space
from h5lake.model.stored import ObjectDoc
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
from h5lake.service.access import client_timestamp, open_object, resolve_type, update_object
from h5lake.service.context import Caller, Service, now
from h5lake.service.documents import Doc, PutOutcome, Unchanged
from h5lake.service.domains.core import open_domain
from h5lake.service.objects import attribute_values as attrvalues
from h5lake.service.views import Domain

ATTRIBUTES_PER_OBJECT = 4  # an object's attributes together: this many times the limit of one
SEQUENTIAL_ATTRIBUTES = 8  # attributes of one request parsed one after another; more: concurrently (bounded)


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
    declared = _declared_size(body, type_json, space.dims)
    limit = attrvalues.one_attribute_limit(svc)
    if declared > limit:
        raise TooLarge(f"the attribute's value takes {declared} bytes, over the limit of {limit} for one attribute "
                       "(what one request carries: --max-json-bytes, --max-request-bytes): store it in a dataset")
    inline = not _has_reference(type_json)  # a reference stays in the document: a fork renames it
    if inline and declared > svc.limits.max_attribute_size:
        attr[attrvalues.PACKED] = await svc.workers.cpu(
            _packed_value, body, type_json, space.dims, base64_values, size=declared)
        return attr
    if declared > svc.limits.max_attribute_size:
        raise _too_large(svc, "the attribute's value", declared)
    attr = _parse_value(attr, body, type_json, space.dims, base64_values)
    stored = len(orjson.dumps(attr))
    if stored > svc.limits.max_attribute_size:
        if not inline:
            raise _too_large(svc, "the attribute as stored", stored)
        packed = attribute_bytes(attr)
        attr = {k: v for k, v in attr.items() if k not in ("value", "value_base64")}
        attr[attrvalues.PACKED] = packed
    return attr


def _too_large(svc: Service, what: str, size: int) -> TooLarge:
    limit = svc.limits.max_attribute_size
    return TooLarge(
        f"{what} takes {size} bytes, over the limit of {limit} for one attribute holding references "
        "(--max-attribute-bytes; such an attribute is kept in its object's document, which every read of the "
        "object parses): store large values in a dataset"
    )


def _has_reference(t: Doc) -> bool:
    match type_class(t):
        case TypeClass.REFERENCE:
            return True
        case TypeClass.ARRAY | TypeClass.VLEN:
            return _has_reference(t["base"])
        case TypeClass.COMPOUND:
            return any(_has_reference(f["type"]) for f in t["fields"])
    return False


def _declared_size(body: Doc, type_json: Doc, dims: tuple[int, ...]) -> int:
    """A value's size before it is converted: from its shape when its type has a fixed size,
    else from its base64 or JSON text."""
    size = item_size(type_json)
    if size is not None:
        return math.prod(dims) * size
    packed = body.get(attrvalues.PACKED)
    if isinstance(packed, bytes):
        return len(packed)
    found = 0
    for key in ("value_base64", "value"):
        value = body.get(key)
        if isinstance(value, str):
            found = max(found, len(value))
    if isinstance(body.get("value"), list):
        found = max(found, len(orjson.dumps(body["value"])))
    return found


def _packed_value(body: Doc, type_json: Doc, dims: tuple[int, ...], base64_values: bool) -> bytes:
    """A large value's bytes (the binary form), checked against its type and shape."""
    if not _has_value(body):
        return array_to_bytes(empty_array(type_json, dims), type_json)
    raw = _raw_bytes(body, base64_values)
    if raw is not None:
        bytes_to_array(raw, type_json, dims)  # the right size for the type and shape
        return raw
    return array_to_bytes(json_to_array(body["value"], type_json, dims), type_json)


def _has_value(body: Doc) -> bool:
    return "value" in body or "value_base64" in body or attrvalues.PACKED in body


def _raw_bytes(body: Doc, base64_values: bool) -> bytes | None:
    """The value's bytes when sent so: a binary body (`attrvalues.PACKED`, set by the routes,
    never by JSON) or base64; None for a JSON value."""
    packed = body.get(attrvalues.PACKED)
    if isinstance(packed, bytes):
        return packed
    encoded = body.get("value_base64")
    if encoded is None and (base64_values or body.get("encoding") == "base64"):
        encoded = body.get("value")
    if encoded is None:
        return None
    if not isinstance(encoded, str):
        raise InvalidInput("a base64 value must be a string")
    try:
        return base64.b64decode(encoded, validate=True)
    except ValueError:  # binascii.Error, and non-ASCII text
        raise InvalidInput("value is not valid base64") from None


def _parse_value(attr: Doc, body: Doc, type_json: Doc, dims: tuple[int, ...], base64_values: bool) -> Doc:
    """``attr`` with the value of ``body`` (JSON, or bytes: binary or base64), checked against its type."""
    if not _has_value(body):
        # HSDS keeps a null value; h5lake stores the type's zeros, which every reader can use
        attr["value"] = array_to_json(empty_array(type_json, dims), type_json)
        return attr
    raw = _raw_bytes(body, base64_values)
    if raw is not None:
        direct = direct_json(raw, type_json, dims)
        if direct is not None:  # a scalar ASCII string or finite number: its JSON, exactly, without numpy
            attr["value"] = direct
            return attr
        arr = bytes_to_array(raw, type_json, dims)
        attr["value"] = array_to_json(arr, type_json)
        if not _finite_floats(arr, type_json) and not _json_is_exact(attr["value"], type_json, dims, raw):
            attr["value_base64"] = base64.b64encode(raw).decode("ascii")
        return attr
    value = int_scalar(body["value"], type_json) if not dims else None
    if value is None:
        value = array_to_json(json_to_array(body["value"], type_json, dims), type_json)
    attr["value"] = value
    return attr


def _finite_floats(arr: Any, type_json: Doc) -> bool:
    """Whether ``arr`` holds only finite numbers of a plain float type: their JSON (the shortest
    text that reads back as the same double) gives back the same bytes, so nothing to check."""
    return type_class(type_json) is TypeClass.FLOAT and bool(np.isfinite(arr).all())


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
    return all(a.get(k) == b.get(k) for k in keys) and attrvalues.content(a) == attrvalues.content(b)


def _add_attributes(doc: ObjectDoc, new: dict[str, Doc], dropped: list[Doc]) -> Any:
    """Set the ``new`` attributes in ``doc``; ``dropped`` gets the outside values no longer named."""
    attrs = doc.setdefault("attributes", {})
    changed = False
    dropped.clear()
    for name, attr in new.items():
        existing = attrs.get(name)
        if existing is not None and _same(existing, attr):
            if attrvalues.is_outside(attr):
                dropped.append(attr[attrvalues.OUTSIDE])  # the one just stored: not needed
            continue
        if existing is not None:
            attr = dict(attr, created=existing.get("created", attr["created"]))
            if attrvalues.is_outside(existing):
                dropped.append(existing[attrvalues.OUTSIDE])
        attrs[name] = attr
        changed = True
    if not changed:
        return Unchanged(PutOutcome.UNCHANGED)
    doc["lastModified"] = now()
    return PutOutcome.CREATED


def _total_within(limit: int) -> Callable[[ObjectDoc, int], None]:
    """The check of `_check_total` on a changed document whose serialization takes ``size``
    bytes: its attributes' serialization is a part of the document's, so a document within the
    limit needs no second serialization of them (a PUT's second largest cost at 250 attributes)."""

    def check(doc: ObjectDoc, size: int) -> None:
        if size > limit:
            _check_total(doc.get("attributes", {}), limit)

    return check


class _ObjectFull(TooLarge):
    """The attributes kept in an object's document would pass their limit together."""


def _check_total(attrs: dict[str, Doc], limit: int) -> None:
    total = len(orjson.dumps(attrs))
    if total > limit:
        raise _ObjectFull(
            f"the object's attributes would take {total} bytes, over the limit of {limit} for one object "
            f"({ATTRIBUTES_PER_OBJECT} x --max-attribute-bytes; every read of the object parses them): "
            "store large values in a dataset"
        )


def _moved_outside(new: dict[str, Doc]) -> dict[str, Doc] | None:
    """``new`` with every value that may live outside the document moved there (None: none
    may): what an object whose document holds its fill of attributes gets."""
    moved, out = False, {}
    for name, attr in new.items():
        if attrvalues.PACKED in attr or attr.get("value") is None or _has_reference(attr["type"]):
            out[name] = attr
            continue
        out[name] = {k: v for k, v in attr.items() if k not in ("value", "value_base64")}
        out[name][attrvalues.PACKED] = attribute_bytes(attr)
        moved = True
    return out if moved else None


async def _put_attributes(svc: Service, domain: Domain, obj_id: str, new: dict[str, Doc]) -> PutOutcome:
    """Set ``new`` in the object's document; when the attributes kept there would pass their
    limit together, with the new values kept outside it."""
    try:
        return await _put_once(svc, domain, obj_id, new)
    except _ObjectFull:
        moved = _moved_outside(new)
        if moved is None:
            raise
        return await _put_once(svc, domain, obj_id, moved)


async def _put_once(svc: Service, domain: Domain, obj_id: str, new: dict[str, Doc]) -> PutOutcome:
    # reuse: _add_attributes sets whole attributes and lastModified (Documents.update)
    limit = ATTRIBUTES_PER_OBJECT * svc.limits.max_attribute_size
    stored = [a for a in new.values() if attrvalues.PACKED in a]
    if stored:  # the values first, durable, then the document that names them
        refs = await svc.workers.map(stored, lambda a: attrvalues.store(svc, obj_id, a[attrvalues.PACKED]))
        refs_by_id = {id(a): r for a, r in zip(stored, refs)}
        new = {n: ({k: v for k, v in a.items() if k != attrvalues.PACKED} | {attrvalues.OUTSIDE: refs_by_id[id(a)]}
                   if id(a) in refs_by_id else a) for n, a in new.items()}
    dropped: list[Doc] = []
    try:
        doc, outcome = await update_object(svc, domain, obj_id, lambda d: _add_attributes(d, new, dropped), reuse=True,
                                           check=_total_within(limit))
    except (NotFound, Gone, InvalidInput, TooLarge):
        if stored:  # named by no document: delete now rather than leave to the collection
            await attrvalues.drop(svc, obj_id, [a[attrvalues.OUTSIDE] for a in new.values() if attrvalues.is_outside(a)])
        raise
    if dropped:
        await attrvalues.drop(svc, obj_id, dropped)
    if stored:
        svc.spawn(attrvalues.collect(svc, obj_id, doc))
    return outcome


async def _parse_many(svc: Service, domain: Domain, body: Any, b64: bool) -> dict[str, Doc]:
    if not isinstance(body, dict):
        raise InvalidInput("attributes must be an object keyed by attribute name")
    names = [validate_name(n) for n in body]
    if len(names) <= SEQUENTIAL_ATTRIBUTES:  # an object's few: a task each costs more than their parsing
        return {n: await parse_attribute(svc, domain, body[n], base64_values=b64) for n in names}
    parsed = await svc.workers.map(names, lambda n: parse_attribute(svc, domain, body[n], base64_values=b64))
    return dict(zip(names, parsed))


async def parse_attributes(svc: Service, domain: Domain, body: Any, obj_id: str) -> dict[str, Doc]:
    """The inline ``attributes`` of a POST that creates object ``obj_id`` (absent: none), given
    as in ``PUT .../attributes``: an object keyed by name, or a list of objects with a ``name``.
    Large values are stored at once (before the document that names them)."""
    if body is None:
        return {}
    if isinstance(body, list):
        if not all(isinstance(a, dict) and "name" in a for a in body):
            raise InvalidInput("a list of attributes needs a name in each")
        body = {a["name"]: a for a in body}
    parsed = await _parse_many(svc, domain, body, False)
    limit = ATTRIBUTES_PER_OBJECT * svc.limits.max_attribute_size
    try:
        _check_total({n: a for n, a in parsed.items() if attrvalues.PACKED not in a}, limit)
    except _ObjectFull:
        parsed = _moved_outside(parsed) or parsed
    for name, attr in parsed.items():
        if attrvalues.PACKED in attr:
            ref = await attrvalues.store(svc, obj_id, attr.pop(attrvalues.PACKED))
            parsed[name] = {**attr, attrvalues.OUTSIDE: ref}
    _check_total(parsed, limit)
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
    """``attr`` as a reply shows it; an outside value (service.objects.attribute_values) must have been read
    (`attrvalues.loaded`) when ``include_data``."""
    out: Doc = {"name": name, "type": client_type(attr["type"]), "shape": attr["shape"], "created": attr.get("created")}
    if "nameCharSet" in attr:
        out["nameCharSet"] = attr["nameCharSet"]
    out["lastModified"] = attr.get("created")
    if include_data:
        value = attr.get("value")
        if b64 and (value is not None or attrvalues.PACKED in attr):
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
    could not hold them (``value_base64``), else made from the JSON value; an outside value's
    bytes once read."""
    if attrvalues.PACKED in attr:
        return bytes(attr[attrvalues.PACKED])
    if "value_base64" in attr:
        return base64.b64decode(attr["value_base64"])
    dims = tuple(attr["shape"].get("dims", ()))
    return array_to_bytes(json_to_array(attr["value"], attr["type"], dims), attr["type"])


async def domain_and_attributes(
    svc: Service, caller: Caller, domain_path: str, obj_id: str
) -> tuple[Domain, dict[str, Doc]]:
    parse_id(obj_id)
    domain, found = await open_object(svc, caller, domain_path, obj_id, Permission.READ)
    attrs: dict[str, Doc] = found.doc.get("attributes", {})
    return domain, attrs


async def get_attribute(
    svc: Service, caller: Caller, domain_path: str, obj_id: str, name: str, *, value: bool = True, as_json: bool = True,
    leave_out: bool = False,
) -> Doc:
    """``value``: read an outside value (its bytes; ``as_json``: its JSON value too; ``leave_out``:
    not when its JSON passes the reply limit, see `attrvalues.loaded`)."""
    domain, attrs = await domain_and_attributes(svc, caller, domain_path, obj_id)
    if name not in attrs:
        _missing_attribute(svc, domain, obj_id, name)
    if value and attrvalues.is_outside(attrs[name]):
        attrs = await attrvalues.loaded(svc, domain, obj_id, attrs, [name], as_json=as_json, leave_out=leave_out)
    return attrs[name]


def _missing_attribute(svc: Service, domain: Domain, obj_id: str, name: str) -> NoReturn:
    """404 for an attribute the object lacks; 410 when this process deleted it (HSDS's answer,
    see service.objects.deleted_names; a version's contents are not the head's)."""
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
    existing = await get_attribute(svc, caller, domain_path, obj_id, name, value=False)
    attr: Doc = {"type": existing["type"], "shape": existing["shape"]}
    if "nameCharSet" in existing:  # the value changes, not the name
        attr["nameCharSet"] = existing["nameCharSet"]
    if packed is not None:
        attr[attrvalues.PACKED] = packed
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


async def delete_attributes(svc: Service, caller: Caller, domain_path: str, obj_id: str, names: list[str]) -> None:
    parse_id(obj_id)
    if not names:
        raise InvalidInput("no attribute names given")
    domain = await open_domain(svc, caller, domain_path, Permission.DELETE)

    dropped: list[Doc] = []

    def remove(doc: ObjectDoc) -> Unchanged | None:
        attrs = doc.get("attributes", {})
        present = [n for n in names if n in attrs]
        dropped[:] = [attrs[n][attrvalues.OUTSIDE] for n in present if attrvalues.is_outside(attrs[n])]
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
    if dropped:
        await attrvalues.drop(svc, obj_id, dropped)


def has_value(attr: Doc) -> bool:
    """Whether ``attr`` has a value to answer (a null-space one has none; an outside one read)."""
    return attr.get("value") is not None or attrvalues.PACKED in attr


def binary_value(attr: Doc) -> bytes:
    if not has_value(attr):
        return b""
    return attribute_bytes(attr)
