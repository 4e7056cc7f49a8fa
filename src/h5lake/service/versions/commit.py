"""Committing a domain's head as a new version (docs/versions.md, "Commit"): the head's
manifests (`snapshot`), taken under the fence and the domain's mark (`applying.commit_flag`), and
the version record put create-only, the commit point. Nothing is visible before that put.
"""

from __future__ import annotations

from typing import Any

from h5lake.errors import Conflict, InvalidInput, TooLarge
from h5lake.model.acl import Permission
from h5lake.model.ids import version_key
from h5lake.model.stored import VersionRecord
from h5lake.service.context import Caller, Service, now
from h5lake.service.documents import Doc, dumps
from h5lake.service.domains.core import open_domain
from h5lake.service.versions import view as versions
from h5lake.service.versions.applying import commit_flag
from h5lake.service.versions.snapshot import CHUNKED, Snapshot, children, consistent_tree, head_tree
from h5lake.storage.base import PreconditionFailed
from h5lake.versions.names import parse_version_id, version_id

MAX_DESCRIPTION_BYTES = 64 * 1024
"""A commit's message and metadata together (JSON): every listing and every read of the version
parses its record, and each commit the previous one's."""


def _created(body: Doc, parent: VersionRecord | None) -> float:
    """The version's time: now, or ``created`` when given (a history loaded from elsewhere), which
    must not precede the parent's nor lie in the future, so times stay in commit order."""
    ts = now()
    given = body.get("created")
    if given is None:
        return max(ts, float(parent["created"]) if parent else ts)
    if isinstance(given, bool) or not isinstance(given, int | float):
        raise InvalidInput("created is a Unix time in seconds")
    if given > ts or parent is not None and given < float(parent["created"]):
        raise InvalidInput("created must lie between the parent version's time and now")
    return float(given)


def _commit_body(body: Any) -> tuple[str, Doc, str | None, bool]:
    body = {} if body is None else body
    if not isinstance(body, dict):
        raise InvalidInput("a commit body is a JSON object")
    message = body.get("message", "")
    metadata = body.get("metadata") or {}
    if not isinstance(message, str) or not isinstance(metadata, dict):
        raise InvalidInput("message must be a string and metadata an object")
    size = len(dumps({"message": message, "metadata": metadata}))
    if size > MAX_DESCRIPTION_BYTES:
        raise TooLarge(
            f"a commit's message and metadata take {size} bytes as JSON, over the limit of {MAX_DESCRIPTION_BYTES}: "
            "keep large descriptions in the domain (an attribute or a dataset)"
        )
    parent = body.get("parent")
    if parent is not None:
        parse_version_id(parent)
    return message, metadata, parent, "parent" in body

async def commit(svc: Service, caller: Caller, path: str, body: Any) -> Doc:
    """``POST /versions``: the head as a new version; 409 naming the latest when ``parent``
    is not the latest or another commit of the same parent won."""
    message, metadata, parent, parent_given = _commit_body(body)
    domain = await open_domain(svc, caller, path, Permission.UPDATE)
    domain.require_root()
    async with svc.fences.committing(domain.path):
        number = await versions.highest_number(svc, domain.path) + 1
        prev = await versions.latest(svc, domain.path, below=number)
        latest_id = None if prev is None else prev["id"]
        if parent_given and parent != latest_id:
            raise Conflict(f"version {parent} is not the latest of {domain.path}: the latest is {latest_id}")
        created = _created(body or {}, prev)
        async with commit_flag(svc, domain):
            tree = await consistent_tree(svc, domain, prev)
        record: VersionRecord = {
            "id": version_id(number),
            "number": number,
            "parent": latest_id,
            "created": created,
            "author": caller.user,
            "message": message,
            "metadata": metadata,
            "tree": tree,
        }
        try:
            await svc.store.put(version_key(domain.path, number), dumps(record), if_none_match=True)
        except PreconditionFailed:
            won = await versions.latest(svc, domain.path)
            raise Conflict(
                f"another commit of {domain.path} won: the latest version is {won and won['id']}"
            ) from None
        await versions.set_hint(svc, domain.path, number)
        return versions.public(record)


__all__ = ["CHUNKED", "MAX_DESCRIPTION_BYTES", "Snapshot", "children", "commit", "commit_flag", "consistent_tree", "head_tree"]
