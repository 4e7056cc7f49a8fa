"""Finding, loading and changing one object of an opened domain, and the parts every creation
shares (ids, timestamps, bodies). Reads go through the domain's view; changes are conditional
updates of the head."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from h5lake.errors import Gone, InvalidInput, NotFound
from h5lake.model.acl import Permission
from h5lake.model.ids import Collection, new_object_id, object_key, parse_id, same_domain, tombstone_key
from h5lake.model.typecheck import validate_type
from h5lake.service.context import Caller, Service, now
from h5lake.service.documents import D, Doc, Versioned
from h5lake.service.domains.core import authorize_object, open_domain
from h5lake.service.views import Domain


async def open_object(
    svc: Service,
    caller: Caller,
    domain_path: str,
    obj_id: str,
    permission: Permission,
    collection: Collection | None = None,
) -> tuple[Domain, Versioned]:
    """Authorize ``caller`` on the domain and load one of its objects (404 if it is elsewhere),
    checking the object's own ACL when it has one."""
    parse_id(obj_id, collection)
    domain = await open_domain(svc, caller, domain_path, permission)
    found = await load_object(svc, domain, obj_id)
    authorize_object(caller, domain, found.doc, permission)
    return domain, found


async def load_object(svc: Service, domain: Domain, obj_id: str) -> Versioned:
    root = domain.require_root()
    if not same_domain(obj_id, root):
        await _not_here(svc, domain, obj_id)
    found = await domain.view.object(obj_id)
    if found is None and await svc.store.head(tombstone_key(domain.path, obj_id)) is not None:
        raise Gone(f"object {obj_id} of {domain.path} has been deleted")
    if found is None or found.doc.get("root") != root:
        raise NotFound(f"object {obj_id} not found in {domain.path}")
    return found


async def _not_here(svc: Service, domain: Domain, obj_id: str) -> None:
    """An id that cannot be one of ``domain``'s: 400 when it names an object of another domain
    (as HSDS answers), else 404 (no such object anywhere)."""
    if await svc.docs.get(object_key(obj_id)) is not None:
        raise InvalidInput(f"object {obj_id} belongs to another domain than {domain.path}")
    raise NotFound(f"object {obj_id} not found in {domain.path}")


async def update_object(
    svc: Service,
    domain: Domain,
    obj_id: str,
    mutate: Callable[[D], Any],
    *,
    reuse: bool = False,
    check: Callable[[D, int], None] | None = None,
) -> tuple[D, Any]:
    """Change an object of ``domain`` atomically (see ``Documents.update``, its ``reuse`` and ``check``;
    `Documents.update_object` tells the catalog); 404 when it is not one of the domain's objects. The ownership check runs on the document
    being updated, so the object is read once."""
    root = domain.require_root()
    if not same_domain(obj_id, root):
        await _not_here(svc, domain, obj_id)

    def checked(doc: D) -> Any:
        if doc.get("root") != root:
            raise NotFound(f"object {obj_id} not found in {domain.path}")
        return mutate(doc)

    return await svc.docs.update_object(domain.path, obj_id, checked, f"object {obj_id}", reuse=reuse, check=check)


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


def parse_link_request(body: Doc) -> Any:
    """Where a POST puts the object it creates: ``{"link": {"id", "name"}}`` (a parent group and
    a link name), or ``{"h5path": ...}`` (absolute, or relative to ``parent_id``; every group
    on the way must exist, as HSDS requires without ``implicit``). None: anonymous."""
    link = body.get("link")
    if "h5path" in body:
        if link is not None:
            raise InvalidInput("link cannot be combined with h5path")
        h5path, parent = body["h5path"], body.get("parent_id")
        if not isinstance(h5path, str) or not h5path.strip("/"):
            raise InvalidInput("h5path must name an object")
        if parent is not None:
            parse_id(parent, Collection.GROUPS)
        return {"h5path": h5path, "parent_id": parent}
    if link is None:
        return None
    if not isinstance(link, dict) or "id" not in link or "name" not in link:
        raise InvalidInput("link must be an object with id and name")
    return link


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
