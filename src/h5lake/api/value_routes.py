"""``/datasets/{id}/value``: hyperslab, point and query reads and writes, JSON or binary.

Each handler parses its request into a typed value (``service.value_requests``), makes one
service call, and serializes what it gets back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

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
    links,
    ok,
    service,
    wants_binary,
)
from h5lake.errors import InvalidInput
from h5lake.model.values import array_to_bytes, array_to_json
from h5lake.service import values
from h5lake.service.value_requests import (
    Append,
    JsonValues,
    PackedBody,
    PointRead,
    Points,
    Query,
    QueryUpdate,
    ValueRead,
    ValuesRead,
    ValueWrite,
)


def _query(request: Request) -> Query | None:
    text = request.query_params.get("query")
    return Query(text, int_param(request, "Limit", minimum=1)) if text else None


def _value_read(request: Request, select: str | None, *, null_reads_empty: bool) -> ValueRead:
    return ValueRead(
        select=select,
        fields=request.query_params.get("fields"),
        query=_query(request),
        binary=wants_binary(request),
        null_reads_empty=null_reads_empty,
    )


def _value_hrefs(request: Request) -> list[dict[str, str]]:
    return links(request).dataset_part(request.path_params["id"], "value")


async def _reply(request: Request, found: ValuesRead) -> Response:
    as_binary = wants_binary(request)
    if found.blocks is not None:
        if found.size > values.STREAM_BLOCK_BYTES:
            return StreamingResponse(found.blocks, media_type=OCTET, headers={"Content-Length": str(found.size)})
        return binary(b"".join([c async for c in found.blocks]))
    if found.values is None:
        return binary(b"") if as_binary else ok({"value": None, "hrefs": _value_hrefs(request)})
    if as_binary:
        return binary(array_to_bytes(found.values, found.type_json))
    out = {"value": array_to_json(found.values, found.type_json), "hrefs": _value_hrefs(request)}
    if found.index is not None:
        out = {"index": found.index.tolist(), **out}
    return ok(out)


async def get_value(request: Request) -> Response:
    read = _value_read(request, request.query_params.get("select"), null_reads_empty=True)
    found = await values.read_values(service(request), caller(request), domain_param(request), request.path_params["id"], read)
    return await _reply(request, found)


async def post_value(request: Request) -> Response:
    """Point reads (binary uint64 coordinates or JSON ``points``), or a long ``select`` in JSON."""
    svc, who, path, dset_id = service(request), caller(request), domain_param(request), request.path_params["id"]
    if is_binary(request):
        points = Points(packed=await body_bytes(request))
    else:
        body = await json_body(request)
        if not isinstance(body, dict):
            raise InvalidInput("body must be a JSON object with points or select")
        if "select" in body and "points" not in body:
            read = _value_read(request, body["select"], null_reads_empty=False)
            return await _reply(request, await values.read_values(svc, who, path, dset_id, read))
        if "points" not in body:
            raise InvalidInput("body must have points or select")
        points = Points(listed=body["points"])
    found = await values.read_points(svc, who, path, dset_id, PointRead(points, wants_binary(request)))
    return await _reply(request, found)


class _RequestBody:
    """The request's packed body, read by the use case only if and as it needs it."""

    def __init__(self, request: Request) -> None:
        self.request = request

    def stream(self) -> AsyncIterator[bytes]:
        return self.request.stream()

    async def read(self) -> bytes:
        return await body_bytes(self.request)


async def put_value(request: Request) -> Response:
    svc, who, path, dset_id = service(request), caller(request), domain_param(request), request.path_params["id"]
    fields = request.query_params.get("fields")
    query = _query(request)
    if query is not None:
        update = QueryUpdate.from_body(query, await json_body(request, allow_empty=False), fields)
        index = await values.update_where(svc, who, path, dset_id, update)
        return ok({"index": index.tolist(), "hrefs": _value_hrefs(request)})
    count = int_param(request, "append", minimum=1)
    append = Append(count, int_param(request, "append_dim") or 0) if count is not None else None
    body: PackedBody | JsonValues
    if is_binary(request):
        body = _RequestBody(request)
    else:
        body = JsonValues.from_body(await json_body(request, allow_empty=False))
    write = ValueWrite(body, select=request.query_params.get("select"), fields=fields, append=append)
    await values.write_values(svc, who, path, dset_id, write)
    return ok({})


ROUTES = [
    Route("/datasets/{id}/value", get_value, methods=["GET"]),
    Route("/datasets/{id}/value", post_value, methods=["POST"]),
    Route("/datasets/{id}/value", put_value, methods=["PUT"]),
]
