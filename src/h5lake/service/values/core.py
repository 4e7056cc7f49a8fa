"""Dataset values, one use case per request: read (hyperslab, query or points), write
(hyperslab, points, append, streamed), and update where a query matches.

Each opens the dataset once (its document read once), decides read-only and size policy here,
and hands the chunk engine a layout whose chunks are found through the domain's view.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from h5lake.chunks import engine, writes
from h5lake.chunks.dataset import DatasetLayout
from h5lake.errors import InvalidInput, TooLarge
from h5lake.model.acl import Permission
from h5lake.model.fromjson import json_to_array
from h5lake.model.projection import ChunkProjection, grid_shift, project
from h5lake.model.query import parse_query, update_fields
from h5lake.model.selection import Coords, PairedSelection, PointSelection, Selection, Slice
from h5lake.model.selectparse import Bounds, parse_select
from h5lake.model.types import TypeClass, is_variable
from h5lake.model.values import (
    array_to_buffer,
    bytes_to_array,
    json_item_chars,
    json_size_estimate,
)
from h5lake.service.budget import held_read, released_on_error, reply_bytes
from h5lake.service.context import Caller, Service
from h5lake.service.datasets.core import grow
from h5lake.service.datasets.dataset_layout import native_layout
from h5lake.service.datasets.linked import is_chunk_table
from h5lake.service.datasets.opened import Change, OpenDataset, check_writable, open_dataset
from h5lake.service.documents import Doc
from h5lake.service.values import appends
from h5lake.service.values.queries import check_update_work, fill_matches, query_values, written_rows
from h5lake.service.values.requests import (
    QUERY_UPDATE_SHAPE,
    JsonValues,
    PointRead,
    Points,
    QueryUpdate,
    ValueRead,
    ValuesRead,
    ValueWrite,
)
from h5lake.service.values.writing import chunks_in, recorded, register_linked_files, wire_size, write_stream

STREAM_BLOCK_BYTES = 32 * 1024 * 1024
MAX_QUERY_UPDATE_CHUNKS = 100_000  # chunks one query update may rewrite (each is in its intent)
INDEX_JSON_CHARS = 12  # an element index in a JSON reply
JSON_LIMIT = 256 * 1024 * 1024  # largest selection answered as JSON (packed bytes stream)


def parse_fields(text: str | None, dtype: np.dtype[Any]) -> list[str] | None:
    if not text:
        return None
    if dtype.names is None:
        raise InvalidInput("fields can only be given for compound types")
    names = [n for n in text.split(":") if n]
    known, seen = set(dtype.names), set()
    for n in names:
        if n not in known:
            raise InvalidInput(f"no field {n!r} in the compound type")
        if n in seen:  # numpy refuses a view naming a field twice
            raise InvalidInput(f"fields names {n!r} more than once")
        seen.add(n)
    return names


def field_type(type_json: Doc, names: list[str] | None) -> Doc:
    if not names:
        return type_json
    fields = {f["name"]: f for f in type_json["fields"]}
    return {"class": TypeClass.COMPOUND.value, "fields": [fields[n] for n in names]}


def _selection(layout: DatasetLayout, text: str | list[Any] | Bounds | None) -> Selection | PairedSelection | None:
    if text is None or text == "":
        return None
    if isinstance(text, Bounds):
        return text.parse(layout.shape)
    return parse_select(text, layout.shape)


def _hyperslab(selection: Selection | PairedSelection | None, what: str) -> Selection | None:
    if isinstance(selection, PairedSelection):
        raise InvalidInput(f"several coordinate lists cannot be combined with {what}")
    return selection


def _element_count(text: Any, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape of ``element_count`` values broadcast over a selection of ``shape`` (as HSDS
    does: one value, or the trailing dimensions whose product it is); None if it covers all."""
    if text is None:
        return None
    try:
        count = int(text) if not isinstance(text, bool) else -1
    except (TypeError, ValueError):
        raise InvalidInput(f"element_count must be an integer, got {reprlib.repr(text)}") from None
    total = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if count == total:
        return None
    if count == 1:
        return (1,)
    for rank in range(1, len(shape)):
        tail = shape[len(shape) - rank :]
        if int(np.prod(tail, dtype=np.int64)) == count:
            return tail
    raise InvalidInput(f"element_count {count} cannot be broadcast over a selection of shape {list(shape)}")


def check_size(svc: Service, nbytes: int, binary: bool) -> None:
    """The size policy of a read answered in one piece: packed bytes up to the request-size
    limit, JSON up to `JSON_LIMIT`; larger reads are streamed or refused."""
    if nbytes > (svc.limits.max_request_size if binary else JSON_LIMIT):
        kind = "binary" if binary else "JSON"
        raise TooLarge(f"selection of {nbytes} bytes is too large for one {kind} reply; read it in parts")


def check_streamed(svc: Service, nbytes: int) -> None:
    """A streamed binary reply is bounded too (``--max-reply-bytes``): its memory is a block at
    a time, but its time and bytes grow with the selection (fill of a huge dataset never written)."""
    limit = svc.limits.max_reply_size
    if nbytes > limit:
        raise TooLarge(
            f"selection of {nbytes} bytes is over the limit of {limit} bytes for one reply "
            "(the server's --max-reply-bytes); read it in parts with select=..."
        )


def check_json_reply(svc: Service, arr: np.ndarray, binary: bool) -> None:
    """A JSON reply is refused before it is made when its text would pass ``max_json_size``:
    JSON text is several times the values' bytes, and encoding hundreds of megabytes of it is
    where a server runs out of memory."""
    if binary:
        return
    limit = svc.limits.max_json_size
    estimate = json_size_estimate(arr, limit)
    if estimate > limit:
        raise TooLarge(
            f"about {estimate} bytes of JSON for {arr.size} elements is over the limit of {limit}; "
            "read them as application/octet-stream (Accept header) or in smaller selections"
        )


# --- reads ------------------------------------------------------------------------------------


async def read_values(svc: Service, caller: Caller, domain_path: str, dset_id: str, request: ValueRead) -> ValuesRead:
    """``GET /datasets/{id}/value`` (and ``POST`` with a ``select``)."""
    ds = await open_dataset(svc, caller, domain_path, dset_id, Permission.READ)
    layout = ds.require_layout()
    selection = _selection(layout, request.select)
    fields = parse_fields(request.fields, layout.dtype)
    if isinstance(selection, PairedSelection):
        if request.query is not None:
            raise InvalidInput("several coordinate lists cannot be combined with a query")
        check_size(svc, selection.count * layout.dtype.itemsize, request.binary)
        held = await svc.replies.reserve(reply_bytes(selection.count, layout.dtype, request.binary))
        found = await held_read(held, engine.read_points(layout, selection.points(), svc.workers))
        found = found.reshape(selection.shape)
        found = found[fields] if fields else found
        with released_on_error(held):
            check_json_reply(svc, found, request.binary)
        return ValuesRead(field_type(ds.type_json, fields), found, held=held)
    sel = selection if selection is not None else Selection.all(layout.shape)
    if request.query is not None:
        matches, index = await query_values(svc, layout, sel, request.query)
        found = matches[fields] if fields else matches
        check_json_reply(svc, found, request.binary)
        return ValuesRead(field_type(ds.type_json, fields), found, index)
    if request.binary and not fields and not is_variable(ds.type_json):
        check_streamed(svc, sel.count * layout.dtype.itemsize)
        encode: Callable[[np.ndarray], bytes | memoryview] = lambda a: array_to_buffer(a, ds.type_json)
        blocks = engine.stream_selection(layout, sel, svc.workers, encode, STREAM_BLOCK_BYTES)
        size = sel.count * layout.dtype.itemsize
        return ValuesRead(ds.type_json, size=size, blocks=blocks, streamed=size > STREAM_BLOCK_BYTES)
    check_size(svc, sel.count * layout.dtype.itemsize, request.binary)
    per_item = json_item_chars(layout.dtype)
    if not request.binary and per_item is not None and sel.count * per_item > svc.limits.max_json_size:
        raise TooLarge(  # a fixed-size type: refused before anything is read
            f"about {sel.count * per_item} bytes of JSON for {sel.count} elements is over the limit of "
            f"{svc.limits.max_json_size}; read them as application/octet-stream (Accept header) or in smaller selections"
        )
    held = await svc.replies.reserve(reply_bytes(sel.count, layout.dtype, request.binary))
    arr = await held_read(held, engine.read_selection(layout, sel, svc.workers))
    found = arr[fields] if fields else arr
    with released_on_error(held):
        check_json_reply(svc, found, request.binary)
    return ValuesRead(field_type(ds.type_json, fields), found, held=held)


async def read_points(svc: Service, caller: Caller, domain_path: str, dset_id: str, request: PointRead) -> ValuesRead:
    """``POST /datasets/{id}/value`` with point coordinates."""
    ds = await open_dataset(svc, caller, domain_path, dset_id, Permission.READ)
    layout = ds.require_layout()
    fields = parse_fields(request.fields, layout.dtype)
    # parsing millions of listed points is seconds of Python: on the CPU pool, not the event loop
    points = await svc.workers.cpu(request.points.parse, layout.shape, size=request.points.work)
    held = await svc.replies.reserve(reply_bytes(points.count, layout.dtype, request.binary))
    found = await held_read(held, engine.read_points(layout, points, svc.workers))
    found = found[fields] if fields else found
    with released_on_error(held):
        check_json_reply(svc, found, request.binary)
    return ValuesRead(field_type(ds.type_json, fields), found, held=held)


# --- writes -----------------------------------------------------------------------------------


async def write_values(svc: Service, caller: Caller, domain_path: str, dset_id: str, request: ValueWrite) -> None:
    """``PUT /datasets/{id}/value``: a hyperslab, points, or the region an append adds."""
    ds = await open_dataset(svc, caller, domain_path, dset_id, Permission.UPDATE)
    check_writable(ds.domain, ds.doc, Change.VALUES)
    layout = ds.require_layout()
    parse_fields(request.fields, layout.dtype)  # checked before anything changes
    selection: Selection | PairedSelection | None
    appended: np.ndarray | None = None
    if request.append is not None:
        axis = request.append.axis
        if not 0 <= axis < len(layout.shape):
            raise InvalidInput(f"append_dim must be in 0..{len(layout.shape) - 1}")
        appended = await _append_json(svc, ds, layout, request, axis)
        reserved = await appends.reserve(svc, ds.domain, ds.id, request.append.count, axis)
        if reserved is not None:  # rows reserved, written, then shown (service.values.appends)
            try:
                doc = reserved.writable_doc()
                await _write_values(svc, OpenDataset(ds.domain, doc, native_layout(ds.domain, doc)), request, reserved.rows(), appended)
            finally:
                await appends.publish(svc, ds.id, reserved)
            return
        resized = await grow(svc, ds.domain, ds.id, {"extend": request.append.count, "extend_dim": axis})
        ds = OpenDataset(ds.domain, resized.doc, native_layout(ds.domain, resized.doc))
        selection = resized.appended(axis)
    else:
        selection = _selection(layout, request.select)
    await _write_values(svc, ds, request, selection, appended)


async def _write_values(
    svc: Service, ds: OpenDataset, request: ValueWrite, selection: Selection | PairedSelection | None,
    appended: np.ndarray | None,
) -> None:
    """The values of ``request`` written at ``selection`` (or where the body says)."""
    layout = ds.require_layout()
    fields = parse_fields(request.fields, layout.dtype)
    body = request.body
    if isinstance(body, JsonValues) and request.select is None and request.append is None:
        if body.has_select:
            selection = _selection(layout, body.select)
        elif body.bounds is not None:
            selection = body.bounds.parse(layout.shape)
    shape = selection.shape if selection is not None else layout.shape
    if isinstance(body, JsonValues) and body.fields is not None and request.fields is None:
        fields = parse_fields(body.fields, layout.dtype)
    element_count = request.element_count
    if isinstance(body, JsonValues) and body.element_count is not None:
        element_count = body.element_count
    points_body = isinstance(body, JsonValues) and body.points is not None
    broadcast = None if points_body else _element_count(element_count, shape)
    if not isinstance(body, JsonValues):
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        fixed = not is_variable(ds.type_json) and not fields
        if fixed and broadcast is None and count * wire_size(ds) > STREAM_BLOCK_BYTES:
            await write_stream(svc, ds, layout, _hyperslab(selection, "a streamed write"), body, STREAM_BLOCK_BYTES)
            return
        if broadcast is not None:
            check_broadcast(svc, layout, shape)
        arr = values_from_bytes(ds, await body.read(), broadcast or shape, fields)
        await _write_any(svc, ds, layout, selection, _broadcast(arr, broadcast, shape), fields)
        return
    if body.points is not None:
        listed = Points(listed=body.points)
        points = await svc.workers.cpu(listed.parse, layout.shape, size=listed.work)
        arr = await svc.workers.cpu(json_values, ds, body, (points.npoints,), fields, size=listed.work)
        await _write_points(svc, ds, layout, points, arr, fields)
        return
    if appended is not None:
        await _write_any(svc, ds, layout, selection, appended, fields)
        return
    check_broadcast(svc, layout, shape)
    # JSON values become an array on the CPU pool when there are many (a second per few million)
    work = math.prod(broadcast or shape) * layout.dtype.itemsize
    arr = await svc.workers.cpu(json_values, ds, body, broadcast or shape, fields, size=work)
    await _write_any(svc, ds, layout, selection, _broadcast(arr, broadcast, shape), fields)


async def _append_json(
    svc: Service, ds: OpenDataset, layout: DatasetLayout, request: ValueWrite, axis: int
) -> np.ndarray | None:
    """The JSON ``value`` of an append, read before the dataset grows (None for other bodies):
    it must hold the appended region exactly, as HSDS requires (no broadcast unless
    ``element_count`` asks for it), and a value that does not fit leaves the dataset as it was."""
    body = request.body
    if not isinstance(body, JsonValues) or body.packed is not None or body.points is not None:
        return None
    if request.element_count is not None or body.element_count is not None or request.append is None:
        return None
    shape = tuple(request.append.count if d == axis else n for d, n in enumerate(layout.shape))
    names = request.fields if request.fields is not None else body.fields
    t = field_type(ds.type_json, parse_fields(names, layout.dtype))
    check_broadcast(svc, layout, shape)
    work = math.prod(shape) * layout.dtype.itemsize
    arr: np.ndarray = await svc.workers.cpu(json_to_array, body.value, t, shape, size=work)
    return arr


def check_broadcast(svc: Service, layout: DatasetLayout, shape: tuple[int, ...]) -> None:
    """A few values broadcast into a selection write as much as a body of the whole selection
    would, so the selection is bounded like a body."""
    nbytes = math.prod(shape) * layout.dtype.itemsize
    if nbytes > svc.limits.max_request_size:
        raise TooLarge(
            f"a write of {nbytes} bytes is over the request limit of {svc.limits.max_request_size}; write it in parts"
        )


def _broadcast(arr: np.ndarray, broadcast: tuple[int, ...] | None, shape: tuple[int, ...]) -> np.ndarray:
    if broadcast is None:
        return arr
    return np.broadcast_to(arr, shape + arr.shape[len(broadcast) :])


async def _write_any(
    svc: Service,
    ds: OpenDataset,
    layout: DatasetLayout,
    selection: Selection | PairedSelection | None,
    values: np.ndarray,
    fields: list[str] | None,
) -> None:
    if not isinstance(selection, PairedSelection):
        await _write(svc, ds, layout, selection, values, fields)
        return
    points = selection.points()
    await _write_points(svc, ds, layout, points, np.ascontiguousarray(values).reshape((points.npoints,) + values.shape[len(selection.shape) :]), fields)


def json_values(ds: OpenDataset, body: JsonValues, shape: tuple[int, ...], fields: list[str] | None) -> np.ndarray:
    if body.packed is not None:
        return values_from_bytes(ds, body.packed, shape, fields)
    return json_to_array(body.value, field_type(ds.type_json, fields), shape, broadcast=True)


def values_from_bytes(ds: OpenDataset, data: bytes | memoryview, shape: tuple[int, ...], fields: list[str] | None) -> np.ndarray:
    type_json = field_type(ds.type_json, fields)
    layout = ds.require_layout()
    count = 1
    for n in shape:
        count *= n
    # a body of one element's bytes is broadcast; never for variable-length types, whose byte
    # count says nothing about their element count (two empty strings in a compound are 8 bytes)
    if ds.type_json.get("class") != TypeClass.STRING and not is_variable(ds.type_json) and count > 1 and not fields:
        itemsize = layout.dtype.itemsize
        if len(data) == itemsize:  # one element: broadcast
            one = bytes_to_array(data, type_json, ())
            return np.broadcast_to(one, shape)
    return bytes_to_array(data, type_json, shape)


async def _write(
    svc: Service,
    ds: OpenDataset,
    layout: DatasetLayout,
    selection: Selection | None,
    values: np.ndarray,
    fields: list[str] | None,
) -> None:
    await register_linked_files(svc, ds, values)
    sel = selection if selection is not None else Selection.all(layout.shape)
    work: Callable[[DatasetLayout], Awaitable[Any]]
    staged = None  # the write while the intent is written (`recorded`)
    if fields:
        work = lambda at: _write_fields(svc, at, sel, values, fields)
    else:
        work = lambda at: writes.write_selection(at, sel, values, svc.workers)
        staged = lambda at, ready: writes.write_selection(at, sel, values, svc.workers, ready)
    await recorded(svc, ds, layout, await chunks_in(svc, layout, sel), work, staged=staged)


async def _write_fields(
    svc: Service, layout: DatasetLayout, sel: Selection, values: np.ndarray, fields: list[str]
) -> None:
    async def one(p: ChunkProjection) -> None:
        def modify(chunk: np.ndarray) -> None:
            part = chunk[p.chunk_selection]
            for f in fields:
                part[f] = values[f][p.out_selection]
            chunk[p.chunk_selection] = part

        await writes.update_chunk(layout, p.chunk_index, modify, False, svc.workers)

    await svc.workers.each(project(sel, layout.shape, layout.chunk_shape, layout.origin), one)


async def _write_points(
    svc: Service, ds: OpenDataset, layout: DatasetLayout, points: PointSelection, values: np.ndarray,
    fields: list[str] | None = None,
) -> None:
    await register_linked_files(svc, ds, values)
    grouped = await engine.group_points(points, layout, svc.workers)  # millions of points: off the event loop
    indexes = [p.chunk_index for p in grouped]

    def write(at: DatasetLayout) -> Awaitable[list[tuple[int, ...]]]:
        same_grid = at.chunk_shape == layout.chunk_shape and at.origin == layout.origin
        return writes.write_points(at, points, values, svc.workers, grouped if same_grid else None, fields)

    await recorded(svc, ds, layout, indexes, write)


# --- update where a query matches ------------------------------------------------------------


async def update_where(
    svc: Service, caller: Caller, domain_path: str, dset_id: str, request: QueryUpdate
) -> tuple[np.ndarray, np.ndarray, Doc]:
    """``PUT /datasets/{id}/value?query=...``: set fields of the matching elements; returns the
    indexes of the elements changed, those elements as they now are, and their type.

    The query is evaluated inside each chunk's conditional write, on the chunk as it is then,
    and only the named fields of the matching elements change: a concurrent write of other
    fields or elements is never lost (a lost race re-reads the chunk and evaluates again).
    With a ``Limit`` chunks are taken in order until that many elements matched.
    """
    ds = await open_dataset(svc, caller, domain_path, dset_id, Permission.UPDATE)
    check_writable(ds.domain, ds.doc, Change.VALUES)
    layout = ds.require_layout()
    parse_fields(request.fields, layout.dtype)
    names = layout.dtype.names
    if names is None:
        raise InvalidInput(QUERY_UPDATE_SHAPE)
    if len(layout.shape) != 1:
        raise InvalidInput("query updates need a one-dimensional dataset")
    for name in request.values:
        if name not in names:
            raise InvalidInput(f"no field {name!r} in the compound type")
    probe = np.zeros(1, dtype=layout.dtype)
    converted = update_fields(probe, request.values)  # InvalidInput for a value its field cannot hold
    if is_chunk_table(ds.doc):
        await register_linked_files(svc, ds, _table_probe(probe, request.values))
    predicate = parse_query(request.query.expression)
    limit = request.query.limit
    rows, per_chunk = layout.shape[0], max(1, layout.chunk_shape[0])
    lead, base = grid_shift(layout.origin[0] if layout.origin else 0, per_chunk)
    chunks = -(-(rows + lead) // per_chunk)
    # a selection (HSDS honours it) limits the elements the query looks at, and the chunks read
    selected = _hyperslab(_selection(layout, request.select), "a query")
    sel_part = selected.parts[0] if selected is not None else None
    # the chunks read (counted from the grid's first): how many, and a window of them
    chunks_looked_at = chunks
    chunk_window: Callable[[int, int], Sequence[int]] = lambda i, j: range(chunks)[i:j]
    if sel_part is not None:
        if sel_part.count == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=layout.dtype), ds.type_json
        chunks_looked_at, chunk_window = _chunks_holding(sel_part, lead, per_chunk)
        rows_looked_at = sel_part.count
    else:
        rows_looked_at = rows
    if not fill_matches(predicate, layout):  # a chunk never written changes nothing: skip those
        kept = await written_rows(layout, sel_part, chunks_looked_at, (lead, base, per_chunk))
        if kept is not None:
            chunks_looked_at, chunk_window = len(kept), lambda i, j: kept[i:j]
    check_update_work(svc, chunks_looked_at * per_chunk)
    most = rows_looked_at if limit is None else min(rows_looked_at, limit)
    if most * INDEX_JSON_CHARS > svc.limits.max_json_size:  # the reply lists every changed index
        raise TooLarge(
            f"a query update may change up to {most} elements, more than one reply can list "
            f"(max {svc.limits.max_json_size // INDEX_JSON_CHARS}); give a smaller Limit or update a selection at a time"
        )
    if chunks_looked_at > MAX_QUERY_UPDATE_CHUNKS and limit is None:
        raise TooLarge(
            f"a query update over {chunks_looked_at} chunks is over the limit of {MAX_QUERY_UPDATE_CHUNKS}; "
            "give a Limit or update a selection at a time"
        )
    found: dict[int, np.ndarray] = {}
    changed_rows: dict[int, np.ndarray] = {}
    written: list[tuple[int, ...]] = []
    in_selection = None if sel_part is None else _positions_in(sel_part)

    async def one(target: DatasetLayout, index: tuple[int, ...], wanted: int | None = None) -> None:
        at = (index[0] - base) * per_chunk  # the chunk's first position, counted from the grid's first chunk
        start = max(at, lead) - lead  # its first element
        stop = min(rows, at + per_chunk - lead)
        local = start + lead - at

        def modify(chunk: np.ndarray) -> bool:
            part = chunk[local : local + stop - start]
            matches = predicate(part)
            if in_selection is not None:
                matches = matches & in_selection(start, stop)
            idx = np.flatnonzero(matches)
            if wanted is not None:
                idx = idx[:wanted]
            found[index[0]] = idx + start
            if not idx.size:
                changed_rows[index[0]] = part[:0].copy()
                return False
            for name in request.values:
                part[name][idx] = converted[name][0]
            changed_rows[index[0]] = part[idx].copy()
            return True

        await writes.update_chunk(target, index, modify, False, svc.workers)
        if found[index[0]].size:
            written.append(index)

    total = 0
    # windows of chunks, each between its own intent and note, so neither lists more than
    # MAX_QUERY_UPDATE_CHUNKS chunks; with a Limit the windows stop once enough matched
    for first in range(0, chunks_looked_at, MAX_QUERY_UPDATE_CHUNKS):
        grid: list[tuple[int, ...]] = [(base + i,) for i in chunk_window(first, first + MAX_QUERY_UPDATE_CHUNKS)]
        written.clear()

        async def work(target: DatasetLayout, grid: list[tuple[int, ...]] = grid, before: int = total) -> None:
            nonlocal total
            total = before  # a compact dataset's write may run again after a lost race
            written.clear()
            for index in grid:
                found.pop(index[0], None)
                changed_rows.pop(index[0], None)
            if limit is None:
                await svc.workers.each(grid, lambda index: one(target, index))
                return
            for index in grid:
                await one(target, index, limit - total)
                total += found[index[0]].size
                if total >= limit:
                    return

        await recorded(svc, ds, layout, grid, work, lambda: list(written))
        if limit is not None and total >= limit:
            break
    parts = [found[i] for i in sorted(found)]
    changed = [changed_rows[i] for i in sorted(changed_rows)]
    index = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    return index, np.concatenate(changed) if changed else np.empty(0, dtype=layout.dtype), ds.type_json


def _chunks_holding(part: Slice | Coords, lead: int, per_chunk: int) -> tuple[int, Callable[[int, int], Sequence[int]]]:
    """The chunks (counted from the grid's first) holding an element of a one-dimensional
    selection: how many, and those numbered ``i..j-1`` of them in order. A coordinate list, or a
    step of a chunk or more, skips the chunks between its elements."""
    if isinstance(part, Coords):
        found = np.unique((part.index + lead) // per_chunk).tolist()
        return len(found), lambda i, j: found[i:j]
    if part.step < per_chunk:  # every chunk from the first element's to the last's holds one
        run = range((part.start + lead) // per_chunk, (part.last + lead) // per_chunk + 1)
        return len(run), lambda i, j: run[i:j]
    # each element in a chunk of its own
    return part.count, lambda i, j: ((part.start + lead + part.step * np.arange(i, min(j, part.count), dtype=np.int64)) // per_chunk).tolist()


def _positions_in(part: Slice | Coords) -> Callable[[int, int], np.ndarray]:
    """For a one-dimensional selection: which of the positions ``start..stop-1`` it holds (a
    coordinate list is sorted once, and each call looks up only its own range of it)."""
    held = np.unique(part.index) if isinstance(part, Coords) else None

    def mask(start: int, stop: int) -> np.ndarray:
        if held is not None:
            lo, hi = np.searchsorted(held, (start, stop))
            out = np.zeros(stop - start, dtype=bool)
            out[held[lo:hi] - start] = True
            return out
        assert isinstance(part, Slice)
        positions = np.arange(start, stop, dtype=np.int64)
        return (positions >= part.start) & (positions < part.stop) & ((positions - part.start) % part.step == 0)

    return mask


def _table_probe(probe: np.ndarray, values: dict[str, Any]) -> np.ndarray:
    """One chunk-table entry with the updated fields, standing for every entry the update
    changes (registration checks each file it names; a size field left alone counts as set)."""
    entry = probe.copy()
    names = entry.dtype.names or ()
    for size_field in ("size", "length"):
        if size_field in names and size_field not in values:
            entry[size_field] = 1
    return entry
