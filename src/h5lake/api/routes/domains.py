"""``/``, ``/about``, ``/info``, ``/domains`` and ``/acls``."""

from __future__ import annotations

import os
import time

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from h5lake import HSDS_COMPAT_VERSION, __version__
from h5lake.api import nonfinite
from h5lake.api.http import caller, domain_param, flag, json_body, limit_param, links, ok, service
from h5lake.errors import InvalidInput
from h5lake.model.acl import Permission
from h5lake.service.domains import core as domains
from h5lake.service.objects import paths
from h5lake.service.versions import fork as versions_fork


async def about(request: Request) -> Response:
    svc = service(request)
    who = caller(request)
    return ok(
        {
            "name": "h5lake",
            "about": "h5lake: the HDF5 data model in object storage",
            "greeting": "Welcome to h5lake!",
            "state": "READY",
            "hsds_version": HSDS_COMPAT_VERSION,
            "h5lake_version": __version__,
            "username": who.user or "anonymous",
            "isadmin": who.is_admin,
            "node_count": 1,
            "start_time": int(svc.started),
            "dn_urls": [],  # HSDS lists its data nodes; every h5lake process serves every request
            "dn_ids": [],
        }
    )


async def info(request: Request) -> Response:
    svc = service(request)
    return ok(
        {
            "node": {
                "id": "h5lake",
                "type": "sn",
                "state": "READY",
                "start_time": int(svc.started),
                "node_count": 1,
            },
            "cpu": {"cores": os.cpu_count()},
            "h5lake_version": __version__,
            "hsds_version": HSDS_COMPAT_VERSION,
            "start_time": int(svc.started),
            "up_time": int(time.time() - svc.started),
        }
    )


async def get_domain(request: Request) -> Response:
    if not domain_param(request, required=False):
        return await list_domains(request)  # no domain: the top-level folders, as HSDS answers
    out = await paths.describe(
        service(request),
        caller(request),
        domain_param(request),
        h5path=request.query_params.get("h5path"),
        include_links=flag(request, "include_links"),
        include_attrs=flag(request, "include_attrs"),
        verbose=flag(request, "verbose"),
        dn_ids=flag(request, "getdnids"),
        follow_external_links=flag(request, "follow_external_links"),
        follow_soft_links=flag(request, "follow_soft_links"),
        parent_id=request.query_params.get("parent_id"),
        objects=flag(request, "getobjs"),
        objects_limit=limit_param(request),
        objects_marker=request.query_params.get("Marker"),
        objects_values=flag(request, "include_values"),
    )
    nonfinite.description(out, flag(request, "ignore_nan"))
    h = links(request)
    out["hrefs"] = h.obj(out) if "id" in out else h.domain(out)
    return ok(out)


async def put_domain(request: Request) -> Response:
    svc, who, path = service(request), caller(request), domain_param(request)
    body = await json_body(request)
    in_body = body if isinstance(body, dict) else {}
    if (
        flag(request, "flush")
        or (body is None and request.query_params.get("flush") is not None)
        or bool(in_body.get("flush"))
    ):
        # Writes are durable when acknowledged, so a flush only checks that the caller may write.
        # h5pyd before 1.0 flushes with the body {"flush": 1, "getdnids": 1} and reads "dn_ids"
        # from the reply (HSDS always has some): h5lake has no data nodes, so the list is empty.
        await domains.open_domain(svc, who, path, Permission.UPDATE)
        if flag(request, "getdnids") or bool(in_body.get("getdnids")):
            return ok({"dn_ids": []})
        return Response(status_code=204)
    if body is None:
        body = {}
    if isinstance(body, dict) and "from" in body:
        domain = await versions_fork.fork(svc, who, path, body)
    else:
        domain = await domains.create_domain(svc, who, path, body)
    out = domains.domain_response_on_create(svc, domain)
    if flag(request, "getdnids"):
        out["dn_ids"] = []  # as GET / answers it: no data nodes, every process serves every request
    out["hrefs"] = links(request).domain(out)
    return ok(out, 201)


async def delete_domain(request: Request) -> Response:
    svc, who, path = service(request), caller(request), domain_param(request)
    await domains.delete_domain(svc, who, path, keep_root=flag(request, "keep_root"))
    return ok({"domain": path})


async def post_domain(request: Request) -> Response:
    """``POST /`` with ``{"h5paths": [...]}``: resolve several paths at once."""
    svc, who, path = service(request), caller(request), domain_param(request)
    body = await json_body(request)
    if not isinstance(body, dict) or not isinstance(body.get("h5paths"), list):
        raise InvalidInput("body must be an object with an h5paths list")
    found = await paths.resolve_paths(
        svc,
        who,
        path,
        body["h5paths"],
        request.query_params.get("parent_id"),
        follow_soft_links=flag(request, "follow_soft_links"),
        follow_external_links=flag(request, "follow_external_links"),
    )
    h = links(request)
    for obj in found.values():
        obj["hrefs"] = h.obj(obj)
    return ok({"h5paths": found, "hrefs": h.of(("self", "/"), ("home", "/"))})


async def list_domains(request: Request) -> Response:
    svc, who = service(request), caller(request)
    folder = domain_param(request, required=False) or "/"
    items = await domains.list_domains(
        svc,
        who,
        folder,
        limit=limit_param(request),
        marker=request.query_params.get("Marker"),
        pattern=request.query_params.get("pattern"),
        verbose=flag(request, "verbose"),
        query=request.query_params.get("query"),
    )
    return ok({"domains": items, "hrefs": links(request).domains(items)})


async def get_acls(request: Request) -> Response:
    svc, who, path = service(request), caller(request), domain_param(request)
    return ok({"acls": await domains.get_acls(svc, who, path), "hrefs": links(request).acls()})


async def acl_of_user(request: Request) -> Response:
    svc, who, path = service(request), caller(request), domain_param(request)
    user = request.path_params["user"]
    if request.method == "PUT":
        body = await json_body(request)
        acl = await domains.put_acl(svc, who, path, user, body)
        return ok({"acl": acl, "hrefs": links(request).acls(user)}, 201)
    return ok({"acl": await domains.get_acl(svc, who, path, user), "hrefs": links(request).acls(user)})


ROUTES = [
    Route("/about", about, methods=["GET"]),
    Route("/info", info, methods=["GET"]),
    Route("/", get_domain, methods=["GET"]),
    Route("/", put_domain, methods=["PUT"]),
    Route("/", delete_domain, methods=["DELETE"]),
    Route("/", post_domain, methods=["POST"]),
    Route("/domains", list_domains, methods=["GET"]),
    Route("/acls", get_acls, methods=["GET"]),
    Route("/acls/{user}", acl_of_user, methods=["GET", "PUT"]),
]
