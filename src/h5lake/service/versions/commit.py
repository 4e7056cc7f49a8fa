"""Committing a domain's head as a new version (docs/versions.md, "Commit").

Cost follows the change since the parent version: every object is HEADed (and its chunk
catalog, for a dataset); an object whose document and chunk catalog are as the parent recorded
keeps the parent's manifest; of a changed dataset only the chunks whose catalog ETag differs
from the parent's chunk table are read, hashed and stored (create-only, once per bucket).
Nothing is visible until the create-only put of the version record.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from h5lake.catalog.catalogs import parse_lines
from h5lake.errors import Conflict, InvalidInput, TooLarge
from h5lake.model.acl import Permission
from h5lake.model.ids import (
    CATALOG_FILES,
    FORKED,
    catalog_key,
    chunk_catalog_key,
    chunk_key,
    domain_key,
    is_valid_id,
    object_key,
    parse_index_name,
    same_domain,
    version_key,
)
from h5lake.model.layout import is_linked
from h5lake.model.links import LinkClass
from h5lake.model.stored import DomainDoc, VersionRecord
from h5lake.service.context import Caller, Service, now
from h5lake.service.documents import Doc, dumps
from h5lake.service.domains.core import COMMITTING, open_domain
from h5lake.service.objects import attribute_values as attrvalues
from h5lake.service.versions import view as versions
from h5lake.service.views import Domain
from h5lake.storage.base import PreconditionFailed
from h5lake.versions.content import sha256
from h5lake.versions.names import parse_version_id, version_id

Tree = dict[str, Any]
CHUNKED = ("d", "m")  # collections whose objects have chunks of their own (datasets, maps)
MAX_DESCRIPTION_BYTES = 64 * 1024
"""A commit's message and metadata together (JSON): every listing and every read of the version
parses its record, and each commit the previous one's."""


def _etag(raw: str) -> str:
    return raw.strip('"').replace(" ", "") or "-"




def children(doc: Doc) -> list[str]:
    """Ids an object's document refers to: hard links, a committed datatype."""
    out = [
        link["id"]
        for link in (doc.get("links") or {}).values()
        if isinstance(link, dict) and link.get("class") == LinkClass.HARD.value and is_valid_id(link.get("id"))
    ]
    if is_valid_id(doc.get("type")):
        out.append(doc["type"])
    return out


@dataclass
class Snapshot:
    """The head of a domain compared with a parent version's manifests."""

    svc: Service
    domain: Domain
    parent: dict[str, str]  # object id -> manifest hash in the parent version
    dry: bool = False  # only find out whether anything changed; store nothing
    memory: bool = False  # keep the head's manifests in ``trees`` (chunk ETags, no hashes); store nothing
    objects: dict[str, str] = field(default_factory=dict)
    trees: dict[str, Tree] = field(default_factory=dict)
    changed: bool = False
    blobs_written: int = 0
    tree: Tree = field(default_factory=dict)  # the root manifest, once run

    async def run(self) -> Tree:
        root = self.domain.require_root()
        queue = [root, *await self._catalogued(), *self.parent]
        seen: set[str] = set()
        while queue:
            wave = [i for i in dict.fromkeys(queue) if i not in seen and same_domain(i, root)]
            seen.update(wave)
            found = await self.svc.workers.map(wave, self._visit)
            queue = [c for kids in found for c in kids]
        if set(self.objects) != set(self.parent):
            self.changed = True
        self.tree = {"root": root, "objects": dict(sorted(self.objects.items()))}
        return self.tree

    async def _catalogued(self) -> list[str]:
        out: list[str] = []
        for name in CATALOG_FILES.values():
            blob = await self.svc.store.get(catalog_key(self.domain.path, name))
            if blob is not None:
                out.extend(parse_lines(blob.data))
        return out

    async def _visit(self, obj_id: str) -> list[str]:
        store, cas = self.svc.store, self.svc.cas
        info = await store.head(object_key(obj_id))
        if info is None:
            return []
        chunked = obj_id[0] in CHUNKED
        catalog = await store.head(chunk_catalog_key(self.domain.path, obj_id)) if chunked else None
        catalog_etag = None if catalog is None else _etag(catalog.etag)
        prev_sha = self.parent.get(obj_id)
        prev = await cas.get_tree(prev_sha) if prev_sha else None
        if prev_sha and prev is not None and prev["etag"] == _etag(info.etag) and prev.get("catalog") == catalog_etag:
            self.objects[obj_id] = prev_sha
            self.trees[obj_id] = prev
            return children(prev["doc"])
        if self.dry and prev_sha and prev is not None and prev["etag"] == _etag(info.etag) and chunked:
            # only the chunk catalog was rewritten (e.g. by a restore): compare the chunks' ETags
            now = await self._chunk_etags(obj_id, prev["doc"].get(FORKED))
            if {n: e[1] for n, e in now.items()} == {n: e[1] for n, e in prev.get("chunks", {}).items()}:
                self.objects[obj_id] = prev_sha
                return children(prev["doc"])
        self.changed = True
        found = await self.svc.docs.get(object_key(obj_id))
        if found is None or found.doc.get("root") != self.domain.root:
            return []
        if self.dry:
            self.objects[obj_id] = ""
            return children(found.doc)
        tree: Tree = {"doc": found.doc, "etag": _etag(found.etag)}
        if self.memory:
            if chunked and not is_linked(found.doc):
                tree["chunks"] = await self._chunk_etags(obj_id, found.doc.get(FORKED))
            self.objects[obj_id], self.trees[obj_id] = "", tree
            return children(found.doc)
        if chunked and not is_linked(found.doc):
            before = (prev or {}).get("chunks", {})
            tree["chunks"], tree["catalog"] = await self._chunks(obj_id, before, found.doc.get(FORKED))
        values = await attrvalues.commit_values(self.svc, obj_id, found.doc)
        if values:  # large attribute values, as blobs (gc keeps them)
            tree["values"] = values
        self.objects[obj_id] = await cas.put_tree(tree)
        return children(found.doc)

    async def _chunk_etags(self, obj_id: str, forked: str | None) -> dict[str, list[str | None]]:
        blob = await self.svc.store.get(chunk_catalog_key(self.domain.path, obj_id))
        lines = parse_lines(blob.data, chunks=True) if blob is not None else {}
        table: dict[str, list[str | None]] = {n: list(e) for n, e in (await self._forked_table(forked)).items()}
        table.update({name: [None, line.split()[1]] for name, line in lines.items()})
        return table

    async def _forked_table(self, forked: str | None) -> dict[str, list[str]]:
        """The chunks a forked dataset reads from its source until it writes its own."""
        return {} if not forked else (await self.svc.cas.get_tree(forked)).get("chunks", {})

    async def _chunks(
        self, obj_id: str, before: dict[str, list[str]], forked: str | None
    ) -> tuple[dict[str, list[str]], str | None]:
        blob = await self.svc.store.get(chunk_catalog_key(self.domain.path, obj_id))
        lines = parse_lines(blob.data, chunks=True) if blob is not None else {}
        table: dict[str, list[str]] = {n: e for n, e in (await self._forked_table(forked)).items() if n not in lines}
        todo: list[str] = []
        for name, line in lines.items():
            old = before.get(name)
            if old is not None and old[1] == line.split()[1]:
                table[name] = old
            else:
                todo.append(name)

        async def copy(name: str) -> None:
            chunk = await self.svc.store.get(chunk_key(obj_id, parse_index_name(name)))
            if chunk is None:
                return  # deleted since the catalog was read
            sha = await self.svc.workers.cpu(sha256, chunk.data, size=len(chunk.data))
            await self.svc.cas.copy_blob(chunk_key(obj_id, parse_index_name(name)), chunk.etag, chunk.data, sha)
            table[name] = [sha, _etag(chunk.etag)]
            self.blobs_written += 1

        await self.svc.workers.each(todo, copy)
        return dict(sorted(table.items())), None if blob is None else _etag(blob.etag)


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


async def head_tree(
    svc: Service, domain: Domain, parent: VersionRecord | None, *, dry: bool = False, memory: bool = False
) -> Snapshot:
    parent_objects = (await svc.cas.get_tree(parent["tree"]))["objects"] if parent else {}
    snap = Snapshot(svc, domain, parent_objects, dry=dry, memory=memory)
    await snap.run()
    return snap


COMMIT_ATTEMPTS = 10


async def consistent_tree(svc: Service, domain: Domain, parent: VersionRecord | None) -> str:
    """The head's root manifest, as of one moment: taken after the write intents on the domain
    have cleared, and checked (after they clear again) to still equal the head. A write by another
    process that ran while it was taken shows in that check (a changed document or chunk catalog)
    and the snapshot is taken again, from the one just made, so no such write is ever half in."""
    base = parent
    for _ in range(COMMIT_ATTEMPTS):
        await svc.catalog.settle(domain.path, svc.catalog.stale_after)
        snap = await head_tree(svc, domain, base)
        tree = await svc.cas.put_tree(snap.tree)
        await svc.catalog.settle(domain.path, svc.catalog.stale_after)
        if not (await head_tree(svc, domain, {"tree": tree}, dry=True)).changed:
            return tree
        base = {"tree": tree}
    raise Conflict(f"{domain.path} changed during {COMMIT_ATTEMPTS} attempts to commit it; try again")


FLAG_SECONDS = 10.0  # a crashed commit holds the domain's changes back at most this long


@asynccontextmanager
async def commit_flag(svc: Service, domain: Domain) -> AsyncIterator[None]:
    """Mark the domain document ``committing`` while a commit runs: every process reads that
    document for each change request anyway, and holds the change until the mark is gone
    (`domains.wait_for_commit`). The mark is a lease of ``FLAG_SECONDS``, renewed while the
    commit runs, so the mark of a commit whose process died expires soon."""
    key = domain_key(domain.path)

    def mark(doc: DomainDoc) -> None:
        doc[COMMITTING] = {"until": time.time() + FLAG_SECONDS}

    def unmark(doc: DomainDoc) -> None:
        doc.pop(COMMITTING, None)

    async def renew() -> None:
        while True:
            await asyncio.sleep(FLAG_SECONDS / 4)
            await svc.docs.update(key, mark, f"domain {domain.path}")

    await svc.docs.update(key, mark, f"domain {domain.path}")
    renewing = asyncio.create_task(renew())
    try:
        yield
    finally:
        renewing.cancel()
        with suppress(asyncio.CancelledError):
            await renewing
        await asyncio.shield(svc.docs.update(key, unmark, f"domain {domain.path}"))


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
