"""Domains and folders: create, open, list, delete, and their ACLs."""

from __future__ import annotations

import asyncio
import fnmatch
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from h5lake import HSDS_COMPAT_VERSION
from h5lake.catalog.changed import last_changed
from h5lake.chunks.filters import SUPPORTED_COMPRESSORS
from h5lake.errors import AlreadyExists, Conflict, Forbidden, Gone, InvalidInput, NotFound, Unauthorized
from h5lake.model import acl as acl_model
from h5lake.model.acl import Permission
from h5lake.model.globs import check_pattern
from h5lake.model.ids import (
    DOMAIN_FILE,
    domain_key,
    domain_prefix,
    domain_tombstone_key,
    is_attribute_values_prefix,
    new_root_id,
    normalize_domain,
    object_key,
    parent_domain,
)
from h5lake.model.stored import DomainDoc, as_domain
from h5lake.service.context import Caller, Service, now
from h5lake.service.datasets.creation import group_creation_properties
from h5lake.service.documents import Doc
from h5lake.service.domains import query as domain_query
from h5lake.service.domains import reclaim
from h5lake.service.domains.summary import domain_stats
from h5lake.service.versions import applying
from h5lake.service.versions import view as versions
from h5lake.service.versions.applying import APPLYING, COMMITTING
from h5lake.service.views import READ_PERMISSIONS, Domain, refuse_change
from h5lake.versions.names import split_domain

log = logging.getLogger(__name__)


async def load_domain(svc: Service, path: str) -> Domain:
    """The domain ``path`` (its head), or the version ``D@REF`` names (read-only)."""
    path, ref = split_domain(path)
    head = await _load_head(svc, path)
    if ref is not None:
        return await versions.open_version(svc, head, ref)
    if APPLYING in head.doc:  # a version is being written to the head: wait for it, or finish it
        head = await applying.finish(svc, head)
    return head


async def _load_head(svc: Service, path: str) -> Domain:
    path = normalize_domain(path)
    found = await svc.docs.get(domain_key(path))
    if found is None:
        if path != "/" and await svc.store.head(domain_tombstone_key(path)) is not None:
            raise Gone(f"domain {path} has been deleted")
        raise NotFound(f"domain {path} not found")
    return Domain(path, as_domain(found.doc), found.etag, svc.head)


def authorize(caller: Caller, domain: Domain, permission: Permission) -> None:
    if caller.is_admin:
        return
    if caller.user is not None and caller.user == domain.owner:
        return
    if acl_model.allows(domain.doc.get("acls", {}), caller.user, permission):
        return
    if caller.user is None:
        raise Unauthorized(f"{permission.value} access to {domain.path} needs credentials")
    raise Forbidden(f"user {caller.user} has no {permission.value} access to {domain.path}")


def authorize_object(caller: Caller, domain: Domain, doc: Doc, permission: Permission) -> None:
    """An object's own ACL (the seed schema's optional ``acls`` of a group, dataset or datatype):
    when it has an entry for the caller (else a ``default`` one), that entry must grant
    ``permission`` too. It narrows what the domain's ACL allows, never widens it (the domain
    was authorized first); the domain's owner and admins are not bound by it."""
    acls = doc.get("acls")
    if not acls or caller.is_admin or (caller.user is not None and caller.user == domain.owner):
        return
    entry = acls.get(caller.user) if caller.user is not None else None
    if entry is None:
        entry = acls.get(acl_model.DEFAULT)
    if entry is not None and not entry.get(permission.value):
        raise Forbidden(f"user {caller.user} has no {permission.value} access to object {doc.get('id')}")


_COMMIT_POLL = 0.02


async def open_domain(svc: Service, caller: Caller, path: str, permission: Permission) -> Domain:
    if permission not in READ_PERMISSIONS:
        await enter_change(svc, path)
    domain = await load_domain(svc, path)
    authorize(caller, domain, permission)
    refuse_change(domain, permission)
    if permission not in READ_PERMISSIONS:
        domain = await wait_for_commit(svc, domain)
    return domain


async def enter_change(svc: Service, path: str) -> None:
    """The commit fence, decided here for every change whatever calls it: the task changing the
    head of domain ``path`` holds its fence (`service.fences`) before the domain is read, so a
    commit in this process sees the change wholly or not at all. A version (``D@REF``) or a
    malformed name holds none: it is refused as read-only or invalid when loaded."""
    head, ref = split_domain(path)
    if ref is not None:
        return
    try:
        head = normalize_domain(head)
    except InvalidInput:
        return
    await svc.fences.enter_change(head)


async def wait_for_commit(svc: Service, domain: Domain) -> Domain:
    """A change waits while another process commits the domain (its document is marked), so it
    is wholly after that version; a mark older than its ``until`` is a crashed commit's."""
    while (mark := domain.doc.get(COMMITTING)) and float(mark.get("until", 0)) > now():
        await asyncio.sleep(_COMMIT_POLL)
        domain = await load_domain(svc, domain.path)
    return domain


def _may_create_under(caller: Caller, parent: Domain | None, path: str) -> bool:
    if caller.is_admin:
        return True
    if caller.user is None:
        return False
    if parent is None:
        return False
    # A user may make their own home folder under /home.
    if parent.path == "/home" and path == f"/home/{caller.user}":
        return True
    try:
        authorize(caller, parent, Permission.CREATE)
    except (Forbidden, Unauthorized):
        return False
    return True


def _inherited_acls(parent: Domain | None, skip: set[str]) -> dict[str, dict[str, bool]]:
    """The parent folder's grants to other users, which a new domain or folder starts with (as
    HSDS does): a folder shared with someone shares what is made in it. The new owner's and the
    ``default`` entries are the domain's own, admins (``skip``) need none (so ``/home``'s owner is
    not copied into every home folder), and an entry granting nothing is not copied."""
    out: dict[str, dict[str, bool]] = {}
    if parent is None:
        return out
    for user, entry in parent.doc.get("acls", {}).items():
        if user in skip or user == acl_model.DEFAULT or not isinstance(entry, dict):
            continue
        flags = {k: bool(entry.get(k)) for k in acl_model.FLAGS}
        if any(flags.values()):
            out[user] = flags
    return out


async def create_domain(
    svc: Service, caller: Caller, path: str, body: Any, prepare: Callable[[str], Awaitable[Doc]] | None = None
) -> Domain:
    """``PUT /``: a domain (with a new root group) or, with ``{"folder": true}``, a folder.

    ``prepare`` (a fork) is given the new root id once the caller may create the domain; it
    stores the domain's other objects and returns the root group's document."""
    path = normalize_domain(path)
    if path == "/":
        raise InvalidInput("cannot create the top-level folder")
    if "@" in path:
        raise InvalidInput(f"a domain name may not contain '@' ({path[:120]!r}): it names a version, D@REF")
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise InvalidInput("domain creation body must be a JSON object")
    if caller.user is None:
        raise Unauthorized("creating a domain needs credentials")
    if "linked_domain" in body:  # HSDS: a second name for another domain's objects
        raise InvalidInput("linked_domain is not supported: fork the domain ({\"from\": DOMAIN}) to copy it")
    parent_path = parent_domain(path)
    parent: Domain | None = None
    if parent_path is not None and parent_path != "/":
        try:
            parent = await load_domain(svc, parent_path)
        except (NotFound, Gone):
            raise NotFound(f"parent folder {parent_path} not found") from None
    if not _may_create_under(caller, parent, path):
        raise Forbidden(f"user {caller.user} may not create domains in {parent_path}")

    if await svc.docs.get(domain_key(path)) is not None:
        raise AlreadyExists(f"domain {path} already exists")
    if await svc.store.head(domain_tombstone_key(path)) is not None:
        # A domain was deleted here: what its background reclaim has not removed yet (or
        # never will: a crash, keep_root) is not the new domain's (its versions above all).
        await reclaim.clear_path(svc, path)
    owner = caller.user
    if "owner" in body:
        if not caller.is_admin and body["owner"] != caller.user:
            raise Forbidden("only an admin may create a domain for another owner")
        owner = body["owner"]
        if not isinstance(owner, str):
            raise InvalidInput("owner must be a string")
        acl_model.validate_user_name(owner)
    is_folder = bool(body.get("folder"))
    acls: dict[str, Any] = {**_inherited_acls(parent, {owner, *svc.admins}), owner: acl_model.full_acl()}
    if svc.public_read or is_folder:
        # As HSDS lists them: a ``default`` entry where new domains are public, and on every
        # folder. HSDS's folders are readable by everyone; here a folder's entry grants what a
        # new domain's would (nothing unless --public-read): who may list a folder stays its
        # owner's choice.
        acls[acl_model.DEFAULT] = acl_model.acl_for(read=svc.public_read)
    ts = now()
    doc: DomainDoc = {"owner": owner, "acls": acls, "created": ts, "lastModified": ts}
    root_doc: Doc | None = None
    if not is_folder:
        root_id = new_root_id()
        doc["root"] = root_id
        group = body.get("group")
        group_props = group_creation_properties(group.get("creationProperties") if isinstance(group, dict) else None)
        root_doc = {
            "id": root_id,
            "root": root_id,
            "created": ts,
            "lastModified": ts,
            "links": {},
            "attributes": {},
            "creationProperties": group_props,
        }
        if prepare is not None:
            root_doc = await prepare(root_id)
        # The root group is stored first: a domain document never points at a missing root.
        await svc.docs.create(object_key(root_id), root_doc, "root group")
    try:
        etag = await svc.docs.create(domain_key(path), doc, f"domain {path}")
    except AlreadyExists:
        if root_doc is not None:  # lost a race for the name: the new root must not stay behind
            await svc.store.delete(object_key(root_doc["id"]))
        raise
    await svc.store.delete(domain_tombstone_key(path))  # made again: no longer gone
    return Domain(path, doc, etag, svc.head)


async def delete_domain(svc: Service, caller: Caller, path: str, keep_root: bool = False) -> None:
    domain = await open_domain(svc, caller, path, Permission.DELETE)
    if domain.path == "/":
        raise Forbidden("cannot delete the top-level folder")
    async for entry in svc.store.list(domain_prefix(domain.path), delimiter="/"):
        if entry.endswith("/") and await _holds_domains(svc, entry):
            raise Conflict(f"{domain.path} has sub-domains; delete them first")
    await svc.store.put(domain_tombstone_key(domain.path), b"")
    await svc.store.delete(domain_key(domain.path))
    if not keep_root and domain.root is not None:
        svc.spawn(reclaim.reclaim_domain(svc, domain.path, domain.root))


async def _holds_domains(svc: Service, prefix: str) -> bool:
    """Whether storage prefix ``a/b/`` is a live domain or folder, or has one below it.

    A deleted domain leaves catalog files under its prefix until its background reclaim has
    run; they must not keep its parent folder from being deleted (``hsrm d; hsrm folder/``).
    """
    if await svc.store.head(prefix + DOMAIN_FILE) is not None:
        return True
    async for entry in svc.store.list(prefix, delimiter="/"):
        if entry.endswith("/") and await _holds_domains(svc, entry):
            return True
    return False


def domain_json(svc: Service, domain: Domain) -> Doc:
    out: Doc = {
        "owner": domain.owner,
        "class": "folder" if domain.is_folder else "domain",
        "created": domain.doc.get("created"),
        "lastModified": domain.doc.get("lastModified"),
        "domain": domain.path,
        "version": HSDS_COMPAT_VERSION,
        "limits": svc.limits.to_json(),
        "compressors": list(SUPPORTED_COMPRESSORS),
    }
    if domain.root is not None:
        out["root"] = domain.root
    return out


def domain_response_on_create(svc: Service, domain: Domain) -> Doc:
    out = domain_json(svc, domain)
    out["acls"] = domain.doc.get("acls", {})
    return out


_LIST_BATCH = 100


async def list_domains(
    svc: Service,
    caller: Caller,
    folder: str,
    *,
    limit: int | None = None,
    marker: str | None = None,
    pattern: str | None = None,
    verbose: bool = False,
    query: str | None = None,
) -> list[Doc]:
    matches = domain_query.root_matcher(query) if query is not None else None
    folder = normalize_domain(folder)
    if folder != "/":
        await open_domain(svc, caller, folder, Permission.READ)
    prefix = domain_prefix(folder)
    start_after = None
    if marker:
        marker = normalize_domain(marker)
        start_after = domain_prefix(marker)
    # Only what the caller may read is listed: a folder shows no names of domains the caller
    # cannot open, and an anonymous caller sees only public ones. Entries are read in batches
    # until the page is full, so a page is short only at the end of the folder.
    if pattern:
        check_pattern(pattern)
    names: list[str] = []
    docs: list[Any] = []
    out: list[Doc] = []
    batch: list[str] = []
    listing = svc.store.list(prefix, delimiter="/", start_after=start_after)
    exhausted = False
    while not exhausted and (limit is None or len(out) < limit):
        batch.clear()
        async for entry in listing:
            if not entry.endswith("/") or is_attribute_values_prefix(entry):
                continue  # (an object's large attribute values sit under a prefix at the top)
            name = "/" + entry[:-1]
            if pattern and not fnmatch.fnmatch(name.rsplit("/", 1)[-1], pattern):
                continue
            batch.append(name)
            if len(batch) >= _LIST_BATCH:
                break
        else:
            exhausted = True
        found_batch = await svc.workers.map(batch, lambda n: svc.docs.get(domain_prefix(n) + DOMAIN_FILE))
        if matches is not None:
            found_batch = await _matching(svc, caller, batch, found_batch, matches)
        for name, found in zip(batch, found_batch):
            if found is None:
                continue  # a prefix with no domain object (e.g. left-over catalog files)
            if not _readable(caller, Domain(name, as_domain(found.doc), found.etag, svc.head)):
                continue
            d = found.doc
            item: Doc = {
                "name": name,
                "class": "domain" if "root" in d else "folder",
                "owner": d.get("owner"),
                "created": d.get("created"),
                "lastModified": d.get("lastModified"),
            }
            if "root" in d:
                item["root"] = d["root"]
            out.append(item)
            names.append(name)
            docs.append(found)
            if limit is not None and len(out) >= limit:
                break
    if verbose:
        await _add_stats(svc, caller, out, docs, names)
    else:
        await _add_last_changes(svc, out)
    return out


async def _add_last_changes(svc: Service, items: list[Doc]) -> None:
    """A listed domain's ``lastModified`` is its last write, not its document's last change
    (`h5lake.catalog.changed`: one small read per domain)."""
    listed = [item for item in items if item["class"] == "domain"]
    stamps = await svc.workers.map(listed, lambda item: last_changed(svc.store, item["name"]))
    for item, stamp in zip(listed, stamps):
        if stamp is not None and stamp > (item.get("lastModified") or 0.0):
            item["lastModified"] = stamp


async def _matching(
    svc: Service, caller: Caller, names: list[str], found: list[Any], matches: domain_query.RootMatcher
) -> list[Any]:
    """``found`` with None for every entry that is not a readable domain whose root group's
    attributes satisfy the query (the roots are read in parallel)."""
    domains = [
        Domain(n, f.doc, f.etag, svc.head) if f is not None and "root" in f.doc else None
        for n, f in zip(names, found)
    ]

    async def keep(domain: Domain | None) -> bool:
        if domain is None or not _readable(caller, domain):
            return False
        root = await domain.view.object(domain.require_root())
        return root is not None and matches(root.doc.get("attributes", {}))

    kept = await svc.workers.map(domains, keep)
    return [f if k else None for f, k in zip(found, kept)]


def _readable(caller: Caller, domain: Domain) -> bool:
    try:
        authorize(caller, domain, Permission.READ)
    except (Forbidden, Unauthorized):
        return False
    return True


async def _add_stats(svc: Service, caller: Caller, items: list[Doc], found: list[Any], names: list[str]) -> None:
    """``verbose=1`` listings (``hsls -v``) carry each readable domain's size summary, as HSDS's do."""
    by_name = {n: f for n, f in zip(names, found) if f is not None}
    readable: list[tuple[Doc, Domain]] = []
    for item in items:
        if item["class"] != "domain":
            continue
        domain = Domain(item["name"], by_name[item["name"]].doc, by_name[item["name"]].etag, svc.head)
        try:
            authorize(caller, domain, Permission.READ)
        except (Forbidden, Unauthorized):
            continue
        readable.append((item, domain))
    summaries = await svc.workers.map(readable, lambda pair: domain_stats(svc, pair[1]))
    for (item, _), summary in zip(readable, summaries):
        item.update(summary)


# --- ACLs -------------------------------------------------------------------------------------


def acl_entry(user: str, flags: dict[str, Any], domain_path: str | None = None) -> Doc:
    """An ACL as answered: the six flags and ``userName``, and, for an entry set by
    ``PUT /acls/{user}`` (``domain_path`` given), the ``domain`` it is of, as HSDS answers."""
    entry: Doc = {f: bool(flags.get(f, False)) for f in acl_model.FLAGS}
    entry["userName"] = user
    if domain_path is not None and acl_model.SET_BY_PUT in flags:
        entry["domain"] = domain_path
    return entry


async def get_acls(svc: Service, caller: Caller, path: str) -> list[Doc]:
    domain = await open_domain(svc, caller, path, Permission.READ_ACL)
    return [acl_entry(u, f, domain.path) for u, f in sorted(domain.doc.get("acls", {}).items())]


async def get_acl(svc: Service, caller: Caller, path: str, user: str) -> Doc:
    domain = await load_domain(svc, path)
    if user == acl_model.DEFAULT and caller.user != user:
        # Whoever may read the domain may read what everyone may do (as HSDS): h5pyd before 1.0
        # opens a domain in "a" mode only if its own ACL or, lacking one, the default ACL grants update.
        authorize(caller, domain, Permission.READ)
    elif caller.user != user:
        authorize(caller, domain, Permission.READ_ACL)
    acls = domain.doc.get("acls", {})
    if user not in acls:
        raise NotFound(f"no ACL for user {user} on {domain.path}")
    return acl_entry(user, acls[user], domain.path)


async def put_acl(svc: Service, caller: Caller, path: str, user: str, body: Any) -> Doc:
    acl_model.validate_user_name(user)
    flags = acl_model.validate_acl(body)
    domain = await open_domain(svc, caller, path, Permission.UPDATE_ACL)

    def mutate(doc: DomainDoc) -> dict[str, Any]:
        acls = doc.setdefault("acls", {})
        entry = acls.get(user) or {f: False for f in acl_model.FLAGS}
        entry.update(flags)
        entry[acl_model.SET_BY_PUT] = domain.path  # HSDS keeps the request's domain in the entry
        acls[user] = entry
        doc["lastModified"] = now()
        return entry

    _, entry = await svc.docs.update(domain_key(domain.path), mutate, f"domain {domain.path}")
    return acl_entry(user, entry, domain.path)

