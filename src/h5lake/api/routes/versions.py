"""``/versions``: commit, history, tags, diff, restore, merge, cherry-pick and forgetting versions of a domain."""

from __future__ import annotations

from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from h5lake.api.http import caller, domain_param, int_param, json_body, links, ok, service
from h5lake.service.versions import (
    commit as versions_commit,
)
from h5lake.service.versions import (
    diff_restore as versions_ops,
)
from h5lake.service.versions import (
    history as versions_history,
)
from h5lake.service.versions import (
    merge as versions_merge,
)


def _hrefs(request: Request, path: str = "/versions") -> list[dict[str, str]]:
    return links(request).of(("self", path), ("home", "/"))


async def commit(request: Request) -> Response:
    body = await json_body(request)
    out = await versions_commit.commit(service(request), caller(request), domain_param(request), body)
    out["hrefs"] = _hrefs(request, f"/versions/{out['id']}")
    return ok(out, 201)


async def history(request: Request) -> Response:
    items = await versions_history.list_history(
        service(request),
        caller(request),
        domain_param(request),
        int_param(request, "Limit", minimum=1),
        request.query_params.get("Marker"),
    )
    return ok({"versions": items, "hrefs": _hrefs(request)})


async def version(request: Request) -> Response:
    svc, who, path, vid = service(request), caller(request), domain_param(request), request.path_params["vid"]
    if request.method == "DELETE":
        await versions_history.forget(svc, who, path, vid)
        return ok({"id": vid, "deleted": True})
    out = await versions_history.describe(svc, who, path, vid)
    out["hrefs"] = _hrefs(request, f"/versions/{vid}")
    return ok(out)


async def tags(request: Request) -> Response:
    found = await versions_history.list_tags(service(request), caller(request), domain_param(request))
    return ok({"tags": found, "hrefs": _hrefs(request, "/versions/tags")})


async def tag(request: Request) -> Response:
    svc, who, path, name = service(request), caller(request), domain_param(request), request.path_params["name"]
    if request.method == "PUT":
        out = await versions_history.put_tag(svc, who, path, name, await json_body(request))
        return ok(out, 201)
    if request.method == "DELETE":
        await versions_history.delete_tag(svc, who, path, name)
        return ok({"name": name, "deleted": True})
    return ok(await versions_history.get_tag(svc, who, path, name))


async def diff(request: Request) -> Response:
    q = request.query_params
    out = await versions_ops.diff(
        service(request),
        caller(request),
        domain_param(request),
        q.get("from"),
        q.get("to"),
        int_param(request, "Limit", minimum=0),
    )
    return ok(out)


async def restore(request: Request) -> Response:
    body = await json_body(request)
    out = await versions_ops.restore(
        service(request), caller(request), domain_param(request), request.path_params["vid"], body
    )
    return ok(out)


async def merge(request: Request) -> Response:
    """``/versions/merge`` and ``/versions/cherry-pick``: 201 with the new version, or 409 with
    the conflicts (``Limit`` of them from ``Marker``, a position)."""
    body = await json_body(request)
    use = versions_merge.merge if request.url.path.endswith("/merge") else versions_merge.cherry_pick
    out, status = await use(
        service(request), caller(request), domain_param(request), body,
        int_param(request, "Limit", minimum=1), int_param(request, "Marker", minimum=0) or 0,
    )
    if status == 201:
        out["hrefs"] = _hrefs(request, f"/versions/{out['id']}")
    return ok(out, status)


class VersionId(Convertor[str]):
    """``{vid:version}``: any segment but the literal paths beside it (``/versions/tags`` ...),
    so that those are not also taken as a version: a 405 there names only their own methods. A
    segment that is no version id still reaches the handler (400)."""

    regex = r"(?!(?:tags|diff|merge|cherry-pick)(?:/|$))[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("version", VersionId())

ROUTES = [
    Route("/versions", commit, methods=["POST"]),
    Route("/versions", history, methods=["GET"]),
    Route("/versions/diff", diff, methods=["GET"]),
    Route("/versions/merge", merge, methods=["POST"]),
    Route("/versions/cherry-pick", merge, methods=["POST"]),
    Route("/versions/tags", tags, methods=["GET"]),
    Route("/versions/tags/{name}", tag, methods=["GET", "PUT", "DELETE"]),
    Route("/versions/{vid:version}", version, methods=["GET", "DELETE"]),
    Route("/versions/{vid:version}/restore", restore, methods=["POST"]),
]
