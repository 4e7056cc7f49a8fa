"""HDF5 Map objects over REST (docs/maps.md, docs/api.md "Maps"): the map objects, single keys
addressed in the URL path, and batches of keys in bodies (JSON or packed bytes)."""

from __future__ import annotations

import numpy as np
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from h5lake.api.hrefs import root_of, segment
from h5lake.api.http import (
    binary,
    body_bytes,
    caller,
    domain_param,
    flag,
    int_param,
    is_binary,
    json_body,
    ok,
    service,
    wants_binary,
)
from h5lake.api.http import links as hrefs_of
from h5lake.errors import InvalidInput, NotFound
from h5lake.model.ids import Collection
from h5lake.service import maps
from h5lake.service.objects import core as objects

CURSOR_HEADER = "X-H5Lake-Cursor"
"""Where a packed page of ``GET /maps/{id}/keys`` names its cursor (absent on the last page)."""


async def post_maps(request: Request) -> Response:
    items, many = await maps.create_maps(service(request), caller(request), domain_param(request), await json_body(request))
    h = hrefs_of(request)
    for item in items:
        item["hrefs"] = h.obj(item)
    return ok({"objects": items} if many else items[0], 201)


async def list_maps(request: Request) -> Response:
    ids = await objects.list_objects(
        service(request), caller(request), domain_param(request), Collection.MAPS,
        int_param(request, "Limit", minimum=1), request.query_params.get("Marker"),
    )
    root = root_of(ids[0]) if ids else None
    return ok({"maps": ids, "hrefs": hrefs_of(request).collection("maps", root)})


async def map_item(request: Request) -> Response:
    svc, who, path = service(request), caller(request), domain_param(request)
    map_id = request.path_params["id"]
    if request.method == "DELETE":
        await objects.delete_object(svc, who, path, map_id, Collection.MAPS)
        return ok({})
    out = await maps.get_map(svc, who, path, map_id, verbose=flag(request, "verbose"),
                             include_attrs=flag(request, "include_attrs"))
    out["hrefs"] = hrefs_of(request).obj(out)
    return ok(out)


def _key_hrefs(request: Request, part: str) -> list[dict[str, str]]:
    me = f"/maps/{request.path_params['id']}"
    return hrefs_of(request).of(("self", f"{me}/{part}"), ("owner", me), ("home", "/"))


async def key_item(request: Request) -> Response:
    """``/maps/{id}/key/{key}``: PUT, GET, DELETE and HEAD of one key."""
    svc, who, path = service(request), caller(request), domain_param(request)
    map_id, key = request.path_params["id"], request.path_params["key"]
    if request.method == "PUT":
        if is_binary(request):
            new = await maps.put_value(svc, who, path, map_id, key, packed=await body_bytes(request))
        else:
            new = await maps.put_value(svc, who, path, map_id, key, json=await json_body(request))
        return ok({"hrefs": _key_hrefs(request, f"key/{segment(key)}")}, 201 if new else 200)
    if request.method == "DELETE":
        await maps.delete_values(svc, who, path, map_id, maps.Keys(text=key), must_exist=True)
        return ok({})
    if request.method == "HEAD":
        if not await maps.has_key(svc, who, path, map_id, key):
            raise NotFound(f"key {key[:80]!r} is not in map {map_id}")
        return Response(status_code=200)
    opened, values = await maps.get_value(svc, who, path, map_id, key)
    if wants_binary(request):
        return binary(opened.values.to_packed(values))
    return ok({"value": maps.value_json(opened, values)[0], "hrefs": _key_hrefs(request, f"key/{segment(key)}")})


async def _keys_of(request: Request) -> maps.Keys:
    if is_binary(request):
        return maps.Keys(packed=await body_bytes(request))
    body = await json_body(request)
    if not isinstance(body, (list, dict)) or isinstance(body, dict) and "keys" not in body:
        raise InvalidInput('body must be a list of keys or {"keys": [...]}')
    return maps.Keys(json=body)


async def keys_collection(request: Request) -> Response:
    """``/maps/{id}/keys``: PUT pairs, POST keys to read their values, DELETE keys, GET pages."""
    svc, who, path = service(request), caller(request), domain_param(request)
    map_id = request.path_params["id"]
    if request.method == "PUT":
        if is_binary(request):
            added = await maps.put_values(svc, who, path, map_id, packed=await body_bytes(request))
        else:
            added = await maps.put_values(svc, who, path, map_id, json=await json_body(request))
        return ok({"added": added, "hrefs": _key_hrefs(request, "keys")})
    if request.method == "DELETE":
        deleted = await maps.delete_values(svc, who, path, map_id, await _keys_of(request))
        return ok({"deleted": deleted, "hrefs": _key_hrefs(request, "keys")})
    if request.method == "POST":
        opened, found, values = await maps.get_values(svc, who, path, map_id, await _keys_of(request))
        if wants_binary(request):
            return binary(found.astype(np.uint8).tobytes() + opened.values.to_packed(values))
        shown = maps.value_json(opened, values)
        return ok({"values": [v if f else None for v, f in zip(shown, found.tolist())],
                   "found": found.tolist(), "hrefs": _key_hrefs(request, "keys")})
    page = await maps.list_pairs(
        svc, who, path, map_id,
        limit=int_param(request, "Limit", minimum=1),
        marker=request.query_params.get("Marker"),
        cursor=request.query_params.get("Cursor"),
        include_values=flag(request, "IncludeValues"),
    )
    if wants_binary(request):
        reply = binary(maps.packed_page(page))
        if page.cursor is not None:
            reply.headers[CURSOR_HEADER] = page.cursor
        return reply
    out: dict[str, object] = {"keys": page.opened.keys.to_json(page.keys), "cursor": page.cursor}
    if page.values is not None:
        out["values"] = maps.value_json(page.opened, page.values)
    out["hrefs"] = _key_hrefs(request, "keys")
    return ok(out)


ROUTES = [
    Route("/maps", post_maps, methods=["POST"]),
    Route("/maps", list_maps, methods=["GET"]),
    Route("/maps/{id}", map_item, methods=["GET", "DELETE"]),
    Route("/maps/{id}/key/{key:path}", key_item, methods=["GET", "PUT", "DELETE", "HEAD"]),
    Route("/maps/{id}/keys", keys_collection, methods=["GET", "PUT", "POST", "DELETE"]),
]
