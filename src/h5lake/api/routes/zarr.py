"""``/zarr{domain}/...``: a domain's hierarchy as a Zarr v3 store (docs/zarr.md).

``GET``/``HEAD`` of ``.../zarr.json`` and of chunk keys ``.../c/i/j``; ``PUT`` and ``DELETE`` of
chunk keys; ``PUT`` of ``zarr.json`` (a new group or array, or new attributes or shape). Writes
hold the domain's commit fence (`service.fences`) for their whole run, as every other change does.
A request header ``X-H5lake-Zarr-Codecs: core`` asks for core Zarr v3 codecs only (tensorstore).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from h5lake.api.http import OCTET, body_bytes, caller, ok, parse_json, service
from h5lake.errors import InvalidInput, NotFound
from h5lake.service.zarr import chunks, create, nodes

CODECS_HEADER = "x-h5lake-zarr-codecs"
META_BODY_LIMIT = 1 << 20  # a zarr.json PUT
IMMUTABLE = "private, max-age=31536000, immutable"
REVALIDATE = "private, no-cache"


def _core(request: Request) -> bool:
    value = request.headers.get(CODECS_HEADER, "").strip().lower()
    if value not in ("", "core", "all"):
        raise InvalidInput(f"{CODECS_HEADER} is 'core' or 'all', not {value[:40]!r}")
    return value == "core"


def _cached(request: Request, response: Response, etag: str | None, immutable: bool) -> Response:
    response.headers["Vary"] = "Authorization, " + CODECS_HEADER
    if etag is None:
        return response
    response.headers["ETag"] = etag
    response.headers["Cache-Control"] = IMMUTABLE if immutable else REVALIDATE
    if etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
        return Response(status_code=304, headers={k: v for k, v in response.headers.items() if k.lower() != "content-length"})
    return response


async def _key(request: Request) -> nodes.Key:
    return await nodes.find_domain(service(request), request.path_params["path"])


async def get_key(request: Request) -> Response:
    svc, who, core = service(request), caller(request), _core(request)
    key = await _key(request)
    if not key.parts:
        raise NotFound("a Zarr key names zarr.json or a chunk below the domain")
    if key.is_meta:
        meta, etag = await chunks.read_meta(svc, who, key, core)
        return _cached(request, ok(meta), etag, chunks.immutable(key))
    found = await chunks.read_chunk(svc, who, key, core)
    response = Response(bytes(found.data) if isinstance(found.data, memoryview) else found.data, media_type=OCTET)
    return _cached(request, response, found.etag, found.immutable)


async def put_key(request: Request) -> Response:
    svc, who, core = service(request), caller(request), _core(request)
    key = await _key(request)
    if not key.parts:
        raise InvalidInput("a Zarr key names zarr.json or a chunk below the domain")
    if key.is_meta:
        body = parse_json(await body_bytes(request, META_BODY_LIMIT, " (a zarr.json)"))
        created = await create.put_meta(svc, who, key, body)
        return Response(status_code=201 if created else 200)
    data = await body_bytes(request, svc.limits.max_chunk_size * 4 + 4096, " (a chunk)")
    await chunks.write_chunk(svc, who, key, data, core)
    return Response(status_code=200)


async def delete_key(request: Request) -> Response:
    svc, who = service(request), caller(request)
    key = await _key(request)
    if not key.parts or key.is_meta:
        raise InvalidInput("only chunk keys can be deleted through the Zarr bridge (use DELETE /groups or /datasets)")
    await chunks.delete_chunk(svc, who, key)
    return Response(status_code=204)


ROUTES = [
    Route("/zarr/{path:path}", get_key, methods=["GET", "HEAD"]),
    Route("/zarr/{path:path}", put_key, methods=["PUT"]),
    Route("/zarr/{path:path}", delete_key, methods=["DELETE"]),
]
