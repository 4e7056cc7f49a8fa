"""Looking around a domain by path, as a viewer does: one object and its children, every path
below a group, a dataset's full description. Read-only; each use case opens the domain once.

Hooks for what does not exist yet: versions (a ``D@REF`` domain) and maps would be opened here
and given their own ``kind``; nothing else in the view needs to know about them.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

from h5lake.catalog.totals import dataset_stats
from h5lake.errors import Gone, InvalidInput, NotFound
from h5lake.model.acl import Permission
from h5lake.model.ids import Collection, object_key
from h5lake.model.layout import is_linked
from h5lake.model.links import LinkClass
from h5lake.model.stored import DatasetDoc, as_dataset
from h5lake.service.access import load_object
from h5lake.service.context import Caller, Service
from h5lake.service.datasets.linked import linked_storage
from h5lake.service.documents import Doc
from h5lake.service.domains import core as domains
from h5lake.service.domains.summary import domain_stats
from h5lake.service.objects.links import resolve_path
from h5lake.service.views import Domain

MAX_PATHS = 100_000
"""Paths one listing returns at most (a search box needs no more; ``truncated`` says so)."""


class PathNotFound(NotFound):
    """The domain exists but holds nothing at this path."""


@dataclass(frozen=True, slots=True)
class Entity:
    """What a path names: an object (``doc``) or a link that is not followed (``link``)."""

    path: str
    kind: str  # "group", "dataset", "datatype", "soft_link", "external_link", "other"
    doc: Doc | None = None
    link: Doc | None = None

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class EntityTree:
    domain: Domain
    entity: Entity
    children: list[Entity] = field(default_factory=list)


def _kind(doc: Doc) -> str:
    return {"g": "group", "d": "dataset", "t": "datatype"}.get(doc["id"][0], "other")


def join(parent: str, name: str) -> str:
    return "/" + name if parent in ("", "/") else parent.rstrip("/") + "/" + name


def normalize_path(h5path: str | None) -> str:
    if not h5path or h5path == "/":
        return "/"
    if not h5path.startswith("/"):
        raise InvalidInput(f"path {h5path[:80]!r} must start with /")
    return "/" + "/".join(p for p in h5path.split("/") if p)


async def _follow(svc: Service, domain: Domain, path: str, link: Doc) -> Entity:
    """The entity a link names: its target when it resolves, else the link itself."""
    match LinkClass(link["class"]):
        case LinkClass.HARD:
            try:
                doc = (await load_object(svc, domain, link["id"])).doc
            except NotFound:
                return Entity(path, "other", link=link)
            return Entity(path, _kind(doc), doc)
        case LinkClass.SOFT:
            try:
                doc = await resolve_path(svc, domain, link["h5path"])
            except (NotFound, InvalidInput):
                return Entity(path, "soft_link", link=link)
            return Entity(path, _kind(doc), doc)
        case LinkClass.EXTERNAL:
            return Entity(path, "external_link", link=link)
        case _:
            return Entity(path, "other", link=link)


async def _entity(svc: Service, domain: Domain, path: str) -> Entity:
    if path == "/":
        doc = (await load_object(svc, domain, domain.require_root())).doc
        return Entity("/", "group", doc)
    parent_path, _, name = path.rpartition("/")
    try:
        parent = await resolve_path(svc, domain, parent_path or "/")
    except NotFound:
        raise PathNotFound(f"{path} is not a valid path in {domain.path}") from None
    link = parent.get("links", {}).get(name)
    if link is None or Collection.of(parent["id"]) is not Collection.GROUPS:
        raise PathNotFound(f"{path} is not a valid path in {domain.path}")
    return await _follow(svc, domain, path, link)


async def open_domain_for_reading(svc: Service, caller: Caller, domain_path: str) -> Domain:
    """The domain (a versioned ``D@REF`` would be resolved here once versions exist)."""
    if "@" in domain_path:
        raise InvalidInput("domain versions (D@REF) are not available yet")
    domain = await domains.open_domain(svc, caller, domain_path, Permission.READ)
    domain.require_root()
    return domain


async def entity_at(svc: Service, caller: Caller, domain_path: str, h5path: str | None) -> tuple[Domain, Entity]:
    domain = await open_domain_for_reading(svc, caller, domain_path)
    return domain, await _entity(svc, domain, normalize_path(h5path))


async def children_of(svc: Service, domain: Domain, entity: Entity) -> list[Entity]:
    if entity.kind != "group" or entity.doc is None:
        return []
    links = sorted(entity.doc.get("links", {}).items())
    out: list[Entity] = []
    for start in range(0, len(links), CHILDREN_AT_ONCE):
        batch = links[start : start + CHILDREN_AT_ONCE]
        out.extend(await asyncio.gather(*(_follow(svc, domain, join(entity.path, n), l) for n, l in batch)))
        await asyncio.sleep(0)  # cached objects never yield; let other requests run
    return out


CHILDREN_AT_ONCE = 64
"""Children of a group followed at once. All at once, a group of 200,000 soft links held the
event loop 13 s (every other client waited that long) for one ``/h5grove/meta`` of it; in
turns, others run between every 64 (as a path walk lets them, `service.objects.links`)."""


async def entity_with_children(svc: Service, caller: Caller, domain_path: str, h5path: str | None) -> EntityTree:
    """The entity at ``h5path`` and, for a group, its children (links sorted by name)."""
    domain, entity = await entity_at(svc, caller, domain_path, h5path)
    return EntityTree(domain, entity, await children_of(svc, domain, entity))


@dataclass(frozen=True, slots=True)
class PathList:
    paths: list[tuple[str, str]]  # (path, kind)
    truncated: bool


async def list_paths(svc: Service, caller: Caller, domain_path: str, h5path: str | None) -> PathList:
    """Every path below the group at ``h5path`` (itself first), breadth first.

    Like HDF5's link visit, a group reached twice is descended once and soft or external links
    are listed but not followed, so cycles end.
    """
    domain, base = await entity_at(svc, caller, domain_path, h5path)
    if base.kind != "group" or base.doc is None:
        raise InvalidInput(f"{base.path} is not a group")
    out: list[tuple[str, str]] = [(base.path, "group")]
    seen = {base.doc["id"]}
    frontier: list[tuple[str, Doc]] = [(base.path, base.doc)]
    while frontier and len(out) < MAX_PATHS:
        pending: list[tuple[str, str]] = []
        for path, doc in frontier:
            for n, (name, link) in enumerate(sorted(doc.get("links", {}).items())):
                if len(out) + len(pending) > MAX_PATHS:
                    break  # enough to answer and say it is truncated
                if n % 1024 == 1023:
                    await asyncio.sleep(0)  # a group of 200,000 links is seconds of this loop
                child = join(path, name)
                if link["class"] == LinkClass.HARD.value:
                    pending.append((child, link["id"]))
                else:
                    kind = "soft_link" if link["class"] == LinkClass.SOFT.value else "external_link"
                    out.append((child, kind))
        frontier = []
        docs = []
        for start in range(0, len(pending), CHILDREN_AT_ONCE):  # in turns, as children_of
            batch = pending[start : start + CHILDREN_AT_ONCE]
            docs.extend(await asyncio.gather(*(svc.docs.get(object_key(i)) for _, i in batch)))
            await asyncio.sleep(0)
        for (child, oid), found in zip(pending, docs):
            if found is None or found.doc.get("root") != domain.root:
                out.append((child, "other"))
                continue
            out.append((child, _kind(found.doc)))
            if Collection.of(oid) is Collection.GROUPS and oid not in seen:
                seen.add(oid)
                frontier.append((child, found.doc))
    return PathList(out[:MAX_PATHS], len(out) > MAX_PATHS or bool(frontier))


# --- a full description for the page ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Description:
    """What the page shows of a path: the entity and its children; for a dataset its storage
    statistics, where a linked one's values are, and its dimensions' names and scales; the
    paths of the objects its attributes refer to (``id -> path``)."""

    tree: EntityTree
    stats: Doc | None = None
    linked: Doc | None = None
    dimensions: list[Doc] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)


async def describe(svc: Service, caller: Caller, domain_path: str, h5path: str | None) -> Description:
    tree = await entity_with_children(svc, caller, domain_path, h5path)
    stats = linked = None
    doc = tree.entity.doc
    if doc is None:
        return Description(tree)
    paths = await _referenced_paths(svc, tree.domain, tree.entity)
    if tree.entity.kind != "dataset":
        return Description(tree, paths=paths)
    dataset = as_dataset(doc)
    try:
        stats = await dataset_stats(svc.store, tree.domain.path, dataset)
    except (TypeError, ValueError, KeyError):
        stats = None  # a type without a fixed size (vlen) has no byte statistics
    if is_linked(dataset):  # the files recorded; a chunk table's are counted on request (linked_chunks)
        linked = await linked_storage(svc, tree.domain, dataset)
    dimensions = await _dimensions(svc, tree.domain, dataset, paths)
    return Description(tree, stats, linked, dimensions, paths)


async def linked_chunks(svc: Service, caller: Caller, domain_path: str, h5path: str | None) -> Doc:
    """A linked dataset's files, each with its chunks, counted in its chunk table when that is
    short enough (`linked_storage`); 400 for a dataset that is not linked."""
    domain, entity = await entity_at(svc, caller, domain_path, h5path)
    if entity.kind != "dataset" or entity.doc is None or not is_linked(entity.doc):
        raise InvalidInput(f"{entity.path} is not a linked dataset")
    return await linked_storage(svc, domain, as_dataset(entity.doc), count=True)


REFERENCE = re.compile(r"^(?:datasets|groups|datatypes)/([dgt]-[0-9a-f-]+)$")
MAX_REFERENCES = 64
"""Object references of one object's attributes given as paths; more are shown as ids."""


def _references(value: Any, out: set[str]) -> None:
    if isinstance(value, str):
        m = REFERENCE.match(value)
        if m:
            out.add(m.group(1))
    elif isinstance(value, list | tuple):
        for v in value:
            _references(v, out)


async def _referenced_paths(svc: Service, domain: Domain, entity: Entity) -> dict[str, str]:
    """The paths of the objects the entity's attributes refer to (DIMENSION_LIST's scales,
    REFERENCE_LIST's datasets...): a link of the entity's group or the root first, else the
    first path found from the root (as ``getalias``)."""
    assert entity.doc is not None
    wanted: set[str] = set()
    for attr in entity.doc.get("attributes", {}).values():
        if "H5T_STD_REF_OBJ" in str(attr.get("type")):
            _references(attr.get("value"), wanted)
    wanted = set(sorted(wanted)[:MAX_REFERENCES])
    found: dict[str, str] = {}
    parent = entity.path.rpartition("/")[0] or "/"
    for group_path in dict.fromkeys([parent, "/"]):
        if len(found) == len(wanted):
            break
        try:
            group = await resolve_path(svc, domain, group_path)
        except (NotFound, InvalidInput):
            continue
        for name, link in group.get("links", {}).items():
            if link.get("id") in wanted and link["id"] not in found:
                found[link["id"]] = join(group_path, name)
    if len(found) < len(wanted):
        found.update(await _search_paths(svc, domain, wanted - set(found)))
    return found


SEARCH_GROUPS = 1024
"""Groups searched (breadth first from the root) for the paths of referenced objects that are
not linked from the entity's group or the root; one not found by then is shown by its id."""


async def _search_paths(svc: Service, domain: Domain, wanted: set[str]) -> dict[str, str]:
    """The first path (breadth first, names in order) to each of ``wanted``, within
    SEARCH_GROUPS groups, loaded CHILDREN_AT_ONCE at a time (others run in between)."""
    found: dict[str, str] = {}
    root = domain.require_root()
    seen = {root}
    frontier: list[tuple[str, str]] = [("", root)]
    searched = 0
    while frontier and len(found) < len(wanted) and searched < SEARCH_GROUPS:
        batch, frontier = frontier[:CHILDREN_AT_ONCE], frontier[CHILDREN_AT_ONCE:]
        searched += len(batch)
        docs = await asyncio.gather(*(svc.docs.get(object_key(g)) for _, g in batch))
        await asyncio.sleep(0)
        for (prefix, _), got in zip(batch, docs):
            if got is None or got.doc.get("root") != domain.root:
                continue
            for name, link in sorted(got.doc.get("links", {}).items()):
                target = link.get("id")
                if target is None or target in seen:
                    continue
                seen.add(target)
                if target in wanted:
                    found[target] = f"{prefix}/{name}"
                if Collection.of(target) is Collection.GROUPS:
                    frontier.append((f"{prefix}/{name}", target))
    return found


async def _dimensions(svc: Service, domain: Domain, doc: DatasetDoc, paths: dict[str, str]) -> list[Doc]:
    """Each dimension's name (its ``DIMENSION_LABELS`` entry, else its first scale's ``NAME``)
    and its scales (``{id, path}``), from ``DIMENSION_LIST``."""
    rank = len(doc.get("shape", {}).get("dims") or [])
    attrs = doc.get("attributes", {})
    labels = attrs.get("DIMENSION_LABELS", {}).get("value")
    lists = attrs.get("DIMENSION_LIST", {}).get("value")
    out: list[Doc] = []
    for d in range(rank):
        label = labels[d] if isinstance(labels, list) and d < len(labels) and isinstance(labels[d], str) else ""
        refs = lists[d] if isinstance(lists, list) and d < len(lists) and isinstance(lists[d], list) else []
        ids = [m.group(1) for m in (REFERENCE.match(r) for r in refs if isinstance(r, str)) if m]
        scales = [{"id": i, "path": paths.get(i)} for i in ids]
        if not label and ids:
            try:
                scale = (await load_object(svc, domain, ids[0])).doc
            except (NotFound, Gone, InvalidInput):  # not an object of this domain (any more)
                scale = {}
            name = scale.get("attributes", {}).get("NAME", {}).get("value")
            label = name if isinstance(name, str) else ""
        out.append({"label": label.rstrip("\x00"), "scales": scales})
    return out


@dataclass(frozen=True, slots=True)
class FolderEntry:
    name: str
    kind: str  # "folder" or "domain"
    owner: str | None
    last_modified: float | None
    size: int | None


async def folder_listing(svc: Service, caller: Caller, folder: str) -> list[FolderEntry]:
    """The readable folders and domains in ``folder``, with owner, size and last change."""
    items = await domains.list_domains(svc, caller, folder or "/", verbose=True)
    return [
        FolderEntry(
            i["name"],
            i["class"],
            i.get("owner"),
            i.get("lastModified"),
            i.get("total_size"),
        )
        for i in items
    ]


async def domain_summary(svc: Service, caller: Caller, domain_path: str) -> Doc:
    domain = await open_domain_for_reading(svc, caller, domain_path)
    out = await domain_stats(svc, domain)
    out.update({"domain": domain.path, "owner": domain.owner, "created": domain.doc.get("created")})
    return out

