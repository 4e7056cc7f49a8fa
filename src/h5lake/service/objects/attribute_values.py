"""Large attribute values, kept outside their object's document (docs/storage.md, "Large
attributes").

An attribute whose value takes more than ``--max-attribute-bytes`` is stored as its packed
bytes (the binary form of ``GET .../value``) in an object of its own,
``<object key>.attrs/<uuid hex>``, and its entry in the document holds only
``{"valueObject": {"key": <uuid hex>, "sha256": ..., "size": n}}`` beside its type and shape.
So opening, listing links of or reading other attributes of the object parse a small document;
the value is read only when asked for (one attribute, a listing with data, ``include_attrs``).

Writes: the value object is put first (durable), then the document is updated conditionally;
a crash between the two leaves an object no document names (invisible: reads go through the
document), which a later large write to the same object or its deletion collects once it is
older than `GRACE` (a younger one may be a write whose document update is under way). A
replaced or deleted value is deleted after the update that dropped it. Each write has its own
key, so no two attributes (or writers) ever share one and a delete never takes a value another
document names.

Versions: a commit stores each value as a content-store blob (``<sha256>.blob``) and lists the
hashes in the object's manifest (``values``), which gc keeps; a version reads the blob, and so
does the head when its own key is missing (a fork's objects, whose ids are new; a restored
document, whose value the restore copies back).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

from h5lake.errors import DataCorruption, StorageError, TooLarge
from h5lake.model.ids import attribute_value_key, attribute_values_prefix, blob_key
from h5lake.model.values import array_to_json, bytes_to_array, json_size_estimate
from h5lake.service.context import Service
from h5lake.service.documents import Doc
from h5lake.service.views import Domain
from h5lake.versions.content import sha256

log = logging.getLogger(__name__)

OUTSIDE = "valueObject"  # an attribute's entry: where its value is kept
PACKED = "_packed"  # in memory only: a value's bytes, between parsing and storing, or once read
GRACE = 3600.0  # seconds an unnamed value object is left alone (a write may be naming it)


def one_attribute_limit(svc: Service) -> int:
    """The most bytes one attribute's value may take: what one request may carry (a JSON body
    or a JSON value reply, ``--max-json-bytes``, and at most ``--max-request-bytes``)."""
    return min(svc.limits.max_json_size, svc.limits.max_request_size)


def is_outside(attr: Any) -> bool:
    return isinstance(attr, dict) and isinstance(attr.get(OUTSIDE), dict)


def outside_refs(attrs: dict[str, Doc]) -> dict[str, Doc]:
    return {name: a[OUTSIDE] for name, a in attrs.items() if is_outside(a)}


def content(attr: Doc) -> Any:
    """What makes two values equal: the bytes' hash and size, not the key."""
    ref = attr.get(OUTSIDE)
    return None if not isinstance(ref, dict) else (ref.get("sha256"), ref.get("size"))


async def store(svc: Service, obj_id: str, packed: bytes) -> Doc:
    """Put a value object (durable on return); its reference for the document."""
    token = uuid.uuid4().hex
    digest = await svc.workers.cpu(sha256, packed, size=len(packed))
    await svc.store.put(attribute_value_key(obj_id, token), packed)
    return {"key": token, "sha256": digest, "size": len(packed)}


async def drop(svc: Service, obj_id: str, refs: list[Doc]) -> None:
    """Delete value objects no document names any more (replaced, deleted, or not needed)."""
    for ref in refs:
        try:
            await svc.store.delete(attribute_value_key(obj_id, ref["key"]))
        except StorageError:  # left for the collection
            log.warning("could not delete attribute value %s of %s", ref.get("key"), obj_id)


async def collect(svc: Service, obj_id: str, doc: Mapping[str, Any] | None, grace: float = GRACE) -> None:
    """Delete the object's value objects its document ``doc`` does not name (all of them when
    the object is gone: ``doc`` None) and that are older than ``grace`` (all, when gone)."""
    try:
        named = {ref["key"] for ref in outside_refs((doc or {}).get("attributes") or {}).values()}
        prefix = attribute_values_prefix(obj_id)
        keys = [k async for k in svc.store.list(prefix) if k[len(prefix):] not in named]
        now = time.time()
        for key in keys:
            if doc is not None:
                info = await svc.store.head(key)
                if info is None or now - info.last_modified < grace:
                    continue
            await svc.store.delete(key)
    except Exception:  # background clean-up: log, never fail the request
        log.exception("collecting attribute values of %s failed", obj_id)


async def read(svc: Service, domain: Domain, obj_id: str, ref: Doc) -> bytes:
    """A value's bytes: the head's own object, else the content store's blob (versions, forks,
    restores); a version the other way round."""
    keys = [attribute_value_key(obj_id, ref["key"]), blob_key(ref["sha256"])]
    if domain.view is not svc.head:
        keys.reverse()
    for key in keys:
        found = await svc.store.get(key)
        if found is not None:
            return bytes(found.data)
    raise DataCorruption(f"the value of an attribute of {obj_id} is missing from the store ({keys[0]})")


async def loaded(
    svc: Service, domain: Domain, obj_id: str, attrs: dict[str, Doc], names: Any = None, *, as_json: bool = True,
    leave_out: bool = False,
) -> dict[str, Doc]:
    """``attrs`` with the outside values of ``names`` (default: all) read: each gets its bytes
    (`PACKED`) and, ``as_json``, its JSON ``value``. The values read by one request take at most
    the one-attribute limit together (a request reading several objects' checks their sum first,
    `check_asked`), and a JSON one at most ``--max-json-bytes`` as text: past
    that 413, or (``leave_out``: an object's description) the value is left out."""
    wanted = [n for n in (attrs if names is None else names) if is_outside(attrs.get(n))]
    if not wanted:
        return attrs
    limit = one_attribute_limit(svc)
    if not leave_out:
        check_asked(svc, outside_size(attrs, wanted))
    out = dict(attrs)
    budget = limit
    for name in wanted:
        attr = attrs[name]
        budget -= int(attr[OUTSIDE].get("size", 0))
        if budget < 0:
            continue  # leave_out: shown without its value
        packed = await read(svc, domain, obj_id, attr[OUTSIDE])
        try:
            value = await svc.workers.cpu(_as_json, svc, name, attr, packed, size=len(packed)) if as_json else None
        except TooLarge:
            if not leave_out:
                raise
            continue
        out[name] = {**attr, PACKED: packed, "value": value}
    return out


def outside_size(attrs: dict[str, Doc], names: Any = None) -> int:
    """The bytes the outside values of ``names`` (default: all) of ``attrs`` take."""
    return sum(int(attrs[n][OUTSIDE].get("size", 0)) for n in (attrs if names is None else names)
               if is_outside(attrs.get(n)))


def check_asked(svc: Service, total: int) -> None:
    """413 when the outside values one request asks for (of one object or of several) take
    ``total`` bytes, past the one-attribute limit."""
    limit = one_attribute_limit(svc)
    if total > limit:
        raise TooLarge(f"the attribute values asked for take {total} bytes, over the limit of {limit} for one "
                       "request (--max-json-bytes, --max-request-bytes): read them one at a time "
                       "(GET .../attributes/{name}/value, binary), or leave large ones out with max_data_size")


def _as_json(svc: Service, name: str, attr: Doc, packed: bytes) -> Any:
    dims = tuple((attr.get("shape") or {}).get("dims") or ())
    arr = bytes_to_array(packed, attr["type"], dims)
    limit = svc.limits.max_json_size
    estimate = json_size_estimate(arr, limit)
    if estimate > limit:
        raise TooLarge(f"attribute {name!r} is about {estimate} bytes as JSON, over the limit of {limit} "
                       "(--max-json-bytes): read it in binary (Accept: application/octet-stream) or base64")
    return array_to_json(arr, attr["type"])


def stored_entry(attr: Doc) -> Doc:
    """An attribute's entry as a document keeps it: no bytes, no value read for a reply."""
    if PACKED not in attr:
        return attr
    out = {k: v for k, v in attr.items() if k != PACKED}
    if is_outside(out):
        out.pop("value", None)
    return out


def shown_entry(attr: Doc) -> Doc:
    """An attribute's entry as a reply shows it: neither the bytes nor where they are kept."""
    return {k: v for k, v in attr.items() if k not in (PACKED, OUTSIDE)}


async def commit_values(svc: Service, obj_id: str, doc: Doc) -> list[str]:
    """For a commit: store every outside value of ``doc`` as a content-store blob; their hashes."""
    shas: list[str] = []
    for ref in outside_refs(doc.get("attributes") or {}).values():
        key = attribute_value_key(obj_id, ref["key"])
        found = await svc.store.get(key)
        if found is not None:
            await svc.cas.copy_blob(key, found.etag, bytes(found.data), ref["sha256"])
        # else a fork's value (its source's blob), or one replaced since ``doc`` was read: a value
        # is deleted only after the update that stops naming it, so the commit's check finds the
        # document changed and takes it again
        shas.append(ref["sha256"])
    return sorted(set(shas))


async def restore_values(svc: Service, obj_id: str, doc: Doc) -> None:
    """For a restore: give the head's document its values back from the content store."""
    for ref in outside_refs(doc.get("attributes") or {}).values():
        key = attribute_value_key(obj_id, ref["key"])
        if await svc.store.head(key) is not None:
            continue
        blob = await svc.store.get(blob_key(ref["sha256"]))
        if blob is not None:
            await svc.store.put(key, bytes(blob.data))
