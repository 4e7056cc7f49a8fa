"""``/h5grove/``: the h5grove API (version 4) that H5Web's h5grove provider calls, with ``file``
naming a domain.

Shapes follow h5grove's own servers: ``meta`` describes an entity (a group with its children),
``attr`` gives attribute values by name, ``data`` a dataset's values (``format=json|bin|npy|csv|tiff``,
``dtype=origin|safe``, ``flatten``, a numpy-style ``selection``), ``stats`` h5grove's statistics
and ``paths`` every path below a group. Errors are ``{"message": ...}`` with h5grove's statuses
(404 for a missing file or path, 403 for no permission, 422 for a bad argument), and the
messages H5Web recognises.

Types are described as h5py sees them, since h5grove reads with h5py: a compound of two floats
named ``r`` and ``i`` is numpy's complex (``dtype`` ``<c16``; numeric for ``dtype=safe``, ``npy``),
and a long double (kept here as an opaque type with its ``hdf5Type``) is a float of 16 bytes
whose values come as numbers (``model.h5pynumbers``); the other types h5lake carries as opaque
(16-byte integers, time types), which h5py cannot read, stay opaque. ``chunks`` and ``filters`` are the dataset's creation properties
(what the file had), not the chunks h5lake stores a contiguous dataset in. What was checked
against the stock H5Web app, and how: docs/api.md and dev/h5web_check.py.

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

from h5lake.api.arrays import csv_text, npy_bytes, tiff_bytes
from h5lake.api.errors import CHALLENGE, status_of
from h5lake.api.http import caller, held, service
from h5lake.errors import Forbidden, H5LakeError, InvalidInput, NotFound, Unauthorized
from h5lake.model.h5pynumbers import LONG_DOUBLE, as_numbers, complex_dtype, is_long_double
from h5lake.model.reduce import is_numeric
from h5lake.model.types import VARIABLE, CharSet, StrPad, TypeClass, hdf5_size, is_bool, to_dtype
from h5lake.model.values import array_to_bytes, array_to_json
from h5lake.service.objects import attribute_values as attrvalues
from h5lake.service.viewer import browse, preview
from h5lake.service.viewer.browse import Entity

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
            status = status_of(exc)
            return _json({"message": exc.message}, status, {"Retry-After": "1"} if status == 503 else None)

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
    cplx = complex_dtype(t)
    if cplx is not None:
        return cplx.str
    dtype = to_dtype(t)
    if dtype.names is not None:
        return {n: _dtype_str(f["type"]) for n, f in zip(dtype.names, t["fields"])}
    return dtype.str


def type_metadata(t: dict[str, Any]) -> dict[str, Any]:
    """An h5lake type as h5grove describes an HDF5 type (HDF5 class codes, numpy dtype)."""
    cls = TypeClass(t["class"])
    if is_long_double(t):
        return {"class": _CLASS_CODES[TypeClass.FLOAT], "dtype": LONG_DOUBLE.str, "size": 16, "order": 0}
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


#: HDF5's own names of its built-in filters (what h5py reports); others keep the stored name
_HDF5_FILTER_NAMES = {1: "deflate", 2: "shuffle", 3: "fletcher32", 4: "szip", 5: "nbit", 6: "scaleoffset"}


def _filters(doc: dict[str, Any]) -> list[dict[str, Any]] | None:
    found = doc.get("creationProperties", {}).get("filters") or []
    return [
        {"id": f.get("id"), "name": _HDF5_FILTER_NAMES.get(f.get("id"), f.get("name", f.get("class", "")))}
        for f in found
    ] or None


def _chunks(doc: dict[str, Any]) -> list[int] | None:
    """The chunk shape the dataset was created with; a contiguous or compact one has none (h5lake
    stores those chunked too). Without a requested layout, the chunks h5lake chose, as h5pyd
    reports them."""
    asked = doc.get("creationProperties", {}).get("layout")
    layout = asked if isinstance(asked, dict) and asked.get("class") else doc.get("layout", {})
    if str(layout.get("class", "")).startswith("H5D_CHUNKED") and layout.get("dims"):
        return list(layout["dims"])
    return None


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
        out.update(
            chunks=_chunks(doc),
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
    # ~60 us a child: a group of 100,000 children is seconds of Python, which a pool thread
    # runs letting the event loop in every switch interval
    described = await service(request).workers.cpu(
        entity_metadata, tree.entity, tree.children, size=len(tree.children) * CHILD_COST_BYTES
    )
    return _json(described)


CHILD_COST_BYTES = 1024
"""What describing one child counts as for `Workers.cpu` (bytes of work): ~64 children inline."""


@h5grove
async def attr(request: Request) -> Response:
    domain, entity = await browse.entity_at(service(request), caller(request), _file(request), _path(request))
    if entity.doc is None:
        raise InvalidInput(f"{entity.path} is not a resolved entity")
    attrs = entity.doc.get("attributes", {})
    keys = request.query_params.getlist("attr_keys") or sorted(attrs)
    missing = [k for k in keys if k not in attrs]
    if missing:
        raise browse.PathNotFound(f"attribute {missing[0]!r} not found at {entity.path}")
    attrs = await attrvalues.loaded(service(request), domain, entity.doc["id"], attrs, keys)  # large values: read now
    return _json({k: attrs[k].get("value") for k in keys})


def _is_number(dtype: np.dtype[Any]) -> bool:
    """Numeric as h5grove has it (numpy's numbers and booleans, complex included)."""
    return is_numeric(dtype) or (dtype.names is None and dtype.kind == "c")


def _safe(arr: np.ndarray) -> np.ndarray:
    """h5grove's ``dtype=safe``: a type JavaScript has a typed array for, little-endian."""
    if not _is_number(arr.dtype):
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
    if fmt not in ("json", "bin", "npy", "csv", "tiff"):
        raise InvalidInput(f"Unsupported encoding {fmt}")
    if dtype not in ("origin", "safe"):
        raise InvalidInput(f"Unsupported dtype {dtype}")
    flatten = request.query_params.get("flatten", "false").lower() not in ("false", "0", "")
    svc = service(request)
    found = await preview.read_region(
        svc, caller(request), _file(request), _path(request), request.query_params.get("selection"),
        max_bytes=TEXT_VALUES_LIMIT if fmt in ("json", "csv") else None, holds=HOLDS[fmt],
        gone=request.is_disconnected,
    )
    if found.dataset.layout is None:  # an empty (null) dataspace: h5py's Empty, not numbers
        if dtype == "safe":
            raise InvalidInput("Unsupported dtype safe for non-numeric data")
        if fmt == "json":
            return _json(None)
        if fmt == "bin":
            return Response(b"", media_type="application/octet-stream", headers=CORS)
        raise InvalidInput(f"Unsupported encoding {fmt} for non-numeric content")
    # encoding is CPU work as large as the answer: on the pool, so the event loop serves others
    try:
        response = await svc.workers.cpu(_encoded, found.values, found.dataset.type_json, fmt, dtype, flatten,
                                         size=found.values.nbytes)
    except BaseException:
        found.held.release()
        raise
    return held(response, found.held)


HOLDS = {"json": 8, "csv": 6, "bin": 3, "npy": 3, "tiff": 3}
"""Multiples of the values' bytes an answer holds at most while made and sent (values, numbers
converted for ``safe``, the encoding; text: Python's numbers and strings), reserved from the
server's reply budget (`service.budget`)."""


def _encoded(arr: np.ndarray, type_json: dict[str, Any], fmt: str, dtype: str, flatten: bool) -> Response:
    numbers = as_numbers(arr, type_json)
    if dtype == "safe":
        numbers = _safe(numbers)
    if flatten and arr.ndim:
        arr, numbers = arr.reshape(-1), numbers.reshape(-1)
    if fmt == "json":
        if numbers.dtype.kind == "c":  # [real, imaginary] pairs, as h5grove writes complex numbers
            return _json(array_to_json(arr, type_json))
        if is_long_double(type_json):  # as numbers (h5grove's JSON has no more precision either)
            return _json(numbers.astype("<f8").tolist())
        return _json(array_to_json(arr, type_json) if dtype == "origin" else numbers.tolist())
    if fmt == "bin":
        body = array_to_bytes(arr, type_json) if dtype == "origin" else np.ascontiguousarray(numbers).tobytes()
        return Response(body, media_type="application/octet-stream", headers=CORS)
    if not _is_number(numbers.dtype):
        raise InvalidInput(f"Unsupported encoding {fmt} for non-numeric content")
    if fmt == "npy":
        return Response(npy_bytes(numbers), media_type="application/octet-stream",
                        headers={**CORS, "Content-Disposition": 'attachment; filename="data.npy"'})
    if numbers.ndim == 0:
        raise InvalidInput(f"Unsupported encoding {fmt} for empty and scalar datasets")
    if fmt == "tiff":
        return Response(tiff_bytes(numbers), media_type="image/tiff",
                        headers={**CORS, "Content-Disposition": 'attachment; filename="data.tiff"'})
    return Response(csv_text(numbers), media_type="text/csv",
                    headers={**CORS, "Content-Disposition": 'attachment; filename="data.csv"'})


@h5grove
async def stats(request: Request) -> Response:
    out = await preview.region_stats(
        service(request), caller(request), _file(request), _path(request), request.query_params.get("selection"),
        request.is_disconnected,
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
