"""Datasets as objects: creation (type, dataspace, layout, creation properties), type, shape."""

from __future__ import annotations

import math
from typing import Any

from h5lake.errors import InvalidInput, MethodNotAllowed
from h5lake.model.acl import Permission
from h5lake.model.ids import Collection, object_key
from h5lake.model.layout import LayoutClass, adjust_chunk_shape, guess_chunk_shape, is_linked
from h5lake.model.shapes import Space, SpaceClass, parse_space, space_from_json
from h5lake.model.types import client_type, is_variable, to_dtype
from h5lake.model.values import array_to_json, json_to_array
from h5lake.service.context import Caller, Service, now
from h5lake.service.documents import Doc, Unchanged
from h5lake.service.domains import Domain, open_domain
from h5lake.service.objects import (
    base_doc,
    bodies,
    new_id_for,
    object_json,
    open_object,
    parse_link_request,
    resolve_type,
    store_new_objects,
)

VLEN_ITEM_ESTIMATE = 64  # bytes per element assumed when sizing chunks of variable-length types


def item_size(type_json: Doc) -> int:
    if is_variable(type_json):
        return VLEN_ITEM_ESTIMATE
    return max(1, to_dtype(type_json).itemsize)


GUESSED_CHUNK_MAX_BYTES = 4 * 1024 * 1024
"""Chunks h5lake chooses stay this small; a client may choose larger ones up to the
``--max-chunk-bytes`` limit."""


def plan_layout(space: Space, type_json: Doc, props: Doc, svc: Service) -> Doc:
    """The chunk layout actually used. Values are always chunked in storage, whatever the
    client asked for; what it asked for stays in ``creationProperties``."""
    if space.kind is not SpaceClass.SIMPLE:
        return {"class": LayoutClass.CHUNKED.value, "dims": []}
    requested = props.get("layout")
    size = item_size(type_json)
    if requested is not None:
        if not isinstance(requested, dict):
            raise InvalidInput("layout must be an object")
        try:
            cls = LayoutClass(requested.get("class"))
        except ValueError:
            raise InvalidInput(f"unknown layout class {requested.get('class')!r}") from None
        if cls is LayoutClass.CHUNKED and "dims" in requested:
            dims = requested["dims"]
            if not isinstance(dims, list):
                raise InvalidInput("layout dims must be a list")
            chunk = adjust_chunk_shape(
                tuple(dims), space.dims, size, max_bytes=svc.limits.max_chunk_size, maxdims=space.maxdims
            )
            return {"class": LayoutClass.CHUNKED.value, "dims": list(chunk)}
        if cls not in (LayoutClass.CHUNKED, LayoutClass.CONTIGUOUS, LayoutClass.COMPACT):
            raise InvalidInput(f"layout {cls.value} is not supported for new datasets")
    elif space.maxdims is not None and None in space.maxdims:
        pass  # unlimited extents need chunks; guessed below
    chunk = guess_chunk_shape(
        space.dims,
        space.maxdims,
        size,
        min_bytes=min(svc.limits.min_chunk_size, GUESSED_CHUNK_MAX_BYTES),
        max_bytes=min(svc.limits.max_chunk_size, GUESSED_CHUNK_MAX_BYTES),
    )
    return {"class": LayoutClass.CHUNKED.value, "dims": list(chunk)}


NO_CODEC_FILTERS = frozenset({"NBIT", "SCALEOFFSET", "SNAPPY", "BLOSC2"})
"""Known HDF5 filters ``chunks.filters`` has no codec for; with unknown plugin ids flagged
optional (which HDF5 itself may skip) these are declared, not applied. Any other unknown filter
is refused at creation."""


def _declared_filter_id(spec: Any) -> int | None:
    """The id of a filter the chunk engine has no codec for, else None.

    Such a filter (nbit, scaleoffset, a plugin such as bzip2...) is *declared*: it is kept in
    the creation properties exactly as given, so clients and ``h5lake export`` see and re-create
    it, but stored chunks are kept without it (their bytes are HDF5's with that filter skipped,
    as if its bit were set in the chunk's filter mask). Values read back are unchanged: the
    lossy filters among these (scaleoffset, nbit on reduced precision) were applied, if at all,
    by whoever wrote the values.
    """
    from h5lake.chunks.filters import FilterId

    if not isinstance(spec, dict):
        return None
    raw = spec.get("id")
    if raw is None:
        raw = next((int(f) for f in FilterId if f.class_name == spec.get("class")), None)
    if not isinstance(raw, int) or isinstance(raw, bool):
        return None
    try:
        known = FilterId(raw)
    except ValueError:
        # An unknown filter is refused (400) unless HDF5 itself may skip it: H5Z_FLAG_OPTIONAL.
        flags = spec.get("flags", 0)
        optional = isinstance(flags, int) and bool(flags & 1)
        return raw if 0 < raw < 65536 and optional else None
    return raw if known.name in NO_CODEC_FILTERS else None


def _declared_filter_json(spec: Doc, fid: int) -> Doc:
    from h5lake.chunks.filters import FilterId

    params = spec.get("parameters", [])
    if not isinstance(params, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 32 for v in params
    ):
        raise InvalidInput(f"filter {fid}: parameters must be a list of unsigned 32-bit integers")
    flags = spec.get("flags", 0)
    if not isinstance(flags, int) or isinstance(flags, bool) or not 0 <= flags < 1 << 32:
        raise InvalidInput(f"filter {fid}: flags must be an unsigned integer")
    try:
        known: FilterId | None = FilterId(fid)
    except ValueError:
        known = None
    name = spec.get("name") if isinstance(spec.get("name"), str) else None
    out: Doc = dict(spec)
    out["class"] = known.class_name if known is not None else "H5Z_FILTER_USER"
    out["id"] = fid
    out["name"] = name or (known.canonical_name if known is not None else f"filter {fid}")
    return out


def codec_filters(filters: Any) -> Any:
    """The filters the chunk engine applies to stored chunks: all but the declared ones
    (see :func:`_declared_filter_id`). Non-lists pass through for the pipeline to reject."""
    if not isinstance(filters, list):
        return filters
    return [f for f in filters if _declared_filter_id(f) is None]


def validate_creation_properties(props: Any, type_json: Doc) -> Doc:
    from h5lake.chunks.filters import FilterPipeline

    if props is None:
        return {}
    if not isinstance(props, dict):
        raise InvalidInput("creationProperties must be an object")
    out = dict(props)
    if "filters" in out:
        from h5lake.chunks.layout import pipeline_item_size

        filters = out["filters"]
        applied = FilterPipeline.from_json(codec_filters(filters), pipeline_item_size(type_json)).to_json()
        if isinstance(filters, list) and len(applied) != len(filters):
            normalized = iter(applied)
            merged = []
            for spec in filters:
                fid = _declared_filter_id(spec)
                merged.append(next(normalized) if fid is None else _declared_filter_json(spec, fid))
            applied = merged
        out["filters"] = applied
    if out.get("fillValue") is not None:
        # kept in its canonical JSON form: a NaN from a Python client is stored as "NaN", which
        # strict JSON (our documents) can hold, instead of becoming null
        out["fillValue"] = array_to_json(json_to_array(out["fillValue"], type_json, ()), type_json)
    return out


async def create_datasets(svc: Service, caller: Caller, domain_path: str, body: Any) -> tuple[list[Doc], bool]:
    items, many = bodies(body)
    domain = await open_domain(svc, caller, domain_path, Permission.CREATE)
    docs: list[Doc] = []
    links = []
    for item in items:
        docs.append(await _new_dataset(svc, domain, item, docs))
        link = parse_link_request(item)
        if link is not None:
            links.append((docs[-1], link))
    await store_new_objects(svc, caller, domain, docs, links)
    return [object_json(domain, d) for d in docs], many


async def _new_dataset(svc: Service, domain: Domain, item: Doc, batch: list[Doc] | None = None) -> Doc:
    """``batch``: datasets made earlier in the same request (a linked dataset's chunk table
    comes in the same POST as the dataset when h5pyd flushes)."""
    if "type" not in item:
        raise InvalidInput("a dataset needs a type")
    type_json = await resolve_type(svc, domain, item["type"])
    space = parse_space(item.get("shape"), item.get("maxdims"))
    props = validate_creation_properties(item.get("creationProperties"), type_json)
    doc = base_doc(new_id_for(Collection.DATASETS, item, domain), domain, item)
    doc["type"] = type_json
    doc["shape"] = space.to_json()
    doc["creationProperties"] = props
    if is_linked({"layout": props.get("layout") if isinstance(props.get("layout"), dict) else {}}):
        from h5lake.sources.linked import SOURCES_KEY, ingest_linked_layout

        check_linked_chunk_size(props["layout"], type_json, svc.limits.max_chunk_size)
        layout, sources = await ingest_linked_layout(svc, domain, doc["id"], space, type_json, props, batch or [])
        props["layout"] = layout
        doc["layout"] = layout
        if sources:
            doc[SOURCES_KEY] = sources
    else:
        doc["layout"] = plan_layout(space, type_json, props, svc)
    return doc


def check_linked_chunk_size(layout: Doc, type_json: Doc, limit: int) -> None:
    """A chunk of an HDF5 file is decoded whole for any read of it, so its size is bounded like a
    native chunk's."""
    dims = layout.get("dims")
    if isinstance(dims, list) and dims and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
        nbytes = math.prod(dims) * item_size(type_json)
        if nbytes > limit:
            raise InvalidInput(f"chunk of {nbytes} bytes exceeds the limit of {limit} (--max-chunk-bytes)")


async def get_type(svc: Service, caller: Caller, domain_path: str, dset_id: str) -> Doc:
    _, found = await open_object(svc, caller, domain_path, dset_id, Permission.READ, Collection.DATASETS)
    return {"type": client_type(found.doc["type"]), "hrefs": []}


async def get_shape(svc: Service, caller: Caller, domain_path: str, dset_id: str) -> Doc:
    _, found = await open_object(svc, caller, domain_path, dset_id, Permission.READ, Collection.DATASETS)
    doc = found.doc
    return {"shape": doc["shape"], "created": doc["created"], "lastModified": doc["lastModified"], "hrefs": []}


def _new_dims(space: Space, body: Any) -> tuple[int, ...]:
    if not isinstance(body, dict):
        raise InvalidInput("body must be a JSON object")
    if space.kind is not SpaceClass.SIMPLE:
        raise InvalidInput("only simple dataspaces can be resized")
    if "shape" in body:
        shape = body["shape"]
        if isinstance(shape, int) and not isinstance(shape, bool):
            shape = [shape]
        if not isinstance(shape, list) or len(shape) != space.rank:
            raise InvalidInput(f"shape must be a list of {space.rank} extents")
        dims = tuple(shape)
    elif "extend" in body:
        extend = body["extend"]
        axis = body.get("extend_dim", 0)
        if not isinstance(extend, int) or isinstance(extend, bool) or extend < 0:
            raise InvalidInput("extend must be a non-negative integer")
        if not isinstance(axis, int) or not 0 <= axis < space.rank:
            raise InvalidInput(f"extend_dim must be in 0..{space.rank - 1}")
        dims = tuple(d + extend if i == axis else d for i, d in enumerate(space.dims))
    else:
        raise InvalidInput("body needs shape or extend")
    for i, (new, old) in enumerate(zip(dims, space.dims)):
        if isinstance(new, bool) or not isinstance(new, int) or new < 0:
            raise InvalidInput("extents must be non-negative integers")
        if new < old:
            raise InvalidInput(f"dimension {i} cannot shrink from {old} to {new}")
        limit = space.maxdims[i] if space.maxdims is not None else old
        if limit is not None and new > limit:
            raise InvalidInput(f"dimension {i} cannot grow past its maximum {limit}")
    return dims


async def resize(svc: Service, caller: Caller, domain_path: str, dset_id: str, body: Any) -> tuple[int, Doc]:
    """``PUT /datasets/{id}/shape``; returns (status, body): 201 with the new region's selection."""
    domain, found = await open_object(svc, caller, domain_path, dset_id, Permission.UPDATE, Collection.DATASETS)
    if is_linked(found.doc) and found.doc["layout"].get("class") != LayoutClass.CHUNKED_REF_INDIRECT.value:
        # An INDIRECT dataset may grow (files appended along an axis): its chunk table says
        # where the new chunks are, and chunks it does not list read as fill.
        raise MethodNotAllowed("datasets linked to HDF5 files are read-only")
    _new_dims(space_from_json(found.doc["shape"]), body)  # validate before touching storage
    old_dims: list[int] = []

    def mutate(doc: Doc) -> Any:
        space = space_from_json(doc["shape"])
        dims = _new_dims(space, body)
        old_dims[:] = list(space.dims)
        if dims == space.dims:
            return Unchanged(None)
        doc["shape"] = space.resized(dims).to_json()
        doc["lastModified"] = now()
        return None

    doc, _ = await svc.docs.update(object_key(dset_id), mutate, f"dataset {dset_id}")
    svc.catalog.note_object(domain.path, dset_id)
    new = doc["shape"]["dims"]
    sel = ",".join(f"{o}:{n}" for o, n in zip(old_dims, new))
    return 201, {"selection": f"[{sel}]", "hrefs": []}
