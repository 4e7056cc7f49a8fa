"""What a Zarr store key under ``/zarr{domain}`` names, and the ``zarr.json`` of groups and arrays.

A key is ``{domain}/{hdf5 path}/zarr.json`` or ``{domain}/{hdf5 path}/c/{i}/{j}...``. The
domain is the shortest prefix of the key's components that is a domain (not a folder), or
the components up to the one holding ``@REF``. The HDF5 path is walked from the root group
along links, one component at a time; reaching a dataset, the rest is its chunk key.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from h5lake.chunks.dataset import DatasetLayout
from h5lake.errors import Forbidden, Gone, InvalidInput, NotFound, TooLarge
from h5lake.model.acl import Permission
from h5lake.model.ids import Collection, object_key, same_domain
from h5lake.model.links import LinkClass
from h5lake.model.stored import DatasetDoc, GroupDoc, as_dataset, as_group
from h5lake.model.types import TypeClass, type_class
from h5lake.model.zarrtypes import (
    OMITTED_ATTR,
    Unrepresentable,
    ZarrForm,
    attributes_json,
    fill_attribute,
    fill_json,
    zarr_form,
)
from h5lake.service.access import load_object
from h5lake.service.context import Caller, Service
from h5lake.service.datasets.dataset_layout import layout_with
from h5lake.service.datasets.opened import dataset_layout
from h5lake.service.documents import SLICED_ABOVE, Doc, loads
from h5lake.service.domains import core as domains
from h5lake.service.objects.links import resolve_path
from h5lake.service.views import Domain, HeadView
from h5lake.service.zarr import codecs
from h5lake.storage import Later

META = "zarr.json"
MAX_KEY_PARTS = 64  # components of a store key (domain, path and chunk index together)
MAX_DOMAIN_DEPTH = 16  # prefixes tried as the domain
MAX_CONSOLIDATED_NODES = 100_000
"""Nodes the root's inline ``consolidated_metadata`` holds at most; a larger hierarchy's root has
none (readers then read each ``zarr.json``) and says so in ``_h5lake_consolidated``."""
MAX_CONSOLIDATED_BYTES = 64 << 20
CONSOLIDATED_ATTR = "_h5lake_consolidated"
NETCDF_DIMENSION = "This is a netCDF dimension but not a netCDF variable"
NETCDF_HIDDEN = frozenset({"_Netcdf4Dimid", "_Netcdf4Coordinates", "_NCProperties", "_nc3_strict"})


@dataclass(frozen=True, slots=True)
class Key:
    """A store key split into its domain and the components after it."""

    domain: str
    parts: tuple[str, ...]

    @property
    def is_meta(self) -> bool:
        return bool(self.parts) and self.parts[-1] == META


def split_components(path: str) -> list[str]:
    parts = [p for p in path.split("/") if p]
    if len(parts) > MAX_KEY_PARTS:
        raise InvalidInput(f"a Zarr key has at most {MAX_KEY_PARTS} components")
    if any(p in (".", "..") for p in parts):
        raise InvalidInput("a Zarr key has no '.' or '..' components")
    return parts


_SEEN: set[str] = set()
"""Domains keys named lately. A domain has no domain above it (folders hold domains), so a
prefix that still loads as a domain is the shortest one: found with one load, not one per
folder above it."""
_SEEN_MAX = 4096


async def find_domain(svc: Service, path: str) -> Key:
    """Split ``path`` (what follows ``/zarr``) into the domain and the rest."""
    parts = split_components(path)
    for n in range(1, min(len(parts), MAX_DOMAIN_DEPTH) + 1):  # a domain found before: one load
        candidate = "/" + "/".join(parts[:n])
        if candidate in _SEEN:
            try:
                domain = await domains.load_domain(svc, candidate)
            except (NotFound, Gone):
                _SEEN.discard(candidate)
                break
            if domain.is_folder:
                _SEEN.discard(candidate)
                break
            return Key(domain.path, tuple(parts[n:]))
    for n in range(1, min(len(parts), MAX_DOMAIN_DEPTH) + 1):
        candidate = "/" + "/".join(parts[:n])
        if "@" in parts[n - 1]:  # domain names hold no '@': this is D@REF, errors name it
            return Key((await domains.load_domain(svc, candidate)).path, tuple(parts[n:]))
        try:
            domain = await domains.load_domain(svc, candidate)
        except (NotFound, Gone, InvalidInput):
            break
        if not domain.is_folder:
            if len(_SEEN) >= _SEEN_MAX:
                _SEEN.clear()
            _SEEN.add(domain.path)
            return Key(domain.path, tuple(parts[n:]))
    raise NotFound(f"no domain in Zarr key /{'/'.join(parts)[:200]}")


class NotInRoot(NotFound):
    """The key's first component is no link of the domain's root group: it may name a domain
    nested in this one's path (`nested_key`)."""


async def nested_key(svc: Service, path: str, key: Key) -> Key | None:
    """The key in a domain nested in ``key.domain``'s path (``/a.h5/b.h5``), when the first
    component after ``key.domain`` is no link of its root group: the next longer prefix of
    ``path`` that is a domain (folders on the way passed), else None. A link of the outer
    domain's root hides a nested domain of the same name."""
    if not key.parts or key.parts[0] == META or "@" in key.domain:
        return None
    outer = await domains.load_domain(svc, key.domain)
    root = await load_object(svc, outer, outer.require_root())
    if key.parts[0] in root.doc.get("links", {}):
        return None
    parts = split_components(path)
    first = len(parts) - len(key.parts)
    for n in range(first + 1, min(len(parts), MAX_DOMAIN_DEPTH) + 1):
        candidate = "/" + "/".join(parts[:n])
        if "@" in parts[n - 1]:
            return Key((await domains.load_domain(svc, candidate)).path, tuple(parts[n:]))
        try:
            domain = await domains.load_domain(svc, candidate)
        except (NotFound, Gone, InvalidInput):
            return None
        if not domain.is_folder:
            return Key(domain.path, tuple(parts[n:]))
    return None


@dataclass(slots=True)
class Node:
    """What a key's HDF5 path names: a group or a dataset, with the groups above it."""

    path: str  # the HDF5 path, "/" for the root group
    doc: Doc
    parents: list[Doc] = field(default_factory=list)  # nearest first
    etag: str | None = None  # of ``doc`` as read (None through a soft link)

    @property
    def is_group(self) -> bool:
        return Collection.of(str(self.doc["id"])) is Collection.GROUPS

    @property
    def group(self) -> GroupDoc:
        """``doc`` read as a group's (a node that is a group)."""
        return as_group(self.doc)

    @property
    def dataset(self) -> DatasetDoc:
        """``doc`` read as a dataset's (a node that is not a group)."""
        return as_dataset(self.doc)


async def open_key(svc: Service, caller: Caller, key: Key, permission: Permission) -> Domain:
    """Authorize ``caller`` on the key's domain for ``permission`` (a version refuses changes)."""
    domain = await domains.open_domain(svc, caller, key.domain, permission)
    domain.require_root()
    return domain


async def walk(svc: Service, caller: Caller, domain: Domain, parts: tuple[str, ...],
               permission: Permission) -> tuple[Node, tuple[str, ...]]:
    """The node the leading ``parts`` name and the parts after it (a dataset's chunk key, or
    ``zarr.json``). Hard and soft links are followed; anything else is 404."""
    node = await load_root(svc, domain)
    n = 0
    while n < len(parts):
        name = parts[n]
        if not node.is_group or name == META:
            break
        link = node.doc.get("links", {}).get(name)
        if link is None:
            raise (NotInRoot if n == 0 else NotFound)(f"{join(node.path, name)} is not in {domain.path}")
        doc, etag = await follow(svc, domain, link, join(node.path, name))
        node = Node(join(node.path, name), doc, [node.doc, *node.parents], etag)
        n += 1
    check_object(caller, domain, node.doc, permission)
    return node, parts[n:]


async def load_root(svc: Service, domain: Domain) -> Node:
    found = await load_object(svc, domain, domain.require_root())
    return Node("/", found.doc, etag=found.etag)


def check_object(caller: Caller, domain: Domain, doc: Doc, permission: Permission) -> None:
    """The object's own ACL, as every route checks it (`domains.authorize_object`)."""
    domains.authorize_object(caller, domain, doc, permission)


async def follow(svc: Service, domain: Domain, link: Doc, path: str) -> tuple[Doc, str | None]:
    match link.get("class"):
        case LinkClass.HARD.value:
            found = await load_object(svc, domain, link["id"])
            return found.doc, found.etag
        case LinkClass.SOFT.value:
            return await resolve_path(svc, domain, link["h5path"]), None
        case _:
            raise NotFound(f"{path} is an external or user-defined link, which the Zarr bridge does not follow")


def join(parent: str, name: str) -> str:
    return "/" + name if parent == "/" else f"{parent}/{name}"


# --- arrays -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ArrayView:
    """A dataset as a Zarr array: its layout, element form and codecs."""

    layout: DatasetLayout
    form: ZarrForm
    plan: codecs.CodecPlan


def netcdf_dimension(doc: Doc) -> bool:
    """A netCDF-4 dimension without a variable: a dimension scale holding no values of its own."""
    name = doc.get("attributes", {}).get("NAME", {}).get("value")
    return isinstance(name, str) and name.startswith(NETCDF_DIMENSION)


class _Unlocated:
    """The locator of a layout made for metadata alone: its chunks are never asked for."""

    writable = False

    async def locate(self, index: tuple[int, ...]) -> None:
        raise RuntimeError("a metadata layout locates no chunk")


_UNLOCATED = _Unlocated()


async def array_view(svc: Service, domain: Domain, doc: DatasetDoc, core: bool = False, *, chunks: bool = True) -> ArrayView:
    """The dataset as a Zarr array; `Unrepresentable` with the reason when it cannot be one.
    Without ``chunks`` the layout locates none (metadata only: no linked chunk table is read,
    no compact chunk decoded)."""
    if type_class(doc["type"]) is TypeClass.ARRAY:
        raise Unrepresentable("array element types have no Zarr data type")
    form = zarr_form(doc["type"])
    layout = await dataset_layout(svc, domain, doc) if chunks else layout_with(domain, doc, _UNLOCATED)
    if layout is None:
        raise Unrepresentable("a null dataspace has no Zarr form")
    if any(layout.origin):
        raise Unrepresentable("a dataset grown at the front has chunk indexes below zero")
    return ArrayView(layout, form, codecs.plan(form, layout, core))


def _dimension_ids(doc: Doc) -> list[str | None] | None:
    dl = doc.get("attributes", {}).get("DIMENSION_LIST")
    if not isinstance(dl, dict) or not isinstance(dl.get("value"), list):
        return None
    out: list[str | None] = []
    for refs in dl["value"]:
        ref = refs[0] if isinstance(refs, list) and refs else refs
        out.append(ref.rsplit("/", 1)[-1] if isinstance(ref, str) and ref else None)
    return out


def _scale_name(scale_id: str, groups: Sequence[Mapping[str, Any]], names: dict[str, str] | None) -> str | None:
    if names is not None and scale_id in names:
        return names[scale_id]
    for g in groups:
        for name, link in g.get("links", {}).items():
            if link.get("id") == scale_id:
                return str(name)
    return None


def dimension_names(doc: Doc, groups: Sequence[Mapping[str, Any]], names: dict[str, str] | None = None) -> list[str | None] | None:
    """The dataset's dimension names: the names its dimension scales are linked under (found in
    ``names``, id -> name, else in the ``groups`` above it, nearest first); None without scales."""
    ids = _dimension_ids(doc)
    if ids is None:
        if str(doc.get("attributes", {}).get("CLASS", {}).get("value")) == "DIMENSION_SCALE":
            own = doc["id"]
            found = _scale_name(own, groups, names)
            return [found] if found and len(doc.get("shape", {}).get("dims", [])) == 1 else None
        return None
    rank = len(doc.get("shape", {}).get("dims", []))
    if len(ids) != rank:
        return None
    return [None if i is None else _scale_name(i, groups, names) for i in ids]


def shown_attributes(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The object's attributes as Zarr attributes: HDF5 dimension scale and netCDF-4 bookkeeping
    left out (given as ``dimension_names``)."""
    attrs = attributes_json(doc.get("attributes", {}))
    for name in NETCDF_HIDDEN:
        attrs.pop(name, None)
    if attrs.get("CLASS") == "DIMENSION_SCALE":
        attrs.pop("CLASS")
        attrs.pop("NAME", None)
    return attrs


def array_json(view: ArrayView, doc: DatasetDoc, dims: list[str | None] | None) -> Doc:
    layout = view.layout
    out: Doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(layout.shape),
        "data_type": view.form.data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(layout.chunk_shape)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_json(view.form, layout.fill),
        "codecs": view.plan.codecs,
        "attributes": fill_attribute({**shown_attributes(doc), **view.form.attributes}, view.form),
    }
    if dims is not None and len(dims) == len(layout.shape):
        out["dimension_names"] = dims
    return out


def group_json(doc: GroupDoc, omitted: dict[str, str]) -> Doc:
    attrs = shown_attributes(doc)
    if omitted:
        attrs[OMITTED_ATTR] = omitted
    return {"zarr_format": 3, "node_type": "group", "attributes": attrs}


# --- groups -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Member:
    name: str
    doc: Doc | None  # None: not served (``reason``)
    reason: str = ""
    etag: str | None = None  # of ``doc`` as read
    own_acl: bool = False  # the object has its own ACL: whether it is shown depends on the caller


async def members(svc: Service, caller: Caller, domain: Domain, group: GroupDoc) -> list[Member]:
    """A group's links as Zarr members: each followed (hard links; soft links inside the domain),
    the ones not served with their reason. A document the store has at hand is taken without a
    task of its own (`_member_at_once`: a task per member cost more than its read); the others
    are read concurrently, 64 at a time."""
    links = sorted(group.get("links", {}).items())
    out: list[Member] = []
    for start in range(0, len(links), 64):
        batch = links[start : start + 64]
        found = [_member_at_once(caller, domain, n, l) for n, l in batch]
        waits = [i for i, m in enumerate(found) if m is None]
        if waits:
            read = await asyncio.gather(*(_member(svc, caller, domain, *batch[i]) for i in waits))
            for i, m in zip(waits, read, strict=True):
                found[i] = m
        else:
            await asyncio.sleep(0)  # others run between batches, as between tasks
        out.extend(m for m in found if m is not None)
    return out


def _member_at_once(caller: Caller, domain: Domain, name: str, link: Doc) -> Member | None:
    """`_member`'s answer for a hard link whose document the store answers without waiting (a
    small one, of this domain, in a head); None: ask `_member`, which reads it."""
    view = domain.view
    if link.get("class") != LinkClass.HARD.value or not isinstance(view, HeadView):
        return None
    obj_id, root = link.get("id"), domain.require_root()
    if not isinstance(obj_id, str) or not same_domain(obj_id, root):
        return None
    blob = view.stored_at_once(obj_id)
    if blob is None or isinstance(blob, Later) or len(blob.data) > SLICED_ABOVE:
        return None
    doc = loads(blob.data, object_key(obj_id))
    if not isinstance(doc, dict) or doc.get("root") != root:
        return None
    return _readable(caller, domain, name, doc, blob.etag)


async def _member(svc: Service, caller: Caller, domain: Domain, name: str, link: Doc) -> Member:
    if link.get("class") == LinkClass.SOFT.value:
        return Member(name, None, f"soft link to {link.get('h5path')}")
    if link.get("class") != LinkClass.HARD.value:
        return Member(name, None, "external or user-defined link")
    try:
        found = await load_object(svc, domain, link["id"])
    except (NotFound, Gone):
        return Member(name, None, "dangling link")
    return _readable(caller, domain, name, found.doc, found.etag)


def _readable(caller: Caller, domain: Domain, name: str, doc: Doc, etag: str | None) -> Member:
    own_acl = bool(doc.get("acls"))
    try:
        domains.authorize_object(caller, domain, doc, Permission.READ)
    except Forbidden:
        return Member(name, None, "not readable by this user", own_acl=own_acl)
    if Collection.of(str(doc["id"])) is Collection.DATATYPES:
        return Member(name, None, "committed datatype")
    return Member(name, doc, etag=etag, own_acl=own_acl)


_ENTRIES: OrderedDict[tuple[Any, ...], Doc | str] = OrderedDict()
"""Array ``zarr.json`` entries (or the reason there is none) made lately, by document id and
ETag, codec profile and dimension names: a changed document has another ETag, so an entry is
never stale; consolidating a domain again costs its document reads, not the mapping again."""
_ENTRIES_MAX = 50_000


async def _array_entry(svc: Service, domain: Domain, m: Member, dims: list[str | None] | None, core: bool) -> Doc | str:
    assert m.doc is not None
    key = (m.doc["id"], m.etag, core, None if dims is None else tuple(dims)) if m.etag else None
    found = _ENTRIES.get(key) if key is not None else None
    if found is not None:
        return found
    try:
        doc = as_dataset(m.doc)
        view = await array_view(svc, domain, doc, core, chunks=False)
        entry: Doc | str = array_json(view, doc, dims)
    except Unrepresentable as exc:
        entry = exc.reason
    if key is not None:
        _ENTRIES[key] = entry
        if len(_ENTRIES) > _ENTRIES_MAX:
            _ENTRIES.popitem(last=False)
    return entry


async def group_meta(svc: Service, caller: Caller, domain: Domain, node: Node) -> Doc:
    """A group's ``zarr.json``: its attributes, with the members that are not served listed."""
    omitted: dict[str, str] = {}
    for m in await members(svc, caller, domain, node.group):
        if m.doc is None:
            omitted[m.name] = m.reason
        elif Collection.of(str(m.doc["id"])) is not Collection.GROUPS:
            if netcdf_dimension(m.doc):
                continue
            try:
                await array_view(svc, domain, as_dataset(m.doc), chunks=False)
            except Unrepresentable as exc:
                omitted[m.name] = exc.reason
    return group_json(node.group, omitted)


async def node_meta(svc: Service, caller: Caller, domain: Domain, node: Node, core: bool = False) -> Doc:
    """The ``zarr.json`` of a node; the root group's carries the consolidated metadata."""
    if node.is_group:
        if node.path == "/":
            return await root_meta(svc, caller, domain, node.group, core)
        return await group_meta(svc, caller, domain, node)
    if netcdf_dimension(node.doc):
        raise NotFound(f"{node.path} is a netCDF dimension, not a variable (docs/zarr.md)")
    try:
        view = await array_view(svc, domain, node.dataset, core, chunks=False)
    except Unrepresentable as exc:
        raise NotFound(f"{node.path} has no Zarr form: {exc.reason}") from None
    return array_json(view, node.dataset, dimension_names(node.doc, node.parents))


async def root_meta(svc: Service, caller: Caller, domain: Domain, root: GroupDoc, core: bool = False) -> Doc:
    """The root group with the whole hierarchy inline (``consolidated_metadata``)."""
    return (await consolidate(svc, caller, domain, root, core))[0]


async def consolidate(svc: Service, caller: Caller, domain: Domain, root: GroupDoc, core: bool = False) -> tuple[Doc, bool]:
    """The root group with the whole hierarchy inline (``consolidated_metadata``): groups
    breadth first, each group once (a group reached again is listed under its first path only);
    and whether it is the same for every caller who may read the domain (no object on the way
    has an ACL of its own)."""
    shared = not root.get("acls")
    flat: dict[str, Doc] = {}
    names: dict[str, str] = {}
    seen = {root["id"]}
    frontier: list[tuple[str, GroupDoc]] = [("", root)]
    root_omitted: dict[str, str] = {}
    count = 0
    too_many: str | None = None
    while frontier and too_many is None:
        following: list[tuple[str, GroupDoc]] = []
        for prefix, group in frontier:
            listed = await members(svc, caller, domain, group)
            for m in listed:
                shared = shared and not m.own_acl
                if m.doc is not None:
                    names.setdefault(str(m.doc["id"]), m.name)
            omitted: dict[str, str] = {}
            for m in listed:
                path = f"{prefix}/{m.name}" if prefix else m.name
                if m.doc is None:
                    omitted[m.name] = m.reason
                    continue
                oid = str(m.doc["id"])
                if Collection.of(oid) is Collection.GROUPS:
                    if oid in seen:
                        omitted[m.name] = "a group already listed under another path"
                        continue
                    seen.add(oid)
                    following.append((path, as_group(m.doc)))
                    continue
                if netcdf_dimension(m.doc):
                    continue
                entry = await _array_entry(svc, domain, m, dimension_names(m.doc, [group], names), core)
                if isinstance(entry, str):
                    omitted[m.name] = entry
                    continue
                flat[path] = entry
                count += 1
            if prefix:
                flat[prefix] = group_json(group, omitted)
            else:
                root_omitted = omitted
            count += 1
            if count > MAX_CONSOLIDATED_NODES:
                too_many = f"more than {MAX_CONSOLIDATED_NODES} nodes"
                break
            await asyncio.sleep(0)
        frontier = following
    out = group_json(root, root_omitted)
    if too_many is None and len(orjson.dumps(flat)) > MAX_CONSOLIDATED_BYTES:
        too_many = f"more than {MAX_CONSOLIDATED_BYTES} bytes"
    if too_many is not None:
        out["attributes"][CONSOLIDATED_ATTR] = f"no consolidated metadata: {too_many}"
        return out, shared
    out["consolidated_metadata"] = {"kind": "inline", "must_understand": False,
                                    "metadata": dict(sorted(flat.items()))}
    return out, shared


def check_size(what: str, size: int, limit: int) -> None:
    if size > limit:
        raise TooLarge(f"{what} is {size} bytes, more than {limit}")
