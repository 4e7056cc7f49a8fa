"""``/zarr{domain}/...``: a domain's hierarchy as a Zarr v3 store (docs/zarr.md).

``GET``/``HEAD`` of ``.../zarr.json`` and of chunk keys ``.../c/i/j``; ``PUT`` and ``DELETE`` of
chunk keys; ``PUT`` of ``zarr.json`` (a new group or array, or new attributes or shape). Writes
hold the domain's commit fence (`service.fences`) for their whole run, as every other change does.
A request header ``X-H5lake-Zarr-Codecs: core`` asks for core Zarr v3 codecs only (tensorstore).
Every GET answer has an ETag (304 on ``If-None-Match``); a PUT takes ``If-Match`` and
``If-None-Match`` (an ETag list or ``*``), 412 when they do not hold.
"""

from __future__ import annotations

import html
import time
from collections.abc import Awaitable, Callable
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from h5lake.api.connections import READINTO
from h5lake.api.http import (
    BODIES,
    JSON,
    OCTET,
    body_bytes,
    caller,
    check_content_coding,
    ok,
    parse_json,
    service,
)
from h5lake.errors import Forbidden, InvalidInput, NotFound
from h5lake.service.zarr import chunks, consolidated, create, listing, nodes

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


def _etags(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    tags = tuple(t.strip() for t in value.split(",") if t.strip())
    if not tags or len(tags) > 64 or any(len(t) > 200 for t in tags):
        raise InvalidInput("a conditional header holds '*' or 1 to 64 ETags")
    return tags


def _conditions(request: Request) -> chunks.Conditions:
    """``If-Match`` / ``If-None-Match`` of a write (RFC 9110: an ETag list, or ``*``)."""
    return chunks.Conditions(_etags(request.headers.get("if-match")), _etags(request.headers.get("if-none-match")))


async def _meta_etag(request: Request, key: nodes.Key, core: bool) -> tuple[bool, str | None]:
    """Whether the ``zarr.json`` ``key`` names exists now, and the ETag a GET gives it."""
    svc, who = service(request), caller(request)
    try:
        if key.parts == (nodes.META,):
            return True, (await consolidated.root_answer(svc, who, key, core)).etag
        return True, (await chunks.read_meta(svc, who, key, core))[1]
    except NotFound:
        return False, None


async def _key(request: Request) -> nodes.Key:
    return await nodes.find_domain(service(request), request.path_params["path"])


async def _resolved(request: Request, work: Callable[[nodes.Key], Awaitable[Response]]) -> Response:
    """``work`` on the key the path names; once more in a domain nested in the path when the
    first component is no link of the outer domain's root group (`nodes.nested_key`)."""
    key = await _key(request)
    try:
        return await work(key)
    except nodes.NotInRoot:
        deeper = await nodes.nested_key(service(request), request.path_params["path"], key)
        if deeper is None:
            raise
        return await work(deeper)


async def get_key(request: Request) -> Response:
    return await _resolved(request, lambda key: _get(request, key))


async def _get(request: Request, key: nodes.Key) -> Response:
    svc, who, core = service(request), caller(request), _core(request)
    if key.parts == (nodes.META,):  # the root, with the whole hierarchy: kept whole
        answer = await consolidated.root_answer(svc, who, key, core)
        return _cached(request, Response(answer.body, media_type=JSON), answer.etag, chunks.immutable(key))
    if key.is_meta:
        meta, etag = await chunks.read_meta(svc, who, key, core)
        return _cached(request, ok(meta), etag, chunks.immutable(key))
    found = await chunks.read_chunk(svc, who, key, core)
    if isinstance(found, listing.Listing):
        return _html(request, found)
    response = Response(found.data, media_type=OCTET)  # a view is written as it is (no copy)
    return _cached(request, response, found.etag, found.immutable)


def _html(request: Request, found: listing.Listing) -> Response:
    """A node's entries as links (fsspec's HTTP file system lists a "directory" so)."""
    base = request.url.path.rstrip("/") + "/"
    links = "".join(f'<li><a href="{html.escape(base + e.name, quote=True)}">{html.escape(e.name)}</a></li>\n'
                    for e in found.entries)
    title = html.escape(found.path)
    body = f"<!DOCTYPE html>\n<html><head><title>{title}</title></head><body><ul>\n{links}</ul></body></html>\n"
    return Response(body, media_type="text/html", headers={"Vary": "Authorization", "Cache-Control": REVALIDATE})


_DAV_TIME = "%a, %d %b %Y %H:%M:%S GMT"


def _dav_response(href: str, is_dir: bool, stamp: str) -> str:
    kind = "<D:resourcetype><D:collection/></D:resourcetype>" if is_dir else "<D:resourcetype/><D:getcontentlength>0</D:getcontentlength>"
    return (f"<D:response><D:href>{html.escape(href)}</D:href><D:propstat><D:prop>"
            f"<D:getlastmodified>{stamp}</D:getlastmodified>{kind}</D:prop>"
            "<D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>")


async def propfind_key(request: Request) -> Response:
    """WebDAV ``PROPFIND`` (``Depth`` 0 or 1) of a node: obstore's ``HTTPStore`` lists so."""
    depth = request.headers.get("depth", "1").strip().lower()
    if depth not in ("0", "1"):
        raise Forbidden("PROPFIND takes Depth 0 or 1 here (a listing of one group's members)")
    return await _resolved(request, lambda key: _propfind(request, key, depth))


async def _propfind(request: Request, key: nodes.Key, depth: str) -> Response:
    found = await listing.list_node(service(request), caller(request), key)
    base = quote(request.url.path.rstrip("/"), safe="/@~") + "/"
    stamp = time.strftime(_DAV_TIME, time.gmtime())
    parts = [_dav_response(base, True, stamp)]
    if depth == "1":
        parts += [_dav_response(base + quote(e.name, safe="@~") + ("/" if e.is_dir else ""), e.is_dir, stamp)
                  for e in found.entries]
    body = '<?xml version="1.0" encoding="utf-8"?>\n<D:multistatus xmlns:D="DAV:">' + "".join(parts) + "</D:multistatus>\n"
    return Response(body, status_code=207, media_type="application/xml; charset=utf-8", headers={"Vary": "Authorization"})


async def put_key(request: Request) -> Response:
    svc, who, core = service(request), caller(request), _core(request)
    key = await _key(request)
    if not key.parts:
        raise InvalidInput("a Zarr key names zarr.json or a chunk below the domain")
    conditions = _conditions(request)
    if key.is_meta:
        body = parse_json(await body_bytes(request, META_BODY_LIMIT, " (a zarr.json)"))
        key = await nodes.nested_key(svc, request.path_params["path"], key) or key  # made in a nested domain

        async def put_meta() -> bool:
            if conditions.given:
                exists, etag = await _meta_etag(request, key, core)
                conditions.check(etag, exists, "/".join(key.parts))
            create_only = conditions.if_none_match is not None and "*" in conditions.if_none_match
            return await create.put_meta(svc, who, key, body, create_only)

        created = await put_meta()
        return Response(status_code=201 if created else 200)
    with BODIES.using():
        data = await _chunk_body(request, svc.limits.max_chunk_size * 4 + 4096)

        async def put_chunk(key: nodes.Key) -> Response:
            await chunks.write_chunk(svc, who, key, data, core, conditions)
            return Response(status_code=200)

        return await _resolved(request, put_chunk)


async def _chunk_body(request: Request, limit: int) -> bytes | memoryview:
    """A chunk PUT's body. With a ``Content-Length`` it is read straight into one buffer of that
    size (the socket's bytes copied once, by the kernel: api/connections.py), not gathered in
    pieces and joined (two more copies of every byte, on the event loop); else in pieces. The
    buffer is a kept, page-aligned one (``BODIES``): no page faults, and the local store writes
    it past the page cache (storage/direct.py)."""
    readinto = request.scope.get("extensions", {}).get(READINTO)
    length = request.headers.get("content-length")
    if readinto is None or length is None or not length.isdigit() or int(length) > limit or "transfer-encoding" in request.headers:
        return await body_bytes(request, limit, " (a chunk)")
    check_content_coding(request)
    body = BODIES.view(int(length))
    got = await readinto(body) if body else 0
    if got < len(body):
        raise InvalidInput(f"the body ended after {got} of its {len(body)} bytes")
    return body


async def delete_key(request: Request) -> Response:
    return await _resolved(request, lambda key: _delete(request, key))


async def _delete(request: Request, key: nodes.Key) -> Response:
    if not key.parts or key.is_meta:
        raise InvalidInput("only chunk keys can be deleted through the Zarr bridge (use DELETE /groups or /datasets)")
    await chunks.delete_chunk(service(request), caller(request), key)
    return Response(status_code=204)


ROUTES = [
    Route("/zarr/{path:path}", get_key, methods=["GET", "HEAD"]),
    Route("/zarr/{path:path}", put_key, methods=["PUT"]),
    Route("/zarr/{path:path}", delete_key, methods=["DELETE"]),
    Route("/zarr/{path:path}", propfind_key, methods=["PROPFIND"]),
]
