"""``/h5grove/``: the h5grove API (version 4) that H5Web's h5grove provider calls, with ``file``
naming a domain.

Shapes follow h5grove's own servers: ``meta`` describes an entity (a group with its children),
``attr`` gives attribute values by name, ``data`` a dataset's values (``format=json|bin|npy|csv``,
``dtype=origin|safe``, ``flatten``, a numpy-style ``selection``), ``stats`` h5grove's statistics
and ``paths`` every path below a group. Errors are ``{"message": ...}`` with h5grove's statuses
(404 for a missing file or path, 403 for no permission, 422 for a bad argument), and the
messages H5Web recognises.

Responses allow any origin (no credentials), so the stock H5Web app served elsewhere can read
a ``--public-read`` server; wider CORS belongs to the whole API.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from h5lake.api.arrays import csv_text, npy_bytes
from h5lake.api.errors import CHALLENGE, status_of
from h5lake.api.http import caller, service
from h5lake.errors import Forbidden, H5LakeError, InvalidInput, NotFound, Unauthorized
from h5lake.model.reduce import is_numeric
from h5lake.model.types import VARIABLE, CharSet, StrPad, TypeClass, hdf5_size, is_bool, to_dtype
from h5lake.model.values import array_to_bytes, array_to_json
from h5lake.service import browse, preview
from h5lake.service.browse import Entity

CORS = {"Access-Control-Allow-Origin": "*"}
Handler = Callable[[Request], Awaitable[Response]]


def _json(content: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY)
    return Response(body, status_code=status, media_type="application/json", headers={**CORS, **(headers or {})})


def h5grove(handler: Handler) -> Handler:
    """h5grove's error shape and statuses for every failure of ``handler``."""

    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except Unauthorized as exc:
            return _json({"message": exc.message}, 401, {"WWW-Authenticate": CHALLENGE})
        except Forbidden as exc:
            return _json({"message": f"Cannot read file: Permission denied! ({exc.message})"}, 403)
        except browse.PathNotFound as exc:
            return _json({"message": exc.message}, 404)
        except NotFound as exc:
            return _json({"message": f"File not found! ({exc.message})"}, 404)
        except InvalidInput as exc:
            return _json({"message": exc.message}, 422)
        except H5LakeError as exc:
            return _json({"message": exc.message}, status_of(exc))

    return wrapped


def _file(request: Request) -> str:
    file = request.query_params.get("file")
    if not file:
        raise InvalidInput("parameter file (the domain) is required")
    return file


def _path(request: Request) -> str:
    return request.query_params.get("path") or "/"


# --- metadata ---------------------------------------------------------------------------------

_CLASS_CODES = {
    TypeClass.INTEGER: 0, TypeClass.FLOAT: 1, TypeClass.STRING: 3, TypeClass.BITFIELD: 4,
    TypeClass.OPAQUE: 5, TypeClass.COMPOUND: 6, TypeClass.REFERENCE: 7, TypeClass.ENUM: 8,
    TypeClass.VLEN: 9, TypeClass.ARRAY: 10,
}
_STRPAD = {StrPad.NULLTERM: 0, StrPad.NULLPAD: 1, StrPad.SPACEPAD: 2}


def _dtype_str(t: dict[str, Any]) -> Any:
    dtype = to_dtype(t)
    if dtype.names is not None:
        return {n: _dtype_str(f["type"]) for n, f in zip(dtype.names, t["fields"])}
    return dtype.str


def type_metadata(t: dict[str, Any]) -> dict[str, Any]:
    """An h5lake type as h5grove describes an HDF5 type (HDF5 class codes, numpy dtype)."""
    cls = TypeClass(t["class"])
    out: dict[str, Any] = {"class": _CLASS_CODES[cls], "dtype": _dtype_str(t), "size": hdf5_size(t)}
    base = t.get("base")
    order = 1 if isinstance(base, str) and base.endswith("BE") else 0
    match cls:
        case TypeClass.INTEGER:
            out.update(order=order, sign=0 if base.startswith("H5T_STD_U") else 1)  # type: ignore[union-attr]
        case TypeClass.FLOAT | TypeClass.BITFIELD:
            out.update(order=order)
        case TypeClass.STRING:
            out.update(cset=1 if t["charSet"] == CharSet.UTF8 else 0, strpad=_STRPAD[StrPad(t["strPad"])],
                       vlen=t["length"] == VARIABLE)
        case TypeClass.OPAQUE:
            out.update(tag=t.get("tag", ""))
        case TypeClass.COMPOUND:
            out.update(members=[{"name": f["name"], **type_metadata(f["type"])} for f in t["fields"]])
        case TypeClass.ENUM:
            out.update(members={m["name"]: m["value"] for m in t["members"]}, base=type_metadata(t["base"]))
            if is_bool(t):
                out["dtype"] = "|b1"
        case TypeClass.VLEN:
            out.update(base=type_metadata(t["base"]))
        case TypeClass.ARRAY:
            out.update(dims=list(t["dims"]), base=type_metadata(t["base"]))
    return out


def _shape(shape_json: dict[str, Any]) -> list[int] | None:
    cls = shape_json.get("class")
    if cls == "H5S_NULL":
        return None
    if cls == "H5S_SCALAR":
        return []
    return list(shape_json.get("dims", []))


def _filters(doc: dict[str, Any]) -> list[dict[str, Any]] | None:
    found = doc.get("creationProperties", {}).get("filters") or []
    return [{"id": f.get("id"), "name": f.get("name", f.get("class", ""))} for f in found] or None


def _attributes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"name": n, "shape": _shape(a["shape"]), "type": type_metadata(a["type"])}
        for n, a in sorted(doc.get("attributes", {}).items())
    ]


def entity_metadata(entity: Entity, children: list[Entity] | None = None) -> dict[str, Any]:
    name = "" if entity.path == "/" else entity.name
    doc = entity.doc
    if doc is None:
        link = entity.link or {}
        if entity.kind == "external_link":
            return {"kind": "external_link", "name": name, "target_file": link.get("h5domain", link.get("file", "")),
                    "target_path": link.get("h5path", "")}
        if entity.kind == "soft_link":
            return {"kind": "soft_link", "name": name, "target_path": link.get("h5path", "")}
        return {"kind": "other", "name": name}
    out: dict[str, Any] = {"attributes": _attributes(doc), "kind": entity.kind, "name": name}
    if entity.kind == "dataset":
        layout = doc.get("layout", {})
        out.update(
            chunks=layout.get("dims") if layout.get("class") == "H5D_CHUNKED" and layout.get("dims") else None,
            filters=_filters(doc),
            shape=_shape(doc["shape"]),
            type=type_metadata(doc["type"]),
        )
    elif entity.kind == "datatype":
        out["type"] = type_metadata(doc["type"])
    elif entity.kind == "group" and children is not None:
        out["children"] = [entity_metadata(c) for c in children]
    return dict(sorted(out.items()))


# --- handlers ---------------------------------------------------------------------------------


@h5grove
async def root(request: Request) -> Response:
    return Response("ok", headers=CORS)


@h5grove
async def meta(request: Request) -> Response:
    tree = await browse.entity_with_children(service(request), caller(request), _file(request), _path(request))
    return _json(entity_metadata(tree.entity, tree.children))


@h5grove
async def attr(request: Request) -> Response:
    _, entity = await browse.entity_at(service(request), caller(request), _file(request), _path(request))
    if entity.doc is None:
        raise InvalidInput(f"{entity.path} is not a resolved entity")
    attrs = entity.doc.get("attributes", {})
    keys = request.query_params.getlist("attr_keys") or sorted(attrs)
    missing = [k for k in keys if k not in attrs]
    if missing:
        raise browse.PathNotFound(f"attribute {missing[0]!r} not found at {entity.path}")
    return _json({k: attrs[k].get("value") for k in keys})


def _safe(arr: np.ndarray) -> np.ndarray:
    """h5grove's ``dtype=safe``: a type JavaScript has a typed array for, little-endian."""
    if not is_numeric(arr.dtype):
        raise InvalidInput("Unsupported dtype safe for non-numeric data")
    dtype = arr.dtype
    if dtype.kind == "f" and dtype.itemsize < 4:
        dtype = np.dtype("<f4")
    elif dtype.kind == "f" and dtype.itemsize > 8:
        dtype = np.dtype("<f8")
    elif dtype.byteorder in ("=", ">"):
        dtype = dtype.newbyteorder("<")
    return arr.astype(dtype, copy=False)


#: Bytes of values one text answer (``json``, ``csv``) may hold: text is several times the
#: values and made a value at a time; ``bin`` and ``npy`` go up to the request limit.
TEXT_VALUES_LIMIT = 16 * 1024 * 1024


@h5grove
async def data(request: Request) -> Response:
    fmt = request.query_params.get("format", "json")
    dtype = request.query_params.get("dtype", "origin")
    if fmt not in ("json", "bin", "npy", "csv"):
        raise InvalidInput(f"Unsupported encoding {fmt}")
    if dtype not in ("origin", "safe"):
        raise InvalidInput(f"Unsupported dtype {dtype}")
    flatten = request.query_params.get("flatten", "false").lower() not in ("false", "0", "")
    svc = service(request)
    found = await preview.read_region(
        svc, caller(request), _file(request), _path(request), request.query_params.get("selection"),
        max_bytes=TEXT_VALUES_LIMIT if fmt in ("json", "csv") else None,
    )
    if found.dataset.layout is None:
        return _json(None)
    # encoding is CPU work as large as the answer: on the pool, so the event loop serves others
    return await svc.workers.cpu(_encoded, found.values, found.dataset.type_json, fmt, dtype, flatten,
                                 size=found.values.nbytes)


def _encoded(arr: np.ndarray, type_json: dict[str, Any], fmt: str, dtype: str, flatten: bool) -> Response:
    if dtype == "safe":
        arr = _safe(arr)
    if flatten and arr.ndim:
        arr = arr.reshape(-1)
    if fmt == "json":
        return _json(array_to_json(arr, type_json) if dtype == "origin" else arr.tolist())
    if fmt == "bin":
        body = array_to_bytes(arr, type_json) if dtype == "origin" else np.ascontiguousarray(arr).tobytes()
        return Response(body, media_type="application/octet-stream", headers=CORS)
    if not is_numeric(arr.dtype):
        raise InvalidInput(f"Unsupported encoding {fmt} for non-numeric content")
    if fmt == "npy":
        return Response(npy_bytes(arr), media_type="application/octet-stream",
                        headers={**CORS, "Content-Disposition": 'attachment; filename="data.npy"'})
    if arr.ndim == 0:
        raise InvalidInput(f"Unsupported encoding {fmt} for empty and scalar datasets")
    return Response(csv_text(arr), media_type="text/csv",
                    headers={**CORS, "Content-Disposition": 'attachment; filename="data.csv"'})


@h5grove
async def stats(request: Request) -> Response:
    out = await preview.region_stats(
        service(request), caller(request), _file(request), _path(request), request.query_params.get("selection")
    )
    return _json(out)


@h5grove
async def paths(request: Request) -> Response:
    found = await browse.list_paths(service(request), caller(request), _file(request), _path(request))
    return _json([p for p, _ in found.paths])


ROUTES = [
    Route("/h5grove/", root, methods=["GET", "HEAD"]),
    Route("/h5grove/meta", meta, methods=["GET"]),
    Route("/h5grove/attr", attr, methods=["GET"]),
    Route("/h5grove/data", data, methods=["GET"]),
    Route("/h5grove/stats", stats, methods=["GET"]),
    Route("/h5grove/paths", paths, methods=["GET"]),
]
