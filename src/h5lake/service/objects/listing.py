"""``GET /?getobjs=1&Limit=N[&Marker=PATH]``: a domain's objects a page at a time (h5lake's
extension of HSDS's ``getobjs``, which lists every object in one reply or none).

A page walks the hard links from the root depth first, each group's links in name order, and
describes at most ``limit`` objects as ``domain_objs`` does. Its ``nextMarker`` is the HDF5 path
of the last link it followed; the next page resumes after it by resolving that path (one read
per level), so the server keeps no state between pages and each page's work is bounded: at most
``limit`` objects read and described, plus `BATCH` read ahead per level of the path. An object
is listed once per page; one reached by several paths may be listed again on a later page, and
a group already on the current path (a cycle) is not entered. With ``values``, a dataset of a
fixed-size type whose whole value is at most `VALUE_BYTES` shows it as ``value_base64``: its
packed bytes, as ``GET /datasets/{id}/value`` answers them in binary."""

from __future__ import annotations

import base64
import bisect
import math
from dataclasses import dataclass, field
from typing import Any

from h5lake.chunks import engine
from h5lake.errors import InvalidInput
from h5lake.model.ids import Collection, parse_id
from h5lake.model.links import LinkClass
from h5lake.model.selection import Selection
from h5lake.model.types import is_variable, wire_dtype
from h5lake.model.values import array_to_bytes
from h5lake.service.context import Service
from h5lake.service.datasets.opened import dataset_layout
from h5lake.service.documents import Doc
from h5lake.service.objects.links import MAX_PATH_STEPS
from h5lake.service.views import Domain

BATCH = 64
"""Objects of one group read together (concurrently) before the walk goes on."""

VALUE_BYTES = 4096
"""The largest dataset value a page shows inline (``values``)."""


@dataclass
class _Frame:
    """A group on the walk's current path: its hard links by name, and how far they are listed."""

    id: str
    path: str
    names: list[str]
    targets: dict[str, str]
    index: int = 0
    ready: dict[str, Doc | None] = field(default_factory=dict)  # read ahead, not yet listed

    @classmethod
    def of(cls, doc: Doc, path: str) -> _Frame:
        targets = {
            name: link["id"]
            for name, link in (doc.get("links") or {}).items()
            if link.get("class", LinkClass.HARD.value) == LinkClass.HARD.value and isinstance(link.get("id"), str)
        }
        return cls(doc["id"], path, sorted(targets), targets)

    def child_path(self, name: str) -> str:
        return f"{self.path.rstrip('/')}/{name}"


@dataclass(frozen=True, slots=True)
class Page:
    objects: dict[str, Doc]  # id -> its document
    next_marker: str | None  # None: the listing is complete


def _is_group(obj_id: str) -> bool:
    return obj_id.startswith("g-")


async def objects_page(svc: Service, domain: Domain, limit: int, marker: str | None) -> Page:
    """At most ``limit`` objects of ``domain`` after ``marker`` (module docstring), as documents."""
    root = domain.require_root()
    out: dict[str, Doc] = {}
    stack: list[_Frame] = []
    on_path: set[str] = set()

    async def read(obj_id: str) -> Doc | None:
        found = await domain.view.object(obj_id)
        return None if found is None or found.doc.get("root") != root else found.doc

    def push(doc: Doc, path: str) -> None:
        if len(stack) >= MAX_PATH_STEPS:  # deeper groups are listed, not entered
            return
        stack.append(_Frame.of(doc, path))
        on_path.add(doc["id"])

    root_doc = await read(root)
    if root_doc is None:
        return Page(out, None)
    last: str | None = None
    if marker is None:
        out[root] = root_doc
        last = "/"
        push(root_doc, "/")
    else:
        await _resume(marker, root_doc, read, push, stack)
    while stack and len(out) < limit:
        f = stack[-1]
        while f.index < len(f.names) and (f.targets[f.names[f.index]] in out or f.targets[f.names[f.index]] in on_path):
            f.index += 1
        if f.index >= len(f.names):
            on_path.discard(stack.pop().id)
            continue
        name = f.names[f.index]
        if name not in f.ready:
            ahead = [n for n in f.names[f.index:f.index + min(BATCH, limit - len(out))]
                     if f.targets[n] not in out and f.targets[n] not in on_path]
            docs = await svc.workers.map([f.targets[n] for n in ahead], read)
            f.ready.update(zip(ahead, docs, strict=True))
        doc = f.ready.pop(name)
        f.index += 1
        last = f.child_path(name)
        if doc is None:  # a dangling link
            continue
        out[doc["id"]] = doc
        if _is_group(doc["id"]):
            push(doc, last)
    return Page(out, last if stack else None)


async def _resume(marker: str, root_doc: Doc, read: Any, push: Any, stack: list[_Frame]) -> None:
    """Rebuild the walk's path to ``marker`` (the last link a page followed), positioned after it."""
    if not marker.startswith("/"):
        raise InvalidInput(f"Marker {marker[:80]!r} is not an absolute HDF5 path (a page's nextMarker)")
    parts = [p for p in marker.split("/") if p]
    if len(parts) > MAX_PATH_STEPS:
        raise InvalidInput(f"Marker walks more than {MAX_PATH_STEPS} links")
    push(root_doc, "/")
    for n, part in enumerate(parts):
        f = stack[-1]
        f.index = bisect.bisect_right(f.names, part)
        target = f.targets.get(part)
        last = n == len(parts) - 1
        if target is None or not _is_group(target):
            if last:
                return  # a dataset, datatype or a link since deleted: go on after it
            raise InvalidInput(f"Marker {marker[:80]!r} no longer leads through groups of the domain")
        if any(g.id == target for g in stack):
            if last:
                return  # a cycle: not entered
            raise InvalidInput(f"Marker {marker[:80]!r} leads round a cycle")
        doc = await read(target)
        if doc is None:
            if last:
                return
            raise InvalidInput(f"Marker {marker[:80]!r} no longer leads through groups of the domain")
        push(doc, f.child_path(part))
    if not parts:
        return  # "/": the root was listed, its links follow


def small_value_size(doc: Doc) -> int | None:
    """The bytes of a dataset's whole value when a page shows it inline, else None."""
    t = doc.get("type")
    shape = doc.get("shape") or {}
    if not isinstance(t, dict) or is_variable(t) or shape.get("class") == "H5S_NULL":
        return None
    try:
        size = math.prod(int(d) for d in shape.get("dims") or ()) * wire_dtype(t).itemsize
    except (TypeError, ValueError):
        return None
    return size if 0 < size <= VALUE_BYTES else None


async def value_base64(svc: Service, domain: Domain, doc: Doc) -> str | None:
    """A small dataset's whole value (`small_value_size`) as base64 of its packed bytes."""
    if small_value_size(doc) is None or parse_id(doc["id"]) is not Collection.DATASETS:
        return None
    layout = await dataset_layout(svc, domain, doc)
    if layout is None:
        return None
    arr = await engine.read_selection(layout, Selection.all(layout.shape), svc.workers)
    return base64.b64encode(array_to_bytes(arr, doc["type"])).decode("ascii")
