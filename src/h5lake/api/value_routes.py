"""``/datasets/{id}/value``: hyperslab, point and query reads and writes, JSON or binary."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from h5lake.api.http import (
    OCTET,
    binary,
    body_bytes,
    caller,
    domain_param,
    int_param,
    is_binary,
    json_body,
    ok,
    service,
    wants_binary,
)
from h5lake.errors import InvalidInput, TooLarge
from h5lake.model.acl import Permission
from h5lake.model.query import update_fields
from h5lake.model.selection import PointSelection, Selection, parse_select
from h5lake.model.types import is_variable
from h5lake.service import values
from h5lake.service.values import OpenDataset, Query

JSON_LIMIT = 256 * 1024 * 1024  # largest selection answered as JSON (packed bytes stream)


def _selection(ds: OpenDataset, text: str | None) -> Selection | None:
    layout = ds.require_layout()
    if text is None or text == "":
        return None
    return parse_select(text, layout.shape)


async def get_value(request: Request) -> Response:
    svc, who, path = service(request), caller(request), domain_param(request)
    ds = await values.open_dataset(svc, who, path, request.path_params["id"], Permission.READ)
    if ds.layout is None:
        return binary(b"") if wants_binary(request) else ok({"value": None, "hrefs": []})
    return await _read(request, ds, request.query_params.get("select"))


async def _read(request: Request, ds: OpenDataset, select: str | None) -> Response:
    svc = service(request)
    selection = _selection(ds, select)
    fields = values.parse_fields(request.query_params.get("fields"), ds.require_layout().dtype)
    query = request.query_params.get("query")
    if query:
        matches, index = await values.query(svc, ds, selection, Query(query, int_param(request, "Limit", minimum=1)))
        if fields:
            matches = matches[fields]
        if wants_binary(request):
            return binary(values.to_bytes(ds, matches, fields))
        return ok({"index": index.tolist(), "value": values.to_json_value(ds, matches, fields), "hrefs": []})
    if wants_binary(request) and not fields and not is_variable(ds.type_json):
        size, chunks = values.stream(svc, ds, selection)
        if size > values.STREAM_BLOCK_BYTES:
            return StreamingResponse(chunks, media_type=OCTET, headers={"Content-Length": str(size)})
        return binary(b"".join([c async for c in chunks]))
    layout = ds.require_layout()
    count = selection.count if selection is not None else int(np.prod(layout.shape, dtype=np.int64))
    nbytes = count * layout.dtype.itemsize
    binary_reply = wants_binary(request)
    if nbytes > (svc.limits.max_request_size if binary_reply else JSON_LIMIT):
        kind = "binary" if binary_reply else "JSON"
        raise TooLarge(f"selection of {nbytes} bytes is too large for one {kind} reply; read it in parts")
    arr = await values.read(svc, ds, selection, fields)
    if wants_binary(request):
        return binary(values.to_bytes(ds, arr, fields))
    return ok({"value": values.to_json_value(ds, arr, fields), "hrefs": []})


async def post_value(request: Request) -> Response:
    """Point reads (binary uint64 coordinates or JSON ``points``), or a long ``select`` in JSON."""
    svc, who, path = service(request), caller(request), domain_param(request)
    ds = await values.open_dataset(svc, who, path, request.path_params["id"], Permission.READ)
    layout = ds.require_layout()
    if is_binary(request):
        points = PointSelection.from_bytes(await body_bytes(request), layout.shape)
    else:
        body = await json_body(request)
        if not isinstance(body, dict):
            raise InvalidInput("body must be a JSON object with points or select")
        if "select" in body and "points" not in body:
            return await _read(request, ds, body["select"])
        if "points" not in body:
            raise InvalidInput("body must have points or select")
        points = PointSelection.from_json(body["points"], layout.shape)
    arr = await values.read_points(svc, ds, points)
    if wants_binary(request):
        return binary(values.to_bytes(ds, arr))
    return ok({"value": values.to_json_value(ds, arr), "hrefs": []})


async def put_value(request: Request) -> Response:
    svc, who, path = service(request), caller(request), domain_param(request)
    dset_id = request.path_params["id"]
    ds = await values.open_dataset(svc, who, path, dset_id, Permission.UPDATE)
    layout = values.writable(ds)
    fields = values.parse_fields(request.query_params.get("fields"), layout.dtype)
    select = request.query_params.get("select")
    append = int_param(request, "append", minimum=1)
    if request.query_params.get("query"):
        return await _query_update(request, ds)
    if append is not None:
        axis = int_param(request, "append_dim") or 0
        selection: Selection | None = await values.append(svc, who, path, ds, append, axis)
        ds = await values.reopen(svc, ds)
    else:
        selection = _selection(ds, select)
    layout = ds.require_layout()
    shape = selection.shape if selection is not None else layout.shape
    if is_binary(request):
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        fixed = not is_variable(ds.type_json) and not fields
        if fixed and count * values.wire_size(ds) > values.STREAM_BLOCK_BYTES:
            await values.write_stream(svc, ds, selection, request.stream())
            return ok({})
        data = await body_bytes(request)
        arr = values.values_from_bytes(ds, data, shape, fields)
        await values.write(svc, ds, selection, arr, fields)
        return ok({})
    body = await json_body(request, allow_empty=False)
    if not isinstance(body, dict):
        raise InvalidInput("body must be a JSON object with value (or value_base64)")
    if "points" in body:
        points = PointSelection.from_json(body["points"], layout.shape)
        arr = _body_values(ds, body, (points.npoints,), fields)
        if fields:
            raise InvalidInput("fields cannot be combined with point writes")
        await values.write_points(svc, ds, points, arr)
        return ok({})
    if "select" in body and select is None and append is None:
        selection = _selection(ds, body["select"])
        shape = selection.shape if selection is not None else layout.shape
    arr = _body_values(ds, body, shape, fields)
    await values.write(svc, ds, selection, arr, fields)
    return ok({})


def _body_values(ds: OpenDataset, body: dict[str, Any], shape: tuple[int, ...], fields: list[str] | None) -> np.ndarray:
    if "value_base64" in body:
        try:
            data = base64.b64decode(body["value_base64"], validate=True)
        except (binascii.Error, TypeError):
            raise InvalidInput("value_base64 is not valid base64") from None
        return values.values_from_bytes(ds, data, shape, fields)
    if "value" not in body:
        raise InvalidInput("body needs value or value_base64")
    return values.values_from_json(ds, body["value"], shape, fields)


async def _query_update(request: Request, ds: OpenDataset) -> Response:
    """``PUT value?query=...`` with ``{"value": {field: v}}``: update the matching elements."""
    svc = service(request)
    body = await json_body(request, allow_empty=False)
    layout = values.writable(ds)
    if layout.dtype.names is None or not isinstance(body, dict) or not isinstance(body.get("value"), dict):
        raise InvalidInput("a query update needs a compound dataset and {\"value\": {field: value}}")
    q = Query(request.query_params["query"], int_param(request, "Limit", minimum=1))
    _, index = await values.query(svc, ds, None, q)
    if len(layout.shape) != 1:
        raise InvalidInput("query updates need a one-dimensional dataset")
    if index.size:
        points = PointSelection.from_array(index.reshape(-1, 1), layout.shape)
        current = await values.read_points(svc, ds, points)
        await values.write_points(svc, ds, points, update_fields(current, body["value"]))
    return ok({"index": index.tolist(), "hrefs": []})


ROUTES = [
    Route("/datasets/{id}/value", get_value, methods=["GET"]),
    Route("/datasets/{id}/value", post_value, methods=["POST"]),
    Route("/datasets/{id}/value", put_value, methods=["PUT"]),
]
