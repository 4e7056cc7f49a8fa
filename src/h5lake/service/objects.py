"""Groups, datasets and committed datatypes as stored documents: find, show, create, delete."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from h5lake.errors import AlreadyExists, Forbidden, InvalidInput, NotFound
from h5lake.model.acl import Permission
from h5lake.model.ids import Collection, new_object_id, object_key, parse_id, same_domain
from h5lake.model.types import client_type, validate_type
from h5lake.service.context import Caller, Service, now
from h5lake.service.documents import Doc, Versioned
from h5lake.service.domains import Domain, open_domain

_ADMIN_KEYS = ("acls",)


async def open_object(
    svc: Service,
    caller: Caller,
    domain_path: str,
    obj_id: str,
    permission: Permission,
    collection: Collection | None = None,
) -> tuple[Domain, Versioned]:
    """Authorize ``caller`` on the domain and load one of its objects (404 if it is elsewhere)."""
    parse_id(obj_id, collection)
    domain = await open_domain(svc, caller, domain_path, permission)
    return domain, await load_object(svc, domain, obj_id)


async def load_object(svc: Service, domain: Domain, obj_id: str) -> Versioned:
    root = domain.require_root()
    if not same_domain(obj_id, root):
        raise NotFound(f"object {obj_id} not found in {domain.path}")
    found = await svc.docs.get(object_key(obj_id))
    if found is None or found.doc.get("root") != root:
        raise NotFound(f"object {obj_id} not found in {domain.path}")
    return found


async def update_object(
    svc: Service, domain: Domain, obj_id: str, mutate: Callable[[Doc], Any]
) -> tuple[Doc, Any]:
    """Change an object of ``domain`` atomically (see ``Documents.update``); 404 when it is not
    one of the domain's objects. The ownership check runs on the document being updated, so the
    object is read once."""
    root = domain.require_root()
    if not same_domain(obj_id, root):
        raise NotFound(f"object {obj_id} not found in {domain.path}")

    def checked(doc: Doc) -> Any:
        if doc.get("root") != root:
            raise NotFound(f"object {obj_id} not found in {domain.path}")
        return mutate(doc)

    return await svc.docs.update(object_key(obj_id), checked, f"object {obj_id}")


def object_json(
    domain: Domain, doc: Doc, *, include_links: bool = True, include_attrs: bool = False
) -> Doc:
    """An object as ``GET /{collection}/{id}`` shows it."""
    out = {k: v for k, v in doc.items() if k not in ("links", "attributes", "stats") + _ADMIN_KEYS}
    collection = parse_id(doc["id"])
    out["attributeCount"] = len(doc.get("attributes", {}))
    if collection is Collection.GROUPS:
        out["linkCount"] = len(doc.get("links", {}))
        if include_links:
            from h5lake.service.links import link_json

            out["links"] = {name: link_json(link) for name, link in doc.get("links", {}).items()}
    if "type" in out:
        out["type"] = client_type(out["type"])
    if include_attrs:
        attrs = doc.get("attributes", {})
        out["attributes"] = {name: {**a, "type": client_type(a.get("type"))} for name, a in attrs.items()}
    out["domain"] = domain.path
    out["hrefs"] = []
    return out


def client_timestamp(body: Doc, key: str, default: float) -> float:
    value = body.get(key)
    # Keep the client's clock when it is near ours (creation order depends on it).
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value - default) < 300:
        return float(value)
    return default


def new_id_for(collection: Collection, body: Doc, domain: Domain) -> str:
    root = domain.require_root()
    if "id" not in body:
        return new_object_id(collection, root)
    obj_id = body["id"]
    parse_id(obj_id, collection)
    if not same_domain(obj_id, root):
        raise InvalidInput(f"id {obj_id} does not belong to domain {domain.path}")
    return obj_id


def base_doc(obj_id: str, domain: Domain, body: Doc) -> Doc:
    ts = now()
    created = client_timestamp(body, "created", ts)
    return {
        "id": obj_id,
        "root": domain.require_root(),
        "created": created,
        "lastModified": max(created, client_timestamp(body, "lastModified", ts)),
        "attributes": {},
    }


def bodies(body: Any) -> tuple[list[Doc], bool]:
    """POST bodies come as one object or, from h5pyd 1.0, a list of them."""
    if isinstance(body, dict):
        return [body], False
    if isinstance(body, list) and body and all(isinstance(b, dict) for b in body):
        return body, True
    if body is None:
        return [{}], False
    raise InvalidInput("body must be a JSON object or a non-empty list of objects")


async def store_new_objects(
    svc: Service, caller: Caller, domain: Domain, docs: list[Doc], link_requests: list[tuple[Doc, Any]]
) -> None:
    """Create documents (create-only), then any ``link`` requests that came with them.

    A repeated POST of an identical object is accepted (h5pyd resends after a failed flush).
    """

    async def create(doc: Doc) -> None:
        try:
            await svc.docs.create(object_key(doc["id"]), doc, f"object {doc['id']}")
        except AlreadyExists:
            existing = await svc.docs.get(object_key(doc["id"]))
            if existing is None or not _same_object(existing.doc, doc):
                raise

    await asyncio.gather(*(create(d) for d in docs))
    for d in docs:
        svc.catalog.note_object(domain.path, d["id"])
    if link_requests:
        from h5lake.service.links import link_new_object

        for doc, link in link_requests:
            await link_new_object(svc, caller, domain, doc, link)


def _same_object(a: Doc, b: Doc) -> bool:
    skip = {"created", "lastModified", "attributes", "links", "stats"}
    return {k: v for k, v in a.items() if k not in skip} == {
        k: v for k, v in b.items() if k not in skip
    }


def parse_link_request(body: Doc) -> Any:
    link = body.get("link")
    if link is None:
        return None
    if not isinstance(link, dict) or "id" not in link or "name" not in link:
        raise InvalidInput("link must be an object with id and name")
    return link


# --- groups -----------------------------------------------------------------------------------


async def create_groups(svc: Service, caller: Caller, domain_path: str, body: Any) -> tuple[list[Doc], bool]:
    items, many = bodies(body)
    domain = await open_domain(svc, caller, domain_path, Permission.CREATE)
    docs, links = [], []
    for item in items:
        doc = base_doc(new_id_for(Collection.GROUPS, item, domain), domain, item)
        props = item.get("creationProperties", {})
        if not isinstance(props, dict):
            raise InvalidInput("creationProperties must be an object")
        doc["links"] = {}
        doc["creationProperties"] = props
        docs.append(doc)
        link = parse_link_request(item)
        if link is not None:
            links.append((doc, link))
    await store_new_objects(svc, caller, domain, docs, links)
    return [object_json(domain, d, include_links=False) for d in docs], many


# --- committed datatypes ----------------------------------------------------------------------


async def create_datatypes(
    svc: Service, caller: Caller, domain_path: str, body: Any
) -> tuple[list[Doc], bool]:
    items, many = bodies(body)
    domain = await open_domain(svc, caller, domain_path, Permission.CREATE)
    docs, links = [], []
    for item in items:
        if "type" not in item:
            raise InvalidInput("a datatype needs a type")
        doc = base_doc(new_id_for(Collection.DATATYPES, item, domain), domain, item)
        doc["type"] = validate_type(item["type"])
        props = item.get("creationProperties", {})
        doc["creationProperties"] = props if isinstance(props, dict) else {}
        docs.append(doc)
        link = parse_link_request(item)
        if link is not None:
            links.append((doc, link))
    await store_new_objects(svc, caller, domain, docs, links)
    return [object_json(domain, d) for d in docs], many


async def resolve_type(svc: Service, domain: Domain, type_json: Any) -> Doc:
    """A type given inline, or by the id of a committed datatype of this domain."""
    if isinstance(type_json, str) and (type_json.startswith(("t-", "datatypes/"))):
        type_id = type_json.split("/", 1)[-1]
        parse_id(type_id, Collection.DATATYPES)
        committed = await load_object(svc, domain, type_id)
        resolved = dict(committed.doc["type"])
        resolved["id"] = type_id
        return resolved
    return validate_type(type_json)


# --- any collection ---------------------------------------------------------------------------


async def get_object(
    svc: Service,
    caller: Caller,
    domain_path: str,
    obj_id: str,
    collection: Collection,
    *,
    include_links: bool,
    include_attrs: bool,
    verbose: bool = False,
) -> Doc:
    domain, found = await open_object(svc, caller, domain_path, obj_id, Permission.READ, collection)
    out = object_json(domain, found.doc, include_links=include_links, include_attrs=include_attrs)
    if verbose and collection is Collection.DATASETS:
        from h5lake.chunks.catalog import dataset_stats

        out["stats"] = await dataset_stats(svc.store, domain.path, found.doc)
    return out


async def delete_object(
    svc: Service, caller: Caller, domain_path: str, obj_id: str, collection: Collection
) -> None:
    domain, found = await open_object(svc, caller, domain_path, obj_id, Permission.DELETE, collection)
    if obj_id == domain.root:
        raise Forbidden("the root group cannot be deleted")
    await svc.docs.delete(object_key(obj_id))
    svc.catalog.note_object(domain.path, obj_id)
    if collection is Collection.DATASETS:
        from h5lake.service import reclaim

        svc.spawn(reclaim.reclaim_dataset_chunks(svc, domain.path, found.doc))


async def list_objects(
    svc: Service, caller: Caller, domain_path: str, collection: Collection, limit: int | None, marker: str | None
) -> list[str]:
    """Ids of the collection's objects reachable from the root (``GET /groups`` and kin)."""
    from h5lake.service.walk import walk_objects

    domain = await open_domain(svc, caller, domain_path, Permission.READ)
    ids = sorted(
        [
            doc["id"]
            async for doc in walk_objects(svc, domain)
            if parse_id(doc["id"]) is collection and doc["id"] != domain.root
        ]
    )
    if marker:
        ids = [i for i in ids if i > marker]
    return ids[:limit] if limit else ids
