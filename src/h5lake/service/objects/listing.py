"""``GET /?getobjs=1&Limit=N[&Marker=PATH]``: a domain's objects a page at a time (h5lake's
extension of HSDS's ``getobjs``, which lists every object in one reply or none).

A page walks the hard links from the root depth first over groups: entering a group lists the
targets of all its links (in name order) before any of its groups is entered, so a client that
writes groups in that order has each group's targets when it reaches the group. A page
describes at most ``limit`` objects as ``domain_objs`` does. Its ``nextMarker`` is the HDF5 path
of the last link it followed (ending in ``/`` when that step entered a group); the next page
rebuilds the path from it (one read per level), so the server keeps no state between pages, and
each page reads at most 2 x ``limit`` objects besides. An object is listed once per page; one
reached by several paths may be listed again on a later page, and a group already on the
current path (a cycle) is not entered. With ``values``, a dataset of a fixed-size type whose
whole value is at most `VALUE_BYTES` shows it as ``value_base64``: its packed bytes, as
``GET /datasets/{id}/value`` answers them in binary."""

from __future__ import annotations

import base64
import bisect
import math
from dataclasses import dataclass, field

from h5lake.chunks import engine
from h5lake.chunks.fanout import bounded_map
from h5lake.errors import InvalidInput
from h5lake.model.ids import Collection, parse_id
from h5lake.model.layout import COMPACT_KEY
from h5lake.model.links import LinkClass
from h5lake.model.selection import Selection
from h5lake.model.stored import as_dataset
from h5lake.model.types import is_variable, wire_dtype
from h5lake.model.values import array_to_bytes
from h5lake.service.context import Service
from h5lake.service.datasets.opened import dataset_layout
from h5lake.service.documents import Doc
from h5lake.service.objects.links import MAX_PATH_STEPS
from h5lake.service.views import Domain

BATCH = 64
"""Objects of one group read together before the walk goes on."""

DOCUMENT_READS = BATCH
"""Documents one page reads at once: a batch together, not the service's fan-out bound for
chunks (`Service.chunk_concurrency`, 16), so that on S3 a page waits one round trip per batch
(small documents: ~0.35 ms of server CPU each there, docs/performance.md)."""

VALUE_BYTES = 4096
"""The largest dataset value a page shows inline (``values``)."""

MAX_PAGE = 2000
"""The most objects one page lists (a larger ``Limit`` is cut to it): with the values inline,
at most 8 MiB of values, read on the server and sent together."""


@dataclass
class _Frame:
    """A group on the walk's current path: its hard links by name; first its links' targets are
    listed (``listed``: how many names), then its groups entered (``entered``: how many names)."""

    id: str
    path: str
    names: list[str]
    targets: dict[str, str]
    listed: int = 0
    entered: int = -1  # -1: still listing
    docs: dict[str, Doc] = field(default_factory=dict)  # groups listed in this page, to enter
    batch: int = 2  # groups `_Walk._read_groups` reads next, doubling up to BATCH

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
    return Collection.of(obj_id) is Collection.GROUPS


class _Walk:
    """One page's walk: depth first over groups; entering a group lists its links' targets
    (all of them, in name order) before any of its groups is entered."""

    def __init__(self, svc: Service, domain: Domain, limit: int) -> None:
        self.svc = svc
        self.domain = domain
        self.root = domain.require_root()
        self.limit = limit
        self.reads_left = 2 * limit  # objects read: listed, or entered without being listed here
        self.out: dict[str, Doc] = {}
        self.stack: list[_Frame] = []
        self.on_path: set[str] = set()
        self.entered: set[str] = set()
        self.ahead: dict[str, Doc | None] = {}  # read before their group is entered (`_read_ahead`)
        self.last: str | None = None

    async def read(self, obj_id: str) -> Doc | None:
        self.reads_left -= 1
        found = await self.domain.view.object(obj_id)
        return None if found is None or found.doc.get("root") != self.root else found.doc

    async def read_all(self, ids: list[str]) -> list[Doc | None]:
        """The objects ``ids``, those read ahead taken from there, the others read concurrently."""
        missing = [i for i in ids if i not in self.ahead]
        found = dict(zip(missing, await bounded_map(missing, self.read, DOCUMENT_READS), strict=True))
        return [self.ahead.pop(i) if i in self.ahead else found[i] for i in ids]

    async def _read_ahead(self, f: _Frame, entering: Doc) -> None:
        """Before entering a group, read the targets of its links and of the groups ``f``
        enters after it, up to `BATCH` together: a walk of many small groups (one dataset
        each) then waits for one read per `BATCH` objects rather than one per object."""
        if any(t in self.ahead for t in _Frame.of(entering, "").targets.values()):
            return
        wanted: list[str] = []
        room = self.limit - len(self.out)
        budget = min(BATCH, room, self.reads_left - room)  # (reads left for the page's own listing)
        if budget <= 0:
            return
        groups = [entering] + [f.docs[n] for n in f.names[f.entered:] if n in f.docs]
        for doc in groups:
            targets = [t for t in _Frame.of(doc, "").targets.values()
                       if t not in self.out and t not in self.ahead and t not in self.on_path and t not in wanted]
            if wanted and len(wanted) + len(targets) > budget:
                break
            wanted += targets[:budget]
        docs = await bounded_map(wanted, self.read, DOCUMENT_READS)
        self.ahead.update(zip(wanted, docs, strict=True))

    async def _read_groups(self, f: _Frame, start: int) -> None:
        """Read the groups ``f`` enters from its ``start``-th name on into ``f.docs``, together:
        2, then twice as many each time up to `BATCH` (a page that ends after a few groups
        wastes few reads). A page resumed in a group that the page before listed has not read
        them (the server keeps nothing between pages): one by one, each would be a round trip,
        and `_read_ahead` would find no next groups to read the targets of together."""
        room = self.limit - len(self.out)
        budget = min(f.batch, room, self.reads_left - room)
        f.batch = min(BATCH, 2 * f.batch)  # a group may list many objects: the page may end soon
        wanted: list[str] = []
        for name in f.names[start:]:
            if len(wanted) >= budget:
                break
            target = f.targets[name]
            if _is_group(target) and name not in f.docs and target not in self.on_path and target not in self.entered:
                wanted.append(name)
        if len(wanted) < 2:
            return  # one group: read where it is entered
        docs = await bounded_map([f.targets[n] for n in wanted], self.read, DOCUMENT_READS)
        f.docs.update((n, d) for n, d in zip(wanted, docs, strict=True) if d is not None)

    def push(self, doc: Doc, path: str) -> None:
        if len(self.stack) < MAX_PATH_STEPS:  # deeper groups are listed, not entered
            self.stack.append(_Frame.of(doc, path))
            self.on_path.add(doc["id"])
            self.entered.add(doc["id"])

    def full(self) -> bool:
        return len(self.out) >= self.limit or self.reads_left <= 0

    async def run(self) -> None:
        while self.stack and not self.full():
            f = self.stack[-1]
            if f.entered < 0:
                await self._list(f)
                continue
            while f.entered < len(f.names):
                name = f.names[f.entered]
                target = f.targets[name]
                f.entered += 1
                if _is_group(target) and target not in self.on_path and target not in self.entered:
                    if name not in f.docs:
                        await self._read_groups(f, f.entered - 1)
                    doc = f.docs.pop(name, None) or await self.read(target)
                    if doc is not None:
                        self.last = f.child_path(name) + "/"
                        await self._read_ahead(f, doc)
                        self.push(doc, f.child_path(name))
                        break
            else:
                self.on_path.discard(self.stack.pop().id)

    async def _list(self, f: _Frame) -> None:
        """List the next targets of ``f``'s links, as many as the page takes."""
        ahead: list[str] = []
        while f.listed < len(f.names) and len(ahead) < min(BATCH, self.limit - len(self.out), self.reads_left):
            name = f.names[f.listed]
            f.listed += 1
            self.last = f.child_path(name)
            if f.targets[name] not in self.out and f.targets[name] not in self.on_path:
                ahead.append(name)
        docs = await self.read_all([f.targets[n] for n in ahead])
        for name, doc in zip(ahead, docs, strict=True):
            if doc is not None and doc["id"] not in self.out:
                self.out[doc["id"]] = doc
                if _is_group(doc["id"]):
                    f.docs[name] = doc
        if f.listed >= len(f.names):
            f.entered = 0

    async def resume(self, marker: str, root_doc: Doc) -> None:
        """Rebuild the path to ``marker``: ``/a/b`` (b, a link of /a, was the last listed: /a
        lists on after it) or ``/a/b/`` (the group /a/b was the last entered: it lists from its
        first link); every group above is entering its groups, after the one on the path."""
        if not marker.startswith("/"):
            raise InvalidInput(f"Marker {marker[:80]!r} is not an absolute HDF5 path (a page's nextMarker)")
        parts = [p for p in marker.split("/") if p]
        if len(parts) > MAX_PATH_STEPS:
            raise InvalidInput(f"Marker walks more than {MAX_PATH_STEPS} links")
        entering = parts if marker.endswith("/") else parts[:-1]
        self.push(root_doc, "/")
        for part in entering:
            f = self.stack[-1]
            target = f.targets.get(part)
            doc = await self.read(target) if target is not None and _is_group(target) and target not in self.on_path else None
            if doc is None:
                raise InvalidInput(f"Marker {marker[:80]!r} no longer leads through groups of the domain")
            f.listed, f.entered = len(f.names), bisect.bisect_right(f.names, part)
            self.push(doc, f.child_path(part))
        if len(entering) < len(parts):
            self.stack[-1].listed = bisect.bisect_right(self.stack[-1].names, parts[-1])


async def objects_page(svc: Service, domain: Domain, limit: int, marker: str | None) -> Page:
    """At most ``limit`` objects of ``domain`` after ``marker`` (module docstring), as documents."""
    walk = _Walk(svc, domain, limit)
    root_doc = await walk.read(walk.root)
    if root_doc is None:
        return Page({}, None)
    if marker is None:
        walk.out[walk.root] = root_doc
        walk.last = "/"
        walk.push(root_doc, "/")
    else:
        await walk.resume(marker, root_doc)
    walk.reads_left = 2 * limit  # (the path to the marker is not counted: each page goes on)
    await walk.run()
    return Page(walk.out, walk.last if walk.stack else None)


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
    size = small_value_size(doc)
    if size is None or parse_id(doc["id"]) is not Collection.DATASETS:
        return None
    stored = _stored_as_packed(doc, size)
    if stored is not None:
        return stored
    layout = await dataset_layout(svc, domain, as_dataset(doc))
    if layout is None:
        return None
    arr = await engine.read_selection(layout, Selection.all(layout.shape), svc.workers)
    return base64.b64encode(array_to_bytes(arr, doc["type"])).decode("ascii")


_PLAIN = frozenset({"H5T_INTEGER", "H5T_FLOAT"})


def _stored_as_packed(doc: Doc, size: int) -> str | None:
    """The base64 a compact dataset's document holds, when it is the packed bytes of the whole
    value: one chunk (index 0) covering the dataset, no filters, a predefined number type (its stored
    bytes are its packed bytes) and exactly ``size`` bytes. The chunk engine is not run: it
    would decode the same bytes and encode them again (most of a page's server time)."""
    compact = doc.get(COMPACT_KEY)
    t = doc.get("type")
    if not isinstance(compact, dict) or not isinstance(t, dict) or t.get("class") not in _PLAIN or set(t) != {"class", "base"}:
        return None  # (a type of reduced precision or offset is stored as HDF5 has its bits)
    if (doc.get("creationProperties") or {}).get("filters"):
        return None
    chunks = compact.get("chunks")
    if not isinstance(chunks, dict) or len(chunks) != 1:
        return None
    ((name, text),) = chunks.items()
    dims = list((doc.get("shape") or {}).get("dims") or ())
    if not isinstance(text, str) or any(c != "0" for c in name.split("_")) or list((doc.get("layout") or {}).get("dims") or dims) != dims:
        return None
    return text if len(text) == 4 * ((size + 2) // 3) and len(base64.b64decode(text)) == size else None
