"""``/view/``: the web view (a static page) and the small JSON/binary API it calls.

Everything lives under ``/view/`` so that a browser which logged in for the page sends the same
credentials with every call the page makes. The page's data endpoints are read-only and answer
with the same ACLs as the REST API.
"""

from __future__ import annotations

import re
import struct
import time
from importlib import resources
from typing import Any

import numpy as np
import orjson
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from h5lake.api.arrays import csv_text, npy_bytes
from h5lake.api.errors import CHALLENGE
from h5lake.api.http import caller, held, int_param, ok, service
from h5lake.errors import InvalidInput, Unauthorized
from h5lake.model.h5pynumbers import as_numbers, is_long_double
from h5lake.model.types import client_type
from h5lake.model.values import array_to_json
from h5lake.service.viewer import browse, preview
from h5lake.service.viewer.browse import Entity

JSON_VALUES_LIMIT = 16 * 1024 * 1024
"""Bytes of values one JSON (table) answer may read; the page pages through larger data."""
CSV_LIMIT = 64 * 1024 * 1024
FLOAT64 = {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}
JS_EXACT = 2**53
"""Integers beyond this cannot be held exactly by a JavaScript number (the page's JSON)."""
WIDE_INTEGER = re.compile(rb"H5T_STD_[IU]64")


def _param(request: Request, name: str, required: bool = True) -> str:
    value = request.query_params.get(name)
    if value is None and required:
        raise InvalidInput(f"parameter {name} is required")
    return value or ""


async def page(request: Request) -> Response:
    """The page itself. Without credentials on a server whose reads are not public, the
    browser is asked to log in first, so the page's own calls carry the login."""
    identity = request.scope["state"]["identity"]
    if isinstance(identity, Unauthorized) or (identity.user is None and not service(request).public_read):
        message = identity.message if isinstance(identity, Unauthorized) else "log in to view data"
        return Response(message, status_code=401, headers={"WWW-Authenticate": CHALLENGE})
    html = resources.files("h5lake").joinpath("web", "index.html").read_bytes()
    return Response(html, media_type="text/html", headers={"Cache-Control": "no-cache"})


async def redirect(request: Request) -> Response:
    return RedirectResponse("/view/" + (f"?{request.url.query}" if request.url.query else ""))


async def folder(request: Request) -> Response:
    entries = await browse.folder_listing(service(request), caller(request), _param(request, "folder", False) or "/")
    return ok(
        {
            "entries": [
                {"name": e.name, "kind": e.kind, "owner": e.owner, "lastModified": e.last_modified, "size": e.size}
                for e in entries
            ]
        }
    )


async def summary(request: Request) -> Response:
    return ok(await browse.domain_summary(service(request), caller(request), _param(request, "domain")))


async def describe(request: Request) -> Response:
    found = await browse.describe(
        service(request), caller(request), _param(request, "domain"), _param(request, "path", False)
    )
    tree = found.tree
    out = _entity_json(tree.entity, found.paths)
    out["domain"] = tree.domain.path
    out["children"] = [{"name": c.name, "path": c.path, "kind": c.kind} for c in tree.children]
    doc = tree.entity.doc
    if doc is not None and tree.entity.kind == "dataset":
        out["dataset"] = _dataset_json(doc, found)
    elif doc is not None and tree.entity.kind == "datatype":
        out["datatype"] = {"type": client_type(doc["type"])}
    return ok(out)


def _entity_json(entity: Entity, paths: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"path": entity.path, "name": entity.name or "/", "kind": entity.kind}
    if entity.link is not None:
        out["link"] = {k: v for k, v in entity.link.items() if k in ("class", "h5path", "h5domain", "file")}
    doc = entity.doc
    if doc is not None:
        out["id"] = doc["id"]
        out["created"] = doc.get("created")
        out["lastModified"] = doc.get("lastModified")
        out["attributes"] = [_attribute_json(name, a, paths) for name, a in sorted(doc.get("attributes", {}).items())]
    return out


def _attribute_json(name: str, attr: dict[str, Any], paths: dict[str, str]) -> dict[str, Any]:
    """An attribute for the page; one holding object references also as ``shown``: each
    reference the path of its object (``datasets/d-...`` tells a reader nothing)."""
    out = {"name": name, "type": client_type(attr["type"]), "shape": attr["shape"], "value": js_exact(attr.get("value"))}
    if paths and "H5T_STD_REF_OBJ" in str(attr["type"]):
        out["shown"] = _as_paths(attr.get("value"), paths)
    return out


def _as_paths(value: Any, paths: dict[str, str]) -> Any:
    if isinstance(value, str):
        m = browse.REFERENCE.match(value)
        return paths.get(m.group(1), value) if m else value
    if isinstance(value, list):
        return [_as_paths(v, paths) for v in value]
    return value


def _dataset_json(doc: dict[str, Any], found: browse.Description) -> dict[str, Any]:
    props = doc.get("creationProperties", {})
    layout = doc.get("layout", {})
    return {
        "type": client_type(doc["type"]),
        "shape": doc["shape"],
        "chunks": layout.get("dims"),
        "layout": props.get("layout", {}).get("class") or layout.get("class"),
        "filters": props.get("filters", []),
        "fillValue": props.get("fillValue"),
        "stats": found.stats,
        "linked": found.linked,
        "dimensions": found.dimensions,
    }


async def linked_chunks(request: Request) -> Response:
    """The files a linked dataset reads, with the chunks of each (read from its chunk table:
    asked apart from ``object`` so that the page shows the rest without waiting)."""
    return ok(
        await browse.linked_chunks(service(request), caller(request), _param(request, "domain"), _param(request, "path"))
    )


async def paths(request: Request) -> Response:
    found = await browse.list_paths(service(request), caller(request), _param(request, "domain"), _param(request, "path", False))
    return ok({"paths": [{"path": p, "kind": k} for p, k in found.paths], "truncated": found.truncated})


async def preview_values(request: Request) -> Response:
    """A region reduced for a plot, as ``<u4 header length, JSON header, float data>``: the
    header says how it was reduced; lines carry float64 x then y, images float32 rows.
    ``Server-Timing`` gives the time spent here (reading and reducing), for benchmarks."""
    started = time.perf_counter()
    reduced = await preview.preview(
        service(request),
        caller(request),
        _param(request, "domain"),
        _param(request, "path"),
        request.query_params.get("selection"),
        int_param(request, "width", minimum=1) or 800,
        int_param(request, "height", minimum=1) or 500,
        gone=request.is_disconnected,
    )
    head = orjson.dumps(reduced.header())
    head += b" " * (-(len(head) + 4) % 8)  # data starts 8-byte aligned
    if reduced.x is not None:
        body = reduced.x.astype("<f8").tobytes() + reduced.data.astype("<f8").tobytes()
    else:
        body = reduced.data.astype("<f4").tobytes()
    ms = (time.perf_counter() - started) * 1000
    return Response(struct.pack("<I", len(head)) + head + body, media_type="application/octet-stream",
                    headers={"Server-Timing": f"preview;dur={ms:.1f}"})


async def region_values(request: Request) -> Response:
    """Values of a region, whole: JSON for tables, ``.npy`` or ``.csv`` downloads."""
    fmt = request.query_params.get("format", "json")
    if fmt not in ("json", "npy", "csv"):
        raise InvalidInput("format must be json, npy or csv")
    limit = {"json": JSON_VALUES_LIMIT, "csv": CSV_LIMIT}.get(fmt)
    found = await preview.read_region(
        service(request),
        caller(request),
        _param(request, "domain"),
        _param(request, "path"),
        request.query_params.get("selection"),
        max_bytes=limit,
        holds=HOLDS[fmt],
        gone=request.is_disconnected,
    )
    try:
        return held(await _values_reply(request, fmt, found), found.held)
    except BaseException:
        found.held.release()
        raise


HOLDS = {"json": 8, "csv": 6, "npy": 2}
"""Multiples of the values' bytes a reply holds at most while made and sent, reserved from the
server's reply budget (`service.budget`): the values and their encoding (text: Python's
numbers and strings besides)."""


async def _values_reply(request: Request, fmt: str, found: preview.RegionValues) -> Response:
    name = (found.dataset.doc.get("id", "data") if not request.query_params.get("path") else
            request.query_params["path"].rstrip("/").rsplit("/", 1)[-1] or "data")
    # encoding is CPU work as large as the answer: on the pool, so the event loop serves others
    cpu = service(request).workers.cpu
    if fmt == "npy":
        return _download(await cpu(npy_bytes, found.values, size=found.values.nbytes), f"{name}.npy",
                         "application/octet-stream")
    if fmt == "csv":
        text = await cpu(csv_text, found.values, size=found.values.nbytes)
        return _download(text.encode(), f"{name}.csv", "text/csv")
    value = None
    values, type_json = found.values, found.dataset.type_json
    if is_long_double(type_json):  # numbers, as h5py reads them (kept as an opaque carrier)
        values, type_json = as_numbers(values, type_json).astype(np.float64), FLOAT64
    if found.dataset.layout is not None:
        value = await cpu(_table_json, values, type_json, size=values.nbytes)
    return ok({"shape": list(found.region.shape), "value": value, "type": client_type(type_json)})


def _table_json(values: np.ndarray, type_json: dict[str, Any]) -> Any:
    out = array_to_json(values, type_json)
    if not WIDE_INTEGER.search(orjson.dumps(type_json)):
        return out  # no integer of 64 bits inside
    if values.dtype.kind in "iu" and not ((values > JS_EXACT).any() or (values < -JS_EXACT).any()):
        return out
    return js_exact(out)


def js_exact(value: Any) -> Any:
    """``value`` (JSON) with the integers a JavaScript number would round (beyond 2^53) as
    decimal strings, which the page shows as they are: -9223372036854775808 would read as
    -9223372036854776000."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value) if abs(value) > JS_EXACT else value
    if isinstance(value, list):
        return [js_exact(v) for v in value]
    if isinstance(value, dict):
        return {k: js_exact(v) for k, v in value.items()}
    return value


def _download(data: bytes | memoryview, filename: str, media_type: str) -> Response:
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in filename)
    return Response(data, media_type=media_type, headers={"Content-Disposition": f'attachment; filename="{safe}"'})


ROUTES = [
    Route("/view", redirect, methods=["GET"]),
    Route("/view/", page, methods=["GET"]),
    Route("/view/api/folder", folder, methods=["GET"]),
    Route("/view/api/summary", summary, methods=["GET"]),
    Route("/view/api/object", describe, methods=["GET"]),
    Route("/view/api/paths", paths, methods=["GET"]),
    Route("/view/api/linked", linked_chunks, methods=["GET"]),
    Route("/view/api/preview", preview_values, methods=["GET"]),
    Route("/view/api/values", region_values, methods=["GET"]),
    Mount("/view/static", app=StaticFiles(packages=[("h5lake", "web")]), name="view-static"),
]
