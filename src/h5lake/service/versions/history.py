"""History and names of a domain's versions: list, describe, tag, untag, forget."""

from __future__ import annotations

from typing import Any

from h5lake.errors import AlreadyExists, Conflict, InvalidInput, NotFound
from h5lake.model.acl import Permission
from h5lake.model.ids import tag_key, version_key, versions_prefix
from h5lake.model.stored import VersionTag
from h5lake.service.context import Caller, Service, now
from h5lake.service.documents import Doc, dumps
from h5lake.service.domains.core import open_domain
from h5lake.service.versions import view as versions
from h5lake.service.views import Domain
from h5lake.storage.base import PreconditionFailed
from h5lake.versions.names import check_tag_name, parse_version_id


async def _head(svc: Service, caller: Caller, path: str, permission: Permission) -> Domain:
    if "@" in path:
        raise InvalidInput(f"name the domain without a version here, not {path[:120]!r}")
    return await open_domain(svc, caller, path, permission)


async def list_history(svc: Service, caller: Caller, path: str, limit: int | None, marker: str | None) -> list[Doc]:
    domain = await _head(svc, caller, path, Permission.READ)
    return await versions.list_versions(svc, domain.path, limit, marker)


async def describe(svc: Service, caller: Caller, path: str, vid: str) -> Doc:
    domain = await _head(svc, caller, path, Permission.READ)
    record = await versions.require(svc, domain.path, parse_version_id(vid))
    out = versions.public(record)
    out["tags"] = [t["name"] for t in await _tags(svc, domain.path) if t["version"] == record["id"]]
    return out


async def _tags(svc: Service, path: str) -> list[Doc]:
    prefix = versions_prefix(path) + "tags/"
    keys = [k async for k in svc.store.list(prefix, delimiter="/") if k.endswith(".json")]
    found = await svc.workers.map(keys, svc.docs.get)
    return [f.doc for f in found if f is not None]


async def list_tags(svc: Service, caller: Caller, path: str) -> list[Doc]:
    domain = await _head(svc, caller, path, Permission.READ)
    return sorted(await _tags(svc, domain.path), key=lambda t: t["name"])


async def get_tag(svc: Service, caller: Caller, path: str, name: str) -> VersionTag:
    check_tag_name(name)
    domain = await _head(svc, caller, path, Permission.READ)
    found = await versions.get_tag(svc, domain.path, name)
    if found is None:
        raise NotFound(f"no tag {name!r} in {domain.path}")
    return found


async def put_tag(svc: Service, caller: Caller, path: str, name: str, body: Any) -> Doc:
    check_tag_name(name)
    if not isinstance(body, dict) or not isinstance(body.get("version"), str):
        raise InvalidInput('a tag body is {"version": "<version id>"}')
    domain = await _head(svc, caller, path, Permission.UPDATE)
    record = await versions.require(svc, domain.path, parse_version_id(body["version"]))
    tag = {"name": name, "version": record["id"], "number": record["number"], "created": now(), "author": caller.user}
    key = tag_key(domain.path, name)
    try:
        await svc.store.put(key, dumps(tag), if_none_match=True)
    except PreconditionFailed:
        raise AlreadyExists(f"tag {name!r} of {domain.path} exists; tags are immutable") from None
    # A forget racing this tag: each writes, then looks at what the other writes (the tag, the
    # version's stub), so at least one of them sees the other and gives up.
    again = await svc.docs.get(version_key(domain.path, record["number"]))
    if again is None or again.doc.get("deleted"):
        await svc.store.delete(key)
        raise NotFound(f"version {record['id']} of {domain.path} was forgotten meanwhile")
    return tag


async def delete_tag(svc: Service, caller: Caller, path: str, name: str) -> None:
    check_tag_name(name)
    domain = await _head(svc, caller, path, Permission.DELETE)
    if await versions.get_tag(svc, domain.path, name) is None:
        raise NotFound(f"no tag {name!r} in {domain.path}")
    await svc.store.delete(tag_key(domain.path, name))


async def forget(svc: Service, caller: Caller, path: str, vid: str) -> None:
    """``DELETE /versions/{id}``: an untagged version is replaced by a stub (its number is never
    reused; its manifests and chunks are left to gc)."""
    domain = await _head(svc, caller, path, Permission.DELETE)
    number = parse_version_id(vid)
    await versions.require(svc, domain.path, number)
    tagged = [t["name"] for t in await _tags(svc, domain.path) if t["number"] == number]
    if tagged:
        raise Conflict(f"version {vid} of {domain.path} is tagged ({', '.join(tagged)}): delete the tags first")
    key = version_key(domain.path, number)
    found = await svc.docs.get(key)
    if found is None or found.doc.get("deleted"):
        raise NotFound(f"version {vid} of {domain.path} not found")
    stub = {k: found.doc.get(k) for k in ("id", "number", "parent", "created")}
    stub["deleted"] = True
    try:
        etag = await svc.store.put(key, dumps(stub), if_match=found.etag)
    except PreconditionFailed:
        raise Conflict(f"version {vid} of {domain.path} changed meanwhile; try again") from None
    tagged = [t["name"] for t in await _tags(svc, domain.path) if t["number"] == number]
    if tagged:  # a tag made meanwhile (`put_tag`): the version stays
        try:
            await svc.store.put(key, dumps(found.doc), if_match=etag)
        except PreconditionFailed:
            pass  # changed again since: nothing of ours to put back
        raise Conflict(f"version {vid} of {domain.path} was tagged meanwhile ({', '.join(tagged)})")
