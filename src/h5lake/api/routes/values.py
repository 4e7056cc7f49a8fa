"""``/datasets/{id}/value``: hyperslab, point and query reads and writes, JSON or binary.

Each handler parses its request into a typed value (``service.values.requests``), makes one
service call, and serializes what it gets back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from h5lake.api import nonfinite
from h5lake.api.connections import READINTO
from h5lake.api.http import (
    BODIES,
    OCTET,
    binary,
    body_bytes,
    caller,
    check_content_coding,
    domain_param,
    flag,
    held,
    int_param,
    is_binary,
    json_body,
    limit_param,
    links,
    ok,
    service,
    wants_binary,
)
from h5lake.errors import InvalidInput, TooLarge
from h5lake.model.acl import Permission
from h5lake.model.selectparse import Bounds
from h5lake.model.types import array_dims
from h5lake.model.values import array_to_bytes, array_to_json
from h5lake.service.domains.core import open_domain
from h5lake.service.values import core as values
from h5lake.service.values.requests import (
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
    return Query(text, limit_param(request)) if text else None


def _fields(request: Request, body_fields: Any = None) -> str | None:
    """``fields``: the query parameter, else (as HSDS reads it) the JSON body's key."""
    fields = request.query_params.get("fields")
    if fields is None and body_fields is not None:
        if not isinstance(body_fields, str):
            raise InvalidInput("fields must be a string of names joined by ':'")
        fields = body_fields
    return fields


def _value_read(request: Request, select: str | list[Any] | Bounds | None, *, body_fields: Any = None) -> ValueRead:
    return ValueRead(
        select=select,
        fields=_fields(request, body_fields),
        query=_query(request),
        binary=wants_binary(request),
    )


def _value_hrefs(request: Request) -> list[dict[str, str]]:
    return links(request).dataset_part(request.path_params["id"], "value")


SEND_BYTES = 4 * 1024 * 1024


async def _slices(blocks: AsyncIterator[bytes | memoryview]) -> AsyncIterator[bytes | memoryview]:
    """Each block handed to the server in views of ``SEND_BYTES``: the transport keeps what the
    socket does not take at once, and a slice at a time keeps that small (a block of a streamed
    read may be 128 MiB). A block's last slice is handed over as a copy: the transport still
    holds it while the next block is read, and a view would keep the whole block alive with it
    (a third block in memory; ~90 MiB more at the peak of a 2 GiB read)."""
    async for block in blocks:
        view = memoryview(block).cast("B")
        del block
        for start in range(0, len(view), SEND_BYTES):
            piece = view[start : start + SEND_BYTES]
            yield piece if start + SEND_BYTES < len(view) else bytes(piece)
            del piece
        del view  # not held while the next block is read


async def _reply(request: Request, found: ValuesRead) -> Response:
    """The reply to a read; values read whole keep their reservation of the server's reply
    budget (`service.budget`) until it is sent."""
    try:
        response = await _made_reply(request, found)
    except BaseException:
        found.held.release()
        raise
    return held(response, found.held)


async def _made_reply(request: Request, found: ValuesRead) -> Response:
    as_binary = wants_binary(request)
    if found.blocks is not None:
        if found.streamed:
            return StreamingResponse(_slices(found.blocks), media_type=OCTET, headers={"Content-Length": str(found.size)})
        parts = [c async for c in found.blocks]
        return binary(parts[0] if len(parts) == 1 else b"".join(parts))  # one block: no copy
    if found.values is None:  # a read finds values or blocks
        raise RuntimeError("a value read found neither values nor blocks")
    if as_binary:
        return binary(array_to_bytes(found.values, found.type_json))
    arr = found.values
    adims, _ = array_dims(found.type_json)
    rank = arr.ndim - len(adims)
    if flag(request, "reduce_dim"):  # HSDS: drop the selection's dimensions of extent 1
        axes = tuple(i for i in range(rank) if arr.shape[i] == 1)
        arr = arr.squeeze(axis=axes) if axes else arr
        rank -= len(axes)
    value = array_to_json(arr, found.type_json)
    if nonfinite.array_has_non_finite(arr):  # HSDS: bare NaN and Infinity, or null with ignore_nan
        value = nonfinite.value(value, found.type_json, rank, flag(request, "ignore_nan"))
    out = {"value": value, "hrefs": _value_hrefs(request)}
    if found.index is not None:
        out = {"index": found.index.tolist(), **out}
    return ok(out)


async def get_value(request: Request) -> Response:
    read = _value_read(request, request.query_params.get("select"))
    found = await values.read_values(service(request), caller(request), domain_param(request), request.path_params["id"], read)
    return await _reply(request, found)


async def post_value(request: Request) -> Response:
    """Point reads (binary uint64 coordinates or JSON ``points``), or a long ``select`` in JSON."""
    svc, who, path, dset_id = service(request), caller(request), domain_param(request), request.path_params["id"]
    body_fields: Any = None
    if is_binary(request):
        points = Points(packed=await body_bytes(request))
    else:
        body = await json_body(request)
        if not isinstance(body, dict):
            raise InvalidInput("body must be a JSON object with points or select")
        bounds = Bounds.from_body(body)
        if "points" not in body and ("select" in body or bounds is not None):
            if "select" in body and bounds is not None:
                raise InvalidInput("select cannot be combined with start/stop/step")
            select = body["select"] if bounds is None else bounds
            read = _value_read(request, select, body_fields=body.get("fields"))
            return await _reply(request, await values.read_values(svc, who, path, dset_id, read))
        if "points" not in body:
            raise InvalidInput("body must have points, select, or start/stop/step")
        points = Points(listed=body["points"])
        body_fields = body.get("fields")
    point_read = PointRead(points, wants_binary(request), _fields(request, body_fields))
    found = await values.read_points(svc, who, path, dset_id, point_read)
    return await _reply(request, found)


class _RequestBody:
    """The request's packed body, read by the use case only if and as it needs it."""

    def __init__(self, request: Request) -> None:
        self.request = request
        # our HTTP protocol's way to read the body into a given buffer (api/connections.py)
        self.readinto = request.scope.get("extensions", {}).get(READINTO)

    def stream(self) -> AsyncIterator[bytes]:
        check_content_coding(self.request)
        return self.request.stream()

    async def read(self) -> bytes | memoryview:
        """The whole body. One of a declared length within the request limit is received
        straight into one buffer (``readinto``): not copied piece by piece and joined, two
        copies of every byte fewer (a load's PUTs of values are 8 MiB each). The buffer is a
        kept, page-aligned one (``BODIES``, while ``put_value`` uses the pool): no page faults
        or zero fill, and the local store writes whole raw chunks of it past the page cache
        (storage/direct.py)."""
        length = self.request.headers.get("content-length")
        if self.readinto is None or length is None or not length.isdigit() or self.request.headers.get("transfer-encoding"):
            return await body_bytes(self.request)
        check_content_coding(self.request)
        size = int(length)
        limit = service(self.request).limits.max_request_size
        if size > limit:
            raise TooLarge(f"request body of {size} bytes exceeds the limit of {limit}")
        view = BODIES.view(size)
        got = 0
        while got < size:
            n = await self.readinto(view[got:])
            if not n:
                break
            got += n
        return view if got == size else view[:got]


async def put_value(request: Request) -> Response:
    svc, who, path, dset_id = service(request), caller(request), domain_param(request), request.path_params["id"]
    fields = request.query_params.get("fields")
    query = _query(request)
    if query is not None:
        if is_binary(request):  # refused (415) only once the domain is known to exist
            await open_domain(svc, who, path, Permission.UPDATE)
        raw_update = await json_body(request, allow_empty=False)
        update = QueryUpdate.from_body(query, raw_update, fields, request.query_params.get("select"))
        index, changed, type_json = await values.update_where(svc, who, path, dset_id, update)
        # HSDS answers the changed elements as [index, field values...]
        rows = [[i, *row] for i, row in zip(index.tolist(), array_to_json(changed, type_json))]
        return ok({"index": index.tolist(), "value": rows, "hrefs": _value_hrefs(request)})
    count = int_param(request, "append", minimum=1)
    append = Append(count, int_param(request, "append_dim") or 0) if count is not None else None
    body: PackedBody | JsonValues
    if is_binary(request):
        body = _RequestBody(request)
    else:
        raw = await json_body(request, allow_empty=False)
        body = JsonValues.from_body(raw)
        if append is None and isinstance(raw, dict) and raw.get("append"):  # HSDS reads the body too
            append = _body_append(raw)
    write = ValueWrite(
        body,
        select=request.query_params.get("select"),
        fields=fields,
        append=append,
        element_count=request.query_params.get("element_count"),
    )
    with BODIES.using():  # kept buffers while binary writes run (_RequestBody.read)
        await values.write_values(svc, who, path, dset_id, write)
    return ok({})


def _body_append(raw: dict[str, Any]) -> Append:
    def number(name: str, least: int, default: int | None = None) -> int:
        v = raw.get(name, default)
        if isinstance(v, bool) or not isinstance(v, int) or v < least:
            raise InvalidInput(f"{name} must be an integer of at least {least}")
        return v

    return Append(number("append", 1), number("append_dim", 0, 0))


ROUTES = [
    Route("/datasets/{id}/value", get_value, methods=["GET"]),
    Route("/datasets/{id}/value", post_value, methods=["POST"]),
    Route("/datasets/{id}/value", put_value, methods=["PUT"]),
]
