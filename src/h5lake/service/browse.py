"""Looking around a domain by path, as a viewer does: one object and its children, every path
below a group, a dataset's full description. Read-only; each use case opens the domain once.

Hooks for what does not exist yet: versions (a ``D@REF`` domain) and maps would be opened here
and given their own ``kind``; nothing else in the view needs to know about them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from h5lake.chunks.stats import dataset_stats
from h5lake.errors import InvalidInput, NotFound
from h5lake.model.acl import Permission
from h5lake.model.ids import Collection, object_key
from h5lake.model.layout import is_linked
from h5lake.model.links import LinkClass
from h5lake.service import domains
from h5lake.service.access import load_object
from h5lake.service.context import Caller, Service
from h5lake.service.documents import Doc
from h5lake.service.links import resolve_path
from h5lake.service.stats import domain_stats
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
turns, others run between every 64 (as a path walk lets them, `service.links`)."""


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


async def describe(svc: Service, caller: Caller, domain_path: str, h5path: str | None) -> tuple[EntityTree, Doc | None]:
    """The entity with its children and, for a dataset, its storage statistics."""
    tree = await entity_with_children(svc, caller, domain_path, h5path)
    stats = None
    doc = tree.entity.doc
    if tree.entity.kind == "dataset" and doc is not None:
        try:
            stats = await dataset_stats(svc.store, tree.domain.path, doc)
        except (TypeError, ValueError, KeyError):
            stats = None  # a type without a fixed size (vlen) has no byte statistics
    return tree, stats


def linked_file(doc: Doc) -> Doc | None:
    """For a dataset served in place from an HDF5 file: its layout class and file."""
    if not is_linked(doc):
        return None
    layout = doc.get("layout", {})
    return {k: layout[k] for k in ("class", "file_uri", "offset", "size", "chunk_table") if k in layout}


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

