"""Dataset values: read and write selections, points, queries; grow by resize or append."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from h5lake.chunks import engine
from h5lake.chunks.layout import ChunkCodec, DatasetLayout
from h5lake.chunks.locate import ChunkLocator, NativeChunks
from h5lake.errors import InvalidInput, MethodNotAllowed, TooLarge
from h5lake.model.acl import Permission
from h5lake.model.ids import Collection, object_key
from h5lake.model.projection import project, project_points
from h5lake.model.query import query_mask
from h5lake.model.selection import PointSelection, Selection
from h5lake.model.shapes import SpaceClass, space_from_json
from h5lake.model.types import elements_from_buffer, fill_value_array, is_variable, item_size, wire_dtype
from h5lake.model.values import array_to_bytes, array_to_json, bytes_to_array, json_to_array
from h5lake.service.context import Caller, Service
from h5lake.service.datasets import codec_filters, is_linked
from h5lake.service.documents import Doc
from h5lake.service.domains import Domain
from h5lake.service.objects import open_object

STREAM_BLOCK_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class OpenDataset:
    domain: Domain
    doc: Doc
    layout: DatasetLayout | None  # None for a null dataspace

    @property
    def type_json(self) -> Doc:
        type_json: Doc = self.doc["type"]
        return type_json

    def require_layout(self) -> DatasetLayout:
        if self.layout is None:
            raise InvalidInput("a dataset with a null dataspace has no values")
        return self.layout


async def locator_for(svc: Service, domain: Domain, doc: Doc) -> ChunkLocator:
    if is_linked(doc):
        from h5lake.sources.linked import linked_locator

        return await linked_locator(svc, domain, doc)
    return NativeChunks(svc.store, doc["id"])


async def build_layout(svc: Service, domain: Domain, doc: Doc) -> DatasetLayout | None:
    space = space_from_json(doc["shape"])
    if space.kind is SpaceClass.NULL:
        return None
    props = doc.get("creationProperties", {})
    chunk_shape = tuple(doc.get("layout", {}).get("dims", []))
    if space.kind is SpaceClass.SCALAR:
        chunk_shape = ()
    codec, fill = codec_and_fill(doc["type"], chunk_shape, props.get("filters"), props.get("fillValue"))
    locator = await locator_for(svc, domain, doc)
    return DatasetLayout(doc["id"], domain.path, space.dims, codec, fill, locator)


_CODEC_CACHE_SIZE = 256
_codecs: OrderedDict[bytes, tuple[ChunkCodec, np.ndarray]] = OrderedDict()


def codec_and_fill(type_json: Doc, chunk_shape: tuple[int, ...], filters: Any, fill_json: Any) -> tuple[ChunkCodec, np.ndarray]:
    """A dataset's codec and (read-only) fill element, shared by every request that asks with
    the same type, chunk shape, filters and fill value.

    Both are pure functions of those values, so a cache keyed by them is never stale, even
    when another process changes the dataset: a changed document asks with a different key.
    Building them parses the type and the filters, a good part of a small read's cost.
    """
    key = orjson.dumps([type_json, chunk_shape, filters, fill_json], option=orjson.OPT_SORT_KEYS)
    found = _codecs.get(key)
    if found is not None:
        _codecs.move_to_end(key)
        return found
    codec = ChunkCodec.for_dataset(type_json, chunk_shape, codec_filters(filters))
    fill = fill_value_array(type_json, fill_json)
    if codec.dtype.subdtype is None:  # an H5T_ARRAY fill keeps its dims as its shape (numpy folds them)
        fill = np.asarray(fill, dtype=codec.dtype)
    fill.flags.writeable = False
    _codecs[key] = codec, fill
    if len(_codecs) > _CODEC_CACHE_SIZE:
        _codecs.popitem(last=False)
    return codec, fill


async def open_dataset(
    svc: Service, caller: Caller, domain_path: str, dset_id: str, permission: Permission
) -> OpenDataset:
    domain, found = await open_object(svc, caller, domain_path, dset_id, permission, Collection.DATASETS)
    return OpenDataset(domain, found.doc, await build_layout(svc, domain, found.doc))


def parse_fields(text: str | None, dtype: np.dtype[Any]) -> list[str] | None:
    if not text:
        return None
    if dtype.names is None:
        raise InvalidInput("fields can only be given for compound types")
    names = [n for n in text.split(":") if n]
    for n in names:
        if n not in dtype.names:
            raise InvalidInput(f"no field {n!r} in the compound type")
    return names


def field_type(type_json: Doc, names: list[str]) -> Doc:
    fields = {f["name"]: f for f in type_json["fields"]}
    return {"class": "H5T_COMPOUND", "fields": [fields[n] for n in names]}


# --- reads ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Query:
    expression: str
    limit: int | None


async def read(
    svc: Service, ds: OpenDataset, selection: Selection | None, fields: list[str] | None = None
) -> np.ndarray:
    layout = ds.require_layout()
    sel = selection if selection is not None else Selection.all(layout.shape)
    arr = await engine.read_selection(layout, sel, svc.chunk_concurrency)
    return arr[fields] if fields else arr


async def read_points(svc: Service, ds: OpenDataset, points: PointSelection) -> np.ndarray:
    return await engine.read_points(ds.require_layout(), points, svc.chunk_concurrency)


async def query(svc: Service, ds: OpenDataset, selection: Selection | None, q: Query) -> tuple[np.ndarray, np.ndarray]:
    """Matching elements (and their flat indexes within the selection's first dimension)."""
    layout = ds.require_layout()
    sel = selection if selection is not None else Selection.all(layout.shape)
    found_values: list[np.ndarray] = []
    found_index: list[np.ndarray] = []
    total = 0
    offset = 0
    for piece in engine.row_split(sel, layout, STREAM_BLOCK_BYTES):
        arr = await engine.read_selection(layout, piece, svc.chunk_concurrency)
        mask = query_mask(q.expression, arr)
        idx = np.flatnonzero(mask)
        if q.limit is not None:
            idx = idx[: max(0, q.limit - total)]
        found_values.append(arr.reshape(-1)[idx])
        found_index.append(idx + offset)
        offset += arr.size
        total += idx.size
        if q.limit is not None and total >= q.limit:
            break
    return np.concatenate(found_values) if found_values else np.empty(0, layout.dtype), np.concatenate(found_index)


def check_size(svc: Service, nbytes: int) -> None:
    if nbytes > svc.limits.max_request_size:
        raise TooLarge(
            f"selection of {nbytes} bytes exceeds the limit of {svc.limits.max_request_size}; "
            "request it in parts or as application/octet-stream"
        )


def stream(svc: Service, ds: OpenDataset, selection: Selection | None) -> tuple[int, AsyncIterator[bytes]]:
    """The packed bytes of a selection as a stream of blocks, for reads of any size."""
    layout = ds.require_layout()
    sel = selection if selection is not None else Selection.all(layout.shape)
    encode: Callable[[np.ndarray], bytes] = lambda a: array_to_bytes(a, ds.type_json)
    size = sel.count * layout.dtype.itemsize
    return size, engine.stream_selection(layout, sel, svc.chunk_concurrency, encode, STREAM_BLOCK_BYTES)


def to_json_value(ds: OpenDataset, arr: np.ndarray, fields: list[str] | None = None) -> Any:
    type_json = field_type(ds.type_json, fields) if fields else ds.type_json
    return array_to_json(arr, type_json)


def to_bytes(ds: OpenDataset, arr: np.ndarray, fields: list[str] | None = None) -> bytes:
    type_json = field_type(ds.type_json, fields) if fields else ds.type_json
    return array_to_bytes(arr, type_json)


# --- writes -----------------------------------------------------------------------------------


def values_from_bytes(ds: OpenDataset, data: bytes, shape: tuple[int, ...], fields: list[str] | None) -> np.ndarray:
    type_json = field_type(ds.type_json, fields) if fields else ds.type_json
    layout = ds.require_layout()
    count = 1
    for n in shape:
        count *= n
    # a body of one element's bytes is broadcast; never for variable-length types, whose byte
    # count says nothing about their element count (two empty strings in a compound are 8 bytes)
    if ds.type_json.get("class") != "H5T_STRING" and not is_variable(ds.type_json) and count > 1 and not fields:
        itemsize = layout.dtype.itemsize
        if len(data) == itemsize:  # one element: broadcast
            one = bytes_to_array(data, type_json, ())
            return np.broadcast_to(one, shape)
    return bytes_to_array(data, type_json, shape)


def values_from_json(ds: OpenDataset, value: Any, shape: tuple[int, ...], fields: list[str] | None) -> np.ndarray:
    type_json = field_type(ds.type_json, fields) if fields else ds.type_json
    return json_to_array(value, type_json, shape, broadcast=True)


async def write(
    svc: Service, ds: OpenDataset, selection: Selection | None, values: np.ndarray, fields: list[str] | None = None
) -> None:
    layout = writable(ds)
    await _register_linked_files(svc, ds, values)
    sel = selection if selection is not None else Selection.all(layout.shape)
    work: Callable[[], Awaitable[Any]]
    if fields:
        work = lambda: _write_fields(svc, layout, sel, values, fields)
    else:
        work = lambda: engine.write_selection(layout, sel, values, svc.chunk_concurrency)
    await _recorded(svc, layout, _chunks_of(layout, sel), work)


async def _recorded(
    svc: Service, layout: DatasetLayout, indexes: list[tuple[int, ...]], work: Callable[[], Awaitable[Any]]
) -> None:
    """Run a chunk write between the catalog's durable intent and its note of what changed."""
    intent = await svc.catalog.begin(layout.domain, layout.dataset_id, indexes)
    try:
        await work()
    except BaseException:
        svc.catalog.abort(intent)
        raise
    svc.catalog.note(layout.domain, layout.dataset_id, indexes, intent)


def _chunks_of(layout: DatasetLayout, sel: Selection) -> list[tuple[int, ...]]:
    return [p.chunk_index for p in project(sel, layout.shape, layout.chunk_shape)]


async def _write_fields(
    svc: Service, layout: DatasetLayout, sel: Selection, values: np.ndarray, fields: list[str]
) -> None:
    async def one(p: Any) -> None:
        def modify(chunk: np.ndarray) -> None:
            part = chunk[p.chunk_selection]
            for f in fields:
                part[f] = values[f][p.out_selection]
            chunk[p.chunk_selection] = part

        await engine.update_chunk(layout, p.chunk_index, modify, False)

    await engine.bounded(project(sel, layout.shape, layout.chunk_shape), one, svc.chunk_concurrency)


async def write_points(
    svc: Service, ds: OpenDataset, points: PointSelection, values: np.ndarray
) -> None:
    layout = writable(ds)
    await _register_linked_files(svc, ds, values)
    indexes = [p.chunk_index for p in project_points(points, layout.chunk_shape)]
    await _recorded(svc, layout, indexes, lambda: engine.write_points(layout, points, values, svc.chunk_concurrency))


async def write_stream(
    svc: Service, ds: OpenDataset, selection: Selection | None, body: AsyncIterator[bytes]
) -> None:
    """Write a packed body of any size block by block as it arrives (fixed-size types only).

    Memory stays bounded by one block: the body is never held whole, so the request-size limit
    (which bounds buffered bodies) does not apply; the selection bounds the body instead.
    """
    layout = writable(ds)
    sel = selection if selection is not None else Selection.all(layout.shape)
    itemsize = wire_size(ds)
    wire = wire_dtype(ds.type_json)
    expected = sel.count * itemsize
    received = 0
    leftover = b""
    it = body.__aiter__()
    for piece in engine.row_split(sel, layout, STREAM_BLOCK_BYTES):
        need = piece.count * itemsize
        block = bytearray(need)
        filled = 0
        while filled < need:
            if not leftover:
                try:
                    leftover = await it.__anext__()
                except StopAsyncIteration:
                    raise InvalidInput(f"body has {received} bytes, expected {expected}") from None
                received += len(leftover)
                if received > expected:
                    raise InvalidInput(f"body has more than the {expected} bytes the selection needs")
            take = min(len(leftover), need - filled)
            block[filled : filled + take] = leftover[:take]
            leftover = leftover[take:]
            filled += take
        values = elements_from_buffer(block, wire, piece.shape)
        if wire != layout.dtype:
            values = values.astype(layout.dtype.base)
        await _register_linked_files(svc, ds, values)
        await _recorded(
            svc,
            layout,
            _chunks_of(layout, piece),
            lambda v=values, p=piece: engine.write_selection(layout, p, v, svc.chunk_concurrency),  # type: ignore[misc]
        )
        del block, values
    async for extra in it:
        if extra:
            raise InvalidInput(f"body has more than the {expected} bytes the selection needs")


def wire_size(ds: OpenDataset) -> int:
    """Bytes per element in a binary body (packed, unlike a compound with explicit offsets)."""
    size = item_size(ds.type_json)
    if size is None:
        raise InvalidInput("variable-length values have no fixed size")
    return size


async def _register_linked_files(svc: Service, ds: OpenDataset, values: np.ndarray) -> None:
    """A linked dataset's chunk table names files: check and record them before storing."""
    if ds.doc.get("chunk_table_of"):
        from h5lake.sources.linked import register_table_sources

        await register_table_sources(svc, ds.domain, ds.doc, values)


def writable(ds: OpenDataset) -> DatasetLayout:
    layout = ds.require_layout()
    if is_linked(ds.doc):
        raise MethodNotAllowed("this dataset is read-only: its values live in an HDF5 file")
    return layout


async def append(
    svc: Service, caller: Caller, domain_path: str, ds: OpenDataset, count: int, axis: int
) -> Selection:
    """Grow the dataset by ``count`` along ``axis`` and return the selection of the new region."""
    from h5lake.service.datasets import resize

    layout = writable(ds)
    if not 0 <= axis < len(layout.shape):
        raise InvalidInput(f"append_dim must be in 0..{len(layout.shape) - 1}")
    await resize(svc, caller, domain_path, ds.doc["id"], {"extend": count, "extend_dim": axis})
    fresh = await svc.docs.require(object_key(ds.doc["id"]), "dataset")
    dims = tuple(fresh.doc["shape"]["dims"])
    parts = []
    from h5lake.model.selection import Slice

    for i, n in enumerate(dims):
        parts.append(Slice(n - count, n) if i == axis else Slice(0, n))
    return Selection(tuple(parts))


async def reopen(svc: Service, ds: OpenDataset) -> OpenDataset:
    fresh = await svc.docs.require(object_key(ds.doc["id"]), "dataset")
    return OpenDataset(ds.domain, fresh.doc, await build_layout(svc, ds.domain, fresh.doc))
