"""Access control lists of the seed schema: six flags per user name, plus ``default``."""

from __future__ import annotations

import enum
from typing import Any

from h5lake.errors import InvalidInput


class Permission(enum.Enum):
    CREATE = "create"
    READ = "read"
    UPDATE = "update"
    DELETE = "delete"
    READ_ACL = "readACL"
    UPDATE_ACL = "updateACL"


FLAGS = tuple(p.value for p in Permission)
DEFAULT = "default"
SET_BY_PUT = "domain"
"""The key an entry set by ``PUT /acls/{user}`` has besides its flags: HSDS stores the request's
domain there and answers it with the entry (h5pyd's ``hsacl`` drops it before printing)."""


def full_acl() -> dict[str, bool]:
    return {f: True for f in FLAGS}


def acl_for(read: bool = False) -> dict[str, bool]:
    acl = {f: False for f in FLAGS}
    acl["read"] = read
    return acl


def allows(acls: dict[str, Any], user: str | None, permission: Permission) -> bool:
    """Does the ACL grant ``permission`` to ``user`` (the user's entry, else ``default``)?"""
    entry = acls.get(user) if user is not None else None
    if entry is None:
        entry = acls.get(DEFAULT)
    return bool(entry and entry.get(permission.value))


def validate_acl(body: Any) -> dict[str, bool]:
    """An ACL update body: any of the six flags, booleans only."""
    if not isinstance(body, dict):
        raise InvalidInput("ACL body must be a JSON object")
    acl: dict[str, bool] = {}
    for key, value in body.items():
        if key == "userName":
            continue
        if key not in FLAGS:
            raise InvalidInput(f"unknown ACL flag {key!r}; expected one of {', '.join(FLAGS)}")
        if not isinstance(value, bool):
            raise InvalidInput(f"ACL flag {key!r} must be true or false")
        acl[key] = value
    return acl


def validate_user_name(name: str) -> str:
    if not name or len(name) > 256 or any(c in name for c in "/:\\") or not name.isprintable():
        raise InvalidInput(f"invalid user name {name!r}")
    return name
