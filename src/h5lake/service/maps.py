"""HDF5 Map objects: create, show and delete maps, and put, get, delete and list their pairs
(docs/maps.md). One call per request; the pairs' storage is :mod:`h5lake.maps.buckets`."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import numpy as np

from h5lake.chunks.filters import FilterPipeline
from h5lake.errors import InvalidInput, NotFound, TooLarge
from h5lake.maps import data as md
from h5lake.maps.buckets import DEFAULT_MAX_BUCKET_BYTES, MapBuckets, MapFormat, marker_of
from h5lake.model.acl import Permission
from h5lake.model.ids import FORKED, Collection
from h5lake.model.stored import ObjectDoc
from h5lake.model.types import client_type
from h5lake.service.access import (
    base_doc,
    bodies,
    new_id_for,
    open_object,
    parse_link_request,
    resolve_type,
    update_object,
)
from h5lake.service.context import Caller, Service, now
from h5lake.service.datasets.opened import Change, check_writable
from h5lake.service.documents import Doc, Unchanged
from h5lake.service.domains.core import open_domain
from h5lake.service.objects import attribute_values as attrvalues
from h5lake.service.objects.attributes import parse_attributes
from h5lake.service.objects.core import object_json, store_new_objects
from h5lake.service.views import Domain

DEFAULT_FILTERS: list[Doc] = [{"class": "H5Z_FILTER_LZ4"}]
"""A map's buckets are compressed with lz4 unless its creation properties name filters."""
MAX_BATCH = 1_000_000
"""Most keys in one batch request."""
MAX_PAGE = 100_000
DEFAULT_PAGE = 1000
_TREE_CACHE = 10_000  # maps whose split markers a process remembers


# --- the map object -------------------------------------------------------------------------------


async def create_maps(svc: Service, caller: Caller, domain_path: str, body: Any) -> tuple[list[Doc], bool]:
    items, many = bodies(body)
    domain = await open_domain(svc, caller, domain_path, Permission.CREATE)
    docs, links = [], []
    for item in items:
        if "key_type" not in item or "value_type" not in item:
            raise InvalidInput("a map needs key_type and value_type")
        key_type = await resolve_type(svc, domain, item["key_type"])
        value_type = await resolve_type(svc, domain, item["value_type"])
        md.check_key_type(key_type)
        md.check_value_type(value_type)
        doc = base_doc(new_id_for(Collection.MAPS, item, domain), domain, item)
        doc["key_type"], doc["value_type"] = key_type, value_type
        doc["creationProperties"] = _creation_properties(item.get("creationProperties"))
        doc["attributes"] = await parse_attributes(svc, domain, item.get("attributes"), doc["id"])
        docs.append(doc)
        link = parse_link_request(item)
        if link is not None:
            links.append((doc, link))
    await store_new_objects(svc, caller, domain, docs, links)
    return [map_json(domain, d) for d in docs], many


def _creation_properties(props: Any) -> Doc:
    if props is None:
        props = {}
    if not isinstance(props, dict):
        raise InvalidInput("creationProperties must be an object")
    out = dict(props)
    out["filters"] = FilterPipeline.from_json(out.get("filters", DEFAULT_FILTERS), 1).to_json()
    size = out.get("bucketBytes", DEFAULT_MAX_BUCKET_BYTES)
    if not isinstance(size, int) or isinstance(size, bool) or not 4096 <= size <= 64 * 1024 * 1024:
        raise InvalidInput("bucketBytes must be an integer from 4096 to 67108864")
    out["bucketBytes"] = size
    return out


def map_json(domain: Domain, doc: Doc) -> Doc:
    out = object_json(domain, doc)
    out["key_type"] = client_type(doc["key_type"])
    out["value_type"] = client_type(doc["value_type"])
    return out


@dataclass(frozen=True, slots=True)
class OpenMap:
    domain: Domain
    doc: Doc
    fmt: MapFormat
    buckets: MapBuckets

    @property
    def keys(self) -> md.KeyCodec:
        return self.fmt.keys

    @property
    def values(self) -> md.ValueCodec:
        return self.fmt.values


def map_format(doc: Doc) -> MapFormat:
    props = doc.get("creationProperties", {})
    pipeline = FilterPipeline.from_json(props.get("filters", DEFAULT_FILTERS), 1)
    return MapFormat(md.KeyCodec(doc["key_type"]), md.ValueCodec(doc["value_type"]), pipeline,
                     int(props.get("bucketBytes", DEFAULT_MAX_BUCKET_BYTES)))


async def open_map(svc: Service, caller: Caller, domain_path: str, map_id: str, permission: Permission) -> OpenMap:
    domain, found = await open_object(svc, caller, domain_path, map_id, permission, Collection.MAPS)
    if permission is not Permission.READ:
        check_writable(domain, found.doc, Change.VALUES)
    fmt = map_format(found.doc)
    if map_id not in svc.map_trees and len(svc.map_trees) >= _TREE_CACHE:
        svc.map_trees.clear()
    # the cache holds what the head has; another view (a version) may predate its splits
    tree = svc.map_trees.setdefault(map_id, {}) if domain.view is svc.head else {}
    buckets = MapBuckets(svc.store, domain.view.chunks(map_id, found.doc.get(FORKED)), map_id, fmt, tree, svc.catalog,
                         domain.path, svc.workers, svc.map_indexes)
    return OpenMap(domain, found.doc, fmt, buckets)


async def get_map(svc: Service, caller: Caller, domain_path: str, map_id: str, *, verbose: bool,
                  include_attrs: bool = False) -> Doc:
    opened = await open_map(svc, caller, domain_path, map_id, Permission.READ)
    out = map_json(opened.domain, opened.doc)
    if include_attrs:
        attrs = await attrvalues.loaded(svc, opened.domain, map_id, opened.doc.get("attributes") or {}, leave_out=True)
        out.update(object_json(opened.domain, {**opened.doc, "attributes": attrs}, include_attrs=True))
        out["key_type"], out["value_type"] = client_type(opened.doc["key_type"]), client_type(opened.doc["value_type"])
    if verbose:
        found = await opened.buckets.buckets()
        out["stats"] = {"pairCount": sum(b.pairs for b in found), "allocatedSize": sum(b.nbytes for b in found),
                        "bucketCount": len(found)}
    return out


# --- pairs ----------------------------------------------------------------------------------------


async def _touch(svc: Service, opened: OpenMap, stamp: float) -> None:
    """Pair writes move the map's ``lastModified`` to the time they were applied: one
    conditional update of the document, skipped when another write already moved it that far
    (so concurrent writers contend on it at most once each)."""
    map_id = opened.doc["id"]

    def later(doc: ObjectDoc) -> Any:
        if doc.get("lastModified", 0.0) >= stamp:
            return Unchanged()
        doc["lastModified"] = stamp
        return None

    try:
        # reuse: `later` sets only lastModified (Documents.update)
        await update_object(svc, opened.domain, map_id, later, reuse=True)
    except NotFound:
        return  # the map was deleted meanwhile: its pairs go with it


async def _applied(svc: Service, opened: OpenMap, pairs: md.Pairs, deleted: np.ndarray[Any, Any]) -> tuple[int, int]:
    """Apply puts and deletes to the buckets, then stamp the map when something changed."""
    added, removed = await opened.buckets.apply(pairs, deleted)
    if removed or not bool(np.all(deleted)):
        await _touch(svc, opened, now())
    return added, removed


@dataclass(frozen=True, slots=True)
class Keys:
    """Keys from a request: JSON, packed bytes, or the text of a URL path."""

    json: Any = None
    packed: bytes | None = None
    text: str | None = None

    def array(self, codec: md.KeyCodec) -> np.ndarray[Any, Any]:
        if self.text is not None:
            return codec.from_text(self.text)
        if self.packed is not None:
            return codec.from_packed(self.packed)
        if isinstance(self.json, dict):
            return codec.from_json(self.json.get("keys"))
        return codec.from_json(self.json)


def _check_batch(n: int) -> None:
    if n > MAX_BATCH:
        raise TooLarge(f"a batch holds at most {MAX_BATCH} keys, got {n}")


async def put_value(svc: Service, caller: Caller, domain_path: str, map_id: str, key: str, *,
                    json: Any = None, packed: bytes | None = None) -> bool:
    """``PUT /maps/{id}/key/{key}``; True when the key is new."""
    opened = await open_map(svc, caller, domain_path, map_id, Permission.UPDATE)
    keys = opened.keys.from_text(key)
    if packed is not None:
        values = opened.values.from_packed(packed, 1)
    else:
        if not isinstance(json, dict) or "value" not in json:
            raise InvalidInput('body must be {"value": ...}')
        values = opened.values.one_from_json(json["value"])
    added, _ = await _applied(svc, opened, md.Pairs(keys, values), np.zeros(1, dtype=bool))
    return added > 0


async def put_values(svc: Service, caller: Caller, domain_path: str, map_id: str, *, json: Any = None,
                     packed: bytes | None = None) -> int:
    """``PUT /maps/{id}/keys``: ``{"keys": [...], "values": [...]}`` or packed (key, value)
    records; later pairs of one key win. Returns how many keys are new."""
    opened = await open_map(svc, caller, domain_path, map_id, Permission.UPDATE)
    if packed is not None:
        keys, values = await svc.workers.cpu(_split_records, opened, packed, size=len(packed))
    else:
        if not isinstance(json, dict) or not isinstance(json.get("keys"), list):
            raise InvalidInput('body must be {"keys": [...], "values": [...]}')
        _check_batch(len(json["keys"]))
        # converting many keys and values is Python work in proportion: on the CPU pool
        keys, values = await svc.workers.cpu(_from_json, opened, json, size=PER_KEY_WORK * len(json["keys"]))
    _check_batch(len(keys))
    added, _ = await _applied(svc, opened, md.Pairs(keys, values), np.zeros(len(keys), dtype=bool))
    return added


PER_KEY_WORK = 64  # bytes of work counted per key sent as JSON, for Workers.cpu


def _from_json(opened: OpenMap, json: dict[str, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    keys = opened.keys.from_json(json["keys"])
    return keys, opened.values.from_json(json.get("values"), len(keys))


def _keys_work(keys: Keys) -> int:
    if keys.packed is not None:
        return len(keys.packed)
    listed = keys.json.get("keys") if isinstance(keys.json, dict) else keys.json
    return PER_KEY_WORK * len(listed) if isinstance(listed, list) else 0


def _split_records(opened: OpenMap, packed: bytes) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Packed (key, value) records: fixed-size ones back to back, or the variable-length wire
    format of a compound of the two."""
    kc, vc = opened.keys, opened.values
    if not kc.variable and not vc.variable:
        size = kc.width + vc.size
        if len(packed) % size:
            raise InvalidInput(f"packed pairs: {len(packed)} bytes is not a multiple of the record size {size}")
        records = np.frombuffer(packed, dtype=[("k", f"S{kc.width}"), ("v", f"V{vc.size}")])
        _check_batch(len(records))
        return records["k"].copy(), records["v"].copy()
    return _split_variable(opened, packed)


def _split_variable(opened: OpenMap, packed: bytes) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    kc, vc = opened.keys, opened.values
    view = memoryview(packed)
    key_ends = md.field_ends(view, kc.type_json, vc.type_json)
    keys_raw = [bytes(view[a:b]) for a, b, _ in key_ends]
    vals_raw = [bytes(view[b:c]) for _, b, c in key_ends]
    _check_batch(len(keys_raw))
    keys = kc.from_packed(b"".join(keys_raw))
    values = vc.from_packed(b"".join(vals_raw), len(vals_raw))
    return keys, values


async def get_value(svc: Service, caller: Caller, domain_path: str, map_id: str, key: str) -> tuple[OpenMap, np.ndarray[Any, Any]]:
    """``GET /maps/{id}/key/{key}``: the value as a one-element array of stored value bytes."""
    opened = await open_map(svc, caller, domain_path, map_id, Permission.READ)
    found, values = await opened.buckets.get(opened.keys.from_text(key))
    if not found[0]:
        raise NotFound(f"key {key[:80]!r} is not in map {map_id}")
    return opened, values


def value_json(opened: OpenMap, values: np.ndarray[Any, Any]) -> list[Any]:
    return opened.values.to_json(values)


async def get_values(svc: Service, caller: Caller, domain_path: str, map_id: str,
                     keys: Keys) -> tuple[OpenMap, np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``POST /maps/{id}/keys``: (map, found mask, values with absent ones as the default)."""
    opened = await open_map(svc, caller, domain_path, map_id, Permission.READ)
    arr = await svc.workers.cpu(keys.array, opened.keys, size=_keys_work(keys))
    _check_batch(len(arr))
    found, values = await opened.buckets.get(arr)
    return opened, found, values


async def has_key(svc: Service, caller: Caller, domain_path: str, map_id: str, key: str) -> bool:
    opened = await open_map(svc, caller, domain_path, map_id, Permission.READ)
    found, _ = await opened.buckets.get(opened.keys.from_text(key))
    return bool(found[0])


async def delete_values(svc: Service, caller: Caller, domain_path: str, map_id: str, keys: Keys,
                        *, must_exist: bool = False) -> int:
    """``DELETE /maps/{id}/key/{key}`` (404 when absent) and ``DELETE /maps/{id}/keys``
    (absent keys ignored). Returns how many keys were removed."""
    opened = await open_map(svc, caller, domain_path, map_id, Permission.DELETE)
    arr = await svc.workers.cpu(keys.array, opened.keys, size=_keys_work(keys))
    _check_batch(len(arr))
    filler = np.empty(len(arr), dtype=object) if opened.values.variable else np.zeros(len(arr), dtype=f"V{opened.values.size}")
    if opened.values.variable:
        filler[:] = [b""] * len(arr)
    _, removed = await _applied(svc, opened, md.Pairs(arr, filler), np.ones(len(arr), dtype=bool))
    if must_exist and removed == 0:
        raise NotFound(f"key {keys.text!r} is not in map {map_id}")
    return removed


@dataclass(frozen=True, slots=True)
class Page:
    opened: OpenMap
    keys: np.ndarray[Any, Any]
    values: np.ndarray[Any, Any] | None
    cursor: str | None  # where the next page starts, None at the end


def cursor_of(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


async def list_pairs(svc: Service, caller: Caller, domain_path: str, map_id: str, *, limit: int | None,
                     marker: str | None, cursor: str | None, include_values: bool) -> Page:
    """``GET /maps/{id}/keys``: keys in the map's stable order (by key hash, then key bytes),
    from after ``marker`` (a key as in a URL path) or ``cursor`` (from the previous page)."""
    opened = await open_map(svc, caller, domain_path, map_id, Permission.READ)
    limit = DEFAULT_PAGE if limit is None else limit
    if limit > MAX_PAGE:
        raise TooLarge(f"Limit is at most {MAX_PAGE}")
    start = None
    if cursor is not None:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        except (binascii.Error, ValueError):
            raise InvalidInput("Cursor is not a cursor of this map") from None
        key = opened.keys.from_cursor(raw)
        if len(key) != 1:
            raise InvalidInput("Cursor is not a cursor of this map")
        start = marker_of(opened.keys, key)
    elif marker is not None:
        start = marker_of(opened.keys, opened.keys.from_text(marker))
    keys: list[np.ndarray[Any, Any]] = []
    values: list[np.ndarray[Any, Any]] = []
    count, more = 0, False
    async for leaf in opened.buckets.walk(start):
        take = leaf.take(slice(0, limit - count))
        keys.append(take.keys)
        values.append(take.values)
        count += len(take)
        if count >= limit:
            more = True
            break
    fmt = opened.fmt
    all_keys = np.concatenate([k.astype(f"S{max(k.dtype.itemsize for k in keys)}") for k in keys]) if keys else np.empty(0, dtype="S1")
    all_values = np.concatenate(values) if values else fmt.empty().values
    next_cursor = None
    if more and len(all_keys):
        last = all_keys[-1:]
        raw = opened.keys.to_packed(last) if not opened.keys.variable else bytes(last[0])
        next_cursor = cursor_of(raw)
    return Page(opened, all_keys, all_values if include_values else None, next_cursor)


def packed_page(page: Page) -> bytes:
    """A page as packed bytes: the keys, or (key, value) records with values; fixed-size
    records back to back, variable-length ones in the wire format of a compound of the two."""
    kc, vc = page.opened.keys, page.opened.values
    if page.values is None:
        return kc.to_packed(page.keys)
    if not kc.variable and not vc.variable:
        records = np.empty(len(page.keys), dtype=[("k", f"S{kc.width}"), ("v", f"V{vc.size}")])
        records["k"], records["v"] = page.keys, page.values
        return records.tobytes()
    parts = []
    for i in range(len(page.keys)):
        parts.append(kc.to_packed(page.keys[i : i + 1]) + vc.to_packed(page.values[i : i + 1]))
    return b"".join(parts)
