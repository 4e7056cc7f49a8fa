"""Datasets as objects: creation (type, dataspace, layout, creation properties), type, shape."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from h5lake.errors import Conflict, InvalidInput, TooLarge
from h5lake.model.acl import Permission
from h5lake.model.ids import Collection
from h5lake.model.layout import LayoutClass, is_linked
from h5lake.model.selection import Selection, Slice
from h5lake.model.shapes import Space, SpaceClass, check_bytes, check_extent, parse_space, space_from_json
from h5lake.model.stored import DatasetDoc, as_dataset
from h5lake.model.types import client_type, to_dtype
from h5lake.service.access import (
    base_doc,
    bodies,
    new_id_for,
    open_object,
    parse_link_request,
    resolve_type,
)
from h5lake.service.context import Caller, Service, now
from h5lake.service.datasets import compact, shrink
from h5lake.service.datasets.creation import (
    check_linked_chunk_size,
    plan_layout,
    validate_creation_properties,
)
from h5lake.service.datasets.dataset_layout import compact_layout
from h5lake.service.datasets.initializers import check_initializer, run_initializer
from h5lake.service.datasets.linked import SOURCES_KEY, ingest_linked_layout
from h5lake.service.datasets.opened import Change, check_writable
from h5lake.service.documents import Doc, Unchanged
from h5lake.service.domains.core import open_domain
from h5lake.service.objects.attributes import parse_attributes
from h5lake.service.objects.core import object_json, store_new_objects
from h5lake.service.values import appends
from h5lake.service.views import Domain


async def create_datasets(
    svc: Service, caller: Caller, domain_path: str, body: Any, implicit: bool = False,
    before_store: Callable[[Domain, list[DatasetDoc]], Awaitable[None]] | None = None,
) -> tuple[list[Doc], bool]:
    """``POST /datasets``: one item or a list (made together, service/objects/core.py); with
    ``before_store``, which may add to the documents (their values) before they are stored."""
    items, many = bodies(body)
    domain = await open_domain(svc, caller, domain_path, Permission.CREATE)
    docs: list[DatasetDoc] = []
    links = []
    initialized = []
    for item in items:
        docs.append(await _new_dataset(svc, domain, item, docs))
        args = check_initializer(svc, docs[-1])
        if args is not None:
            initialized.append((docs[-1], args))
        link = parse_link_request(item)
        if link is not None:
            links.append((docs[-1], link))
    if before_store is not None:
        await before_store(domain, docs)
    await store_new_objects(svc, caller, domain, docs, links, implicit)
    for doc, args in initialized:
        await run_initializer(svc, domain, doc, args)
    return [object_json(domain, d) for d in docs], many


async def _new_dataset(svc: Service, domain: Domain, item: Doc, batch: list[DatasetDoc] | None = None) -> DatasetDoc:
    """``batch``: datasets made earlier in the same request (a linked dataset's chunk table
    comes in the same POST as the dataset when h5pyd flushes)."""
    if "type" not in item:
        raise InvalidInput("a dataset needs a type")
    type_json = await resolve_type(svc, domain, item["type"])
    space = parse_space(item.get("shape"), item.get("maxdims"), zero_unlimited=True)
    check_bytes(space.dims, to_dtype(type_json).itemsize)
    raw = item.get("creationProperties")
    if raw is not None and not isinstance(raw, dict):
        raise InvalidInput("creationProperties must be an object")
    linked = is_linked({"layout": raw.get("layout") if raw is not None and isinstance(raw.get("layout"), dict) else {}})
    planned = None if linked else plan_layout(space, type_json, raw or {}, svc.limits)
    props = validate_creation_properties(raw, type_json, planned["dims"] if planned and planned["dims"] else None)
    _check_fill_size(svc, props)
    doc = as_dataset(base_doc(new_id_for(Collection.DATASETS, item, domain), domain, item))
    doc["type"] = type_json
    doc["shape"] = space.to_json()
    doc["creationProperties"] = props
    doc["attributes"] = await parse_attributes(svc, domain, item.get("attributes"), doc["id"])
    if planned is None:
        check_linked_chunk_size(props["layout"], type_json, svc.limits.max_chunk_size)
        layout, sources = await ingest_linked_layout(svc, domain, doc["id"], space, type_json, props, batch or [])
        props["layout"] = layout
        doc["layout"] = layout
        if sources:
            doc[SOURCES_KEY] = sources
    else:
        doc["layout"] = planned
        compact.start_compact(doc, svc.limits.compact_max_size)
    return doc


def _check_fill_size(svc: Service, props: Doc) -> None:
    """A fill value is kept in the dataset's document, which every read of the dataset parses
    (on the event loop): like one attribute (docs/security.md, "Attributes"), it takes at most
    ``--max-attribute-bytes`` as stored JSON. Unbounded, a 30 MB string fill made every ``GET``
    of its dataset cost ~0.25 s of the loop; HDF5 keeps a fill value in one object header
    message (64 KiB)."""
    fill = props.get("fillValue")
    if fill is None:
        return
    size = len(orjson.dumps(fill))
    limit = svc.limits.max_attribute_size
    if size > limit:
        raise TooLarge(f"the fill value takes {size} bytes as stored, over the limit of {limit} "
                       "(--max-attribute-bytes; every read of the dataset parses it)")


async def get_type(svc: Service, caller: Caller, domain_path: str, dset_id: str) -> Doc:
    _, found = await open_object(svc, caller, domain_path, dset_id, Permission.READ, Collection.DATASETS)
    return {"type": client_type(found.doc["type"])}


async def get_shape(svc: Service, caller: Caller, domain_path: str, dset_id: str) -> Doc:
    _, found = await open_object(svc, caller, domain_path, dset_id, Permission.READ, Collection.DATASETS)
    doc = found.doc
    return {"shape": doc["shape"], "created": doc["created"], "lastModified": doc["lastModified"]}


def _new_dims(space: Space, body: Any) -> tuple[int, ...]:
    if not isinstance(body, dict):
        raise InvalidInput("body must be a JSON object")
    if space.kind is not SpaceClass.SIMPLE:
        raise InvalidInput("only simple dataspaces can be resized")
    if "prepend" in body:
        count, axis = _prepend(body, space.rank)
        dims = tuple(d + count if i == axis else d for i, d in enumerate(space.dims))
    elif "shape" in body:
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
        raise InvalidInput("body needs shape, extend or prepend")
    for i, (new, old) in enumerate(zip(dims, space.dims)):
        if isinstance(new, bool) or not isinstance(new, int) or new < 0:
            raise InvalidInput("extents must be non-negative integers")
        check_extent(new, f"the extent of dimension {i}")
        if new == old:
            continue
        if space.maxdims is None:
            change = "grow" if new > old else "shrink"
            raise InvalidInput(f"the dataset is not extensible (no maxdims): dimension {i} cannot {change}")
        limit = space.maxdims[i]
        if limit is not None and new > limit:
            # as HSDS: a valid request the dataset's maxdims do not allow
            raise Conflict(f"dimension {i} cannot grow past its maximum {limit}")
    return dims


def _prepend(body: Doc, rank: int) -> tuple[int, int]:
    """``{"prepend": n, "prepend_dim": d}`` (an h5lake extension): n elements added before the
    first along dimension d."""
    count = body["prepend"]
    axis = body.get("prepend_dim", 0)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise InvalidInput("prepend must be a non-negative integer")
    if isinstance(axis, bool) or not isinstance(axis, int) or not 0 <= axis < rank:
        raise InvalidInput(f"prepend_dim must be in 0..{rank - 1}")
    if any(k in body for k in ("shape", "extend")):
        raise InvalidInput("prepend cannot be combined with shape or extend")
    return count, axis


@dataclass(frozen=True, slots=True)
class Resized:
    """A dataset's extent before and after a resize, and its document after."""

    old: tuple[int, ...]
    new: tuple[int, ...]
    doc: DatasetDoc
    front: bool = False  # grown at the front (prepend): the new elements come first

    def to_text(self) -> str:
        """The region between the two extents, ``[o0:n0,o1:n1,...]`` (after a prepend, the
        new elements at the front: ``[0:k,...]``)."""
        if self.front:
            return "[" + ",".join(f"0:{n - o}" if n != o else f"0:{n}" for o, n in zip(self.old, self.new)) + "]"
        # a shrunk dimension names the region cut off
        return "[" + ",".join(f"{min(o, n)}:{max(o, n)}" for o, n in zip(self.old, self.new)) + "]"

    def appended(self, axis: int) -> Selection:
        """The new elements when the dataset grew along ``axis`` only."""
        return Selection(
            tuple(Slice(o, n) if i == axis else Slice(0, n) for i, (o, n) in enumerate(zip(self.old, self.new)))
        )


async def resize(svc: Service, caller: Caller, domain_path: str, dset_id: str, body: Any) -> Resized:
    """``PUT /datasets/{id}/shape``: grow the dataset to ``shape``, or by ``extend`` along one axis."""
    domain, found = await open_object(svc, caller, domain_path, dset_id, Permission.UPDATE, Collection.DATASETS)
    doc = as_dataset(found.doc)
    check_writable(domain, doc, Change.SHAPE)
    if isinstance(body, dict) and "prepend" in body:
        check_writable(domain, doc, Change.PREPEND)
    space = space_from_json(doc["shape"])
    dims = _new_dims(space, body)  # validate before touching storage
    if any(n < o for n, o in zip(dims, space.dims)):
        check_writable(domain, doc, Change.SHRINK)
    return await grow(svc, domain, dset_id, body)


class _Owed(Exception):
    """The resize must wait for work the document says is owed (a shrink's cleaning, a compact
    move): the caller does it and tries again."""

    def __init__(self, doc: DatasetDoc) -> None:
        self.doc = doc


async def grow(svc: Service, domain: Domain, dset_id: str, body: Any) -> Resized:
    """Change the extent in one conditional update of the dataset's document (the new extent is
    computed from the document as it is then, so concurrent appends each get their own region).

    Shrinking (any dimension of an extensible dataset, to 0 too) follows `service.datasets.shrink`: the
    smaller shape is stored with a mark of the cleaning owed, then the cut-off values are
    removed; a compact dataset is trimmed in the same update. Growth waits for a cleaning still
    owed (it would show the stale values)."""
    for _ in range(_MAX_OWED):
        try:
            return await _resize_once(svc, domain, dset_id, body)
        except _Owed as owed:
            if compact.is_moving(owed.doc):
                await compact.finish_move(svc, domain, owed.doc)
            else:
                await shrink.finish(svc, domain, owed.doc)
    raise Conflict(f"dataset {dset_id} is being resized too often; try again")


_MAX_OWED = 20


async def _resize_once(svc: Service, domain: Domain, dset_id: str, body: Any) -> Resized:
    old_dims: list[int] = []
    marked: list[bool] = [False]  # this update recorded a cleaning it then does itself

    def mutate(doc: DatasetDoc) -> Any:
        appends.check_no_appends(doc)  # appends reserve rows first (service.values.appends)
        space = space_from_json(doc["shape"])
        dims = _new_dims(space, body)
        old_dims[:] = list(space.dims)
        marked[0] = False
        if dims == space.dims:
            return Unchanged(None)
        check_bytes(dims, to_dtype(doc["type"]).itemsize)
        if shrink.blocks_growth(doc, dims):
            raise _Owed(doc)
        if any(n < o for n, o in zip(dims, space.dims)):
            check_writable(domain, doc, Change.SHRINK)
            if compact.is_moving(doc):
                raise _Owed(doc)
            if compact.is_compact(doc):
                keep = compact_layout(domain, doc)
                assert keep is not None
                compact.trim(doc, dataclasses.replace(keep, shape=tuple(min(n, o) for n, o in zip(dims, space.dims))))
            else:
                shrink.mark(doc, space.dims, dims)
                marked[0] = True
        doc["shape"] = space.resized(dims).to_json()
        if front:
            check_writable(domain, doc, Change.PREPEND)
            count, axis = _prepend(body, space.rank)
            origin = list(doc["layout"].get("origin") or [0] * space.rank)
            origin[axis] += count
            doc["layout"]["origin"] = origin
        compact.mark_moving_if_grown(doc, svc.limits.compact_max_size)
        doc["lastModified"] = now()
        return None

    front = isinstance(body, dict) and "prepend" in body
    doc, _ = await svc.docs.update_object(domain.path, dset_id, mutate, f"dataset {dset_id}")
    resized = Resized(tuple(old_dims), tuple(doc["shape"]["dims"]), doc, front)
    if marked[0]:
        doc = await shrink.finish(svc, domain, doc)
        resized = Resized(resized.old, resized.new, doc, front)
    if compact.is_moving(doc):  # grown past the compact limit: values go to chunk objects
        doc = await compact.finish_move(svc, domain, doc)
        resized = Resized(resized.old, resized.new, doc, front)
    return resized


async def aggregate(svc: Service, caller: Caller, domain_path: str, dset_id: str, body: Any) -> DatasetDoc:
    """``PUT /datasets/{id}/layout`` (an h5lake extension): turn a dataset linked from one file
    (``H5D_CHUNKED_REF``, or ``H5D_CHUNKED_REF_INDIRECT`` with one ``file_uri``) into the
    per-chunk-file form files can be appended to: ``{"chunk_table": id, "extend_dim": axis}``
    names a chunk table of ``(offset, size, file_uri[, filter_mask])`` entries (filled first) and
    the axis that becomes unlimited. The table is checked and its files recorded as at
    creation; the document changes in one conditional update, only if its layout is still the
    one checked. A dataset already in that form is returned unchanged."""
    domain, found = await open_object(svc, caller, domain_path, dset_id, Permission.UPDATE, Collection.DATASETS)
    doc = as_dataset(found.doc)
    check_writable(domain, doc, Change.LAYOUT)
    layout = doc.get("layout") or {}
    if layout.get("class") == LayoutClass.CHUNKED_REF_INDIRECT.value and not layout.get("file_uri"):
        return doc
    if layout.get("class") not in (LayoutClass.CHUNKED_REF.value, LayoutClass.CHUNKED_REF_INDIRECT.value):
        raise InvalidInput(f"only a chunked linked dataset can aggregate files, not a {layout.get('class')} one")
    if not isinstance(body, dict) or not isinstance(body.get("chunk_table"), str):
        raise InvalidInput("body needs chunk_table (the id of a chunk table with file_uri entries) and extend_dim")
    space = space_from_json(doc["shape"])
    axis = body.get("extend_dim")
    if isinstance(axis, bool) or not isinstance(axis, int) or not 0 <= axis < space.rank:
        raise InvalidInput(f"extend_dim must be in 0..{space.rank - 1}")
    maxdims: list[int | None] = list(space.maxdims if space.maxdims is not None else space.dims)
    maxdims[axis] = None
    grown = parse_space({"class": SpaceClass.SIMPLE.value, "dims": list(space.dims)}, ["H5S_UNLIMITED" if m is None else m for m in maxdims])
    new_layout = {"class": LayoutClass.CHUNKED_REF_INDIRECT.value, "dims": list(layout["dims"]), "chunk_table": body["chunk_table"]}
    props = {**(doc.get("creationProperties") or {}), "layout": new_layout}
    checked, sources = await ingest_linked_layout(svc, domain, dset_id, grown, doc["type"], props, [])

    def mutate(current: DatasetDoc) -> Any:
        if current.get("layout") != layout:
            raise Conflict(f"dataset {dset_id} changed while it was being turned into the per-chunk-file form")
        current["layout"] = checked
        current.setdefault("creationProperties", {})["layout"] = checked
        current["shape"] = grown.to_json()
        current.setdefault(SOURCES_KEY, {}).update(sources)
        current["lastModified"] = now()
        return None

    updated, _ = await svc.docs.update_object(domain.path, dset_id, mutate, f"dataset {dset_id}")
    return updated
