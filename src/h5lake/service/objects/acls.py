"""ACLs of single groups, datasets and committed datatypes (``/{collection}/{id}/acls``).

An object's ``acls`` (optional in the seed schema) map user names (and ``default``) to the six
flags; `domains.authorize_object` applies them. Listing and reading show the object's
*effective* ACL: its own entries over the domain's, since a user without an entry of the object
is governed by the domain's.
"""

from __future__ import annotations

from typing import Any

from h5lake.errors import NotFound
from h5lake.model import acl as acl_model
from h5lake.model.acl import Permission
from h5lake.model.ids import Collection
from h5lake.model.stored import ObjectDoc
from h5lake.service.access import open_object, update_object
from h5lake.service.context import Caller, Service, now
from h5lake.service.documents import Doc
from h5lake.service.domains.core import acl_entry


def _effective(domain_acls: dict[str, Any], object_acls: dict[str, Any]) -> dict[str, Any]:
    return {**domain_acls, **object_acls}


async def get_object_acls(svc: Service, caller: Caller, domain_path: str, obj_id: str, collection: Collection) -> list[Doc]:
    domain, found = await open_object(svc, caller, domain_path, obj_id, Permission.READ_ACL, collection)
    acls = _effective(domain.doc.get("acls", {}), found.doc.get("acls", {}))
    return [acl_entry(u, f) for u, f in sorted(acls.items())]


async def get_object_acl(
    svc: Service, caller: Caller, domain_path: str, obj_id: str, collection: Collection, user: str
) -> Doc:
    domain, found = await open_object(svc, caller, domain_path, obj_id, Permission.READ_ACL, collection)
    acls = _effective(domain.doc.get("acls", {}), found.doc.get("acls", {}))
    if user not in acls:
        raise NotFound(f"no ACL for user {user} on {obj_id}")
    return acl_entry(user, acls[user])


async def put_object_acl(
    svc: Service, caller: Caller, domain_path: str, obj_id: str, collection: Collection, user: str, body: Any
) -> Doc:
    acl_model.validate_user_name(user)
    flags = acl_model.validate_acl(body)
    domain, _ = await open_object(svc, caller, domain_path, obj_id, Permission.UPDATE_ACL, collection)

    def mutate(doc: ObjectDoc) -> dict[str, Any]:
        acls = doc.setdefault("acls", {})
        entry = acls.get(user) or {f: False for f in acl_model.FLAGS}
        entry.update(flags)
        acls[user] = entry
        doc["lastModified"] = now()
        return entry

    _, entry = await update_object(svc, domain, obj_id, mutate)
    return acl_entry(user, entry)
