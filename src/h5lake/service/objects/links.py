"""Links inside groups: hard, soft and external; single and batch forms."""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Awaitable, Callable, Mapping
from operator import itemgetter
from typing import Any, NoReturn

from h5lake.errors import Conflict, Gone, InvalidInput, NotFound
from h5lake.model.acl import Permission
from h5lake.model.globs import check_pattern, matches
from h5lake.model.ids import Collection, is_valid_id, new_object_id, parse_id, same_domain
from h5lake.model.links import MAX_NAME_BYTES, LinkClass
from h5lake.model.ordering import sorted_in_runs
from h5lake.model.stored import GroupDoc, as_group
from h5lake.model.types import CharSet
from h5lake.service.access import base_doc, client_timestamp, load_object, update_object
from h5lake.service.context import Caller, Service, now
from h5lake.service.documents import ENTRY_BYTES, Doc, PutOutcome, Unchanged
from h5lake.service.domains.core import open_domain
from h5lake.service.views import Domain

NAME_CHARSETS = (CharSet.ASCII.value, CharSet.UTF8.value)
"""Values of a link's optional ``nameCharSet``: the character set HDF5 records for its name."""


def validate_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidInput("link name must be a non-empty string")
    if "/" in name:
        raise InvalidInput(f"link name {name!r} may not contain '/'")
    if "\x00" in name:  # HDF5 keeps names as C strings: the file could not hold it
        raise InvalidInput(f"link name {name[:40]!r} may not contain a NUL character")
    if len(name.encode()) > MAX_NAME_BYTES:
        raise InvalidInput(f"link name is too long (at most {MAX_NAME_BYTES} bytes)")
    return name


MAP_LINK_PREFIX = "/.maps/"
"""Where the soft-link form of a link to a map points (see :func:`link_json`)."""


def parse_link(body: Any, domain: Domain) -> Doc:
    """A link as stored: class, created and its target fields. A soft link to
    ``/.maps/<map id>`` (the form a link to a map is shown in, :func:`link_json`) is the hard
    link to that map, so a client that copies a link it was shown makes the same link."""
    if not isinstance(body, dict):
        raise InvalidInput("a link must be a JSON object")
    cls = body.get("class")
    if cls is None:
        if "id" in body:
            cls = LinkClass.HARD.value
        elif "h5domain" in body or "file" in body or "domain" in body:
            cls = LinkClass.EXTERNAL.value
        elif "h5path" in body:
            cls = LinkClass.SOFT.value
        else:
            raise InvalidInput("a link needs id, h5path, or h5path and h5domain")
    try:
        kind = LinkClass(cls)
    except ValueError:
        raise InvalidInput(f"unknown link class {cls!r}") from None
    link: Doc = {"class": kind.value, "created": client_timestamp(body, "created", now())}
    cset = body.get("nameCharSet")
    if cset is not None:
        if cset not in NAME_CHARSETS:
            raise InvalidInput(f"nameCharSet must be one of {', '.join(NAME_CHARSETS)}")
        link["nameCharSet"] = cset
    if kind is LinkClass.USER_DEFINED:
        return _user_defined(body, link)
    if kind is LinkClass.HARD:
        target = body.get("id")
        if isinstance(target, str) and "/" in target:
            target = target.split("/", 1)[1]
        if not is_valid_id(target):
            if isinstance(target, str):
                parse_id(target)  # 404 for an id of HSDS's form that is not h5lake's, as HSDS answers
            raise InvalidInput(f"hard link target {target!r} is not an object id")
        assert isinstance(target, str)
        if not same_domain(target, domain.require_root()):
            raise InvalidInput(f"hard link target {target} is not in {domain.path}")
        link["id"] = target
    else:
        path = body.get("h5path")
        if not isinstance(path, str) or not path:
            raise InvalidInput("soft and external links need a non-empty h5path")
        map_id = path.removeprefix(MAP_LINK_PREFIX) if kind is LinkClass.SOFT else ""
        if path.startswith(MAP_LINK_PREFIX) and is_valid_id(map_id) and Collection.of(map_id) is Collection.MAPS:
            if not same_domain(map_id, domain.require_root()):
                raise InvalidInput(f"hard link target {map_id} is not in {domain.path}")
            link["class"] = LinkClass.HARD.value
            link["id"] = map_id
            return link
        link["h5path"] = path
        if kind is LinkClass.EXTERNAL:
            ext = body.get("h5domain", body.get("file", body.get("domain")))
            if not isinstance(ext, str) or not ext:
                raise InvalidInput("an external link needs h5domain")
            link["h5domain"] = ext
    return link


def _user_defined(body: Doc, link: Doc) -> Doc:
    number, value = body.get("linkClass"), body.get("value", "")
    if not isinstance(number, int) or isinstance(number, bool) or not 64 <= number <= 255:
        raise InvalidInput("a user-defined link needs linkClass, an integer from 64 to 255")
    if not isinstance(value, str):
        raise InvalidInput("a user-defined link's value must be a base64 string")
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput("a user-defined link's value is not base64") from None
    link["linkClass"] = number
    link["value"] = value
    return link


def _target(link: Doc) -> tuple[Any, ...]:
    return (
        link.get("class"),
        link.get("id"),
        link.get("h5path"),
        link.get("h5domain"),
        link.get("linkClass"),
        link.get("value"),
    )


def link_json(link: Doc, title: str | None = None) -> Doc:
    """A link as responses show it; external links carry ``file`` too, which h5pyd 1.0 reads.

    A hard link to a map is stored as a hard link but shown as a soft link to
    ``/.maps/<map id>`` carrying ``collection: "maps"`` and ``map_id``: h5pyd 1.0 fails on a hard
    link whose target prefix it does not know, and skips or lists soft links; map-aware clients
    read ``map_id`` (docs/api.md, "Maps")."""
    out = dict(link)
    if "h5domain" in out:
        out["file"] = out["h5domain"]
    if "id" in out and Collection.of(out["id"]) is Collection.MAPS:
        target = out.pop("id")
        out.update({"class": LinkClass.SOFT.value, "h5path": MAP_LINK_PREFIX + target,
                    "collection": "maps", "map_id": target})
    elif "id" in out:
        out["collection"] = parse_id(out["id"]).path
    if title is not None:
        out["title"] = title
    return out


def _add_links(doc: GroupDoc, new: dict[str, Doc], replace: bool = False) -> Any:
    links = doc.setdefault("links", {})
    added = False
    for name, link in new.items():
        existing = links.get(name)
        if existing is not None:
            if _target(existing) == _target(link):
                continue
            if not replace:
                raise Conflict(f"link {name!r} already exists")
        links[name] = link
        added = True
    if not added:
        return Unchanged(PutOutcome.UNCHANGED)
    doc["lastModified"] = now()
    return PutOutcome.CREATED


async def _put_links(
    svc: Service, domain: Domain, group_id: str, new: dict[str, Doc], replace: bool = False
) -> PutOutcome:
    parse_id(group_id, Collection.GROUPS)
    # reuse: _add_links sets whole links and lastModified (Documents.update)
    _, outcome = await update_object(svc, domain, group_id, lambda d: _add_links(as_group(d), new, replace), reuse=True)
    return outcome


def parse_links(body: Any, domain: Domain) -> dict[str, Doc]:
    if not isinstance(body, dict):
        raise InvalidInput("links must be an object keyed by link name")
    return {validate_name(name): parse_link(link, domain) for name, link in body.items()}


async def put_link(
    svc: Service, caller: Caller, domain_path: str, group_id: str, title: str, body: Any, replace: bool = False
) -> PutOutcome:
    """``PUT /groups/{id}/links/{title}``; with ``replace`` a link of the name that points
    elsewhere is replaced (HSDS's ``replace=1``), else that is 409."""
    domain = await open_domain(svc, caller, domain_path, Permission.CREATE)
    return await _put_links(svc, domain, group_id, {validate_name(title): parse_link(body, domain)}, replace)


async def put_links(
    svc: Service, caller: Caller, domain_path: str, group_id: str, body: Any, replace: bool = False
) -> PutOutcome:
    """``PUT /groups/{id}/links``: ``{"links": {...}}`` for this group, ``{"grp_ids": {...}}``
    (links per group), or ``{"grp_ids": [...], "links": {...}}`` (the same links in each group,
    as HSDS multicasts them)."""
    domain = await open_domain(svc, caller, domain_path, Permission.CREATE)
    if not isinstance(body, dict):
        raise InvalidInput("body must be a JSON object")
    per_group: dict[str, dict[str, Doc]] = {}
    if "grp_ids" in body and isinstance(body["grp_ids"], list):
        shared = parse_links(body.get("links"), domain)
        for gid in body["grp_ids"]:
            parse_id(gid, Collection.GROUPS)
            per_group[gid] = shared
    elif "grp_ids" in body:
        grp_ids = body["grp_ids"]
        if not isinstance(grp_ids, dict):
            raise InvalidInput("grp_ids must be an object keyed by group id")
        for gid, item in grp_ids.items():
            parse_id(gid, Collection.GROUPS)
            links = item.get("links") if isinstance(item, dict) else None
            per_group[gid] = parse_links(links, domain)
    elif "links" in body:
        per_group[group_id] = parse_links(body["links"], domain)
    else:
        raise InvalidInput("body needs links or grp_ids")
    outcomes = await svc.workers.map(per_group.items(), lambda item: _put_links(svc, domain, *item, replace))
    return PutOutcome.CREATED if PutOutcome.CREATED in outcomes else PutOutcome.UNCHANGED


async def place_new_object(svc: Service, domain: Domain, request: Doc, implicit: bool = False) -> Doc:
    """Turn an ``h5path`` placement (see ``access.parse_link_request``) into a parent group
    and link name, checked before the object is made: the groups on the way must be reached
    through hard links (400 otherwise, as HSDS) and exist (404), unless ``implicit`` (HSDS's
    ``implicit=1``) makes the missing ones; the name must be free (409, as HSDS answers)."""
    if "h5path" not in request:
        return request
    h5path: str = request["h5path"]
    start = request.get("parent_id") if not h5path.startswith("/") else None
    parts = [p for p in h5path.split("/") if p and p != "."]
    if not parts:
        raise InvalidInput(f"h5path {h5path[:80]!r} names no link: give the new object's name (/g1/new)")
    parent = as_group((await load_object(svc, domain, start or domain.require_root())).doc)
    for name in parts[:-1]:
        link = parent.get("links", {}).get(name)
        if link is None:
            if not implicit:
                raise NotFound(f"{h5path}: group {name!r} does not exist (implicit=1 makes it)")
            parent = await _new_group_under(svc, domain, parent["id"], name)
            continue
        if link.get("class") != LinkClass.HARD.value or parse_id(link["id"]) is not Collection.GROUPS:
            raise InvalidInput(f"{h5path}: {name!r} is not a hard link to a group")
        parent = as_group((await load_object(svc, domain, link["id"])).doc)
    if parse_id(parent["id"]) is not Collection.GROUPS:
        raise InvalidInput(f"{h5path}: the parent is not a group")
    if parts[-1] in parent.get("links", {}):
        raise Conflict(f"an object already exists at {h5path}")
    return {"id": parent["id"], "name": parts[-1]}


async def _new_group_under(svc: Service, domain: Domain, parent_id: str, name: str) -> GroupDoc:
    doc = as_group(base_doc(new_object_id(Collection.GROUPS, domain.require_root()), domain, {}))
    doc["links"] = {}
    doc["creationProperties"] = {}
    await svc.docs.create_object(domain.path, doc)
    link = {"class": LinkClass.HARD.value, "id": doc["id"], "created": doc["created"]}
    await _put_links(svc, domain, parent_id, {validate_name(name): link})
    return doc


async def link_new_object(svc: Service, caller: Caller, domain: Domain, doc: Mapping[str, Any], request: Doc) -> None:
    """The ``link`` member of a POST that creates an object: link it into a parent group."""
    parent = request["id"]
    link = {"class": LinkClass.HARD.value, "id": doc["id"], "created": doc["created"]}
    await _put_links(svc, domain, parent, {validate_name(request["name"]): link})


def _created_order(kv: tuple[str, Doc]) -> tuple[Any, str]:
    return (kv[1].get("created", 0), kv[0])


def _select(
    links: dict[str, Doc],
    *,
    titles: list[str] | None = None,
    create_order: bool = False,
    pattern: str | None = None,
    marker: str | None = None,
    limit: int | None = None,
) -> list[tuple[str, Doc]]:
    if titles is not None:
        return [(t, links[t]) for t in titles if t in links]
    # a sort of many names holds the interpreter; this runs on a pool thread (`get_links`)
    items = sorted_in_runs(links.items(), _created_order if create_order else itemgetter(0))
    if pattern:
        check_pattern(pattern)
        items = [kv for kv in items if matches(kv[0], pattern)]
    if marker is not None:
        names = [k for k, _ in items]
        if marker not in names:  # as HSDS: a marker must name a link of the listing
            raise NotFound(f"marker {marker!r} is not a link of the group")
        items = items[names.index(marker) + 1 :]
    if limit is not None:
        items = items[:limit]
    return items


async def get_link(svc: Service, caller: Caller, domain_path: str, group_id: str, title: str) -> Doc:
    domain = await open_domain(svc, caller, domain_path, Permission.READ)
    parse_id(group_id, Collection.GROUPS)
    group = (await load_object(svc, domain, group_id)).doc
    link = group.get("links", {}).get(title)
    if link is None:
        _missing_link(svc, domain, group_id, title)
    return {
        "link": link_json(link, title),
        "created": link.get("created"),
        "lastModified": link.get("created"),
    }


async def get_links(
    svc: Service,
    caller: Caller,
    domain_path: str,
    group_id: str,
    *,
    titles: list[str] | None = None,
    grp_ids: list[str] | None = None,
    create_order: bool = False,
    pattern: str | None = None,
    marker: str | None = None,
    limit: int | None = None,
    follow_links: bool = False,
    titles_must_exist: bool = False,
) -> Doc:
    """The links of ``group_id`` (or of ``grp_ids``), selected as HSDS selects them. With
    ``titles_must_exist`` (a POST naming its titles) a name the group lacks is a 404 (410 if
    deleted), not a shorter list, as HSDS answers: the HDF5 REST VOL connector's ``H5Lexists``
    is that request for one name. A GET with ``titles`` in its query lists those that exist."""
    parse_id(group_id, Collection.GROUPS)  # also where only its descendants' ids are used
    domain = await open_domain(svc, caller, domain_path, Permission.READ)

    def shown(have: dict[str, Doc]) -> list[Doc]:
        selected = _select(have, titles=titles, create_order=create_order, pattern=pattern, marker=marker, limit=limit)
        return [link_json(l, t) for t, l in selected]

    async def links_of(gid: str) -> list[Doc]:
        parse_id(gid, Collection.GROUPS)
        have = as_group((await load_object(svc, domain, gid)).doc).get("links", {})
        return await svc.workers.cpu(shown, have, size=len(have) * ENTRY_BYTES)

    if titles_must_exist and titles is not None and grp_ids is None and not follow_links:
        group = as_group((await load_object(svc, domain, group_id)).doc)
        have = group.get("links", {})
        for title in titles:
            if title not in have:
                _missing_link(svc, domain, group_id, title)
        return {"links": shown(have)}
    if grp_ids is not None and len(grp_ids) == 1 and not follow_links:
        return {"links": await links_of(grp_ids[0])}  # one group: its list, as HSDS answers
    if grp_ids is not None or follow_links:
        if grp_ids is None:
            grp_ids = await _descendant_groups(svc, domain, group_id)
        results = await svc.workers.map(grp_ids, links_of)
        return {"links": dict(zip(grp_ids, results))}
    return {"links": await links_of(group_id)}


async def _descendant_groups(svc: Service, domain: Domain, start: str) -> list[str]:
    seen = [start]
    frontier = [start]
    while frontier:
        docs = await svc.workers.map(frontier, lambda g: load_object(svc, domain, g))
        frontier = []
        for found in docs:
            for link in as_group(found.doc).get("links", {}).values():
                target = link.get("id")
                if target and Collection.of(target) is Collection.GROUPS and target not in seen:
                    seen.append(target)
                    frontier.append(target)
    return seen


async def delete_links(
    svc: Service, caller: Caller, domain_path: str, group_id: str, titles: list[str]
) -> None:
    domain = await open_domain(svc, caller, domain_path, Permission.DELETE)
    parse_id(group_id, Collection.GROUPS)
    if not titles:
        raise InvalidInput("no link names given")

    def remove(doc: GroupDoc) -> Unchanged | None:
        links = doc.get("links", {})
        present = [t for t in titles if t in links]
        for t in titles:
            # a name deleted through this process before: a success, as HSDS answers (h5pyd 1.0
            # sends the delete again with a later flush that touches the group)
            if t not in links and not _deleted_here(svc, domain, group_id, t):
                raise NotFound(f"link {t!r} not found")
        if not present:
            return Unchanged()
        for t in present:
            del links[t]
        doc["lastModified"] = now()
        return None

    await update_object(svc, domain, group_id, remove, reuse=True)  # deletes entries only
    svc.deleted_names.note(domain.path, group_id, "link", titles)


def _missing_link(svc: Service, domain: Domain, group_id: str, title: str) -> NoReturn:
    """404 for a link name the group lacks; 410 when this process deleted it (HSDS's answer,
    see service.objects.deleted_names; a version's contents are not the head's)."""
    if _deleted_here(svc, domain, group_id, title):
        raise Gone(f"link {title!r} has been deleted")
    raise NotFound(f"link {title!r} not found")


def _deleted_here(svc: Service, domain: Domain, group_id: str, title: str) -> bool:
    return domain.view is svc.head and svc.deleted_names.was_deleted(domain.path, group_id, "link", title)


MAX_PATH_STEPS = 1024
"""Links one path may walk, soft links' targets included: a path through a hard link back to
the root could otherwise be made as long as the request body allows."""


OpenExternal = Callable[[str], Awaitable[Domain]]
"""Opens (and authorizes the caller on) the domain an external link names."""


async def resolve_path(svc: Service, domain: Domain, h5path: str, start: str | None = None) -> Doc:
    """Follow hard links (and soft links within the domain) from the root (or, for a relative
    path, from group ``start``) to an object."""
    _, found = await resolve_path_in(svc, domain, h5path, start)
    return found


async def resolve_path_in(
    svc: Service,
    domain: Domain,
    h5path: str,
    start: str | None = None,
    open_external: OpenExternal | None = None,
    follow_soft: bool = True,
) -> tuple[Domain, Doc]:
    """`resolve_path`, also through external links when ``open_external`` is given (HSDS's
    ``follow_external_links``): the object found, and the domain it is in. An external link's
    ``h5domain`` may be relative (``hsload`` stores ``other.h5``): it is taken relative to the
    folder of the domain holding the link. Without ``follow_soft`` a soft link on the way is
    `InvalidInput` (HSDS answers 400 unless ``follow_soft_links=1``)."""
    first = start if start is not None and not h5path.startswith("/") else domain.require_root()
    current = (await load_object(svc, domain, first)).doc
    hops = steps = 0
    parts = [p for p in h5path.split("/") if p and p != "."]
    while parts:
        steps += 1
        if steps > MAX_PATH_STEPS:
            raise InvalidInput(f"path {h5path[:80]!r}... walks more than {MAX_PATH_STEPS} links")
        if steps % 64 == 0:
            await asyncio.sleep(0)  # cached objects never yield; let other requests run
        name = parts.pop(0)
        link = current.get("links", {}).get(name)
        if link is None:
            raise NotFound(f"{h5path} not found")
        if link["class"] in (LinkClass.SOFT.value, LinkClass.EXTERNAL.value):
            hops += 1
            if hops > 32:
                raise InvalidInput(f"too many soft or external links resolving {h5path}")
            target = link["h5path"]
            if link["class"] == LinkClass.SOFT.value and not follow_soft:
                raise InvalidInput(f"{h5path} leads through a soft link (follow_soft_links=1 follows it)")
            if link["class"] == LinkClass.EXTERNAL.value:
                if open_external is None:
                    raise InvalidInput(f"{h5path} leads through an external link (follow_external_links=1 follows it)")
                domain = await open_external(external_domain_path(domain.path, link["h5domain"]))
                target = "/" + target.lstrip("/")
            if target.startswith("/"):
                current = (await load_object(svc, domain, domain.require_root())).doc
            parts = [p for p in target.split("/") if p and p != "."] + parts
            continue
        if link["class"] != LinkClass.HARD.value:
            raise NotFound(f"{h5path} leads through a user-defined link")
        current = (await load_object(svc, domain, link["id"])).doc
        if parts and Collection.of(current["id"]) is not Collection.GROUPS:
            raise NotFound(f"{h5path} not found")
    return domain, current


async def path_of(svc: Service, domain: Domain, obj_id: str) -> str | None:
    """The first path (breadth first, names in order) from the root to ``obj_id`` through hard
    links, or None when no link leads there (HSDS's ``getalias``)."""
    root = domain.require_root()
    if obj_id == root:
        return "/"
    seen = {root}
    frontier: list[tuple[str, str]] = [(root, "")]
    while frontier:
        docs = await svc.workers.map([g for g, _ in frontier], lambda g: load_object(svc, domain, g))
        following: list[tuple[str, str]] = []
        for (_, prefix), found in zip(frontier, docs):
            for name, link in sorted(found.doc.get("links", {}).items()):
                target = link.get("id")
                if target is None or target in seen:
                    continue
                if target == obj_id:
                    return f"{prefix}/{name}"
                seen.add(target)
                if Collection.of(target) is Collection.GROUPS:
                    following.append((target, f"{prefix}/{name}"))
        frontier = following
    return None


def external_domain_path(holder: str, h5domain: str) -> str:
    """The domain an external link names, as an absolute path (see `resolve_path_in`)."""
    h5domain = h5domain.removeprefix("hdf5:/")
    if h5domain.startswith("/"):
        return h5domain
    folder = holder.rsplit("/", 1)[0]
    return f"{folder}/{h5domain}"
