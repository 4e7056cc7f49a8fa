"""Groups, committed datatypes, datasets (as objects), links and attributes."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from h5lake.api import nonfinite
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
    limit_param,
    ok,
    service,
    wants_binary,
)
from h5lake.api.http import links as hrefs_of
from h5lake.api.routes import watch as watch_routes
from h5lake.errors import Gone, InvalidInput, NotFound
from h5lake.model.acl import Permission
from h5lake.model.ids import Collection, parse_id
from h5lake.service.context import Caller, Service
from h5lake.service.datasets import core as datasets
from h5lake.service.documents import ENTRY_BYTES, PutOutcome
from h5lake.service.domains import core as domains
from h5lake.service.objects import (
    acls as object_acls,
)
from h5lake.service.objects import (
    attribute_lists as attrlist,
)
from h5lake.service.objects import (
    attribute_values as attrvalues,
)
from h5lake.service.objects import (
    attributes,
    links,
    paths,
)
from h5lake.service.objects import (
    core as objects,
)
from h5lake.service.values import initial


def _collection(request: Request) -> Collection:
    return Collection.from_path(request.path_params["collection"])


def _created(request: Request, items: list[dict], many: bool) -> Response:
    h, ignore_nan = hrefs_of(request), flag(request, "ignore_nan")
    for item in items:
        item["hrefs"] = h.obj(nonfinite.description(item, ignore_nan))
    return ok({"objects": items} if many else items[0], 201)


def _put_reply(outcome: PutOutcome) -> Response:
    """A PUT of links or attributes: 201 when anything changed, 200 when all was there."""
    return ok({}, 201 if outcome is PutOutcome.CREATED else 200)


# --- collections ------------------------------------------------------------------------------


async def post_groups(request: Request) -> Response:
    items, many = await objects.create_groups(
        service(request), caller(request), domain_param(request), await json_body(request), flag(request, "implicit")
    )
    return _created(request, items, many)


async def post_datatypes(request: Request) -> Response:
    items, many = await objects.create_datatypes(
        service(request), caller(request), domain_param(request), await json_body(request), flag(request, "implicit")
    )
    return _created(request, items, many)


async def post_datasets(request: Request) -> Response:
    items, many = await initial.create_datasets_with_values(
        service(request), caller(request), domain_param(request), await json_body(request), flag(request, "implicit")
    )
    return _created(request, items, many)


def list_collection(collection: Collection):
    async def handler(request: Request) -> Response:
        ids = await objects.list_objects(
            service(request),
            caller(request),
            domain_param(request),
            collection,
            limit_param(request),
            request.query_params.get("Marker"),
        )
        root = root_of(ids[0]) if ids else None
        return ok({collection.path: ids, "hrefs": hrefs_of(request).collection(collection.path, root)})

    return handler


# --- single objects ---------------------------------------------------------------------------


def object_by_path(collection: Collection):
    """``GET /groups/?h5path=/a/b`` (and datasets, datatypes): the object an absolute path names."""

    async def handler(request: Request) -> Response:
        h5path = request.query_params.get("h5path")
        if h5path is None:
            raise InvalidInput("h5path is required here")
        # a relative path starts at grpid (HSDS's GET_Dataset) or parent_id
        start = request.query_params.get("grpid") or request.query_params.get("parent_id")
        out = await paths.object_at_path(
            service(request),
            caller(request),
            domain_param(request),
            h5path,
            collection,
            start=start,
            include_links=flag(request, "include_links", default=False),
            include_attrs=flag(request, "include_attrs", default=False),
            follow_external_links=flag(request, "follow_external_links"),
            follow_soft_links=flag(request, "follow_soft_links"),
        )
        out["hrefs"] = hrefs_of(request).obj(nonfinite.description(out, flag(request, "ignore_nan")))
        return ok(out)

    return handler


def object_handler(collection: Collection):
    async def handler(request: Request) -> Response:
        svc, who, path = service(request), caller(request), domain_param(request)
        obj_id = request.path_params["id"]
        if request.method == "DELETE":
            await objects.delete_object(svc, who, path, obj_id, collection)
            return ok({})
        h5path = request.query_params.get("h5path")
        if collection is Collection.DATASETS and h5path is None and request.method == "GET":
            seconds = watch_routes.wait_param(request)
            if seconds is not None:
                return await watch_routes.watched(request, obj_id, seconds, lambda: described(request, svc, who, path, obj_id))
        if h5path is not None:
            out = await paths.object_at_path(
                svc,
                who,
                path,
                h5path,
                collection,
                start=obj_id,
                include_links=flag(request, "include_links", default=False),
                include_attrs=flag(request, "include_attrs", default=False),
                follow_external_links=flag(request, "follow_external_links"),
                follow_soft_links=flag(request, "follow_soft_links"),
            )
            out["hrefs"] = hrefs_of(request).obj(nonfinite.description(out, flag(request, "ignore_nan")))
            return ok(out)
        return await described(request, svc, who, path, obj_id)

    async def described(request: Request, svc: Service, who: Caller, path: str, obj_id: str) -> Response:
        out = await objects.get_object(
            svc,
            who,
            path,
            obj_id,
            collection,
            include_links=flag(request, "include_links", default=False),
            include_attrs=flag(request, "include_attrs", default=False),
            verbose=flag(request, "verbose"),
            alias=flag(request, "getalias"),
            create_order=flag(request, "CreateOrder"),
        )
        out["hrefs"] = hrefs_of(request).obj(nonfinite.description(out, flag(request, "ignore_nan")))
        return ok(out)

    return handler


async def dataset_type(request: Request) -> Response:
    out = await datasets.get_type(service(request), caller(request), domain_param(request), request.path_params["id"])
    out["hrefs"] = hrefs_of(request).dataset_part(request.path_params["id"], "type")
    return ok(out)


async def dataset_shape(request: Request) -> Response:
    svc, who, path = service(request), caller(request), domain_param(request)
    dset_id = request.path_params["id"]
    if request.method == "PUT":
        region = await datasets.resize(svc, who, path, dset_id, await json_body(request))
        return ok({"selection": region.to_text(), "hrefs": hrefs_of(request).dataset_part(dset_id, "shape")}, 201)
    seconds = watch_routes.wait_param(request)

    async def shape() -> Response:
        out = await datasets.get_shape(svc, who, path, dset_id)
        out["hrefs"] = hrefs_of(request).dataset_part(dset_id, "shape")
        return ok(out)

    return await shape() if seconds is None else await watch_routes.watched(request, dset_id, seconds, shape)


async def dataset_layout(request: Request) -> Response:
    """``PUT /datasets/{id}/layout``: h5lake's extension turning a linked dataset into the
    per-chunk-file form (``service.datasets.core.aggregate``)."""
    svc, who, path = service(request), caller(request), domain_param(request)
    doc = await datasets.aggregate(svc, who, path, request.path_params["id"], await json_body(request))
    h = hrefs_of(request)
    dset = f"/datasets/{request.path_params['id']}"
    return ok({"layout": doc.get("layout"), "shape": doc.get("shape"), "hrefs": h.of(("self", dset + "/layout"), ("owner", dset), ("home", "/"))})


# --- links ------------------------------------------------------------------------------------


def _separator(request: Request) -> str:
    sep = request.query_params.get("separator", "/")
    if not sep:
        raise InvalidInput("separator must not be empty")
    return sep


def _titles(request: Request, body: object = None) -> list[str] | None:
    if isinstance(body, dict) and "titles" in body:
        titles = body["titles"]
        if not isinstance(titles, list) or not all(isinstance(t, str) for t in titles):
            raise InvalidInput("titles must be a list of strings")
        return titles
    raw = request.query_params.get("titles")
    if raw is None:
        return None
    return [t for t in raw.split(_separator(request)) if t]


async def links_collection(request: Request) -> Response:
    svc, who, path = service(request), caller(request), domain_param(request)
    gid = request.path_params["id"]
    if request.method == "PUT":
        outcome = await links.put_links(svc, who, path, gid, await json_body(request), flag(request, "replace"))
        return _put_reply(outcome)
    if request.method == "DELETE":
        titles = _titles(request) or []
        await links.delete_links(svc, who, path, gid, titles)
        return ok({})
    body = await json_body(request) if request.method == "POST" else None
    if body is not None and not isinstance(body, dict):
        raise InvalidInput("body must be a JSON object")
    grp_ids = body.get("grp_ids") if isinstance(body, dict) else None
    if grp_ids is not None and (not isinstance(grp_ids, list) or not all(isinstance(g, str) for g in grp_ids)):
        raise InvalidInput("grp_ids must be a list of group ids")
    out = await links.get_links(
        svc,
        who,
        path,
        gid,
        titles=_titles(request, body),
        grp_ids=grp_ids,
        create_order=flag(request, "CreateOrder"),
        pattern=request.query_params.get("pattern"),
        marker=request.query_params.get("Marker"),
        limit=limit_param(request),
        follow_links=flag(request, "follow_links"),
        titles_must_exist=body is not None,
    )
    return await _listing_reply(request, svc, gid, out)


async def _listing_reply(request: Request, svc: Service, gid: str, out: dict[str, Any]) -> Response:
    """A links listing with its hrefs (one per link), made on a pool thread for a long one."""
    listed: Any = out.get("links")
    count = len(listed) if isinstance(listed, list) else sum(len(v) for v in listed.values())
    hrefs = hrefs_of(request)

    def made() -> Response:
        out["hrefs"] = hrefs.links(gid, listed)
        if isinstance(listed, list) and len(listed) > _SERIALIZED_RUN:
            out["links"] = _serialized_in_runs(listed)
        return ok(out)

    return await svc.workers.cpu(made, size=count * ENTRY_BYTES)


_SERIALIZED_RUN = 4096


def _serialized_in_runs(items: list[Any]) -> orjson.Fragment:
    """``items`` as ``orjson.dumps`` writes them (the same bytes), in calls of `_SERIALIZED_RUN`
    items: one call holds the interpreter, ~0.1 s for a listing of 200,000 links with their
    hrefs, and this runs on a pool thread beside the event loop."""
    runs = (orjson.dumps(items[i : i + _SERIALIZED_RUN])[1:-1] for i in range(0, len(items), _SERIALIZED_RUN))
    return orjson.Fragment(b"[" + b",".join(runs) + b"]")


async def link_item(request: Request) -> Response:
    svc, who, path = service(request), caller(request), domain_param(request)
    gid, title = request.path_params["id"], request.path_params["title"]
    if not title:
        raise NotFound("no link name in the path (names with '#' or '?' must be percent-encoded)")
    if "/" in title:  # HSDS's router has no such path: 404 (a link name holds no '/')
        raise NotFound(f"no link path {title!r}: a link name may not contain '/'")
    if request.method == "PUT":
        outcome = await links.put_link(svc, who, path, gid, title, await json_body(request), flag(request, "replace"))
        return _put_reply(outcome)
    if request.method == "DELETE":
        await links.delete_links(svc, who, path, gid, [title])
        return ok({})
    out = await links.get_link(svc, who, path, gid, title)
    out["hrefs"] = hrefs_of(request).link(gid, out["link"])
    return ok(out)


# --- attributes -------------------------------------------------------------------------------


def _attr_names(request: Request, body: object = None) -> list[str] | None:
    if isinstance(body, dict) and "attr_names" in body:
        names = body["attr_names"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise InvalidInput("attr_names must be a list of strings")
        return names
    raw = request.query_params.get("attr_names")
    if raw is None:
        return None
    return [n for n in raw.split(_separator(request)) if n]


def _owner(request: Request) -> str:
    return f"/{request.path_params['collection']}/{request.path_params['id']}"


def _collection_path(obj_id: str) -> str:
    try:
        return parse_id(obj_id).path
    except (InvalidInput, NotFound):
        return "groups"


def _ignore_nan(request: Request, items: list[dict]) -> list[dict]:
    """NaN and infinities of float values as HSDS answers them: bare tokens, or null with
    ``ignore_nan=1`` (`api.nonfinite`)."""
    return nonfinite.attribute_items(items, flag(request, "ignore_nan"))


def _b64(request: Request) -> bool:
    return request.query_params.get("encoding") == "base64"


async def attributes_collection(request: Request) -> Response:
    svc, who, path = service(request), caller(request), domain_param(request)
    _collection(request)
    obj_id = request.path_params["id"]
    if request.method == "PUT":
        outcome = await attributes.put_attributes(svc, who, path, obj_id, await json_body(request), b64=_b64(request))
        return _put_reply(outcome)
    if request.method == "DELETE":
        await attributes.delete_attributes(svc, who, path, obj_id, _attr_names(request) or [])
        return ok({})
    if request.method == "POST":
        body = await json_body(request)
        if not isinstance(body, dict):
            raise InvalidInput("body must be a JSON object")
        include = flag(request, "IncludeData", default=True)
        if "obj_ids" in body:
            # the path's id and the domain are checked even where the list is empty
            parse_id(obj_id, _collection(request))
            await domains.open_domain(svc, who, path, Permission.READ)
            out = await attrlist.get_attributes_of_many(
                svc, who, path, body["obj_ids"], _attr_names(request, body), include_data=include, b64=_b64(request)
            )
            h = hrefs_of(request)
            if isinstance(out, dict):
                out = {oid: _ignore_nan(request, found) for oid, found in out.items()}
                for oid, found in out.items():
                    h.attributes(f"/{_collection_path(oid)}/{oid}", found)
            return ok({"attributes": out, "hrefs": h.attributes(_owner(request), None)})
        names = _attr_names(request, body)
        if names is None:
            raise InvalidInput("body needs attr_names or obj_ids")
        items = await attrlist.get_attributes(
            svc,
            who,
            path,
            obj_id,
            names=names,
            include_data=include,
            b64=_b64(request),
            max_data_size=int_param(request, "max_data_size") or 0,
        )
        return ok({"attributes": _ignore_nan(request, items), "hrefs": hrefs_of(request).attributes(_owner(request), items)})
    if flag(request, "follow_links"):
        if _collection(request) is not Collection.GROUPS:
            raise InvalidInput("follow_links can only be used with a group")
        followed = await attrlist.get_attributes_followed(
            svc,
            who,
            path,
            obj_id,
            include_data=flag(request, "IncludeData", default=False),
            create_order=flag(request, "CreateOrder"),
            limit=limit_param(request),
            b64=_b64(request),
            pattern=request.query_params.get("pattern"),
            max_data_size=int_param(request, "max_data_size") or 0,
        )
        followed = {oid: _ignore_nan(request, listed) for oid, listed in followed.items()}
        return ok({"attributes": followed, "hrefs": hrefs_of(request).attributes(_owner(request), [])})
    items = await attrlist.get_attributes(
        svc,
        who,
        path,
        obj_id,
        names=_attr_names(request),
        skip_missing=True,
        include_data=flag(request, "IncludeData", default=False),
        create_order=flag(request, "CreateOrder"),
        marker=request.query_params.get("Marker"),
        limit=limit_param(request),
        b64=_b64(request),
        pattern=request.query_params.get("pattern"),
        max_data_size=int_param(request, "max_data_size") or 0,
    )
    hrefs, owner, ignore_nan = hrefs_of(request), _owner(request), flag(request, "ignore_nan")

    def made() -> Response:  # on a pool thread for many attributes, as a links listing
        shown = nonfinite.attribute_items(items, ignore_nan)
        return ok({"attributes": shown, "hrefs": hrefs.attributes(owner, items)})

    return await svc.workers.cpu(made, size=len(items) * ENTRY_BYTES)


async def _binary_attribute_body(request: Request, obj_id: str, name: str) -> dict[str, object]:
    """A packed-bytes attribute value: its type and shape come from the ``type`` and ``shape``
    query parameters (JSON), or else from the attribute being replaced."""
    data = await body_bytes(request)
    type_text, shape_text = request.query_params.get("type"), request.query_params.get("shape")
    if type_text is None:
        existing = await attributes.get_attribute(service(request), caller(request), domain_param(request), obj_id, name,
                                                  value=False)
        type_json, shape_json = existing["type"], existing["shape"]
    else:
        type_json = _json_param("type", type_text)
        shape_json = _json_param("shape", shape_text) if shape_text is not None else None
    return {"type": type_json, "shape": shape_json, attrvalues.PACKED: data}


def _json_param(name: str, text: str) -> object:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        if name == "type":
            return text  # a predefined type name such as H5T_STD_I32LE
        raise InvalidInput(f"parameter {name} must be JSON") from None


_VALUE = "/value"


async def _is_value_put(request: Request, obj_id: str, name: str) -> bool:
    """A PUT of ``.../attributes/{name}/value`` writes the value of attribute ``name`` (HSDS)
    when it exists and no attribute is named with the suffix; otherwise (or with the ``type``
    parameter of a packed body) it creates or replaces an attribute named ``{name}/value``."""
    if request.query_params.get("type") is not None:
        return False
    svc, who, path = service(request), caller(request), domain_param(request)
    try:
        await attributes.get_attribute(svc, who, path, obj_id, name, value=False)
        return False
    except (NotFound, Gone):  # Gone: deleted earlier (service.objects.deleted_names), absent all the same
        pass
    try:
        await attributes.get_attribute(svc, who, path, obj_id, name[: -len(_VALUE)], value=False)
    except (NotFound, Gone):
        return False
    return True


async def attribute_item(request: Request) -> Response:
    svc, who, path = service(request), caller(request), domain_param(request)
    _collection(request)
    obj_id, name = request.path_params["id"], request.path_params["name"]
    if not name:
        raise NotFound("no attribute name in the path (names with '#' or '?' must be percent-encoded)")
    if request.method == "PUT" and name.endswith(_VALUE) and await _is_value_put(request, obj_id, name):
        base = name[: -len(_VALUE)]
        if is_binary(request):
            await attributes.put_attribute_value(svc, who, path, obj_id, base, packed=await body_bytes(request))
        else:
            await attributes.put_attribute_value(svc, who, path, obj_id, base, await json_body(request))
        return ok({})
    if request.method == "PUT":
        if is_binary(request):
            body = await _binary_attribute_body(request, obj_id, name)
            outcome = await attributes.put_attribute(svc, who, path, obj_id, name, body)
            return _put_reply(outcome)
        body = await json_body(request)
        outcome = await attributes.put_attribute(svc, who, path, obj_id, name, body, b64=_b64(request))
        return _put_reply(outcome)
    if request.method == "DELETE":
        await attributes.delete_attributes(svc, who, path, obj_id, [name])
        return ok({})
    as_json = not wants_binary(request) and not _b64(request)
    # the HDF5 REST VOL opens an attribute by this GET (no IncludeData) and reads its type and
    # shape: a large value whose JSON passes the reply limit is then left out, not a 413
    implied = "IncludeData" not in request.query_params
    try:
        attr = await attributes.get_attribute(svc, who, path, obj_id, name, as_json=as_json, leave_out=implied,
                                              value=wants_binary(request) or flag(request, "IncludeData", default=True))
    except (NotFound, Gone):
        if not name.endswith(_VALUE):
            raise
        # GET .../attributes/{name}/value (HSDS): the value alone
        attr = await attributes.get_attribute(svc, who, path, obj_id, name[: -len(_VALUE)], as_json=as_json)
        if attr["shape"].get("class") == "H5S_NULL":
            raise InvalidInput("a null-space attribute has no value to read")
        if wants_binary(request) and attributes.has_value(attr):
            return binary(attributes.binary_value(attr))
        shown = _ignore_nan(request, [attributes.attribute_json(name, attr, include_data=True, b64=_b64(request))])[0]
        base = f"{_owner(request)}/attributes/{segment(name[: -len(_VALUE)])}"
        return ok({"value": shown["value"], "hrefs": hrefs_of(request).of(("self", base + "/value"), ("home", "/"), ("owner", _owner(request)))})
    if wants_binary(request) and attributes.has_value(attr):
        return binary(attributes.binary_value(attr))
    include = flag(request, "IncludeData", default=True) and (attributes.has_value(attr) or not attrvalues.is_outside(attr))
    shown = attributes.attribute_json(name, attr, include_data=include, b64=_b64(request))
    out = _ignore_nan(request, [shown])[0]
    out["hrefs"] = hrefs_of(request).attribute(_owner(request), name)
    return ok(out)


# --- ACLs of single objects ------------------------------------------------------------------


async def object_acls_list(request: Request) -> Response:
    acls = await object_acls.get_object_acls(
        service(request), caller(request), domain_param(request), request.path_params["id"], _collection(request)
    )
    owner = _owner(request)
    return ok({"acls": acls, "hrefs": hrefs_of(request).of(("self", owner + "/acls"), ("home", "/"), ("owner", owner))})


async def object_acl_item(request: Request) -> Response:
    svc, who, path = service(request), caller(request), domain_param(request)
    obj_id, user, collection = request.path_params["id"], request.path_params["user"], _collection(request)
    if request.method == "PUT":
        acl = await object_acls.put_object_acl(svc, who, path, obj_id, collection, user, await json_body(request))
        return ok({"acl": acl, "hrefs": _acl_hrefs(request, user)}, 201)
    return ok({"acl": await object_acls.get_object_acl(svc, who, path, obj_id, collection, user), "hrefs": _acl_hrefs(request, user)})


def _acl_hrefs(request: Request, user: str) -> list[dict[str, str]]:
    owner = _owner(request)
    return hrefs_of(request).of(("self", f"{owner}/acls/{segment(user)}"), ("home", "/"), ("owner", owner))


ROUTES = [
    Route("/groups", post_groups, methods=["POST"]),
    Route("/groups", list_collection(Collection.GROUPS), methods=["GET"]),
    Route("/datatypes", post_datatypes, methods=["POST"]),
    Route("/datatypes", list_collection(Collection.DATATYPES), methods=["GET"]),
    Route("/datasets", post_datasets, methods=["POST"]),
    Route("/datasets", list_collection(Collection.DATASETS), methods=["GET"]),
    Route("/groups/", object_by_path(Collection.GROUPS), methods=["GET"]),
    Route("/datatypes/", object_by_path(Collection.DATATYPES), methods=["GET"]),
    Route("/datasets/", object_by_path(Collection.DATASETS), methods=["GET"]),
    Route("/groups/{id}", object_handler(Collection.GROUPS), methods=["GET", "DELETE"]),
    Route("/datatypes/{id}", object_handler(Collection.DATATYPES), methods=["GET", "DELETE"]),
    Route("/datasets/{id}", object_handler(Collection.DATASETS), methods=["GET", "DELETE"]),
    Route("/datasets/{id}/type", dataset_type, methods=["GET"]),
    Route("/datasets/{id}/shape", dataset_shape, methods=["GET", "PUT"]),
    Route("/datasets/{id}/layout", dataset_layout, methods=["PUT"]),
    Route("/groups/{id}/links", links_collection, methods=["GET", "POST", "PUT", "DELETE"]),
    Route("/groups/{id}/links/{title:path}", link_item, methods=["GET", "PUT", "DELETE"]),
    Route("/{collection}/{id}/acls", object_acls_list, methods=["GET"]),
    Route("/{collection}/{id}/acls/{user}", object_acl_item, methods=["GET", "PUT"]),
    Route("/{collection}/{id}/attributes", attributes_collection, methods=["GET", "POST", "PUT", "DELETE"]),
    Route("/{collection}/{id}/attributes/{name:path}", attribute_item, methods=["GET", "PUT", "DELETE"]),
]
